// AVX2 prefill panels for the k-quants (Q4_K, Q5_K, Q6_K x Q8_K): 16 weight rows
// repacked so that one ymm register holds the same 4-element group of 8 rows; the
// token's 4 activation bytes are broadcast and maddubs builds each row's pair sums
// in its own lanes (see avx2_panels.cpp for the 32-block formats).
//
// Per super-block and row, the integers are those of the scalar reference, exact:
//   Q4_K/Q5_K: isum = sum_j sc_j * T_j (T_j = sum of u * y over sub-block j of 32),
//              imin = sum_j m_j * (bsums[2j] + bsums[2j+1]);
//   Q6_K:      isum = sum_g sc_g * T_g - 32 * sum_g sc_g * bsums[g] (sub-blocks of 16,
//              weights stored unsigned 0..63, the bias of 32 taken off through the
//              block sums);
// then the reference's float operations lane-wise: d = x.d * f16(w.d), acc = fma(d,
// isum, acc) [, dmin = x.d * f16(w.dmin), acc = fma(-dmin, imin, acc)].
//
// Int16 ranges: a maddubs pair is at most 2 * u * 127 (u <= 15 / 31 / 63), so 8 / 4 /
// 2 groups add up in int16 (<= 30480 / 31496 / 32004) before pmaddwd multiplies the
// sum by the sub-block scale, stored as an int16 pair (sc, sc): sc * (p0 + p1) per
// int32 lane, |sc| <= 128, far below 2^31, as are the sums over a super-block. The
// side terms are pmaddwd of int16 pairs (m or sc) with pairs of block sums.
//
// Each token's accumulator sees the super-blocks in order; the GEMM walks the
// panel in chunks of a few super-blocks (held in L1) and parks the accumulators of
// a block of tokens between chunks (a store and a load of a float change nothing).
#include "engine/kernels/avx2_parts.h"

#if defined(__x86_64__) || defined(__i386__)

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "engine/quant/blocks.h"
#include "engine/quant/scales.h"

// clang-format off
#include "engine/kernels/avx2_target_begin.inc"
// clang-format on

namespace hearth::engine {
namespace {

#include "engine/kernels/x86_dot32.inc"
#include "engine/kernels/x86_kquant_chunks.inc"

// Panel layout per super-block (16 rows; in each 64-byte row group, rows 0..7
// then 8..15, one dword per row):
//   d[16] f32, dmin[16] f32 (zeros for Q6_K),
//   kScaleCount x dword[16]: int16 pair (sc, sc) of each sub-block,
//   kPairCount x dword[16]: int16 pairs (m_2i, m_2i+1) (Q4_K/Q5_K) or (sc_2i, sc_2i+1),
//   64 x dword[16]: the unsigned weights of elements 4k..4k+3.
template <class F>
struct Layout {
  static constexpr size_t kD = 0;
  static constexpr size_t kDmin = 64;
  static constexpr size_t kScales = 128;
  static constexpr size_t kPairs = kScales + 64 * F::kScaleCount;
  static constexpr size_t kQuants = kPairs + 64 * F::kPairCount;
  static constexpr size_t kBytes = kQuants + 64 * 64;
  static constexpr int kGroupsPerScale = 64 / F::kScaleCount;
  // Groups whose pair sums may add up in int16 (see the top).
  static constexpr int kGroupsPerSum = std::is_same_v<F, PQ4K>   ? 8
                                       : std::is_same_v<F, PQ5K> ? 4
                                                                 : 2;
  static constexpr bool kQ6 = F::kScaleCount == 16;
};
// Super-blocks per chunk of the GEMM (about 15-17 KiB of panel, in L1).
constexpr int64_t kChunkBlocks = 3;
// Tokens whose accumulators are parked between chunks.
constexpr int kTokenBlock = 32;

// Row i of the 16 at dword i of a 64-byte group: rows 0..7 then 8..15.
inline void put_dword(uint8_t* group, int row, int32_t v) {
  std::memcpy(group + 4 * row, &v, 4);
}

template <class F>
size_t kpanel_bytes(int64_t n) {
  return static_cast<size_t>(n / kQKK) * Layout<F>::kBytes;
}

template <class F>
void kpanel_pack(const void* vw, size_t row_stride, int n_rows, int64_t n, uint8_t* panel) {
  using W = typename F::W;
  using L = Layout<F>;
  const int64_t nb = n / kQKK;
  const W* rows[16];
  panel_row_pointers(vw, row_stride, n_rows, rows);
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* out = panel + static_cast<size_t>(b) * L::kBytes;
    for (int r = 0; r < 16; ++r) {
      int32_t sc[16] = {}, pr[8] = {};
      float d = 0.0f, dmin = 0.0f;
      if (rows[r] != nullptr) {
        d = F::d(rows[r][b]);
        dmin = F::dmin(rows[r][b]);
        F::ints(rows[r][b], sc, pr);
      }
      std::memcpy(out + L::kD + 4 * r, &d, 4);
      std::memcpy(out + L::kDmin + 4 * r, &dmin, 4);
      for (int j = 0; j < F::kScaleCount; ++j) {
        const uint32_t s16 = static_cast<uint16_t>(sc[j]);
        put_dword(out + L::kScales + 64 * j, r, static_cast<int32_t>(s16 | (s16 << 16)));
      }
      for (int i = 0; i < F::kPairCount; ++i) put_dword(out + L::kPairs + 64 * i, r, pr[i]);
    }
    uint8_t* q = out + L::kQuants;
    for (int c = 0; c < 8; ++c) {  // chunk c = groups 8c .. 8c + 7
      for (int half = 0; half < 2; ++half) {
        __m256i v[8];
        for (int i = 0; i < 8; ++i) {
          const W* row = rows[8 * half + i];
          v[i] = row != nullptr ? F::chunk(row[b], c) : _mm256_setzero_si256();
        }
        transpose8x8(v);
        for (int k = 0; k < 8; ++k) {
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 64 * (8 * c + k) + 32 * half), v[k]);
        }
      }
    }
  }
}

