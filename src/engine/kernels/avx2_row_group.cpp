// AVX2 decode mat-vec for Q4_0: kRowGroup (8) consecutive weight rows against one
// Q8_0 activation row per call, straight from the GGUF layout or from a group the
// weight arena interleaved at load (engine/row_group_layout.h). Q4_K and Q6_K
// from interleaved groups only (at the end of the file).
//
// Why: the one-row dot (x86_dot32.inc) forms each block's integer sum across the 8
// lanes of a register and then needs a horizontal reduction per block, plus a
// 4-way gather of the block scales; on AVX2 that costs ~13 vector uops per block
// and leaves decode compute-bound (one thread reads ~16 GB/s from L3). Here the
// 16 quant bytes of a block of 8 rows are loaded and transposed in registers so
// that one register holds the same 4-byte group of every row (the prefill panel's
// arrangement, docs/engine-kernels.md, but never stored): the activation's 4 bytes
// are broadcast and each row's block sum builds up in its own lane, with no
// horizontal reduction, and the 8 rows' scales convert in one instruction. An
// interleaved group of 16 rows already lies in that arrangement: its kernel is the
// same arithmetic on plain 32-byte loads, each broadcast shared by two registers of
// rows (~1.8x the GGUF-layout kernel's speed on one thread).
//
// Same canonical order as the dot (bit for bit): the block sum is exact, then
// acc[b % 4] = fma(dw * dx, float(isum), acc[b % 4]) in block order, the result is
// (acc0 + acc1) + (acc2 + acc3); every step is lane-wise, one lane per row.
//
// Integer range: a stored quant is 0..15 (q + 8) and activations are clamped to
// +-127, so a maddubs pair is at most 2 * 15 * 127 = 3810 in magnitude and all 8
// groups of a block add up in int16 (<= 30480) before one madd widens them. The bias
// comes off through the activation's block sum: isum = sum(q x) - 8 * sum(x).
#include "engine/kernels/avx2_parts.h"

#if defined(__x86_64__) || defined(__i386__)

#include <cstddef>
#include <cstring>

#include "engine/quant/blocks.h"

// clang-format off
#include "engine/kernels/avx2_target_begin.inc"
// clang-format on

namespace hearth::engine {
namespace {

inline uint64_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline __m256i load_pair(const uint8_t* lo, const uint8_t* hi) {
  return _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(hi),
                             reinterpret_cast<const __m128i*>(lo));
}

// The fp16 scales of 8 rows (row r's at p + r * s) as 8 floats. Assembled in
// general registers: the vector shuffle ports are the busy ones here.
inline __m256 scales8(const uint8_t* p, size_t s) {
  const uint64_t lo =
      load_u16(p) | load_u16(p + s) << 16 | load_u16(p + 2 * s) << 32 | load_u16(p + 3 * s) << 48;
  const uint64_t hi = load_u16(p + 4 * s) | load_u16(p + 5 * s) << 16 | load_u16(p + 6 * s) << 32 |
                      load_u16(p + 7 * s) << 48;
  return _mm256_cvtph_ps(_mm_set_epi64x(static_cast<long long>(hi), static_cast<long long>(lo)));
}

// One Q4_0 block of 8 rows (row r's block at p + r * s) against one Q8_0 activation
// block: the 8 exact integer sums sum(q x), one per lane (bias not yet removed).
inline __m256i block_sums(const uint8_t* p, size_t s, const int8_t* xq) {
  const uint8_t* q = p + offsetof(BlockQ4_0, qs);
  // a_i: row i's 16 bytes in the low half, row i + 4's in the high half.
  const __m256i a0 = load_pair(q, q + 4 * s);
  const __m256i a1 = load_pair(q + s, q + 5 * s);
  const __m256i a2 = load_pair(q + 2 * s, q + 6 * s);
  const __m256i a3 = load_pair(q + 3 * s, q + 7 * s);
  // 4x4 dword transpose in each half: v_m = dword m of rows 0..7, in row order.
  const __m256i t0 = _mm256_unpacklo_epi32(a0, a1);
  const __m256i t1 = _mm256_unpackhi_epi32(a0, a1);
  const __m256i t2 = _mm256_unpacklo_epi32(a2, a3);
  const __m256i t3 = _mm256_unpackhi_epi32(a2, a3);
  const __m256i v[4] = {_mm256_unpacklo_epi64(t0, t2), _mm256_unpackhi_epi64(t0, t2),
                        _mm256_unpacklo_epi64(t1, t3), _mm256_unpackhi_epi64(t1, t3)};
  // Byte j of dword m holds element 4m + j (low nibble) and 16 + 4m + j (high):
  // activation dwords m and 4 + m.
  const __m256i nib = _mm256_set1_epi8(0x0F);
  __m256i sum = _mm256_setzero_si256();
  for (int m = 0; m < 4; ++m) {
    const __m256i lo = _mm256_and_si256(v[m], nib);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v[m], 4), nib);
    sum = _mm256_add_epi16(sum, _mm256_maddubs_epi16(lo, _mm256_set1_epi32(load_i32(xq + 4 * m))));
    sum = _mm256_add_epi16(sum,
                           _mm256_maddubs_epi16(hi, _mm256_set1_epi32(load_i32(xq + 16 + 4 * m))));
  }
  return _mm256_madd_epi16(sum, _mm256_set1_epi16(1));
}

