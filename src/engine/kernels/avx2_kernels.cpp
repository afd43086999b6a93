// AVX2 + FMA + F16C kernels (x86-64).
//
// Compiled under a target pragma so the rest of the build needs no -mavx2; only
// reached through active_kernels() after cpu_features() reported AVX2, FMA and
// F16C. Each kernel reproduces the canonical order of scalar_kernels.cpp bit
// for bit: integer block sums are exact (maddubs/madd never saturate for the
// value ranges of these formats, see the comments at each use), the per-block
// float work is the same IEEE operations, lane for lane.
//
// Each format has one kernel template over NT, the number of activation rows
// (tokens) that share the decoded weights: NT = 1 is the mat-vec dot, NT = 2..4
// the prefill tile. Everything here has internal linkage, so no AVX2 code can
// leak into other translation units through a shared inline/template definition.
#include "engine/kernels/kernel_set.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <cstring>

#include "engine/quant/blocks.h"
#include "engine/quant/scales.h"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

namespace hearth::engine {
namespace {

inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

inline __m128 halves4(uint16_t a, uint16_t b, uint16_t c, uint16_t d) {
  return _mm_cvtph_ps(_mm_setr_epi16(static_cast<short>(a), static_cast<short>(b),
                                     static_cast<short>(c), static_cast<short>(d), 0, 0, 0, 0));
}

inline float fma_ss(float a, float b, float c) {
  return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c)));
}

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Signed x times signed y (y never -128: activation quantizers clamp to +-127),
// pairwise summed to 8 int32 lanes. |x| <= 128, |y| <= 127: pair sums fit int16.
inline __m256i dot_s8(__m256i x, __m256i y) {
  const __m256i ax = _mm256_sign_epi8(x, x);
  const __m256i sy = _mm256_sign_epi8(y, x);
  return _mm256_madd_epi16(_mm256_maddubs_epi16(ax, sy), _mm256_set1_epi16(1));
}
// Unsigned x <= 31 times signed y: pair sums <= 31*128*2, fits int16.
inline __m256i dot_u8(__m256i ux, __m256i y) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(ux, y), _mm256_set1_epi16(1));
}

inline int32_t hsum8(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}
// Four horizontal sums at once: lane k = sum of the 8 lanes of input k.
inline __m128i hsum4(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i ab = _mm256_hadd_epi32(a, b);
  const __m256i cd = _mm256_hadd_epi32(c, d);
  const __m256i abcd = _mm256_hadd_epi32(ab, cd);
  return _mm_add_epi32(_mm256_castsi256_si128(abcd), _mm256_extracti128_si256(abcd, 1));
}

// 16 packed nibbles -> 32 bytes: low nibbles (elements 0..15), then high (16..31).
inline __m256i nibbles32(const uint8_t* qs) {
  const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}
// 32 bits -> 32 bytes, 0xFF where the bit is set.
inline __m256i bytes_from_bits(const uint8_t* p) {
  uint32_t bits;
  std::memcpy(&bits, p, 4);
  const __m256i idx = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                        0x0101010101010101, 0x0000000000000000);
  __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), idx);
  bytes = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
  return _mm256_cmpeq_epi8(bytes, _mm256_set1_epi64x(-1));
}

// ---- 32-element formats --------------------------------------------------------

