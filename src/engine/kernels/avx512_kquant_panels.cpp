// AVX-512 VNNI prefill panels for the k-quants (Q4_K, Q5_K, Q6_K x Q8_K): the
// panel idea of avx512_kernels.cpp (16 weight rows repacked so that one register
// holds the same 4-element group of every row; activations broadcast 4 bytes at a
// time; each row's exact integer sums build up in its own lane) applied to
// super-blocks of 256 elements.
//
// Per super-block and row, the integers are those of the scalar reference, exact:
//   Q4_K/Q5_K: isum = sum_j sc_j * T_j (T_j = sum of u * y over sub-block j of 32,
//              8 vpdpbusd), imin = sum_j m_j * (bsums[2j] + bsums[2j+1]) (vpdpwssd
//              on int16 pairs);
//   Q6_K:      isum = sum_g sc_g * T_g - 32 * sum_g sc_g * bsums[g] (sub-blocks of 16;
//              weights stored unsigned 0..63, the bias of 32 taken off through the
//              block sums).
// then the reference's float operations lane-wise: d = x.d * f16(w.d), acc = fma(d,
// isum, acc) [, dmin = x.d * f16(w.dmin), acc = fma(-dmin, imin, acc)].
//
// Bounds: vpdpbusd lanes add four u * y <= 63 * 127 products into int32; T_j <=
// 32 * 31 * 127 (Q5_K) and sc_j <= 63, T_g <= 16 * 63 * 127 and |sc_g| <= 128: the
// vpmulld products and their sums stay far below 2^31 (the canonical order's own
// bound). vpdpwssd pairs: m_j <= 63 times |bsums pair| <= 32 * 127; |sc_g| <= 128
// times |bsums[g]| <= 16 * 127.
#include "engine/kernels/avx512_parts.h"

#if defined(__x86_64__)

#include <cstring>
#include <utility>

#include "engine/quant/blocks.h"
#include "engine/quant/scales.h"

// clang-format off
#include "engine/kernels/avx512_target_begin.inc"
// clang-format on

