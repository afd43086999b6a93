// AVX-512 (F, BW, VL, VNNI) kernels for the k-quant weight formats against Q8_K
// activations: Q4_K, Q5_K, Q6_K, one token (`dot`) and the 4-token tile (`multi`).
//
// Same canonical order as the scalar reference (docs/engine-kernels.md): each
// super-block's integer sums (isum, and imin for Q4_K/Q5_K) are exact, then the
// float part is the reference's operations in the reference's order. What AVX-512
// changes is how the exact sums are formed: a zmm register holds 64 consecutive
// elements (two 32-element sub-blocks of Q4_K/Q5_K, four 16-element sub-blocks of
// Q6_K), so a super-block is four registers. Per register and token:
//
//   s   = vpdpbusd(0, q, y)       int32 lane = 4 products of unsigned q, signed y
//   acc = vpdpwssd(acc, s, sc)    acc += low16(s) * sc + high16(s) * 0
//
// The second step multiplies each lane by its sub-block scale: every lane of `s`
// fits int16 (bounds at each format), so its low 16 bits are its value, and the
// scale vector holds the scale in the low half of each int32 lane and 0 in the
// high half (which would otherwise pair with s's sign bits). Integer addition is
// associative, so any arrangement gives the reference's sums as long as nothing
// wraps: the bounds below keep every int32 partial sum far from 2^31.
//
// The weights of a super-block are decoded once and shared by the NT tokens of a
// tile; their sums are reduced together and the float part runs on one __m128
// (lane t = token t), which performs per lane exactly the scalar operations.
#include "engine/kernels/avx512_parts.h"
#include "engine/kernels/kernel_set.h"

#if defined(__x86_64__)

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the masked-off source,
// which -Wmaybe-uninitialized reports inside the system header (a known false
// positive); every lane this file reads is written.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <cstring>

#include "engine/quant/blocks.h"
#include "engine/quant/scales.h"

#if defined(__clang__)
#pragma clang attribute push(                                                       \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,avx2,fma,f16c"))), \
    apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,avx2,fma,f16c")
#endif

