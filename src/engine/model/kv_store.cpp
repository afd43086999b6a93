#include "engine/model/kv_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <string>
#include <type_traits>
#include <utility>

#include "common/stream_copy.h"

namespace hearth::engine {
namespace {

// Has the kernel write (zeros) into [p, p + bytes) once. File-tier restores read() rows
// straight into the KV, and on paravirtualized VMs with shadow paging (the 2-core build
// VM) the kernel's first copies into fresh user pages are slow even after user code
// wrote them: a 46 MB restore took 70-118 ms there without this pass, 2-61 ms with it,
// against ~4 ms for a warm copy. Elsewhere it costs about one more memset at load.
// Without /dev/zero the pages are written (zeros) by user code instead.
void warm_for_kernel_writes(void* p, size_t bytes) {
  const int fd = ::open("/dev/zero", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::memset(p, 0, bytes);
    return;
  }
  auto* c = static_cast<char*>(p);
  for (size_t off = 0; off < bytes;) {
    const ssize_t r = ::read(fd, c + off, std::min<size_t>(bytes - off, size_t{1} << 20));
    if (r <= 0) break;
    off += static_cast<size_t>(r);
  }
  ::close(fd);
}

using canon::kKTile;

// f(begin, end) over [0, count): split over pool's threads when there is a pool and more
// than one item, else inline.
template <class F>
void for_pieces(ThreadPool* pool, int64_t count, F&& f) {
  if (pool != nullptr && count > 1) {
    pool->parallel_for(count, f);
  } else {
    f(0, count);
  }
}

#if defined(__SSE2__)
// r[i][j] -> r[j][i] for 8 x 8 halves.
void transpose8x8_u16(__m128i a[8]) {
  __m128i b[8], c[8];
  for (int k = 0; k < 4; ++k) {
    b[2 * k] = _mm_unpacklo_epi16(a[2 * k], a[2 * k + 1]);
    b[2 * k + 1] = _mm_unpackhi_epi16(a[2 * k], a[2 * k + 1]);
  }
  for (int k = 0; k < 2; ++k) {
    c[4 * k] = _mm_unpacklo_epi32(b[4 * k], b[4 * k + 2]);
    c[4 * k + 1] = _mm_unpackhi_epi32(b[4 * k], b[4 * k + 2]);
    c[4 * k + 2] = _mm_unpacklo_epi32(b[4 * k + 1], b[4 * k + 3]);
    c[4 * k + 3] = _mm_unpackhi_epi32(b[4 * k + 1], b[4 * k + 3]);
  }
  for (int k = 0; k < 4; ++k) {
    a[2 * k] = _mm_unpacklo_epi64(c[k], c[4 + k]);
    a[2 * k + 1] = _mm_unpackhi_epi64(c[k], c[4 + k]);
  }
}
#endif

// Rows [r0, r1) of a tile (its lanes r0 .. r1 - 1) to rows of kv_dim halves (kToRows) or
// from them: tile[c * kKTile + r] <-> rows[(r - r0) * kv_dim + c]. The rows are bytes at
// any alignment (a packed row may sit anywhere in a file's mapping).
template <bool kToRows>
struct TileCopy {
  using Tile = std::conditional_t<kToRows, const uint16_t*, uint16_t*>;
  using Rows = std::conditional_t<kToRows, uint8_t*, const uint8_t*>;

  static void lanes(Tile tile, Rows rows, int32_t r0, int32_t r1, int32_t kv_dim) {
    int32_t c0 = 0;
#if defined(__SSE2__)
    // A whole tile in 8 x 8 blocks, two lane halves.
    for (int32_t h = 0; h < kKTile && r0 == 0 && r1 == kKTile; h += 8) {
      for (c0 = 0; c0 + 8 <= kv_dim; c0 += 8) {
        // Tile side: column c0 + i, lanes h .. h + 7; rows side: row h + i, c0 .. c0 + 7.
        auto tile_at = [&](int i) { return tile + static_cast<size_t>(c0 + i) * kKTile + h; };
        auto rows_at = [&](int i) { return rows + 2 * ((h + i) * size_t(kv_dim) + c0); };
        __m128i a[8];
        for (int i = 0; i < 8; ++i) {
          a[i] = _mm_loadu_si128(
              reinterpret_cast<const __m128i*>(kToRows ? static_cast<const void*>(tile_at(i))
                                                       : static_cast<const void*>(rows_at(i))));
        }
        transpose8x8_u16(a);
        for (int i = 0; i < 8; ++i) {
          if constexpr (kToRows) {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(rows_at(i)), a[i]);
          } else {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(tile_at(i)), a[i]);
          }
        }
      }
    }
#endif
    for (int32_t c = c0; c < kv_dim; ++c) {
      for (int32_t r = r0; r < r1; ++r) {
        const size_t t = static_cast<size_t>(c) * kKTile + r;
        const size_t w = 2 * (static_cast<size_t>(r - r0) * kv_dim + c);
        if constexpr (kToRows) {
          std::memcpy(rows + w, tile + t, 2);
        } else {
          std::memcpy(tile + t, rows + w, 2);
        }
      }
    }
  }

