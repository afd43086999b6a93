// The element-wise stages of a GPU layer (layer_ops.h): norms, residual adds, RoPE,
// SwiGLU, row gathers and the F16 KV store. Each mirrors the CPU definition it names,
// with every rounding explicit (__*_rn) so that nvcc contracts nothing; the norms'
// sums use a fixed reduction tree per token (one block, or one warp, per row), so a
// token's bits never depend on T.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <string>

#include "engine/cuda/canon.cuh"
#include "engine/cuda/layer_ops.h"

namespace hearth::engine::cuda {
namespace {

constexpr int kNormThreads = 256;  // one block per token row
constexpr int kEwThreads = 256;    // element-wise kernels
constexpr int64_t kMaxGrid = 2147483647;

cudaStream_t raw(const Stream& s) {
  return static_cast<cudaStream_t>(s.handle());
}

Error bad(const char* fn, const char* field, long long value) {
  return std::string(fn) + ": bad " + field + " " + std::to_string(value);
}

unsigned blocks_for(int64_t count) {
  return static_cast<unsigned>((count + kEwThreads - 1) / kEwThreads);
}

// Sum of a block's double partials by a fixed tree (lane shuffles, then the warps' sums
// in order); every thread gets the total.
__device__ double block_sum(double v) {
  __shared__ double warp_sums[kNormThreads / 32];
  __shared__ double total;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) warp_sums[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    double s = 0.0;
    for (int w = 0; w < kNormThreads / 32; ++w) s += warp_sums[w];
    total = s;
  }
  __syncthreads();
  return total;
}

// engine/model/norm.cpp rms_norm: mean of x*x (each product in float, summed in double),
// scale = 1 / sqrt(mean + eps) in float, y = (x * scale) * w. With p, x += p first.
__global__ void k_rms_norm(float* x, const float* p, const float* w, int32_t n, float eps,
                           float* y) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * n;
  float* xr = x + row;
  double part = 0.0;
  for (int32_t i = threadIdx.x; i < n; i += kNormThreads) {
    float v = xr[i];
    if (p != nullptr) {
      v = __fadd_rn(v, p[row + i]);
      xr[i] = v;
    }
    part += static_cast<double>(__fmul_rn(v, v));
  }
  const double sum = block_sum(part);
  const float mean = static_cast<float>(sum / n);
  const float scale = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(mean, eps)));
  for (int32_t i = threadIdx.x; i < n; i += kNormThreads)
    y[row + i] = __fmul_rn(__fmul_rn(xr[i], scale), w[i]);
}

// rms_norm of each head_dim slice: one warp per (token, head), lanes' double partials
// combined by a fixed shuffle tree.
__global__ void k_head_rms_norm(float* x, const float* w, int32_t head_dim, float eps,
                                int64_t n_rows) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (r >= n_rows) return;
  const int lane = threadIdx.x % 32;
  float* v = x + r * head_dim;
  double part = 0.0;
  for (int32_t i = lane; i < head_dim; i += 32) part += static_cast<double>(__fmul_rn(v[i], v[i]));
  for (int o = 16; o > 0; o >>= 1) part += __shfl_xor_sync(0xffffffffu, part, o);
  const float mean = static_cast<float>(part / head_dim);
  const float scale = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(mean, eps)));
  for (int32_t i = lane; i < head_dim; i += 32) v[i] = __fmul_rn(__fmul_rn(v[i], scale), w[i]);
}

__global__ void k_add(float* x, const float* p, int64_t count) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) x[i] = __fadd_rn(x[i], p[i]);
}

__global__ void k_add_bias(float* x, const float* b, int32_t n, int64_t count) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) x[i] = __fadd_rn(x[i], b[i % n]);
}