namespace hearth::engine {
namespace {

inline __m256i load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
inline __m512i load512(const void* p) { return _mm512_loadu_si512(p); }
// 32 bytes into both halves of a zmm.
inline __m512i broadcast256(const void* p) {
  return _mm512_broadcast_i64x4(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
}
inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

// Lane t = sum of the 16 int32 lanes of v[t] (t < 4).
inline __m128i hsum16x4(__m512i a, __m512i b, __m512i c, __m512i d) {
  // Per 128-bit lane: [a0+a2, b0+b2, a1+a3, b1+b3], then [a, b, c, d] lane sums.
  const __m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
  const __m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(c, d), _mm512_unpackhi_epi32(c, d));
  const __m512i abcd =
      _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
  const __m256i half = _mm256_add_epi32(_mm512_castsi512_si256(abcd),
                                        _mm512_extracti64x4_epi64(abcd, 1));
  return _mm_add_epi32(_mm256_castsi256_si128(half), _mm256_extracti128_si256(half, 1));
}

// Per-token pieces of a tile: activation super-block b of token t.
template <int NT>
struct Tokens {
  const BlockQ8_K* row[NT];
  Tokens(const uint8_t* x, size_t stride) {
    for (int t = 0; t < NT; ++t) {
      row[t] = reinterpret_cast<const BlockQ8_K*>(x + static_cast<size_t>(t) * stride);
    }
  }
  // The activation scales of super-block b, lane t (0 in unused lanes).
  __m128 scales(int64_t b) const {
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int t = 0; t < NT; ++t) d[t] = row[t][b].d;
    return _mm_loadu_ps(d);
  }
};

template <int NT>
inline __m128i hsum_tokens(const __m512i s[NT]) {
  const __m512i z = _mm512_setzero_si512();
  return hsum16x4(s[0], NT > 1 ? s[1] : z, NT > 2 ? s[2] : z, NT > 3 ? s[3] : z);
}

template <int NT>
inline void store_tokens(__m128 acc, float* out) {
  float a[4];
  _mm_storeu_ps(a, acc);
  for (int t = 0; t < NT; ++t) out[t] = a[t];
}

// ---- Q4_K / Q5_K -------------------------------------------------------------------
//
// 8 sub-blocks of 32 with 6-bit scales and mins. Register j holds sub-blocks 2j
// (bytes 0..31) and 2j+1 (bytes 32..63): the low and high nibbles of qs[32j..].
// Bounds: q <= 31 (Q5_K; 15 for Q4_K), |y| <= 128, so a vpdpbusd lane is at most
// 4 * 31 * 128 = 15872 in magnitude (fits int16, as vpdpwssd needs), and with a
// scale <= 63 the super-block sum is at most 256 * 31 * 128 * 63 < 2^26.
// Mins: vpmaddwd of the 16 int16 block sums (|bsum| <= 16 * 128) with each min
// (<= 63) doubled up: every partial sum is below 16 * 2048 * 63 < 2^21.
struct DecodedK4 {
  __m512i q[4];
  __m512i scale[4];  // int32 lane: the scale of its sub-block (high int16 half 0)
  __m256i mins16;    // int16 lanes 2j, 2j+1: min of sub-block j (pairs with bsums)
};

inline void decode_k4_scales(const uint8_t* packed, DecodedK4* d) {
  uint8_t sc[8], mins[8];
  k4_unpack_scales(packed, sc, mins);
  const __m128i m = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(mins));
  d->mins16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m, m));
  // Lanes 0..7 of sc32 = the 8 scales as int32 (scales are unsigned: high half 0).
  const __m512i sc32 = _mm512_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc)));
  for (int j = 0; j < 4; ++j) {
    const __m512i pick = _mm512_inserti64x4(_mm512_set1_epi32(2 * j),
                                            _mm256_set1_epi32(2 * j + 1), 1);
    d->scale[j] = _mm512_permutexvar_epi32(pick, sc32);
  }
}

// Low nibbles of the 32 bytes at p in bytes 0..31, high nibbles in 32..63.
inline __m512i nibbles64(const uint8_t* p) {
  const __m512i raw = broadcast256(p);
  const __m512i hi = _mm512_mask_srli_epi16(raw, 0xFFFF0000u, raw, 4);
  return _mm512_and_si512(hi, _mm512_set1_epi8(0x0F));
}

inline void decode_q4k(const BlockQ4_K& b, DecodedK4* d) {
  decode_k4_scales(b.scales, d);
  for (int j = 0; j < 4; ++j) d->q[j] = nibbles64(b.qs + 32 * j);
}

inline void decode_q5k(const BlockQ5_K& b, DecodedK4* d) {
  decode_k4_scales(b.scales, d);
  // Fifth bit of element l of sub-block s: bit s of qh[l]. Register j tests bit
  // 2j in its low half and bit 2j+1 in its high half, and adds 16 where set.
  const __m512i qh = broadcast256(b.qh);
  const __m512i sixteen = _mm512_set1_epi8(16);
  for (int j = 0; j < 4; ++j) {
    const __m512i bit = _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << (2 * j))),
                                           _mm256_set1_epi8(static_cast<char>(2 << (2 * j))), 1);
    const __mmask64 set = _mm512_test_epi8_mask(qh, bit);
    const __m512i q = nibbles64(b.qs + 32 * j);
    d->q[j] = _mm512_mask_add_epi8(q, set, q, sixteen);
  }
}

// Integer sums of one token: *isum (zmm of partial sums) and *imin (ymm).
inline void sums_k4(const DecodedK4& d, const BlockQ8_K& x, __m512i* isum, __m256i* imin) {
  __m512i acc = _mm512_setzero_si512();
  for (int j = 0; j < 4; ++j) {
    const __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), d.q[j], load512(x.qs + 64 * j));
    acc = _mm512_dpwssd_epi32(acc, s, d.scale[j]);
  }
  *isum = acc;
  *imin = _mm256_madd_epi16(load256(x.bsums), d.mins16);
}