// acc = fma(dw * dx, float(isum - 8 * sum(x)), acc) for block b, given the 8 rows'
// scales dw and exact sums isum.
inline __m256 fold(__m256 dw, __m256i isum, int64_t b, const float* xd, const int32_t* xsum,
                   __m256 acc) {
  isum = _mm256_sub_epi32(isum, _mm256_set1_epi32(xsum[b] * 8));
  const __m256 dd = _mm256_mul_ps(dw, _mm256_broadcast_ss(xd + b));
  return _mm256_fmadd_ps(dd, _mm256_cvtepi32_ps(isum), acc);
}

// Block b of the 8 rows in the GGUF layout.
inline __m256 fold_block(const uint8_t* w, size_t s, int64_t b, const BlockQ8_0* xb,
                         const float* xd, const int32_t* xsum, __m256 acc) {
  const uint8_t* p = w + static_cast<size_t>(b) * sizeof(BlockQ4_0);
  return fold(scales8(p, s), block_sums(p, s, xb[b].qs), b, xd, xsum, acc);
}

inline void store_tree(const __m256 acc[4], float* out) {
  _mm256_storeu_ps(out,
                   _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
}

void group_dot_q4_0(const void* vw, size_t s, const uint8_t* x, int64_t n, float* out) {
  const auto* w = static_cast<const uint8_t*>(vw);
  const int64_t nb = n / kQK32;
  const auto* xb = reinterpret_cast<const BlockQ8_0*>(x);
  const auto* xd = reinterpret_cast<const float*>(x + q8_0_side_offset(nb));
  const auto* xsum = reinterpret_cast<const int32_t*>(x + q8_0_sums_offset(nb));
  // The next group's rows (contiguous in a tensor: 8 * s bytes) are fetched while
  // this one is computed, the same fraction of them per block as this group reads.
  const uint8_t* next = w + 8 * s;
  const size_t next_per_block = 8 * s / static_cast<size_t>(nb);
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    const uint8_t* ahead = next + static_cast<size_t>(b) * next_per_block;
    for (size_t off = 0; off < 4 * next_per_block; off += 64)
      _mm_prefetch(ahead + off, _MM_HINT_T0);
    acc[0] = fold_block(w, s, b, xb, xd, xsum, acc[0]);
    acc[1] = fold_block(w, s, b + 1, xb, xd, xsum, acc[1]);
    acc[2] = fold_block(w, s, b + 2, xb, xd, xsum, acc[2]);
    acc[3] = fold_block(w, s, b + 3, xb, xd, xsum, acc[3]);
  }
  for (; b < nb; ++b) acc[b & 3] = fold_block(w, s, b, xb, xd, xsum, acc[b & 3]);
  store_tree(acc, out);
}

