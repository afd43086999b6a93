// Causal attention over a sequence's KV (F16, or Q8_0 / Q4_0 blocks), with llama.cpp's (flash
// attention off) roundings: Q is F16, scores and softmax in f32 (the softmax sum in double lanes,
// exp by the engine's canonical exp), probabilities rounded to F16 before P.V.
//
// The canonical order (numerics hearth-canon-v3), for one query head attending to
// positions 0..pos:
//   score[p] = sum over d = 0..head_dim-1, in order, of q[d] * k[p][d], from 0;
//   prob     = softmax_f16(score, pos + 1, scale);
//   out[d]   = sum over p = 0..pos, in order, of prob[p] * v[p][d], from 0.
// q, k, prob and v are all F16 values, so every product is exact in f32: each step is
// one rounding of (sum + product), the same with or without FMA. The result depends
// only on the sequence's KV and q: not on the batch, the thread count or the ISA.
//
// Quantized KV (KvType::kQ8_0 / kQ4_0, hearth/engine/kv_type.h): each head's slice of a
// K row is head_dim / 32 blocks b of scale dk[p][b] and integers qk[p][d] (Q8_0: q,
// Q4_0: q - 8), V's likewise (dv, qv). The order becomes
//   inner    = sum over d of block b, in order, of q[d] * qk[p][d], from 0;
//   score[p] = fma(dk[p][b], inner, score[p]) over b = 0, 1, ..., from 0;
//   prob     = softmax_f16(score, pos + 1, scale), as above;
//   out[d]   = fma(prob[p] * dv[p][b(d)], qv[p][d], out[d]) over p = 0..pos, from 0,
// where b(d) = d / 32. q * qk (F16 times |qk| <= 128) and prob * dv (two F16 values)
// are exact in f32; the fmas are explicit, so again nothing depends on contraction.
// K and V are quantized when written (llama.cpp's reference quantizers, per token),
// and Q stays F16: unlike llama.cpp, which quantizes Q to Q8_0 for the K dot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/kernels/kernel_set.h"
#include "engine/model/kv_store.h"

namespace hearth::engine {

// TokenQueries (one token's queries on one KV head) is in engine/kernels/kernel_set.h,
// beside the kernels that take it.

// Gemma's changes to the definition above: with a window, a query at pos attends to
// positions ws = canon::window_start(pos, window) .. pos only (the sums run over those,
// score / value lanes counted from ws); with a soft-cap c > 0 the scores pass through
// canon::softcap before the softmax.
struct AttendMask {
  float softcap = 0.0f;
  int32_t window = 0;
};

// The definition above, plainly, for one query head (the tests' reference and the
// path of the scalar kernel table). scores: scratch of at least pos + 1 floats.
void attend_reference(const KvStore& kv, int32_t seq, int32_t layer, int32_t kv_head, int32_t pos,
                      const float* q, int32_t head_dim, float scale, float* scores, float* out,
                      AttendMask mask = {});

// Floats of scratch attend_tokens needs for up to n_tokens tokens of `group` heads each
// in a sequence of up to n_ctx positions.
size_t attend_tokens_scratch_floats(int32_t n_tokens, int32_t group, int32_t n_ctx,
                                    int32_t head_dim);

// Every query head of `tokens` (all of sequence seq, in increasing pos order) on KV head
// kv_head. Each output has exactly attend_reference's bits. The tokens share the work
// of reading K: positions are taken 16 (AVX-512) or 8 (AVX2) at a time, transposed once
// to f32 columns, and every query's scores for them come from one FMA chain per query
// (vectorized across positions, so no horizontal sums). The tiling is the active kernel
// table's (KernelSet::attend, chosen at run time); the scalar table takes
// attend_reference head by head.
// scratch: attend_tokens_scratch_floats(tokens.size(), group, n_ctx, head_dim) floats.
void attend_tokens(const KvStore& kv, int32_t seq, int32_t layer, int32_t kv_head, int32_t group,
                   std::span<const TokenQueries> tokens, int32_t head_dim, float scale,
                   float* scratch, AttendMask mask = {});

// attend_tokens on one kernel table's tiling of width `lanes` (8 or 16; 0: its widest
// for head_dim), for tests that check every table and width the CPU can run. False
// (nothing done) when the table has no tiled attention or head_dim does not fit it.
bool attend_tokens_with(const KernelSet& kernels, int32_t lanes, const KvStore& kv, int32_t seq,
                        int32_t layer, int32_t kv_head, int32_t group,
                        std::span<const TokenQueries> tokens, int32_t head_dim, float scale,
                        float* scratch, AttendMask mask = {});

// One decode token on n_kv_heads KV heads (kv heads 0 .. n_kv_heads - 1), the score
// pass split by positions (KernelSet::attend_scores): attend_split_tasks makes the
// tasks (per_head[h]: the token's queries on KV head h; shared:
// n_kv_heads * attend_tokens_scratch_floats(1, group, n_ctx, head_dim) floats, where
// their score rows are kept) and is false when the active table does not split this
// layer. Then attend_split_scores over disjoint position ranges that cover [0, pos],
// each starting at a multiple of kAttendMaxLanes (from any threads, each with its own
// scratch of attend_split_scratch_floats(n_kv_heads, group, head_dim)), and once all
// are done attend_split_finish per head. Outputs: attend_tokens's bits.
bool attend_split_tasks(const KvStore& kv, int32_t seq, int32_t layer, int32_t n_kv_heads,
                        int32_t group, const TokenQueries* per_head, int32_t head_dim, float scale,
                        float* shared, AttendTask* tasks, AttendMask mask = {});
void attend_split_scores(const AttendTask* tasks, int32_t n_kv_heads, int32_t p0, int32_t p1,
                         float* scratch);
void attend_split_finish(const AttendTask& task);
// How a decode token at pos splits into parts for attend_split_scores: whole tiles of
// kAttendMaxLanes positions (attend_split_tiles of them), part `part` of `parts` (at most
// that many) taking [p0, p1), as even as whole tiles go.
int64_t attend_split_tiles(int32_t pos);
struct PositionRange {
  int32_t p0, p1;
};
PositionRange attend_split_part(int64_t tiles, int64_t parts, int64_t part);

// The softmax of attention, in place over n scores: scores[p] * scale, minus their
// max, canon::exp_f32, summed in canon::SumLanes16's order (double lanes), times
// 1/sum as float, rounded to F16 (probabilities as F16 values). SIMD per the active
// kernel table (chosen at run time); the bits are those of that scalar definition.
void softmax_f16(float* scores, int32_t n, float scale);

}  // namespace hearth::engine
