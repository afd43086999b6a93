// y = x * W^T for a weight matrix used straight from the GGUF mapping.
//
// THE INVARIANCE CONTRACT: y[t][r] is bit-identical whatever n_tokens is, wherever
// token t sits in the batch, and whatever the thread count. It holds because
//  * each activation row is converted to the weight type's partner format on its
//    own (no cross-row statistics);
//  * each output is one kernel call with a fixed accumulation order over K (the
//    canonical order, identical in the mat-vec, the multi-token tile, the panel and
//    the interleaved group GEMM kernels, and in every ISA table);
//  * threads split the work by output rows only, never along K.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "engine/kernels/kernel_set.h"
#include "engine/thread_pool.h"
#include "hearth/gguf/gguf.h"

namespace hearth::engine {

// A row-major weight matrix: `rows` rows of `cols` elements of `type`, row r at
// data + r * row_bytes(). Not owned.
//
// interleaved: rows [0, rows / kInterleavedRows * kInterleavedRows) are stored as interleaved
// row groups instead (engine/row_group_layout.h; the weight arena sets it for
// the types the active table has a kernel for), the rest as plain rows. Every
// function here reads such a view with the same results as the plain one; row()
// is then valid only for the plain tail.
struct WeightView {
  gguf::TensorType type = gguf::TensorType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  const uint8_t* data = nullptr;
  bool interleaved = false;

  size_t row_bytes() const;
  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes(); }
};

// Reusable buffer for quantized activations. Grows to the largest request and
// never shrinks, so steady-state matmuls allocate nothing.
class MatmulScratch {
 public:
  // At least `bytes` bytes, 64-byte aligned; contents unspecified.
  uint8_t* reserve(size_t bytes);
  size_t capacity() const { return capacity_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t, Free> buf_;
  size_t capacity_ = 0;
};

// y[t * w.rows + r] = dot(W row r, x row t) for t < n_tokens; x is n_tokens x
// w.cols f32, row-major. w.type must satisfy is_supported_weight_type() and
// w.cols be a multiple of its block size (asserted). Uses active_kernels().
void matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
            MatmulScratch& scratch);

// Same with an explicit kernel table, and every path but the one-row dot (the
// multi-token tiles, the panels, the row groups) switched off when use_tiles is
// false (tests compare paths and tables with this).
void matmul_with(const KernelSet& kernels, bool use_tiles, const WeightView& w, const float* x,
                 int64_t n_tokens, float* y, ThreadPool& pool, MatmulScratch& scratch);

// Several matrices that read the same activations (Q, K and V; gate and up).
// For a few tokens (below the prefill panels' threshold; up to 64 when every part is an
// interleaved view the table has a group GEMM for) and matrices of one type and
// width (at most kMaxMatmulParts), the activations are converted once and one pool
// dispatch covers all their rows, so the small matrices' tails overlap instead of each
// ending in a barrier; otherwise it is one matmul() per part. Each output is the same
// kernel call either way: the bits are matmul()'s.
struct MatmulPart {
  const WeightView* w;
  float* y;  // n_tokens x w->rows, as matmul() writes it
};
inline constexpr size_t kMaxMatmulParts = 4;
void matmul_many(std::span<const MatmulPart> parts, const float* x, int64_t n_tokens,
                 ThreadPool& pool, MatmulScratch& scratch);

// Converts one f32 activation row of `cols` elements into the partner format of
// weight type `weight_type` (activation_type()); returns the bytes written.
size_t quantize_activation_row(gguf::TensorType weight_type, const float* x, int64_t cols,
                               uint8_t* out);
// Bytes of one converted activation row.
size_t activation_row_bytes(gguf::TensorType weight_type, int64_t cols);

// Embedding lookup: out[i * w.cols ...] = dequantized row ids[i] (ids must be in
// [0, w.rows); checked by the caller).
void get_rows(const WeightView& w, const int32_t* ids, int64_t n_ids, float* out);
// Dequantizes rows [first, first + count) into out (count x w.cols floats).
void dequantize_rows(const WeightView& w, int64_t first, int64_t count, float* out);

// sum_i a[i] * b[i] in the 32-lane canonical order (the F32 weight dot).
float dot_f32(const float* a, const float* b, int64_t n);

}  // namespace hearth::engine
