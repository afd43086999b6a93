// Per-sequence K/V storage. Each sequence owns one block laid out as
//   [layer][K|V][slot][n_head_kv * head_dim] in the KV type
// (F16 values, or Q8_0 / Q4_0 blocks of 32 elements: hearth/engine/kv_type.h), except
// that F16 K is kept in tiles of canon::kKTile (16) slots, each dimension-major
// ([column][16]: engine/kernels/kv_blocks.h), so that decode attention reads 16
// positions' K as vectors of one element each instead of transposing rows (docs/
// engine.md, "KV layout"). A tile occupies the bytes its 16 rows would; a layer's K slots
// round up to whole tiles. F16 V is kept head by head, [head][slot][head_dim] (runs of
// v_head_dim() columns), so that one KV head's P.V reads its V as one stream: as rows,
// a head's 128 of every 512 bytes (TinyLlama) were too sparse for the hardware
// prefetcher, and P.V at 16k positions took about twice as long.
// A layer that keeps every position has n_ctx slots, position p in slot p; a sliding-window layer
// (KvRing) keeps a ring of ring_capacity() slots, position p in slot p % ring_capacity(), so it
// holds the last ring_capacity() positions written and no more. Blocks are allocated and committed
// once at load (zero-filled), so neither steady state nor a restore ever allocates or faults. They
// are huge-page regions: with 4 KiB pages, decode attention reading one KV head's slice of every
// row (as it read V before the head runs) paid a page walk every 8 positions of every layer
// (docs/engine.md, Speed).
//
// Packed rows (pack / unpack / import_runs; docs/cache-design.md, "KV payload"): for
// each layer in order, its K rows then its V rows, in position order: positions
// [0, n) of a layer that keeps every position, and the last min(n, window) positions
// [n - min(n, window), n) of a ring layer: all that continuing at position n needs
// (a query at n sees n - window + 1 .. n) plus one, so a restored row can still drop
// its last position to recompute its logits. Packed rows are rows whatever the store
// keeps: F16 K is transposed per tile on the way out and in, F16 V gathered from (and
// spread over) its head runs.
#pragma once

#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "common/huge_page_region.h"
#include "engine/kernels/kv_blocks.h"
#include "engine/thread_pool.h"
#include "hearth/engine/kv_type.h"
#include "hearth/status.h"

namespace hearth::engine {

// Ring capacities are a multiple of this (or n_ctx itself), so an attention tile of 8 or
// 16 positions that starts at a multiple of its width never straddles the ring's end.
inline constexpr int32_t kKvRingAlign = 16;

// The sliding-window layers of a store, which keep only a ring of positions.
struct KvRing {
  int32_t window = 0;  // positions a query sees (hparams n_swa); 0: no ring layers
  // Extra positions beyond the window: at least the most positions one forward chunk
  // appends to a sequence (n_batch), so a chunk never overwrites a position its own
  // first query still needs; what is left lets a sequence be truncated by that many.
  int32_t slack = 0;
  std::vector<bool> layers;  // per layer: keeps only the ring (size n_layer, or empty)
};

class KvStore {
 public:
  // n_seq blocks of n_layer * 2 rows of kv_dim values of `type` per slot (n_layer 0: no
  // memory, lengths only, when a GPU holds every layer's KV): n_ctx slots per
  // layer, ring_capacity() for ring's layers; an error when the memory cannot be mapped
  // or kv_dim does not fit the type's blocks. head_dim: the width of a KV head, the runs
  // F16 V is kept in (a divisor of kv_dim; 0: kv_dim, one run: V as rows).
  static Result<KvStore> create(int32_t n_seq, int32_t n_layer, int32_t n_ctx, int32_t kv_dim,
                                KvType type = KvType::kF16, const KvRing& ring = {},
                                int32_t head_dim = 0);
  // Slots of a ring layer for a window, slack and context: min(n_ctx, window + slack
  // rounded up to kKvRingAlign).
  static int32_t ring_capacity_for(int32_t window, int32_t slack, int32_t n_ctx);

  int32_t n_seq() const { return n_seq_; }
  int32_t n_ctx() const { return n_ctx_; }
  int32_t kv_dim() const { return kv_dim_; }
  KvType type() const { return type_; }
  size_t row_bytes() const { return row_bytes_; }
  int32_t len(int32_t seq) const { return len_[static_cast<size_t>(seq)]; }
  // Sets the length of a sequence whose positions [0, n) are all held (0 empties it).
  void set_len(int32_t seq, int32_t n) {
    len_[static_cast<size_t>(seq)] = n;
    lo_[static_cast<size_t>(seq)] = 0;
  }
  // A forward chunk wrote positions up to n - 1 of seq: its length becomes n, and the
  // ring layers' oldest held position moves up to n - ring_capacity().
  void append_to(int32_t seq, int32_t n);