namespace hearth::engine {
namespace {

#include "engine/kernels/avx512_helpers.inc"

// Panel layout per super-block (16 rows, lane i = row i):
//   d[16] f32, dmin[16] f32 (zeros for Q6_K),
//   kScales x int32[16]: the integer scale of each sub-block,
//   kPairs x int32[16]: int16 pairs (m_2i, m_2i+1) (Q4_K/Q5_K) or (sc_2i, sc_2i+1) (Q6_K),
//   64 x [16 rows x 4 bytes]: the unsigned weights of elements 4k..4k+3.
template <int Scales, int Pairs>
struct SuperLayout {
  static constexpr size_t kD = 0;
  static constexpr size_t kDmin = 64;
  static constexpr size_t kScales = 128;
  static constexpr size_t kPairs = kScales + 64 * Scales;
  static constexpr size_t kQuants = kPairs + 64 * Pairs;
  static constexpr size_t kBytes = kQuants + 64 * 64;
};

#include "engine/kernels/x86_kquant_chunks.inc"

template <class F>
using LayoutOf = SuperLayout<F::kScaleCount, F::kPairCount>;

template <class F>
size_t kpanel_bytes(int64_t n) {
  return static_cast<size_t>(n / kQKK) * LayoutOf<F>::kBytes;
}

template <class F>
void kpanel_pack(const void* vw, size_t row_stride, int n_rows, int64_t n, uint8_t* panel) {
  using W = typename F::W;
  using L = LayoutOf<F>;
  constexpr int kScales = (L::kPairs - L::kScales) / 64;
  constexpr int kPairs = (L::kQuants - L::kPairs) / 64;
  const int64_t nb = n / kQKK;
  const size_t src_bytes = static_cast<size_t>(n_rows) * row_stride;
  prefetch_rows(vw, src_bytes);
  const W* rows[16];  // in transpose input order
  const W* by_row[16];
  for (int i = 0; i < 16; ++i) {
    const int r = kPanelRowFor[i];
    rows[i] = r < n_rows ? reinterpret_cast<const W*>(static_cast<const uint8_t*>(vw) +
                                                      static_cast<size_t>(r) * row_stride)
                         : nullptr;
    by_row[i] = i < n_rows ? reinterpret_cast<const W*>(static_cast<const uint8_t*>(vw) +
                                                        static_cast<size_t>(i) * row_stride)
                           : nullptr;
  }
  for (int64_t b = 0; b < nb; ++b) {
    prefetch_next_rows(vw, src_bytes, b, nb);
    uint8_t* out = panel + static_cast<size_t>(b) * L::kBytes;
    float* d = reinterpret_cast<float*>(out + L::kD);
    float* dmin = reinterpret_cast<float*>(out + L::kDmin);
    int32_t* scales = reinterpret_cast<int32_t*>(out + L::kScales);
    int32_t* pairs = reinterpret_cast<int32_t*>(out + L::kPairs);
    for (int r = 0; r < 16; ++r) {
      int32_t sc[16] = {}, pr[8] = {};
      if (by_row[r] != nullptr) {
        d[r] = F::d(by_row[r][b]);
        dmin[r] = F::dmin(by_row[r][b]);
        F::ints(by_row[r][b], sc, pr);
      } else {
        d[r] = 0.0f;
        dmin[r] = 0.0f;
      }
      for (int j = 0; j < kScales; ++j) scales[16 * j + r] = sc[j];
      for (int i = 0; i < kPairs; ++i) pairs[16 * i + r] = pr[i];
    }
    uint8_t* q = out + L::kQuants;
    for (int c = 0; c < 8; ++c) {
      __m512i z[8];
      for (int j = 0; j < 8; ++j) {
        const __m256i lo = rows[2 * j] ? F::chunk(rows[2 * j][b], c) : _mm256_setzero_si256();
        const __m256i hi =
            rows[2 * j + 1] ? F::chunk(rows[2 * j + 1][b], c) : _mm256_setzero_si256();
        z[j] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
      }
      store_panel_dwords(z, q + 64 * (8 * c));  // groups 8c .. 8c + 7
    }
  }
}

// Exact sum over `groups` consecutive 4-element groups starting at group k0, per row,
// for NT tokens (y[t] = that token's activation bytes of the super-block): two
// dependent vpdpbusd chains per token, added at the end.
template <int NT>
inline void group_dots(const uint8_t* q, const int8_t* const* y, int k0, int groups, __m512i* out) {
  __m512i even[NT], odd[NT];
  for (int t = 0; t < NT; ++t) {
    even[t] = _mm512_setzero_si512();
    odd[t] = _mm512_setzero_si512();
  }
  for (int k = k0; k < k0 + groups; k += 2) {
    const __m512i w0 = _mm512_loadu_si512(q + 64 * k);
    const __m512i w1 = _mm512_loadu_si512(q + 64 * (k + 1));
    for (int t = 0; t < NT; ++t) {
      even[t] = _mm512_dpbusd_epi32(even[t], w0, bcast4(y[t] + 4 * k));
      odd[t] = _mm512_dpbusd_epi32(odd[t], w1, bcast4(y[t] + 4 * k + 4));
    }
  }
  for (int t = 0; t < NT; ++t) out[t] = _mm512_add_epi32(even[t], odd[t]);
}

template <class F, int NT>
void kpanel_gemm_nt(const uint8_t* panel, int n_rows, int64_t nb, const uint8_t* x, size_t x_stride,
                    float* y, size_t y_stride) {
  using L = LayoutOf<F>;
  constexpr int kScales = (L::kPairs - L::kScales) / 64;  // 8 (per 32) or 16 (per 16)
  constexpr int kPairs = (L::kQuants - L::kPairs) / 64;
  constexpr int kGroupsPerScale = 64 / kScales;
  constexpr bool kQ6 = kScales == 16;
  const BlockQ8_K* xb[NT];
  for (int t = 0; t < NT; ++t)
    xb[t] = reinterpret_cast<const BlockQ8_K*>(x + static_cast<size_t>(t) * x_stride);
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* pb = panel + static_cast<size_t>(b) * L::kBytes;
    const int8_t* ys[NT];
    for (int t = 0; t < NT; ++t) ys[t] = xb[t][b].qs;
    __m512i isum[NT], iside[NT];
    for (int t = 0; t < NT; ++t) {
      isum[t] = _mm512_setzero_si512();
      iside[t] = _mm512_setzero_si512();
    }
    for (int j = 0; j < kScales; ++j) {
      __m512i dots[NT];
      group_dots<NT>(pb + L::kQuants, ys, kGroupsPerScale * j, kGroupsPerScale, dots);
      const __m512i sc = _mm512_loadu_si512(pb + L::kScales + 64 * j);
      for (int t = 0; t < NT; ++t)
        isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(dots[t], sc));
    }
    // Side term: Q4_K/Q5_K mins against the 32-element block sums, Q6_K scales
    // against the 16-element block sums (its bias of 32).
    for (int t = 0; t < NT; ++t) {
      int16_t sums[16];
      if constexpr (kQ6) {
        std::memcpy(sums, xb[t][b].bsums, sizeof(sums));
      } else {
        for (int j = 0; j < 8; ++j)
          sums[j] = static_cast<int16_t>(xb[t][b].bsums[2 * j] + xb[t][b].bsums[2 * j + 1]);
      }
      for (int i = 0; i < kPairs; ++i) {
        iside[t] = _mm512_dpwssd_epi32(iside[t], _mm512_loadu_si512(pb + L::kPairs + 64 * i),
                                       bcast4(sums + 2 * i));
      }
    }
    const __m512 wd = _mm512_loadu_ps(pb + L::kD);
    for (int t = 0; t < NT; ++t) {
      const __m512 xd = _mm512_set1_ps(xb[t][b].d);
      const __m512 d = _mm512_mul_ps(xd, wd);
      if constexpr (kQ6) {
        const __m512i total = _mm512_sub_epi32(isum[t], _mm512_slli_epi32(iside[t], 5));
        acc[t] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(total), acc[t]);
      } else {
        const __m512 dmin = _mm512_mul_ps(xd, _mm512_loadu_ps(pb + L::kDmin));
        acc[t] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(isum[t]), acc[t]);
        acc[t] = _mm512_fnmadd_ps(dmin, _mm512_cvtepi32_ps(iside[t]), acc[t]);
      }
    }
  }
  const __mmask16 keep = static_cast<__mmask16>((1u << n_rows) - 1);
  for (int t = 0; t < NT; ++t)
    _mm512_mask_storeu_ps(y + static_cast<size_t>(t) * y_stride, keep, acc[t]);
}

