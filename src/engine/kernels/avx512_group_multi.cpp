// Several activation rows over one interleaved Q4_0 group of 16 rows
// (engine/row_group_layout.h), AVX-512 VNNI: the multi-stream decode step and short
// prefills, where every weight is needed by a few tokens at once.
//
// Per block the group holds the 16 rows' scales (32 bytes), then quant word m = 0..3
// of rows 0..15 (64 bytes each: one zmm, row r in dword lane r). Each word is loaded
// and split into its low and high nibbles once; every token then adds its
// vpdpbusd products into its own exact int32 block sums (the nibbles are at most 15
// and the activations int8, so nothing saturates and the sums are the exact integer
// dots, however they are formed). The float part is the canonical order of the one-row
// dot, lane-wise and token by token: acc[b % 4] = fma(dw * dx, float(isum - 8 * xsum),
// acc[b % 4]), result (acc0 + acc1) + (acc2 + acc3), exactly the interleaved
// AVX2 kernel's (avx2_row_group.cpp) on each row, so the bits are the one-token path's.
#include "engine/kernels/avx512_parts.h"
#include "engine/kernels/kernel_set.h"

#if defined(__x86_64__)

#include <cstring>

#include "engine/quant/blocks.h"

// clang-format off
#include "engine/kernels/avx512_target_begin.inc"
// clang-format on

namespace hearth::engine {
namespace {

inline int32_t load_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

template <int NT>
void q4_0_group_multi(const uint8_t* g, const uint8_t* x, size_t x_stride, int64_t n, float* out) {
  const int64_t nb = n / kQK32;
  const BlockQ8_0* xb[NT];
  const float* xd[NT];
  const int32_t* xsum[NT];
  for (int t = 0; t < NT; ++t) {
    const uint8_t* row = x + static_cast<size_t>(t) * x_stride;
    xb[t] = reinterpret_cast<const BlockQ8_0*>(row);
    xd[t] = reinterpret_cast<const float*>(row + q8_0_side_offset(nb));
    xsum[t] = reinterpret_cast<const int32_t*>(row + q8_0_side_offset(nb) + 4 * nb);
  }
  const __m512i nib = _mm512_set1_epi8(0x0F);
  __m512 acc[NT][4];
  for (int t = 0; t < NT; ++t)
    for (int k = 0; k < 4; ++k) acc[t][k] = _mm512_setzero_ps();
  constexpr size_t kGroupBlockBytes = kInterleavedRows * sizeof(BlockQ4_0);
  // Block b into phase k = b % 4 (a constant in every call, so the accumulators stay
  // in registers).
  const auto block = [&](int64_t b, int k) __attribute__((always_inline)) {
    const uint8_t* p = g + static_cast<size_t>(b) * kGroupBlockBytes;
    __m512i isum[NT];
    for (int t = 0; t < NT; ++t) isum[t] = _mm512_setzero_si512();
    for (int m = 0; m < 4; ++m) {
      const __m512i v = _mm512_loadu_si512(p + 32 + 64 * m);
      const __m512i lo = _mm512_and_si512(v, nib);
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
      // Byte j of word m holds element 4m + j (low nibble) and 16 + 4m + j (high).
      for (int t = 0; t < NT; ++t) {
        const int8_t* xq = xb[t][b].qs;
        isum[t] = _mm512_dpbusd_epi32(isum[t], lo, _mm512_set1_epi32(load_i32(xq + 4 * m)));
        isum[t] = _mm512_dpbusd_epi32(isum[t], hi, _mm512_set1_epi32(load_i32(xq + 16 + 4 * m)));
      }
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    for (int t = 0; t < NT; ++t) {
      const __m512i exact = _mm512_sub_epi32(isum[t], _mm512_set1_epi32(xsum[t][b] * 8));
      const __m512 dd = _mm512_mul_ps(dw, _mm512_set1_ps(xd[t][b]));
      acc[t][k] = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(exact), acc[t][k]);
    }
  };
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    block(b, 0);
    block(b + 1, 1);
    block(b + 2, 2);
    block(b + 3, 3);
  }
  for (; b < nb; ++b) {
    switch (b & 3) {
      case 0:
        block(b, 0);
        break;
      case 1:
        block(b, 1);
        break;
      default:
        block(b, 2);
        break;
    }
  }
  for (int t = 0; t < NT; ++t) {
    _mm512_storeu_ps(
        out + t * kInterleavedRows,
        _mm512_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]), _mm512_add_ps(acc[t][2], acc[t][3])));
  }
}

void group_multi_q4_0(const void* group, const uint8_t* x, size_t x_stride, int nt, int64_t n,
                      float* out) {
  const auto* g = static_cast<const uint8_t*>(group);
  static_assert(kMaxGroupTokens == 4);
  switch (nt) {
    case 1:
      return q4_0_group_multi<1>(g, x, x_stride, n, out);
    case 2:
      return q4_0_group_multi<2>(g, x, x_stride, n, out);
    case 3:
      return q4_0_group_multi<3>(g, x, x_stride, n, out);
    default:
      return q4_0_group_multi<4>(g, x, x_stride, n, out);
  }
}

}  // namespace
}  // namespace hearth::engine

#include "engine/kernels/x86_target_end.inc"

namespace hearth::engine {

void install_avx512_group_multi(KernelSet* k) {
  k->group_multi_interleaved[static_cast<int>(gguf::TensorType::kQ4_0)] = group_multi_q4_0;
}

}  // namespace hearth::engine

#endif  // x86-64
