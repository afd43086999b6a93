// Scalar building blocks of the canonical accumulation order, shared by the
// reference kernels and the scalar tails of SIMD kernels (header-only so every
// translation unit performs exactly the same operations).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace hearth::engine::canon {

// 32-block formats: block b is folded into accumulator b % 4 with one FMA of
// (weight scale * activation scale) and the exact integer block sum.
struct Phase4 {
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  void add(int64_t b, float scale, int32_t isum) {
    acc[b & 3] = std::fma(scale, static_cast<float>(isum), acc[b & 3]);
  }
  // Q4_1 / Q5_1: then the min term m_w * s_x into the same accumulator.
  void add_min(int64_t b, float m, float s) { acc[b & 3] = std::fma(m, s, acc[b & 3]); }
  float sum() const { return (acc[0] + acc[1]) + (acc[2] + acc[3]); }
};

// Float formats: element i goes to lane i % 32 (4 x 8 lanes); the lanes are then
// reduced as an AVX2 kernel would: lane-wise (v0+v1)+(v2+v3), then
// 8 -> 4 (l + l+4), 4 -> 2 (l + l+2), 2 -> 1. Elements past the last full 32 are
// added with one FMA each, in order, after the reduction.
struct Lanes32 {
  float v[32] = {};
  float reduce() const {
    float s[8];
    for (int l = 0; l < 8; ++l) s[l] = (v[l] + v[8 + l]) + (v[16 + l] + v[24 + l]);
    float t[4];
    for (int l = 0; l < 4; ++l) t[l] = s[l] + s[l + 4];
    const float u0 = t[0] + t[2];
    const float u1 = t[1] + t[3];
    return u0 + u1;
  }
};

// exp(x) as the engine computes it everywhere (softmax, SiLU). The SIMD twins in
// engine/kernels/x86_model_kernels.inc perform the same IEEE operations in the same order, so
// every ISA gets these bits:
//   n = nearest-even(x * log2 e); r = x - n ln2 by two FMAs (ln2 split into a high
//   part with 16 significant bits and the remainder); e^r by the degree-7 Taylor
//   polynomial in Horner form, one FMA per degree (|r| <= 0.347: truncation below
//   6e-9 relative); times 2^n built from its exponent bits.
// x < -87 gives 0 (2^n would leave the normal range), x > 88 gives +inf, NaN stays
// NaN. Within one ulp of the true exp over the finite range (tests/engine/vec_exp_test).
inline constexpr float kExpMin = -87.0f;
inline constexpr float kExpMax = 88.0f;
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693145751953125f;
inline constexpr float kLn2Lo = 1.42860682030941723212e-6f;
inline constexpr float kExpPoly[8] = {1.0f,      1.0f,       1.0f / 2,   1.0f / 6,
                                      1.0f / 24, 1.0f / 120, 1.0f / 720, 1.0f / 5040};

inline float exp_f32(float x) {
  if (x != x) return x;
  if (x < kExpMin) return 0.0f;
  if (x > kExpMax) return INFINITY;
  const float n = std::nearbyint(x * kLog2e);
  float r = std::fma(n, -kLn2Hi, x);
  r = std::fma(n, -kLn2Lo, r);
  float p = kExpPoly[7];
  for (int k = 6; k >= 0; --k) p = std::fma(p, r, kExpPoly[k]);
  const int32_t bits = (static_cast<int32_t>(n) + 127) * (1 << 23);
  float two_n;
  std::memcpy(&two_n, &bits, sizeof two_n);
  return p * two_n;
}

// SiLU(g) * u: g / (1 + exp(-g)) * u, in that order of operations.
inline float silu_mul(float g, float u) {
  return g / (1.0f + exp_f32(-g)) * u;
}

// The softmax denominator: value p goes to double lane p % 16; the lanes are
// reduced l + l+8, then + l+4, + l+2, + l+1.
struct SumLanes16 {
  double v[16] = {};
  double reduce() const {
    double s[8];
    for (int l = 0; l < 8; ++l) s[l] = v[l] + v[l + 8];
    for (int l = 0; l < 4; ++l) s[l] = s[l] + s[l + 4];
    for (int l = 0; l < 2; ++l) s[l] = s[l] + s[l + 2];
    return s[0] + s[1];
  }
};

// Attention logit soft-capping (gemma2), as ggml: s -> tanhf(s * (1/c)) * c, in place
// over n scores. Scalar libm tanhf in every table (no SIMD twin), so the bits agree.
inline void softcap(float* s, int32_t n, float c) {
  const float inv = 1.0f / c;
  for (int32_t i = 0; i < n; ++i) s[i] = std::tanh(s[i] * inv) * c;
}

// The first position a query at `pos` attends to: pos - window + 1 under a sliding
// window of `window` positions (0: no window, every position from 0).
inline int32_t window_start(int32_t pos, int32_t window) {
  return window > 0 && pos >= window ? pos - window + 1 : 0;
}

}  // namespace hearth::engine::canon
