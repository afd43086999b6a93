// AVX2 activation converters: the Q8_0, Q8_K and F16 working rows (kernel_set.h), byte
// for byte what quantize_activation_row() writes, with the reference's IEEE
// operations (quant/quantize.cpp):
// - Q8_0: amax (max is exact in any order; a NaN element is skipped, as std::max
//   skips it), d = amax / 127, id = 1 / d, q = round-half-away(x * id), computed
//   exactly as trunc(p) + sign(p) where |p - trunc(p)| >= 0.5.
// - Q8_K: see quantize_q8_k_row below.
// - F16: F16C's conversion rounds to nearest even, exactly fp32_to_fp16, and the
//   widened copy is exact.
#include "engine/kernels/avx2_parts.h"

#if defined(__x86_64__) || defined(__i386__)

#include <cstring>

#include "engine/quant/blocks.h"
#include "hearth/engine/fp16.h"

// clang-format off
#include "engine/kernels/avx2_target_begin.inc"
// clang-format on

namespace hearth::engine {
namespace {

inline __m256i round_half_away(__m256 p) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 t = _mm256_round_ps(p, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 frac = _mm256_and_ps(_mm256_sub_ps(p, t), abs_mask);
  const __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  const __m256 step = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_andnot_ps(abs_mask, p));  // +-1
  // Where not rounding up this adds +0 (t = -0 becomes +0: the same integer).
  return _mm256_cvttps_epi32(_mm256_add_ps(t, _mm256_and_ps(up, step)));
}

inline float max8(__m256 m) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline int32_t sum8(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

void quantize_q8_0_row(const float* x, int64_t n, uint8_t* out) {
  const int64_t nb = n / kQK32;
  auto* blocks = reinterpret_cast<BlockQ8_0*>(out);
  float* side_scale = reinterpret_cast<float*>(out + q8_0_side_offset(nb));
  int32_t* side_sum = reinterpret_cast<int32_t*>(out + q8_0_sums_offset(nb));
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  // packs interleaves 128-bit lanes; this puts the 8 dwords back in element order.
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t b = 0; b < nb; ++b) {
    __m256 v[4];
    __m256 m = _mm256_setzero_ps();
    for (int k = 0; k < 4; ++k) {
      v[k] = _mm256_loadu_ps(x + 32 * b + 8 * k);
      m = _mm256_max_ps(_mm256_and_ps(v[k], abs_mask), m);  // NaN lanes keep m
    }
    const float amax = max8(m);
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int k = 0; k < 4; ++k) q[k] = round_half_away(_mm256_mul_ps(v[k], vid));
    const __m256i q16a = _mm256_packs_epi32(q[0], q[1]);  // |q| <= 127: no saturation
    const __m256i q16b = _mm256_packs_epi32(q[2], q[3]);
    const __m256i q8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q16a, q16b), order);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(blocks[b].qs), q8);
    const uint16_t dh = fp32_to_fp16(d);
    blocks[b].d = dh;
    side_scale[b] = _cvtsh_ss(dh);
    side_sum[b] =
        sum8(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
  }
  clear_q8_0_working_padding(out, nb);  // as the reference
}

// Q8_K (plain blocks): as quantize_q8_k_row of the AVX-512 table, 32 elements a step.
void quantize_q8_k_row(const float* x, int64_t n, uint8_t* out) {
  const int64_t nb = n / kQKK;
  auto* blocks = reinterpret_cast<BlockQ8_K*>(out);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 magic = _mm256_set1_ps(12582912.f);
  const __m256i mant = _mm256_set1_epi32(0x007fffff), bias = _mm256_set1_epi32(0x00400000);
  const __m256i top = _mm256_set1_epi32(127);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t b = 0; b < nb; ++b, x += kQKK) {
    BlockQ8_K& y = blocks[b];
    __m256 m = _mm256_setzero_ps();
    for (int c = 0; c < kQKK / 8; ++c)
      m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + 8 * c), abs_mask), m);
    const float amax = max8(m);
    if (amax == 0.0f) {
      std::memset(&y, 0, sizeof(BlockQ8_K));
      continue;
    }
    float max = 0.0f;
    const __m256 vamax = _mm256_set1_ps(amax);
    for (int c = 0; c < kQKK / 8; ++c) {
      const int at = _mm256_movemask_ps(
          _mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(x + 8 * c), abs_mask), vamax, _CMP_EQ_OQ));
      if (at != 0) {
        max = x[8 * c + __builtin_ctz(static_cast<unsigned>(at))];
        break;
      }
    }
    const float iscale = -127.f / max;
    const __m256 vis = _mm256_set1_ps(iscale);
    for (int c = 0; c < kQKK / 32; ++c) {
      __m256i q[4];
      for (int k = 0; k < 4; ++k) {
        const __m256 p = _mm256_mul_ps(vis, _mm256_loadu_ps(x + 32 * c + 8 * k));
        const __m256i bits = _mm256_castps_si256(_mm256_add_ps(p, magic));
        q[k] = _mm256_min_epi32(_mm256_sub_epi32(_mm256_and_si256(bits, mant), bias), top);
      }
      // |q| <= 127 (|iscale * x| <= 127 by the choice of max): packs never saturate.
      const __m256i q16a = _mm256_packs_epi32(q[0], q[1]);
      const __m256i q16b = _mm256_packs_epi32(q[2], q[3]);
      const __m256i q8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q16a, q16b), order);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y.qs + 32 * c), q8);
      y.bsums[2 * c] = static_cast<int16_t>(sum8(_mm256_add_epi32(q[0], q[1])));
      y.bsums[2 * c + 1] = static_cast<int16_t>(sum8(_mm256_add_epi32(q[2], q[3])));
    }
    y.d = 1 / iscale;
  }
}

void quantize_f16_row(const float* x, int64_t n, uint8_t* out) {
  auto* h = reinterpret_cast<uint16_t*>(out);
  float* wide = reinterpret_cast<float*>(out + f16_side_offset(n));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i v = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + i), v);
    _mm256_storeu_ps(wide + i, _mm256_cvtph_ps(v));
  }
  for (; i < n; ++i) {
    h[i] = fp32_to_fp16(x[i]);
    wide[i] = fp16_to_fp32(h[i]);
  }
  clear_f16_working_padding(out, n);
}

}  // namespace
}  // namespace hearth::engine

#include "engine/kernels/x86_target_end.inc"

namespace hearth::engine {

void install_avx2_quantizers(KernelSet* k) {
  k->quantize_q8_0 = quantize_q8_0_row;
  k->quantize_f16 = quantize_f16_row;
  k->quantize_q8_k = quantize_q8_k_row;
}

}  // namespace hearth::engine

#endif  // x86
