// RMSNorm as ggml computes it: sum of squares accumulated in double in index order,
// scale = 1/sqrt(mean + eps) in float, then y = (x * scale) * weight.
#pragma once

#include <cstdint>

namespace hearth::engine {

void rms_norm(const float* x, const float* weight, int32_t n, float eps, float* y);

}  // namespace hearth::engine
