// AVX2 prefill panels for the formats against Q8_0 activations: Q4_0, Q5_0, Q8_0.
//
// Same canonical order as the dot kernels (docs/engine-kernels.md): each block's
// integer sum is exact, then acc[b % 4] = fma(dw * dx, float(isum), acc[b % 4]) in
// block order, result (acc0 + acc1) + (acc2 + acc3). The panel changes only how
// the integer sums are formed: one ymm register holds the same 4 elements of 8
// weight rows, the token's 4 activation bytes are broadcast, and maddubs builds
// each row's pair sums in its own lanes, with no horizontal reduction.
//
// Integer ranges (activations are clamped to +-127):
// - Q4_0 (stored q + 8, 0..15): a maddubs pair is at most 2*15*127 = 3810, so all 8
//   groups of a block add up in int16 (<= 30480) before one madd widens them.
// - Q5_0 (q + 16, 0..31): pairs <= 7874, 4 groups per int16 sum (<= 31496).
// - Q8_0: signed weights go through maddubs(|w|, sign(x, w)) (pairs <= 2*128*127),
//   widened after every group.
// The bias comes off through the activation block sums: the int32 lanes start at
// -(bias * sum(x)).
//
// AVX2 has 16 registers, too few for the four phase accumulators of 16 rows x 2
// tokens. So the GEMM runs phase by phase: pass p sweeps blocks p, p + 4, ... with
// one accumulator pair per token and folds its result into y along the canonical
// tree: pass 0 stores a0, pass 1 stores a0 + a1, pass 2 parks a2, pass 3 stores
// (a0 + a1) + (a2 + a3). A pass reads a quarter of the panel, which stays in L1
// while the tokens of a token block go past it.
#include "engine/kernels/avx2_parts.h"

#if defined(__x86_64__) || defined(__i386__)

#include <algorithm>
#include <cstring>

#include "engine/quant/blocks.h"

// clang-format off
#include "engine/kernels/avx2_target_begin.inc"
// clang-format on

namespace hearth::engine {
namespace {

#include "engine/kernels/x86_dot32.inc"

// Per block: 16 floats (row i's scale, widened exactly from f16), then for each
// group k = 0..7 the 4 bytes of elements 4k..4k+3 of rows 0..7 (32 bytes), then
// of rows 8..15 (32 bytes), as Fmt::decode gives them.
constexpr size_t kBlockBytes = 16 * 4 + 8 * 64;
// Tokens whose passes share one load of a panel quarter into L1.
constexpr int kTokenBlock = 32;

// Int16 pair sums that may be added before widening (see the ranges above); 1 for
// the signed format.
template <class Fmt>
constexpr int kGroupsPerSum = Fmt::kBiasShift == 3   ? 8
                              : Fmt::kBiasShift == 4 ? 4
                                                     : 1;

inline uint32_t load_u32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

size_t panel_bytes(int64_t n) {
  return static_cast<size_t>(n / kQK32) * kBlockBytes;
}

template <class Fmt>
void pack(const void* vw, size_t row_stride, int n_rows, int64_t n, uint8_t* panel) {
  using W = typename Fmt::W;
  const int64_t nb = n / kQK32;
  const W* rows[16];
  panel_row_pointers(vw, row_stride, n_rows, rows);
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* out = panel + static_cast<size_t>(b) * kBlockBytes;
    alignas(32) uint16_t d16[16];
    for (int half = 0; half < 2; ++half) {
      __m256i r[8];
      for (int i = 0; i < 8; ++i) {
        const W* row = rows[8 * half + i];
        r[i] = row != nullptr ? Fmt::decode(row[b]) : _mm256_setzero_si256();
        d16[8 * half + i] = row != nullptr ? row[b].d : uint16_t{0};
      }
      transpose8x8(r);
      for (int k = 0; k < 8; ++k) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 64 + 64 * k + 32 * half), r[k]);
      }
    }
    for (int half = 0; half < 2; ++half) {
      const __m128i h = _mm_load_si128(reinterpret_cast<const __m128i*>(d16 + 8 * half));
      _mm256_storeu_ps(reinterpret_cast<float*>(out) + 8 * half, _mm256_cvtph_ps(h));
    }
  }
}

