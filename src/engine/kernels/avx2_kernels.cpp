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
#include "engine/kernels/avx2_parts.h"
#include "engine/kernels/kernel_set.h"

#if defined(__x86_64__) || defined(__i386__)

#include <cstring>

#include "engine/quant/blocks.h"
#include "engine/quant/scales.h"

// clang-format off
#include "engine/kernels/avx2_target_begin.inc"
// clang-format on

namespace hearth::engine {
namespace {

#include "engine/kernels/x86_dot32.inc"

// ---- k-quants x Q8_K -------------------------------------------------------------

// Integer part of one super-block against one activation block; returns isum and
// sets *imin (the min-term integer sum; 0 for formats without mins).
// Q4_K: 8 sub-blocks of 32, unsigned 4-bit quants, 6-bit scales and mins.
struct DecodedQ4K {
  __m256i q[8];
  __m256i scale[8];
  __m256i mins16;  // int16 lanes 2j, 2j+1 = min of sub-block j (pairs with the 16 bsums)
};
inline __m256i expand_mins(const uint8_t mins[8]) {
  const __m128i m = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(mins));
  return _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m, m));
}
inline void decode_q4k(const BlockQ4_K& b, DecodedQ4K* d) {
  uint8_t sc[8], mins[8];
  k4_unpack_scales(b.scales, sc, mins);
  d->mins16 = expand_mins(mins);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  for (int j = 0; j < 4; ++j) {
    const __m256i raw = load256(b.qs + 32 * j);
    d->q[2 * j] = _mm256_and_si256(raw, m4);
    d->q[2 * j + 1] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
  }
  const __m256i sc16 = _mm256_broadcastsi128_si256(
      _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc))));
  for (int j = 0; j < 8; ++j) d->scale[j] = _mm256_shuffle_epi8(sc16, pick16(j, j));
}
struct DecodedQ5K : DecodedQ4K {};
inline void decode_q5k(const BlockQ5_K& b, DecodedQ4K* d) {
  uint8_t sc[8], mins[8];
  k4_unpack_scales(b.scales, sc, mins);
  d->mins16 = expand_mins(mins);
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
  const __m256i sc16 = _mm256_broadcastsi128_si256(
      _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc))));
  for (int j = 0; j < 8; ++j) d->scale[j] = _mm256_shuffle_epi8(sc16, pick16(j, j));
}

// Quants <= 31 unsigned: maddubs pairs <= 31*127*2; times a 6-bit scale in madd.
// Mins: madd of the 16 block sums with the doubled mins (|bsum| <= 16*127,
// min <= 63: exact in int32).
inline void isum_k4(const DecodedQ4K& d, const BlockQ8_K& x, int32_t* isum, int32_t* imin) {
  __m256i sumi = _mm256_setzero_si256();
  for (int j = 0; j < 8; ++j) {
    const __m256i p = _mm256_maddubs_epi16(d.q[j], load256(x.qs + 32 * j));
    sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, d.scale[j]));
  }
  const __m256i mins = _mm256_madd_epi16(load256(x.bsums), d.mins16);
  hsum8x2(sumi, mins, isum, imin);
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
      const BlockQ8_K& xb =
          reinterpret_cast<const BlockQ8_K*>(x + static_cast<size_t>(t) * x_stride)[b];
      int32_t isum, imin;
      isum_k4(dec, xb, &isum, &imin);
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
  __m256i scales16;  // the 16 sub-block scales as int16 (pairs with the bsums)
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
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
  d->scales16 = _mm256_cvtepi8_epi16(raw);
  // Scales 0..7 and 8..15 as int16, each copied into both 128-bit halves.
  const __m256i first = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(raw));
  const __m256i second = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(_mm_srli_si128(raw, 8)));
  for (int g = 0; g < 4; ++g) {
    d->scale[g] = _mm256_shuffle_epi8(first, pick16(2 * g, 2 * g + 1));
    d->scale[g + 4] = _mm256_shuffle_epi8(second, pick16(2 * g, 2 * g + 1));
  }
}
// maddubs pairs <= 63*127*2 = 16002; madd by |scale| <= 128 fits int32.
inline int32_t isum_q6k(const DecodedQ6K& d, const BlockQ8_K& x) {
  __m256i sumi = _mm256_setzero_si256();
  for (int g = 0; g < 8; ++g) {
    const __m256i p = _mm256_maddubs_epi16(d.q[g], load256(x.qs + 32 * g));
    sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, d.scale[g]));
  }
  int32_t total, bias;
  hsum8x2(sumi, _mm256_madd_epi16(load256(x.bsums), d.scales16), &total, &bias);
  return total - 32 * bias;
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
      const BlockQ8_K& xb =
          reinterpret_cast<const BlockQ8_K*>(x + static_cast<size_t>(t) * x_stride)[b];
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
        const __m256i p =
            _mm256_sub_epi16(_mm256_maddubs_epi16(lo, y), _mm256_maddubs_epi16(sub, y));
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

