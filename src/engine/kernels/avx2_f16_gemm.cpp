// AVX2 prefill GEMM for F16 weights x F16 activations, giving every output the
// canonical 32-lane order bit for bit.
//
// The canonical order puts element i of a dot product in lane i % 32 and reduces
// the 32 lanes only at the end: with 8-lane registers, four registers per output
// (lanes 0..7, 8..15, 16..23, 24..31). Those four are independent chains, so here
// each is computed in its own pass with one register per output: a tile of
// kTileRows x kTileTokens outputs performs 12 FMAs per 4 weight conversions and 6
// activation loads, where the four-register mat-vec tile is load-bound.
//
// Blocking: K is cut into chunks whose activations (3 tokens, read as the working
// row's floats) and a row group's weights stay in L1 across the four passes;
// accumulators are parked in L1 between chunks (a store and a load of a float
// change nothing). The caller hands a block of contiguous F16 rows (the weights in
// place, no pack) and every token of the batch; token groups are the outer loop,
// so the block's weights stay in L2.
#include "engine/kernels/avx2_parts.h"

#if defined(__x86_64__) || defined(__i386__)

#include <cstring>

#include "engine/quant/blocks.h"

// clang-format off
#include "engine/kernels/avx2_target_begin.inc"
// clang-format on

namespace hearth::engine {
namespace {

#include "engine/kernels/x86_dot32.inc"

constexpr int kTileRows = 4;
constexpr int kTileTokens = 3;
// Elements per chunk: 3 tokens x 512 floats (6 KiB) and 4 rows x 512 halves (4 KiB).
constexpr int64_t kChunk = 512;
// Row groups per sub-block: their parked accumulators (4 x 12 ymm each) share L1.
constexpr int kSubGroups = 4;
constexpr int kSubRows = kSubGroups * kTileRows;
constexpr int kTileRegs = kTileRows * kTileTokens;

// Keeps v in a register: without it GCC folds each use of an activation into its
// own FMA memory operand, one load per FMA instead of one per step.
inline __m256 in_register(__m256 v) {
  __asm__("" : "+x"(v));
  return v;
}

// One pass over elements [c0, c1) of lane quarter q (lanes 8q .. 8q + 7) for rows
// w[0..R) and tokens x[0..T), continuing the accumulators acc[r * T + t].
template <int R, int T>
inline void tile_pass(const uint16_t* const w[R], const float* const x[T], int64_t c0, int64_t c1,
                      int q, __m256* acc) {
  __m256 a[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) a[r][t] = acc[r * T + t];
  for (int64_t i = c0 + 8 * q; i < c1; i += 32) {
    __m256 xv[T];
    // The last token's activations stay a memory operand of its FMAs: with 16
    // registers (AVX2 without AVX-512VL) a 4 x 3 tile then fits without a spill.
    for (int t = 0; t < T; ++t)
      xv[t] = t + 1 < T ? in_register(_mm256_loadu_ps(x[t] + i)) : _mm256_loadu_ps(x[t] + i);
    for (int r = 0; r < R; ++r) {
      const __m256 wv =
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[r] + i)));
      for (int t = 0; t < T; ++t) a[r][t] = _mm256_fmadd_ps(wv, xv[t], a[r][t]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r * T + t] = a[r][t];
}

// All four quarters of one chunk for R rows starting at w0 (row stride n).
template <int R, int T>
void group_chunk(const uint16_t* w0, int64_t n, const float* const x[T], int64_t c0, int64_t c1,
                 __m256 (*quarters)[kTileRegs]) {
  const uint16_t* w[R];
  for (int r = 0; r < R; ++r) w[r] = w0 + r * n;
  for (int q = 0; q < 4; ++q) tile_pass<R, T>(w, x, c0, c1, q, quarters[q]);
}

// Tokens x0 .. x0 + T - 1 against rows [0, n_rows): y[t * y_stride + r].
template <int T>
void token_group(const uint16_t* w, int n_rows, int64_t n, const uint8_t* x0, size_t x_stride,
                 float* y, size_t y_stride) {
  const float* x[T];  // the working rows' widened floats
  for (int t = 0; t < T; ++t) {
    x[t] = reinterpret_cast<const float*>(x0 + t * x_stride + f16_side_offset(n));
  }
  alignas(32) __m256 acc[kSubGroups][4][kTileRegs];
  const int64_t full = n - n % 32;
  for (int s0 = 0; s0 < n_rows; s0 += kSubRows) {
    const int sub_rows = n_rows - s0 < kSubRows ? n_rows - s0 : kSubRows;
    const int groups = (sub_rows + kTileRows - 1) / kTileRows;
    // Rows of group g: kTileRows, or fewer in the sub-block's last group.
    auto rows_in = [&](int g) {
      return sub_rows - g * kTileRows < kTileRows ? sub_rows - g * kTileRows : kTileRows;
    };
    for (int g = 0; g < groups; ++g)
      for (int q = 0; q < 4; ++q)
        for (int j = 0; j < kTileRegs; ++j) acc[g][q][j] = _mm256_setzero_ps();
    for (int64_t c0 = 0; c0 < full; c0 += kChunk) {
      const int64_t c1 = c0 + kChunk < full ? c0 + kChunk : full;
      for (int g = 0; g < groups; ++g) {
        const uint16_t* wg = w + static_cast<size_t>(s0 + g * kTileRows) * n;
        with_count<kTileRows>(rows_in(g),
                              [&]<int R>() { group_chunk<R, T>(wg, n, x, c0, c1, acc[g]); });
      }
    }
    for (int g = 0; g < groups; ++g) {
      for (int r = 0; r < rows_in(g); ++r) {
        const int row = s0 + g * kTileRows + r;
        const uint16_t* wr = w + static_cast<size_t>(row) * n;
        for (int t = 0; t < T; ++t) {
          // The rows of a partial group sit at r * T + t of their own (smaller) tile.
          const int j = r * T + t;
          float v = reduce_lanes(acc[g][0][j], acc[g][1][j], acc[g][2][j], acc[g][3][j]);
          for (int64_t i = full; i < n; ++i) v = fma_ss(h2f(wr[i]), x[t][i], v);
          y[t * y_stride + row] = v;
        }
      }
    }
  }
}

// The "panel" is the block's F16 rows themselves (contiguous, stride n halves).
void f16_gemm(const uint8_t* rows, int n_rows, int64_t n, const uint8_t* x, size_t x_stride, int nt,
              float* y, size_t y_stride) {
  const auto* w = reinterpret_cast<const uint16_t*>(rows);
  over_token_groups<kTileTokens>(nt, [&]<int T>(int t) {
    token_group<T>(w, n_rows, n, x + static_cast<size_t>(t) * x_stride, x_stride,
                   y + static_cast<size_t>(t) * y_stride, y_stride);
  });
}

}  // namespace
}  // namespace hearth::engine

#include "engine/kernels/x86_target_end.inc"

namespace hearth::engine {

void install_avx2_f16_gemm(KernelSet* k) {
  // bytes/pack unused: the GEMM reads the weight rows in place (pack == nullptr).
  k->panel[static_cast<int>(gguf::TensorType::kF16)] = PanelKernels{nullptr, nullptr, f16_gemm};
}

}  // namespace hearth::engine

#endif  // x86
