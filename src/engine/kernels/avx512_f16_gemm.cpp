// AVX-512 prefill GEMM for F16 weights x F16 activations, giving every output the
// canonical 32-lane order bit for bit.
//
// The canonical order puts element i of a dot product in lane i % 32 and reduces
// the 32 lanes only at the end. A mat-vec kernel holds the lanes in two registers
// (lo = lanes 0..15, hi = 16..31) per output, which limits a register tile to about
// 2 rows x 4 tokens and makes it load-bound. But lo and hi are independent chains:
// here each is computed in its own pass with one register per output, so a tile of
// 4 rows x 6 tokens (24 accumulators) performs 24 FMAs per 4 weight and 6
// activation conversions. Each output's lanes see exactly the reference's FMAs in
// the reference's order, so the final reduction gives the reference's bits.
//
// Blocking (measured on Zen 5, one core: ~150 GFLOP/s against ~115 for the
// two-register tile; see docs/engine-kernels.md): K is cut into chunks whose
// activations (6 tokens) stay in L1 while every 4-row group of a 16-row sub-block
// passes them, both halves per chunk; the groups' accumulators are parked in L1
// between chunks (a store and a load of a float change nothing). The caller hands
// a block of contiguous F16 rows (the weights in place, no pack) and every token of
// the batch; token groups are the outer loop, so the block's weights stay in L2.
#include "engine/kernels/avx512_parts.h"

#if defined(__x86_64__)

#include <cstring>
#include <utility>

#include "hearth/engine/fp16.h"

// clang-format off
#include "engine/kernels/avx512_target_begin.inc"
// clang-format on

