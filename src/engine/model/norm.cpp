#include "engine/model/norm.h"

#include <cmath>

namespace hearth::engine {

void rms_norm(const float* x, const float* weight, int32_t n, float eps, float* y) {
  double sum = 0.0;
  for (int32_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float mean = static_cast<float>(sum / n);
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (int32_t i = 0; i < n; ++i) y[i] = (x[i] * scale) * weight[i];
}

void layer_norm(const float* x, const float* weight, const float* bias, int32_t n, float eps,
                float* y) {
  double sum = 0.0;
  for (int32_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]);
  const float mean = static_cast<float>(sum / n);
  double sum2 = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    const float v = x[i] - mean;
    y[i] = v;
    sum2 += static_cast<double>(v * v);
  }
  const float variance = static_cast<float>(sum2 / n);
  const float scale = 1.0f / std::sqrt(variance + eps);
  for (int32_t i = 0; i < n; ++i) y[i] = (y[i] * scale) * weight[i] + bias[i];
}

}  // namespace hearth::engine
