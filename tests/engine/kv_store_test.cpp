// KvStore: per-sequence K/V blocks, their layout and pack/unpack.
#include "engine/model/kv_store.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace hearth::engine {
namespace {

TEST(KvStoreTest, BadShapesAreErrorsNamingTheValues) {
  for (auto [s, l, c, d] : {std::tuple{0, 2, 8, 4}, std::tuple{1, -1, 8, 4},
                            std::tuple{1, 2, -1, 4}, std::tuple{1, 2, 8, 0}}) {
    auto kv = KvStore::create(s, l, c, d);
    ASSERT_FALSE(kv.ok());
    EXPECT_NE(kv.status().message().find("must be positive"), std::string::npos);
  }
}

// No layers (a GPU holds every layer's KV): lengths only, empty packed rows.
TEST(KvStoreTest, ZeroLayersKeepsLengthsOnly) {
  auto created = KvStore::create(2, 0, 16, 8);
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  KvStore& kv = *created;
  EXPECT_EQ(kv.bytes_per_position(), 0u);
  EXPECT_EQ(kv.pack_bytes(10), 0u);
  kv.append_to(1, 10);
  EXPECT_EQ(kv.len(1), 10);
  EXPECT_TRUE(kv.import_runs(0, 5).empty());
  kv.commit_import(0, 5);
  EXPECT_EQ(kv.len(0), 5);
  EXPECT_TRUE(kv.copy_prefix(1, 0, 7).ok());
  EXPECT_EQ(kv.len(0), 7);
  std::vector<uint8_t> out(3);
  kv.pack(1, 10, out);
  EXPECT_TRUE(out.empty());
}

TEST(KvStoreTest, RowsStartZeroedAndAreDistinct) {
  auto created = KvStore::create(2, 3, 16, 8);
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  KvStore& kv = *created;
  EXPECT_EQ(kv.n_seq(), 2);
  EXPECT_EQ(kv.len(0), 0);
  EXPECT_EQ(kv.bytes_per_position(), 3u * 2 * 8 * 2);
  // Every position of every sequence, layer and kind is zero and is its own memory.
  uint16_t next = 1;
  for (int32_t s = 0; s < 2; ++s)
    for (int32_t l = 0; l < 3; ++l)
      for (int32_t p = 0; p < 16; ++p) {
        uint16_t k[8];
        uint16_t* v = kv.v_cols(s, l, p, 0);  // one run: the row
        for (int32_t i = 0; i < 8; ++i) {
          ASSERT_EQ(kv.k_at(s, l, p, i), 0);
          ASSERT_EQ(v[i], 0);
          k[i] = next++;
          v[i] = next++;
        }
        kv.put_k(s, l, p, k);
      }
  next = 1;
  for (int32_t s = 0; s < 2; ++s)
    for (int32_t l = 0; l < 3; ++l)
      for (int32_t p = 0; p < 16; ++p)
        for (int32_t i = 0; i < 8; ++i) {
          ASSERT_EQ(kv.k_at(s, l, p, i), next++);
          ASSERT_EQ(kv.v_at(s, l, p, i), next++);
        }
  // F16 K lies in a tile of 16 slots, element-major; a layer's V rows are one run.
  const auto* k = reinterpret_cast<const uint16_t*>(kv.k_slot0(1, 2));
  EXPECT_EQ(k[3 * 16 + 5], kv.k_at(1, 2, 5, 3));
  EXPECT_EQ(canon::k_tile_offset(21, 3, 8), 16u * 8 + 3 * 16 + 5);
  EXPECT_EQ(kv.v_cols(1, 2, 5, 0), kv.v_cols(1, 2, 0, 0) + 5 * 8);
}

TEST(KvStoreTest, PackUnpackRoundTripsTheFirstPositions) {
  auto a = KvStore::create(1, 2, 10, 4);
  auto b = KvStore::create(2, 2, 10, 4);
  ASSERT_TRUE(a.ok() && b.ok());
  for (int32_t l = 0; l < 2; ++l)
    for (int32_t p = 0; p < 10; ++p) {
      uint16_t k[4];
      for (int32_t i = 0; i < 4; ++i) {
        k[i] = static_cast<uint16_t>(1000 * l + 10 * p + i);
        *a->v_cols(0, l, p, i) = static_cast<uint16_t>(5000 + 1000 * l + 10 * p + i);
      }
      a->put_k(0, l, p, k);
    }
  a->set_len(0, 10);
  std::vector<uint8_t> bytes;
  a->pack(0, 6, bytes);
  EXPECT_EQ(bytes.size(), 6 * a->bytes_per_position());
  b->unpack(1, bytes, 6);
  EXPECT_EQ(b->len(1), 6);
  EXPECT_EQ(b->len(0), 0);
  for (int32_t l = 0; l < 2; ++l)
    for (int32_t p = 0; p < 10; ++p)
      for (int32_t i = 0; i < 4; ++i) {
        const uint16_t k = p < 6 ? a->k_at(0, l, p, i) : 0;
        const uint16_t v = p < 6 ? a->v_at(0, l, p, i) : 0;
        EXPECT_EQ(b->k_at(1, l, p, i), k) << l << " " << p;
        EXPECT_EQ(b->v_at(1, l, p, i), v) << l << " " << p;
      }
}

// The value element i of position p of layer l holds in TiledKPacksAsRows (below).
uint16_t kv_value(int32_t l, int32_t kind, int32_t p, int32_t i) {
  return static_cast<uint16_t>(((l * 2 + kind) * 4001 + p * 131 + i * 7) & 0xFFFF);
}

// F16 K is kept in tiles but packs as rows: pack gives the rows byte for byte, and
// unpack, import_runs + commit_import and copy_prefix all bring them back, for
// whole tiles (the vector transposes), part tiles, kv_dims with and without a
// remainder of 8 and packed rows at an odd address.
TEST(KvStoreTest, TiledKPacksAsRowsAndRoundTrips) {
  // V as rows (head_dim 0) and in head runs: of 2 halves, of 16 (whole 16-byte pieces,
  // streamed) and of 19 (not).
  for (const auto& [kv_dim, head_dim] :
       {std::pair{4, 0}, {4, 2}, {64, 0}, {64, 16}, {76, 0}, {76, 19}}) {
    for (int32_t n : {1, 15, 16, 17, 40, 48}) {
      SCOPED_TRACE(std::to_string(kv_dim) + " dims, heads of " + std::to_string(head_dim) + ", " +
                   std::to_string(n) + " positions");
      auto a = KvStore::create(1, 2, 50, kv_dim, KvType::kF16, {}, head_dim);
      auto b = KvStore::create(2, 2, 50, kv_dim, KvType::kF16, {}, head_dim);
      ASSERT_TRUE(a.ok() && b.ok());
      std::vector<uint16_t> expect;  // the packed row: per layer, K rows then V rows
      for (int32_t l = 0; l < 2; ++l) {
        for (int32_t p = 0; p < 50; ++p) {
          std::vector<uint16_t> k(static_cast<size_t>(kv_dim));
          for (int32_t i = 0; i < kv_dim; ++i) {
            k[static_cast<size_t>(i)] = kv_value(l, 0, p, i);
            *a->v_cols(0, l, p, i) = kv_value(l, 1, p, i);
          }
          a->put_k(0, l, p, k.data());
        }
        for (int32_t kind = 0; kind < 2; ++kind)
          for (int32_t p = 0; p < n; ++p)
            for (int32_t i = 0; i < kv_dim; ++i) expect.push_back(kv_value(l, kind, p, i));
      }
      a->set_len(0, 50);
      std::vector<uint8_t> bytes;
      a->pack(0, n, bytes);
      ASSERT_EQ(bytes.size(), expect.size() * 2);
      ASSERT_EQ(std::memcmp(bytes.data(), expect.data(), bytes.size()), 0);
      auto check = [&](int32_t seq) {
        ASSERT_EQ(b->len(seq), n);
        for (int32_t l = 0; l < 2; ++l)
          for (int32_t p = 0; p < n; ++p)
            for (int32_t i = 0; i < kv_dim; ++i) {
              ASSERT_EQ(b->k_at(seq, l, p, i), kv_value(l, 0, p, i)) << l << " " << p << " " << i;
              ASSERT_EQ(b->v_at(seq, l, p, i), kv_value(l, 1, p, i)) << l << " " << p << " " << i;
            }
      };
      std::vector<uint8_t> odd(bytes.size() + 1);
      std::memcpy(odd.data() + 1, bytes.data(), bytes.size());
      b->unpack(1, std::span<const uint8_t>(odd).subspan(1), n);
      check(1);
      size_t at = 0;
      for (std::span<uint8_t> r : b->import_runs(0, n)) {
        std::memcpy(r.data(), bytes.data() + at, r.size());
        at += r.size();
      }
      ASSERT_EQ(at, bytes.size());
      b->commit_import(0, n);
      check(0);
      ASSERT_TRUE(b->copy_prefix(1, 0, n).ok());
      check(0);
      std::vector<uint8_t> again;
      b->pack(0, n, again);
      EXPECT_EQ(again, bytes);
    }
  }
}

// Quantized types: a row is kv_dim / 32 blocks of 34 (Q8_0) or 18 (Q4_0) bytes, so
// positions and packed rows shrink to 34/64 and 18/64 of F16's; pack/unpack copy the
// blocks as they are.
TEST(KvStoreTest, QuantizedRowsAreBlocksAndShrinkThePackedRows) {
  for (auto [type, block] :
       {std::pair{KvType::kQ8_0, size_t{34}}, std::pair{KvType::kQ4_0, size_t{18}}}) {
    auto a = KvStore::create(1, 3, 10, 64, type);
    auto b = KvStore::create(2, 3, 10, 64, type);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->row_bytes(), 2 * block);
    EXPECT_EQ(a->bytes_per_position(), 3u * 2 * 2 * block);
    EXPECT_EQ(a->k_bytes(0, 1, 4), a->k_bytes(0, 1, 0) + 4 * 2 * block);
    for (int32_t l = 0; l < 3; ++l)
      for (int32_t p = 0; p < 10; ++p)
        for (size_t i = 0; i < a->row_bytes(); ++i) {
          a->k_bytes(0, l, p)[i] = static_cast<uint8_t>(l * 31 + p * 7 + i);
          a->v_bytes(0, l, p)[i] = static_cast<uint8_t>(l * 17 + p * 3 + i + 1);
        }
    a->set_len(0, 10);
    std::vector<uint8_t> bytes;
    a->pack(0, 7, bytes);
    EXPECT_EQ(bytes.size(), 7 * a->bytes_per_position());
    b->unpack(1, bytes, 7);
    EXPECT_EQ(b->len(1), 7);
    for (int32_t l = 0; l < 3; ++l)
      for (int32_t p = 0; p < 7; ++p) {
        EXPECT_EQ(std::memcmp(a->k_bytes(0, l, p), b->k_bytes(1, l, p), a->row_bytes()), 0);
        EXPECT_EQ(std::memcmp(a->v_bytes(0, l, p), b->v_bytes(1, l, p), a->row_bytes()), 0);
      }
  }
}

