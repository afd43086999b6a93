// RMSNorm as ggml computes it: sum of squares accumulated in double in index order,
// scale = 1/sqrt(mean + eps) in float, then y = (x * scale) * weight.
#pragma once

#include <cstdint>

namespace hearth::engine {

void rms_norm(const float* x, const float* weight, int32_t n, float eps, float* y);

// LayerNorm as ggml_norm then ggml_mul, ggml_add: mean and variance accumulated in
// double in index order, y = ((x - mean) * scale) * weight + bias with
// scale = 1/sqrt(variance + eps) in float (each step rounded to float; y may be x).
void layer_norm(const float* x, const float* weight, const float* bias, int32_t n, float eps,
                float* y);

}  // namespace hearth::engine
