// AVX-512 (F, BW, VL, VNNI) kernels for the 32-element formats against Q8_0
// activations: Q4_0, Q5_0, Q8_0. Everything else comes from the AVX-VNNI / AVX2
// table this one is built on.
//
// Same canonical order as the scalar reference (docs/engine-kernels.md): each
// block's integer sum is exact, then acc[b % 4] = fma(dw_b * dx_b, float(isum_b),
// acc[b % 4]) in block order, result (acc0 + acc1) + (acc2 + acc3). What AVX-512
// changes is how the exact integer sums are formed: sixteen blocks at a time, two
// per zmm register, one vpdpbusd per pair, then one transposing reduction tree
// yields the sixteen block sums in one register (integer addition is associative,
// so any tree gives the same sums). The float part then runs on the four 4-block
// quarters of that register in order, exactly as the 4-block AVX2 loop does.
//
// Weights are made unsigned for vpdpbusd (unsigned x signed) and the bias is taken
// off through the activation block sums, exactly: Q4_0 stores q + 8, Q5_0 q + 16,
// and Q8_0 weights are flipped to w + 128 (x ^ 0x80), so sum(w y) = sum((w + 128) y)
// - 128 sum(y). No step saturates: vpdpbusd accumulates in int32, and a lane's four
// products are at most 255 * 127 each.
//
// Only selected when the CPU has AVX-512 VNNI (without it the +128 trick would
// overflow maddubs' int16 pairs); AVX-512 CPUs without VNNI use the AVX2 table.
#include "engine/kernels/avx512_parts.h"
#include "engine/kernels/kernel_set.h"

#if defined(__x86_64__)

#include <cstring>
#include <utility>

#include "engine/cpu_features.h"
#include "engine/quant/blocks.h"
#include "hearth/engine/fp16.h"

// clang-format off
#include "engine/kernels/avx512_target_begin.inc"
// clang-format on

namespace hearth::engine {
namespace {

#include "engine/kernels/avx512_helpers.inc"

// 16 packed nibbles of one block -> 32 bytes: low nibbles (elements 0..15), then
// high nibbles (16..31).
inline __m256i nibbles1(const uint8_t* qs) {
  const __m128i t = load128(qs);
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}
// The same for two blocks into one zmm: block a in bytes 0..31, block b in 32..63.
inline __m512i nibbles2(const uint8_t* qs_a, const uint8_t* qs_b) {
  __m512i z = _mm512_castsi256_si512(
      _mm256_inserti128_si256(_mm256_castsi128_si256(load128(qs_a)), load128(qs_b), 1));
  z = _mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(1, 1, 0, 0));  // [a, a, b, b]
  z = _mm512_mask_srli_epi64(z, 0xCC, z, 4);                // [a, a>>4, b, b>>4]
  return _mm512_and_si512(z, _mm512_set1_epi8(0x0F));
}
inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Weight formats: decode1 / decode2 give unsigned bytes (element k of a block at
// byte k of its half), kBiasShift the bias as a power of two.
struct Z4_0 {
  using W = BlockQ4_0;
  static constexpr int kBiasShift = 3;  // 8
  static __m256i decode1(const W& b) { return nibbles1(b.qs); }
  static __m512i decode2(const W* b) { return nibbles2(b[0].qs, b[1].qs); }
};
struct Z5_0 {
  using W = BlockQ5_0;
  static constexpr int kBiasShift = 4;  // 16
  static __m256i decode1(const W& b) {
    const __m256i hi = _mm256_maskz_mov_epi8(load_u32(b.qh), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(nibbles1(b.qs), hi);
  }
  static __m512i decode2(const W* b) {
    const uint64_t bits = load_u32(b[0].qh) | (uint64_t{load_u32(b[1].qh)} << 32);
    const __m512i hi = _mm512_maskz_mov_epi8(bits, _mm512_set1_epi8(0x10));
    return _mm512_or_si512(nibbles2(b[0].qs, b[1].qs), hi);
  }
};
struct Z8_0 {
  using W = BlockQ8_0;
  static constexpr int kBiasShift = 7;  // 128: w ^ 0x80 == w + 128 as unsigned
  static __m256i decode1(const W& b) {
    return _mm256_xor_si256(load256(b.qs), _mm256_set1_epi8(static_cast<char>(0x80)));
  }
  static __m512i decode2(const W* b) {
    const __m512i z =
        _mm512_inserti64x4(_mm512_castsi256_si512(load256(b[0].qs)), load256(b[1].qs), 1);
    return _mm512_xor_si512(z, _mm512_set1_epi8(static_cast<char>(0x80)));
  }
};

// Sixteen f16 block scales (the leading `d` of blocks w[0..15]) as floats.
template <class W>
inline __m512 scales16(const W* w) {
  const __m512i idx =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(static_cast<int>(sizeof(W))));
  const __m512i raw = _mm512_i32gather_epi32(idx, static_cast<const void*>(w), 1);
  return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(raw));  // keeps each d (low 16 bits)
}

// s[k] holds the 8 int32 partial sums of block 2k (lanes 0..7) and of block 2k+1
// (lanes 8..15). Returns the 16 block sums, lane i = block i.
inline __m512i block_sums16(const __m512i s[8]) {
  __m512i p[4];
  for (int k = 0; k < 4; ++k) {  // per 128-bit lane: [a0+a2, b0+b2, a1+a3, b1+b3]
    const __m512i a = s[2 * k], b = s[2 * k + 1];
    p[k] = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
  }
  // 128-bit lane j of q0 = [sum of lane j of s0, s1, s2, s3]; q1 the same for s4..s7.
  const __m512i q0 =
      _mm512_add_epi32(_mm512_unpacklo_epi64(p[0], p[1]), _mm512_unpackhi_epi64(p[0], p[1]));
  const __m512i q1 =
      _mm512_add_epi32(_mm512_unpacklo_epi64(p[2], p[3]), _mm512_unpackhi_epi64(p[2], p[3]));
  // Block 2k = lanes 0 + 1 of s_k, block 2k+1 = lanes 2 + 3.
  const __m512i r = _mm512_add_epi32(_mm512_shuffle_i64x2(q0, q1, _MM_SHUFFLE(2, 0, 2, 0)),
                                     _mm512_shuffle_i64x2(q0, q1, _MM_SHUFFLE(3, 1, 3, 1)));
  // r = [0 2 4 6 | 1 3 5 7 | 8 10 12 14 | 9 11 13 15] -> natural order.
  const __m512i order = _mm512_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15);
  return _mm512_permutexvar_epi32(order, r);
}

