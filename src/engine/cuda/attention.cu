// Causal attention over the F16 KV on the GPU (layer_ops.h attention), deterministic
// and batch-invariant.
//
// Positions are cut into fixed chunks of kChunk (chunk c holds positions
// [c * kChunk, (c + 1) * kChunk), from position 0), so the chunking depends only on a
// token's position. For every (token, query head), over its chunks c = 0 .. pos / kChunk:
//   score[p] = sum over d = 0..head_dim-1, in order, of q[d] * k[p][d], from 0, times
//              scale (engine/model/attention.h's order: one thread per position);
//   m_c      = max of the chunk's scores; l_c = sum of exp(score - m_c) in double by a
//              fixed tree (lanes by shuffles, then the warps in order);
//   M        = max of the m_c; L = sum over c, in order, of l_c * exp(m_c - M) (double);
//   prob[p]  = F16 of (exp(score[p] - M) * float(1 / L)), as the CPU's softmax_f16;
//   o_c[d]   = sum over the chunk's positions, in order, of prob[p] * v[p][d], from 0;
//   out[d]   = sum over c, in order, of o_c[d], from 0.
// exp is the engine's canonical exp (canon.cuh), so up to position kChunk - 1 the
// output has the CPU reference's bits unless the double sum L rounds differently.
//
// When few (token, head) rows are in the call (decode), the chunks run in parallel:
// k_stats (one block per (chunk, head block, token)) writes the scores, m_c and l_c,
// k_pv_chunk writes each o_c from those scores, k_combine sums the o_c. Otherwise (prefill) k_seq,
// one block per (head block, token), does the same chunk after chunk. Both perform the same float
// operations in the same order, so the choice (which depends on T) never changes bits.
// A block serves hpb query heads of one KV head (GQA), sharing the K and V loads.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <string>

#include "engine/cuda/canon.cuh"
#include "engine/cuda/layer_ops.h"

