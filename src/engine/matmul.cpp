#include "engine/matmul.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <new>

#include "engine/quant/quant.h"
#include "engine/row_group_layout.h"
#include "hearth/engine/fp16.h"

namespace hearth::engine {
namespace {

// Output rows per work item handed to the thread pool.
constexpr int64_t kRowsPerTask = 16;
// The tile path sweeps a thread's rows in blocks of about this many weight bytes:
// the block stays in L2 while every group of tokens passes it, so the activations
// (all tokens) are streamed once per block, not once per few rows.
constexpr size_t kTileBlockBytes = size_t{256} << 10;
// Fewest tokens for which packing panels pays for itself (the pack touches every
// weight once, like one token's worth of dot products), unless the format's panel
// kernels say otherwise (PanelKernels::min_tokens).
constexpr int64_t kPanelMinTokens = 8;
// Most consecutive panels one thread packs per grab on the pack path (2b).
constexpr int64_t kPackRun = 4;
static_assert(kRowsPerTask == kPanelRows, "a task is one panel");
// Most tokens for which matmul_many shares one dispatch among interleaved views with a
// group GEMM (beyond it each matrix's own dispatch is a small part of its time).
constexpr int64_t kMaxSharedGroupTokens = 64;

int64_t panel_min_tokens(const PanelKernels& pk) {
  return pk.min_tokens > 0 ? pk.min_tokens : kPanelMinTokens;
}

// Each pool thread's panel buffer: grown once, reused by every later call.
MatmulScratch& panel_scratch() {
  thread_local MatmulScratch scratch;
  return scratch;
}
// Each thread's buffer for rows regrouped out of an interleaved view, likewise.
MatmulScratch& plain_scratch() {
  thread_local MatmulScratch scratch;
  return scratch;
}

// Rows [r0, r0 + n) of w as plain rows, row r0 + i at the result + i * row_bytes():
// the view's own rows where they are plain (all of them, or the tail past the
// last group), else a plain copy in `scratch`. On an interleaved view r0 must
// start a group and r0 + n end one (or be w.rows).
const uint8_t* plain_rows(const WeightView& w, int64_t r0, int64_t n, MatmulScratch& scratch) {
  const size_t s = w.row_bytes();
  const int64_t grouped_end =
      w.interleaved ? std::min(r0 + n, w.rows / kInterleavedRows * kInterleavedRows) : 0;
  if (r0 >= grouped_end) return w.data + static_cast<size_t>(r0) * s;  // plain rows
  assert(r0 % kInterleavedRows == 0 && ((r0 + n) % kInterleavedRows == 0 || r0 + n == w.rows));
  uint8_t* buf = scratch.reserve(static_cast<size_t>(n) * s);
  int64_t r = r0;
  for (; r < grouped_end; r += kInterleavedRows) {
    deinterleave_row_group(w.type, w.data + static_cast<size_t>(r) * s, w.cols,
                           buf + static_cast<size_t>(r - r0) * s);
  }
  if (r < r0 + n) {
    std::memcpy(buf + static_cast<size_t>(r - r0) * s, w.data + static_cast<size_t>(r) * s,
                static_cast<size_t>(r0 + n - r) * s);
  }
  return buf;
}

// Row r of w, plain (regrouped into `scratch` if its group is interleaved).
const uint8_t* plain_row(const WeightView& w, int64_t r, MatmulScratch& scratch) {
  if (!w.interleaved || r >= w.rows / kInterleavedRows * kInterleavedRows) return w.row(r);
  const int64_t g0 = r / kInterleavedRows * kInterleavedRows;
  return plain_rows(w, g0, kInterleavedRows, scratch) + static_cast<size_t>(r - g0) * w.row_bytes();
}

}  // namespace

size_t WeightView::row_bytes() const {
  return quant_row_bytes(type, cols);
}

void MatmulScratch::Free::operator()(uint8_t* p) const {
  std::free(p);
}

uint8_t* MatmulScratch::reserve(size_t bytes) {
  if (bytes > capacity_) {
    const size_t rounded = (bytes + 63) / 64 * 64;
    buf_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, rounded)));
    if (!buf_) throw std::bad_alloc();
    capacity_ = rounded;
  }
  return buf_.get();
}

