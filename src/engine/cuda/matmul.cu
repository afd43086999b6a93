// The GPU matmul of every weight type (matmul.h): y[t][r] = sum_k W[r][k] * x[t][k].
//
// Numerics (this device's numerics; the CPU's are in src/engine/model/attention.h and
// src/engine/matmul.h, and the two differ):
// - Quantized weights (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K): each activation
//   row is quantized per 32-element block b to int8: amax = max |x|, d = amax / 127 (round
//   to nearest), q = round_half_even(x * (1 / d)) clamped to [-127, 127] (q = 0 when
//   d = 0); the block keeps d and the exact integer sum of its q. Each 32-block of a weight
//   row then gives an exact integer dot (__dp4a) and one float contribution, with explicit
//   rounding:
//     Q4_0, Q5_0, Q8_0:  c = (dw * d) * float(dot(w - offset, q))
//     Q4_1, Q5_1:        c = d * (dw * float(dot(w, q)) + mw * float(sum(q)))  (dw*w + mw)
//     Q4_K, Q5_K:        c = d * ((dw*sc) * float(dot(w, q)) - (dmin*mn) * float(sum(q)))
//     Q6_K:              c = (dw * d) * float(sc0 * dot(first 16) + sc1 * dot(last 16))
// - Float weights (F32, F16, BF16): the float activations as they are, c accumulated by
//   fp32 fused multiply-adds (__fmaf_rn), element by element in k order.
// - Order of the sum (the batch-invariance contract): K is cut into segments of 256
//   elements (the last one may be shorter); a segment's partial starts at +0.0 and adds its
//   contributions in k order; y is partial[0] + partial[1] + ... added left to right. That
//   order depends on cols only, never on n_tokens or on which tokens share the call.
//
// Parallelism: a group of L lanes (8, 16 or 32, from the segment count) owns one row and
// a tile of up to 8 tokens; its lanes compute segments s = lane, lane + L, ... (each weight
// segment is read once and reused for the tile's tokens), park the partials in shared
// memory, then one lane per token adds them in segment order. Launch shapes change with
// n_tokens (the tile width 1, 2, 4 or 8); the per-output arithmetic does not.
//
// Tensor cores (matmul_mma.cuh, off by default: set_matmul_tensor_cores): calls of 32 tokens
// or more of the quantized types may take an int8 mma.sync kernel instead. Its 32-block
// integer dots are the same exact integers, and every float step above is the same operation
// in the same order, so the bits do not change with the path (tests compare both with
// matmul_on_host).
//
// Device layout written by upload_matrix: each row is cut into its K segments (256 values)
// and every segment's bytes into 16-byte chunks; chunk c of segment s sits at
// (c * nseg + s) * 16 from the row's start (mm::SegmentChunks), so the lanes that read
// neighbouring segments read neighbouring 16 bytes. A segment's bytes:
//   Q4_0, Q8_0  the quants of its 8 blocks (16 / 32 bytes each); aux: fp16 d per block
//   Q4_1  the same 16 bytes a block; aux: fp16 d and m per block
//   Q5_0, Q5_1  the 16 qs bytes of its 8 blocks, then their 4 qh bytes (160 bytes); aux: fp16
//         d (Q5_0) or d and m (Q5_1) per block
//   Q4_K, Q5_K  the GGUF super-block (144 / 176 bytes)
//   Q6_K  ql, qh, scales of the super-block (208 bytes); aux: fp16 d per super-block
//   F32, F16, BF16  its values
// A short last segment (32-element formats or float rows whose cols is not a multiple of 256)
// is zero-padded.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/cuda/matmul.h"
#include "engine/cuda/matmul_mma.cuh"
#include "engine/cuda/matmul_segments.cuh"

