// The element-wise stages and attention of a GPU transformer layer (layer_ops.cu,
// attention.cu). C++17 host interface, no CUDA header (see cuda_api.h).
//
// Every pointer is a device pointer and every call is asynchronous on `stream`. Token
// rows are contiguous: T tokens of n values are x[t * n + i]. Batch invariance (as in
// matmul.h): each token's outputs are computed by operations whose order depends only
// on that token's own inputs (its row, its sequence's KV), never on T or the other
// tokens: fixed reduction trees, no float atomics.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/cuda/cuda_api.h"

namespace hearth::engine::cuda {

// y = x * (1 / sqrt(mean(x^2) + eps)) * w per token (y may be x). The mean is summed in
// double.
Error rms_norm(const float* x, const float* w, int32_t n, float eps, int64_t T, float* y,
               const Stream& stream);
// x += p, then y = rms_norm(x) (the residual add and the next norm, fused).
Error add_rms_norm(float* x, const float* p, const float* w, int32_t n, float eps, int64_t T,
                   float* y, const Stream& stream);
// x[i] += p[i] for i < count.
Error add(float* x, const float* p, int64_t count, const Stream& stream);
// x[t * n + i] += b[i].
Error add_bias(float* x, const float* b, int32_t n, int64_t T, const Stream& stream);
// rms_norm of every head_dim slice of every token (qk_norm), in place; w: head_dim.
Error head_rms_norm(float* x, const float* w, int32_t n_heads, int32_t head_dim, float eps,
                    int64_t T, const Stream& stream);
// RoPE in place on n_heads heads of head_dim per token; the first n_rot dims rotate.
// cs: per token n_rot floats (cos, sin) pairs (engine/model/rope.h's rope_angles). neox
// rotates (i, i + n_rot / 2), else (2i, 2i + 1); each pair as engine/model/rope.cpp:
// a' = fma(a, c, -(b * s)), b' = fma(a, s, b * c).
Error rope(float* x, int32_t n_heads, int32_t head_dim, int32_t n_rot, const float* cs, bool neox,
           int64_t T, const Stream& stream);
// g[i] = silu(g[i]) * u[i].
Error silu_mul(float* g, const float* u, int64_t count, const Stream& stream);
// Rows of x picked by idx: out[j * n + i] = x[idx[j] * n + i], j < count.
Error gather_rows(const float* x, const int32_t* idx, int64_t count, int32_t n, float* out,
                  const Stream& stream);

// One layer's F16 KV on the device. Sequence s's K row of position p is
// k + s * seq_stride + p * kv_dim (uint16_t F16 elements); its V row is that plus v_offset.
struct KvLayer {
  uint16_t* k = nullptr;
  int64_t seq_stride = 0;
  int64_t v_offset = 0;
  int32_t kv_dim = 0;
};

// Per token t: K row of (seq[t], pos[t]) = F16 of k[t * kv_dim ...], V likewise.
// q16[t * q_dim + i] = F16 of (q[...] * q_scale) (q_scale 1: none).
Error store_kv_and_round_q(const float* q, const float* k, const float* v, const int32_t* seq,
                           const int32_t* pos, int64_t T, int32_t q_dim, float q_scale,
                           const KvLayer& kv, uint16_t* q16, const Stream& stream);

// Causal attention: every query head h of token t (sequence seq[t], position pos[t])
// attends to positions 0..pos[t] of its sequence through KV head h / (n_head / n_head_kv):
// scores = q16 . k (F16 values, f32 sums), times `scale`, softmax (f32, its sum in a
// fixed order), P.V into out[t * n_head * head_dim + h * head_dim + d] as f32. The K and
// V of the token's own position must already be stored. The order of every sum depends
// only on pos[t], never on T or the other tokens.
Error attention(const uint16_t* q16, const KvLayer& kv, const int32_t* seq, const int32_t* pos,
                int64_t T, int32_t n_head, int32_t n_head_kv, int32_t head_dim, float scale,
                int32_t n_ctx, float* out, void* scratch, size_t scratch_bytes,
                const Stream& stream);
// Device scratch attention() needs for T tokens of n_head heads over up to n_ctx positions.
size_t attention_scratch_bytes(int64_t T, int32_t n_head, int32_t n_ctx);

}  // namespace hearth::engine::cuda