namespace hearth::engine::cuda {
namespace {

constexpr int kChunk = 256;    // positions per chunk
constexpr int kThreads = 256;  // one thread per position of a chunk
constexpr int kWarps = kThreads / 32;
constexpr int kMaxHeadDim = 256;
constexpr int kMaxHpb = 8;  // query heads per block
// (head, d pair) outputs per thread: hpb * head_dim / 2 <= kThreads * kMaxPairs.
constexpr int kMaxPairs = kMaxHpb * kMaxHeadDim / 2 / kThreads;
// Up to this many (token, head) rows in a call, the P.V runs chunk-parallel.
constexpr int64_t kParallelRows = 512;

static_assert(kChunk == kThreads, "one thread per chunk position");

struct Params {
  const uint16_t* q16;
  KvLayer kv;
  const int32_t* seq;
  const int32_t* pos;
  int32_t n_head, group, head_dim, n_ctx, nch;
  float scale;
  double* st_l;  // [t][h][c]
  float* st_m;   // [t][h][c]
  float* part;   // [t][h][c][head_dim] (chunk-parallel P.V only)
  float* sc;     // [t][h][c][kChunk] scaled scores (chunk-parallel only; else recomputed)
  float* out;
};

template <int HPB>
struct Smem {
  float q[HPB][kMaxHeadDim];
  float s[HPB][kChunk];
  float wf[HPB][kWarps];
  double wd[HPB][kWarps];
  float m[HPB];
  double l[HPB];
  float big_m[HPB];
  float inv[HPB];
};

__device__ __forceinline__ bool pos_ok(const Params& P, int32_t pos) {
  return pos >= 0 && pos < P.n_ctx;
}

__device__ __forceinline__ int64_t row_of(const Params& P, int64_t t, int32_t h) {
  return t * P.n_head + h;
}

template <int HPB>
__device__ void load_q(const Params& P, Smem<HPB>& sm, int64_t t, int32_t h0) {
  for (int i = threadIdx.x; i < HPB * P.head_dim; i += kThreads) {
    const int h = i / P.head_dim, d = i % P.head_dim;
    sm.q[h][d] = __half2float(__ushort_as_half(P.q16[row_of(P, t, h0 + h) * P.head_dim + d]));
  }
  __syncthreads();
}

// sm.s[h][i] = scaled score of position c * kChunk + i (-inf past pos).
template <int HPB>
__device__ void chunk_scores(const Params& P, Smem<HPB>& sm, int64_t t, int32_t kvh, int32_t c,
                             int32_t pos) {
  const int i = threadIdx.x;
  const int32_t p = c * kChunk + i;
  if (p > pos) {
#pragma unroll
    for (int h = 0; h < HPB; ++h) sm.s[h][i] = -INFINITY;
    return;
  }
  const uint16_t* krow = P.kv.k + P.seq[t] * P.kv.seq_stride +
                         static_cast<int64_t>(p) * P.kv.kv_dim +
                         static_cast<int64_t>(kvh) * P.head_dim;
  float acc[HPB];
#pragma unroll
  for (int h = 0; h < HPB; ++h) acc[h] = 0.0f;
  for (int d0 = 0; d0 < P.head_dim; d0 += 8) {
    const uint4 raw = *reinterpret_cast<const uint4*>(krow + d0);
    const __half2* h2 = reinterpret_cast<const __half2*>(&raw);
    float kf[8];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float2 f = __half22float2(h2[j]);
      kf[2 * j] = f.x;
      kf[2 * j + 1] = f.y;
    }
#pragma unroll
    for (int h = 0; h < HPB; ++h) {
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[h] = __fmaf_rn(sm.q[h][d0 + j], kf[j], acc[h]);
    }
  }
#pragma unroll
  for (int h = 0; h < HPB; ++h) sm.s[h][i] = __fmul_rn(acc[h], P.scale);
}

// sm.m = the chunk's max score per head, sm.l = sum of exp(score - max) (double, fixed
// tree). Expects chunk_scores and a barrier before.
template <int HPB>
__device__ void chunk_stats(Smem<HPB>& sm) {
  const int i = threadIdx.x, lane = i % 32, warp = i / 32;
#pragma unroll
  for (int h = 0; h < HPB; ++h) {
    float v = sm.s[h][i];
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) sm.wf[h][warp] = v;
  }
  __syncthreads();
  if (i < HPB) {
    float m = sm.wf[i][0];
    for (int w = 1; w < kWarps; ++w) m = fmaxf(m, sm.wf[i][w]);
    sm.m[i] = m;
  }
  __syncthreads();
#pragma unroll
  for (int h = 0; h < HPB; ++h) {
    double v = canon_exp(__fsub_rn(sm.s[h][i], sm.m[h]));
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) sm.wd[h][warp] = v;
  }
  __syncthreads();
  if (i < HPB) {
    double l = sm.wd[i][0];
    for (int w = 1; w < kWarps; ++w) l += sm.wd[i][w];
    sm.l[i] = l;
  }
}

// sm.big_m = M, sm.inv = float(1 / L) per head, from the stats of chunks 0 .. nc-1.
template <int HPB>
__device__ void softmax_totals(const Params& P, Smem<HPB>& sm, int64_t t, int32_t h0, int32_t nc) {
  const int i = threadIdx.x;
  if (i < HPB) {
    const int64_t base = row_of(P, t, h0 + i) * P.nch;
    float M = P.st_m[base];
    for (int32_t c = 1; c < nc; ++c) M = fmaxf(M, P.st_m[base + c]);
    double L = 0.0;
    for (int32_t c = 0; c < nc; ++c) {
      const float m = P.st_m[base + c];
      const double f = m == M ? 1.0 : exp(static_cast<double>(m) - static_cast<double>(M));
      L = __fma_rn(P.st_l[base + c], f, L);  // explicit: no contraction choice left
    }
    sm.big_m[i] = M;
    sm.inv[i] = static_cast<float>(1.0 / L);
  }
  __syncthreads();
}