  // Slots [begin, end) of one layer's tiled K at k (no wrap), tile by tile. Into tiles
  // with `stream` given (a restore): each whole tile is turned in *stream (a tile's
  // worth of scratch, in the L1 cache) and written out with streaming stores, the
  // stream_fence being the caller's; a part tile (the ends of a range that does not
  // start or stop on a tile boundary) is written lane by lane, in place.
  static void slots(Tile k, int32_t begin, int32_t end, int32_t kv_dim, Rows rows,
                    std::vector<uint16_t>* stream = nullptr) {
    const size_t tile_halves = static_cast<size_t>(kKTile) * kv_dim;
    for (int32_t s = begin; s < end;) {
      const int32_t r0 = s % kKTile;
      const int32_t r1 = std::min(kKTile, r0 + (end - s));
      Tile tile = k + static_cast<size_t>(s / kKTile) * tile_halves;
      bool streamed = false;
      if constexpr (!kToRows) {
        if (stream != nullptr && r0 == 0 && r1 == kKTile) {
          stream->resize(tile_halves);
          lanes(stream->data(), rows, 0, kKTile, kv_dim);
          stream_copy_unfenced(tile, stream->data(), tile_halves * sizeof(uint16_t));
          streamed = true;
        }
      }
      if (!streamed) lanes(tile, rows, r0, r1, kv_dim);
      rows += 2 * static_cast<size_t>(r1 - r0) * kv_dim;
      s += r1 - r0;
    }
  }
};
using TilesToRows = TileCopy<true>;
using RowsToTiles = TileCopy<false>;

}  // namespace

KvStore::KvStore(int32_t n_seq, int32_t n_layer, int32_t n_ctx, int32_t kv_dim, KvType type,
                 const KvRing& ring, int32_t head_dim)
    : n_seq_(n_seq),
      n_layer_(n_layer),
      n_ctx_(n_ctx),
      kv_dim_(kv_dim),
      type_(type),
      row_bytes_(kv_row_bytes(type, kv_dim)),
      v_head_(type == KvType::kF16 && head_dim > 0 ? head_dim : kv_dim) {
  ring_.assign(static_cast<size_t>(n_layer), false);
  for (size_t l = 0; l < ring.layers.size() && l < ring_.size(); ++l) ring_[l] = ring.layers[l];
  if (ring.window > 0 && std::find(ring_.begin(), ring_.end(), true) != ring_.end()) {
    window_ = ring.window;
    ring_cap_ = ring_capacity_for(ring.window, ring.slack, n_ctx);
  }
  layer_offset_.resize(static_cast<size_t>(n_layer));
  size_t off = 0;
  for (int32_t l = 0; l < n_layer; ++l) {
    layer_offset_[static_cast<size_t>(l)] = off;
    off += k_region_bytes(l) + static_cast<size_t>(slots(l)) * row_bytes_;
  }
  seq_bytes_ = off;
  len_.assign(static_cast<size_t>(n_seq), 0);
  lo_.assign(static_cast<size_t>(n_seq), 0);
}

int32_t KvStore::ring_capacity_for(int32_t window, int32_t slack, int32_t n_ctx) {
  const int64_t want = (static_cast<int64_t>(window) + std::max(slack, 0) + kKvRingAlign - 1) /
                       kKvRingAlign * kKvRingAlign;
  return static_cast<int32_t>(std::min<int64_t>(want, n_ctx));
}