template <class Fmt, int NT>
void dot32_512(const void* vw, const uint8_t* x, size_t x_stride, int64_t n, float* out) {
  using W = typename Fmt::W;
  const W* w = static_cast<const W*>(vw);
  const int64_t nb = n / kQK32;
  const BlockQ8_0* xb[NT];
  const float* xscale[NT];
  const int32_t* xsum[NT];
  __m128 acc[NT];
  for (int t = 0; t < NT; ++t) {
    const uint8_t* row = x + static_cast<size_t>(t) * x_stride;
    xb[t] = reinterpret_cast<const BlockQ8_0*>(row);
    xscale[t] = reinterpret_cast<const float*>(row + q8_0_side_offset(nb));
    xsum[t] = reinterpret_cast<const int32_t*>(row + q8_0_sums_offset(nb));
    acc[t] = _mm_setzero_ps();
  }
  int64_t b = 0;
  for (; b + 16 <= nb; b += 16) {
    prefetch_row_ahead(w + b, 16 * sizeof(W));
    __m512i wq[8];
    for (int k = 0; k < 8; ++k) wq[k] = Fmt::decode2(w + b + 2 * k);
    const __m512 wd = scales16(w + b);
    for (int t = 0; t < NT; ++t) {
      const BlockQ8_0* xt = xb[t] + b;
      __m512i s[8];
      for (int k = 0; k < 8; ++k) {
        const __m512i y = _mm512_inserti64x4(_mm512_castsi256_si512(load256(xt[2 * k].qs)),
                                             load256(xt[2 * k + 1].qs), 1);
        s[k] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq[k], y);
      }
      const __m512i ysum = _mm512_loadu_si512(xsum[t] + b);
      const __m512i isum =
          _mm512_sub_epi32(block_sums16(s), _mm512_slli_epi32(ysum, Fmt::kBiasShift));
      const __m512 dd = _mm512_mul_ps(wd, _mm512_loadu_ps(xscale[t] + b));
      const __m512 fi = _mm512_cvtepi32_ps(isum);
      __m128 a = acc[t];
      a = _mm_fmadd_ps(_mm512_castps512_ps128(dd), _mm512_castps512_ps128(fi), a);
      a = _mm_fmadd_ps(_mm512_extractf32x4_ps(dd, 1), _mm512_extractf32x4_ps(fi, 1), a);
      a = _mm_fmadd_ps(_mm512_extractf32x4_ps(dd, 2), _mm512_extractf32x4_ps(fi, 2), a);
      acc[t] = _mm_fmadd_ps(_mm512_extractf32x4_ps(dd, 3), _mm512_extractf32x4_ps(fi, 3), a);
    }
  }
  for (int t = 0; t < NT; ++t) {
    float a[4];
    _mm_storeu_ps(a, acc[t]);
    for (int64_t bb = b; bb < nb; ++bb) {
      const __m256i d =
          _mm256_dpbusd_epi32(_mm256_setzero_si256(), Fmt::decode1(w[bb]), load256(xb[t][bb].qs));
      const int32_t isum = hsum8(d) - xsum[t][bb] * (1 << Fmt::kBiasShift);
      const float dd = _cvtsh_ss(w[bb].d) * xscale[t][bb];
      a[bb & 3] = fma_ss(dd, static_cast<float>(isum), a[bb & 3]);
    }
    out[t] = (a[0] + a[1]) + (a[2] + a[3]);
  }
}