// One activation row in the Q8_0 working format.
struct Act {
  const BlockQ8_0* blocks;
  const float* scale;
  const int32_t* sum;
};

// Exact block sums of the 16 rows (two ymm of int32) for NT tokens, block at pb.
template <class Fmt, int NT>
__attribute__((always_inline)) inline void block_sums(const uint8_t* pb, int64_t b, const Act* xs,
                                                      __m256i (&isum)[NT][2]) {
  const __m256i ones = _mm256_set1_epi16(1);
  for (int t = 0; t < NT; ++t) {
    if constexpr (Fmt::kBiasShift >= 0) {
      isum[t][0] = isum[t][1] = _mm256_set1_epi32(-(xs[t].sum[b] * (1 << Fmt::kBiasShift)));
    } else {
      isum[t][0] = isum[t][1] = _mm256_setzero_si256();
    }
  }
  const __m256i* q = reinterpret_cast<const __m256i*>(pb + 64);
  if constexpr (Fmt::kBiasShift < 0) {
    for (int k = 0; k < 8; ++k) {
      const __m256i w0 = _mm256_loadu_si256(q + 2 * k);
      const __m256i w1 = _mm256_loadu_si256(q + 2 * k + 1);
      const __m256i a0 = _mm256_sign_epi8(w0, w0);
      const __m256i a1 = _mm256_sign_epi8(w1, w1);
      for (int t = 0; t < NT; ++t) {
        const __m256i xv =
            _mm256_set1_epi32(static_cast<int>(load_u32(xs[t].blocks[b].qs + 4 * k)));
        const __m256i p0 = _mm256_maddubs_epi16(a0, _mm256_sign_epi8(xv, w0));
        const __m256i p1 = _mm256_maddubs_epi16(a1, _mm256_sign_epi8(xv, w1));
        isum[t][0] = _mm256_add_epi32(isum[t][0], _mm256_madd_epi16(p0, ones));
        isum[t][1] = _mm256_add_epi32(isum[t][1], _mm256_madd_epi16(p1, ones));
      }
    }
  } else {
    constexpr int G = kGroupsPerSum<Fmt>;
    for (int g = 0; g < 8; g += G) {
      __m256i s[NT][2];
      for (int k = g; k < g + G; ++k) {
        const __m256i w0 = _mm256_loadu_si256(q + 2 * k);
        const __m256i w1 = _mm256_loadu_si256(q + 2 * k + 1);
        for (int t = 0; t < NT; ++t) {
          const __m256i xv =
              _mm256_set1_epi32(static_cast<int>(load_u32(xs[t].blocks[b].qs + 4 * k)));
          const __m256i p0 = _mm256_maddubs_epi16(w0, xv);
          const __m256i p1 = _mm256_maddubs_epi16(w1, xv);
          s[t][0] = k == g ? p0 : _mm256_add_epi16(s[t][0], p0);
          s[t][1] = k == g ? p1 : _mm256_add_epi16(s[t][1], p1);
        }
      }
      for (int t = 0; t < NT; ++t) {
        isum[t][0] = _mm256_add_epi32(isum[t][0], _mm256_madd_epi16(s[t][0], ones));
        isum[t][1] = _mm256_add_epi32(isum[t][1], _mm256_madd_epi16(s[t][1], ones));
      }
    }
  }
}