  // Ring layers: the window, the slots (0 when no layer is a ring), which layers.
  int32_t window() const { return window_; }
  int32_t ring_capacity() const { return ring_cap_; }
  bool is_ring(int32_t layer) const { return ring_cap_ > 0 && ring_[static_cast<size_t>(layer)]; }
  // Slots of a layer: ring_capacity() for a ring layer, else n_ctx.
  int32_t slots(int32_t layer) const { return is_ring(layer) ? ring_cap_ : n_ctx_; }
  // The slot of a position in a layer.
  int32_t slot(int32_t layer, int32_t pos) const { return is_ring(layer) ? pos % ring_cap_ : pos; }
  // The oldest position every ring layer of seq still holds (0 without ring layers).
  int32_t oldest(int32_t seq) const { return lo_[static_cast<size_t>(seq)]; }
  // The smallest n > 0 that truncate_ok(seq, n) accepts (0 always is).
  int32_t min_truncate(int32_t seq) const;
  // Whether seq can continue at position n (n <= len(seq)): every ring layer still holds
  // the window a query at n sees (n == 0 always can).
  bool truncate_ok(int32_t seq, int32_t n) const { return n == 0 || n >= min_truncate(seq); }
  // Whether seq holds what pack(seq, n) copies (n <= len(seq)).
  bool pack_ok(int32_t seq, int32_t n) const;

  // Whether K is kept in tiles (F16) rather than rows (the quantized types).
  bool k_tiled() const { return type_ == KvType::kF16; }
  // F16 K of a position: written from a row of kv_dim halves, read as one element.
  void put_k(int32_t seq, int32_t layer, int32_t pos, const uint16_t* row);
  uint16_t k_at(int32_t seq, int32_t layer, int32_t pos, int32_t c) const {
    return reinterpret_cast<const uint16_t*>(
        slot0(seq, layer, 0))[canon::k_tile_offset(slot(layer, pos), c, kv_dim_)];
  }
  // Quantized K of a position, a row's bytes (!k_tiled() only).
  uint8_t* k_bytes(int32_t seq, int32_t layer, int32_t pos) { return row(seq, layer, 0, pos); }
  const uint8_t* k_bytes(int32_t seq, int32_t layer, int32_t pos) const {
    return const_cast<KvStore*>(this)->row(seq, layer, 0, pos);
  }
  // Quantized V of a position, a row's bytes (!v_in_heads() only).
  uint8_t* v_bytes(int32_t seq, int32_t layer, int32_t pos) { return row(seq, layer, 1, pos); }
  const uint8_t* v_bytes(int32_t seq, int32_t layer, int32_t pos) const {
    return const_cast<KvStore*>(this)->row(seq, layer, 1, pos);
  }
  // A layer's K: slot 0's row, or (k_tiled()) tile 0. Quantized V: slot 0's row; slot s
  // is s * row_bytes() further on.
  const uint8_t* k_slot0(int32_t seq, int32_t layer) const { return slot0(seq, layer, 0); }
  const uint8_t* v_slot0(int32_t seq, int32_t layer) const { return slot0(seq, layer, 1); }

  // Whether V is kept in head runs (F16) rather than rows (the quantized types), and the
  // runs' width (create's head_dim).
  bool v_in_heads() const { return type_ == KvType::kF16; }
  int32_t v_head_dim() const { return v_head_; }
  // F16 V of a position: written from a row of kv_dim halves, read as one element.
  void put_v(int32_t seq, int32_t layer, int32_t pos, const uint16_t* row);
  uint16_t v_at(int32_t seq, int32_t layer, int32_t pos, int32_t c) const {
    return *v_cols(seq, layer, pos, c);
  }
  // F16 V element c of a position, followed by the rest of its head run (up to the next
  // multiple of v_head_dim()): where a writer puts a head's values and attention reads them.
  uint16_t* v_cols(int32_t seq, int32_t layer, int32_t pos, int32_t c) {
    return v_run0(seq, layer, c) + static_cast<size_t>(slot(layer, pos)) * v_head_;
  }
  const uint16_t* v_cols(int32_t seq, int32_t layer, int32_t pos, int32_t c) const {
    return const_cast<KvStore*>(this)->v_cols(seq, layer, pos, c);
  }
  // Element c of slot 0's F16 V: slot s's is s * v_head_dim() halves further on.
  const uint16_t* v_head(int32_t seq, int32_t layer, int32_t c) const {
    return const_cast<KvStore*>(this)->v_run0(seq, layer, c);
  }

