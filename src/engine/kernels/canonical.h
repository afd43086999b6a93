// Scalar building blocks of the canonical accumulation order, shared by the
// reference kernels and the scalar tails of SIMD kernels (header-only so every
// translation unit performs exactly the same operations).
#pragma once

#include <cmath>
#include <cstdint>

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

}  // namespace hearth::engine::canon