// engine/model/rope.cpp rope_apply: a' = fma(a, c, -(b * s)), b' = fma(a, s, b * c).
// One thread per rotated pair.
__global__ void k_rope(float* x, int32_t n_heads, int32_t head_dim, int32_t n_rot, const float* cs,
                       bool neox, int64_t count) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const int32_t half = n_rot / 2;
  const int32_t j = static_cast<int32_t>(i % half);  // pair index: i0 = 2j
  const int64_t th = i / half;                       // token * n_heads + head
  const int64_t t = th / n_heads;
  float* v = x + th * head_dim;
  const float c = cs[t * n_rot + 2 * j], s = cs[t * n_rot + 2 * j + 1];
  float* a = neox ? v + j : v + 2 * j;
  float* b = neox ? v + j + half : v + 2 * j + 1;
  const float x0 = *a, x1 = *b;
  *a = __fmaf_rn(x0, c, -__fmul_rn(x1, s));
  *b = __fmaf_rn(x0, s, __fmul_rn(x1, c));
}

__global__ void k_silu_mul(float* g, const float* u, int64_t count) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) g[i] = canon_silu_mul(g[i], u[i]);
}

__global__ void k_gather_rows(const float* x, const int32_t* idx, int32_t n, int64_t total,
                              float* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t j = i / n;
  out[i] = x[static_cast<int64_t>(idx[j]) * n + i % n];
}

// One block row per token (blockIdx.y); element e < max(q_dim, kv_dim).
__global__ void k_store_kv(const float* q, const float* k, const float* v, const int32_t* seq,
                           const int32_t* pos, int32_t q_dim, float q_scale, KvLayer kv,
                           uint16_t* q16) {
  const int64_t t = blockIdx.y;
  const int32_t e = static_cast<int32_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < q_dim) {
    const float qs = q_scale == 1.0f ? q[t * q_dim + e] : __fmul_rn(q[t * q_dim + e], q_scale);
    q16[t * q_dim + e] = __half_as_ushort(__float2half_rn(qs));
  }
  if (e < kv.kv_dim) {
    uint16_t* krow = kv.k + seq[t] * kv.seq_stride + static_cast<int64_t>(pos[t]) * kv.kv_dim;
    krow[e] = __half_as_ushort(__float2half_rn(k[t * kv.kv_dim + e]));
    krow[kv.v_offset + e] = __half_as_ushort(__float2half_rn(v[t * kv.kv_dim + e]));
  }
}

Error norm_args(const char* fn, int32_t n, int64_t T) {
  if (n <= 0) return bad(fn, "n", n);
  if (T < 0 || T > kMaxGrid) return bad(fn, "T", T);
  return {};
}

}  // namespace

Error rms_norm(const float* x, const float* w, int32_t n, float eps, int64_t T, float* y,
               const Stream& stream) {
  if (Error e = norm_args("rms_norm", n, T); !e.empty()) return e;
  if (T == 0) return {};
  k_rms_norm<<<static_cast<unsigned>(T), kNormThreads, 0, raw(stream)>>>(const_cast<float*>(x),
                                                                         nullptr, w, n, eps, y);
  return launch_error("rms_norm");
}

Error add_rms_norm(float* x, const float* p, const float* w, int32_t n, float eps, int64_t T,
                   float* y, const Stream& stream) {
  if (Error e = norm_args("add_rms_norm", n, T); !e.empty()) return e;
  if (T == 0) return {};
  k_rms_norm<<<static_cast<unsigned>(T), kNormThreads, 0, raw(stream)>>>(x, p, w, n, eps, y);
  return launch_error("add_rms_norm");
}

Error add(float* x, const float* p, int64_t count, const Stream& stream) {
  if (count < 0 || blocks_for(count) > kMaxGrid) return bad("add", "count", count);
  if (count == 0) return {};
  k_add<<<blocks_for(count), kEwThreads, 0, raw(stream)>>>(x, p, count);
  return launch_error("add");
}