struct FmtQ4_0 {
  using W = BlockQ4_0;
  using X = BlockQ8_0;
  static constexpr bool kMin = false;
  static __m256i decode(const W& b) {
    return _mm256_sub_epi8(nibbles32(b.qs), _mm256_set1_epi8(8));
  }
  static __m256i dot(__m256i w, __m256i y) { return dot_s8(w, y); }
};
struct FmtQ8_0 {
  using W = BlockQ8_0;
  using X = BlockQ8_0;
  static constexpr bool kMin = false;
  static __m256i decode(const W& b) { return load256(b.qs); }
  static __m256i dot(__m256i w, __m256i y) { return dot_s8(w, y); }
};
struct FmtQ5_0 {
  using W = BlockQ5_0;
  using X = BlockQ8_0;
  static constexpr bool kMin = false;
  // nibble | 0xF0 where the fifth bit is clear == (nibble + 16*bit - 16) as int8.
  static __m256i decode(const W& b) {
    const __m256i hi = _mm256_andnot_si256(bytes_from_bits(b.qh), _mm256_set1_epi8(static_cast<char>(0xF0)));
    return _mm256_or_si256(nibbles32(b.qs), hi);
  }
  static __m256i dot(__m256i w, __m256i y) { return dot_s8(w, y); }
};
struct FmtQ4_1 {
  using W = BlockQ4_1;
  using X = BlockQ8_1;
  static constexpr bool kMin = true;
  static __m256i decode(const W& b) { return nibbles32(b.qs); }
  static __m256i dot(__m256i w, __m256i y) { return dot_u8(w, y); }
};
struct FmtQ5_1 {
  using W = BlockQ5_1;
  using X = BlockQ8_1;
  static constexpr bool kMin = true;
  static __m256i decode(const W& b) {
    const __m256i hi = _mm256_and_si256(bytes_from_bits(b.qh), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(nibbles32(b.qs), hi);
  }
  static __m256i dot(__m256i w, __m256i y) { return dot_u8(w, y); }
};

template <class X>
inline __m128 act_scales4(const X* x) {
  return halves4(x[0].d, x[1].d, x[2].d, x[3].d);
}

// Canonical order: block b -> phase b % 4, acc = fma(dw*dx, isum, acc)
// [, acc = fma(mw, sx, acc)], result (p0+p1)+(p2+p3). Groups of 4 blocks are
// done with the 4 phases in the 4 lanes of one __m128.
template <class Fmt, int NT>
void dot32(const void* vw, const uint8_t* x, size_t x_stride, int64_t n, float* out) {
  using W = typename Fmt::W;
  using X = typename Fmt::X;
  const W* w = static_cast<const W*>(vw);
  const X* xs[NT];
  __m128 acc[NT];
  for (int t = 0; t < NT; ++t) {
    xs[t] = reinterpret_cast<const X*>(x + static_cast<size_t>(t) * x_stride);
    acc[t] = _mm_setzero_ps();
  }
  const int64_t nb = n / kQK32;
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    __m256i wq[4];
    for (int k = 0; k < 4; ++k) wq[k] = Fmt::decode(w[b + k]);
    const __m128 wd = halves4(w[b].d, w[b + 1].d, w[b + 2].d, w[b + 3].d);
    for (int t = 0; t < NT; ++t) {
      const X* xb = xs[t] + b;
      const __m128i isum = hsum4(Fmt::dot(wq[0], load256(xb[0].qs)), Fmt::dot(wq[1], load256(xb[1].qs)),
                                 Fmt::dot(wq[2], load256(xb[2].qs)), Fmt::dot(wq[3], load256(xb[3].qs)));
      const __m128 dd = _mm_mul_ps(wd, act_scales4(xb));
      acc[t] = _mm_fmadd_ps(dd, _mm_cvtepi32_ps(isum), acc[t]);
      if constexpr (Fmt::kMin) {
        const __m128 wm = halves4(w[b].m, w[b + 1].m, w[b + 2].m, w[b + 3].m);
        const __m128 xsum = halves4(xb[0].s, xb[1].s, xb[2].s, xb[3].s);
        acc[t] = _mm_fmadd_ps(wm, xsum, acc[t]);
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    float a[4];
    _mm_storeu_ps(a, acc[t]);
    for (int64_t bb = b; bb < nb; ++bb) {
      const int32_t isum = hsum8(Fmt::dot(Fmt::decode(w[bb]), load256(xs[t][bb].qs)));
      const float dd = h2f(w[bb].d) * h2f(xs[t][bb].d);
      a[bb & 3] = fma_ss(dd, static_cast<float>(isum), a[bb & 3]);
      if constexpr (Fmt::kMin) a[bb & 3] = fma_ss(h2f(w[bb].m), h2f(xs[t][bb].s), a[bb & 3]);
    }
    out[t] = (a[0] + a[1]) + (a[2] + a[3]);
  }
}

// ---- k-quants x Q8_K -------------------------------------------------------------

// Integer part of one super-block against one activation block; returns isum and
// sets *imin (the min-term integer sum; 0 for formats without mins).
// Q4_K: 8 sub-blocks of 32, unsigned 4-bit quants, 6-bit scales and mins.
struct DecodedQ4K {
  __m256i q[8];
  __m256i scale[8];
  uint8_t mins[8];
};
inline void decode_q4k(const BlockQ4_K& b, DecodedQ4K* d) {
  uint8_t sc[8];
  k4_unpack_scales(b.scales, sc, d->mins);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  for (int j = 0; j < 4; ++j) {
    const __m256i raw = load256(b.qs + 32 * j);
    d->q[2 * j] = _mm256_and_si256(raw, m4);
    d->q[2 * j + 1] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
  }
  for (int j = 0; j < 8; ++j) d->scale[j] = _mm256_set1_epi16(sc[j]);
}
struct DecodedQ5K : DecodedQ4K {};
inline void decode_q5k(const BlockQ5_K& b, DecodedQ4K* d) {
  uint8_t sc[8];
  k4_unpack_scales(b.scales, sc, d->mins);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i one = _mm256_set1_epi8(1);
  __m256i qh = load256(b.qh);
  for (int j = 0; j < 4; ++j) {
    const __m256i raw = load256(b.qs + 32 * j);
    // Fifth bits: sub-block 2j at bit 2j of qh, 2j+1 at bit 2j+1 (qh shifted as we go;
    // bits shifted in from the neighbouring byte are masked off).
    const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(qh, one), 4);
    const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 1), one), 4);
    d->q[2 * j] = _mm256_or_si256(_mm256_and_si256(raw, m4), h0);
    d->q[2 * j + 1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(raw, 4), m4), h1);
    qh = _mm256_srli_epi16(qh, 2);
  }
  for (int j = 0; j < 8; ++j) d->scale[j] = _mm256_set1_epi16(sc[j]);
}

