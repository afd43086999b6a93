// Causal attention of one query head over its sequence's F16 KV, with llama.cpp's
// (flash attention off) roundings: Q is F16, scores and softmax in f32 (the softmax
// sum in double lanes, exp by the engine's canonical exp), probabilities rounded to
// F16 before P.V. Every reduction runs in
// position order 0..pos, so the result depends only on the sequence's KV and q.
#pragma once

#include <cstdint>

#include "engine/model/kv_store.h"

namespace hearth::engine {

struct HeadQuery {
  int32_t seq;
  int32_t layer;
  int32_t pos;  // attends to positions 0..pos
  int32_t kv_head;
  const float* q;  // head_dim values, already rounded to F16
};

// out: head_dim floats. scores: scratch of at least pos+1 floats.
void attend_head(const KvStore& kv, const HeadQuery& hq, int32_t head_dim, float scale,
                 float* scores, float* out);

// All `group` query heads that share KV head `kv_head` (GQA), for one token: q holds
// their head_dim-value queries back to back, out receives their outputs the same way,
// scores is scratch of group * (pos + 1) floats. Each output is bit-identical to
// attend_head's for that head (the same operations per score and per output, in the
// same order); the group only shares each K and V row's F16 -> F32 conversion.
// Returns false (and does nothing) when this build has no grouped path for head_dim;
// the caller then uses attend_head.
bool attend_group(const KvStore& kv, int32_t seq, int32_t layer, int32_t pos, int32_t kv_head,
                  int32_t group, const float* q, int32_t head_dim, float scale, float* scores,
                  float* out);

// The softmax of attention, in place over n scores: scores[p] * scale, minus their
// max, canon::exp_f32, summed in canon::SumLanes16's order (double lanes), times
// 1/sum as float, rounded to F16 (probabilities as F16 values). SIMD per this
// build's ISA; the bits are those of that scalar definition.
void softmax_f16(float* scores, int32_t n, float scale);

// The two loops of attend_head, exposed for tests. Both give exactly the bits of the
// kernels' dot_f16_f32 / axpy_f16 called once per position (same operations per
// output, same order); they only process several positions per pass.
//
// scores[i] = dot_f16_f32(rows[i], q, n) for i < n_rows.
void dot_f16_rows(const uint16_t* const* rows, int32_t n_rows, const float* q, int32_t n,
                  float* scores);
// out += ..., i.e. for i = 0..n_rows-1 with probs[i] != 0: axpy_f16(out, probs[i], rows[i]).
void weighted_sum_f16_rows(const uint16_t* const* rows, const float* probs, int32_t n_rows,
                           int32_t n, float* out);

}  // namespace hearth::engine