namespace hearth::engine::cuda {
namespace {

using mm::kBF16;
using mm::kF16;
using mm::kF32;
using mm::kQ4_0;
using mm::kQ4_1;
using mm::kQ4_K;
using mm::kQ5_0;
using mm::kQ5_1;
using mm::kQ5_K;
using mm::kQ6_K;
using mm::kQ8_0;

constexpr int kWarpsPerCta = 4;
// The tensor-core path takes calls of at least this many tokens (either path gives the same
// bits: the switch is for speed only).
constexpr int64_t kMmaMinTokens = 32;

// Off unless HEARTH_CUDA_MMA=1 or set_matmul_tensor_cores(true): the path has not run on a
// device yet (cuda_matmul_test's TensorCore* tests check it bit for bit).
std::atomic<bool>& tensor_cores_flag() {
  static std::atomic<bool> on([] {
    const char* v = std::getenv("HEARTH_CUDA_MMA");
    return v != nullptr && v[0] == '1';
  }());
  return on;
}
constexpr int kMaxTile = 8;
constexpr size_t kMaxSharedBytes = 48 * 1024;

bool is_float_type(int32_t t) {
  return t == kF32 || t == kF16 || t == kBF16;
}

// Elements per block of the GGUF layout, and bytes of one GGUF block.
void gguf_block(int32_t t, int64_t* elems, int64_t* bytes) {
  switch (t) {
    case kF32:
      *elems = 1, *bytes = 4;
      return;
    case kF16:
    case kBF16:
      *elems = 1, *bytes = 2;
      return;
    case kQ4_0:
      *elems = 32, *bytes = 18;
      return;
    case kQ4_1:
      *elems = 32, *bytes = 20;
      return;
    case kQ5_0:
      *elems = 32, *bytes = 22;
      return;
    case kQ5_1:
      *elems = 32, *bytes = 24;
      return;
    case kQ8_0:
      *elems = 32, *bytes = 34;
      return;
    case kQ4_K:
      *elems = 256, *bytes = 144;
      return;
    case kQ5_K:
      *elems = 256, *bytes = 176;
      return;
    case kQ6_K:
      *elems = 256, *bytes = 210;
      return;
    default:
      *elems = 0, *bytes = 0;
  }
}

// A GGUF block of the 32-element formats: its fp16 scales (d, or d then m: they go to aux),
// then Q5_0 / Q5_1's 4 qh bytes, then the quants. In the device layout a segment holds the
// quants of its 8 blocks, then their qh words.
struct LegacyBlock {
  int64_t scale_bytes = 0, qh_bytes = 0, q_bytes = 0;
};

bool legacy_block(int32_t t, LegacyBlock* l) {
  switch (t) {
    case kQ4_0:
      *l = {2, 0, 16};
      return true;
    case kQ4_1:
      *l = {4, 0, 16};
      return true;
    case kQ5_0:
      *l = {2, 4, 16};
      return true;
    case kQ5_1:
      *l = {4, 4, 16};
      return true;
    case kQ8_0:
      *l = {2, 0, 32};
      return true;
    default:
      return false;
  }
}

// Bytes per row of the device layout (data, aux): nseg segments of 16-byte chunks.
void device_row_bytes(int32_t t, int64_t cols, size_t* data, size_t* aux) {
  const auto nb = static_cast<size_t>(cols / 32);
  const auto nseg = static_cast<size_t>((cols + mm::kSegment - 1) / mm::kSegment);
  *aux = 0;
  LegacyBlock l;
  if (legacy_block(t, &l)) {
    *data = nseg * static_cast<size_t>(mm::kSegBlocks * (l.q_bytes + l.qh_bytes));
    *aux = nb * static_cast<size_t>(l.scale_bytes);
    return;
  }
  switch (t) {
    case kQ4_K:
      *data = nseg * 144;
      return;
    case kQ5_K:
      *data = nseg * 176;
      return;
    case kQ6_K:
      *data = nseg * 208, *aux = nseg * 2;
      return;
    case kF32:
      *data = nseg * mm::kSegment * 4;
      return;
    default:  // F16, BF16
      *data = nseg * mm::kSegment * 2;
  }
}

size_t align256(size_t n) {
  return (n + 255) / 256 * 256;
}

struct ScratchLayout {
  size_t aq = 0, ad = 0, as = 0, total = 0;
};

ScratchLayout scratch_layout(int64_t n_tokens, int64_t cols) {
  ScratchLayout l;
  const auto n = static_cast<size_t>(std::max<int64_t>(n_tokens, 0));
  const auto c = static_cast<size_t>(std::max<int64_t>(cols, 0));
  const size_t nb = (c + 31) / 32;
  l.aq = 0;
  l.ad = align256(n * c);
  l.as = l.ad + align256(n * nb * sizeof(float));
  l.total = l.as + align256(n * nb * sizeof(int));
  return l;
}

std::string shape_text(const DeviceMatrix& w, int64_t n_tokens) {
  return "(type " + std::to_string(w.type) + ", rows " + std::to_string(w.rows) + ", cols " +
         std::to_string(w.cols) + ", n_tokens " + std::to_string(n_tokens) + ")";
}

cudaStream_t raw(const Stream& s) {
  return static_cast<cudaStream_t>(s.handle());
}

// One warp per (token, 32-block): lane i holds element i.
__global__ void quantize_activations(const float* __restrict__ x, int64_t n_tokens, int64_t cols,
                                     int8_t* __restrict__ aq, float* __restrict__ ad,
                                     int* __restrict__ as) {
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int64_t nb = cols / mm::kQBlock;
  if (warp >= n_tokens * nb) return;  // uniform per warp
  const int64_t t = warp / nb, b = warp % nb;
  const int64_t i = t * cols + b * mm::kQBlock + lane;
  const float v = x[i];
  float amax = fabsf(v);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  const float d = mm::act_scale(amax);
  const int q = mm::act_quant(v, d);
  int sum = q;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  aq[i] = static_cast<int8_t>(q);
  if (lane == 0) {
    ad[t * nb + b] = d;
    as[t * nb + b] = sum;
  }
}

struct Params {
  const uint8_t* data;
  const uint16_t* aux;
  const float* x;  // float activations (float weight types)
  mm::Act act;     // quantized activations (quantized weight types)
  float* y;
  int64_t rows, cols, n_tokens, nseg;
  int lanes_per_row;
};

template <int TYPE, int NT>
MM_HD void segment(const Params& p, int64_t r, int64_t s, int64_t t0, int ntile, float acc[NT]) {
  if constexpr (TYPE == kQ4_0 || TYPE == kQ4_1 || TYPE == kQ5_0 || TYPE == kQ5_1) {
    mm::segment_nibbles<TYPE, NT>(p.data, p.aux, r, s, p.act, t0, ntile, acc);
  } else if constexpr (TYPE == kQ8_0) {
    mm::segment_q8_0<NT>(p.data, p.aux, r, s, p.act, t0, ntile, acc);
  } else if constexpr (TYPE == kQ4_K) {
    mm::segment_q4_k<NT>(p.data, r, s, p.act, t0, ntile, acc);
  } else if constexpr (TYPE == kQ5_K) {
    mm::segment_q5_k<NT>(p.data, r, s, p.act, t0, ntile, acc);
  } else if constexpr (TYPE == kQ6_K) {
    mm::segment_q6_k<NT>(p.data, p.aux, r, s, p.act, t0, ntile, acc);
  } else if constexpr (TYPE == kF32) {
    mm::segment_float<NT>(mm::LoadF32{p.data, p.nseg}, r, s, p.x, p.cols, t0, ntile, acc);
  } else if constexpr (TYPE == kF16) {
    mm::segment_float<NT>(mm::LoadF16{p.data, p.nseg}, r, s, p.x, p.cols, t0, ntile, acc);
  } else {
    mm::segment_float<NT>(mm::LoadBF16{p.data, p.nseg}, r, s, p.x, p.cols, t0, ntile, acc);
  }
}

// Block: kWarpsPerCta warps, each 32 / L rows; grid: (row groups, token tiles of NT).
template <int TYPE, int NT>
__global__ void __launch_bounds__(kWarpsPerCta * 32) matmul_kernel(const Params p) {
  extern __shared__ float partials[];  // [row slot][segment][NT]
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int warp = static_cast<int>(threadIdx.x >> 5);
  const int L = p.lanes_per_row;
  const int rows_per_warp = 32 / L;
  const int group = lane / L, j = lane % L;
  const int slot = warp * rows_per_warp + group;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * (kWarpsPerCta * rows_per_warp) + slot;
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * NT;
  const int ntile = static_cast<int>(min(static_cast<int64_t>(NT), p.n_tokens - t0));
  float* mine = partials + static_cast<int64_t>(slot) * p.nseg * NT;
  if (r < p.rows) {
    for (int64_t s = j; s < p.nseg; s += L) {
      float acc[NT];
#pragma unroll
      for (int t = 0; t < NT; ++t) acc[t] = 0.0f;
      segment<TYPE, NT>(p, r, s, t0, ntile, acc);
#pragma unroll
      for (int t = 0; t < NT; ++t) mine[s * NT + t] = acc[t];
    }
  }
  __syncwarp();
  if (r < p.rows) {
    for (int t = j; t < ntile; t += L) {
      float y = mine[t];
      for (int64_t s = 1; s < p.nseg; ++s) y = mm::fadd(y, mine[s * NT + t]);
      p.y[(t0 + t) * p.rows + r] = y;
    }
  }
}

template <int TYPE, int NT>
Error launch_tile(const Params& p, const Stream& stream) {
  const int rows_per_cta = kWarpsPerCta * (32 / p.lanes_per_row);
  const dim3 grid(static_cast<unsigned>((p.rows + rows_per_cta - 1) / rows_per_cta),
                  static_cast<unsigned>((p.n_tokens + NT - 1) / NT));
  const size_t shared = static_cast<size_t>(rows_per_cta) * p.nseg * NT * sizeof(float);
  matmul_kernel<TYPE, NT><<<grid, kWarpsPerCta * 32, shared, raw(stream)>>>(p);
  return launch_error("matmul_kernel");
}

template <int TYPE>
Error launch_mma(const Params& p, const Stream& stream) {
  const dim3 grid(static_cast<unsigned>((p.rows + mm::kMmaRows - 1) / mm::kMmaRows),
                  static_cast<unsigned>((p.n_tokens + mm::kMmaTokens - 1) / mm::kMmaTokens));
  mm::matmul_mma_kernel<TYPE><<<grid, mm::kMmaWarps * 32, 0, raw(stream)>>>(
      p.data, p.aux, p.act, p.y, p.rows, p.n_tokens, p.nseg);
  return launch_error("matmul_mma_kernel");
}

// The weight types matmul takes, and the one switch from a run-time type to a kernel
// instantiation: f(TypeTag<T>{}) for the matrix's type T (BF16 for the last case: callers
// have checked matmul_supports).
constexpr int32_t kMatmulTypes[] = {kF32,  kF16,  kBF16, kQ4_0, kQ4_1, kQ5_0,
                                    kQ5_1, kQ8_0, kQ4_K, kQ5_K, kQ6_K};
template <int TYPE>
using TypeTag = std::integral_constant<int, TYPE>;
template <class F>
decltype(auto) with_type(int32_t type, F&& f) {
  switch (type) {
    case kQ4_0:
      return f(TypeTag<kQ4_0>{});
    case kQ4_1:
      return f(TypeTag<kQ4_1>{});
    case kQ5_0:
      return f(TypeTag<kQ5_0>{});
    case kQ5_1:
      return f(TypeTag<kQ5_1>{});
    case kQ8_0:
      return f(TypeTag<kQ8_0>{});
    case kQ4_K:
      return f(TypeTag<kQ4_K>{});
    case kQ5_K:
      return f(TypeTag<kQ5_K>{});
    case kQ6_K:
      return f(TypeTag<kQ6_K>{});
    case kF32:
      return f(TypeTag<kF32>{});
    case kF16:
      return f(TypeTag<kF16>{});
    default:
      return f(TypeTag<kBF16>{});
  }
}

template <int TYPE>
Error launch_type(const Params& p, const Stream& stream) {
  if constexpr (TYPE != kF32 && TYPE != kF16 && TYPE != kBF16) {
    if (p.n_tokens >= kMmaMinTokens && tensor_cores_flag().load()) {
      return launch_mma<TYPE>(p, stream);
    }
  }
  if (p.n_tokens <= 1) return launch_tile<TYPE, 1>(p, stream);
  if (p.n_tokens <= 2) return launch_tile<TYPE, 2>(p, stream);
  if (p.n_tokens <= 4) return launch_tile<TYPE, 4>(p, stream);
  return launch_tile<TYPE, kMaxTile>(p, stream);
}

// The checks upload_matrix and matmul_on_host share, before any CUDA call.
Error check_matrix(const char* who, int32_t type, int64_t rows, int64_t cols, const void* host,
                   size_t row_bytes) {
  const std::string w(who);
  if (!matmul_supports(type)) {
    return w + ": type " + std::to_string(type) + " is not a matmul weight type";
  }
  if (rows <= 0 || cols <= 0) {
    return w + ": rows " + std::to_string(rows) + " and cols " + std::to_string(cols) +
           " must be positive";
  }
  int64_t elems = 0, block_bytes = 0;
  gguf_block(type, &elems, &block_bytes);
  const int64_t multiple = is_float_type(type) ? 8 : elems;
  if (cols % multiple != 0) {
    return w + ": cols " + std::to_string(cols) + " is not a multiple of " +
           std::to_string(multiple) + " for type " + std::to_string(type);
  }
  const auto gguf_row = static_cast<size_t>(cols / elems * block_bytes);
  if (row_bytes < gguf_row) {
    return w + ": row_bytes " + std::to_string(row_bytes) + " < " + std::to_string(gguf_row) +
           " for cols " + std::to_string(cols);
  }
  if (host == nullptr) return w + ": host is null";
  return {};
}

// GGUF rows (row_bytes apart) -> the device layout described at the top of this file.
void repack(int32_t type, int64_t rows, int64_t cols, const void* host, size_t row_bytes,
            std::vector<uint8_t>* data, std::vector<uint8_t>* aux) {
  int64_t elems = 0, block_bytes = 0;
  gguf_block(type, &elems, &block_bytes);
  size_t data_row = 0, aux_row = 0;
  device_row_bytes(type, cols, &data_row, &aux_row);
  const int64_t nseg = (cols + mm::kSegment - 1) / mm::kSegment;
  const auto chunks = static_cast<int64_t>(data_row) / 16 / nseg;  // per segment
  const auto n = static_cast<size_t>(rows);
  data->assign(n * data_row, 0);
  aux->assign(n * aux_row, 0);
  const auto* src = static_cast<const uint8_t*>(host);
  const int64_t nblocks = cols / elems;
  LegacyBlock lb;
  const bool legacy = legacy_block(type, &lb);
  std::vector<uint8_t> seg(static_cast<size_t>(chunks * 16));
  for (size_t r = 0; r < n; ++r) {
    const uint8_t* row = src + r * row_bytes;
    uint8_t* drow = data->data() + r * data_row;
    uint8_t* arow = aux->data() + r * aux_row;
    for (int64_t b = 0; legacy && b < nblocks; ++b) {  // d, or d and m
      std::memcpy(arow + b * lb.scale_bytes, row + b * block_bytes,
                  static_cast<size_t>(lb.scale_bytes));
    }
    for (int64_t b = 0; type == kQ6_K && b < nblocks; ++b) {
      std::memcpy(arow + b * 2, row + b * block_bytes + 208, 2);  // d
    }
    for (int64_t s = 0; s < nseg; ++s) {
      std::fill(seg.begin(), seg.end(), 0);
      if (legacy) {  // the quants of blocks 8s .. 8s+7, then their qh words
        for (int64_t j = 0; j < mm::kSegBlocks && s * mm::kSegBlocks + j < nblocks; ++j) {
          const uint8_t* blk = row + (s * mm::kSegBlocks + j) * block_bytes;
          std::memcpy(seg.data() + j * lb.q_bytes, blk + lb.scale_bytes + lb.qh_bytes,
                      static_cast<size_t>(lb.q_bytes));
          if (lb.qh_bytes > 0) {
            std::memcpy(seg.data() + mm::kSegBlocks * lb.q_bytes + j * lb.qh_bytes,
                        blk + lb.scale_bytes, static_cast<size_t>(lb.qh_bytes));
          }
        }
      } else if (elems == mm::kSegment) {  // a K-quant super-block (Q6_K without its d)
        std::memcpy(seg.data(), row + s * block_bytes, seg.size());
      } else {  // 256 float values, fewer in a short last segment
        const int64_t k0 = s * mm::kSegment, len = std::min<int64_t>(mm::kSegment, cols - k0);
        std::memcpy(seg.data(), row + k0 * block_bytes, static_cast<size_t>(len * block_bytes));
      }
      for (int64_t c = 0; c < chunks; ++c) {
        std::memcpy(drow + (c * nseg + s) * 16, seg.data() + c * 16, 16);
      }
    }
  }
}

// matmul_kernel's arithmetic on the host, token tiles of NT as the device takes them.
template <int TYPE, int NT>
void run_tiles_on_host(const Params& p) {
  std::vector<float> part(static_cast<size_t>(p.nseg * NT));
  for (int64_t t0 = 0; t0 < p.n_tokens; t0 += NT) {
    const int ntile = static_cast<int>(std::min<int64_t>(NT, p.n_tokens - t0));
    for (int64_t r = 0; r < p.rows; ++r) {
      for (int64_t s = 0; s < p.nseg; ++s) {
        float acc[NT];
        for (int t = 0; t < NT; ++t) acc[t] = 0.0f;
        segment<TYPE, NT>(p, r, s, t0, ntile, acc);
        for (int t = 0; t < NT; ++t) part[static_cast<size_t>(s * NT + t)] = acc[t];
      }
      for (int t = 0; t < ntile; ++t) {
        float y = part[static_cast<size_t>(t)];
        for (int64_t s = 1; s < p.nseg; ++s) y = mm::fadd(y, part[static_cast<size_t>(s * NT + t)]);
        p.y[(t0 + t) * p.rows + r] = y;
      }
    }
  }
}

// matmul_mma_kernel's arithmetic on the host: each 32-block decoded through row_block (the
// four lanes' shares of an A fragment row), its integer dot, the same float steps.
template <int TYPE>
void run_mma_on_host(const Params& p) {
  const mm::Act& a = p.act;
  for (int64_t t = 0; t < p.n_tokens; ++t) {
    for (int64_t r = 0; r < p.rows; ++r) {
      float y = 0.0f;
      for (int64_t s = 0; s < p.nseg; ++s) {
        float part = 0.0f;
        for (int j = 0; j < mm::kSegBlocks && s * mm::kSegBlocks + j < a.nb; ++j) {
          const int64_t b = s * mm::kSegBlocks + j;
          const int8_t* q = a.aq + t * a.cols + b * mm::kQBlock;
          mm::RowBlock w[4];
          int dot0 = 0, dot1 = 0;
          for (int i = 0; i < 4; ++i) {
            w[i] = mm::row_block<TYPE>(p.data, p.aux, a.nb, r, s, j, i);
            dot0 = mm::sdot4(
                static_cast<int>(w[i].lo),
                static_cast<int>(mm::ld32(reinterpret_cast<const uint8_t*>(q + 4 * i))), dot0);
            dot1 = mm::sdot4(
                static_cast<int>(w[i].hi),
                static_cast<int>(mm::ld32(reinterpret_cast<const uint8_t*>(q + 16 + 4 * i))), dot1);
          }
          const float asf = mm::i2f(a.as[t * a.nb + b]);
          const float ad = a.ad[t * a.nb + b];
          const float c = TYPE == kQ6_K ? mm::contribution<TYPE>(w[0], dot0, dot1, ad, asf)
                                        : mm::contribution<TYPE>(w[0], dot0 + dot1, 0, ad, asf);
          part = mm::fadd(part, c);
        }
        y = s == 0 ? part : mm::fadd(y, part);
      }
      p.y[t * p.rows + r] = y;
    }
  }
}

template <int TYPE>
void run_on_host(const Params& p, bool tensor_core_path) {
  if constexpr (TYPE != kF32 && TYPE != kF16 && TYPE != kBF16) {
    if (tensor_core_path) return run_mma_on_host<TYPE>(p);
  }
  if (p.n_tokens <= 1) return run_tiles_on_host<TYPE, 1>(p);
  if (p.n_tokens <= 2) return run_tiles_on_host<TYPE, 2>(p);
  if (p.n_tokens <= 4) return run_tiles_on_host<TYPE, 4>(p);
  return run_tiles_on_host<TYPE, kMaxTile>(p);
}

}  // namespace

void set_matmul_tensor_cores(bool on) {
  tensor_cores_flag().store(on);
}

bool matmul_tensor_cores() {
  return tensor_cores_flag().load();
}

bool matmul_supports(int32_t type) {
  for (const int32_t t : kMatmulTypes) {
    if (t == type) return true;
  }
  return false;
}

Error upload_matrix(int32_t type, int64_t rows, int64_t cols, const void* host, size_t row_bytes,
                    const Stream& stream, DeviceMatrix* out) {
  if (Error e = check_matrix("upload_matrix", type, rows, cols, host, row_bytes); !e.empty()) {
    return e;
  }
  std::vector<uint8_t> data, aux;
  repack(type, rows, cols, host, row_bytes, &data, &aux);
  DeviceMatrix m;
  m.type = type;
  m.rows = rows;
  m.cols = cols;
  if (Error e = m.data.allocate(data.size()); !e.empty()) return "upload_matrix: " + e;
  if (Error e = copy_to_device(m.data.data(), data.data(), data.size(), stream); !e.empty()) {
    return "upload_matrix: " + e;
  }
  if (!aux.empty()) {
    if (Error e = m.aux.allocate(aux.size()); !e.empty()) return "upload_matrix: " + e;
    if (Error e = copy_to_device(m.aux.data(), aux.data(), aux.size(), stream); !e.empty()) {
      return "upload_matrix: " + e;
    }
  }
  if (Error e = stream.sync(); !e.empty()) return "upload_matrix: " + e;
  *out = std::move(m);
  return {};
}

Error matmul_on_host(int32_t type, int64_t rows, int64_t cols, const void* host, size_t row_bytes,
                     const float* x, int64_t n_tokens, float* y, bool tensor_core_path) {
  if (Error e = check_matrix("matmul_on_host", type, rows, cols, host, row_bytes); !e.empty()) {
    return e;
  }
  if (n_tokens < 0) return "matmul_on_host: n_tokens " + std::to_string(n_tokens) + " is negative";
  if (x == nullptr || y == nullptr) return "matmul_on_host: x or y is null";
  std::vector<uint8_t> data, aux;
  repack(type, rows, cols, host, row_bytes, &data, &aux);
  const int64_t nb = cols / mm::kQBlock;
  std::vector<int8_t> aq;
  std::vector<float> ad;
  std::vector<int> as;
  if (!is_float_type(type)) {
    aq.resize(static_cast<size_t>(n_tokens * cols));
    ad.resize(static_cast<size_t>(n_tokens * nb));
    as.resize(static_cast<size_t>(n_tokens * nb));
    for (int64_t t = 0; t < n_tokens; ++t) {
      for (int64_t b = 0; b < nb; ++b) {
        const float* xb = x + t * cols + b * mm::kQBlock;
        float amax = 0.0f;
        for (int i = 0; i < mm::kQBlock; ++i) amax = std::max(amax, std::fabs(xb[i]));
        const float d = mm::act_scale(amax);
        int sum = 0;
        for (int i = 0; i < mm::kQBlock; ++i) {
          const int q = mm::act_quant(xb[i], d);
          aq[static_cast<size_t>(t * cols + b * mm::kQBlock + i)] = static_cast<int8_t>(q);
          sum += q;
        }
        ad[static_cast<size_t>(t * nb + b)] = d;
        as[static_cast<size_t>(t * nb + b)] = sum;
      }
    }
  }
  Params p{};
  p.data = data.data();
  p.aux = reinterpret_cast<const uint16_t*>(aux.data());
  p.x = x;
  p.y = y;
  p.rows = rows;
  p.cols = cols;
  p.n_tokens = n_tokens;
  p.nseg = (cols + mm::kSegment - 1) / mm::kSegment;
  p.act = mm::Act{aq.data(), ad.data(), as.data(), cols, nb};
  with_type(type, [&](auto tag) { run_on_host<decltype(tag)::value>(p, tensor_core_path); });
  return {};
}

size_t matmul_scratch_bytes(int64_t n_tokens, int64_t cols, int64_t /*rows*/) {
  return scratch_layout(n_tokens, cols).total;
}

Error matmul(const DeviceMatrix& w, const float* x, int64_t n_tokens, float* y, void* scratch,
             size_t scratch_bytes, const Stream& stream) {
  if (!matmul_supports(w.type)) {
    return "matmul: weight type " + std::to_string(w.type) + " is not supported";
  }
  if (n_tokens < 0) return "matmul: n_tokens " + std::to_string(n_tokens) + " is negative";
  if (n_tokens == 0) return {};
  if (w.rows <= 0 || w.cols <= 0) return "matmul: empty matrix " + shape_text(w, n_tokens);
  int64_t elems = 0, block_bytes = 0;
  gguf_block(w.type, &elems, &block_bytes);
  const bool quantized = !is_float_type(w.type);
  if (w.cols % (quantized ? elems : 8) != 0) {
    return "matmul: cols " + std::to_string(w.cols) + " does not fit the type " +
           shape_text(w, n_tokens);
  }
  size_t data_row = 0, aux_row = 0;
  device_row_bytes(w.type, w.cols, &data_row, &aux_row);
  if (w.data.bytes() < data_row * static_cast<size_t>(w.rows) ||
      w.aux.bytes() < aux_row * static_cast<size_t>(w.rows)) {
    return "matmul: the device matrix holds " + std::to_string(w.data.bytes()) + " + " +
           std::to_string(w.aux.bytes()) + " bytes, too few for " + shape_text(w, n_tokens) +
           " (not made by upload_matrix?)";
  }
  if (x == nullptr || y == nullptr) return "matmul: x or y is null";
  if (!quantized && reinterpret_cast<uintptr_t>(x) % 16 != 0) {
    return "matmul: x is not 16-byte aligned (float weight types load it by 16 bytes)";
  }
  const int64_t max_tokens = static_cast<int64_t>(65535) * kMaxTile;
  if (n_tokens > max_tokens) {
    return "matmul: n_tokens " + std::to_string(n_tokens) + " > " + std::to_string(max_tokens);
  }
  Params p{};
  p.data = w.data.as<const uint8_t>();
  p.aux = w.aux.as<const uint16_t>();
  p.x = x;
  p.y = y;
  p.rows = w.rows;
  p.cols = w.cols;
  p.n_tokens = n_tokens;
  p.nseg = (w.cols + mm::kSegment - 1) / mm::kSegment;
  p.lanes_per_row = p.nseg > 16 ? 32 : (p.nseg > 8 ? 16 : 8);
  const size_t shared = static_cast<size_t>(kWarpsPerCta) * (32 / p.lanes_per_row) *
                        static_cast<size_t>(p.nseg) * kMaxTile * sizeof(float);
  if (shared > kMaxSharedBytes) {
    return "matmul: cols " + std::to_string(w.cols) + " needs " + std::to_string(shared) +
           " bytes of shared memory (at most " + std::to_string(kMaxSharedBytes) + ")";
  }
  if (quantized) {
    const ScratchLayout l = scratch_layout(n_tokens, w.cols);
    if (scratch == nullptr || scratch_bytes < l.total) {
      return "matmul: scratch_bytes " + std::to_string(scratch == nullptr ? 0 : scratch_bytes) +
             " < " + std::to_string(l.total) + " needed for " + shape_text(w, n_tokens);
    }
    if (reinterpret_cast<uintptr_t>(scratch) % 16 != 0) {
      return "matmul: scratch is not 16-byte aligned";
    }
    auto* base = static_cast<uint8_t*>(scratch);
    auto* aq = reinterpret_cast<int8_t*>(base + l.aq);
    auto* ad = reinterpret_cast<float*>(base + l.ad);
    auto* as = reinterpret_cast<int*>(base + l.as);
    const int64_t warps = n_tokens * (w.cols / mm::kQBlock);
    const int64_t threads = 256;
    const int64_t blocks = (warps * 32 + threads - 1) / threads;
    quantize_activations<<<static_cast<unsigned>(blocks), threads, 0, raw(stream)>>>(
        x, n_tokens, w.cols, aq, ad, as);
    if (Error e = launch_error("matmul: quantize_activations"); !e.empty()) return e;
    p.act = mm::Act{aq, ad, as, w.cols, w.cols / mm::kQBlock};
  }
  return with_type(w.type, [&](auto tag) { return launch_type<decltype(tag)::value>(p, stream); });
}

}  // namespace hearth::engine::cuda