size_t activation_row_bytes(gguf::TensorType weight_type, int64_t cols) {
  const gguf::TensorType at = activation_type(weight_type);
  if (at == gguf::TensorType::kQ8_0) return q8_0_working_row_bytes(cols / kQK32);
  if (at == gguf::TensorType::kF16) return f16_working_row_bytes(cols);
  return quant_row_bytes(at, cols);
}

size_t quantize_activation_row(gguf::TensorType weight_type, const float* x, int64_t cols,
                               uint8_t* out) {
  const gguf::TensorType at = activation_type(weight_type);
  const Status s = quantize_row(at, x, out, cols);
  assert(s.ok());
  (void)s;
  if (at == gguf::TensorType::kQ8_0) {
    const int64_t nb = cols / kQK32;
    const auto* blocks = reinterpret_cast<const BlockQ8_0*>(out);
    uint8_t* side = out + q8_0_side_offset(nb);
    for (int64_t b = 0; b < nb; ++b) {
      const float d = fp16_to_fp32(blocks[b].d);
      int32_t sum = 0;
      for (int j = 0; j < kQK32; ++j) sum += blocks[b].qs[j];
      std::memcpy(side + 4 * b, &d, 4);
      std::memcpy(side + 4 * nb + 4 * b, &sum, 4);
    }
    clear_q8_0_working_padding(out, nb);
  } else if (at == gguf::TensorType::kF16) {
    const auto* h = reinterpret_cast<const uint16_t*>(out);
    float* wide = reinterpret_cast<float*>(out + f16_side_offset(cols));
    for (int64_t i = 0; i < cols; ++i) wide[i] = fp16_to_fp32(h[i]);
    clear_f16_working_padding(out, cols);
  }
  return activation_row_bytes(weight_type, cols);
}

namespace {

// Activation rows in the partner format of a weight type: row t at data + t * stride.
struct ActivationRows {
  const uint8_t* data;
  size_t stride;
};

// Each token's row converted on its own (no cross-row statistics), into `scratch`;
// F32 partners are used as they are.
ActivationRows convert_activations(const KernelSet& kernels, gguf::TensorType type, int64_t cols,
                                   const float* x, int64_t n_tokens, ThreadPool& pool,
                                   MatmulScratch& scratch) {
  if (activation_type(type) == gguf::TensorType::kF32) {
    return {reinterpret_cast<const uint8_t*>(x), static_cast<size_t>(cols) * sizeof(float)};
  }
  const size_t stride = activation_row_bytes(type, cols);
  uint8_t* buf = scratch.reserve(stride * static_cast<size_t>(n_tokens));
  const gguf::TensorType at = activation_type(type);
  const auto fast = at == gguf::TensorType::kQ8_0   ? kernels.quantize_q8_0
                    : at == gguf::TensorType::kF16  ? kernels.quantize_f16
                    : at == gguf::TensorType::kQ8_K ? kernels.quantize_q8_k
                                                    : nullptr;
  pool.parallel_for(n_tokens, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      if (fast != nullptr) {
        fast(x + t * cols, cols, buf + t * stride);
      } else {
        quantize_activation_row(type, x + t * cols, cols, buf + t * stride);
      }
    }
  });
  return {buf, stride};
}

// Rows of weights per cache block of the tile path: whole tasks (so whole row
// groups), at least one, at most 256 rows.
int64_t rows_per_block(const WeightView& w) {
  const auto fit = static_cast<int64_t>(kTileBlockBytes / w.row_bytes());
  // Whole pairs of tasks where two fit (a group GEMM takes its groups in pairs).
  const int64_t unit = fit >= 2 * kRowsPerTask ? 2 * kRowsPerTask : kRowsPerTask;
  return std::clamp<int64_t>(fit / unit * unit, kRowsPerTask, 256);
}

// Dynamic grain of the tile path: about one cache block, but at least ~4 ranges per
// thread so the faster thread can take over the tail. Even where it can be: a group
// GEMM may take its groups in pairs, and an odd range leaves one group to a slower
// single-group kernel.
int64_t tile_grain(const WeightView& w, int64_t n_tasks, const ThreadPool& pool) {
  int64_t grain = std::min(rows_per_block(w) / kRowsPerTask, n_tasks / (4 * pool.size()));
  if (grain > 1) grain += grain & 1;
  return std::clamp<int64_t>(grain, 1, n_tasks);
}

