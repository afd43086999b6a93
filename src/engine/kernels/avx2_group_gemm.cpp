// AVX2 small-batch prefill for Q4_0 (and Q4_K, at the end) straight from the weight arena's
// interleaved groups (engine/row_group_layout.h): 16 rows against a few tokens. The decode kernel's
// arithmetic (avx2_row_group.cpp: rows 0..7 and 8..15 in two registers, the activation's 4 bytes
// broadcast, maddubs into int16, one madd to int32) with each quant word loaded and split into
// nibbles once for a pair of tokens, instead of the prefill panels' regroup-and-pack of every
// weight per matmul (the reason: avx512_group_gemm.cpp).
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
    xsum[t] = reinterpret_cast<const int32_t*>(row + q8_0_sums_offset(nb));
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

// ---- Q4_K (x Q8_K) ------------------------------------------------------------------
//
// The interleaved super-block as in avx512_group_gemm.cpp; the integers as the AVX2
// k-quant panels form them (avx2_kquant_panels.cpp): a sub-block's 8 groups add up in
// int16 (at most 8 * 2 * 15 * 127 = 30,480), pmaddwd by the int16 pair (sc, sc) widens
// and scales them, the mins' side term is pmaddwd of (m_2i, m_2i+1) with the pair of
// block sums; then fma(x.d * d, isum), fnmadd(x.d * dmin, imin) per super-block.
constexpr size_t kK4GroupBlockBytes = kInterleavedRows * sizeof(BlockQ4_K);

// Rows 8h..8h+7 of a super-block at p: (sc, sc) int16 pairs of the 8 sub-block scales
// and (m_2i, m_2i+1) pairs of the mins, one dword lane per row.
inline void q4_k_half_scales(const uint8_t* p, int h, __m256i sc[8], __m256i pairs[4]) {
  __m256i q[12];
  for (int u = 0; u < 12; ++u)
    q[u] = _mm256_cvtepu8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 64 + 16 * u + 8 * h)));
  const __m256i m6 = _mm256_set1_epi32(63), m4 = _mm256_set1_epi32(0xF);
  __m256i mn[8];
  for (int j = 0; j < 8; ++j) {
    __m256i s;
    if (j < 4) {
      s = _mm256_and_si256(q[j], m6);
      mn[j] = _mm256_and_si256(q[j + 4], m6);
    } else {
      s = _mm256_or_si256(_mm256_and_si256(q[j + 4], m4),
                          _mm256_slli_epi32(_mm256_srli_epi32(q[j - 4], 6), 4));
      mn[j] = _mm256_or_si256(_mm256_srli_epi32(q[j + 4], 4),
                              _mm256_slli_epi32(_mm256_srli_epi32(q[j], 6), 4));
    }
    sc[j] = _mm256_or_si256(s, _mm256_slli_epi32(s, 16));
  }
  for (int i = 0; i < 4; ++i)
    pairs[i] = _mm256_or_si256(mn[2 * i], _mm256_slli_epi32(mn[2 * i + 1], 16));
}