Result<KvStore> KvStore::create(int32_t n_seq, int32_t n_layer, int32_t n_ctx, int32_t kv_dim,
                                KvType type, const KvRing& ring, int32_t head_dim) {
  // n_layer 0 is a store of lengths only: every layer's KV lives on a GPU (GpuLayers).
  if (n_seq < 1 || n_layer < 0 || n_ctx < 1 || kv_dim < 1) {
    return InvalidArgument(
        "KV store: n_seq, n_ctx and kv_dim must be positive and n_layer >= 0 (got " +
        std::to_string(n_seq) + ", " + std::to_string(n_layer) + ", " + std::to_string(n_ctx) +
        ", " + std::to_string(kv_dim) + ")");
  }
  if (type != KvType::kF16 && kv_dim % kKvBlock != 0) {
    return InvalidArgument(std::string("KV store: kv_type ") + kv_type_name(type) +
                           " needs kv_dim to be a multiple of " + std::to_string(kKvBlock) +
                           " (got " + std::to_string(kv_dim) + ")");
  }
  if (ring.window < 0 || ring.slack < 0) {
    return InvalidArgument("KV store: ring window and slack must be >= 0 (got " +
                           std::to_string(ring.window) + ", " + std::to_string(ring.slack) + ")");
  }
  if (head_dim < 0 || (head_dim > 0 && kv_dim % head_dim != 0)) {
    return InvalidArgument("KV store: head_dim must divide kv_dim (got head_dim " +
                           std::to_string(head_dim) + ", kv_dim " + std::to_string(kv_dim) + ")");
  }
  KvStore kv(n_seq, n_layer, n_ctx, kv_dim, type, ring, head_dim);
  if (kv.v_head_ < kv_dim && n_layer > 0) {
    int32_t most = 0;
    for (int32_t l = 0; l < n_layer; ++l) most = std::max(most, kv.slots(l));
    const size_t stage = static_cast<size_t>(most) * kv.row_bytes_;
    HEARTH_ASSIGN_OR_RETURN(kv.v_stage_,
                            HugePageRegion::create(stage, "the KV cache's V import buffer"));
    warm_for_kernel_writes(kv.v_stage_.data(), stage);
  }
  const size_t bytes = kv.seq_bytes_;
  kv.blocks_.reserve(static_cast<size_t>(n_seq));
  for (int32_t s = 0; s < n_seq && bytes > 0; ++s) {
    HEARTH_ASSIGN_OR_RETURN(HugePageRegion block,
                            HugePageRegion::create(bytes, "the KV cache of a sequence"));
    // Fresh anonymous memory reads as zeros; writing it commits every page here, at
    // load, and never on a request's path: a restore into a sequence's fresh pages
    // would otherwise pay one page fault per page (~34 ms for a 512-token TinyLlama
    // row on the 2-core VM with 4 KiB pages, against ~1 ms for the copy). llama.cpp
    // likewise clears its whole KV buffer at init.
    warm_for_kernel_writes(block.data(), bytes);
    kv.blocks_.push_back(std::move(block));
  }
  return kv;
}

size_t KvStore::k_region_bytes(int32_t layer) const {
  const int32_t n = slots(layer);
  return static_cast<size_t>(k_tiled() ? (n + kKTile - 1) / kKTile * kKTile : n) * row_bytes_;
}

uint8_t* KvStore::slot0(int32_t seq, int32_t layer, int32_t kind) const {
  return blocks_[static_cast<size_t>(seq)].data() + layer_offset_[static_cast<size_t>(layer)] +
         (kind == 0 ? 0 : k_region_bytes(layer));
}

void KvStore::put_k(int32_t seq, int32_t layer, int32_t pos, const uint16_t* row) {
  auto* k = reinterpret_cast<uint16_t*>(slot0(seq, layer, 0));
  const int32_t s = slot(layer, pos);
  uint16_t* at = k + canon::k_tile_offset(s, 0, kv_dim_);
  for (int32_t c = 0; c < kv_dim_; ++c) at[static_cast<size_t>(c) * kKTile] = row[c];
}

void KvStore::put_v(int32_t seq, int32_t layer, int32_t pos, const uint16_t* row) {
  for (int32_t c = 0; c < kv_dim_; c += v_head_)
    std::memcpy(v_cols(seq, layer, pos, c), row + c, static_cast<size_t>(v_head_) * 2);
}

namespace {

// bytes (a multiple of 16) from src to dst, dst 16-byte aligned: stores that bypass the
// caches (a restore's V, spread over head runs a piece at a time; the caller fences).
void stream_piece(uint8_t* dst, const uint8_t* src, size_t bytes) {
#if defined(__SSE2__)
  for (size_t i = 0; i < bytes; i += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
  }
#else
  std::memcpy(dst, src, bytes);
#endif
}

}  // namespace