// The tile path (2c) over plain rows [r0, r1) of a matrix of `rows` rows, row r at
// at + (r - r0) * w_stride: groups of up to kMaxTileTokens tokens through the
// two-row or one-row tiles, then a lone token by row groups (where the table has
// them) and dots.
void tile_block(const KernelSet& kernels, bool use_tiles, gguf::TensorType type, int64_t cols,
                size_t w_stride, const uint8_t* at, int64_t r0, int64_t r1, int64_t rows,
                ActivationRows xa, int64_t n_tokens, float* y) {
  const int type_id = static_cast<int>(type);
  const VecDotFn dot = kernels.dot[type_id];
  const MultiDotFn multi = use_tiles ? kernels.multi[type_id] : nullptr;
  const MultiDot2Fn multi2 = use_tiles ? kernels.multi2[type_id] : nullptr;
  const GroupDotFn group_dot = use_tiles ? kernels.group_dot[type_id] : nullptr;
  const uint8_t* xq = xa.data;
  const size_t x_stride = xa.stride;
  const auto row_at = [&](int64_t r) { return at + static_cast<size_t>(r - r0) * w_stride; };
  int64_t t = 0;
  if (multi != nullptr) {
    for (; t + 1 < n_tokens; t += kMaxTileTokens) {
      const int nt = static_cast<int>(std::min<int64_t>(kMaxTileTokens, n_tokens - t));
      const uint8_t* xt = xq + static_cast<size_t>(t) * x_stride;
      int64_t r = r0;
      if (multi2 != nullptr) {
        for (; r + 1 < r1; r += 2) {
          float out0[kMaxTileTokens], out1[kMaxTileTokens];
          multi2(row_at(r), row_at(r + 1), xt, x_stride, nt, cols, out0, out1);
          for (int i = 0; i < nt; ++i) {
            y[(t + i) * rows + r] = out0[i];
            y[(t + i) * rows + r + 1] = out1[i];
          }
        }
      }
      for (; r < r1; ++r) {
        float out[kMaxTileTokens];
        multi(row_at(r), xt, x_stride, nt, cols, out);
        for (int i = 0; i < nt; ++i) y[(t + i) * rows + r] = out[i];
      }
    }
  }
  for (; t < n_tokens; ++t) {
    const uint8_t* xt = xq + static_cast<size_t>(t) * x_stride;
    int64_t r = r0;
    if (group_dot != nullptr) {
      for (; r + kRowGroup <= r1; r += kRowGroup)
        group_dot(row_at(r), w_stride, xt, cols, y + t * rows + r);
    }
    for (; r < r1; ++r) y[t * rows + r] = dot(row_at(r), xt, cols);
  }
}