namespace hearth::engine {
namespace {

#include "engine/kernels/avx512_helpers.inc"

constexpr int kTileRows = 4;
constexpr int kTileTokens = 6;
// Elements per chunk: 6 tokens x 1024 halves = 12 KiB of activations, kept in L1
// while every row group of a sub-block passes them.
constexpr int64_t kChunk = 1024;
// Rows per sub-block: its 4 row groups' parked accumulators (2 x 24 zmm each,
// 12 KiB) share L1 with the activation chunk.
constexpr int kSubRows = 16;
constexpr int kSubGroups = kSubRows / kTileRows;

// Activations are read as their f16 bytes and widened in registers: the same
// values as the working row's floats (the widening is exact), half the bytes.
inline __m512 load_x(const uint16_t* p) {
  return _mm512_cvtph_ps(load256(p));
}

// Keeps v in a register: without it GCC folds each use of an activation into its
// own FMA memory operand, turning 6 loads per step into 24.
inline __m512 in_register(__m512 v) {
  __asm__("" : "+v"(v));
  return v;
}

// One pass over elements [c0, c1) of lane half `half` (0: lanes 0..15, 1: 16..31)
// for rows w[0..R) and tokens x[0..T), continuing the accumulators acc[r * T + t], or
// starting them at zero (`fresh`, the first chunk: no zeroed tile is stored and loaded).
// Forced inline (with group_chunk): under the target pragma GCC 12 keeps both out of
// line, so each pass copied its 24 accumulators through a stack array on entry and exit;
// inlined, they load from and store to the parked tile directly, as a -march=native
// build does (6-10 % of F16 prefill on Zen 4, docs/benchmarks.md).
template <int R, int T>
[[gnu::always_inline]] inline void tile_pass(const uint16_t* const w[R], const uint16_t* const x[T],
                                             int64_t c0, int64_t c1, int half, bool fresh,
                                             __m512* acc) {
  __m512 a[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) a[r][t] = fresh ? _mm512_setzero_ps() : acc[r * T + t];
  for (int64_t i = c0 + 16 * half; i < c1; i += 32) {
    __m512 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = in_register(load_x(x[t] + i));
    for (int r = 0; r < R; ++r) {
      const __m512 wv = _mm512_cvtph_ps(load256(w[r] + i));
      for (int t = 0; t < T; ++t) a[r][t] = _mm512_fmadd_ps(wv, xv[t], a[r][t]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r * T + t] = a[r][t];
}

// Both halves of one chunk for R rows starting at w0 (row stride n).
template <int R, int T>
[[gnu::always_inline]] inline void group_chunk(const uint16_t* w0, int64_t n,
                                               const uint16_t* const x[T], int64_t c0, int64_t c1,
                                               __m512* lo, __m512* hi) {
  const uint16_t* w[R];
  for (int r = 0; r < R; ++r) w[r] = w0 + r * n;
  tile_pass<R, T>(w, x, c0, c1, 0, c0 == 0, lo);
  tile_pass<R, T>(w, x, c0, c1, 1, c0 == 0, hi);
}

// Tokens x0 .. x0 + T - 1 against rows [0, n_rows): y[t * y_stride + r].
template <int T>
void token_group(const uint16_t* w, int n_rows, int64_t n, const uint8_t* x0, size_t x_stride,
                 float* y, size_t y_stride) {
  const uint16_t* x[T];
  const float* xf[T];  // the same values widened, for the tail
  for (int t = 0; t < T; ++t) {
    x[t] = reinterpret_cast<const uint16_t*>(x0 + t * x_stride);
    xf[t] = reinterpret_cast<const float*>(x0 + t * x_stride + f16_side_offset(n));
  }
  alignas(64) __m512 lo[kSubGroups][kTileRows * T];
  alignas(64) __m512 hi[kSubGroups][kTileRows * T];
  const int64_t full = n - n % 32;
  for (int s0 = 0; s0 < n_rows; s0 += kSubRows) {
    const int sub_rows = n_rows - s0 < kSubRows ? n_rows - s0 : kSubRows;
    const int groups = (sub_rows + kTileRows - 1) / kTileRows;
    // Rows of group g: kTileRows, or fewer in the sub-block's last group.
    auto rows_in = [&](int g) {
      return sub_rows - g * kTileRows < kTileRows ? sub_rows - g * kTileRows : kTileRows;
    };
    if (full == 0) {  // no chunk to start the accumulators: the tail alone
      for (int g = 0; g < groups; ++g)
        for (int j = 0; j < kTileRows * T; ++j) lo[g][j] = hi[g][j] = _mm512_setzero_ps();
    }
    for (int64_t c0 = 0; c0 < full; c0 += kChunk) {
      const int64_t c1 = c0 + kChunk < full ? c0 + kChunk : full;
      for (int g = 0; g < groups; ++g) {
        const uint16_t* wg = w + static_cast<size_t>(s0 + g * kTileRows) * n;
        with_count<kTileRows>(rows_in(g),
                              [&]<int R>() { group_chunk<R, T>(wg, n, x, c0, c1, lo[g], hi[g]); });
      }
    }
    for (int g = 0; g < groups; ++g) {
      for (int r = 0; r < rows_in(g); ++r) {
        const int row = s0 + g * kTileRows + r;
        const uint16_t* wr = w + static_cast<size_t>(row) * n;
        for (int t = 0; t < T; ++t) {
          // The rows of a partial group sit at r * T + t of their own (smaller) tile.
          float v = reduce_lanes32(lo[g][r * T + t], hi[g][r * T + t]);
          for (int64_t i = full; i < n; ++i) v = fma_ss(_cvtsh_ss(wr[i]), xf[t][i], v);
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
  over_token_groups<kTileTokens>(nt, [&]<int NT>(int t) {
    token_group<NT>(w, n_rows, n, x + static_cast<size_t>(t) * x_stride, x_stride,
                    y + static_cast<size_t>(t) * y_stride, y_stride);
  });
}

}  // namespace
}  // namespace hearth::engine

#include "engine/kernels/x86_target_end.inc"

namespace hearth::engine {

void install_avx512_f16_gemm(KernelSet* k) {
  // bytes/pack unused: the GEMM reads the weight rows in place (pack == nullptr).
  k->panel[static_cast<int>(gguf::TensorType::kF16)] = PanelKernels{nullptr, nullptr, f16_gemm};
}

}  // namespace hearth::engine

#endif  // x86-64
