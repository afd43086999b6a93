#include "engine/model/rope.h"

#include <cmath>

namespace hearth::engine {

void rope_angles(int32_t pos, int32_t n_rot, float base, float freq_scale,
                 const float* freq_factors, float* cs) {
  const float theta_scale = std::pow(base, -2.0f / static_cast<float>(n_rot));
  float theta = static_cast<float>(pos);
  for (int32_t i0 = 0; i0 < n_rot; i0 += 2) {
    const float base_theta = freq_factors ? theta / freq_factors[i0 / 2] : theta;
    const float t = freq_scale * base_theta;
    cs[i0] = std::cos(t);
    cs[i0 + 1] = std::sin(t);
    theta *= theta_scale;
  }
}

void rope_apply(float* x, int32_t n_heads, int32_t head_dim, int32_t n_rot, const float* cs,
                bool neox) {
  const int32_t half = n_rot / 2;
  for (int32_t h = 0; h < n_heads; ++h) {
    float* v = x + static_cast<int64_t>(h) * head_dim;
    for (int32_t i0 = 0; i0 < n_rot; i0 += 2) {
      const float c = cs[i0], s = cs[i0 + 1];
      float* a = neox ? v + i0 / 2 : v + i0;
      float* b = neox ? v + i0 / 2 + half : v + i0 + 1;
      const float x0 = *a, x1 = *b;
      // Explicit FMAs: every build gives the bits that the -march=native builds got
      // from GCC's contraction (a portable build has no FMA to contract into); its
      // scalar and fmaddsub loops both fused the x0 products.
      *a = std::fma(x0, c, -(x1 * s));
      *b = std::fma(x0, s, x1 * c);
    }
  }
}

}  // namespace hearth::engine