// The tile path (2c) for output-row tasks [task_begin, task_end) of w: the thread's
// rows in cache blocks that every token passes. An interleaved view goes through
// the table's interleaved row-group kernel, group by group with every token while
// the group is in L1; without one (or with the tiles off) its rows are regrouped
// into plain rows first.
void tile_tasks(const KernelSet& kernels, bool use_tiles, const WeightView& w, ActivationRows xa,
                int64_t n_tokens, float* y, int64_t task_begin, int64_t task_end) {
  const int type_id = static_cast<int>(w.type);
  const GroupDotFn interleaved_dot =
      use_tiles && w.interleaved ? kernels.group_dot_interleaved[type_id] : nullptr;
  // Several tokens: each group's blocks decoded once for a tile of tokens (2d).
  const GroupGemmFn group_gemm = use_tiles && w.interleaved && n_tokens > 1
                                     ? kernels.group_gemm_interleaved[type_id]
                                     : nullptr;
  const size_t w_stride = w.row_bytes();
  const int64_t rows = w.rows;
  const int64_t grouped_end = w.interleaved ? rows / kInterleavedRows * kInterleavedRows : 0;
  const int64_t block = rows_per_block(w);
  const int64_t row_end_all = std::min(rows, task_end * kRowsPerTask);
  for (int64_t r0 = task_begin * kRowsPerTask; r0 < row_end_all; r0 += block) {
    const int64_t r1 = std::min(row_end_all, r0 + block);
    int64_t r = r0;
    if (group_gemm != nullptr) {
      const int64_t r_end = std::max(r, std::min(r1, grouped_end));
      const auto n_groups = static_cast<int>((r_end - r) / kInterleavedRows);
      group_gemm(w.data + static_cast<size_t>(r) * w_stride, kInterleavedRows * w_stride, n_groups,
                 w.cols, xa.data, xa.stride, static_cast<int>(n_tokens), y + r,
                 static_cast<size_t>(rows));
      r += static_cast<int64_t>(n_groups) * kInterleavedRows;
    } else if (interleaved_dot != nullptr) {
      for (; r < std::min(r1, grouped_end); r += kInterleavedRows) {
        const uint8_t* g = w.data + static_cast<size_t>(r) * w_stride;
        for (int64_t t = 0; t < n_tokens; ++t) {
          interleaved_dot(g, w_stride, xa.data + static_cast<size_t>(t) * xa.stride, w.cols,
                          y + t * rows + r);
        }
      }
    }
    if (r < r1) {
      tile_block(kernels, use_tiles, w.type, w.cols, w_stride,
                 plain_rows(w, r, r1 - r, plain_scratch()), r, r1, rows, xa, n_tokens, y);
    }
  }
}

}  // namespace

void matmul_with(const KernelSet& kernels, bool use_tiles, const WeightView& w, const float* x,
                 int64_t n_tokens, float* y, ThreadPool& pool, MatmulScratch& scratch) {
  if (n_tokens <= 0 || w.rows <= 0) return;
  const int type_id = static_cast<int>(w.type);
  assert(type_id < kTypeSlots && kernels.dot[type_id] != nullptr);
  assert(w.cols % block_geometry(w.type).block_size == 0);

  // 1. Activations in the partner format, one independent row per token.
  const ActivationRows xa =
      convert_activations(kernels, w.type, w.cols, x, n_tokens, pool, scratch);
  const uint8_t* xq = xa.data;
  const size_t x_stride = xa.stride;

  // 2. Output rows in tasks of kRowsPerTask; each output is one kernel call.
  const size_t w_stride = w.row_bytes();
  const int64_t n_tasks = (w.rows + kRowsPerTask - 1) / kRowsPerTask;
  const int64_t cols = w.cols;
  const int64_t rows = w.rows;
  const PanelKernels& pk = kernels.panel[type_id];
  if (use_tiles && pk.gemm != nullptr && pk.pack == nullptr && n_tokens >= panel_min_tokens(pk)) {
    // 2a. Prefill, GEMM on the rows in place: blocks of whole tasks that stay in L2
    // while every token passes them.
    const int64_t block_rows = rows_per_block(w);
    const int64_t n_blocks = (rows + block_rows - 1) / block_rows;
    pool.parallel_for_dynamic(n_blocks, 1, [&](int64_t block_begin, int64_t block_end) {
      for (int64_t b = block_begin; b < block_end; ++b) {
        const int64_t r0 = b * block_rows;
        const int nr = static_cast<int>(std::min(block_rows, rows - r0));
        pk.gemm(plain_rows(w, r0, nr, plain_scratch()), nr, cols, xq, x_stride,
                static_cast<int>(n_tokens), y + r0, static_cast<size_t>(rows));
      }
    });
    return;
  }
  const bool group_gemm = use_tiles && w.interleaved && kernels.group_gemm_interleaved[type_id];
  if (use_tiles && pk.gemm != nullptr && n_tokens >= panel_min_tokens(pk) && !group_gemm) {
    // 2b. Prefill: pack each task's rows into a panel, then sweep every token past it.
    // Runs of kPackRun consecutive tasks per grab: a pack prefetches the next panel's
    // rows, which is then this thread's next task (except at a run's end).
    const int64_t run = std::clamp<int64_t>(n_tasks / (8 * pool.size()), 1, kPackRun);
    pool.parallel_for_dynamic(n_tasks, run, [&](int64_t task_begin, int64_t task_end) {
      uint8_t* panel = panel_scratch().reserve(pk.bytes(cols));
      for (int64_t task = task_begin; task < task_end; ++task) {
        const int64_t r0 = task * kRowsPerTask;
        const int nr = static_cast<int>(std::min<int64_t>(kRowsPerTask, rows - r0));
        pk.pack(plain_rows(w, r0, nr, plain_scratch()), w_stride, nr, cols, panel);
        pk.gemm(panel, nr, cols, xq, x_stride, static_cast<int>(n_tokens), y + r0,
                static_cast<size_t>(rows));
      }
    });
    return;
  }
  // 2c. The tile path; 2d. an interleaved view with a group GEMM takes it for any number
  // of tokens: its groups are read as they lie, with no regrouping or packing.
  pool.parallel_for_dynamic(
      n_tasks, tile_grain(w, n_tasks, pool), [&](int64_t task_begin, int64_t task_end) {
        tile_tasks(kernels, use_tiles, w, xa, n_tokens, y, task_begin, task_end);
      });
}

