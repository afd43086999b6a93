// AVX2 prefill GEMM for F16 weights x F16 activations, giving every output the
// canonical 32-lane order bit for bit.
//
// The canonical order puts element i of a dot product in lane i % 32 and reduces
// the 32 lanes only at the end. Lane L of an output is therefore a chain of FMAs
// over elements L, L + 32, L + 64, ... that no other lane touches, and the 32
// chains may be computed one after another. This kernel does that with the rows in
// the register lanes (the layout of a classic BLIS micro-kernel): a register holds
// one element of 8 weight rows, and a tile of 16 rows x 6 tokens is 12 accumulators
// that, for one lane L and one step j, take 2 weight conversions, 6 activation
// broadcasts (element 32j + L of each token) and 12 FMAs. Each accumulator lane is
// one output's chain L, in the reference's element order; the 32 chains end up
// side by side (one parked register per lane) and are reduced with the
// reference's tree, which is lane-wise across rows, so it vectorizes as well.
// (The former kernel kept the elements in the lanes: 12 FMAs per 4 conversions and
// 4 more activation loads, ~75 GFLOP/s per thread against ~100 peak.)
//
// Layout: the caller hands a block of contiguous F16 rows (up to ~256 KiB). They
// are repacked once per call into a per-thread buffer, panels of 16 rows, so that
// the 16 rows' element 32j + L are 32 contiguous bytes and a chunk of K is one
// contiguous run; the pack is amortized over every token of the batch. Blocking:
// K chunks of 256 elements keep a panel's chunk (8 KiB), 6 tokens' activations
// (6 KiB) and the 32 parked lanes (12 KiB) in L1; accumulators are parked between
// chunks (a store and a load of a float change nothing). Token groups are the
// outer loop, so the packed block stays in L2 and a group's activations are read
// from L2 by every panel.
#include "engine/kernels/avx2_parts.h"

#if defined(__x86_64__) || defined(__i386__)

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/kernels/tile_dispatch.h"
#include "engine/quant/blocks.h"

// clang-format off
#include "engine/kernels/avx2_target_begin.inc"
// clang-format on

namespace hearth::engine {
namespace {

#include "engine/kernels/x86_dot32.inc"

constexpr int kRows = 16;      // a panel: two registers of 8 rows
constexpr int kTokens = 6;     // 12 accumulators + 2 weight + 1 broadcast registers
constexpr int kLanes = 32;     // the canonical order's lanes
constexpr int64_t kChunk = 8;  // 32-element groups per K chunk (256 elements)

// Halves of one packed panel of rows with `groups` 32-element groups: chunk by
// chunk; within a chunk of jn groups, lane L's groups j are at (L * jn + j) * 16.
inline size_t panel_halves(int64_t groups) {
  return static_cast<size_t>(groups) * kLanes * kRows;
}

// Rows r0 .. r0 + 7 (those < n_rows, the others zero), elements e .. e + 15 of
// each, transposed in the two 128-bit halves at once: the low half of out[l] is
// element e + l of the 8 rows, the high half element e + 8 + l.
inline void load_transposed_8x16(const uint16_t* w, int64_t n, int r0, int n_rows, int64_t e,
                                 __m256i out[8]) {
  __m256i a[8];
  for (int i = 0; i < 8; ++i) {
    a[i] =
        r0 + i < n_rows ? load256(w + static_cast<size_t>(r0 + i) * n + e) : _mm256_setzero_si256();
  }
  __m256i t[8];  // t[2i], t[2i+1]: rows 2i, 2i+1 interleaved, elements 0..3 / 4..7
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi16(a[2 * i], a[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi16(a[2 * i], a[2 * i + 1]);
  }
  __m256i u[8];  // u[4h + k]: rows 4h .. 4h + 3, elements 2k, 2k + 1
  for (int h = 0; h < 2; ++h) {
    const __m256i* p = t + 4 * h;
    u[4 * h + 0] = _mm256_unpacklo_epi32(p[0], p[2]);
    u[4 * h + 1] = _mm256_unpackhi_epi32(p[0], p[2]);
    u[4 * h + 2] = _mm256_unpacklo_epi32(p[1], p[3]);
    u[4 * h + 3] = _mm256_unpackhi_epi32(p[1], p[3]);
  }
  for (int k = 0; k < 4; ++k) {
    out[2 * k] = _mm256_unpacklo_epi64(u[k], u[4 + k]);
    out[2 * k + 1] = _mm256_unpackhi_epi64(u[k], u[4 + k]);
  }
}

// Packs rows [p0, p0 + 16) of the block (rows past n_rows as zeros) into `out`.
void pack_panel(const uint16_t* w, int64_t n, int p0, int n_rows, int64_t groups, uint16_t* out) {
  for (int64_t c0 = 0; c0 < groups; c0 += kChunk) {
    const int64_t jn = std::min(kChunk, groups - c0);
    uint16_t* chunk = out + static_cast<size_t>(c0) * kLanes * kRows;
    for (int64_t j = 0; j < jn; ++j) {
      for (int h = 0; h < 2; ++h) {
        for (int l16 = 0; l16 < 2; ++l16) {
          __m256i col[8];
          load_transposed_8x16(w, n, p0 + 8 * h, n_rows, 32 * (c0 + j) + 16 * l16, col);
          for (int l = 0; l < 8; ++l) {
            const int lane = 16 * l16 + l;
            uint16_t* dst = chunk + ((lane * jn + j) * kRows + 8 * h);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm256_castsi256_si128(col[l]));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 8 * jn * kRows),
                             _mm256_extracti128_si256(col[l], 1));
          }
        }
      }
    }
  }
}