  // One position of every layer, K and V, as a layer keeping every position stores it.
  size_t bytes_per_position() const { return static_cast<size_t>(n_layer_) * 2 * row_bytes_; }
  // Memory of one sequence's block (what create commits per sequence).
  size_t bytes_per_sequence() const { return seq_bytes_; }
  // Bytes of a packed row of n positions (the layout above).
  size_t pack_bytes(int32_t n) const;
  // Copies of the positions a packed row of n holds (the layout above); pack_ok(seq, n)
  // is the caller's check.
  void pack(int32_t seq, int32_t n, std::vector<uint8_t>& out) const;
  // The same bytes written at dst (pack_bytes(n) of them).
  void pack_to(int32_t seq, int32_t n, uint8_t* dst) const;
  // bytes.size() == pack_bytes(n) is the caller's check. The bytes are placed (K turned
  // into tiles on the way) with stores that bypass the caches, in pieces spread over
  // pool's threads when given: a restore from memory is one read of the row and one
  // write of the KV, as fast as a copy of it.
  void unpack(int32_t seq, std::span<const uint8_t> bytes, int32_t n, ThreadPool* pool = nullptr);
  // The runs pack() would copy for n positions, writable and in pack's order (a reader
  // can fill them straight from a file; a ring layer's run may be split in two where it
  // wraps); empties the sequence. Once they hold valid data, commit_import(seq, n),
  // which turns the K rows written there into tiles in place.
  std::vector<std::span<uint8_t>> import_runs(int32_t seq, int32_t n);
  // pool: spreads turning the K rows into tiles (an extra pass over K's bytes) over its
  // threads, where the memory bandwidth grows with them.
  void commit_import(int32_t seq, int32_t n, ThreadPool* pool = nullptr);
  // Makes dst hold the first n positions of src (n <= len(src)), as far as continuing at
  // n needs: every position of the full layers, and of the ring layers those src still
  // holds. FailedPrecondition (naming the window) when a ring layer of src no longer
  // holds the window a query at n sees. For forking a sequence (n > 1 completions).
  Status copy_prefix(int32_t src, int32_t dst, int32_t n);

 private:
  KvStore(int32_t n_seq, int32_t n_layer, int32_t n_ctx, int32_t kv_dim, KvType type,
          const KvRing& ring, int32_t head_dim);
  uint8_t* slot0(int32_t seq, int32_t layer, int32_t kind) const;
  // Element c of slot 0 in c's head run of a layer's F16 V.
  uint16_t* v_run0(int32_t seq, int32_t layer, int32_t c) const {
    return reinterpret_cast<uint16_t*>(slot0(seq, layer, 1)) +
           (static_cast<size_t>(c / v_head_) * slots(layer)) * v_head_ + c % v_head_;
  }
  // Slots [begin, end) of a layer's F16 V between its head runs and rows (kToRows: runs ->
  // rows; else rows -> runs), rows at any alignment.
  template <bool kToRows>
  void v_rows_copy(int32_t seq, int32_t layer, int32_t begin, int32_t end,
                   std::conditional_t<kToRows, uint8_t*, const uint8_t*> rows) const;
  uint8_t* row(int32_t seq, int32_t layer, int32_t kind, int32_t pos) {
    return slot0(seq, layer, kind) + static_cast<size_t>(slot(layer, pos)) * row_bytes_;
  }
  // Bytes of a layer's K: its slots' rows, rounded up to whole tiles when k_tiled().
  size_t k_region_bytes(int32_t layer) const;
  // The slots of positions [first, n) of a layer: one range, or two where a ring wraps.
  struct SlotRange {
    int32_t begin, end;
  };
  int32_t slot_ranges(int32_t layer, int32_t first, int32_t n, SlotRange (&out)[2]) const;
  // A packed row of n positions as runs of one layer's K (kind 0) or V (1) slots, in
  // the row's order.
  struct PackedRun {
    int32_t layer, kind;
    SlotRange slots;
    size_t bytes(size_t row_bytes) const {
      return static_cast<size_t>(slots.end - slots.begin) * row_bytes;
    }
  };
  std::vector<PackedRun> packed_runs(int32_t n) const;
  // commit_import's V part: the imported F16 V rows into head runs (through v_stage_).
  void spread_imported_v(int32_t seq, int32_t n, ThreadPool* pool);
  // Marks positions [0, n) of seq held once a restore wrote them.
  void mark_restored(int32_t seq, int32_t n);
  // The first position a packed row of n holds for a layer.
  int32_t pack_first(int32_t layer, int32_t n) const;

  int32_t n_seq_, n_layer_, n_ctx_, kv_dim_;
  KvType type_;
  size_t row_bytes_;
  int32_t v_head_;  // width of F16 V's head runs (kv_dim: rows)
  // Where commit_import moves a layer's imported V rows before spreading them over the
  // head runs (F16 with several runs): one layer's V, committed at create.
  HugePageRegion v_stage_;
  int32_t window_ = 0;
  int32_t ring_cap_ = 0;
  std::vector<bool> ring_;
  std::vector<size_t> layer_offset_;  // bytes from a block's start to a layer's K
  size_t seq_bytes_ = 0;
  std::vector<HugePageRegion> blocks_;
  std::vector<int32_t> len_;
  std::vector<int32_t> lo_;
};

}  // namespace hearth::engine