template <int NT>
void q4_k_group_gemm_nt(const uint8_t* g, int64_t nb, const uint8_t* x, size_t x_stride, float* y,
                        size_t y_stride) {
  const BlockQ8_K* xb[NT];
  for (int t = 0; t < NT; ++t)
    xb[t] = reinterpret_cast<const BlockQ8_K*>(x + static_cast<size_t>(t) * x_stride);
  const __m256i nib = _mm256_set1_epi8(0x0F);
  __m256 acc[NT][2];
  for (int t = 0; t < NT; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* p = g + static_cast<size_t>(b) * kK4GroupBlockBytes;
    for (int h = 0; h < 2; ++h) {  // rows 8h .. 8h + 7
      __m256i sc[8], pairs[4];
      q4_k_half_scales(p, h, sc, pairs);
      __m256i isum[NT];
      for (int t = 0; t < NT; ++t) isum[t] = _mm256_setzero_si256();
      for (int c = 0; c < 8; ++c) {  // sub-block c: words 8 (c / 2) .. + 7, nibble c % 2
        __m256i s[NT];
        for (int k = 0; k < 8; ++k) {
          const __m256i v = _mm256_loadu_si256(
              reinterpret_cast<const __m256i*>(p + 256 + 64 * (8 * (c / 2) + k) + 32 * h));
          const __m256i w = _mm256_and_si256(c % 2 ? _mm256_srli_epi16(v, 4) : v, nib);
          for (int t = 0; t < NT; ++t) {
            const __m256i yv = _mm256_set1_epi32(load_i32(xb[t][b].qs + 32 * c + 4 * k));
            const __m256i pr = _mm256_maddubs_epi16(w, yv);
            s[t] = k == 0 ? pr : _mm256_add_epi16(s[t], pr);
          }
        }
        for (int t = 0; t < NT; ++t)
          isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s[t], sc[c]));
      }
      const __m256 wd =
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * h)));
      const __m256 wdmin =
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 32 + 16 * h)));
      for (int t = 0; t < NT; ++t) {
        int16_t sums[8];
        for (int j = 0; j < 8; ++j)
          sums[j] = static_cast<int16_t>(xb[t][b].bsums[2 * j] + xb[t][b].bsums[2 * j + 1]);
        __m256i side = _mm256_setzero_si256();
        for (int i = 0; i < 4; ++i) {
          side = _mm256_add_epi32(
              side, _mm256_madd_epi16(pairs[i], _mm256_set1_epi32(load_i32(sums + 2 * i))));
        }
        const __m256 xd = _mm256_set1_ps(xb[t][b].d);
        acc[t][h] = _mm256_fmadd_ps(_mm256_mul_ps(xd, wd), _mm256_cvtepi32_ps(isum[t]), acc[t][h]);
        acc[t][h] = _mm256_fnmadd_ps(_mm256_mul_ps(xd, wdmin), _mm256_cvtepi32_ps(side), acc[t][h]);
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    _mm256_storeu_ps(y + static_cast<size_t>(t) * y_stride, acc[t][0]);
    _mm256_storeu_ps(y + static_cast<size_t>(t) * y_stride + 8, acc[t][1]);
  }
}

// ---- Runs of groups --------------------------------------------------------------

// A run of groups (GroupGemmFn) of blocks of block_size elements, group by group, each
// through single.operator()<NT> in token tiles of up to 2.
template <class Single>
void group_gemm_run(const void* groups, size_t group_bytes, int n_groups, int64_t n,
                    int64_t block_size, const uint8_t* x, size_t x_stride, int nt, float* y,
                    size_t y_stride, Single single) {
  const auto* g = static_cast<const uint8_t*>(groups);
  const int64_t nb = n / block_size;
  for (int gi = 0; gi < n_groups; ++gi, g += group_bytes, y += kInterleavedRows) {
    over_token_groups<2>(nt, [&]<int NT>(int t) {
      single.template operator()<NT>(g, nb, x + static_cast<size_t>(t) * x_stride, x_stride,
                                     y + static_cast<size_t>(t) * y_stride, y_stride);
    });
  }
}

void q4_0_group_gemm(const void* groups, size_t group_bytes, int n_groups, int64_t n,
                     const uint8_t* x, size_t x_stride, int nt, float* y, size_t y_stride) {
  group_gemm_run(groups, group_bytes, n_groups, n, kQK32, x, x_stride, nt, y, y_stride,
                 []<int NT>(auto... a) { q4_0_group_gemm_nt<NT>(a...); });
}

void q4_k_group_gemm(const void* groups, size_t group_bytes, int n_groups, int64_t n,
                     const uint8_t* x, size_t x_stride, int nt, float* y, size_t y_stride) {
  group_gemm_run(groups, group_bytes, n_groups, n, kQKK, x, x_stride, nt, y, y_stride,
                 []<int NT>(auto... a) { q4_k_group_gemm_nt<NT>(a...); });
}

}  // namespace
}  // namespace hearth::engine

#include "engine/kernels/x86_target_end.inc"

namespace hearth::engine {

void install_avx2_group_gemm(KernelSet* k) {
  k->group_gemm_interleaved[static_cast<int>(gguf::TensorType::kQ4_0)] = q4_0_group_gemm;
  k->group_gemm_interleaved[static_cast<int>(gguf::TensorType::kQ4_K)] = q4_k_group_gemm;
}

}  // namespace hearth::engine

#endif  // x86