// One interleaved group of 16 rows (engine/row_group_layout.h): per block 32 bytes
// of scales, then the four quant words of rows 0..7 and 8..15 (64 bytes each). The
// two halves are two row groups sharing each activation broadcast. The group is one
// contiguous stream, but from memory the hardware prefetchers alone do not run far
// enough ahead of a decode step's few instructions per byte: while a block is
// computed, the same block of the next group (right after this one in the matrix,
// 16 rows of row_stride bytes on) is asked for into L2. A prefetch past the matrix's
// end is harmless.
void group_dot_q4_0_interleaved(const void* vg, size_t row_stride, const uint8_t* x, int64_t n,
                                float* out) {
  const auto* g = static_cast<const uint8_t*>(vg);
  const int64_t nb = n / kQK32;
  const auto* xb = reinterpret_cast<const BlockQ8_0*>(x);
  const auto* xd = reinterpret_cast<const float*>(x + q8_0_side_offset(nb));
  const auto* xsum = reinterpret_cast<const int32_t*>(x + q8_0_sums_offset(nb));
  const __m256i nib = _mm256_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 lo_acc[4], hi_acc[4];  // rows 0..7 and 8..15, one per phase
  for (int k = 0; k < 4; ++k) lo_acc[k] = hi_acc[k] = _mm256_setzero_ps();
  const char* next = reinterpret_cast<const char*>(g) + kInterleavedRows * row_stride;
  const auto step = [&](int64_t b, __m256& acc_lo, __m256& acc_hi) {
    const uint8_t* p = g + static_cast<size_t>(b) * (kInterleavedRows * sizeof(BlockQ4_0));
    for (size_t o = 0; o < kInterleavedRows * sizeof(BlockQ4_0); o += 64)
      _mm_prefetch(next + static_cast<size_t>(b) * (kInterleavedRows * sizeof(BlockQ4_0)) + o,
                   _MM_HINT_T1);
    const int8_t* xq = xb[b].qs;
    __m256i sum_lo = _mm256_setzero_si256(), sum_hi = _mm256_setzero_si256();
    for (int m = 0; m < 4; ++m) {
      const __m256i v_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 + 64 * m));
      const __m256i v_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 + 64 * m));
      // Byte j of dword m holds element 4m + j (low nibble) and 16 + 4m + j (high).
      const __m256i x_lo = _mm256_set1_epi32(load_i32(xq + 4 * m));
      const __m256i x_hi = _mm256_set1_epi32(load_i32(xq + 16 + 4 * m));
      sum_lo = _mm256_add_epi16(sum_lo, _mm256_maddubs_epi16(_mm256_and_si256(v_lo, nib), x_lo));
      sum_lo = _mm256_add_epi16(
          sum_lo, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v_lo, 4), nib), x_hi));
      sum_hi = _mm256_add_epi16(sum_hi, _mm256_maddubs_epi16(_mm256_and_si256(v_hi, nib), x_lo));
      sum_hi = _mm256_add_epi16(
          sum_hi, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v_hi, 4), nib), x_hi));
    }
    const __m256 d_lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m256 d_hi = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)));
    acc_lo = fold(d_lo, _mm256_madd_epi16(sum_lo, ones), b, xd, xsum, acc_lo);
    acc_hi = fold(d_hi, _mm256_madd_epi16(sum_hi, ones), b, xd, xsum, acc_hi);
  };
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    for (int k = 0; k < 4; ++k) step(b + k, lo_acc[k], hi_acc[k]);
  }
  for (; b < nb; ++b) step(b, lo_acc[b & 3], hi_acc[b & 3]);
  store_tree(lo_acc, out);
  store_tree(hi_acc, out + 8);
}

