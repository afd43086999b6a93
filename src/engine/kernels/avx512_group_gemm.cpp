// AVX-512 VNNI small-batch prefill for Q4_0 straight from the weight arena's
// interleaved groups (engine/row_group_layout.h): 16 rows against a few tokens.
//
// Why: a row of 2-64 tokens (a prefix hit's tail, a speculative verify row) went
// through the prefill panels, which first regrouped each interleaved group into plain
// rows and then packed those rows into a panel: two copies of every weight per matmul,
// which at 16 tokens cost more than the GEMM itself. The interleaved group already is
// the panel's arrangement: quant word m of the 16 rows (64 bytes) holds, per row, the
// low nibbles of elements 4m..4m+3 (the panel's group m) and the high nibbles of
// elements 16+4m..16+4m+3 (group 4 + m). So each block is 4 loads and 8 masks, shared
// by a tile of four tokens, then the panel GEMM's arithmetic.
//
// Same canonical order as the dot (bit for bit): per row and token, the exact integer
// block sum (minus 8 * the activation block's quant sum), acc[b % 4] = fma(dw * dx,
// float(isum), acc[b % 4]) in block order, result (acc0 + acc1) + (acc2 + acc3);
// every step lane-wise, one lane per row.
#include "engine/kernels/avx512_parts.h"

#if defined(__x86_64__)

#include <cstring>
#include <utility>

#include "engine/quant/blocks.h"

// clang-format off
#include "engine/kernels/avx512_target_begin.inc"
// clang-format on

namespace hearth::engine {
namespace {

#include "engine/kernels/avx512_helpers.inc"

constexpr size_t kGroupBlockBytes = kInterleavedRows * sizeof(BlockQ4_0);

// Block b of the group for NT tokens into the accumulators of its phase.
template <int NT>
__attribute__((always_inline)) inline void q4_0_group_block(const uint8_t* g, int64_t b,
                                                            const BlockQ8_0* const* xb,
                                                            const float* const* xscale,
                                                            const int32_t* const* xsum,
                                                            __m512 (&acc)[NT]) {
  const uint8_t* p = g + static_cast<size_t>(b) * kGroupBlockBytes;
  const __m512i nib = _mm512_set1_epi8(0x0F);
  __m512i w[8];  // w[k]: elements 4k..4k+3 of the 16 rows, unsigned (q + 8)
  for (int m = 0; m < 4; ++m) {
    const __m512i v = _mm512_loadu_si512(p + 32 + 64 * m);
    w[m] = _mm512_and_si512(v, nib);
    w[4 + m] = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
  }
  const __m512 dw = _mm512_cvtph_ps(load256(p));
  for (int t = 0; t < NT; ++t) {
    const int8_t* xq = xb[t][b].qs;
    __m512i even = _mm512_set1_epi32(-(xsum[t][b] * 8));
    __m512i odd = _mm512_setzero_si512();
    for (int k = 0; k < 8; k += 2) {
      even = _mm512_dpbusd_epi32(even, w[k], bcast4(xq + 4 * k));
      odd = _mm512_dpbusd_epi32(odd, w[k + 1], bcast4(xq + 4 * k + 4));
    }
    const __m512 dd = _mm512_mul_ps(dw, _mm512_set1_ps(xscale[t][b]));
    acc[t] = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(_mm512_add_epi32(even, odd)), acc[t]);
  }
}

template <int NT>
void q4_0_group_gemm_nt(const uint8_t* g, int64_t nb, const uint8_t* x, size_t x_stride, float* y,
                        size_t y_stride) {
  const BlockQ8_0* xb[NT];
  const float* xscale[NT];
  const int32_t* xsum[NT];
  for (int t = 0; t < NT; ++t) {
    const uint8_t* row = x + static_cast<size_t>(t) * x_stride;
    xb[t] = reinterpret_cast<const BlockQ8_0*>(row);
    xscale[t] = reinterpret_cast<const float*>(row + q8_0_side_offset(nb));
    xsum[t] = reinterpret_cast<const int32_t*>(row + q8_0_side_offset(nb) + 4 * nb);
  }
  __m512 a0[NT], a1[NT], a2[NT], a3[NT];  // phases b % 4 == 0..3
  for (int t = 0; t < NT; ++t) a0[t] = a1[t] = a2[t] = a3[t] = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    q4_0_group_block<NT>(g, b, xb, xscale, xsum, a0);
    q4_0_group_block<NT>(g, b + 1, xb, xscale, xsum, a1);
    q4_0_group_block<NT>(g, b + 2, xb, xscale, xsum, a2);
    q4_0_group_block<NT>(g, b + 3, xb, xscale, xsum, a3);
  }
  if (b < nb) q4_0_group_block<NT>(g, b, xb, xscale, xsum, a0);
  if (b + 1 < nb) q4_0_group_block<NT>(g, b + 1, xb, xscale, xsum, a1);
  if (b + 2 < nb) q4_0_group_block<NT>(g, b + 2, xb, xscale, xsum, a2);
  for (int t = 0; t < NT; ++t) {
    const __m512 r = _mm512_add_ps(_mm512_add_ps(a0[t], a1[t]), _mm512_add_ps(a2[t], a3[t]));
    _mm512_storeu_ps(y + static_cast<size_t>(t) * y_stride, r);
  }
}

void q4_0_group_gemm(const void* group, int64_t n, const uint8_t* x, size_t x_stride, int nt,
                     float* y, size_t y_stride) {
  const auto* g = static_cast<const uint8_t*>(group);
  const int64_t nb = n / kQK32;
  over_token_groups<4>(nt, [&]<int NT>(int t) {
    q4_0_group_gemm_nt<NT>(g, nb, x + static_cast<size_t>(t) * x_stride, x_stride,
                           y + static_cast<size_t>(t) * y_stride, y_stride);
  });
}

}  // namespace
}  // namespace hearth::engine

#include "engine/kernels/x86_target_end.inc"

namespace hearth::engine {

void install_avx512_group_gemm(KernelSet* k) {
  k->group_gemm_interleaved[static_cast<int>(gguf::TensorType::kQ4_0)] = q4_0_group_gemm;
}

}  // namespace hearth::engine

#endif  // x86-64
