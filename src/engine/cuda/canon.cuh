// Device twins of the canonical scalar operations (engine/kernels/canonical.h) that the
// GPU reproduces bit for bit: the engine's exp and SiLU. canonical.h is their home; the
// constants and the order of operations here must stay those (every rounding explicit
// with the __*_rn intrinsics, so nvcc contracts nothing).
#pragma once

#include <cstdint>

namespace hearth::engine::cuda {

// canon::exp_f32: n = nearest-even(x * log2 e); r = x - n ln2 by two FMAs; e^r by the
// degree-7 Taylor polynomial in Horner form; times 2^n from its exponent bits.
__device__ __forceinline__ float canon_exp(float x) {
  if (x != x) return x;
  if (x < -87.0f) return 0.0f;
  if (x > 88.0f) return __int_as_float(0x7f800000);  // +inf
  const float n = rintf(__fmul_rn(x, 1.44269504088896341f));
  float r = __fmaf_rn(n, -0.693145751953125f, x);
  r = __fmaf_rn(n, -1.42860682030941723212e-6f, r);
  float p = 1.0f / 5040;
  p = __fmaf_rn(p, r, 1.0f / 720);
  p = __fmaf_rn(p, r, 1.0f / 120);
  p = __fmaf_rn(p, r, 1.0f / 24);
  p = __fmaf_rn(p, r, 1.0f / 6);
  p = __fmaf_rn(p, r, 1.0f / 2);
  p = __fmaf_rn(p, r, 1.0f);
  p = __fmaf_rn(p, r, 1.0f);
  const int32_t bits = (static_cast<int32_t>(n) + 127) * (1 << 23);
  return __fmul_rn(p, __int_as_float(bits));
}

// canon::silu_mul: g / (1 + exp(-g)) * u, in that order.
__device__ __forceinline__ float canon_silu_mul(float g, float u) {
  return __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, canon_exp(-g))), u);
}

}  // namespace hearth::engine::cuda