// Q4_K, one interleaved group of 16 rows (engine/row_group_layout.h): per
// super-block (2304 bytes) the 16 rows' d (32 bytes), dmin (32), packed scale
// byte k = 0..11 of the 16 rows (16 bytes each) and quant word k = 0..31 of the
// 16 rows (64 bytes each: rows 0..7, then 8..15).
//
// The canonical order (dot_q4_k), lane-wise: per super-block the exact
// isum = sum_j sc_j * sum(q x over sub-block j) and imin = sum_j m_j * bsum_j,
// then acc = fma(d, isum, acc), acc = fma(-dmin, imin, acc), with d = xd * wd and
// dmin = xd * wdmin. Sub-block sums build in int16 (8 maddubs pairs of at most
// 2 * 15 * 127 each: <= 30480) and widen in one madd against the scale, which sits
// in both int16 halves of its row's dword.
struct Q4KScales {
  __m128i sc[8], mn[8];  // sub-block j's 6-bit scale / min of rows 0..15, a byte each
};
inline void q4k_scales(const uint8_t* p, Q4KScales* s) {
  __m128i b[12];
  for (int k = 0; k < 12; ++k) b[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
  const __m128i low6 = _mm_set1_epi8(63), low4 = _mm_set1_epi8(0x0F), low2 = _mm_set1_epi8(3);
  // Byte-wise (v >> 6) << 4 through 16-bit shifts: the masks drop what crosses bytes.
  const auto top2 = [&](__m128i v) {
    return _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(v, 6), low2), 4);
  };
  for (int j = 0; j < 4; ++j) {
    s->sc[j] = _mm_and_si128(b[j], low6);
    s->mn[j] = _mm_and_si128(b[j + 4], low6);
    s->sc[j + 4] = _mm_or_si128(_mm_and_si128(b[j + 8], low4), top2(b[j]));
    s->mn[j + 4] = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(b[j + 8], 4), low4), top2(b[j + 4]));
  }
}
// Bytes 8h..8h+7 of v (rows 8h..8h+7) as int32 lanes.
inline __m256i rows_half(__m128i v, int h) {
  return _mm256_cvtepu8_epi32(h == 0 ? v : _mm_srli_si128(v, 8));
}
// The same with the value in both int16 halves (a madd multiplier).
inline __m256i pair16(__m256i v) {
  return _mm256_or_si256(v, _mm256_slli_epi32(v, 16));
}

void group_dot_q4_k_interleaved(const void* vg, size_t /*row_stride*/, const uint8_t* x, int64_t n,
                                float* out) {
  const auto* g = static_cast<const uint8_t*>(vg);
  const auto* xb = reinterpret_cast<const BlockQ8_K*>(x);
  const int64_t nb = n / kQKK;
  const __m256i nib = _mm256_set1_epi8(0x0F);
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* p = g + static_cast<size_t>(b) * (kInterleavedRows * sizeof(BlockQ4_K));
    const BlockQ8_K& xk = xb[b];
    Q4KScales s;
    q4k_scales(p + 64, &s);
    const uint8_t* q = p + 256;
    __m256i isum[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    __m256i imin[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    for (int c = 0; c < 4; ++c) {
      // The super-block two ahead, a quarter per chunk (the group's blocks, and the
      // next group, are one contiguous run).
      const uint8_t* ahead = p + 2 * kInterleavedRows * sizeof(BlockQ4_K) + c * 576;
      for (int off = 0; off < 576; off += 64)
        _mm_prefetch(reinterpret_cast<const char*>(ahead + off), _MM_HINT_T0);
      // Sub-blocks 2c (low nibbles) and 2c + 1 (high nibbles), rows 0..7 / 8..15.
      __m256i lo[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
      __m256i hi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
      for (int kk = 0; kk < 8; ++kk) {
        const uint8_t* w = q + static_cast<size_t>(8 * c + kk) * 64;
        const __m256i x_lo = _mm256_set1_epi32(load_i32(xk.qs + 64 * c + 4 * kk));
        const __m256i x_hi = _mm256_set1_epi32(load_i32(xk.qs + 64 * c + 32 + 4 * kk));
        for (int h = 0; h < 2; ++h) {
          const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 32 * h));
          lo[h] = _mm256_add_epi16(lo[h], _mm256_maddubs_epi16(_mm256_and_si256(v, nib), x_lo));
          hi[h] = _mm256_add_epi16(
              hi[h], _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), nib), x_hi));
        }
      }
      for (int h = 0; h < 2; ++h) {
        isum[h] =
            _mm256_add_epi32(isum[h], _mm256_madd_epi16(lo[h], pair16(rows_half(s.sc[2 * c], h))));
        isum[h] = _mm256_add_epi32(isum[h],
                                   _mm256_madd_epi16(hi[h], pair16(rows_half(s.sc[2 * c + 1], h))));
      }
    }
    for (int j = 0; j < 8; ++j) {
      // |bsum| <= 32 * 127 fits the low int16 of the dword; the min's high int16 is 0.
      const __m256i bs = _mm256_set1_epi32(xk.bsums[2 * j] + xk.bsums[2 * j + 1]);
      for (int h = 0; h < 2; ++h)
        imin[h] = _mm256_add_epi32(imin[h], _mm256_madd_epi16(rows_half(s.mn[j], h), bs));
    }
    const __m256 xd = _mm256_set1_ps(xk.d);
    for (int h = 0; h < 2; ++h) {
      const __m256 d = _mm256_mul_ps(
          xd, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * h))));
      const __m256 dmin = _mm256_mul_ps(
          xd, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 32 + 16 * h))));
      acc[h] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum[h]), acc[h]);
      acc[h] = _mm256_fnmadd_ps(dmin, _mm256_cvtepi32_ps(imin[h]), acc[h]);
    }
  }
  _mm256_storeu_ps(out, acc[0]);
  _mm256_storeu_ps(out + 8, acc[1]);
}

