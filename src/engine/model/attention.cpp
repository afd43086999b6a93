#include "engine/model/attention.h"

#include <algorithm>
#include <cmath>

#include "engine/kernels/canonical.h"
#include "engine/model/kernels_bridge.h"
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

constexpr int32_t kRowBlock = 4;  // positions whose scores share one pass over q
constexpr int32_t kMaxRows = 64;  // row pointers gathered per block of positions

#if HEARTH_ATTN_AVX2
// The AVX2 kernel's 4 x 8-lane reduction (canonical.h: Lanes32::reduce).
inline float reduce_lanes(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  const __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
  const __m128 t = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  const __m128 u = _mm_add_ps(t, _mm_movehl_ps(t, t));
  return _mm_cvtss_f32(_mm_add_ss(u, _mm_movehdup_ps(u)));
}
inline __m256 load_f16x8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Four dots in the canonical 32-lane order (n a multiple of 32): element i of row r
// goes to lane i % 32 of row r's accumulators, exactly as dot_f16_f32 does.
void dot4_f16_f32(const uint16_t* const* rows, const float* q, int32_t n, float* out) {
  __m256 acc[kRowBlock][4];
  for (auto& r : acc) {
    for (auto& a : r) a = _mm256_setzero_ps();
  }
  for (int32_t i = 0; i < n; i += 32) {
    for (int c = 0; c < 4; ++c) {
      const __m256 qv = _mm256_loadu_ps(q + i + 8 * c);
      for (int r = 0; r < kRowBlock; ++r) {
        acc[r][c] = _mm256_fmadd_ps(load_f16x8(rows[r] + i + 8 * c), qv, acc[r][c]);
      }
    }
  }
  for (int r = 0; r < kRowBlock; ++r)
    out[r] = reduce_lanes(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
}

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

#if HEARTH_ATTN_AVX512
// The canonical 32-lane reduction (as reduce_lanes): lo holds lanes 0..15, hi 16..31.
inline float reduce_lanes32(__m512 lo, __m512 hi) {
  return reduce_lanes(_mm512_castps512_ps256(lo), _mm512_extractf32x8_ps(lo, 1),
                      _mm512_castps512_ps256(hi), _mm512_extractf32x8_ps(hi, 1));
}
constexpr int32_t kMaxChunks = 8;  // head_dim up to 256 on the grouped path

// scores[h * n + p] = dot_f16_f32(K row p, q_h) for every head h of the group, one K
// row converted once: element i of a 32-element chunk goes to lane i (lanes 0..15 in
// lo, 16..31 in hi), chunks in order, exactly the canonical order of the kernels.
void group_scores(const uint16_t* k0, size_t stride, int32_t n, const float* q, int32_t group,
                  int32_t head_dim, float* scores) {
  const int32_t chunks = head_dim / 32;
  for (int32_t p = 0; p < n; ++p) {
    const uint16_t* k = k0 + static_cast<size_t>(p) * stride;
    __m512 kz[2 * kMaxChunks];
    for (int32_t j = 0; j < 2 * chunks; ++j) {
      kz[j] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(k + 16 * j)));
    }
    for (int32_t h = 0; h < group; ++h) {
      const float* qh = q + static_cast<size_t>(h) * head_dim;
      __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
      for (int32_t c = 0; c < chunks; ++c) {
        lo = _mm512_fmadd_ps(kz[2 * c], _mm512_loadu_ps(qh + 32 * c), lo);
        hi = _mm512_fmadd_ps(kz[2 * c + 1], _mm512_loadu_ps(qh + 32 * c + 16), hi);
      }
      scores[static_cast<size_t>(h) * n + p] = reduce_lanes32(lo, hi);
    }
  }
}

// out_h += probs_h[p] * V row p for p = 0..n-1 in order, skipping zero probabilities
// (as axpy_f16 per position would be skipped), heads in blocks of 4 whose outputs stay
// in registers; each V row is converted once per block.
void group_weighted_sum(const uint16_t* v0, size_t stride, int32_t n, const float* probs,
                        int32_t group, int32_t head_dim, float* out) {
  constexpr int32_t kHeads = 4;
  const int32_t vecs = head_dim / 16;
  for (int32_t d0 = 0; d0 < vecs; d0 += 4) {  // 64 outputs per head per pass
    const int32_t nv = std::min<int32_t>(4, vecs - d0);
    for (int32_t h0 = 0; h0 < group; h0 += kHeads) {
      const int32_t nh = std::min(kHeads, group - h0);
      __m512 acc[kHeads][4];
      for (int32_t h = 0; h < nh; ++h) {
        for (int32_t j = 0; j < nv; ++j)
          acc[h][j] = _mm512_loadu_ps(out + static_cast<size_t>(h0 + h) * head_dim + 16 * (d0 + j));
      }
      for (int32_t p = 0; p < n; ++p) {
        const uint16_t* v = v0 + static_cast<size_t>(p) * stride + 16 * d0;
        __m512 vz[4];
        for (int32_t j = 0; j < nv; ++j)
          vz[j] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + 16 * j)));
        for (int32_t h = 0; h < nh; ++h) {
          const float pr = probs[static_cast<size_t>(h0 + h) * n + p];
          if (pr == 0.0f) continue;  // adds exactly nothing, as in weighted_sum_f16_rows
          const __m512 a = _mm512_set1_ps(pr);
          for (int32_t j = 0; j < nv; ++j) acc[h][j] = _mm512_fmadd_ps(a, vz[j], acc[h][j]);
        }
      }
      for (int32_t h = 0; h < nh; ++h) {
        for (int32_t j = 0; j < nv; ++j)
          _mm512_storeu_ps(out + static_cast<size_t>(h0 + h) * head_dim + 16 * (d0 + j), acc[h][j]);
      }
    }
  }
}
#endif

