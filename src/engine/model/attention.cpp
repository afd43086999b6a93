#include "engine/model/attention.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "engine/cpu_features.h"
#include "engine/kernels/canonical.h"
#include "engine/kernels/kernel_set.h"
#include "engine/model/vec_exp.h"
#include "hearth/fp16.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
// GCC 12's AVX-512 intrinsics trip -W(maybe-)uninitialized on their own
// _mm512_undefined_*() operands (a known false positive).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#define HEARTH_ATTN_AVX2 1
#endif
#if HEARTH_ATTN_AVX2 && defined(__AVX512F__)
#define HEARTH_ATTN_AVX512 1
#endif

namespace hearth::engine {
namespace {

constexpr int32_t kMaxLanes = 16;     // widest position tile (AVX-512)
constexpr int32_t kMaxHeadDim = 256;  // largest head_dim of the SIMD path

size_t round_up(size_t n, size_t m) {
  return (n + m - 1) / m * m;
}

#if HEARTH_ATTN_AVX2
// scores[p] *= scale for all p; returns the largest (a NaN is skipped, as the scalar
// `if (s > max)` skips it; max is exact in any order).
float scale_and_max(float* scores, int32_t n, float scale) {
  const __m256 vs = _mm256_set1_ps(scale);
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  int32_t p = 0;
  for (; p + 8 <= n; p += 8) {
    const __m256 s = _mm256_mul_ps(_mm256_loadu_ps(scores + p), vs);
    _mm256_storeu_ps(scores + p, s);
    vmax = _mm256_max_ps(s, vmax);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, vmax);
  float max = -INFINITY;
  for (float v : lanes) max = v > max ? v : max;
  for (; p < n; ++p) {
    const float s = scores[p] * scale;
    scores[p] = s;
    if (s > max) max = s;
  }
  return max;
}

// scores[p] = f16-rounded(scores[p] * inv): F16C's conversion is round to nearest
// even, exactly fp32_to_fp16.
void normalize_to_f16(float* scores, int32_t n, float inv) {
  const __m256 vi = _mm256_set1_ps(inv);
  int32_t p = 0;
  for (; p + 8 <= n; p += 8) {
    const __m128i h =
        _mm256_cvtps_ph(_mm256_mul_ps(_mm256_loadu_ps(scores + p), vi), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(scores + p, _mm256_cvtph_ps(h));
  }
  for (; p < n; ++p) scores[p] = fp16_to_fp32(fp32_to_fp16(scores[p] * inv));
}
#else
float scale_and_max(float* scores, int32_t n, float scale) {
  float max = -INFINITY;
  for (int32_t p = 0; p < n; ++p) {
    const float s = scores[p] * scale;
    scores[p] = s;
    if (s > max) max = s;
  }
  return max;
}
void normalize_to_f16(float* scores, int32_t n, float inv) {
  for (int32_t p = 0; p < n; ++p) scores[p] = fp16_to_fp32(fp32_to_fp16(scores[p] * inv));
}
#endif

// scores[p] = canon::exp_f32(scores[p] - max) for p < a multiple of 16, the values
// added to sum's lanes (lane p % 16); returns how many were done.
int32_t exp_and_sum(float* scores, int32_t n, float max, canon::SumLanes16* sum) {
  int32_t p = 0;
#if HEARTH_VEC_EXP_AVX512
  const __m512 vmax = _mm512_set1_ps(max);
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  for (; p + 16 <= n; p += 16) {
    const __m512 e = exp_canon16(_mm512_sub_ps(_mm512_loadu_ps(scores + p), vmax));
    _mm512_storeu_ps(scores + p, e);
    lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    hi = _mm512_add_pd(
        hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
  }
  _mm512_storeu_pd(sum->v, lo);
  _mm512_storeu_pd(sum->v + 8, hi);
#elif HEARTH_VEC_EXP_AVX2
  const __m256 vmax = _mm256_set1_ps(max);
  __m256d a[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(),
                  _mm256_setzero_pd()};
  for (; p + 16 <= n; p += 16) {
    for (int h = 0; h < 2; ++h) {
      const __m256 e = exp_canon8(_mm256_sub_ps(_mm256_loadu_ps(scores + p + 8 * h), vmax));
      _mm256_storeu_ps(scores + p + 8 * h, e);
      a[2 * h] = _mm256_add_pd(a[2 * h], _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
      a[2 * h + 1] = _mm256_add_pd(a[2 * h + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
  }
  for (int j = 0; j < 4; ++j) _mm256_storeu_pd(sum->v + 4 * j, a[j]);
#else
  (void)scores, (void)n, (void)max, (void)sum;
#endif
  return p;
}

// ---- the position-tiled path ------------------------------------------------------
//
// V is one ISA's vector of W floats. A tile is W positions: their K rows (this KV
// head's head_dim values) are converted and transposed once into kt[d * W + r] =
// k[p0 + r][d], then each query's W scores are one chain of head_dim FMAs, lane r
// accumulating exactly the definition's sequence for position p0 + r.

#if HEARTH_ATTN_AVX2
struct V8 {
  static constexpr int32_t W = 8;
  static constexpr int32_t kHeadsPerPass = 2;  // 16 registers: 2 heads x 4 vectors
  using T = __m256;
  static T zero() { return _mm256_setzero_ps(); }
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static T set1(float x) { return _mm256_set1_ps(x); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T load_f16(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  // r[i][j] -> r[j][i] for an 8 x 8 tile.
  static void transpose(T r[8]) {
    T t[8], u[8];
    for (int k = 0; k < 4; ++k) {
      t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
      t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    for (int k = 0; k < 2; ++k) {
      u[4 * k] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], 0x44);
      u[4 * k + 1] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], 0xEE);
      u[4 * k + 2] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
      u[4 * k + 3] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xEE);
    }
    for (int m = 0; m < 4; ++m) {
      r[m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x20);
      r[4 + m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x31);
    }
  }
};

#if HEARTH_ATTN_AVX512
struct V16 {
  static constexpr int32_t W = 16;
  static constexpr int32_t kHeadsPerPass = 4;  // P.V: 4 heads x 4 vectors of outputs
  using T = __m512;
  static T zero() { return _mm512_setzero_ps(); }
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static T set1(float x) { return _mm512_set1_ps(x); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T load_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  // r[i][j] -> r[j][i] for a 16 x 16 tile.
  static void transpose(T r[16]) {
    T t[16], u[16];
    for (int k = 0; k < 8; ++k) {
      t[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
      t[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    // u[4k + m], 128-bit lane L: column 4L + m of rows 4k..4k+3.
    for (int k = 0; k < 4; ++k) {
      u[4 * k] = _mm512_shuffle_ps(t[4 * k], t[4 * k + 2], 0x44);
      u[4 * k + 1] = _mm512_shuffle_ps(t[4 * k], t[4 * k + 2], 0xEE);
      u[4 * k + 2] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
      u[4 * k + 3] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xEE);
    }
    for (int m = 0; m < 4; ++m) {
      // Rows 0..7: [col m | col 8+m] of rows 0..3, then of rows 4..7 (and 4+m, 12+m).
      const T v0 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x88);
      const T v1 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xDD);
      const T w0 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x88);
      const T w1 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xDD);
      r[m] = _mm512_shuffle_f32x4(v0, w0, 0x88);
      r[8 + m] = _mm512_shuffle_f32x4(v0, w0, 0xDD);
      r[4 + m] = _mm512_shuffle_f32x4(v1, w1, 0x88);
      r[12 + m] = _mm512_shuffle_f32x4(v1, w1, 0xDD);
    }
  }
};
using Vec = V16;  // the widest this build has
#else
using Vec = V8;
#endif

constexpr int32_t kQueriesPerPass = 8;  // independent FMA chains per pass over a tile

// kt[d * W + r] = k row r, element d, for r < rows; rows past them are zero (their
// scores are never used).
template <class V>
void k_tile(const uint16_t* k0, size_t stride, int32_t rows, int32_t head_dim, float* kt) {
  for (int32_t d0 = 0; d0 < head_dim; d0 += V::W) {
    typename V::T r[V::W];
    for (int32_t i = 0; i < V::W; ++i)
      r[i] = i < rows ? V::load_f16(k0 + static_cast<size_t>(i) * stride + d0) : V::zero();
    V::transpose(r);
    for (int32_t j = 0; j < V::W; ++j) V::store(kt + static_cast<size_t>(d0 + j) * V::W, r[j]);
  }
}

// dst[j][r] = score of query j at tile position r: acc = fma(q[d], k[d], acc), d in
// order, from 0.
template <class V, int NQ>
void tile_scores(const float* kt, int32_t head_dim, const float* const* q, float* const* dst) {
  typename V::T acc[NQ];
  for (int j = 0; j < NQ; ++j) acc[j] = V::zero();
  for (int32_t d = 0; d < head_dim; ++d) {
    const typename V::T k = V::load(kt + static_cast<size_t>(d) * V::W);
    for (int j = 0; j < NQ; ++j) acc[j] = V::fma(V::set1(q[j][d]), k, acc[j]);
  }
  for (int j = 0; j < NQ; ++j) V::store(dst[j], acc[j]);
}

// out[h][d] = sum over p < n, in order, of probs[h * ps + p] * v[p][d], from 0, for NH
// heads and the NV vectors of outputs starting at d0.
template <class V, int NH, int NV>
void pv_pass(const uint16_t* v0, size_t stride, int32_t n, const float* probs, size_t ps,
             int32_t head_dim, int32_t d0, float* out) {
  typename V::T acc[NH][NV];
  for (int h = 0; h < NH; ++h)
    for (int j = 0; j < NV; ++j) acc[h][j] = V::zero();
  for (int32_t p = 0; p < n; ++p) {
    const uint16_t* v = v0 + static_cast<size_t>(p) * stride + d0;
    typename V::T vz[NV];
    for (int j = 0; j < NV; ++j) vz[j] = V::load_f16(v + j * V::W);
    for (int h = 0; h < NH; ++h) {
      const typename V::T a = V::set1(probs[static_cast<size_t>(h) * ps + p]);
      for (int j = 0; j < NV; ++j) acc[h][j] = V::fma(a, vz[j], acc[h][j]);
    }
  }
  for (int h = 0; h < NH; ++h)
    for (int j = 0; j < NV; ++j)
      V::store(out + static_cast<size_t>(h) * head_dim + d0 + j * V::W, acc[h][j]);
}

// Calls f.template operator()<K>() for the run-time k in 1..N.
template <int N, class F>
void with_k(int k, F&& f) {
  if constexpr (N >= 1) {
    if (k == N) {
      f.template operator()<N>();
    } else {
      with_k<N - 1>(k, f);
    }
  }
}

// In decode the KV rows come from memory (the weights streamed since the last token
// evicted them), one head's slice of a row at a time, a stride apart: too sparse for
// the hardware prefetcher, and a tile's few FMAs per row cannot hide the latency.
// So while tile [p0, p0 + rows) is computed, ask for the K rows kPrefetchTiles tiles
// ahead and for this tile's V rows (read by the P.V passes after the softmax).
// (Always inlined: GCC sees a function of prefetches alone as free of side effects
// and drops calls to it.)
constexpr int32_t kPrefetchTiles = 2;
[[gnu::always_inline]] inline void prefetch_kv_rows(const uint16_t* k0, const uint16_t* v0,
                                                    size_t stride, int32_t p0, int32_t rows,
                                                    int32_t n_max, int32_t head_dim) {
  const size_t row_bytes = static_cast<size_t>(head_dim) * sizeof(uint16_t);
  const int32_t ahead = p0 + kPrefetchTiles * rows;
  for (int32_t i = 0; i < rows; ++i) {
    const auto* v = reinterpret_cast<const char*>(v0 + static_cast<size_t>(p0 + i) * stride);
    for (size_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(v + b, 0, 2);
    if (ahead + i >= n_max) continue;
    const auto* k = reinterpret_cast<const char*>(k0 + static_cast<size_t>(ahead + i) * stride);
    for (size_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(k + b, 0, 3);
  }
}

template <class V>
void attend_tiled(const KvStore& kv, int32_t seq, int32_t layer, int32_t kv_head, int32_t group,
                  std::span<const TokenQueries> tokens, int32_t head_dim, float scale,
                  float* scratch) {
  const int32_t nt = static_cast<int32_t>(tokens.size());
  const int32_t n_max = tokens.back().pos + 1;
  const size_t ss = round_up(static_cast<size_t>(n_max), kMaxLanes);  // score row stride
  float* kt = scratch;
  float* scores = scratch + static_cast<size_t>(kMaxHeadDim) * kMaxLanes;
  const size_t kvs = static_cast<size_t>(kv.kv_dim());
  const size_t off = static_cast<size_t>(kv_head) * static_cast<size_t>(head_dim);
  const uint16_t* k0 = kv.k_row(seq, layer, 0) + off;
  const uint16_t* v0 = kv.v_row(seq, layer, 0) + off;
  const int32_t nq = nt * group;  // query j: token j / group, head j % group

  int32_t first = 0;  // tokens are in increasing pos order: the active ones are a suffix
  for (int32_t p0 = 0; p0 < n_max; p0 += V::W) {
    while (tokens[static_cast<size_t>(first)].pos < p0) ++first;
    prefetch_kv_rows(k0, v0, kvs, p0, std::min(V::W, n_max - p0), n_max, head_dim);
    k_tile<V>(k0 + static_cast<size_t>(p0) * kvs, kvs, std::min(V::W, n_max - p0), head_dim, kt);
    for (int32_t j0 = first * group; j0 < nq; j0 += kQueriesPerPass) {
      const int32_t m = std::min(kQueriesPerPass, nq - j0);
      const float* q[kQueriesPerPass];
      float* dst[kQueriesPerPass];
      for (int32_t j = 0; j < m; ++j) {
        const TokenQueries& t = tokens[static_cast<size_t>((j0 + j) / group)];
        q[j] = t.q + static_cast<size_t>((j0 + j) % group) * head_dim;
        dst[j] = scores + static_cast<size_t>(j0 + j) * ss + p0;
      }
      with_k<kQueriesPerPass>(m, [&]<int NQ>() { tile_scores<V, NQ>(kt, head_dim, q, dst); });
    }
  }
  for (int32_t j = 0; j < nq; ++j)
    softmax_f16(scores + static_cast<size_t>(j) * ss,
                tokens[static_cast<size_t>(j / group)].pos + 1, scale);
  for (int32_t i = 0; i < nt; ++i) {
    const TokenQueries& t = tokens[static_cast<size_t>(i)];
    for (int32_t h0 = 0; h0 < group; h0 += V::kHeadsPerPass) {
      const int32_t nh = std::min(V::kHeadsPerPass, group - h0);
      const float* probs = scores + static_cast<size_t>(i * group + h0) * ss;
      float* out = t.out + static_cast<size_t>(h0) * head_dim;
      for (int32_t d0 = 0; d0 < head_dim; d0 += 4 * V::W) {
        const int32_t nv = std::min<int32_t>(4, (head_dim - d0) / V::W);
        with_k<V::kHeadsPerPass>(nh, [&]<int NH>() {
          with_k<4>(nv, [&]<int NV>() {
            pv_pass<V, NH, NV>(v0, kvs, t.pos + 1, probs, ss, head_dim, d0, out);
          });
        });
      }
    }
  }
}
#endif  // HEARTH_ATTN_AVX2

}  // namespace

void softmax_f16(float* scores, int32_t n, float scale) {
  const float max = scale_and_max(scores, n, scale);
  canon::SumLanes16 sum;
  for (int32_t p = exp_and_sum(scores, n, max, &sum); p < n; ++p) {
    const float e = canon::exp_f32(scores[p] - max);
    scores[p] = e;
    sum.v[p % 16] += static_cast<double>(e);
  }
  const float inv = static_cast<float>(1.0 / sum.reduce());
  normalize_to_f16(scores, n, inv);
}

void attend_reference(const KvStore& kv, int32_t seq, int32_t layer, int32_t kv_head, int32_t pos,
                      const float* q, int32_t head_dim, float scale, float* scores, float* out) {
  const int32_t n = pos + 1;
  const size_t off = static_cast<size_t>(kv_head) * static_cast<size_t>(head_dim);
  // Products of two F16 values are exact in f32, so `s += a * b` rounds once per step
  // whether or not the compiler contracts it into an FMA.
  for (int32_t p = 0; p < n; ++p) {
    const uint16_t* k = kv.k_row(seq, layer, p) + off;
    float s = 0.0f;
    for (int32_t d = 0; d < head_dim; ++d) s += q[d] * fp16_to_fp32(k[d]);
    scores[p] = s;
  }
  softmax_f16(scores, n, scale);
  for (int32_t d = 0; d < head_dim; ++d) out[d] = 0.0f;
  for (int32_t p = 0; p < n; ++p) {
    const uint16_t* v = kv.v_row(seq, layer, p) + off;
    const float pr = scores[p];
    for (int32_t d = 0; d < head_dim; ++d) out[d] += pr * fp16_to_fp32(v[d]);
  }
}

size_t attend_tokens_scratch_floats(int32_t n_tokens, int32_t group, int32_t n_ctx,
                                    int32_t head_dim) {
  const size_t scores = static_cast<size_t>(std::max(1, n_tokens)) * static_cast<size_t>(group) *
                        round_up(static_cast<size_t>(std::max(1, n_ctx)), kMaxLanes);
  return static_cast<size_t>(kMaxHeadDim) * kMaxLanes +
         std::max(scores, static_cast<size_t>(head_dim));
}

bool attend_tokens_lanes(int32_t lanes, const KvStore& kv, int32_t seq, int32_t layer,
                         int32_t kv_head, int32_t group, std::span<const TokenQueries> tokens,
                         int32_t head_dim, float scale, float* scratch) {
  if (tokens.empty() || head_dim % lanes != 0 || head_dim > kMaxHeadDim) return false;
#if HEARTH_ATTN_AVX2
  if (lanes == 8) {
    attend_tiled<V8>(kv, seq, layer, kv_head, group, tokens, head_dim, scale, scratch);
    return true;
  }
#endif
#if HEARTH_ATTN_AVX512
  if (lanes == 16) {
    attend_tiled<V16>(kv, seq, layer, kv_head, group, tokens, head_dim, scale, scratch);
    return true;
  }
#endif
  (void)kv, (void)seq, (void)layer, (void)kv_head, (void)group, (void)scale, (void)scratch;
  return false;
}

namespace {
// HEARTH_KERNELS may pick a narrower kernel table than the CPU's best for A/B
// measurements (e.g. AVX2 on an AVX-512 machine, the yardstick's ISA); attention
// then follows it to 8 lanes. Same bits either way.
bool widest_lanes_allowed() {
  static const bool allowed = &active_kernels() == runnable_kernel_sets().front();
  return allowed;
}
}  // namespace

void attend_tokens(const KvStore& kv, int32_t seq, int32_t layer, int32_t kv_head, int32_t group,
                   std::span<const TokenQueries> tokens, int32_t head_dim, float scale,
                   float* scratch) {
  if (tokens.empty()) return;
  for (size_t i = 1; i < tokens.size(); ++i) assert(tokens[i - 1].pos < tokens[i].pos);
#if HEARTH_ATTN_AVX2
  if (head_dim % Vec::W == 0 && head_dim <= kMaxHeadDim &&
      (Vec::W == V8::W || widest_lanes_allowed())) {
    attend_tiled<Vec>(kv, seq, layer, kv_head, group, tokens, head_dim, scale, scratch);
    return;
  }
  if (head_dim % V8::W == 0 && head_dim <= kMaxHeadDim) {  // e.g. 24 or 40 with AVX-512
    attend_tiled<V8>(kv, seq, layer, kv_head, group, tokens, head_dim, scale, scratch);
    return;
  }
#endif
  float* scores = scratch + static_cast<size_t>(kMaxHeadDim) * kMaxLanes;
  for (const TokenQueries& t : tokens) {
    for (int32_t h = 0; h < group; ++h) {
      const size_t at = static_cast<size_t>(h) * static_cast<size_t>(head_dim);
      attend_reference(kv, seq, layer, kv_head, t.pos, t.q + at, head_dim, scale, scores,
                       t.out + at);
    }
  }
}

}  // namespace hearth::engine