// Quants <= 31 unsigned: maddubs pairs <= 31*127*2; times a 6-bit scale in madd.
inline int32_t isum_k4(const DecodedQ4K& d, const BlockQ8_K& x) {
  __m256i sumi = _mm256_setzero_si256();
  for (int j = 0; j < 8; ++j) {
    const __m256i p = _mm256_maddubs_epi16(d.q[j], load256(x.qs + 32 * j));
    sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, d.scale[j]));
  }
  return hsum8(sumi);
}
inline int32_t imin_k4(const DecodedQ4K& d, const BlockQ8_K& x) {
  int32_t s = 0;
  for (int j = 0; j < 8; ++j) s += d.mins[j] * (x.bsums[2 * j] + x.bsums[2 * j + 1]);
  return s;
}

template <class WBlock, void (*Decode)(const WBlock&, DecodedQ4K*), int NT>
void dot_k4(const void* vw, const uint8_t* x, size_t x_stride, int64_t n, float* out) {
  const WBlock* w = static_cast<const WBlock*>(vw);
  float acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = 0.0f;
  DecodedQ4K dec;
  for (int64_t b = 0; b < n / kQKK; ++b) {
    Decode(w[b], &dec);
    const float wd = h2f(w[b].d), wdmin = h2f(w[b].dmin);
    for (int t = 0; t < NT; ++t) {
      const BlockQ8_K& xb = reinterpret_cast<const BlockQ8_K*>(x + static_cast<size_t>(t) * x_stride)[b];
      const int32_t isum = isum_k4(dec, xb);
      const int32_t imin = imin_k4(dec, xb);
      const float d = xb.d * wd;
      const float dmin = xb.d * wdmin;
      acc[t] = fma_ss(d, static_cast<float>(isum), acc[t]);
      acc[t] = fma_ss(-dmin, static_cast<float>(imin), acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) out[t] = acc[t];
}

// Q6_K: 16 sub-blocks of 16, quants 0..63 (bias 32 applied through the block
// sums), int8 scales. Decoded per 32-element group g (elements 32g..32g+31):
// q[g] unsigned, scale[g] = scales 2g (low 128 bits) and 2g+1 (high 128 bits).
struct DecodedQ6K {
  __m256i q[8];
  __m256i scale[8];
  const int8_t* scales;
};
inline void decode_q6k(const BlockQ6_K& b, DecodedQ6K* d) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i m2 = _mm256_set1_epi8(0x03);
  for (int h = 0; h < 2; ++h) {
    const __m256i ql0 = load256(b.ql + 64 * h);
    const __m256i ql1 = load256(b.ql + 64 * h + 32);
    const __m256i qh = load256(b.qh + 32 * h);
    const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4);
    const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4);
    const __m256i h2 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4);
    const __m256i h3 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4);
    d->q[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(ql0, m4), h0);
    d->q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(ql1, m4), h1);
    d->q[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), h2);
    d->q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4), h3);
  }
  for (int g = 0; g < 8; ++g) {
    d->scale[g] = _mm256_set_m128i(_mm_set1_epi16(b.scales[2 * g + 1]), _mm_set1_epi16(b.scales[2 * g]));
  }
  d->scales = b.scales;
}
// maddubs pairs <= 63*127*2 = 16002; madd by |scale| <= 128 fits int32.
inline int32_t isum_q6k(const DecodedQ6K& d, const BlockQ8_K& x) {
  __m256i sumi = _mm256_setzero_si256();
  for (int g = 0; g < 8; ++g) {
    const __m256i p = _mm256_maddubs_epi16(d.q[g], load256(x.qs + 32 * g));
    sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, d.scale[g]));
  }
  int32_t bias = 0;
  for (int j = 0; j < 16; ++j) bias += d.scales[j] * x.bsums[j];
  return hsum8(sumi) - 32 * bias;
}

