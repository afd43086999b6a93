// Per-sequence K/V storage. Each sequence owns one block laid out as
//   [layer][K|V][position][n_head_kv * head_dim] in the KV type
// (F16 values, or Q8_0 / Q4_0 blocks of 32 elements: hearth/engine/kv_type.h), so a
// row is row_bytes() bytes and the first n positions of one layer's K (or V) are one contiguous
// run, and kv_pack is a plain copy of those runs. Blocks are allocated and committed once at load
// (zero-filled), so neither steady state nor a restore ever allocates or faults. They are huge-page
// regions: decode attention reads each KV head's slice of every row (128 of 512 bytes for
// TinyLlama), and with 4 KiB pages that was a page walk every 8 positions of every layer
// (docs/engine.md, Speed).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/huge_page_region.h"
#include "hearth/engine/kv_type.h"
#include "hearth/status.h"

namespace hearth::engine {

class KvStore {
 public:
  // n_seq blocks of n_layer * 2 * n_ctx rows of kv_dim values of `type`; an error when
  // the memory cannot be mapped or kv_dim does not fit the type's blocks.
  static Result<KvStore> create(int32_t n_seq, int32_t n_layer, int32_t n_ctx, int32_t kv_dim,
                                KvType type = KvType::kF16);

  int32_t n_seq() const { return n_seq_; }
  int32_t n_ctx() const { return n_ctx_; }
  int32_t kv_dim() const { return kv_dim_; }
  KvType type() const { return type_; }
  size_t row_bytes() const { return row_bytes_; }
  int32_t len(int32_t seq) const { return len_[static_cast<size_t>(seq)]; }
  void set_len(int32_t seq, int32_t n) { len_[static_cast<size_t>(seq)] = n; }

  // A row's bytes, any type.
  uint8_t* k_bytes(int32_t seq, int32_t layer, int32_t pos) { return row(seq, layer, 0, pos); }
  uint8_t* v_bytes(int32_t seq, int32_t layer, int32_t pos) { return row(seq, layer, 1, pos); }
  const uint8_t* k_bytes(int32_t seq, int32_t layer, int32_t pos) const {
    return const_cast<KvStore*>(this)->row(seq, layer, 0, pos);
  }
  const uint8_t* v_bytes(int32_t seq, int32_t layer, int32_t pos) const {
    return const_cast<KvStore*>(this)->row(seq, layer, 1, pos);
  }
  // A row as F16 values (type() == KvType::kF16 only).
  uint16_t* k_row(int32_t seq, int32_t layer, int32_t pos) {
    return reinterpret_cast<uint16_t*>(k_bytes(seq, layer, pos));
  }
  uint16_t* v_row(int32_t seq, int32_t layer, int32_t pos) {
    return reinterpret_cast<uint16_t*>(v_bytes(seq, layer, pos));
  }
  const uint16_t* k_row(int32_t seq, int32_t layer, int32_t pos) const {
    return reinterpret_cast<const uint16_t*>(k_bytes(seq, layer, pos));
  }
  const uint16_t* v_row(int32_t seq, int32_t layer, int32_t pos) const {
    return reinterpret_cast<const uint16_t*>(v_bytes(seq, layer, pos));
  }

  size_t bytes_per_position() const { return static_cast<size_t>(n_layer_) * 2 * row_bytes_; }
  // Copies of the first n positions (see the layout above); n <= len(seq) is the
  // caller's check.
  void pack(int32_t seq, int32_t n, std::vector<uint8_t>& out) const;
  void unpack(int32_t seq, std::span<const uint8_t> bytes, int32_t n);
  // Makes dst's first n positions a copy of src's (one memcpy per layer and K/V run) and
  // sets dst's length to n; n <= len(src) and src != dst are the caller's checks.
  void copy_prefix(int32_t src, int32_t dst, int32_t n);
  // The runs pack() would copy for n positions, writable and in pack's order (a reader
  // can fill them straight from a file); empties the sequence (the caller sets the
  // length once they hold valid data).
  std::vector<std::span<uint8_t>> import_runs(int32_t seq, int32_t n);

 private:
  KvStore(int32_t n_seq, int32_t n_layer, int32_t n_ctx, int32_t kv_dim, KvType type);
  uint8_t* row(int32_t seq, int32_t layer, int32_t kind, int32_t pos);

  int32_t n_seq_, n_layer_, n_ctx_, kv_dim_;
  KvType type_;
  size_t row_bytes_;
  size_t seq_bytes_;
  std::vector<HugePageRegion> blocks_;
  std::vector<int32_t> len_;
};

}  // namespace hearth::engine
