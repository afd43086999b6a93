// AVX-512 (F, BW, VL, VNNI) kernels for the k-quant weight formats against Q8_K
// activations: Q4_K, Q5_K, Q6_K, one token (`dot`) and the 4-token tile (`multi`).
//
// Same canonical order as the scalar reference (docs/engine-kernels.md): each
// super-block's integer sums (isum, and imin for Q4_K/Q5_K) are exact, then the
// float part is the reference's operations in the reference's order. What AVX-512
// changes is how the exact sums are formed: a zmm register holds 64 consecutive
// elements (two 32-element sub-blocks of Q4_K/Q5_K, four 16-element sub-blocks of
// Q6_K), so a super-block is four registers. Per pair of registers and token:
//
//   s_a = vpdpbusd(0, q_a, y_a)   int32 lane = 4 products of unsigned q, signed y
//   s_b = vpdpbusd(0, q_b, y_b)
//   p   = vpackssdw(s_a, s_b)     both as int16 (every lane fits: no saturation)
//   acc = vpdpwssd(acc, p, sc)    each int16 times its sub-block scale, pairwise
//
// Every lane of s fits int16 (bounds at each format), so the pack is exact and
// one vpdpwssd applies the scales of two registers (6 multiplies per 128
// elements instead of 8). Integer addition is associative, so any arrangement
// gives the reference's sums as long as nothing wraps: the bounds below keep
// every int32 partial sum far from 2^31.
//
// The weights of a super-block are decoded once and shared by the NT tokens of a
// tile; their sums are reduced together and the float part runs on one __m128
// (lane t = token t), which performs per lane exactly the scalar operations.
#include "engine/kernels/avx512_parts.h"
#include "engine/kernels/kernel_set.h"

#if defined(__x86_64__)

#include <cstring>
#include <utility>

#include "engine/quant/blocks.h"

// clang-format off
#include "engine/kernels/avx512_target_begin.inc"
// clang-format on

namespace hearth::engine {
namespace {

#include "engine/kernels/avx512_helpers.inc"
inline __m512i load512(const void* p) {
  return _mm512_loadu_si512(p);
}
// 32 bytes into both halves of a zmm.
inline __m512i broadcast256(const void* p) {
  return _mm512_broadcast_i64x4(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
}

// Lane t = sum of the 16 int32 lanes of input t.
inline __m128i hsum16x4(__m512i a, __m512i b, __m512i c, __m512i d) {
  // Per 128-bit lane: [a0+a2, b0+b2, a1+a3, b1+b3], then [a, b, c, d] lane sums.
  const __m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
  const __m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(c, d), _mm512_unpackhi_epi32(c, d));
  const __m512i abcd =
      _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
  const __m256i half =
      _mm256_add_epi32(_mm512_castsi512_si256(abcd), _mm512_extracti64x4_epi64(abcd, 1));
  return _mm_add_epi32(_mm256_castsi256_si128(half), _mm256_extracti128_si256(half, 1));
}

// Lane t = sum of the 8 int32 lanes of input t.
inline __m128i hsum8x4(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i abcd = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
  return _mm_add_epi32(_mm256_castsi256_si128(abcd), _mm256_extracti128_si256(abcd, 1));
}

// acc + sum over the 4 registers of q * y (y = 256 activations), each lane times
// its sub-block's scale as described at the top; scale[i] belongs to registers
// 2i, 2i+1. Lanes of the vpdpbusd results must fit int16.
inline __m512i scaled_sums(const __m512i q[4], const __m512i scale[2], const int8_t* y,
                           __m512i acc) {
  for (int i = 0; i < 2; ++i) {
    const __m512i sa = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[2 * i], load512(y + 128 * i));
    const __m512i sb =
        _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[2 * i + 1], load512(y + 128 * i + 64));
    acc = _mm512_dpwssd_epi32(acc, _mm512_packs_epi32(sa, sb), scale[i]);
  }
  return acc;
}