TEST(KvStoreTest, QuantizedTypesNeedWholeBlocks) {
  auto kv = KvStore::create(1, 2, 8, 48, KvType::kQ8_0);
  ASSERT_FALSE(kv.ok());
  EXPECT_NE(kv.status().message().find("kv_type q8_0"), std::string::npos);
  EXPECT_TRUE(KvStore::create(1, 2, 8, 48, KvType::kF16).ok());
}

// A store with layer 1 of 3 a ring: window 8, slack 4, so round_up(12, 16) = 16 slots.
KvRing ring_of_layer1() {
  KvRing r;
  r.window = 8;
  r.slack = 4;
  r.layers = {false, true, false};
  return r;
}

// Writes position p of every layer of seq as values that name (seq, layer, kind, p).
void write_position(KvStore& kv, int32_t seq, int32_t p) {
  for (int32_t l = 0; l < 3; ++l) {
    std::vector<uint16_t> k(static_cast<size_t>(kv.kv_dim()));
    for (int32_t i = 0; i < kv.kv_dim(); ++i) {
      k[static_cast<size_t>(i)] = static_cast<uint16_t>(10000 * l + 10 * p + i);
      *kv.v_cols(seq, l, p, i) = static_cast<uint16_t>(30000 + 10000 * l + 10 * p + i);
    }
    kv.put_k(seq, l, p, k.data());
  }
}