// Lane L of one K chunk for a 16-row x T-token tile: a = the lane's jn packed
// groups, x[t] = token t's element 32 * (chunk start) + L. Continues park (or
// starts from zero) and parks the result.
template <int T>
inline void lane_chunk(const uint16_t* a, const float* const x[T], int64_t jn, bool first,
                       __m256* park) {
  __m256 acc[2][T];
  for (int t = 0; t < T; ++t) {
    acc[0][t] = first ? _mm256_setzero_ps() : park[t];
    acc[1][t] = first ? _mm256_setzero_ps() : park[T + t];
  }
  for (int64_t j = 0; j < jn; ++j) {
    const __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a)));
    const __m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + 8)));
    a += kRows;
    for (int t = 0; t < T; ++t) {
      const __m256 b = _mm256_broadcast_ss(x[t] + 32 * j);
      acc[0][t] = _mm256_fmadd_ps(w0, b, acc[0][t]);
      acc[1][t] = _mm256_fmadd_ps(w1, b, acc[1][t]);
    }
  }
  for (int t = 0; t < T; ++t) {
    park[t] = acc[0][t];
    park[T + t] = acc[1][t];
  }
}

// The canonical reduction of the 32 parked lanes, lane-wise across 8 rows (see
// reduce_lanes): ((l_i + l_{8+i}) + (l_{16+i} + l_{24+i})), then 8 -> 4 -> 2 -> 1.
inline __m256 reduce_parked(const __m256 (*park)[2 * kTokens], int v) {
  __m256 s[8];
  for (int i = 0; i < 8; ++i) {
    s[i] = _mm256_add_ps(_mm256_add_ps(park[i][v], park[8 + i][v]),
                         _mm256_add_ps(park[16 + i][v], park[24 + i][v]));
  }
  __m256 t[4];
  for (int i = 0; i < 4; ++i) t[i] = _mm256_add_ps(s[i], s[i + 4]);
  return _mm256_add_ps(_mm256_add_ps(t[0], t[2]), _mm256_add_ps(t[1], t[3]));
}