// One super-block (panel bytes pb) for NT tokens with activation blocks xb[t],
// continuing acc[t] (rows 0..7, 8..15).
template <class F, int NT>
__attribute__((always_inline)) inline void super_block(const uint8_t* pb,
                                                       const BlockQ8_K* const* xb,
                                                       __m256 (&acc)[NT][2]) {
  using L = Layout<F>;
  const __m256i* q = reinterpret_cast<const __m256i*>(pb + L::kQuants);
  const __m256i* scales = reinterpret_cast<const __m256i*>(pb + L::kScales);
  __m256i isum[NT][2];
  for (int t = 0; t < NT; ++t) isum[t][0] = isum[t][1] = _mm256_setzero_si256();
  for (int j = 0; j < F::kScaleCount; ++j) {
    for (int g0 = j * L::kGroupsPerScale; g0 < (j + 1) * L::kGroupsPerScale;
         g0 += L::kGroupsPerSum) {
      __m256i s[NT][2];
      for (int k = g0; k < g0 + L::kGroupsPerSum; ++k) {
        const __m256i w0 = _mm256_loadu_si256(q + 2 * k);
        const __m256i w1 = _mm256_loadu_si256(q + 2 * k + 1);
        for (int t = 0; t < NT; ++t) {
          uint32_t y4;
          std::memcpy(&y4, xb[t]->qs + 4 * k, 4);
          const __m256i yv = _mm256_set1_epi32(static_cast<int>(y4));
          const __m256i p0 = _mm256_maddubs_epi16(w0, yv);
          const __m256i p1 = _mm256_maddubs_epi16(w1, yv);
          s[t][0] = k == g0 ? p0 : _mm256_add_epi16(s[t][0], p0);
          s[t][1] = k == g0 ? p1 : _mm256_add_epi16(s[t][1], p1);
        }
      }
      const __m256i sc0 = _mm256_loadu_si256(scales + 2 * j);
      const __m256i sc1 = _mm256_loadu_si256(scales + 2 * j + 1);
      for (int t = 0; t < NT; ++t) {
        isum[t][0] = _mm256_add_epi32(isum[t][0], _mm256_madd_epi16(s[t][0], sc0));
        isum[t][1] = _mm256_add_epi32(isum[t][1], _mm256_madd_epi16(s[t][1], sc1));
      }
    }
  }
  const __m256i* pairs = reinterpret_cast<const __m256i*>(pb + L::kPairs);
  const float* wd = reinterpret_cast<const float*>(pb + L::kD);
  const float* wdmin = reinterpret_cast<const float*>(pb + L::kDmin);
  for (int t = 0; t < NT; ++t) {
    // Side term: mins against the 32-element block sums (Q4_K/Q5_K), or scales
    // against the 16-element block sums (Q6_K, its bias of 32).
    int16_t sums[16];
    if constexpr (L::kQ6) {
      std::memcpy(sums, xb[t]->bsums, sizeof(sums));
    } else {
      for (int j = 0; j < 8; ++j)
        sums[j] = static_cast<int16_t>(xb[t]->bsums[2 * j] + xb[t]->bsums[2 * j + 1]);
    }
    __m256i side[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    for (int i = 0; i < F::kPairCount; ++i) {
      uint32_t pair;
      std::memcpy(&pair, sums + 2 * i, 4);
      const __m256i pv = _mm256_set1_epi32(static_cast<int>(pair));
      for (int h = 0; h < 2; ++h)
        side[h] =
            _mm256_add_epi32(side[h], _mm256_madd_epi16(_mm256_loadu_si256(pairs + 2 * i + h), pv));
    }
    const __m256 xd = _mm256_set1_ps(xb[t]->d);
    for (int h = 0; h < 2; ++h) {
      const __m256 d = _mm256_mul_ps(xd, _mm256_loadu_ps(wd + 8 * h));
      if constexpr (L::kQ6) {
        const __m256i total = _mm256_sub_epi32(isum[t][h], _mm256_slli_epi32(side[h], 5));
        acc[t][h] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(total), acc[t][h]);
      } else {
        const __m256 dmin = _mm256_mul_ps(xd, _mm256_loadu_ps(wdmin + 8 * h));
        acc[t][h] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum[t][h]), acc[t][h]);
        acc[t][h] = _mm256_fnmadd_ps(dmin, _mm256_cvtepi32_ps(side[h]), acc[t][h]);
      }
    }
  }
}