template <int NT>
void dot_q6k(const void* vw, const uint8_t* x, size_t x_stride, int64_t n, float* out) {
  const BlockQ6_K* w = static_cast<const BlockQ6_K*>(vw);
  float acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = 0.0f;
  DecodedQ6K dec;
  for (int64_t b = 0; b < n / kQKK; ++b) {
    decode_q6k(w[b], &dec);
    const float wd = h2f(w[b].d);
    for (int t = 0; t < NT; ++t) {
      const BlockQ8_K& xb = reinterpret_cast<const BlockQ8_K*>(x + static_cast<size_t>(t) * x_stride)[b];
      acc[t] = fma_ss(xb.d * wd, static_cast<float>(isum_q6k(dec, xb)), acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) out[t] = acc[t];
}

// Q3_K and Q2_K: 2-bit fields, 16-element sub-blocks; done one token at a time
// (no tile kernel: these formats are rare in the models we target).
float dot_q3k(const void* vw, const void* vx, int64_t n) {
  const BlockQ3_K* w = static_cast<const BlockQ3_K*>(vw);
  const BlockQ8_K* x = static_cast<const BlockQ8_K*>(vx);
  const __m256i m3 = _mm256_set1_epi8(3);
  const __m256i four = _mm256_set1_epi8(4);
  float acc = 0.0f;
  for (int64_t b = 0; b < n / kQKK; ++b) {
    int8_t sc[16];
    unpack_q3k_scales(w[b].scales, sc);
    const __m256i hmask = load256(w[b].hmask);
    __m256i sumi = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i qs = load256(w[b].qs + 32 * h);
      for (int g = 0; g < 4; ++g) {
        const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * g), m3);
        const __m256i bit = _mm256_set1_epi8(static_cast<char>(1 << (4 * h + g)));
        // 4 where the high bit is clear: q = lo - 4*(!hbit).
        const __m256i sub = _mm256_and_si256(
            _mm256_cmpeq_epi8(_mm256_and_si256(hmask, bit), _mm256_setzero_si256()), four);
        const __m256i y = load256(x[b].qs + 128 * h + 32 * g);
        const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(lo, y), _mm256_maddubs_epi16(sub, y));
        const int k = 8 * h + 2 * g;
        const __m256i s = _mm256_set_m128i(_mm_set1_epi16(static_cast<short>(sc[k + 1] - 32)),
                                           _mm_set1_epi16(static_cast<short>(sc[k] - 32)));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, s));
      }
    }
    acc = fma_ss(x[b].d * h2f(w[b].d), static_cast<float>(hsum8(sumi)), acc);
  }
  return acc;
}

