// ARM NEON kernels (AArch64): Q4_0 and Q8_0 weights against Q8_0 activations;
// every other type uses the scalar reference entries. Same canonical order as
// scalar_kernels.cpp: exact integer block sums, then the Phase4 float sequence.
#include "engine/kernels/kernel_set.h"

#if defined(__ARM_NEON) && defined(__aarch64__)

#include <arm_neon.h>

#include "engine/kernels/canonical.h"
#include "engine/quant/blocks.h"
#include "hearth/engine/fp16.h"

namespace hearth::engine {
namespace {

// Exact sum of 32 int8 products; each int16 lane holds two products
// (|w| <= 128, |y| <= 127: at most 32512).
inline int32_t isum32(int8x16_t w0, int8x16_t w1, const int8_t* y) {
  const int8x16_t y0 = vld1q_s8(y);
  const int8x16_t y1 = vld1q_s8(y + 16);
  int16x8_t p0 = vmull_s8(vget_low_s8(w0), vget_low_s8(y0));
  p0 = vmlal_high_s8(p0, w0, y0);
  int16x8_t p1 = vmull_s8(vget_low_s8(w1), vget_low_s8(y1));
  p1 = vmlal_high_s8(p1, w1, y1);
  return vaddvq_s32(vaddq_s32(vpaddlq_s16(p0), vpaddlq_s16(p1)));
}

float dot_q8_0(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const BlockQ8_0*>(vw);
  const auto* x = static_cast<const BlockQ8_0*>(vx);
  canon::Phase4 acc;
  for (int64_t b = 0; b < n / kQK32; ++b) {
    const int32_t s = isum32(vld1q_s8(w[b].qs), vld1q_s8(w[b].qs + 16), x[b].qs);
    acc.add(b, fp16_to_fp32(w[b].d) * fp16_to_fp32(x[b].d), s);
  }
  return acc.sum();
}

float dot_q4_0(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const BlockQ4_0*>(vw);
  const auto* x = static_cast<const BlockQ8_0*>(vx);
  const uint8x16_t m4 = vdupq_n_u8(0x0F);
  const int8x16_t eight = vdupq_n_s8(8);
  canon::Phase4 acc;
  for (int64_t b = 0; b < n / kQK32; ++b) {
    const uint8x16_t raw = vld1q_u8(w[b].qs);
    const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(raw, m4)), eight);
    const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(raw, 4)), eight);
    acc.add(b, fp16_to_fp32(w[b].d) * fp16_to_fp32(x[b].d), isum32(lo, hi, x[b].qs));
  }
  return acc.sum();
}

KernelSet make_neon() {
  KernelSet k = scalar_kernels();
  k.isa = "neon";
  k.dot[static_cast<int>(gguf::TensorType::kQ8_0)] = dot_q8_0;
  k.dot[static_cast<int>(gguf::TensorType::kQ4_0)] = dot_q4_0;
  return k;
}

}  // namespace

const KernelSet* neon_kernels() {
  static const KernelSet k = make_neon();
  return &k;
}

}  // namespace hearth::engine

#endif  // __ARM_NEON && __aarch64__