// ---- Q4_K / Q5_K -------------------------------------------------------------------
//
// 8 sub-blocks of 32 with 6-bit scales and mins. Register j holds sub-blocks 2j
// (bytes 0..31) and 2j+1 (bytes 32..63): the low and high nibbles of qs[32j..].
// Bounds: q <= 31 (Q5_K; 15 for Q4_K), |y| <= 128, so a vpdpbusd lane is at most
// 4 * 31 * 128 = 15872 in magnitude (fits int16: the pack is exact), and with a
// scale <= 63 the super-block sum is at most 256 * 31 * 128 * 63 < 2^26.
// Mins: vpmaddwd of the 16 int16 block sums (|bsum| <= 16 * 128) with each min
// (<= 63) doubled up: every partial sum is below 16 * 2048 * 63 < 2^21.
struct DecodedK4 {
  __m512i q[4];
  __m512i scale[2];  // for pack(q[2i], q[2i+1]): each int16 lane its sub-block's scale
  __m256i mins16;    // int16 lanes 2j, 2j+1: min of sub-block j (pairs with bsums)
};

// The 12 packed bytes of 6-bit scales and mins (scales.h: k4_unpack_scales) as
// bytes [scale 0..7, min 0..7]. With u0, u1, u2 the three little-endian words:
// scales 0..3 = u0 & 63, 4..7 = (u2 & 15) | (u0 >> 6) << 4; mins 0..3 = u1 & 63,
// 4..7 = (u2 >> 4 & 15) | (u1 >> 6) << 4, four bytes per 32-bit lane. Reads 16
// bytes (the block continues past the scales).
inline __m128i k4_scales_mins(const uint8_t* packed) {
  const __m128i u = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed));
  const __m128i low = _mm_and_si128(
      _mm_srlv_epi32(_mm_shuffle_epi32(u, _MM_SHUFFLE(2, 1, 2, 0)), _mm_setr_epi32(0, 0, 0, 4)),
      _mm_setr_epi32(0x3F3F3F3F, 0x0F0F0F0F, 0x3F3F3F3F, 0x0F0F0F0F));
  const __m128i high =
      _mm_and_si128(_mm_srli_epi32(_mm_shuffle_epi32(u, _MM_SHUFFLE(1, 1, 0, 0)), 2),
                    _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
  return _mm_or_si128(low, high);
}

inline void decode_k4_scales(const uint8_t* packed, DecodedK4* d) {
  const __m128i sm = k4_scales_mins(packed);
  d->mins16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm));
  // int32 lane j < 8 of pairs = scale j in both int16 halves (lanes 8..15: mins).
  __m512i pairs = _mm512_cvtepu8_epi32(sm);
  pairs = _mm512_or_si512(pairs, _mm512_slli_epi32(pairs, 16));
  // pack(q[2i], q[2i+1]), 128-bit lane k: int32 lanes 0-1 come from q[2i] lanes
  // 4k..4k+3 (sub-block 4i + k/2), lanes 2-3 from q[2i+1] (sub-block 4i + 2 + k/2).
  const __m512i pick0 = _mm512_setr_epi32(0, 0, 2, 2, 0, 0, 2, 2, 1, 1, 3, 3, 1, 1, 3, 3);
  d->scale[0] = _mm512_permutexvar_epi32(pick0, pairs);
  d->scale[1] = _mm512_permutexvar_epi32(_mm512_add_epi32(pick0, _mm512_set1_epi32(4)), pairs);
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
  // Bytes 0..31: 1, bytes 32..63: 2; shifted left by 2j for register j (stays
  // inside each byte: at most 2 << 6).
  const __m512i bit0 = _mm512_set_epi64(0x0202020202020202, 0x0202020202020202, 0x0202020202020202,
                                        0x0202020202020202, 0x0101010101010101, 0x0101010101010101,
                                        0x0101010101010101, 0x0101010101010101);
  for (int j = 0; j < 4; ++j) {
    const __mmask64 set = _mm512_test_epi8_mask(qh, _mm512_slli_epi64(bit0, 2 * j));
    const __m512i q = nibbles64(b.qs + 32 * j);
    d->q[j] = _mm512_mask_add_epi8(q, set, q, sixteen);
  }
}