template <class F>
void kpanel_gemm(const uint8_t* panel, int n_rows, int64_t n, const uint8_t* x, size_t x_stride,
                 int nt, float* y, size_t y_stride) {
  const int64_t nb = n / kQKK;
  over_token_groups<4>(nt, [&]<int NT>(int t) {
    kpanel_gemm_nt<F, NT>(panel, n_rows, nb, x + t * x_stride, x_stride, y + t * y_stride,
                          y_stride);
  });
}

}  // namespace
}  // namespace hearth::engine

#include "engine/kernels/x86_target_end.inc"

namespace hearth::engine {

void install_avx512_kquant_panels(KernelSet* k) {
  using T = gguf::TensorType;
  k->panel[static_cast<int>(T::kQ4_K)] =
      PanelKernels{kpanel_bytes<PQ4K>, kpanel_pack<PQ4K>, kpanel_gemm<PQ4K>};
  k->panel[static_cast<int>(T::kQ5_K)] =
      PanelKernels{kpanel_bytes<PQ5K>, kpanel_pack<PQ5K>, kpanel_gemm<PQ5K>};
  // Q6_K's pack (six-bit quants from two arrays) costs more than the others': below 16
  // tokens the tile path is faster (32000x2048, one thread, 3 alternations: 8 tokens
  // 0.63-0.83x, 12 tokens 0.80-0.90x; bench/matmul_bench.cpp, docs/benchmarks.md).
  k->panel[static_cast<int>(T::kQ6_K)] =
      PanelKernels{kpanel_bytes<PQ6K>, kpanel_pack<PQ6K>, kpanel_gemm<PQ6K>, 16};
}

}  // namespace hearth::engine

#endif  // x86-64
