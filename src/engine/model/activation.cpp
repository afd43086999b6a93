#include "engine/model/activation.h"

#include <cstdint>

#include "engine/kernels/canonical.h"
#include "engine/model/vec_exp.h"

namespace hearth::engine {

void silu_mul(float* gate, const float* up, int64_t n) {
  int64_t i = 0;
#if HEARTH_VEC_EXP_AVX512
  const __m512 one = _mm512_set1_ps(1.0f);
  for (; i + 16 <= n; i += 16) {
    const __m512 g = _mm512_loadu_ps(gate + i);
    // -g as a sign flip, exactly the scalar negation (0 - g would turn -0 into +0).
    const __m512 neg =
        _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(g), _mm512_set1_epi32(INT32_MIN)));
    const __m512 e = exp_canon16(neg);
    _mm512_storeu_ps(
        gate + i, _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(one, e)), _mm512_loadu_ps(up + i)));
  }
#elif HEARTH_VEC_EXP_AVX2
  const __m256 one = _mm256_set1_ps(1.0f);
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 e = exp_canon8(_mm256_xor_ps(g, _mm256_set1_ps(-0.0f)));
    _mm256_storeu_ps(
        gate + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + i)));
  }
#endif
  for (; i < n; ++i) gate[i] = canon::silu_mul(gate[i], up[i]);
}

}  // namespace hearth::engine