// ---- F16 weights x F16 activations (read from the working format's floats) --------

// Element i goes to lane i % 32 with one FMA (lanes 0..15 in lo, 16..31 in hi),
// elements past the last full 32 are FMA'd in order after the reduction.
template <int NT>
void dot_f16_512(const void* vw, const uint8_t* x, size_t x_stride, int64_t n, float* out) {
  const uint16_t* w = static_cast<const uint16_t*>(vw);
  const float* xf[NT];
  __m512 lo[NT], hi[NT];
  for (int t = 0; t < NT; ++t) {
    xf[t] =
        reinterpret_cast<const float*>(x + static_cast<size_t>(t) * x_stride + f16_side_offset(n));
    lo[t] = _mm512_setzero_ps();
    hi[t] = _mm512_setzero_ps();
  }
  const int64_t full = n - n % 32;
  for (int64_t i = 0; i < full; i += 32) {
    _mm_prefetch(reinterpret_cast<const char*>(w + i) + kF16PrefetchBytes, _MM_HINT_T0);
    const __m512 w0 = _mm512_cvtph_ps(load256(w + i));
    const __m512 w1 = _mm512_cvtph_ps(load256(w + i + 16));
    for (int t = 0; t < NT; ++t) {
      lo[t] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(xf[t] + i), lo[t]);
      hi[t] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(xf[t] + i + 16), hi[t]);
    }
  }
  for (int t = 0; t < NT; ++t) {
    float r = reduce_lanes32(lo[t], hi[t]);
    for (int64_t i = full; i < n; ++i) r = fma_ss(_cvtsh_ss(w[i]), xf[t][i], r);
    out[t] = r;
  }
}

// ---- prefill panels for the Q8_0-partner formats ---------------------------------
//
// Panel layout, per block b of the 16 rows: 16 floats (row i's f16 scale d, exact),
// then 8 groups k of 16 rows x 4 bytes: the unsigned weights of elements 4k..4k+3
// of row i (as decode1 gives them). The GEMM keeps, per token, one int32 lane per
// row: it starts at -(bias << shift) * (the activation block's quant sum) and adds
// one vpdpbusd per group with the activation's 4 bytes broadcast, giving row i's
// exact block sum; then the canonical acc[b % 4] = fma(dw * dx, isum, acc[b % 4])
// runs lane-wise for all 16 rows at once, and (a0 + a1) + (a2 + a3) at the end.
constexpr size_t kPanelBlockBytes = 16 * 4 + 8 * 64;

size_t q8p_panel_bytes(int64_t n) {
  return static_cast<size_t>(n / kQK32) * kPanelBlockBytes;
}

