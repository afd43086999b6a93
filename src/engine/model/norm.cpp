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

}  // namespace hearth::engine