// Integer sums of one token: *isum (zmm of partial sums) and *imin (ymm).
inline void sums_k4(const DecodedK4& d, const BlockQ8_K& x, __m512i* isum, __m256i* imin) {
  *isum = scaled_sums(d.q, d.scale, x.qs, _mm512_setzero_si512());
  *imin = _mm256_madd_epi16(load256(x.bsums), d.mins16);
}

// ---- Q6_K --------------------------------------------------------------------------
//
// 16 sub-blocks of 16, quants 0..63 stored unsigned (value q - 32), int8 scales.
// Register 2h+k holds elements 128h + 64k .. +63 (sub-blocks 8h + 4k .. +3):
// k = 0: low nibbles of ql[64h..64h+63], qh bits 0-1 (bytes 0..31), 2-3 (32..63);
// k = 1: high nibbles of the same, qh bits 4-5 and 6-7. The bias is taken off
// through the block sums: sum((q-32) y) = sum(q y) - 32 sum(bsum_j sc_j), the
// second term folded into the same accumulator by one more vpdpwssd with -32 sc_j.
// Bounds: a vpdpbusd lane is at most 4 * 63 * 128 = 32256 (fits int16: the pack
// is exact); times |scale| <= 128, 256 of them: < 2^28. Bias: |bsum| <= 2048 and
// |-32 sc| <= 4096 (both int16), 16 of them: < 2^27. So every int32 partial sum
// is below 2^29.
struct DecodedQ6K {
  __m512i q[4];
  __m512i scale[2];  // for pack(q[2i], q[2i+1]): each int16 lane its sub-block's scale
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
    const __m512i h0 =
        _mm512_and_si512(_mm512_mask_slli_epi16(_mm512_slli_epi16(qh, 4), 0xFFFF0000u, qh, 2), m2);
    const __m512i h1 = _mm512_and_si512(_mm512_mask_srli_epi16(qh, 0xFFFF0000u, qh, 2), m2);
    d->q[2 * h] = _mm512_or_si512(_mm512_and_si512(ql, m4), h0);
    d->q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4), h1);
  }
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
  // int32 lane j of pairs = scale j (as int16) in both halves.
  __m512i pairs = _mm512_cvtepu16_epi32(_mm256_cvtepi8_epi16(raw));
  pairs = _mm512_or_si512(pairs, _mm512_slli_epi32(pairs, 16));
  // pack(q[2i], q[2i+1]), 128-bit lane k: int32 lanes 0-1 come from q[2i] lanes
  // 4k..4k+3 (sub-block 8i + k), lanes 2-3 from q[2i+1] (sub-block 8i + 4 + k).
  const __m512i pick0 = _mm512_setr_epi32(0, 0, 4, 4, 1, 1, 5, 5, 2, 2, 6, 6, 3, 3, 7, 7);
  d->scale[0] = _mm512_permutexvar_epi32(pick0, pairs);
  d->scale[1] = _mm512_permutexvar_epi32(_mm512_add_epi32(pick0, _mm512_set1_epi32(8)), pairs);
  d->bias16 = _mm512_zextsi256_si512(_mm256_slli_epi16(_mm256_cvtepi8_epi16(raw), 5));
  d->bias16 = _mm512_sub_epi16(_mm512_setzero_si512(), d->bias16);
}

inline __m512i sums_q6k(const DecodedQ6K& d, const BlockQ8_K& x) {
  __m512i acc = _mm512_dpwssd_epi32(_mm512_setzero_si512(),
                                    _mm512_zextsi256_si512(load256(x.bsums)), d.bias16);
  return scaled_sums(d.q, d.scale, x.qs, acc);
}