float dot_q2k(const void* vw, const void* vx, int64_t n) {
  const BlockQ2_K* w = static_cast<const BlockQ2_K*>(vw);
  const BlockQ8_K* x = static_cast<const BlockQ8_K*>(vx);
  const __m256i m3 = _mm256_set1_epi8(3);
  float acc = 0.0f;
  for (int64_t b = 0; b < n / kQKK; ++b) {
    __m256i sumi = _mm256_setzero_si256();
    int32_t imin = 0;
    for (int j = 0; j < 16; ++j) imin += (w[b].scales[j] >> 4) * x[b].bsums[j];
    for (int h = 0; h < 2; ++h) {
      const __m256i qs = load256(w[b].qs + 32 * h);
      for (int g = 0; g < 4; ++g) {
        const __m256i q = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * g), m3);
        const __m256i p = _mm256_maddubs_epi16(q, load256(x[b].qs + 128 * h + 32 * g));
        const int k = 8 * h + 2 * g;
        const __m256i s = _mm256_set_m128i(_mm_set1_epi16(w[b].scales[k + 1] & 0xF),
                                           _mm_set1_epi16(w[b].scales[k] & 0xF));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, s));
      }
    }
    const float d = x[b].d * h2f(w[b].d);
    const float dmin = x[b].d * h2f(w[b].dmin);
    acc = fma_ss(d, static_cast<float>(hsum8(sumi)), acc);
    acc = fma_ss(-dmin, static_cast<float>(imin), acc);
  }
  return acc;
}

// ---- float formats: 4 x 8 lanes, canonical 32-lane order --------------------------

inline float reduce_lanes(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  const __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
  const __m128 t = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  const __m128 u = _mm_add_ps(t, _mm_movehl_ps(t, t));
  return _mm_cvtss_f32(_mm_add_ss(u, _mm_movehdup_ps(u)));
}

inline __m256 load_f16x8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline __m256 load_bf16x8(const uint16_t* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

// LoadA/LoadB: 8 floats from element i; ScalarA/ScalarB: one element.
#define HEARTH_LANES_DOT(NAME, TA, TB, LOADA, LOADB, SCA, SCB)                             \
  float NAME(const TA* a, const TB* b, int64_t n) {                                        \
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),        \
                     _mm256_setzero_ps()};                                                 \
    const int64_t full = n - n % 32;                                                       \
    for (int64_t i = 0; i < full; i += 32) {                                               \
      for (int k = 0; k < 4; ++k) {                                                        \
        acc[k] = _mm256_fmadd_ps(LOADA(a + i + 8 * k), LOADB(b + i + 8 * k), acc[k]);      \
      }                                                                                    \
    }                                                                                      \
    float r = reduce_lanes(acc[0], acc[1], acc[2], acc[3]);                                \
    for (int64_t i = full; i < n; ++i) r = fma_ss(SCA(a[i]), SCB(b[i]), r);               \
    return r;                                                                              \
  }

inline __m256 load_f32x8(const float* p) { return _mm256_loadu_ps(p); }
inline float same(float v) { return v; }
inline float bf2f(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

HEARTH_LANES_DOT(lanes_f32, float, float, load_f32x8, load_f32x8, same, same)
HEARTH_LANES_DOT(lanes_f16, uint16_t, uint16_t, load_f16x8, load_f16x8, h2f, h2f)
HEARTH_LANES_DOT(lanes_bf16, uint16_t, uint16_t, load_bf16x8, load_bf16x8, bf2f, bf2f)
HEARTH_LANES_DOT(lanes_f16_f32, uint16_t, float, load_f16x8, load_f32x8, h2f, same)
#undef HEARTH_LANES_DOT

float dot_f32(const void* w, const void* x, int64_t n) {
  return lanes_f32(static_cast<const float*>(w), static_cast<const float*>(x), n);
}
float dot_f16(const void* w, const void* x, int64_t n) {
  return lanes_f16(static_cast<const uint16_t*>(w), static_cast<const uint16_t*>(x), n);
}
float dot_bf16(const void* w, const void* x, int64_t n) {
  return lanes_bf16(static_cast<const uint16_t*>(w), static_cast<const uint16_t*>(x), n);
}
float dot_f16_f32(const uint16_t* k, const float* q, int64_t n) { return lanes_f16_f32(k, q, n); }

void axpy_f16(float a, const uint16_t* x, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, load_f16x8(x + i), _mm256_loadu_ps(y + i)));
  }
  for (; i < n; ++i) y[i] = fma_ss(a, h2f(x[i]), y[i]);
}