// Positions 0 .. n - 1 of seq, written and appended one by one as a decode would.
void append_positions(KvStore& kv, int32_t seq, int32_t n) {
  for (int32_t p = 0; p < n; ++p) {
    write_position(kv, seq, p);
    kv.append_to(seq, p + 1);
  }
}

TEST(KvStoreTest, RingLayersKeepTheirCapacityAndWrap) {
  auto kv = KvStore::create(1, 3, 64, 4, KvType::kF16, ring_of_layer1(), 2);
  auto full = KvStore::create(1, 3, 64, 4);
  ASSERT_TRUE(kv.ok() && full.ok());
  EXPECT_EQ(kv->ring_capacity(), 16);
  EXPECT_EQ(kv->slots(0), 64);
  EXPECT_EQ(kv->slots(1), 16);
  EXPECT_EQ(kv->bytes_per_sequence(), 2u * (64 + 16 + 64) * 4 * 2);
  EXPECT_EQ(full->bytes_per_sequence(), 2u * 3 * 64 * 4 * 2);
  EXPECT_EQ(kv->slot(1, 21), 5);  // 21 % 16
  EXPECT_EQ(kv->slot(0, 21), 21);
  write_position(*kv, 0, 5);
  write_position(*kv, 0, 21);
  EXPECT_EQ(kv->k_at(0, 1, 5, 0), 10000 + 210);
  EXPECT_EQ(kv->v_at(0, 1, 5, 0), 40000 + 210);
  EXPECT_EQ(kv->k_at(0, 0, 5, 0), 50);
  // A ring no larger than the context: min(n_ctx, ...).
  EXPECT_EQ(KvStore::ring_capacity_for(8, 4, 10), 10);
  EXPECT_EQ(KvStore::ring_capacity_for(64, 512, 32768), 576);
}

