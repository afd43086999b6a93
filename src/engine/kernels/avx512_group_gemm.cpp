// AVX-512 VNNI small-batch prefill for Q4_0 and Q4_K straight from the weight arena's
// interleaved groups (engine/row_group_layout.h): 16 rows against a few tokens.
//
// Why: a row of 2-64 tokens (a prefix hit's tail, a speculative verify row) went
// through the prefill panels, which first regrouped each interleaved group into plain
// rows and then packed those rows into a panel: two copies of every weight per matmul,
// which at 16 tokens cost more than the GEMM itself. The interleaved group already is
// the panel's arrangement: quant word m of the 16 rows (64 bytes) holds, per row, the
// low nibbles of elements 4m..4m+3 (the panel's group m) and the high nibbles of
// elements 16+4m..16+4m+3 (group 4 + m). So each block is 4 loads and 8 masks, shared
// by a tile of four tokens, then the panel GEMM's arithmetic.
//
// Same canonical order as the dot (bit for bit): per row and token, the exact integer
// block sum (minus 8 * the activation block's quant sum), acc[b % 4] = fma(dw * dx,
// float(isum), acc[b % 4]) in block order, result (acc0 + acc1) + (acc2 + acc3);
// every step lane-wise, one lane per row.
#include "engine/kernels/avx512_parts.h"

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

constexpr size_t kGroupBlockBytes = kInterleavedRows * sizeof(BlockQ4_0);

// Slice k of the pair after (g0, g1) (a run's groups lie back to back, so it starts at
// g1 + (g1 - g0)) into L2, for a pair kernel of block_bytes blocks at its k-th block:
// the next pair arrives while this one is computed. The weights come from memory, and
// the hardware prefetcher alone does not run far enough ahead of a walk that reads a
// group phase by phase (every fourth block). The kernel asks for slice k at its k-th
// block whatever the block's index, so the requests form one ascending stream, which
// the L2 streamer can follow. (Asking for the slice of the block being computed, every
// fourth slice as the walk goes, was slower: 16-token prefill 0.95x, 8 streams' decode
// 0.96x; docs/benchmarks.md.) A pair's token tiles share the asking, each its run of the
// slices, one every `tiles` blocks, so that the requests spread over all of the pair's
// arithmetic instead of crowding the core's fill buffers in the first tile (16-token
// prefill 1.06x). (Q4_K's pair kernel walks its super-blocks in order and gained nothing
// from it at 8-16 tokens.) A prefetch past the run's end is harmless (prefetches do not
// fault).
__attribute__((always_inline)) inline void prefetch_next_pair(const uint8_t* g0, const uint8_t* g1,
                                                              int64_t k, size_t block_bytes) {
  const size_t slice = 2 * block_bytes;
  const char* p = reinterpret_cast<const char*>(g1 + (g1 - g0)) + static_cast<size_t>(k) * slice;
  for (size_t o = 0; o < slice; o += 64) _mm_prefetch(p + o, _MM_HINT_T1);
}

// Block b of the group for NT tokens into the accumulators of its phase.
template <int NT>
__attribute__((always_inline)) inline void q4_0_group_block(const uint8_t* g, int64_t b,
                                                            const BlockQ8_0* const* xb,
                                                            const float* const* xscale,
                                                            const int32_t* const* xsum,
                                                            __m512 (&acc)[NT]) {
  const uint8_t* p = g + static_cast<size_t>(b) * kGroupBlockBytes;
  const __m512i nib = _mm512_set1_epi8(0x0F);
  __m512i w[8];  // w[k]: elements 4k..4k+3 of the 16 rows, unsigned (q + 8)
  for (int m = 0; m < 4; ++m) {
    const __m512i v = _mm512_loadu_si512(p + 32 + 64 * m);
    w[m] = _mm512_and_si512(v, nib);
    w[4 + m] = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
  }
  const __m512 dw = _mm512_cvtph_ps(load256(p));
  for (int t = 0; t < NT; ++t) {
    const int8_t* xq = xb[t][b].qs;
    __m512i even = _mm512_set1_epi32(-(xsum[t][b] * 8));
    __m512i odd = _mm512_setzero_si512();
    for (int k = 0; k < 8; k += 2) {
      even = _mm512_dpbusd_epi32(even, w[k], bcast4(xq + 4 * k));
      odd = _mm512_dpbusd_epi32(odd, w[k + 1], bcast4(xq + 4 * k + 4));
    }
    const __m512 dd = _mm512_mul_ps(dw, _mm512_set1_ps(xscale[t][b]));
    acc[t] = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(_mm512_add_epi32(even, odd)), acc[t]);
  }
}

