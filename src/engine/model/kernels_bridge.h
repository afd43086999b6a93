// The engine's view of the compute kernels (engine/matmul.h, engine/quant/quant.h,
// engine/thread_pool.h): one place to adapt when they change.
#pragma once

#include <cstdint>
#include <span>

#include "engine/cpu_features.h"
#include "engine/matmul.h"
#include "engine/quant/quant.h"
#include "engine/thread_pool.h"
#include "hearth/gguf/gguf.h"

namespace hearth::engine::kb {

using ::hearth::engine::active_kernels;
using ::hearth::engine::KernelSet;
using ::hearth::engine::kInterleavedRows;
using ::hearth::engine::MatmulPart;
using ::hearth::engine::MatmulScratch;
using ::hearth::engine::ThreadPool;
using ::hearth::engine::WeightView;

inline bool type_supported(gguf::TensorType t) {
  return is_supported_weight_type(t);
}
inline void dequantize_row(gguf::TensorType t, const void* src, float* dst, int64_t n) {
  ::hearth::engine::dequantize_row(t, src, dst, n);
}
inline void matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y,
                   ThreadPool& pool, MatmulScratch& s) {
  ::hearth::engine::matmul(w, x, n_tokens, y, pool, s);
}
inline void matmul_many(std::span<const MatmulPart> parts, const float* x, int64_t n_tokens,
                        ThreadPool& pool, MatmulScratch& s) {
  ::hearth::engine::matmul_many(parts, x, n_tokens, pool, s);
}
inline const char* kernels_id() {
  return ::hearth::engine::numerics_id();
}

}  // namespace hearth::engine::kb