template <class Fmt>
void q8p_pack(const void* vw, size_t row_stride, int n_rows, int64_t n, uint8_t* panel) {
  using W = typename Fmt::W;
  const int64_t nb = n / kQK32;
  const W* rows[16];
  for (int i = 0; i < 16; ++i) {
    rows[i] = kPanelRowFor[i] < n_rows
                  ? reinterpret_cast<const W*>(static_cast<const uint8_t*>(vw) +
                                               static_cast<size_t>(kPanelRowFor[i]) * row_stride)
                  : nullptr;
  }
  alignas(64) uint16_t d16[16];
  const size_t src_bytes = static_cast<size_t>(n_rows) * row_stride;
  prefetch_rows(vw, src_bytes);
  for (int64_t b = 0; b < nb; ++b) {
    prefetch_next_rows(vw, src_bytes, b, nb);
    __m512i z[8];
    for (int j = 0; j < 8; ++j) {
      const __m256i lo = rows[2 * j] ? Fmt::decode1(rows[2 * j][b]) : _mm256_setzero_si256();
      const __m256i hi =
          rows[2 * j + 1] ? Fmt::decode1(rows[2 * j + 1][b]) : _mm256_setzero_si256();
      z[j] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    }
    uint8_t* out = panel + static_cast<size_t>(b) * kPanelBlockBytes;
    for (int i = 0; i < 16; ++i) {
      const int at = kPanelRowFor[i];  // lane `at` holds actual row `at`
      d16[at] = rows[i] ? rows[i][b].d : uint16_t{0};
    }
    _mm512_storeu_ps(out,
                     _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(d16))));
    store_panel_dwords(z, out + 64);
  }
}

// Exact block sums of the 16 rows for NT tokens, block b; two dependent chains of
// four vpdpbusd per token (k even / odd), added at the end (exact).
template <int NT>
__attribute__((always_inline)) inline void panel_block_sums(const uint8_t* pb,
                                                            const BlockQ8_0* const* xb,
                                                            const int32_t* const* xsum, int shift,
                                                            int64_t b, __m512i* isum) {
  __m512i even[NT], odd[NT];
  for (int t = 0; t < NT; ++t) {
    even[t] = _mm512_set1_epi32(-(xsum[t][b] * (1 << shift)));
    odd[t] = _mm512_setzero_si512();
  }
  const __m512i* q = reinterpret_cast<const __m512i*>(pb + 64);
  for (int k = 0; k < 8; k += 2) {
    const __m512i w0 = _mm512_loadu_si512(q + k);
    const __m512i w1 = _mm512_loadu_si512(q + k + 1);
    for (int t = 0; t < NT; ++t) {
      even[t] = _mm512_dpbusd_epi32(even[t], w0, bcast4(xb[t][b].qs + 4 * k));
      odd[t] = _mm512_dpbusd_epi32(odd[t], w1, bcast4(xb[t][b].qs + 4 * k + 4));
    }
  }
  for (int t = 0; t < NT; ++t) isum[t] = _mm512_add_epi32(even[t], odd[t]);
}

// One block of the panel GEMM for NT tokens, into the accumulators of its phase
// (b % 4). Always inlined with a fixed accumulator array, so the accumulators of all
// four phases stay in registers across the loop.
template <int NT>
__attribute__((always_inline)) inline void q8p_block(const uint8_t* panel, int64_t b,
                                                     const BlockQ8_0* const* xb,
                                                     const float* const* xscale,
                                                     const int32_t* const* xsum, int shift,
                                                     __m512 (&acc)[NT]) {
  const uint8_t* pb = panel + static_cast<size_t>(b) * kPanelBlockBytes;
  __m512i isum[NT];
  panel_block_sums<NT>(pb, xb, xsum, shift, b, isum);
  const __m512 dw = _mm512_loadu_ps(pb);
  for (int t = 0; t < NT; ++t) {
    const __m512 dd = _mm512_mul_ps(dw, _mm512_set1_ps(xscale[t][b]));
    acc[t] = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(isum[t]), acc[t]);
  }
}

template <int NT>
void q8p_gemm_nt(const uint8_t* panel, int n_rows, int64_t nb, const uint8_t* x, size_t x_stride,
                 int shift, float* y, size_t y_stride) {
  const BlockQ8_0* xb[NT];
  const float* xscale[NT];
  const int32_t* xsum[NT];
  for (int t = 0; t < NT; ++t) {
    const uint8_t* row = x + static_cast<size_t>(t) * x_stride;
    xb[t] = reinterpret_cast<const BlockQ8_0*>(row);
    xscale[t] = reinterpret_cast<const float*>(row + q8_0_side_offset(nb));
    xsum[t] = reinterpret_cast<const int32_t*>(row + q8_0_sums_offset(nb));
  }
  __m512 a0[NT], a1[NT], a2[NT], a3[NT];  // phases b % 4 == 0..3
  for (int t = 0; t < NT; ++t) a0[t] = a1[t] = a2[t] = a3[t] = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    q8p_block<NT>(panel, b, xb, xscale, xsum, shift, a0);
    q8p_block<NT>(panel, b + 1, xb, xscale, xsum, shift, a1);
    q8p_block<NT>(panel, b + 2, xb, xscale, xsum, shift, a2);
    q8p_block<NT>(panel, b + 3, xb, xscale, xsum, shift, a3);
  }
  if (b < nb) q8p_block<NT>(panel, b, xb, xscale, xsum, shift, a0);
  if (b + 1 < nb) q8p_block<NT>(panel, b + 1, xb, xscale, xsum, shift, a1);
  if (b + 2 < nb) q8p_block<NT>(panel, b + 2, xb, xscale, xsum, shift, a2);
  const __mmask16 keep = static_cast<__mmask16>((1u << n_rows) - 1);
  for (int t = 0; t < NT; ++t) {
    const __m512 r = _mm512_add_ps(_mm512_add_ps(a0[t], a1[t]), _mm512_add_ps(a2[t], a3[t]));
    _mm512_mask_storeu_ps(y + static_cast<size_t>(t) * y_stride, keep, r);
  }
}