template <int NT>
void q4_0_group_gemm_nt(const uint8_t* g, int64_t nb, const uint8_t* x, size_t x_stride, float* y,
                        size_t y_stride) {
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
    q4_0_group_block<NT>(g, b, xb, xscale, xsum, a0);
    q4_0_group_block<NT>(g, b + 1, xb, xscale, xsum, a1);
    q4_0_group_block<NT>(g, b + 2, xb, xscale, xsum, a2);
    q4_0_group_block<NT>(g, b + 3, xb, xscale, xsum, a3);
  }
  if (b < nb) q4_0_group_block<NT>(g, b, xb, xscale, xsum, a0);
  if (b + 1 < nb) q4_0_group_block<NT>(g, b + 1, xb, xscale, xsum, a1);
  if (b + 2 < nb) q4_0_group_block<NT>(g, b + 2, xb, xscale, xsum, a2);
  for (int t = 0; t < NT; ++t) {
    const __m512 r = _mm512_add_ps(_mm512_add_ps(a0[t], a1[t]), _mm512_add_ps(a2[t], a3[t]));
    _mm512_storeu_ps(y + static_cast<size_t>(t) * y_stride, r);
  }
}

// Two groups (32 rows) at once, phase-major: for phase p the blocks b = p, p + 4, ...,
// each block's 16 weight words (8 per group) decoded once for a tile of up to 8 tokens.
// Word by word, every token of the tile takes its turn: one broadcast activation word
// feeds both groups, and the 2 x NT integer sums live in registers, so the core always
// has independent dot products to issue (a token-by-token walk made each sum a chain
// of 8 dependent vpdpbusd, and the out-of-order window could not cover them: this walk
// is 1.1-1.25x faster at 8-32 tokens in a one-thread A/B). The float accumulators (one
// per group, token and phase) live in an L1 array, and each still sees its blocks in
// ascending order, as the canonical order asks. tile, tiles: this token tile's index
// and the pair's count of them, for its share of asking for the next pair
// (prefetch_next_pair).
template <int NT>
void q4_0_group_pair_nt(const uint8_t* g0, const uint8_t* g1, int64_t nb, const uint8_t* x,
                        size_t x_stride, float* y, size_t y_stride, int tile, int tiles) {
  const size_t side_at = q8_0_side_offset(nb);
  const size_t sums_at = q8_0_sums_offset(nb);
  const __m512i nib = _mm512_set1_epi8(0x0F);
  const uint8_t* rows[NT];
  for (int t = 0; t < NT; ++t) rows[t] = x + static_cast<size_t>(t) * x_stride;
  alignas(64) float acc[4][NT][2][kInterleavedRows];
  // This tile's share of the next pair's slices, [ask, ask_end), one every `tiles` blocks.
  const int64_t share = (nb + tiles - 1) / tiles;
  int64_t ask = tile * share;
  const int64_t ask_end = std::min(nb, ask + share);
  int countdown = 1;
  for (int p = 0; p < 4; ++p) {
    for (int t = 0; t < NT; ++t) {
      _mm512_store_ps(acc[p][t][0], _mm512_setzero_ps());
      _mm512_store_ps(acc[p][t][1], _mm512_setzero_ps());
    }
    for (int64_t b = p; b < nb; b += 4) {
      const size_t at = static_cast<size_t>(b) * kGroupBlockBytes;
      if (--countdown == 0) {
        countdown = tiles;
        if (ask < ask_end) prefetch_next_pair(g0, g1, ask++, kGroupBlockBytes);
      }
      // Each sum starts at -8 * the activation block's quant sum (the weights are q + 8).
      alignas(64) int32_t start[NT];
      for (int t = 0; t < NT; ++t) {
        int32_t xsum;
        std::memcpy(&xsum, rows[t] + sums_at + 4 * static_cast<size_t>(b), 4);
        start[t] = -8 * xsum;
      }
      // A compiler barrier: without it GCC 12 spreads the scalar work above among the
      // dot products below and spills more of them (5-20 % slower in the same A/B).
      asm volatile("" ::: "memory");
      __m512i s0[NT], s1[NT];
      for (int t = 0; t < NT; ++t) {
        s0[t] = _mm512_broadcastd_epi32(_mm_loadu_si32(start + t));
        s1[t] = _mm512_broadcastd_epi32(_mm_loadu_si32(start + t));
      }
      for (int m = 0; m < 4; ++m) {  // word m: elements 4m..4m+3 (low), 16+4m.. (high)
        const __m512i v0 = _mm512_loadu_si512(g0 + at + 32 + 64 * m);
        const __m512i v1 = _mm512_loadu_si512(g1 + at + 32 + 64 * m);
        const __m512i lo0 = _mm512_and_si512(v0, nib);
        const __m512i hi0 = _mm512_and_si512(_mm512_srli_epi16(v0, 4), nib);
        const __m512i lo1 = _mm512_and_si512(v1, nib);
        const __m512i hi1 = _mm512_and_si512(_mm512_srli_epi16(v1, 4), nib);
        for (int t = 0; t < NT; ++t) {
          const __m512i a = bcast4(reinterpret_cast<const BlockQ8_0*>(rows[t])[b].qs + 4 * m);
          s0[t] = _mm512_dpbusd_epi32(s0[t], lo0, a);
          s1[t] = _mm512_dpbusd_epi32(s1[t], lo1, a);
        }
        for (int t = 0; t < NT; ++t) {
          const __m512i a = bcast4(reinterpret_cast<const BlockQ8_0*>(rows[t])[b].qs + 16 + 4 * m);
          s0[t] = _mm512_dpbusd_epi32(s0[t], hi0, a);
          s1[t] = _mm512_dpbusd_epi32(s1[t], hi1, a);
        }
      }
      const __m512 dw0 = _mm512_cvtph_ps(load256(g0 + at));
      const __m512 dw1 = _mm512_cvtph_ps(load256(g1 + at));
      for (int t = 0; t < NT; ++t) {
        float xscale;
        std::memcpy(&xscale, rows[t] + side_at + 4 * static_cast<size_t>(b), 4);
        const __m512 dx = _mm512_set1_ps(xscale);
        _mm512_store_ps(acc[p][t][0],
                        _mm512_fmadd_ps(_mm512_mul_ps(dw0, dx), _mm512_cvtepi32_ps(s0[t]),
                                        _mm512_load_ps(acc[p][t][0])));
        _mm512_store_ps(acc[p][t][1],
                        _mm512_fmadd_ps(_mm512_mul_ps(dw1, dx), _mm512_cvtepi32_ps(s1[t]),
                                        _mm512_load_ps(acc[p][t][1])));
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int h = 0; h < 2; ++h) {
      const __m512 r =
          _mm512_add_ps(_mm512_add_ps(_mm512_load_ps(acc[0][t][h]), _mm512_load_ps(acc[1][t][h])),
                        _mm512_add_ps(_mm512_load_ps(acc[2][t][h]), _mm512_load_ps(acc[3][t][h])));
      _mm512_storeu_ps(y + static_cast<size_t>(t) * y_stride + kInterleavedRows * h, r);
    }
  }
}

// ---- Q4_K (x Q8_K) ------------------------------------------------------------------
//
// Interleaved super-block of 16 rows (2,304 bytes): d and dmin (16 f16 each), scale byte
// u = 0..11 of the 16 rows (16 bytes each), then quant word k = 0..31 (qs bytes 4k..4k+3
// of each row, 64 bytes). Word k = 8p + g holds group g (elements 4g..4g+3) of sub-block
// 2p in its low nibbles and of sub-block 2p + 1 in its high nibbles. The integers are
// the panel GEMM's (avx512_kquant_panels.cpp), exact: isum = sum_c sc_c * T_c, imin =
// sum_j m_j * (bsums[2j] + bsums[2j+1]) by vpdpwssd on int16 pairs of mins; then
// acc = fma(x.d * d, isum, acc), acc = fnmadd(x.d * dmin, imin, acc), super-block by
// super-block, as the scalar reference.
constexpr size_t kK4GroupBlockBytes = kInterleavedRows * sizeof(BlockQ4_K);

// The 8 six-bit scales and the 4 int16 pairs of mins of the 16 rows, one lane per row
// (k4_scale_min's unpacking, lane-wise).
inline void q4_k_group_scales(const uint8_t* p, __m512i sc[8], __m512i pairs[4]) {
  __m512i q[12];
  for (int u = 0; u < 12; ++u) q[u] = _mm512_cvtepu8_epi32(load128(p + 64 + 16 * u));
  const __m512i m6 = _mm512_set1_epi32(63), m4 = _mm512_set1_epi32(0xF);
  __m512i mn[8];
  for (int j = 0; j < 4; ++j) {
    sc[j] = _mm512_and_si512(q[j], m6);
    mn[j] = _mm512_and_si512(q[j + 4], m6);
  }
  for (int j = 4; j < 8; ++j) {
    sc[j] = _mm512_or_si512(_mm512_and_si512(q[j + 4], m4),
                            _mm512_slli_epi32(_mm512_srli_epi32(q[j - 4], 6), 4));
    mn[j] = _mm512_or_si512(_mm512_srli_epi32(q[j + 4], 4),
                            _mm512_slli_epi32(_mm512_srli_epi32(q[j], 6), 4));
  }
  for (int i = 0; i < 4; ++i)
    pairs[i] = _mm512_or_si512(mn[2 * i], _mm512_slli_epi32(mn[2 * i + 1], 16));
}

template <int NT>
void q4_k_group_gemm_nt(const uint8_t* g, int64_t nb, const uint8_t* x, size_t x_stride, float* y,
                        size_t y_stride) {
  const BlockQ8_K* xb[NT];
  for (int t = 0; t < NT; ++t)
    xb[t] = reinterpret_cast<const BlockQ8_K*>(x + static_cast<size_t>(t) * x_stride);
  const __m512i nib = _mm512_set1_epi8(0x0F);
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* p = g + static_cast<size_t>(b) * kK4GroupBlockBytes;
    __m512i sc[8], pairs[4];
    q4_k_group_scales(p, sc, pairs);
    __m512i isum[NT];
    for (int t = 0; t < NT; ++t) isum[t] = _mm512_setzero_si512();
    for (int c = 0; c < 8; ++c) {  // sub-block c: words 8 (c / 2) .. + 7, nibble c % 2
      __m512i w[8];
      for (int k = 0; k < 8; ++k) {
        const __m512i v = _mm512_loadu_si512(p + 256 + 64 * (8 * (c / 2) + k));
        w[k] = _mm512_and_si512(c % 2 ? _mm512_srli_epi16(v, 4) : v, nib);
      }
      for (int t = 0; t < NT; ++t) {
        const int8_t* yq = xb[t][b].qs + 32 * c;
        __m512i even = _mm512_setzero_si512(), odd = _mm512_setzero_si512();
        for (int k = 0; k < 8; k += 2) {
          even = _mm512_dpbusd_epi32(even, w[k], bcast4(yq + 4 * k));
          odd = _mm512_dpbusd_epi32(odd, w[k + 1], bcast4(yq + 4 * k + 4));
        }
        isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(_mm512_add_epi32(even, odd), sc[c]));
      }
    }
    const __m512 wd = _mm512_cvtph_ps(load256(p));
    const __m512 wdmin = _mm512_cvtph_ps(load256(p + 32));
    for (int t = 0; t < NT; ++t) {
      int16_t sums[8];
      for (int j = 0; j < 8; ++j)
        sums[j] = static_cast<int16_t>(xb[t][b].bsums[2 * j] + xb[t][b].bsums[2 * j + 1]);
      __m512i iside = _mm512_setzero_si512();
      for (int i = 0; i < 4; ++i)
        iside = _mm512_dpwssd_epi32(iside, pairs[i], bcast4(sums + 2 * i));
      const __m512 xd = _mm512_set1_ps(xb[t][b].d);
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(xd, wd), _mm512_cvtepi32_ps(isum[t]), acc[t]);
      acc[t] = _mm512_fnmadd_ps(_mm512_mul_ps(xd, wdmin), _mm512_cvtepi32_ps(iside), acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + static_cast<size_t>(t) * y_stride, acc[t]);
}