template <bool kToRows>
void KvStore::v_rows_copy(int32_t seq, int32_t layer, int32_t begin, int32_t end,
                          std::conditional_t<kToRows, uint8_t*, const uint8_t*> rows) const {
  const size_t run_bytes = static_cast<size_t>(v_head_) * 2;
  if (v_head_ == kv_dim_) {  // one run: the rows themselves
    uint16_t* at = v_run0(seq, layer, 0) + static_cast<size_t>(begin) * v_head_;
    const size_t bytes = static_cast<size_t>(end - begin) * row_bytes_;
    if constexpr (kToRows) {
      std::memcpy(rows, at, bytes);
    } else {
      stream_copy_unfenced(at, rows, bytes);
    }
    return;
  }
  // Every run slot starts 16-byte aligned when the width is a whole number of 16-byte
  // pieces (row_bytes, a multiple of it, then keeps every region offset one too).
  const bool stream = !kToRows && run_bytes % 16 == 0;
  for (int32_t c = 0; c < kv_dim_; c += v_head_) {
    uint16_t* run = v_run0(seq, layer, c);
    for (int32_t s = begin; s < end; ++s) {
      auto* at = reinterpret_cast<uint8_t*>(run + static_cast<size_t>(s) * v_head_);
      auto* r = rows + static_cast<size_t>(s - begin) * row_bytes_ + static_cast<size_t>(c) * 2;
      if constexpr (kToRows) {
        std::memcpy(r, at, run_bytes);
      } else if (stream) {
        stream_piece(at, r, run_bytes);
      } else {
        std::memcpy(at, r, run_bytes);
      }
    }
  }
}

int32_t KvStore::slot_ranges(int32_t layer, int32_t first, int32_t n, SlotRange (&out)[2]) const {
  if (n <= first) return 0;
  const int32_t cap = slots(layer);
  const int32_t begin = first % cap;
  const int32_t count = n - first;  // <= cap
  const int32_t head = std::min(count, cap - begin);
  out[0] = {begin, begin + head};
  if (head == count) return 1;
  out[1] = {0, count - head};
  return 2;
}

void KvStore::append_to(int32_t seq, int32_t n) {
  len_[static_cast<size_t>(seq)] = n;
  if (ring_cap_ > 0) {
    int32_t& lo = lo_[static_cast<size_t>(seq)];
    lo = std::max(lo, n - ring_cap_);
  }
}

int32_t KvStore::min_truncate(int32_t seq) const {
  const int32_t lo = oldest(seq);
  // A query at n sees n - window + 1 .. n; n itself is written by the next chunk.
  return lo == 0 ? 0 : lo + window_ - 1;
}

int32_t KvStore::pack_first(int32_t layer, int32_t n) const {
  return is_ring(layer) ? n - std::min(n, window_) : 0;
}

bool KvStore::pack_ok(int32_t seq, int32_t n) const {
  return ring_cap_ == 0 || n - std::min(n, window_) >= oldest(seq);
}

size_t KvStore::pack_bytes(int32_t n) const {
  size_t rows = 0;
  for (int32_t l = 0; l < n_layer_; ++l) rows += static_cast<size_t>(n - pack_first(l, n));
  return 2 * rows * row_bytes_;
}

std::vector<KvStore::PackedRun> KvStore::packed_runs(int32_t n) const {
  std::vector<PackedRun> out;
  for (int32_t l = 0; l < n_layer_; ++l) {
    SlotRange r[2];
    const int32_t nr = slot_ranges(l, pack_first(l, n), n, r);
    for (int32_t kind = 0; kind < 2; ++kind)
      for (int32_t i = 0; i < nr; ++i) out.push_back({l, kind, r[i]});
  }
  return out;
}

void KvStore::pack(int32_t seq, int32_t n, std::vector<uint8_t>& out) const {
  out.resize(pack_bytes(n));
  pack_to(seq, n, out.data());
}

void KvStore::pack_to(int32_t seq, int32_t n, uint8_t* dst) const {
  // Tiled K leaves as rows, F16 V gathered from its head runs, quantized K and V as the
  // rows they are.
  for (const PackedRun& r : packed_runs(n)) {
    const uint8_t* base = slot0(seq, r.layer, r.kind);
    if (r.kind == 0 && k_tiled()) {
      TilesToRows::slots(reinterpret_cast<const uint16_t*>(base), r.slots.begin, r.slots.end,
                         kv_dim_, dst);
    } else if (r.kind == 1 && v_in_heads()) {
      v_rows_copy<true>(seq, r.layer, r.slots.begin, r.slots.end, dst);
    } else {
      std::memcpy(dst, base + static_cast<size_t>(r.slots.begin) * row_bytes_, r.bytes(row_bytes_));
    }
    dst += r.bytes(row_bytes_);
  }
}