template <class WBlock, void (*Decode)(const WBlock&, DecodedK4*), int NT>
void dot_k4(const void* vw, const uint8_t* x, size_t x_stride, int64_t n, float* out) {
  const WBlock* w = static_cast<const WBlock*>(vw);
  const Tokens<NT> tok(x, x_stride);
  __m128 acc = _mm_setzero_ps();
  DecodedK4 dec;
  for (int64_t b = 0; b < n / kQKK; ++b) {
    Decode(w[b], &dec);
    __m512i isum[NT];
    __m512i imin[NT];
    for (int t = 0; t < NT; ++t) {
      __m256i m;
      sums_k4(dec, tok.row[t][b], &isum[t], &m);
      imin[t] = _mm512_zextsi256_si512(m);
    }
    const __m128 fsum = _mm_cvtepi32_ps(hsum_tokens<NT>(isum));
    const __m128 fmin = _mm_cvtepi32_ps(hsum_tokens<NT>(imin));
    // d = x.d * d_w, dmin = x.d * dmin_w; acc = fma(d, isum, acc);
    // acc = fma(-dmin, imin, acc) (fnmadd: -(dmin * imin) + acc, the same rounding).
    const __m128 xd = tok.scales(b);
    const __m128 d = _mm_mul_ps(xd, _mm_set1_ps(h2f(w[b].d)));
    const __m128 dmin = _mm_mul_ps(xd, _mm_set1_ps(h2f(w[b].dmin)));
    acc = _mm_fmadd_ps(d, fsum, acc);
    acc = _mm_fnmadd_ps(dmin, fmin, acc);
  }
  store_tokens<NT>(acc, out);
}

// ---- Q6_K --------------------------------------------------------------------------
//
// 16 sub-blocks of 16, quants 0..63 stored unsigned (value q - 32), int8 scales.
// Register 2h+k holds elements 128h + 64k .. +63 (sub-blocks 8h + 4k .. +3):
// k = 0: low nibbles of ql[64h..64h+63], qh bits 0-1 (bytes 0..31), 2-3 (32..63);
// k = 1: high nibbles of the same, qh bits 4-5 and 6-7. The bias is taken off
// through the block sums: sum((q-32) y) = sum(q y) - 32 sum(bsum_j sc_j), the
// second term folded into the same accumulator by one more vpdpwssd with -32 sc_j.
// Bounds: a vpdpbusd lane is at most 4 * 63 * 128 = 32256 (fits int16); times
// |scale| <= 128, 256 of them: < 2^28. Bias: |bsum| <= 2048 and |-32 sc| <= 4096
// (both int16), 16 of them: < 2^27. So every int32 partial sum is below 2^29.
struct DecodedQ6K {
  __m512i q[4];
  __m512i scale[4];  // int32 lane: scale of its sub-block in the low int16, 0 above
  __m512i bias16;    // int16 lanes 0..15: -32 * scale j (pairs with the bsums); 0 above
};