// The softmax of attend_head over one head's n scores, in place: scaled, max
// subtracted, exp, normalized by the double sum, rounded to F16.
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

bool attend_group(const KvStore& kv, int32_t seq, int32_t layer, int32_t pos, int32_t kv_head,
                  int32_t group, const float* q, int32_t head_dim, float scale, float* scores,
                  float* out) {
#if HEARTH_ATTN_AVX512
  if (head_dim % 32 != 0 || head_dim > 32 * kMaxChunks) return false;
  const int32_t n = pos + 1;
  const size_t stride = static_cast<size_t>(kv.kv_dim());
  const int64_t off = static_cast<int64_t>(kv_head) * head_dim;
  group_scores(kv.k_row(seq, layer, 0) + off, stride, n, q, group, head_dim, scores);
  for (int32_t h = 0; h < group; ++h) softmax_f16(scores + static_cast<size_t>(h) * n, n, scale);
  for (int32_t i = 0; i < group * head_dim; ++i) out[i] = 0.0f;
  group_weighted_sum(kv.v_row(seq, layer, 0) + off, stride, n, scores, group, head_dim, out);
  return true;
#else
  (void)kv, (void)seq, (void)layer, (void)pos, (void)kv_head, (void)group, (void)q;
  (void)head_dim, (void)scale, (void)scores, (void)out;
  return false;
#endif
}

void dot_f16_rows(const uint16_t* const* rows, int32_t n_rows, const float* q, int32_t n,
                  float* scores) {
  int32_t i = 0;
#if HEARTH_ATTN_AVX2
  if (n % 32 == 0) {
    for (; i + kRowBlock <= n_rows; i += kRowBlock) dot4_f16_f32(rows + i, q, n, scores + i);
  }
#endif
  for (; i < n_rows; ++i) scores[i] = kb::dot_f16(rows[i], q, n);
}

void weighted_sum_f16_rows(const uint16_t* const* rows, const float* probs, int32_t n_rows,
                           int32_t n, float* out) {
#if HEARTH_ATTN_AVX2
  if (n % 8 == 0) {
    // Up to 64 outputs stay in registers across all rows; per output the same FMAs
    // in the same row order as axpy_f16.
    for (int32_t d0 = 0; d0 < n; d0 += 64) {
      const int32_t groups = std::min<int32_t>(8, (n - d0) / 8);
      __m256 acc[8] = {};
      for (int g = 0; g < groups; ++g) acc[g] = _mm256_loadu_ps(out + d0 + 8 * g);
      for (int32_t r = 0; r < n_rows; ++r) {
        if (probs[r] == 0.0f) continue;
        const __m256 a = _mm256_set1_ps(probs[r]);
        const uint16_t* v = rows[r] + d0;
        for (int g = 0; g < groups; ++g) acc[g] = _mm256_fmadd_ps(a, load_f16x8(v + 8 * g), acc[g]);
      }
      for (int g = 0; g < groups; ++g) _mm256_storeu_ps(out + d0 + 8 * g, acc[g]);
    }
    return;
  }
#endif
  for (int32_t r = 0; r < n_rows; ++r) {
    if (probs[r] == 0.0f) continue;  // adds exactly nothing
    kb::axpy_f16(out, probs[r], rows[r], n);
  }
}

void attend_head(const KvStore& kv, const HeadQuery& hq, int32_t head_dim, float scale,
                 float* scores, float* out) {
  const int32_t n = hq.pos + 1;
  const int64_t off = static_cast<int64_t>(hq.kv_head) * head_dim;
  const uint16_t* rows[kMaxRows];
  for (int32_t p0 = 0; p0 < n; p0 += kMaxRows) {
    const int32_t m = std::min(kMaxRows, n - p0);
    for (int32_t i = 0; i < m; ++i) rows[i] = kv.k_row(hq.seq, hq.layer, p0 + i) + off;
    dot_f16_rows(rows, m, hq.q, head_dim, scores + p0);
  }
  softmax_f16(scores, n, scale);
  for (int32_t d = 0; d < head_dim; ++d) out[d] = 0.0f;
  // Accumulate block by block, continuing from the previous partial sums: the FMA
  // sequence per output stays in position order.
  for (int32_t p0 = 0; p0 < n; p0 += kMaxRows) {
    const int32_t m = std::min(kMaxRows, n - p0);
    for (int32_t i = 0; i < m; ++i) rows[i] = kv.v_row(hq.seq, hq.layer, p0 + i) + off;
    weighted_sum_f16_rows(rows, scores + p0, m, head_dim, out);
  }
}

}  // namespace hearth::engine