// Two groups at once, walked as the Q4_0 pair above: for each sub-block, word by word,
// every token of an 8-token tile in turn, one broadcast activation word feeding both
// groups and the 2 x NT integer sums of the sub-block in registers (1.1-1.3x faster at
// 4-32 tokens than a token-by-token walk, in a one-thread A/B). The sub-blocks are
// unrolled (the nibble is known at compile time; GCC kept the loop otherwise, and lost
// the gain). Their scaled sums build up in an L1 array per token, the float
// accumulators in another; the scales are unpacked once per super-block into a third.
template <int NT>
void q4_k_group_pair_nt(const uint8_t* g0, const uint8_t* g1, int64_t nb, const uint8_t* x,
                        size_t x_stride, float* y, size_t y_stride) {
  const __m512i nib = _mm512_set1_epi8(0x0F);
  alignas(64) float acc[NT][2][kInterleavedRows];
  alignas(64) int32_t isum[NT][2][kInterleavedRows];
  alignas(64) __m512i sc[2][8];
  alignas(64) __m512i pairs[2][4];
  const uint8_t* rows[NT];
  for (int t = 0; t < NT; ++t) rows[t] = x + static_cast<size_t>(t) * x_stride;
  for (int t = 0; t < NT; ++t) {
    _mm512_store_ps(acc[t][0], _mm512_setzero_ps());
    _mm512_store_ps(acc[t][1], _mm512_setzero_ps());
  }
  for (int64_t b = 0; b < nb; ++b) {
    const size_t at = static_cast<size_t>(b) * kK4GroupBlockBytes;
    q4_k_group_scales(g0 + at, sc[0], pairs[0]);
    q4_k_group_scales(g1 + at, sc[1], pairs[1]);
    auto sub_block = [&]<int C>() {  // sub-block C: words 8 (C / 2) .. + 7, nibble C % 2
      __m512i s0[NT], s1[NT];
      for (int t = 0; t < NT; ++t) s0[t] = s1[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        const size_t word = at + 256 + 64 * static_cast<size_t>(8 * (C / 2) + k);
        const __m512i v0 = _mm512_loadu_si512(g0 + word);
        const __m512i v1 = _mm512_loadu_si512(g1 + word);
        const __m512i w0 = _mm512_and_si512(C % 2 ? _mm512_srli_epi16(v0, 4) : v0, nib);
        const __m512i w1 = _mm512_and_si512(C % 2 ? _mm512_srli_epi16(v1, 4) : v1, nib);
        for (int t = 0; t < NT; ++t) {
          const __m512i a =
              bcast4(reinterpret_cast<const BlockQ8_K*>(rows[t])[b].qs + 32 * C + 4 * k);
          s0[t] = _mm512_dpbusd_epi32(s0[t], w0, a);
          s1[t] = _mm512_dpbusd_epi32(s1[t], w1, a);
        }
      }
      for (int t = 0; t < NT; ++t) {
        const __m512i p0 = _mm512_mullo_epi32(s0[t], _mm512_load_si512(&sc[0][C]));
        const __m512i p1 = _mm512_mullo_epi32(s1[t], _mm512_load_si512(&sc[1][C]));
        if (C == 0) {
          _mm512_store_si512(isum[t][0], p0);
          _mm512_store_si512(isum[t][1], p1);
        } else {
          _mm512_store_si512(isum[t][0], _mm512_add_epi32(_mm512_load_si512(isum[t][0]), p0));
          _mm512_store_si512(isum[t][1], _mm512_add_epi32(_mm512_load_si512(isum[t][1]), p1));
        }
      }
    };
    [&]<int... C>(std::integer_sequence<int, C...>) {
      (sub_block.template operator()<C>(), ...);
    }
    (std::make_integer_sequence<int, 8>{});
    const __m512 wd[2] = {_mm512_cvtph_ps(load256(g0 + at)), _mm512_cvtph_ps(load256(g1 + at))};
    const __m512 wdmin[2] = {_mm512_cvtph_ps(load256(g0 + at + 32)),
                             _mm512_cvtph_ps(load256(g1 + at + 32))};
    for (int t = 0; t < NT; ++t) {
      const BlockQ8_K& xb = reinterpret_cast<const BlockQ8_K*>(rows[t])[b];
      int16_t sums[8];
      for (int j = 0; j < 8; ++j)
        sums[j] = static_cast<int16_t>(xb.bsums[2 * j] + xb.bsums[2 * j + 1]);
      const __m512 xd = _mm512_set1_ps(xb.d);
      for (int h = 0; h < 2; ++h) {
        __m512i iside = _mm512_setzero_si512();
        for (int i = 0; i < 4; ++i)
          iside = _mm512_dpwssd_epi32(iside, pairs[h][i], bcast4(sums + 2 * i));
        __m512 a = _mm512_load_ps(acc[t][h]);
        a = _mm512_fmadd_ps(_mm512_mul_ps(xd, wd[h]),
                            _mm512_cvtepi32_ps(_mm512_load_si512(isum[t][h])), a);
        a = _mm512_fnmadd_ps(_mm512_mul_ps(xd, wdmin[h]), _mm512_cvtepi32_ps(iside), a);
        _mm512_store_ps(acc[t][h], a);
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    _mm512_storeu_ps(y + static_cast<size_t>(t) * y_stride, _mm512_load_ps(acc[t][0]));
    _mm512_storeu_ps(y + static_cast<size_t>(t) * y_stride + kInterleavedRows,
                     _mm512_load_ps(acc[t][1]));
  }
}

// ---- Runs of groups --------------------------------------------------------------

// A run of groups (GroupGemmFn) of blocks of block_size elements: pairs through
// pair.operator()<NT> in token tiles of up to 8 (its last two arguments: the tile's
// index and the count of tiles), an odd last group through single.operator()<NT> in
// tiles of up to 4.
template <class Pair, class Single>
void group_gemm_run(const void* groups, size_t group_bytes, int n_groups, int64_t n,
                    int64_t block_size, const uint8_t* x, size_t x_stride, int nt, float* y,
                    size_t y_stride, Pair pair, Single single) {
  const auto* g = static_cast<const uint8_t*>(groups);
  const int64_t nb = n / block_size;
  auto x_at = [&](int t) { return x + static_cast<size_t>(t) * x_stride; };
  auto y_at = [&](int t) { return y + static_cast<size_t>(t) * y_stride; };
  int gi = 0;
  const int tiles = (nt + 7) / 8;
  for (; gi + 2 <= n_groups; gi += 2, g += 2 * group_bytes, y += 2 * kInterleavedRows) {
    over_token_groups<8>(nt, [&]<int NT>(int t) {
      pair.template operator()<NT>(g, g + group_bytes, nb, x_at(t), x_stride, y_at(t), y_stride,
                                   t / 8, tiles);
    });
  }
  if (gi < n_groups) {
    over_token_groups<4>(nt, [&]<int NT>(int t) {
      single.template operator()<NT>(g, nb, x_at(t), x_stride, y_at(t), y_stride);
    });
  }
}

void q4_0_group_gemm(const void* groups, size_t group_bytes, int n_groups, int64_t n,
                     const uint8_t* x, size_t x_stride, int nt, float* y, size_t y_stride) {
  group_gemm_run(
      groups, group_bytes, n_groups, n, kQK32, x, x_stride, nt, y, y_stride,
      []<int NT>(auto... a) { q4_0_group_pair_nt<NT>(a...); },
      []<int NT>(auto... a) { q4_0_group_gemm_nt<NT>(a...); });
}

void q4_k_group_gemm(const void* groups, size_t group_bytes, int n_groups, int64_t n,
                     const uint8_t* x, size_t x_stride, int nt, float* y, size_t y_stride) {
  group_gemm_run(
      groups, group_bytes, n_groups, n, kQKK, x, x_stride, nt, y, y_stride,
      []<int NT>(const uint8_t* g0, const uint8_t* g1, int64_t nb, const uint8_t* xt, size_t xs,
                 float* yt, size_t ys, int /*tile*/,
                 int /*tiles*/) { q4_k_group_pair_nt<NT>(g0, g1, nb, xt, xs, yt, ys); },
      []<int NT>(auto... a) { q4_k_group_gemm_nt<NT>(a...); });
}

}  // namespace
}  // namespace hearth::engine

#include "engine/kernels/x86_target_end.inc"

namespace hearth::engine {

void install_avx512_group_gemm(KernelSet* k) {
  k->group_gemm_interleaved[static_cast<int>(gguf::TensorType::kQ4_0)] = q4_0_group_gemm;
  k->group_gemm_interleaved[static_cast<int>(gguf::TensorType::kQ4_K)] = q4_k_group_gemm;
}

}  // namespace hearth::engine

#endif  // x86-64
