// KvStore: per-sequence K/V blocks, their layout and pack/unpack.
#include "engine/model/kv_store.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace hearth::engine {
namespace {

TEST(KvStoreTest, BadShapesAreErrorsNamingTheValues) {
  for (auto [s, l, c, d] : {std::tuple{0, 2, 8, 4}, std::tuple{1, 0, 8, 4}, std::tuple{1, 2, -1, 4},
                            std::tuple{1, 2, 8, 0}}) {
    auto kv = KvStore::create(s, l, c, d);
    ASSERT_FALSE(kv.ok());
    EXPECT_NE(kv.status().message().find("must be positive"), std::string::npos);
  }
}

TEST(KvStoreTest, RowsStartZeroedAndAreDistinct) {
  auto created = KvStore::create(2, 3, 16, 8);
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  KvStore& kv = *created;
  EXPECT_EQ(kv.n_seq(), 2);
  EXPECT_EQ(kv.len(0), 0);
  EXPECT_EQ(kv.bytes_per_position(), 3u * 2 * 8 * 2);
  // Every row of every sequence, layer and kind is zero and is its own memory.
  uint16_t next = 1;
  for (int32_t s = 0; s < 2; ++s)
    for (int32_t l = 0; l < 3; ++l)
      for (int32_t p = 0; p < 16; ++p)
        for (uint16_t* row : {kv.k_row(s, l, p), kv.v_row(s, l, p)})
          for (int32_t i = 0; i < 8; ++i) {
            ASSERT_EQ(row[i], 0);
            row[i] = next++;
          }
  next = 1;
  for (int32_t s = 0; s < 2; ++s)
    for (int32_t l = 0; l < 3; ++l)
      for (int32_t p = 0; p < 16; ++p)
        for (const uint16_t* row : {kv.k_row(s, l, p), kv.v_row(s, l, p)})
          for (int32_t i = 0; i < 8; ++i) ASSERT_EQ(row[i], next++);
  // A layer's K rows are one run (what pack copies).
  EXPECT_EQ(kv.k_row(1, 2, 5), kv.k_row(1, 2, 0) + 5 * 8);
}

TEST(KvStoreTest, PackUnpackRoundTripsTheFirstPositions) {
  auto a = KvStore::create(1, 2, 10, 4);
  auto b = KvStore::create(2, 2, 10, 4);
  ASSERT_TRUE(a.ok() && b.ok());
  for (int32_t l = 0; l < 2; ++l)
    for (int32_t p = 0; p < 10; ++p)
      for (int32_t i = 0; i < 4; ++i) {
        a->k_row(0, l, p)[i] = static_cast<uint16_t>(1000 * l + 10 * p + i);
        a->v_row(0, l, p)[i] = static_cast<uint16_t>(5000 + 1000 * l + 10 * p + i);
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
        const uint16_t k = p < 6 ? a->k_row(0, l, p)[i] : 0;
        const uint16_t v = p < 6 ? a->v_row(0, l, p)[i] : 0;
        EXPECT_EQ(b->k_row(1, l, p)[i], k) << l << " " << p;
        EXPECT_EQ(b->v_row(1, l, p)[i], v) << l << " " << p;
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

}  // namespace
}  // namespace hearth::engine