template <class Fmt>
void q8p_gemm(const uint8_t* panel, int n_rows, int64_t n, const uint8_t* x, size_t x_stride,
              int nt, float* y, size_t y_stride) {
  const int64_t nb = n / kQK32;
  over_token_groups<4>(nt, [&]<int NT>(int t) {
    q8p_gemm_nt<NT>(panel, n_rows, nb, x + t * x_stride, x_stride, Fmt::kBiasShift,
                    y + t * y_stride, y_stride);
  });
}

// ---- Q8_0 activation rows ---------------------------------------------------------
//
// The reference quantizer (quant/quantize.cpp) vectorized, with the same IEEE
// operations: amax (max is exact in any order; a NaN element is skipped, as
// std::max skips it), d = amax / 127, id = 1 / d, q = round-half-away(x * id)
// computed exactly as trunc(p) + sign(p) where |p - trunc(p)| >= 0.5.
//
// Sixteen blocks at a time: their amax, d, id, F16 d and quant sums are computed for all
// sixteen in one vector each (a block's lanes reduced by reduce16_lanes), not block by
// block through a horizontal reduction and scalar divides whose latency set the pace
// (1.6-2x faster; the bytes are the reference's either way, kernel_quantize_test).

// Lane j of the result: op over the 16 lanes of v[j] (op: associative and commutative,
// and exact: max, or an integer add on the lanes' bits). A transposing tree, 31
// shuffles for 16 vectors where 16 separate reductions take 64.
template <class Op>
__attribute__((always_inline)) inline __m512 reduce16_lanes(const __m512 (&v)[16], Op op) {
  __m512 a[8];  // a[i]: lanes 0-7 partial of v[2i], lanes 8-15 of v[2i + 1]
  for (int i = 0; i < 8; ++i)
    a[i] = op(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44),
              _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xEE));
  __m512 c[4];  // c[i]: 128-bit chunk k holds 4 partials of v[4i + k]
  for (int i = 0; i < 4; ++i)
    c[i] = op(_mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0x88),
              _mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0xDD));
  __m512 e[2];  // e[i], chunk k: 2 partials of v[8i + k], then 2 of v[8i + 4 + k]
  for (int i = 0; i < 2; ++i)
    e[i] = op(_mm512_shuffle_ps(c[2 * i], c[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
              _mm512_shuffle_ps(c[2 * i], c[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  // Chunk k, lane l: v[k + 4l]; reordered so that lane j holds v[j].
  const __m512 r = op(_mm512_shuffle_ps(e[0], e[1], _MM_SHUFFLE(2, 0, 2, 0)),
                      _mm512_shuffle_ps(e[0], e[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, r);
}

void quantize_q8_0_row(const float* x, int64_t n, uint8_t* out) {
  const int64_t nb = n / kQK32;
  auto* blocks = reinterpret_cast<BlockQ8_0*>(out);
  float* side_scale = reinterpret_cast<float*>(out + q8_0_side_offset(nb));
  int32_t* side_sum = reinterpret_cast<int32_t*>(out + q8_0_sums_offset(nb));
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  const __m512 half = _mm512_set1_ps(0.5f);
  const __m512 one = _mm512_set1_ps(1.0f);
  auto round_away = [&](__m512 p) {
    const __m512 t = _mm512_roundscale_ps(p, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m512 frac = _mm512_and_ps(_mm512_sub_ps(p, t), abs_mask);
    const __mmask16 up = _mm512_cmp_ps_mask(frac, half, _CMP_GE_OQ);
    const __m512 step = _mm512_or_ps(one, _mm512_andnot_ps(abs_mask, p));  // +-1 as p
    return _mm512_cvttps_epi32(_mm512_mask_add_ps(t, up, t, step));
  };
  // A block's |x| maxima lane by lane (max_ps(a, m) is m when a is NaN: skipped).
  auto block_amax = [&](const float* xb) {
    const __m512 m =
        _mm512_max_ps(_mm512_and_ps(_mm512_loadu_ps(xb), abs_mask), _mm512_setzero_ps());
    return _mm512_max_ps(_mm512_and_ps(_mm512_loadu_ps(xb + 16), abs_mask), m);
  };
  // Block b's quants from its id; returns their lane sums.
  auto quantize_block = [&](int64_t b, __m512 vid) {
    const __m512i q0 = round_away(_mm512_mul_ps(_mm512_loadu_ps(x + 32 * b), vid));
    const __m512i q1 = round_away(_mm512_mul_ps(_mm512_loadu_ps(x + 32 * b + 16), vid));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(blocks[b].qs), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(blocks[b].qs + 16), _mm512_cvtepi32_epi8(q1));
    return _mm512_add_epi32(q0, q1);
  };
  const auto vmax = [&](__m512 a, __m512 b) { return _mm512_max_ps(a, b); };
  const auto vadd = [&](__m512 a, __m512 b) {  // [&]: no function-pointer conversion (ABI)
    return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
  };
  int64_t b = 0;
  for (; b + 16 <= nb; b += 16) {
    __m512 lanes[16];
    for (int j = 0; j < 16; ++j) lanes[j] = block_amax(x + 32 * (b + j));
    const __m512 d = _mm512_div_ps(reduce16_lanes(lanes, vmax), _mm512_set1_ps(127.0f));
    const __mmask16 nonzero = _mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_NEQ_UQ);
    alignas(64) float id[16];
    _mm512_store_ps(id, _mm512_maskz_div_ps(nonzero, one, d));
    // d is never a NaN (amax is not), where F16C's rounding is fp32_to_fp16's.
    const __m256i dh = _mm512_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT);
    _mm512_storeu_ps(side_scale + b, _mm512_cvtph_ps(dh));
    alignas(32) uint16_t dh16[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(dh16), dh);
    for (int j = 0; j < 16; ++j) {
      blocks[b + j].d = dh16[j];
      lanes[j] = _mm512_castsi512_ps(quantize_block(b + j, _mm512_set1_ps(id[j])));
    }
    _mm512_storeu_si512(side_sum + b, _mm512_castps_si512(reduce16_lanes(lanes, vadd)));
  }
  for (; b < nb; ++b) {
    const float amax = _mm512_reduce_max_ps(block_amax(x + 32 * b));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const __m512i sums = quantize_block(b, _mm512_set1_ps(id));
    const uint16_t dh = fp32_to_fp16(d);
    blocks[b].d = dh;
    side_scale[b] = _cvtsh_ss(dh);
    side_sum[b] = _mm512_reduce_add_epi32(sums);
  }
  clear_q8_0_working_padding(out, nb);  // as the reference
}

// ---- Q8_K activation rows ---------------------------------------------------------
//
// The reference (quant/quantize.cpp, quantize_q8_k) vectorized, with the same IEEE
// operations: per 256-element block the first element of largest magnitude (`max`,
// its sign kept; NaNs never win, as `fabs(x) > amax` skips them), iscale = -127 / max,
// q = min(127, round-half-even(iscale * x)) by the same 1.5 * 2^23 addition, the 16
// sums of 16 quants, d = 1 / iscale; an all-zero block is all zero bytes.
void quantize_q8_k_row(const float* x, int64_t n, uint8_t* out) {
  const int64_t nb = n / kQKK;
  auto* blocks = reinterpret_cast<BlockQ8_K*>(out);
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  const __m512 magic = _mm512_set1_ps(12582912.f);
  const __m512i mant = _mm512_set1_epi32(0x007fffff), bias = _mm512_set1_epi32(0x00400000);
  const __m512i top = _mm512_set1_epi32(127);
  for (int64_t b = 0; b < nb; ++b, x += kQKK) {
    BlockQ8_K& y = blocks[b];
    __m512 m = _mm512_setzero_ps();
    for (int c = 0; c < kQKK / 16; ++c)
      m = _mm512_max_ps(_mm512_and_ps(_mm512_loadu_ps(x + 16 * c), abs_mask), m);
    const float amax = _mm512_reduce_max_ps(m);
    if (amax == 0.0f) {
      std::memset(&y, 0, sizeof(BlockQ8_K));
      continue;
    }
    float max = 0.0f;
    const __m512 vamax = _mm512_set1_ps(amax);
    for (int c = 0; c < kQKK / 16; ++c) {
      const __mmask16 at = _mm512_cmp_ps_mask(_mm512_and_ps(_mm512_loadu_ps(x + 16 * c), abs_mask),
                                              vamax, _CMP_EQ_OQ);
      if (at != 0) {
        max = x[16 * c + __builtin_ctz(at)];
        break;
      }
    }
    const float iscale = -127.f / max;
    const __m512 vis = _mm512_set1_ps(iscale);
    for (int c = 0; c < kQKK / 16; ++c) {
      const __m512 p = _mm512_mul_ps(vis, _mm512_loadu_ps(x + 16 * c));
      const __m512i bits = _mm512_castps_si512(_mm512_add_ps(p, magic));
      const __m512i q = _mm512_min_epi32(_mm512_sub_epi32(_mm512_and_si512(bits, mant), bias), top);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y.qs + 16 * c), _mm512_cvtepi32_epi8(q));
      y.bsums[c] = static_cast<int16_t>(_mm512_reduce_add_epi32(q));
    }
    y.d = 1 / iscale;
  }
}

// Two F16 weight rows x NT tokens: per row and token exactly dot_f16_512's lanes.
template <int NT>
void dot2_f16_512(const void* vw0, const void* vw1, const uint8_t* x, size_t x_stride, int64_t n,
                  float* out0, float* out1) {
  const uint16_t* w0 = static_cast<const uint16_t*>(vw0);
  const uint16_t* w1 = static_cast<const uint16_t*>(vw1);
  const float* xf[NT];
  __m512 lo0[NT], hi0[NT], lo1[NT], hi1[NT];
  for (int t = 0; t < NT; ++t) {
    xf[t] =
        reinterpret_cast<const float*>(x + static_cast<size_t>(t) * x_stride + f16_side_offset(n));
    lo0[t] = hi0[t] = lo1[t] = hi1[t] = _mm512_setzero_ps();
  }
  const int64_t full = n - n % 32;
  for (int64_t i = 0; i < full; i += 32) {
    const __m512 a0 = _mm512_cvtph_ps(load256(w0 + i));
    const __m512 a1 = _mm512_cvtph_ps(load256(w0 + i + 16));
    const __m512 b0 = _mm512_cvtph_ps(load256(w1 + i));
    const __m512 b1 = _mm512_cvtph_ps(load256(w1 + i + 16));
    for (int t = 0; t < NT; ++t) {
      const __m512 x0 = _mm512_loadu_ps(xf[t] + i);
      const __m512 x1 = _mm512_loadu_ps(xf[t] + i + 16);
      lo0[t] = _mm512_fmadd_ps(a0, x0, lo0[t]);
      hi0[t] = _mm512_fmadd_ps(a1, x1, hi0[t]);
      lo1[t] = _mm512_fmadd_ps(b0, x0, lo1[t]);
      hi1[t] = _mm512_fmadd_ps(b1, x1, hi1[t]);
    }
  }
  for (int t = 0; t < NT; ++t) {
    float r0 = reduce_lanes32(lo0[t], hi0[t]);
    float r1 = reduce_lanes32(lo1[t], hi1[t]);
    for (int64_t i = full; i < n; ++i) {
      r0 = fma_ss(_cvtsh_ss(w0[i]), xf[t][i], r0);
      r1 = fma_ss(_cvtsh_ss(w1[i]), xf[t][i], r1);
    }
    out0[t] = r0;
    out1[t] = r1;
  }
}
void multi2_f16(const void* w0, const void* w1, const uint8_t* x, size_t stride, int nt, int64_t n,
                float* out0, float* out1) {
  switch (nt) {
    case 1:
      dot2_f16_512<1>(w0, w1, x, stride, n, out0, out1);
      break;
    case 2:
      dot2_f16_512<2>(w0, w1, x, stride, n, out0, out1);
      break;
    case 3:
      dot2_f16_512<3>(w0, w1, x, stride, n, out0, out1);
      break;
    default:
      dot2_f16_512<4>(w0, w1, x, stride, n, out0, out1);
      break;
  }
}

// F16 working row: F16C's conversion rounds to nearest even, exactly fp32_to_fp16,
// and the widened copy is exact.
void quantize_f16_row(const float* x, int64_t n, uint8_t* out) {
  auto* h = reinterpret_cast<uint16_t*>(out);
  float* wide = reinterpret_cast<float*>(out + f16_side_offset(n));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i v = _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(h + i), v);
    _mm512_storeu_ps(wide + i, _mm512_cvtph_ps(v));
  }
  for (; i < n; ++i) {
    h[i] = fp32_to_fp16(x[i]);
    wide[i] = fp16_to_fp32(h[i]);
  }
  clear_f16_working_padding(out, n);
}