void KvStore::unpack(int32_t seq, std::span<const uint8_t> bytes, int32_t n, ThreadPool* pool) {
  // pack_to's order, tiled K taken in straight from the rows. Each run is cut into
  // pieces of about kPieceBytes whose slot boundaries are whole tiles apart, so no two
  // pieces write the same tile except where a ring layer's two runs meet in one (and
  // those write different lanes of it, lane by lane).
  set_len(seq, 0);
  constexpr size_t kPieceBytes = size_t{256} << 10;
  const int32_t step =
      std::max<int32_t>(kKTile, static_cast<int32_t>(kPieceBytes / row_bytes_) / kKTile * kKTile);
  struct Piece {
    const uint8_t* src;
    int32_t layer, kind;
    SlotRange slots;
  };
  std::vector<Piece> pieces;
  const uint8_t* src = bytes.data();
  for (const PackedRun& r : packed_runs(n)) {
    for (int32_t s = r.slots.begin; s < r.slots.end;) {
      const int32_t e = std::min(r.slots.end, (s / step + 1) * step);
      pieces.push_back(
          {src + static_cast<size_t>(s - r.slots.begin) * row_bytes_, r.layer, r.kind, {s, e}});
      s = e;
    }
    src += r.bytes(row_bytes_);
  }
  auto place = [&](int64_t begin, int64_t end) {
    std::vector<uint16_t> tile;
    for (int64_t i = begin; i < end; ++i) {
      const Piece& p = pieces[static_cast<size_t>(i)];
      uint8_t* base = slot0(seq, p.layer, p.kind);
      if (p.kind == 0 && k_tiled()) {
        RowsToTiles::slots(reinterpret_cast<uint16_t*>(base), p.slots.begin, p.slots.end, kv_dim_,
                           p.src, &tile);
      } else if (p.kind == 1 && v_in_heads()) {
        v_rows_copy<false>(seq, p.layer, p.slots.begin, p.slots.end, p.src);
      } else {
        stream_copy_unfenced(base + static_cast<size_t>(p.slots.begin) * row_bytes_, p.src,
                             static_cast<size_t>(p.slots.end - p.slots.begin) * row_bytes_);
      }
    }
    stream_fence();
  };
  for_pieces(pool, static_cast<int64_t>(pieces.size()), place);
  mark_restored(seq, n);
}

std::vector<std::span<uint8_t>> KvStore::import_runs(int32_t seq, int32_t n) {
  set_len(seq, 0);
  std::vector<std::span<uint8_t>> spans;
  for (const PackedRun& r : packed_runs(n)) {
    spans.emplace_back(
        slot0(seq, r.layer, r.kind) + static_cast<size_t>(r.slots.begin) * row_bytes_,
        r.bytes(row_bytes_));
  }
  return spans;
}

void KvStore::commit_import(int32_t seq, int32_t n, ThreadPool* pool) {
  if (k_tiled()) {
    // The K rows import_runs handed out lie where their slots' tiles are, a tile's rows
    // in its own bytes: each tile they touch is turned in place, once (a ring layer's
    // two runs may meet in one tile where they wrap), and a lane outside the imported
    // slots becomes garbage, as an unheld slot may be.
    const size_t tile_halves = static_cast<size_t>(kKTile) * kv_dim_;
    std::vector<uint16_t*> tiles;
    for (const PackedRun& r : packed_runs(n)) {
      if (r.kind != 0) continue;
      auto* k = reinterpret_cast<uint16_t*>(slot0(seq, r.layer, 0));
      for (int32_t t = r.slots.begin / kKTile; t * kKTile < r.slots.end; ++t)
        tiles.push_back(k + static_cast<size_t>(t) * tile_halves);
    }
    std::sort(tiles.begin(), tiles.end());
    tiles.erase(std::unique(tiles.begin(), tiles.end()), tiles.end());
    auto turn = [&](int64_t begin, int64_t end) {
      std::vector<uint16_t> rows(tile_halves);
      for (int64_t i = begin; i < end; ++i) {
        uint16_t* tile = tiles[static_cast<size_t>(i)];
        std::memcpy(rows.data(), tile, tile_halves * sizeof(uint16_t));
        RowsToTiles::lanes(tile, reinterpret_cast<const uint8_t*>(rows.data()), 0, kKTile, kv_dim_);
      }
    };
    for_pieces(pool, static_cast<int64_t>(tiles.size()), turn);
  }
  if (v_in_heads() && v_head_ < kv_dim_) spread_imported_v(seq, n, pool);
  mark_restored(seq, n);
}