// o = this thread's (head, d pair) outputs of chunk c: sum over the chunk's positions,
// in order, of prob * v. Pair k is i = threadIdx.x + k * kThreads: head i / (head_dim /
// 2), dims 2 * (i % (head_dim / 2)) and the next.
template <int HPB>
__device__ void chunk_pv(const Params& P, Smem<HPB>& sm, int64_t t, int32_t h0, int32_t c,
                         int32_t pos, float (&o)[kMaxPairs][2]) {
  const int32_t kvh = h0 / P.group;
  const int i = threadIdx.x;
  if (P.sc == nullptr) {
    chunk_scores(P, sm, t, kvh, c, pos);
  } else {  // k_stats' scores of this chunk, the same bits chunk_scores gives
#pragma unroll
    for (int h = 0; h < HPB; ++h)
      sm.s[h][i] = P.sc[(row_of(P, t, h0 + h) * P.nch + c) * kChunk + i];
  }
  const bool live = c * kChunk + i <= pos;
#pragma unroll
  for (int h = 0; h < HPB; ++h) {
    const float e = canon_exp(__fsub_rn(sm.s[h][i], sm.big_m[h]));
    sm.s[h][i] = live ? __half2float(__float2half_rn(__fmul_rn(e, sm.inv[h]))) : 0.0f;
  }
  __syncthreads();
  const int32_t n_here = min(kChunk, pos - c * kChunk + 1);
  const int half_dim = P.head_dim / 2;
  const uint16_t* vbase = P.kv.k + P.kv.v_offset + P.seq[t] * P.kv.seq_stride +
                          static_cast<int64_t>(c) * kChunk * P.kv.kv_dim +
                          static_cast<int64_t>(kvh) * P.head_dim;
#pragma unroll
  for (int k = 0; k < kMaxPairs; ++k) {
    const int pi = i + k * kThreads;
    float a0 = 0.0f, a1 = 0.0f;
    if (pi < HPB * half_dim) {
      const int h = pi / half_dim, d = 2 * (pi % half_dim);
      const uint16_t* vp = vbase + d;
      for (int32_t p = 0; p < n_here; ++p, vp += P.kv.kv_dim) {
        const float pr = sm.s[h][p];
        const float2 f = __half22float2(*reinterpret_cast<const __half2*>(vp));
        a0 = __fmaf_rn(pr, f.x, a0);
        a1 = __fmaf_rn(pr, f.y, a1);
      }
    }
    o[k][0] = a0;
    o[k][1] = a1;
  }
  __syncthreads();  // sm.s is rewritten by the next chunk
}

// Chunk c's stats into the scratch; softmax_totals reads them back (in k_seq, the
// same threads that wrote them).
template <int HPB>
__device__ void store_stats(const Params& P, const Smem<HPB>& sm, int64_t t, int32_t h0,
                            int32_t c) {
  if (threadIdx.x < HPB) {
    const int64_t r = row_of(P, t, h0 + threadIdx.x) * P.nch + c;
    P.st_m[r] = sm.m[threadIdx.x];
    P.st_l[r] = sm.l[threadIdx.x];
  }
}

template <int HPB>
__global__ void __launch_bounds__(kThreads) k_stats(Params P) {
  __shared__ Smem<HPB> sm;
  const int64_t t = blockIdx.z;
  const int32_t c = blockIdx.x, h0 = blockIdx.y * HPB;
  const int32_t pos = P.pos[t];
  if (!pos_ok(P, pos) || c * kChunk > pos) return;
  load_q(P, sm, t, h0);
  chunk_scores(P, sm, t, h0 / P.group, c, pos);
#pragma unroll
  for (int h = 0; h < HPB; ++h)  // every slot of the chunk, -inf past pos
    P.sc[(row_of(P, t, h0 + h) * P.nch + c) * kChunk + threadIdx.x] = sm.s[h][threadIdx.x];
  __syncthreads();
  chunk_stats(sm);
  __syncthreads();
  store_stats(P, sm, t, h0, c);
}

template <int HPB>
__global__ void __launch_bounds__(kThreads) k_pv_chunk(Params P) {
  __shared__ Smem<HPB> sm;
  const int64_t t = blockIdx.z;
  const int32_t c = blockIdx.x, h0 = blockIdx.y * HPB;
  const int32_t pos = P.pos[t];
  if (!pos_ok(P, pos) || c * kChunk > pos) return;
  if (P.sc == nullptr) load_q(P, sm, t, h0);  // else chunk_pv reads k_stats' scores
  softmax_totals(P, sm, t, h0, pos / kChunk + 1);
  float o[kMaxPairs][2];
  chunk_pv(P, sm, t, h0, c, pos, o);
  const int half_dim = P.head_dim / 2;
#pragma unroll
  for (int k = 0; k < kMaxPairs; ++k) {
    const int pi = threadIdx.x + k * kThreads;
    if (pi >= HPB * half_dim) break;
    const int h = pi / half_dim, d = 2 * (pi % half_dim);
    float* dst = P.part + (row_of(P, t, h0 + h) * P.nch + c) * P.head_dim + d;
    dst[0] = o[k][0];
    dst[1] = o[k][1];
  }
}

