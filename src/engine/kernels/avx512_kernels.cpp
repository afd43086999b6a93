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

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the masked-off source,
// which -Wmaybe-uninitialized reports inside the system header (a known false
// positive); every lane this file reads is written.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <cstring>

#include "engine/cpu_features.h"
#include "engine/quant/blocks.h"

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

inline __m128i load128(const void* p) {
  return _mm_loadu_si128(static_cast<const __m128i*>(p));
}
inline __m256i load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
inline float fma_ss(float a, float b, float c) {
  return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c)));
}
inline int32_t hsum8(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

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
  const __m512i idx = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
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
    xsum[t] = reinterpret_cast<const int32_t*>(row + q8_0_side_offset(nb) + 4 * nb);
    acc[t] = _mm_setzero_ps();
  }
  int64_t b = 0;
  for (; b + 16 <= nb; b += 16) {
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
      const __m512i isum = _mm512_sub_epi32(block_sums16(s), _mm512_slli_epi32(ysum, Fmt::kBiasShift));
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
      const __m256i d = _mm256_dpbusd_epi32(_mm256_setzero_si256(), Fmt::decode1(w[bb]),
                                            load256(xb[t][bb].qs));
      const int32_t isum = hsum8(d) - xsum[t][bb] * (1 << Fmt::kBiasShift);
      const float dd = _cvtsh_ss(w[bb].d) * xscale[t][bb];
      a[bb & 3] = fma_ss(dd, static_cast<float>(isum), a[bb & 3]);
    }
    out[t] = (a[0] + a[1]) + (a[2] + a[3]);
  }
}

template <class Fmt>
float dot1(const void* w, const void* x, int64_t n) {
  float out;
  dot32_512<Fmt, 1>(w, static_cast<const uint8_t*>(x), 0, n, &out);
  return out;
}
template <class Fmt>
void multi(const void* w, const uint8_t* x, size_t stride, int nt, int64_t n, float* out) {
  switch (nt) {
    case 1: dot32_512<Fmt, 1>(w, x, stride, n, out); break;
    case 2: dot32_512<Fmt, 2>(w, x, stride, n, out); break;
    case 3: dot32_512<Fmt, 3>(w, x, stride, n, out); break;
    default: dot32_512<Fmt, 4>(w, x, stride, n, out); break;
  }
}

}  // namespace
}  // namespace hearth::engine

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace hearth::engine {
namespace {

template <class Fmt>
void put(KernelSet* k, gguf::TensorType t) {
  k->dot[static_cast<int>(t)] = dot1<Fmt>;
  k->multi[static_cast<int>(t)] = multi<Fmt>;
}

KernelSet make_avx512() {
  using T = gguf::TensorType;
  // AVX-512 VNNI does not imply the VEX-encoded AVX-VNNI the base table may use.
  const KernelSet* base = cpu_features().avxvnni ? avxvnni_kernels() : avx2_kernels();
  KernelSet k = *base;
  k.isa = "avx512-vnni";
  put<Z4_0>(&k, T::kQ4_0);
  put<Z5_0>(&k, T::kQ5_0);
  put<Z8_0>(&k, T::kQ8_0);
  install_avx512_kquants(&k);
  return k;
}

}  // namespace

const KernelSet* avx512_kernels() {
  static const KernelSet k = make_avx512();
  return &k;
}

}  // namespace hearth::engine

#endif  // x86-64