template <template <int> class K>
float as_dot(const void* w, const void* x, int64_t n) {
  float out;
  K<1>::run(w, static_cast<const uint8_t*>(x), 0, n, &out);
  return out;
}
template <template <int> class K>
void as_multi(const void* w, const uint8_t* x, size_t stride, int nt, int64_t n, float* out) {
  switch (nt) {
    case 1:
      K<1>::run(w, x, stride, n, out);
      break;
    case 2:
      K<2>::run(w, x, stride, n, out);
      break;
    case 3:
      K<3>::run(w, x, stride, n, out);
      break;
    default:
      K<4>::run(w, x, stride, n, out);
      break;
  }
}
template <class Fmt>
struct Dot32 {
  template <int NT>
  struct K {
    static void run(const void* w, const uint8_t* x, size_t s, int64_t n, float* o) {
      dot32_512<Fmt, NT>(w, x, s, n, o);
    }
  };
};
template <int NT>
struct DotF16 {
  static void run(const void* w, const uint8_t* x, size_t s, int64_t n, float* o) {
    dot_f16_512<NT>(w, x, s, n, o);
  }
};

}  // namespace
}  // namespace hearth::engine

#include "engine/kernels/x86_target_end.inc"

namespace hearth::engine {
namespace {

template <template <int> class K>
void put(KernelSet* k, gguf::TensorType t) {
  k->dot[static_cast<int>(t)] = as_dot<K>;
  k->multi[static_cast<int>(t)] = as_multi<K>;
}
template <class Fmt>
void put_panel(KernelSet* k, gguf::TensorType t) {
  k->panel[static_cast<int>(t)] = PanelKernels{q8p_panel_bytes, q8p_pack<Fmt>, q8p_gemm<Fmt>};
}

KernelSet make_avx512() {
  using T = gguf::TensorType;
  // AVX-512 VNNI does not imply the VEX-encoded AVX-VNNI the base table may use.
  const KernelSet* base = cpu_features().avxvnni ? avxvnni_kernels() : avx2_kernels();
  KernelSet k = *base;
  k.isa = "avx512-vnni";
  put<Dot32<Z4_0>::K>(&k, T::kQ4_0);
  put<Dot32<Z5_0>::K>(&k, T::kQ5_0);
  put<Dot32<Z8_0>::K>(&k, T::kQ8_0);
  // F16: only the tile (the single-token dot of the base table keeps four
  // independent FMA chains, which decode prefers).
  k.multi[static_cast<int>(T::kF16)] = as_multi<DotF16>;
  k.multi2[static_cast<int>(T::kF16)] = multi2_f16;
  put_panel<Z4_0>(&k, T::kQ4_0);
  put_panel<Z5_0>(&k, T::kQ5_0);
  put_panel<Z8_0>(&k, T::kQ8_0);
  k.quantize_q8_0 = quantize_q8_0_row;
  k.quantize_q8_k = quantize_q8_k_row;
  k.quantize_f16 = quantize_f16_row;
  install_avx512_kquants(&k);
  install_avx512_kquant_panels(&k);
  install_avx512_group_gemm(&k);
  install_avx512_f16_gemm(&k);
  install_avx512_model_kernels(&k);
  // The base table's interleaved Q6_K kernel (AVX2) is no faster than this table's
  // one-row Q6_K dot (one thread, 32000x2048 from memory: ~27 against ~30 GB/s; two
  // threads ~50 against ~48), and plain rows keep the multi-token tiles: Q6_K
  // matrices stay plain under this table.
  k.group_dot_interleaved[static_cast<int>(T::kQ6_K)] = nullptr;
  return k;
}

}  // namespace

const KernelSet* avx512_kernels() {
  static const KernelSet k = make_avx512();
  return &k;
}

}  // namespace hearth::engine

#endif  // x86-64
