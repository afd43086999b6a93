// matmul.h on the host, for the emulated GPU: the matrix is dequantized to floats at upload
// and each output is one float sum in k order (so it is batch-invariant by construction).
// Its bits are not the GPU's: the emulation tests the engine's GPU glue, not the kernels.
#include <cstring>
#include <vector>

#include "emu_queue.h"
#include "engine/cuda/matmul.h"
#include "engine/quant/quant.h"
#include "hearth/gguf/gguf.h"

namespace hearth::engine::cuda {

bool matmul_supports(int32_t type) {
  switch (static_cast<gguf::TensorType>(type)) {
    case gguf::TensorType::kQ4_0:
    case gguf::TensorType::kQ4_1:
    case gguf::TensorType::kQ5_0:
    case gguf::TensorType::kQ5_1:
    case gguf::TensorType::kQ8_0:
    case gguf::TensorType::kQ4_K:
    case gguf::TensorType::kQ5_K:
    case gguf::TensorType::kQ6_K:
    case gguf::TensorType::kF16:
    case gguf::TensorType::kBF16:
    case gguf::TensorType::kF32:
      return true;
    default:
      return false;
  }
}

Error upload_matrix(int32_t type, int64_t rows, int64_t cols, const void* host, size_t row_bytes,
                    const Stream&, DeviceMatrix* out) {
  if (!matmul_supports(type)) return "upload_matrix: unsupported type " + std::to_string(type);
  out->type = type;
  out->rows = rows;
  out->cols = cols;
  if (Error e = out->data.allocate(static_cast<size_t>(rows * cols) * sizeof(float)); !e.empty())
    return e;
  float* dst = out->data.as<float>();
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row(static_cast<gguf::TensorType>(type),
                   static_cast<const uint8_t*>(host) + static_cast<size_t>(r) * row_bytes,
                   dst + r * cols, cols);
  }
  return {};
}

size_t matmul_scratch_bytes(int64_t, int64_t, int64_t) {
  return 0;
}

Error matmul(const DeviceMatrix& w, const float* x, int64_t n_tokens, float* y, void*, size_t,
             const Stream&) {
  const float* W = w.data.as<const float>();
  const int64_t rows = w.rows, cols = w.cols;
  emu::submit([=] {
    for (int64_t t = 0; t < n_tokens; ++t) {
      const float* xt = x + t * cols;
      for (int64_t r = 0; r < rows; ++r) {
        const float* wr = W + r * cols;
        float s = 0.0f;
        for (int64_t k = 0; k < cols; ++k) s += wr[k] * xt[k];
        y[t * rows + r] = s;
      }
    }
  });
  return {};
}

}  // namespace hearth::engine::cuda