// Format adapters for the driver below: the weight block, its decoded form, and
// the integer sums of one token against it (imin unused without mins).
struct FmtQ4K {
  using W = BlockQ4_K;
  using Decoded = DecodedK4;
  static constexpr bool kHasMin = true;
  static void decode(const W& b, Decoded* d) { decode_q4k(b, d); }
  static void sums(const Decoded& d, const BlockQ8_K& x, __m512i* isum, __m256i* imin) {
    sums_k4(d, x, isum, imin);
  }
  static uint16_t dmin(const W& b) { return b.dmin; }
};
struct FmtQ5K {
  using W = BlockQ5_K;
  using Decoded = DecodedK4;
  static constexpr bool kHasMin = true;
  static void decode(const W& b, Decoded* d) { decode_q5k(b, d); }
  static void sums(const Decoded& d, const BlockQ8_K& x, __m512i* isum, __m256i* imin) {
    sums_k4(d, x, isum, imin);
  }
  static uint16_t dmin(const W& b) { return b.dmin; }
};
struct FmtQ6K {
  using W = BlockQ6_K;
  using Decoded = DecodedQ6K;
  static constexpr bool kHasMin = false;
  static void decode(const W& b, Decoded* d) { decode_q6k(b, d); }
  static void sums(const Decoded& d, const BlockQ8_K& x, __m512i* isum, __m256i* imin) {
    *isum = sums_q6k(d, x);
    *imin = _mm256_setzero_si256();
  }
  static uint16_t dmin(const W&) { return 0; }
};

// Lanes K.. of v moved down to lanes 0.. (the rest don't matter).
template <int K>
inline __m128 lanes_from(__m128 v) {
  if constexpr (K == 0) {
    return v;
  } else {
    return _mm_castsi128_ps(_mm_srli_si128(_mm_castps_si128(v), 4 * K));
  }
}

// The float part of one super-block, whose values sit at lanes K.. of the inputs,
// folded into acc (lane t = token t).
template <int K, bool kHasMin>
inline __m128 fold(__m128 acc, __m128 d, __m128 fsum, __m128 dmin, __m128 fmin) {
  acc = _mm_fmadd_ps(lanes_from<K>(d), lanes_from<K>(fsum), acc);
  if constexpr (kHasMin) acc = _mm_fnmadd_ps(lanes_from<K>(dmin), lanes_from<K>(fmin), acc);
  return acc;
}

// SB consecutive super-blocks from b against NT tokens (NT * SB <= 4). The exact
// sums of all NT * SB pairs are reduced together into one __m128i (lane s*NT + t
// = super-block b+s, token t), then folded into acc (lane t = token t) one
// super-block after the other, as the reference does:
//   d = x.d * d_w; acc = fma(d, isum, acc);
//   dmin = x.d * dmin_w; acc = fma(-dmin, imin, acc)  (fnmadd rounds the same).
// Grouping super-blocks lets a single token fill the four lanes of a reduction.
template <class Fmt, int NT, int SB>
[[gnu::always_inline]] inline __m128 step(const typename Fmt::W* w, const BlockQ8_K* const row[NT],
                                          int64_t b, __m128 acc) {
  constexpr int kLanes = NT * SB;
  static_assert(kLanes <= 4);
  __m512i isum[4];
  __m256i imin[4];
  typename Fmt::Decoded dec;
  for (int s = 0; s < SB; ++s) {
    Fmt::decode(w[b + s], &dec);
    for (int t = 0; t < NT; ++t) {
      Fmt::sums(dec, row[t][b + s], &isum[s * NT + t], &imin[s * NT + t]);
    }
  }
  for (int i = kLanes; i < 4; ++i) {
    isum[i] = _mm512_setzero_si512();
    imin[i] = _mm256_setzero_si256();
  }
  const auto xd = [&](int i) { return i < kLanes ? row[i % NT][b + i / NT].d : 0.0f; };
  const auto wd = [&](int i) { return static_cast<short>(i < kLanes ? w[b + i / NT].d : 0); };
  const __m128 xs = _mm_setr_ps(xd(0), xd(1), xd(2), xd(3));
  const __m128 d =
      _mm_mul_ps(xs, _mm_cvtph_ps(_mm_setr_epi16(wd(0), wd(1), wd(2), wd(3), 0, 0, 0, 0)));
  const __m128 fsum = _mm_cvtepi32_ps(hsum16x4(isum[0], isum[1], isum[2], isum[3]));
  __m128 dmin = _mm_setzero_ps(), fmin = _mm_setzero_ps();
  if constexpr (Fmt::kHasMin) {
    const auto wm = [&](int i) {
      return static_cast<short>(i < kLanes ? Fmt::dmin(w[b + i / NT]) : 0);
    };
    dmin = _mm_mul_ps(xs, _mm_cvtph_ps(_mm_setr_epi16(wm(0), wm(1), wm(2), wm(3), 0, 0, 0, 0)));
    fmin = _mm_cvtepi32_ps(hsum8x4(imin[0], imin[1], imin[2], imin[3]));
  }
  // Super-blocks s = 0..SB-1 in order (lanes s*NT..).
  const auto fold_all = [&]<int... S>(std::integer_sequence<int, S...>) {
    ((acc = fold<S * NT, Fmt::kHasMin>(acc, d, fsum, dmin, fmin)), ...);
  };
  fold_all(std::make_integer_sequence<int, SB>());
  return acc;
}