// out = sum over chunks, in order, of the partials; NaN for a token whose pos is bad.
__global__ void k_combine(Params P, int64_t total) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= total) return;
  const int64_t row = e / P.head_dim;
  const int32_t d = static_cast<int32_t>(e % P.head_dim);
  const int32_t pos = P.pos[row / P.n_head];
  if (!pos_ok(P, pos)) {
    P.out[e] = __int_as_float(0x7fc00000);
    return;
  }
  const int32_t nc = pos / kChunk + 1;
  const float* src = P.part + row * P.nch * P.head_dim + d;
  float acc = 0.0f;
  for (int32_t c = 0; c < nc; ++c) acc = __fadd_rn(acc, src[static_cast<int64_t>(c) * P.head_dim]);
  P.out[e] = acc;
}

template <int HPB>
__global__ void __launch_bounds__(kThreads) k_seq(Params P) {
  __shared__ Smem<HPB> sm;
  const int64_t t = blockIdx.z;
  const int32_t h0 = blockIdx.y * HPB;
  const int32_t pos = P.pos[t];
  const int half_dim = P.head_dim / 2;
  float tot[kMaxPairs][2];
#pragma unroll
  for (int k = 0; k < kMaxPairs; ++k) tot[k][0] = tot[k][1] = 0.0f;
  if (pos_ok(P, pos)) {
    load_q(P, sm, t, h0);
    const int32_t nc = pos / kChunk + 1;
    for (int32_t c = 0; c < nc; ++c) {  // k_stats' work, chunk after chunk
      chunk_scores(P, sm, t, h0 / P.group, c, pos);
      __syncthreads();
      chunk_stats(sm);
      __syncthreads();
      store_stats(P, sm, t, h0, c);
    }
    softmax_totals(P, sm, t, h0, nc);
    for (int32_t c = 0; c < nc; ++c) {
      float o[kMaxPairs][2];
      chunk_pv(P, sm, t, h0, c, pos, o);
#pragma unroll
      for (int k = 0; k < kMaxPairs; ++k) {
        tot[k][0] = __fadd_rn(tot[k][0], o[k][0]);
        tot[k][1] = __fadd_rn(tot[k][1], o[k][1]);
      }
    }
  } else {
#pragma unroll
    for (int k = 0; k < kMaxPairs; ++k) tot[k][0] = tot[k][1] = __int_as_float(0x7fc00000);
  }
#pragma unroll
  for (int k = 0; k < kMaxPairs; ++k) {
    const int pi = threadIdx.x + k * kThreads;
    if (pi >= HPB * half_dim) break;
    const int h = pi / half_dim, d = 2 * (pi % half_dim);
    float* dst = P.out + row_of(P, t, h0 + h) * P.head_dim + d;
    dst[0] = tot[k][0];
    dst[1] = tot[k][1];
  }
}

int32_t chunks_for(int32_t n_ctx) {
  return (n_ctx + kChunk - 1) / kChunk;
}

size_t align256(size_t b) {
  return (b + 255) / 256 * 256;
}

size_t stats_bytes(int64_t rows, int32_t nch) {
  const size_t r = static_cast<size_t>(rows) * static_cast<size_t>(nch);
  return align256(r * sizeof(double) + r * sizeof(float));
}

// Query heads per block: the largest power of two <= kMaxHpb dividing the group.
int hpb_for(int32_t group) {
  int hpb = kMaxHpb;
  while (group % hpb != 0) hpb /= 2;
  return hpb;
}

template <int HPB>
Error launch(const Params& P, int64_t T, bool parallel, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(P.nch), static_cast<unsigned>(P.n_head / HPB),
                  static_cast<unsigned>(T));
  if (!parallel) {
    const dim3 g1(1, grid.y, grid.z);
    k_seq<HPB><<<g1, kThreads, 0, s>>>(P);
    return launch_error("attention k_seq");
  }
  k_stats<HPB><<<grid, kThreads, 0, s>>>(P);
  if (Error e = launch_error("attention k_stats"); !e.empty()) return e;
  k_pv_chunk<HPB><<<grid, kThreads, 0, s>>>(P);
  if (Error e = launch_error("attention k_pv_chunk"); !e.empty()) return e;
  const int64_t total = T * P.n_head * P.head_dim;
  k_combine<<<static_cast<unsigned>((total + 255) / 256), 256, 0, s>>>(P, total);
  return launch_error("attention k_combine");
}