TEST(KvStoreTest, RingRowsHoldTheLastWindowAndRoundTrip) {
  auto a = KvStore::create(1, 3, 64, 4, KvType::kF16, ring_of_layer1(), 2);
  auto b = KvStore::create(2, 3, 64, 4, KvType::kF16, ring_of_layer1(), 2);
  ASSERT_TRUE(a.ok() && b.ok());
  append_positions(*a, 0, 30);
  EXPECT_EQ(a->oldest(0), 14);  // 30 - 16
  // 25 positions: 25 of the full layers, the last 8 (17..24) of the ring layer.
  ASSERT_TRUE(a->pack_ok(0, 25));
  EXPECT_EQ(a->pack_bytes(25), (2u * 25 + 8) * 2 * a->row_bytes());
  std::vector<uint8_t> bytes;
  a->pack(0, 25, bytes);
  ASSERT_EQ(bytes.size(), a->pack_bytes(25));
  // Layer 1's K run sits after layer 0's K and V, position 17 first.
  const size_t l1 = 2 * 25 * a->row_bytes();
  uint16_t first;
  std::memcpy(&first, bytes.data() + l1, 2);
  EXPECT_EQ(first, 10000 + 170);
  b->unpack(1, bytes, 25);
  EXPECT_EQ(b->len(1), 25);
  EXPECT_EQ(b->oldest(1), 17);
  for (int32_t l = 0; l < 3; ++l)
    for (int32_t p = l == 1 ? 17 : 0; p < 25; ++p)
      for (int32_t i = 0; i < 4; ++i) {
        ASSERT_EQ(b->k_at(1, l, p, i), a->k_at(0, l, p, i)) << l << " " << p;
        ASSERT_EQ(b->v_at(1, l, p, i), a->v_at(0, l, p, i)) << l << " " << p;
      }
  // The import spans are pack's bytes in order; for 36 positions layer 1's K and V runs
  // (28..35: slots 12..15, then 0..3) are split where they wrap.
  auto spans = b->import_runs(0, 36);
  EXPECT_EQ(spans.size(), 8u);
  size_t total = 0;
  for (auto s : spans) total += s.size();
  EXPECT_EQ(total, b->pack_bytes(36));
  EXPECT_EQ(spans[3].size(), 4 * b->row_bytes());
  EXPECT_EQ(spans[3].data(), b->k_slot0(0, 1));  // slot 0 = 32 % 16
  // Too far back: 14 is the oldest held, pack(20) needs 12.. and truncation to 20 needs 13..
  EXPECT_FALSE(a->pack_ok(0, 20));
  EXPECT_EQ(a->min_truncate(0), 14 + 7);
  EXPECT_TRUE(a->truncate_ok(0, 21));
  EXPECT_FALSE(a->truncate_ok(0, 20));
  EXPECT_TRUE(a->truncate_ok(0, 0));
}