// One weight row against NT activation rows (row t at x + t * x_stride).
template <class Fmt, int NT>
void dot_kquant(const void* vw, const uint8_t* x, size_t x_stride, int64_t n, float* out) {
  constexpr int kGroup = 4 / NT;  // super-blocks per reduction
  const auto* w = static_cast<const typename Fmt::W*>(vw);
  const BlockQ8_K* row[NT];
  for (int t = 0; t < NT; ++t) {
    row[t] = reinterpret_cast<const BlockQ8_K*>(x + static_cast<size_t>(t) * x_stride);
  }
  const int64_t nb = n / kQKK;
  __m128 acc = _mm_setzero_ps();
  int64_t b = 0;
  for (; b + kGroup <= nb; b += kGroup) {
    prefetch_row_ahead(w + b, kGroup * sizeof(typename Fmt::W));
    acc = step<Fmt, NT, kGroup>(w, row, b, acc);
  }
  for (; b < nb; ++b) acc = step<Fmt, NT, 1>(w, row, b, acc);
  float a[4];
  _mm_storeu_ps(a, acc);
  for (int t = 0; t < NT; ++t) out[t] = a[t];
}

// ---- entry points ------------------------------------------------------------------

template <class Fmt>
float dot1(const void* w, const void* x, int64_t n) {
  float out;
  dot_kquant<Fmt, 1>(w, static_cast<const uint8_t*>(x), 0, n, &out);
  return out;
}
template <class Fmt>
void multi(const void* w, const uint8_t* x, size_t stride, int nt, int64_t n, float* out) {
  switch (nt) {
    case 1:
      dot_kquant<Fmt, 1>(w, x, stride, n, out);
      break;
    case 2:
      dot_kquant<Fmt, 2>(w, x, stride, n, out);
      break;
    case 3:
      dot_kquant<Fmt, 3>(w, x, stride, n, out);
      break;
    default:
      dot_kquant<Fmt, 4>(w, x, stride, n, out);
      break;
  }
}

}  // namespace
}  // namespace hearth::engine

#include "engine/kernels/x86_target_end.inc"

// Installed outside the target region: storing function addresses executes no
// AVX-512 instruction.
namespace hearth::engine {
namespace {

template <class Fmt>
void put(KernelSet* k, gguf::TensorType t) {
  k->dot[static_cast<int>(t)] = dot1<Fmt>;
  k->multi[static_cast<int>(t)] = multi<Fmt>;
}

}  // namespace

void install_avx512_kquants(KernelSet* k) {
  using T = gguf::TensorType;
  put<FmtQ4K>(k, T::kQ4_K);
  put<FmtQ5K>(k, T::kQ5_K);
  put<FmtQ6K>(k, T::kQ6_K);
}

}  // namespace hearth::engine

#endif  // x86-64