// Tokens x[0..T) against the packed block (rows [0, n_rows) of w in place for the
// elements past the last full group): y[t * y_stride + r].
template <int T>
void token_group(const uint16_t* packed, const uint16_t* w, int n_rows, int64_t n,
                 const float* const x[T], float* y, size_t y_stride) {
  const int64_t groups = n / 32;
  const int64_t full = groups * 32;
  alignas(32) __m256 park[kLanes][2 * kTokens];
  if (groups == 0) std::memset(park, 0, sizeof(park));
  for (int p0 = 0; p0 < n_rows; p0 += kRows) {
    const uint16_t* panel = packed + static_cast<size_t>(p0 / kRows) * panel_halves(groups);
    for (int64_t c0 = 0; c0 < groups; c0 += kChunk) {
      const int64_t jn = std::min(kChunk, groups - c0);
      const uint16_t* chunk = panel + static_cast<size_t>(c0) * kLanes * kRows;
      for (int lane = 0; lane < kLanes; ++lane) {
        const float* xl[T];
        for (int t = 0; t < T; ++t) xl[t] = x[t] + 32 * c0 + lane;
        lane_chunk<T>(chunk + static_cast<size_t>(lane * jn) * kRows, xl, jn, c0 == 0, park[lane]);
      }
    }
    for (int h = 0; h < 2; ++h) {
      const int r0 = p0 + 8 * h;
      if (r0 >= n_rows) break;
      const int valid = std::min(8, n_rows - r0);
      for (int t = 0; t < T; ++t) {
        const __m256 v = reduce_parked(park, h * T + t);
        float* out = y + t * y_stride + r0;
        if (valid == 8 && full == n) {
          _mm256_storeu_ps(out, v);
          continue;
        }
        alignas(32) float lanes[8];
        _mm256_store_ps(lanes, v);
        for (int r = 0; r < valid; ++r) {
          const uint16_t* wr = w + static_cast<size_t>(r0 + r) * n;
          float s = lanes[r];
          for (int64_t i = full; i < n; ++i) s = fma_ss(h2f(wr[i]), x[t][i], s);
          out[r] = s;
        }
      }
    }
  }
}

// The per-thread packed block: grown once, reused by every later call.
uint16_t* pack_buffer(size_t halves) {
  thread_local std::vector<uint16_t> buffer;
  if (buffer.size() < halves) buffer.resize(halves);
  return buffer.data();
}

// `rows` is the block's F16 rows themselves (contiguous, stride n halves).
void f16_gemm(const uint8_t* rows, int n_rows, int64_t n, const uint8_t* x, size_t x_stride, int nt,
              float* y, size_t y_stride) {
  const auto* w = reinterpret_cast<const uint16_t*>(rows);
  const int64_t groups = n / 32;
  const int panels = (n_rows + kRows - 1) / kRows;
  uint16_t* packed = pack_buffer(static_cast<size_t>(panels) * panel_halves(groups));
  for (int p = 0; p < panels; ++p) {
    pack_panel(w, n, p * kRows, n_rows, groups,
               packed + static_cast<size_t>(p) * panel_halves(groups));
  }
  over_token_groups<kTokens>(nt, [&]<int T>(int t0) {
    const float* xt[T];  // the working rows' widened floats
    for (int t = 0; t < T; ++t) {
      xt[t] = reinterpret_cast<const float*>(x + static_cast<size_t>(t0 + t) * x_stride +
                                             f16_side_offset(n));
    }
    token_group<T>(packed, w, n_rows, n, xt, y + static_cast<size_t>(t0) * y_stride, y_stride);
  });
}

}  // namespace
}  // namespace hearth::engine

#include "engine/kernels/x86_target_end.inc"

namespace hearth::engine {

void install_avx2_f16_gemm(KernelSet* k) {
  // bytes/pack unused: the GEMM takes the rows in place and repacks them itself.
  k->panel[static_cast<int>(gguf::TensorType::kF16)] = PanelKernels{nullptr, nullptr, f16_gemm};
}

}  // namespace hearth::engine

#endif  // x86