Error bad(const char* field, long long value) {
  return std::string("attention: bad ") + field + " " + std::to_string(value);
}

}  // namespace

size_t attention_scratch_bytes(int64_t T, int32_t n_head, int32_t n_ctx) {
  if (T <= 0 || n_head <= 0 || n_ctx <= 0) return 0;
  const int32_t nch = chunks_for(n_ctx);
  const int64_t rows = T * n_head;
  const int64_t par_rows = rows < kParallelRows ? rows : kParallelRows;
  return stats_bytes(rows, nch) +
         static_cast<size_t>(par_rows) * nch * (kMaxHeadDim + kChunk) * sizeof(float);
}

Error attention(const uint16_t* q16, const KvLayer& kv, const int32_t* seq, const int32_t* pos,
                int64_t T, int32_t n_head, int32_t n_head_kv, int32_t head_dim, float scale,
                int32_t n_ctx, float* out, void* scratch, size_t scratch_bytes,
                const Stream& stream) {
  if (T < 0 || T > 65535) return bad("T", T);
  if (head_dim < 32 || head_dim > kMaxHeadDim || head_dim % 32 != 0)
    return bad("head_dim (a multiple of 32 up to 256)", head_dim);
  if (n_head_kv <= 0) return bad("n_head_kv", n_head_kv);
  if (n_head <= 0 || n_head % n_head_kv != 0)
    return bad("n_head (a multiple of n_head_kv)", n_head);
  if (n_ctx <= 0) return bad("n_ctx", n_ctx);
  if (kv.k == nullptr) return "attention: kv.k is null";
  if (kv.kv_dim < n_head_kv * head_dim || kv.kv_dim % 8 != 0)
    return bad("kv.kv_dim (a multiple of 8, >= n_head_kv * head_dim)", kv.kv_dim);
  if (kv.seq_stride % 8 != 0) return bad("kv.seq_stride (a multiple of 8)", kv.seq_stride);
  if (kv.v_offset % 8 != 0) return bad("kv.v_offset (a multiple of 8)", kv.v_offset);
  if (reinterpret_cast<uintptr_t>(kv.k) % 16 != 0) return "attention: kv.k is not 16-byte aligned";
  if (T == 0) return {};
  const int32_t nch = chunks_for(n_ctx);
  const int64_t rows = T * n_head;
  const bool parallel = rows <= kParallelRows;
  const size_t sb = stats_bytes(rows, nch);
  const size_t need =
      sb + (parallel ? static_cast<size_t>(rows) * nch * (head_dim + kChunk) * sizeof(float) : 0);
  if (scratch == nullptr || scratch_bytes < need)
    return "attention: scratch_bytes " + std::to_string(scratch_bytes) + " < " +
           std::to_string(need) + " needed";
  const size_t r = static_cast<size_t>(rows) * nch;
  char* base = static_cast<char*>(scratch);
  Params P{};
  P.q16 = q16;
  P.kv = kv;
  P.seq = seq;
  P.pos = pos;
  P.n_head = n_head;
  P.group = n_head / n_head_kv;
  P.head_dim = head_dim;
  P.n_ctx = n_ctx;
  P.nch = nch;
  P.scale = scale;
  P.st_l = reinterpret_cast<double*>(base);
  P.st_m = reinterpret_cast<float*>(base + r * sizeof(double));
  P.part = parallel ? reinterpret_cast<float*>(base + sb) : nullptr;
  P.sc = parallel ? P.part + r * head_dim : nullptr;
  P.out = out;
  cudaStream_t s = static_cast<cudaStream_t>(stream.handle());
  switch (hpb_for(P.group)) {
    case 8:
      return launch<8>(P, T, parallel, s);
    case 4:
      return launch<4>(P, T, parallel, s);
    case 2:
      return launch<2>(P, T, parallel, s);
    default:
      return launch<1>(P, T, parallel, s);
  }
}

}  // namespace hearth::engine::cuda