// Q6_K, one interleaved group of 16 rows (engine/row_group_layout.h): per
// super-block (3360 bytes) the 16 rows' d (32 bytes), scale j = 0..15 (16 bytes
// each), ql word k = 0..31 and qh word k = 0..15 (64 bytes each: rows 0..7, then
// 8..15).
//
// The canonical order (dot_q6_k), lane-wise: per super-block the exact
// isum = sum_j sc_j * sum over sub-block j of (q - 32) x, then
// acc = fma(xd * wd, float(isum), acc). Here the 6-bit q (0..63) goes into maddubs
// as it is and the bias comes off through the activation's sub-block sums:
// isum = sum_j sc_j * sum(q x) - 32 * sum_j sc_j * bsum_j, the same integer (at most
// 16 * 128 * 16 * 63 * 127 in magnitude before the bias: no int32 overflow). A
// maddubs pair is at most 2 * 63 * 127 = 16002, so two words of a sub-block add up
// in int16 before a madd against the scale (in both int16 halves) widens them.
//
// Where the elements are, for h = 0..1 (the super-block's 128-element halves) and
// k = 0..7: ql word 16h + k holds
// elements 128h + 4k + i (low nibbles) and 128h + 64 + 4k + i (high), ql word
// 16h + 8 + k elements 128h + 32 + 4k + i and 128h + 96 + 4k + i, and qh word 8h + k
// the top two bits of element 128h + 32g + 4k + i in its bits 2g, 2g + 1. That
// element is in sub-block 8h + 2g + k / 4. The loop runs rows 0..7 (`half` 0: the
// first 32 bytes of every 64-byte unit) and then rows 8..15, keeping one isum.

// Rows 8 * half .. 8 * half + 7 of 16 int8 scales, each as the int16 pair (s, s).
inline __m256i q6k_scale_pairs(const uint8_t* scales16, int half) {
  const __m128i s =
      _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales16 + 8 * half)));
  return _mm256_set_m128i(_mm_unpackhi_epi16(s, s), _mm_unpacklo_epi16(s, s));
}

