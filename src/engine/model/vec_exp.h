// SIMD twins of canon::exp_f32 (engine/kernels/canonical.h): the same IEEE operations
// in the same order on every lane, so each lane's result is canon::exp_f32's bits.
// Compile-time ISA (like attention.cpp): the including file is built for the
// machine (HEARTH_NATIVE) or portably, and uses whichever of these exist.
#pragma once

#include "engine/kernels/canonical.h"

#if defined(__AVX2__) && defined(__FMA__)
// GCC 12's AVX-512 intrinsics trip -W(maybe-)uninitialized on their own
// _mm512_undefined_*() operands (a known false positive), reported where they are
// inlined: off for the files that include this one (which are the SIMD ones).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#define HEARTH_VEC_EXP_AVX2 1
#endif
#if HEARTH_VEC_EXP_AVX2 && defined(__AVX512F__)
#define HEARTH_VEC_EXP_AVX512 1
#endif

namespace hearth::engine {

#if HEARTH_VEC_EXP_AVX2
inline __m256 exp_canon8(__m256 x) {
  namespace c = canon;
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(c::kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-c::kLn2Hi), x);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(-c::kLn2Lo), r);
  __m256 p = _mm256_set1_ps(c::kExpPoly[7]);
  for (int k = 6; k >= 0; --k) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c::kExpPoly[k]));
  // Out-of-range lanes compute garbage here and are replaced below.
  const __m256i bits =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
  y = _mm256_blendv_ps(y, _mm256_setzero_ps(),
                       _mm256_cmp_ps(x, _mm256_set1_ps(c::kExpMin), _CMP_LT_OQ));
  y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY),
                       _mm256_cmp_ps(x, _mm256_set1_ps(c::kExpMax), _CMP_GT_OQ));
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}
#endif

#if HEARTH_VEC_EXP_AVX512
inline __m512 exp_canon16(__m512 x) {
  namespace c = canon;
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(c::kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-c::kLn2Hi), x);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(-c::kLn2Lo), r);
  __m512 p = _mm512_set1_ps(c::kExpPoly[7]);
  for (int k = 6; k >= 0; --k) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c::kExpPoly[k]));
  const __m512i bits =
      _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  __m512 y = _mm512_mul_ps(p, _mm512_castsi512_ps(bits));
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(c::kExpMin), _CMP_LT_OQ),
                         _mm512_setzero_ps());
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(c::kExpMax), _CMP_GT_OQ),
                         _mm512_set1_ps(INFINITY));
  return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}
#endif

}  // namespace hearth::engine