inline void decode_q6k(const BlockQ6_K& b, DecodedQ6K* d) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512i m2 = _mm512_set1_epi8(0x30);
  for (int h = 0; h < 2; ++h) {
    const __m512i ql = load512(b.ql + 64 * h);
    const __m512i qh = broadcast256(b.qh + 32 * h);
    // Bits 4-5 of each byte: for k = 0, qh << 4 (bytes 0..31) and qh << 2 (32..63);
    // for k = 1, qh (0..31) and qh >> 2 (32..63). 16-bit shifts: the bits that cross
    // into a neighbouring byte land outside 0x30 and are masked off.
    const __m512i h0 = _mm512_and_si512(
        _mm512_mask_slli_epi16(_mm512_slli_epi16(qh, 4), 0xFFFF0000u, qh, 2), m2);
    const __m512i h1 = _mm512_and_si512(_mm512_mask_srli_epi16(qh, 0xFFFF0000u, qh, 2), m2);
    d->q[2 * h] = _mm512_or_si512(_mm512_and_si512(ql, m4), h0);
    d->q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4), h1);
  }
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
  // int16 scales zero-extended to int32: low half the scale, high half 0.
  const __m512i sc32 = _mm512_cvtepu16_epi32(_mm256_cvtepi8_epi16(raw));
  for (int r = 0; r < 4; ++r) {
    const __m512i pick = _mm512_setr_epi32(4 * r, 4 * r, 4 * r, 4 * r, 4 * r + 1, 4 * r + 1,
                                           4 * r + 1, 4 * r + 1, 4 * r + 2, 4 * r + 2, 4 * r + 2,
                                           4 * r + 2, 4 * r + 3, 4 * r + 3, 4 * r + 3, 4 * r + 3);
    d->scale[r] = _mm512_permutexvar_epi32(pick, sc32);
  }
  d->bias16 = _mm512_zextsi256_si512(_mm256_slli_epi16(_mm256_cvtepi8_epi16(raw), 5));
  d->bias16 = _mm512_sub_epi16(_mm512_setzero_si512(), d->bias16);
}

inline __m512i sums_q6k(const DecodedQ6K& d, const BlockQ8_K& x) {
  __m512i acc = _mm512_dpwssd_epi32(_mm512_setzero_si512(),
                                    _mm512_zextsi256_si512(load256(x.bsums)), d.bias16);
  for (int r = 0; r < 4; ++r) {
    const __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), d.q[r], load512(x.qs + 64 * r));
    acc = _mm512_dpwssd_epi32(acc, s, d.scale[r]);
  }
  return acc;
}

template <int NT>
void dot_q6k(const void* vw, const uint8_t* x, size_t x_stride, int64_t n, float* out) {
  const BlockQ6_K* w = static_cast<const BlockQ6_K*>(vw);
  const Tokens<NT> tok(x, x_stride);
  __m128 acc = _mm_setzero_ps();
  DecodedQ6K dec;
  for (int64_t b = 0; b < n / kQKK; ++b) {
    decode_q6k(w[b], &dec);
    __m512i isum[NT];
    for (int t = 0; t < NT; ++t) isum[t] = sums_q6k(dec, tok.row[t][b]);
    const __m128 fsum = _mm_cvtepi32_ps(hsum_tokens<NT>(isum));
    // acc = fma(x.d * d_w, isum, acc).
    const __m128 d = _mm_mul_ps(tok.scales(b), _mm_set1_ps(h2f(w[b].d)));
    acc = _mm_fmadd_ps(d, fsum, acc);
  }
  store_tokens<NT>(acc, out);
}

// ---- entry points ------------------------------------------------------------------

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

template <template <int> class K>
float dot1(const void* w, const void* x, int64_t n) {
  float out;
  K<1>::run(w, static_cast<const uint8_t*>(x), 0, n, &out);
  return out;
}
template <template <int> class K>
void multi(const void* w, const uint8_t* x, size_t stride, int nt, int64_t n, float* out) {
  switch (nt) {
    case 1: K<1>::run(w, x, stride, n, out); break;
    case 2: K<2>::run(w, x, stride, n, out); break;
    case 3: K<3>::run(w, x, stride, n, out); break;
    default: K<4>::run(w, x, stride, n, out); break;
  }
}

}  // namespace
}  // namespace hearth::engine

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

// Installed outside the target region: storing function addresses executes no
// AVX-512 instruction.
namespace hearth::engine {
namespace {

template <template <int> class K>
void put(KernelSet* k, gguf::TensorType t) {
  k->dot[static_cast<int>(t)] = dot1<K>;
  k->multi[static_cast<int>(t)] = multi<K>;
}

}  // namespace

void install_avx512_kquants(KernelSet* k) {
  using T = gguf::TensorType;
  put<KQ4K>(k, T::kQ4_K);
  put<KQ5K>(k, T::kQ5_K);
  put<KQ6K>(k, T::kQ6_K);
}

}  // namespace hearth::engine

#endif  // x86-64