void group_dot_q6_k_interleaved(const void* vg, size_t /*row_stride*/, const uint8_t* x, int64_t n,
                                float* out) {
  constexpr size_t kGroupBlock = kInterleavedRows * sizeof(BlockQ6_K);
  const auto* g = static_cast<const uint8_t*>(vg);
  const auto* xb = reinterpret_cast<const BlockQ8_K*>(x);
  const int64_t nb = n / kQKK;
  const __m256i nib = _mm256_set1_epi8(0x0F), top = _mm256_set1_epi8(0x30);
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* p = g + static_cast<size_t>(b) * kGroupBlock;
    const uint8_t* scales = p + 32;
    const uint8_t* ql = scales + 16 * 16;
    const uint8_t* qh = ql + 32 * 64;
    const BlockQ8_K& xk = xb[b];
    const uint8_t* ahead = p + 2 * kGroupBlock;  // the super-block two ahead, an eighth per pass
    for (int half = 0; half < 2; ++half) {
      // Sub-block j's scales of these 8 rows, for the bias here and both of the
      // sub-block's int16 sums below.
      __m256i sc[16];
      __m256i isum = _mm256_setzero_si256(), bias = _mm256_setzero_si256();
      for (int j = 0; j < 16; ++j) {
        sc[j] = q6k_scale_pairs(scales + 16 * j, half);
        // |bsum| <= 16 * 127 sits in the low int16 of the dword; the high one is 0.
        const __m256i bs = _mm256_set1_epi32(static_cast<uint16_t>(xk.bsums[j]));
        bias = _mm256_add_epi32(bias, _mm256_madd_epi16(sc[j], bs));
      }
      for (int h = 0; h < 2; ++h) {
        for (int kh = 0; kh < 2; ++kh) {
          const int pass = 4 * half + 2 * h + kh;
          for (int off = 0; off < 448; off += 64)
            _mm_prefetch(reinterpret_cast<const char*>(ahead + 448 * pass + off), _MM_HINT_T0);
          __m256i s16[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                            _mm256_setzero_si256()};
          for (int kk = 0; kk < 4; ++kk) {
            const int k = 4 * kh + kk;
            const auto word = [&](const uint8_t* base, int index) {
              return _mm256_loadu_si256(
                  reinterpret_cast<const __m256i*>(base + 64 * index + 32 * half));
            };
            const __m256i a = word(ql, 16 * h + k), c = word(ql, 16 * h + 8 + k);
            const __m256i bits = word(qh, 8 * h + k);
            // Bits 2g, 2g + 1 of each qh byte moved to bits 4, 5 (16-bit shifts: the
            // mask drops what crosses a byte).
            const __m256i q[4] = {
                _mm256_or_si256(_mm256_and_si256(a, nib),
                                _mm256_and_si256(_mm256_slli_epi16(bits, 4), top)),
                _mm256_or_si256(_mm256_and_si256(c, nib),
                                _mm256_and_si256(_mm256_slli_epi16(bits, 2), top)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), nib),
                                _mm256_and_si256(bits, top)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(c, 4), nib),
                                _mm256_and_si256(_mm256_srli_epi16(bits, 2), top))};
            for (int gi = 0; gi < 4; ++gi) {
              const __m256i xv = _mm256_set1_epi32(load_i32(xk.qs + 128 * h + 32 * gi + 4 * k));
              s16[gi] = _mm256_add_epi16(s16[gi], _mm256_maddubs_epi16(q[gi], xv));
            }
            if (kk % 2 == 1) {  // two words per int16 sum
              for (int gi = 0; gi < 4; ++gi) {
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(s16[gi], sc[8 * h + 2 * gi + kh]));
                s16[gi] = _mm256_setzero_si256();
              }
            }
          }
        }
      }
      isum = _mm256_sub_epi32(isum, _mm256_slli_epi32(bias, 5));
      const __m256 d = _mm256_mul_ps(
          _mm256_set1_ps(xk.d),
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * half))));
      acc[half] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum), acc[half]);
    }
  }
  _mm256_storeu_ps(out, acc[0]);
  _mm256_storeu_ps(out + 8, acc[1]);
}

}  // namespace
}  // namespace hearth::engine

#include "engine/kernels/x86_target_end.inc"

namespace hearth::engine {

void install_avx2_row_groups(KernelSet* k) {
  k->group_dot[static_cast<int>(gguf::TensorType::kQ4_0)] = group_dot_q4_0;
  k->group_dot_interleaved[static_cast<int>(gguf::TensorType::kQ4_0)] = group_dot_q4_0_interleaved;
  k->group_dot_interleaved[static_cast<int>(gguf::TensorType::kQ4_K)] = group_dot_q4_k_interleaved;
  k->group_dot_interleaved[static_cast<int>(gguf::TensorType::kQ6_K)] = group_dot_q6_k_interleaved;
}

}  // namespace hearth::engine

#endif  // x86