inline __m256 load_f16x8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline __m256 load_bf16x8(const uint16_t* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

// LoadA/LoadB: 8 floats from element i; ScalarA/ScalarB: one element. PF > 0: prefetch
// a's bytes PF ahead (the F16 weight row of decode: one 4 KiB row per call at
// tinyllama's width, rows back to back; the hardware prefetcher starts over at every
// 4 KiB page, so without it each row's first lines came in at full latency; see
// kF16PrefetchBytes). The prefetch does not touch the arithmetic.
#define HEARTH_LANES_DOT(NAME, TA, TB, LOADA, LOADB, SCA, SCB, PF)                    \
  float NAME(const TA* a, const TB* b, int64_t n) {                                   \
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),   \
                     _mm256_setzero_ps()};                                            \
    const int64_t full = n - n % 32;                                                  \
    for (int64_t i = 0; i < full; i += 32) {                                          \
      if constexpr ((PF) > 0) {                                                       \
        _mm_prefetch(reinterpret_cast<const char*>(a + i) + (PF), _MM_HINT_T0);       \
      }                                                                               \
      for (int k = 0; k < 4; ++k) {                                                   \
        acc[k] = _mm256_fmadd_ps(LOADA(a + i + 8 * k), LOADB(b + i + 8 * k), acc[k]); \
      }                                                                               \
    }                                                                                 \
    float r = reduce_lanes(acc[0], acc[1], acc[2], acc[3]);                           \
    for (int64_t i = full; i < n; ++i) r = fma_ss(SCA(a[i]), SCB(b[i]), r);           \
    return r;                                                                         \
  }

inline __m256 load_f32x8(const float* p) {
  return _mm256_loadu_ps(p);
}
inline float same(float v) {
  return v;
}
inline float bf2f(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

HEARTH_LANES_DOT(lanes_f32, float, float, load_f32x8, load_f32x8, same, same, 0)
HEARTH_LANES_DOT(lanes_f16, uint16_t, uint16_t, load_f16x8, load_f16x8, h2f, h2f, kF16PrefetchBytes)
HEARTH_LANES_DOT(lanes_bf16, uint16_t, uint16_t, load_bf16x8, load_bf16x8, bf2f, bf2f, 0)
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
// ---- tables ------------------------------------------------------------------------

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

#include "engine/kernels/x86_target_end.inc"

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
  install_avx2_quantizers(&k);
  install_avx2_q8_panels(&k);
  install_avx2_kquant_panels(&k);
  install_avx2_f16_gemm(&k);
  install_avx2_row_groups(&k);
  install_avx2_group_gemm(&k);
  install_avx2_model_kernels(&k);
  return k;
}

}  // namespace

const KernelSet* avx2_kernels() {
  static const KernelSet k = make_avx2();
  return &k;
}

}  // namespace hearth::engine

#endif  // x86