Error add_bias(float* x, const float* b, int32_t n, int64_t T, const Stream& stream) {
  if (n <= 0) return bad("add_bias", "n", n);
  if (T < 0 || blocks_for(T * n) > kMaxGrid) return bad("add_bias", "T", T);
  if (T == 0) return {};
  k_add_bias<<<blocks_for(T * n), kEwThreads, 0, raw(stream)>>>(x, b, n, T * n);
  return launch_error("add_bias");
}

Error head_rms_norm(float* x, const float* w, int32_t n_heads, int32_t head_dim, float eps,
                    int64_t T, const Stream& stream) {
  if (n_heads <= 0) return bad("head_rms_norm", "n_heads", n_heads);
  if (head_dim <= 0) return bad("head_rms_norm", "head_dim", head_dim);
  if (T < 0 || T * n_heads / 8 > kMaxGrid) return bad("head_rms_norm", "T", T);
  if (T == 0) return {};
  const int64_t rows = T * n_heads;
  const int warps = kEwThreads / 32;
  k_head_rms_norm<<<static_cast<unsigned>((rows + warps - 1) / warps), kEwThreads, 0,
                    raw(stream)>>>(x, w, head_dim, eps, rows);
  return launch_error("head_rms_norm");
}

Error rope(float* x, int32_t n_heads, int32_t head_dim, int32_t n_rot, const float* cs, bool neox,
           int64_t T, const Stream& stream) {
  if (n_heads <= 0) return bad("rope", "n_heads", n_heads);
  if (head_dim <= 0) return bad("rope", "head_dim", head_dim);
  if (n_rot <= 0 || n_rot % 2 != 0 || n_rot > head_dim) return bad("rope", "n_rot", n_rot);
  const int64_t count = T * n_heads * (n_rot / 2);
  if (T < 0 || blocks_for(count) > kMaxGrid) return bad("rope", "T", T);
  if (T == 0) return {};
  k_rope<<<blocks_for(count), kEwThreads, 0, raw(stream)>>>(x, n_heads, head_dim, n_rot, cs, neox,
                                                            count);
  return launch_error("rope");
}

Error silu_mul(float* g, const float* u, int64_t count, const Stream& stream) {
  if (count < 0 || blocks_for(count) > kMaxGrid) return bad("silu_mul", "count", count);
  if (count == 0) return {};
  k_silu_mul<<<blocks_for(count), kEwThreads, 0, raw(stream)>>>(g, u, count);
  return launch_error("silu_mul");
}

Error gather_rows(const float* x, const int32_t* idx, int64_t count, int32_t n, float* out,
                  const Stream& stream) {
  if (n <= 0) return bad("gather_rows", "n", n);
  if (count < 0 || blocks_for(count * n) > kMaxGrid) return bad("gather_rows", "count", count);
  if (count == 0) return {};
  k_gather_rows<<<blocks_for(count * n), kEwThreads, 0, raw(stream)>>>(x, idx, n, count * n, out);
  return launch_error("gather_rows");
}

Error store_kv_and_round_q(const float* q, const float* k, const float* v, const int32_t* seq,
                           const int32_t* pos, int64_t T, int32_t q_dim, float q_scale,
                           const KvLayer& kv, uint16_t* q16, const Stream& stream) {
  if (q_dim <= 0) return bad("store_kv_and_round_q", "q_dim", q_dim);
  if (kv.kv_dim <= 0) return bad("store_kv_and_round_q", "kv.kv_dim", kv.kv_dim);
  if (kv.k == nullptr) return "store_kv_and_round_q: kv.k is null";
  if (T < 0 || T > 65535) return bad("store_kv_and_round_q", "T", T);
  if (T == 0) return {};
  const int32_t widest = q_dim > kv.kv_dim ? q_dim : kv.kv_dim;
  const dim3 grid(blocks_for(widest), static_cast<unsigned>(T));
  k_store_kv<<<grid, kEwThreads, 0, raw(stream)>>>(q, k, v, seq, pos, q_dim, q_scale, kv, q16);
  return launch_error("store_kv_and_round_q");
}

}  // namespace hearth::engine::cuda