// ---- tables ------------------------------------------------------------------------

// Adapters from the NT templates to the table's function types.
template <void (*K1)(const void*, const uint8_t*, size_t, int64_t, float*)>
float as_dot(const void* w, const void* x, int64_t n) {
  float out;
  K1(w, static_cast<const uint8_t*>(x), 0, n, &out);
  return out;
}
template <template <int> class K>
void as_multi(const void* w, const uint8_t* x, size_t stride, int nt, int64_t n, float* out) {
  switch (nt) {
    case 1: K<1>::run(w, x, stride, n, out); break;
    case 2: K<2>::run(w, x, stride, n, out); break;
    case 3: K<3>::run(w, x, stride, n, out); break;
    default: K<4>::run(w, x, stride, n, out); break;
  }
}
template <class Fmt>
struct Dot32 {
  template <int NT>
  struct K {
    static void run(const void* w, const uint8_t* x, size_t s, int64_t n, float* o) {
      dot32<Fmt, NT>(w, x, s, n, o);
    }
  };
};
template <int NT>
struct KQ4K {
  static void run(const void* w, const uint8_t* x, size_t s, int64_t n, float* o) {
    dot_k4<BlockQ4_K, decode_q4k, NT>(w, x, s, n, o);
  }
};
template <int NT>
struct KQ5K {
  static void run(const void* w, const uint8_t* x, size_t s, int64_t n, float* o) {
    dot_k4<BlockQ5_K, decode_q5k, NT>(w, x, s, n, o);
  }
};
template <int NT>
struct KQ6K {
  static void run(const void* w, const uint8_t* x, size_t s, int64_t n, float* o) {
    dot_q6k<NT>(w, x, s, n, o);
  }
};

}  // namespace
}  // namespace hearth::engine

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

// The table itself is built outside the target region: building it stores
// function addresses only, and must not execute AVX instructions on a CPU
// that lacks them.
namespace hearth::engine {
namespace {

template <template <int> class K>
void fill(KernelSet* k, gguf::TensorType t) {
  k->dot[static_cast<int>(t)] = as_dot<K<1>::run>;
  k->multi[static_cast<int>(t)] = as_multi<K>;
}

KernelSet make_avx2() {
  using T = gguf::TensorType;
  KernelSet k{};
  k.isa = "avx2";
  fill<Dot32<FmtQ4_0>::K>(&k, T::kQ4_0);
  fill<Dot32<FmtQ4_1>::K>(&k, T::kQ4_1);
  fill<Dot32<FmtQ5_0>::K>(&k, T::kQ5_0);
  fill<Dot32<FmtQ5_1>::K>(&k, T::kQ5_1);
  fill<Dot32<FmtQ8_0>::K>(&k, T::kQ8_0);
  fill<KQ4K>(&k, T::kQ4_K);
  fill<KQ5K>(&k, T::kQ5_K);
  fill<KQ6K>(&k, T::kQ6_K);
  k.dot[static_cast<int>(T::kQ2_K)] = dot_q2k;
  k.dot[static_cast<int>(T::kQ3_K)] = dot_q3k;
  k.dot[static_cast<int>(T::kF32)] = dot_f32;
  k.dot[static_cast<int>(T::kF16)] = dot_f16;
  k.dot[static_cast<int>(T::kBF16)] = dot_bf16;
  k.dot_f16_f32 = dot_f16_f32;
  k.axpy_f16 = axpy_f16;
  return k;
}

}  // namespace

const KernelSet* avx2_kernels() {
  static const KernelSet k = make_avx2();
  return &k;
}

}  // namespace hearth::engine

#endif  // x86