// A ring layer's import wraps inside one K tile (window 8 of a 16-slot ring: positions
// 28..35 go to slots 12..15 and 0..3, both in tile 0); commit_import turns that tile once,
// and the restored rows read back as the source's.
TEST(KvStoreTest, RingImportWrappingInsideOneTileRestoresEveryRow) {
  auto a = KvStore::create(1, 3, 64, 4, KvType::kF16, ring_of_layer1(), 2);
  auto b = KvStore::create(1, 3, 64, 4, KvType::kF16, ring_of_layer1(), 2);
  ASSERT_TRUE(a.ok() && b.ok());
  append_positions(*a, 0, 36);
  std::vector<uint8_t> bytes;
  a->pack(0, 36, bytes);
  size_t at = 0;
  for (std::span<uint8_t> r : b->import_runs(0, 36)) {
    std::memcpy(r.data(), bytes.data() + at, r.size());
    at += r.size();
  }
  ASSERT_EQ(at, bytes.size());
  b->commit_import(0, 36);
  EXPECT_EQ(b->oldest(0), 28);
  for (int32_t l = 0; l < 3; ++l)
    for (int32_t p = l == 1 ? 28 : 0; p < 36; ++p)
      for (int32_t i = 0; i < 4; ++i) {
        ASSERT_EQ(b->k_at(0, l, p, i), a->k_at(0, l, p, i)) << l << " " << p << " " << i;
        ASSERT_EQ(b->v_at(0, l, p, i), a->v_at(0, l, p, i)) << l << " " << p << " " << i;
      }
  std::vector<uint8_t> again;
  b->pack(0, 36, again);
  EXPECT_EQ(again, bytes);
}