// Phase p for NT tokens: acc[t] = the canonical accumulator of phase p (16 rows).
template <class Fmt, int NT>
inline void phase_pass(const uint8_t* panel, int64_t nb, int64_t p, const Act* xs,
                       __m256 (&acc)[NT][2]) {
  for (int t = 0; t < NT; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (int64_t b = p; b < nb; b += 4) {
    const uint8_t* pb = panel + static_cast<size_t>(b) * kBlockBytes;
    __m256i isum[NT][2];
    block_sums<Fmt, NT>(pb, b, xs, isum);
    const __m256 dw0 = _mm256_loadu_ps(reinterpret_cast<const float*>(pb));
    const __m256 dw1 = _mm256_loadu_ps(reinterpret_cast<const float*>(pb) + 8);
    for (int t = 0; t < NT; ++t) {
      const __m256 xd = _mm256_set1_ps(xs[t].scale[b]);
      acc[t][0] =
          _mm256_fmadd_ps(_mm256_mul_ps(dw0, xd), _mm256_cvtepi32_ps(isum[t][0]), acc[t][0]);
      acc[t][1] =
          _mm256_fmadd_ps(_mm256_mul_ps(dw1, xd), _mm256_cvtepi32_ps(isum[t][1]), acc[t][1]);
    }
  }
}

// Phase p for tokens x[0..NT): runs the pass and folds it into y (see the top).
template <class Fmt, int NT>
void phase_tokens(const uint8_t* panel, int64_t nb, int p, const uint8_t* x, size_t x_stride,
                  float* y, size_t y_stride, float (*parked)[16], const __m256i (&keep)[2]) {
  Act xs[NT];
  for (int t = 0; t < NT; ++t) {
    const uint8_t* row = x + static_cast<size_t>(t) * x_stride;
    xs[t].blocks = reinterpret_cast<const BlockQ8_0*>(row);
    xs[t].scale = reinterpret_cast<const float*>(row + q8_0_side_offset(nb));
    xs[t].sum = reinterpret_cast<const int32_t*>(row + q8_0_sums_offset(nb));
  }
  __m256 acc[NT][2];
  phase_pass<Fmt, NT>(panel, nb, p, xs, acc);
  for (int t = 0; t < NT; ++t) {
    for (int h = 0; h < 2; ++h) {
      float* yp = y + static_cast<size_t>(t) * y_stride + 8 * h;
      float* pk = parked[t] + 8 * h;
      switch (p) {
        case 0:
          _mm256_maskstore_ps(yp, keep[h], acc[t][h]);
          break;
        case 1:
          _mm256_maskstore_ps(yp, keep[h],
                              _mm256_add_ps(_mm256_maskload_ps(yp, keep[h]), acc[t][h]));
          break;
        case 2:
          _mm256_storeu_ps(pk, acc[t][h]);
          break;
        default:
          _mm256_maskstore_ps(yp, keep[h],
                              _mm256_add_ps(_mm256_maskload_ps(yp, keep[h]),
                                            _mm256_add_ps(_mm256_loadu_ps(pk), acc[t][h])));
          break;
      }
    }
  }
}

template <class Fmt>
void gemm(const uint8_t* panel, int n_rows, int64_t n, const uint8_t* x, size_t x_stride, int nt,
          float* y, size_t y_stride) {
  const int64_t nb = n / kQK32;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i keep[2] = {_mm256_cmpgt_epi32(_mm256_set1_epi32(n_rows), lane),
                           _mm256_cmpgt_epi32(_mm256_set1_epi32(n_rows - 8), lane)};
  alignas(32) float parked[kTokenBlock][16];
  for (int t0 = 0; t0 < nt; t0 += kTokenBlock) {
    const int tn = std::min(kTokenBlock, nt - t0);
    const uint8_t* xb = x + static_cast<size_t>(t0) * x_stride;
    float* yb = y + static_cast<size_t>(t0) * y_stride;
    for (int p = 0; p < 4; ++p) {
      over_token_groups<2>(tn, [&]<int NT>(int t) {
        phase_tokens<Fmt, NT>(panel, nb, p, xb + static_cast<size_t>(t) * x_stride, x_stride,
                              yb + static_cast<size_t>(t) * y_stride, y_stride, parked + t, keep);
      });
    }
  }
}

}  // namespace
}  // namespace hearth::engine

#include "engine/kernels/x86_target_end.inc"

// Installing stores function addresses only (no AVX instructions run here).
namespace hearth::engine {

void install_avx2_q8_panels(KernelSet* k) {
  using T = gguf::TensorType;
  k->panel[static_cast<int>(T::kQ4_0)] = PanelKernels{panel_bytes, pack<FmtQ4_0>, gemm<FmtQ4_0>};
  k->panel[static_cast<int>(T::kQ5_0)] = PanelKernels{panel_bytes, pack<FmtQ5_0>, gemm<FmtQ5_0>};
  k->panel[static_cast<int>(T::kQ8_0)] = PanelKernels{panel_bytes, pack<FmtQ8_0>, gemm<FmtQ8_0>};
}

}  // namespace hearth::engine

#endif  // x86