// Super-blocks [b0, b1) for tokens x[0..NT), continuing the parked accumulators.
template <class F, int NT>
void chunk_tokens(const uint8_t* panel, int64_t b0, int64_t b1, const uint8_t* x, size_t x_stride,
                  float (*parked)[16]) {
  const BlockQ8_K* xb[NT];
  __m256 acc[NT][2];
  for (int t = 0; t < NT; ++t) {
    xb[t] = reinterpret_cast<const BlockQ8_K*>(x + static_cast<size_t>(t) * x_stride) + b0;
    acc[t][0] = _mm256_load_ps(parked[t]);
    acc[t][1] = _mm256_load_ps(parked[t] + 8);
  }
  for (int64_t b = b0; b < b1; ++b) {
    super_block<F, NT>(panel + static_cast<size_t>(b) * Layout<F>::kBytes, xb, acc);
    for (int t = 0; t < NT; ++t) ++xb[t];
  }
  for (int t = 0; t < NT; ++t) {
    _mm256_store_ps(parked[t], acc[t][0]);
    _mm256_store_ps(parked[t] + 8, acc[t][1]);
  }
}

template <class F>
void kpanel_gemm(const uint8_t* panel, int n_rows, int64_t n, const uint8_t* x, size_t x_stride,
                 int nt, float* y, size_t y_stride) {
  const int64_t nb = n / kQKK;
  alignas(32) float parked[kTokenBlock][16];
  for (int t0 = 0; t0 < nt; t0 += kTokenBlock) {
    const int tn = std::min(kTokenBlock, nt - t0);
    const uint8_t* xt = x + static_cast<size_t>(t0) * x_stride;
    for (int t = 0; t < tn; ++t) std::fill(parked[t], parked[t] + 16, 0.0f);
    for (int64_t b0 = 0; b0 < nb; b0 += kChunkBlocks) {
      const int64_t b1 = std::min(nb, b0 + kChunkBlocks);
      over_token_groups<2>(tn, [&]<int NT>(int t) {
        chunk_tokens<F, NT>(panel, b0, b1, xt + static_cast<size_t>(t) * x_stride, x_stride,
                            parked + t);
      });
    }
    for (int t = 0; t < tn; ++t) {
      std::memcpy(y + static_cast<size_t>(t0 + t) * y_stride, parked[t],
                  static_cast<size_t>(n_rows) * sizeof(float));
    }
  }
}

}  // namespace
}  // namespace hearth::engine

#include "engine/kernels/x86_target_end.inc"

namespace hearth::engine {

void install_avx2_kquant_panels(KernelSet* k) {
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

#endif  // x86
