// TEMPORARY: scalar stand-ins for the kernels branch (engine/matmul.h, engine/quant/quant.h,
// engine/thread_pool.h), used only while those headers are absent. F32/F16/BF16 only,
// single-threaded. Delete once the kernels branch is merged.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "hearth/fp16.h"
#include "hearth/gguf.h"

namespace hearth::engine::fallback {

struct WeightView {
  gguf::TensorType type;
  int64_t rows;
  int64_t cols;
  const void* data;
};

class ThreadPool {
 public:
  explicit ThreadPool(int n) : n_(n) {}
  int size() const { return n_; }
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) { fn(0, n); }

 private:
  int n_;
};

struct MatmulScratch {
  std::vector<float> row;
};

inline bool supported(gguf::TensorType t) {
  return t == gguf::TensorType::kF32 || t == gguf::TensorType::kF16 ||
         t == gguf::TensorType::kBF16;
}

inline void dequantize_row(gguf::TensorType t, const void* src, float* dst, int64_t n) {
  if (t == gguf::TensorType::kF32) {
    const float* s = static_cast<const float*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = s[i];
  } else if (t == gguf::TensorType::kF16) {
    const uint16_t* s = static_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(s[i]);
  } else {
    const uint16_t* s = static_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(s[i]);
  }
}

inline void matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y,
                   ThreadPool&, MatmulScratch& s) {
  s.row.resize(static_cast<size_t>(w.cols) * 2);
  float* row = s.row.data();
  float* xr = row + w.cols;
  const size_t row_bytes = gguf::row_bytes(w.type, static_cast<uint64_t>(w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    dequantize_row(w.type, static_cast<const uint8_t*>(w.data) + r * row_bytes, row, w.cols);
    for (int64_t t = 0; t < n_tokens; ++t) {
      const float* xt = x + t * w.cols;
      // Round activations like llama.cpp's partner type.
      for (int64_t i = 0; i < w.cols; ++i) {
        xr[i] = w.type == gguf::TensorType::kF16    ? fp16_to_fp32(fp32_to_fp16(xt[i]))
                : w.type == gguf::TensorType::kBF16 ? bf16_to_fp32(fp32_to_bf16(xt[i]))
                                                    : xt[i];
      }
      float acc = 0;
      for (int64_t i = 0; i < w.cols; ++i) acc += row[i] * xr[i];
      y[t * w.rows + r] = acc;
    }
  }
}

}  // namespace hearth::engine::fallback