void KvStore::spread_imported_v(int32_t seq, int32_t n, ThreadPool* pool) {
  // The V rows import_runs handed out lie in the layer's V region as rows (slot s at
  // s * row_bytes): each layer's are moved to v_stage_ at the same offsets, then spread
  // over the head runs, which overwrite that region. Pieces of whole slot ranges, so
  // that the threads write disjoint bytes.
  constexpr int32_t kPieceSlots = 1024;
  struct Piece {
    int32_t begin, end;
  };
  std::vector<Piece> pieces;
  uint8_t* stage = v_stage_.data();
  for (int32_t l = 0; l < n_layer_; ++l) {
    SlotRange r[2];
    const int32_t nr = slot_ranges(l, pack_first(l, n), n, r);
    pieces.clear();
    for (int32_t i = 0; i < nr; ++i)
      for (int32_t s = r[i].begin; s < r[i].end; s += kPieceSlots)
        pieces.push_back({s, std::min(r[i].end, s + kPieceSlots)});
    uint8_t* rows = slot0(seq, l, 1);
    const auto count = static_cast<int64_t>(pieces.size());
    for_pieces(pool, count, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const Piece& p = pieces[static_cast<size_t>(i)];
        const size_t at = static_cast<size_t>(p.begin) * row_bytes_;
        std::memcpy(stage + at, rows + at, static_cast<size_t>(p.end - p.begin) * row_bytes_);
      }
    });
    for_pieces(pool, count, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const Piece& p = pieces[static_cast<size_t>(i)];
        v_rows_copy<false>(seq, l, p.begin, p.end,
                           stage + static_cast<size_t>(p.begin) * row_bytes_);
      }
      stream_fence();
    });
  }
}

void KvStore::mark_restored(int32_t seq, int32_t n) {
  set_len(seq, n);
  if (ring_cap_ > 0) lo_[static_cast<size_t>(seq)] = n - std::min(n, window_);
}

Status KvStore::copy_prefix(int32_t src, int32_t dst, int32_t n) {
  if (n < 0 || n > len(src)) {
    return OutOfRange("copy_prefix: n " + std::to_string(n) + " is outside [0, " +
                      std::to_string(len(src)) + "] for seq " + std::to_string(src));
  }
  if (!truncate_ok(src, n)) {
    return FailedPrecondition("copy_prefix: seq " + std::to_string(src) +
                              "'s sliding-window layers (window " + std::to_string(window_) +
                              ") no longer hold the positions a query at " + std::to_string(n) +
                              " sees; the oldest held is " + std::to_string(oldest(src)));
  }
  if (src == dst) return OkStatus();
  const int32_t lo = std::min(oldest(src), n);
  for (int32_t l = 0; l < n_layer_; ++l) {
    SlotRange r[2];
    const int32_t nr = slot_ranges(l, is_ring(l) ? lo : 0, n, r);
    for (int32_t kind = 0; kind < 2; ++kind) {
      if (kind == 1 && v_in_heads()) {  // the same slots of every head run
        for (int32_t c = 0; c < kv_dim_; c += v_head_) {
          for (int32_t i = 0; i < nr; ++i) {
            const size_t from = static_cast<size_t>(r[i].begin) * v_head_;
            std::memcpy(v_run0(dst, l, c) + from, v_run0(src, l, c) + from,
                        static_cast<size_t>(r[i].end - r[i].begin) * v_head_ * 2);
          }
        }
        continue;
      }
      // Same slots in both blocks; tiled K by whole tiles (the lanes past the range are
      // slots dst does not hold).
      const int32_t unit = kind == 0 && k_tiled() ? kKTile : 1;
      for (int32_t i = 0; i < nr; ++i) {
        const size_t from = static_cast<size_t>(r[i].begin / unit * unit) * row_bytes_;
        const size_t to = static_cast<size_t>((r[i].end + unit - 1) / unit * unit) * row_bytes_;
        std::memcpy(slot0(dst, l, kind) + from, slot0(src, l, kind) + from, to - from);
      }
    }
  }
  len_[static_cast<size_t>(dst)] = n;
  lo_[static_cast<size_t>(dst)] = ring_cap_ > 0 ? lo : 0;
  return OkStatus();
}

}  // namespace hearth::engine
