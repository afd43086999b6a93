#include "engine/model/half_rows.h"

#include "engine/kernels/kernel_set.h"
#include "hearth/engine/fp16.h"

namespace hearth::engine {

void to_f16(const float* x, uint16_t* y, int64_t n) {
  if (const auto f = active_kernels().to_f16; f != nullptr) {
    f(x, y, n);
    return;
  }
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

void round_to_f16(const float* x, float scale, float* y, int64_t n) {
  if (const auto f = active_kernels().round_to_f16; f != nullptr) {
    f(x, scale, y, n);
    return;
  }
  for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(fp32_to_fp16(x[i] * scale));
}

}  // namespace hearth::engine