void matmul_many(std::span<const MatmulPart> parts, const float* x, int64_t n_tokens,
                 ThreadPool& pool, MatmulScratch& scratch) {
  if (parts.empty() || n_tokens <= 0) return;
  const WeightView& w0 = *parts[0].w;
  const KernelSet& kernels = active_kernels();
  // Interleaved views with a group GEMM take the tile path for any number of tokens
  // (matmul_with's 2d), so they share the dispatch for small-batch prefill too.
  bool grouped = kernels.group_gemm_interleaved[static_cast<int>(w0.type)] != nullptr;
  bool shared = parts.size() <= kMaxMatmulParts;
  for (const MatmulPart& p : parts) {
    shared = shared && p.w->type == w0.type && p.w->cols == w0.cols && p.w->rows > 0;
    grouped = grouped && p.w->interleaved;
  }
  const int64_t panel_min = panel_min_tokens(kernels.panel[static_cast<int>(w0.type)]);
  shared = shared && (n_tokens < panel_min || (grouped && n_tokens <= kMaxSharedGroupTokens));
  if (!shared) {  // prefill (panels amortize their own dispatch) or unlike matrices
    for (const MatmulPart& p : parts) matmul(*p.w, x, n_tokens, p.y, pool, scratch);
    return;
  }
  assert(kernels.dot[static_cast<int>(w0.type)] != nullptr);
  const ActivationRows xa =
      convert_activations(kernels, w0.type, w0.cols, x, n_tokens, pool, scratch);
  // first[i]: part i's first task in the concatenated task range.
  int64_t first[kMaxMatmulParts + 1] = {};
  for (size_t i = 0; i < parts.size(); ++i) {
    first[i + 1] = first[i] + (parts[i].w->rows + kRowsPerTask - 1) / kRowsPerTask;
  }
  const int64_t n_tasks = first[parts.size()];
  pool.parallel_for_dynamic(n_tasks, tile_grain(w0, n_tasks, pool),
                            [&](int64_t task_begin, int64_t task_end) {
                              for (size_t i = 0; i < parts.size(); ++i) {
                                const int64_t lo = std::max(task_begin, first[i]);
                                const int64_t hi = std::min(task_end, first[i + 1]);
                                if (lo < hi) {
                                  tile_tasks(kernels, true, *parts[i].w, xa, n_tokens, parts[i].y,
                                             lo - first[i], hi - first[i]);
                                }
                              }
                            });
}

void matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
            MatmulScratch& scratch) {
  matmul_with(active_kernels(), true, w, x, n_tokens, y, pool, scratch);
}

void dequantize_rows(const WeightView& w, int64_t first, int64_t count, float* out) {
  for (int64_t i = 0; i < count; ++i)
    dequantize_row(w.type, plain_row(w, first + i, plain_scratch()), out + i * w.cols, w.cols);
}

void get_rows(const WeightView& w, const int32_t* ids, int64_t n_ids, float* out) {
  for (int64_t i = 0; i < n_ids; ++i)
    dequantize_row(w.type, plain_row(w, ids[i], plain_scratch()), out + i * w.cols, w.cols);
}

float dot_f32(const float* a, const float* b, int64_t n) {
  return active_kernels().dot[static_cast<int>(gguf::TensorType::kF32)](a, b, n);
}

}  // namespace hearth::engine
