// AVX2 small-batch prefill for Q4_0 straight from the weight arena's interleaved
// groups (engine/row_group_layout.h): 16 rows against a few tokens. The decode
// kernel's arithmetic (avx2_row_group.cpp: rows 0..7 and 8..15 in two registers, the
// activation's 4 bytes broadcast, maddubs into int16, one madd to int32) with each
// quant word loaded and split into nibbles once for a pair of tokens, instead of the
// prefill panels' regroup-and-pack of every weight per matmul (the reason:
// avx512_group_gemm.cpp).
//
// Same canonical order as the dot (bit for bit): the exact block sum, acc[b % 4] =
// fma(dw * dx, float(isum - 8 * sum(x)), acc[b % 4]) in block order, the result
// (acc0 + acc1) + (acc2 + acc3), lane-wise, one lane per row. Integer range as in the
// decode kernel: 8 maddubs pairs of at most 2 * 15 * 127 add up in int16.
#include "engine/kernels/avx2_parts.h"

#if defined(__x86_64__) || defined(__i386__)

#include <cstddef>
#include <cstring>

#include "engine/quant/blocks.h"

// clang-format off
#include "engine/kernels/avx2_target_begin.inc"
// clang-format on

namespace hearth::engine {
namespace {

constexpr size_t kGroupBlockBytes = kInterleavedRows * sizeof(BlockQ4_0);

inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Rows 0..7 (lo) and 8..15 (hi) of block b for NT tokens into their phase's
// accumulators.
template <int NT>
__attribute__((always_inline)) inline void q4_0_group_block(
    const uint8_t* g, int64_t b, const BlockQ8_0* const* xb, const float* const* xd,
    const int32_t* const* xsum, __m256 (&lo_acc)[NT], __m256 (&hi_acc)[NT]) {
  const uint8_t* p = g + static_cast<size_t>(b) * kGroupBlockBytes;
  const __m256i nib = _mm256_set1_epi8(0x0F);
  __m256i sum_lo[NT], sum_hi[NT];
  for (int t = 0; t < NT; ++t) sum_lo[t] = sum_hi[t] = _mm256_setzero_si256();
  for (int m = 0; m < 4; ++m) {
    const __m256i v_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 + 64 * m));
    const __m256i v_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 + 64 * m));
    // Byte j of dword m holds element 4m + j (low nibble) and 16 + 4m + j (high).
    const __m256i lo_a = _mm256_and_si256(v_lo, nib);
    const __m256i lo_b = _mm256_and_si256(_mm256_srli_epi16(v_lo, 4), nib);
    const __m256i hi_a = _mm256_and_si256(v_hi, nib);
    const __m256i hi_b = _mm256_and_si256(_mm256_srli_epi16(v_hi, 4), nib);
    for (int t = 0; t < NT; ++t) {
      const int8_t* xq = xb[t][b].qs;
      const __m256i x_a = _mm256_set1_epi32(load_i32(xq + 4 * m));
      const __m256i x_b = _mm256_set1_epi32(load_i32(xq + 16 + 4 * m));
      sum_lo[t] = _mm256_add_epi16(sum_lo[t], _mm256_maddubs_epi16(lo_a, x_a));
      sum_lo[t] = _mm256_add_epi16(sum_lo[t], _mm256_maddubs_epi16(lo_b, x_b));
      sum_hi[t] = _mm256_add_epi16(sum_hi[t], _mm256_maddubs_epi16(hi_a, x_a));
      sum_hi[t] = _mm256_add_epi16(sum_hi[t], _mm256_maddubs_epi16(hi_b, x_b));
    }
  }
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256 d_lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m256 d_hi = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)));
  for (int t = 0; t < NT; ++t) {
    const __m256i bias = _mm256_set1_epi32(xsum[t][b] * 8);
    const __m256 dx = _mm256_broadcast_ss(xd[t] + b);
    const __m256i i_lo = _mm256_sub_epi32(_mm256_madd_epi16(sum_lo[t], ones), bias);
    const __m256i i_hi = _mm256_sub_epi32(_mm256_madd_epi16(sum_hi[t], ones), bias);
    lo_acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d_lo, dx), _mm256_cvtepi32_ps(i_lo), lo_acc[t]);
    hi_acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d_hi, dx), _mm256_cvtepi32_ps(i_hi), hi_acc[t]);
  }
}

template <int NT>
void q4_0_group_gemm_nt(const uint8_t* g, int64_t nb, const uint8_t* x, size_t x_stride, float* y,
                        size_t y_stride) {
  const BlockQ8_0* xb[NT];
  const float* xd[NT];
  const int32_t* xsum[NT];
  for (int t = 0; t < NT; ++t) {
    const uint8_t* row = x + static_cast<size_t>(t) * x_stride;
    xb[t] = reinterpret_cast<const BlockQ8_0*>(row);
    xd[t] = reinterpret_cast<const float*>(row + q8_0_side_offset(nb));
    xsum[t] = reinterpret_cast<const int32_t*>(row + q8_0_side_offset(nb) + 4 * nb);
  }
  __m256 lo[4][NT], hi[4][NT];  // by phase b % 4, then token
  for (int k = 0; k < 4; ++k)
    for (int t = 0; t < NT; ++t) lo[k][t] = hi[k][t] = _mm256_setzero_ps();
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    for (int k = 0; k < 4; ++k) q4_0_group_block<NT>(g, b + k, xb, xd, xsum, lo[k], hi[k]);
  }
  for (; b < nb; ++b) q4_0_group_block<NT>(g, b, xb, xd, xsum, lo[b & 3], hi[b & 3]);
  for (int t = 0; t < NT; ++t) {
    float* out = y + static_cast<size_t>(t) * y_stride;
    _mm256_storeu_ps(
        out, _mm256_add_ps(_mm256_add_ps(lo[0][t], lo[1][t]), _mm256_add_ps(lo[2][t], lo[3][t])));
    _mm256_storeu_ps(out + 8, _mm256_add_ps(_mm256_add_ps(hi[0][t], hi[1][t]),
                                            _mm256_add_ps(hi[2][t], hi[3][t])));
  }
}

void q4_0_group_gemm(const void* group, int64_t n, const uint8_t* x, size_t x_stride, int nt,
                     float* y, size_t y_stride) {
  const auto* g = static_cast<const uint8_t*>(group);
  const int64_t nb = n / kQK32;
  over_token_groups<2>(nt, [&]<int NT>(int t) {
    q4_0_group_gemm_nt<NT>(g, nb, x + static_cast<size_t>(t) * x_stride, x_stride,
                           y + static_cast<size_t>(t) * y_stride, y_stride);
  });
}

}  // namespace
}  // namespace hearth::engine

#include "engine/kernels/x86_target_end.inc"

namespace hearth::engine {

void install_avx2_group_gemm(KernelSet* k) {
  k->group_gemm_interleaved[static_cast<int>(gguf::TensorType::kQ4_0)] = q4_0_group_gemm;
}

}  // namespace hearth::engine

#endif  // x86