TEST(KvStoreTest, CopyPrefixForksARingSequence) {
  auto kv = KvStore::create(2, 3, 64, 4, KvType::kF16, ring_of_layer1(), 2);
  ASSERT_TRUE(kv.ok());
  append_positions(*kv, 0, 40);
  ASSERT_TRUE(kv->copy_prefix(0, 1, 36).ok());
  EXPECT_EQ(kv->len(1), 36);
  EXPECT_EQ(kv->oldest(1), 24);
  for (int32_t l = 0; l < 3; ++l)
    for (int32_t p = l == 1 ? 24 : 0; p < 36; ++p)
      ASSERT_EQ(kv->k_at(1, l, p, 0), kv->k_at(0, l, p, 0)) << l << " " << p;
  const Status st = kv->copy_prefix(0, 1, 30);  // needs 23.., the oldest held is 24
  EXPECT_EQ(st.code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("window 8"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace hearth::engine

namespace hearth::engine {
namespace {

// A restore of a long row is placed in pieces of about 256 KiB spread over a pool's
// threads (K turned into tiles on the way, everything written with streaming stores):
// the same cells as the rows say, for full layers whose runs are cut into many pieces
// (lengths on and off tile boundaries), a ring layer whose runs wrap, and quantized rows.
TEST(KvStoreTest, UnpackInPiecesOverThreadsPlacesEveryCell) {
  ThreadPool pool(3);
  for (KvType type : {KvType::kF16, KvType::kQ8_0}) {
    for (bool ring : {false, true}) {
      KvRing r;
      if (ring) {
        r.window = 3000;
        r.slack = 40;
        r.layers = {false, true, false};
      }
      // F16 V in two head runs (the engine's layout); quantized V stays in rows.
      auto a = KvStore::create(1, 3, 5000, 64, type, r, 32);
      auto b = KvStore::create(2, 3, 5000, 64, type, r, 32);
      ASSERT_TRUE(a.ok() && b.ok());
      const size_t row = a->row_bytes();
      for (int32_t p = 0; p < 5000; ++p) {
        for (int32_t l = 0; l < 3; ++l) {
          if (type == KvType::kF16) {
            std::vector<uint16_t> k(64);
            for (int32_t i = 0; i < 64; ++i) {
              k[static_cast<size_t>(i)] = kv_value(l, 0, p, i);
              *a->v_cols(0, l, p, i) = kv_value(l, 1, p, i);
            }
            a->put_k(0, l, p, k.data());
          } else {
            for (size_t i = 0; i < row; ++i) {
              a->k_bytes(0, l, p)[i] =
                  static_cast<uint8_t>(kv_value(l, 0, p, static_cast<int32_t>(i)));
              a->v_bytes(0, l, p)[i] =
                  static_cast<uint8_t>(kv_value(l, 1, p, static_cast<int32_t>(i)));
            }
          }
        }
        a->append_to(0, p + 1);
      }
      for (int32_t n : {4999, 4097, 2049}) {
        SCOPED_TRACE(std::string(type == KvType::kF16 ? "f16" : "q8_0") + (ring ? " ring " : " ") +
                     std::to_string(n) + " positions");
        if (!a->pack_ok(0, n)) continue;
        std::vector<uint8_t> bytes;
        a->pack(0, n, bytes);
        b->unpack(1, bytes, n, &pool);
        ASSERT_EQ(b->len(1), n);
        for (int32_t l = 0; l < 3; ++l) {
          const int32_t first = ring && l == 1 ? n - std::min(n, r.window) : 0;
          for (int32_t p = first; p < n; ++p) {
            if (type == KvType::kF16) {
              for (int32_t i = 0; i < 64; ++i) {
                ASSERT_EQ(b->k_at(1, l, p, i), a->k_at(0, l, p, i)) << l << " " << p << " " << i;
                ASSERT_EQ(b->v_at(1, l, p, i), a->v_at(0, l, p, i)) << l << " " << p;
              }
            } else {
              ASSERT_EQ(std::memcmp(b->k_bytes(1, l, p), a->k_bytes(0, l, p), row), 0)
                  << l << " " << p;
              ASSERT_EQ(std::memcmp(b->v_bytes(1, l, p), a->v_bytes(0, l, p), row), 0)
                  << l << " " << p;
            }
          }
        }
        std::vector<uint8_t> again;
        b->pack(1, n, again);
        EXPECT_EQ(again, bytes);
        // The same row read straight into the store (the file tier's import), K turned
        // into tiles and V spread over its head runs on the pool's threads.
        size_t at = 0;
        for (std::span<uint8_t> run : b->import_runs(0, n)) {
          std::memcpy(run.data(), bytes.data() + at, run.size());
          at += run.size();
        }
        ASSERT_EQ(at, bytes.size());
        b->commit_import(0, n, &pool);
        std::vector<uint8_t> imported;
        b->pack(0, n, imported);
        EXPECT_EQ(imported, bytes);
      }
    }
  }
}

}  // namespace
}  // namespace hearth::engine
