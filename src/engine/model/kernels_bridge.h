// The engine's view of the compute kernels: matmul over mmapped weights, row
// dequantization, the thread pool and the F16 attention helpers. One place to adapt
// when the kernels change.
#pragma once

#include <cstdint>

#include "hearth/fp16.h"
#include "hearth/gguf.h"

#if __has_include("engine/matmul.h")
#include "engine/matmul.h"
#include "engine/quant/quant.h"
#include "engine/thread_pool.h"
#define HEARTH_ENGINE_REAL_KERNELS 1
#else
#include "engine/model/fallback_kernels.h"
#define HEARTH_ENGINE_REAL_KERNELS 0
#endif

namespace hearth::engine::kb {

#if HEARTH_ENGINE_REAL_KERNELS
using ::hearth::engine::MatmulScratch;
using ::hearth::engine::ThreadPool;
using ::hearth::engine::WeightView;
inline const char* kernels_id() { return "kernels-v1"; }
#else
using fallback::MatmulScratch;
using fallback::ThreadPool;
using fallback::WeightView;
inline bool type_supported(gguf::TensorType t) { return fallback::supported(t); }
inline void dequantize_row(gguf::TensorType t, const void* src, float* dst, int64_t n) {
  fallback::dequantize_row(t, src, dst, n);
}
inline void matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y,
                   ThreadPool& pool, MatmulScratch& s) {
  fallback::matmul(w, x, n_tokens, y, pool, s);
}
inline const char* kernels_id() { return "scalar-fallback-v1"; }
#endif

// dot(k, q) over n F16 values, accumulated in f32 in index order.
inline float dot_f16(const uint16_t* k, const uint16_t* q, int n) {
  float acc = 0;
  for (int i = 0; i < n; ++i) acc += fp16_to_fp32(k[i]) * fp16_to_fp32(q[i]);
  return acc;
}
// y += a * v over n values (v F16).
inline void axpy_f16(float* y, float a, const uint16_t* v, int n) {
  for (int i = 0; i < n; ++i) y[i] += a * fp16_to_fp32(v[i]);
}

}  // namespace hearth::engine::kb
