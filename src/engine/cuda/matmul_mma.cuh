// The tensor-core (int8 mma.sync, sm_80+) prefill path of matmul.cu for the quantized
// weight types. Same bits as the __dp4a path, by construction: a 32-block's integer dot is
// exact either way (m16n8k32 s8 x s8 -> s32), and the per-block float steps, the segment
// partials starting at +0.0 and the left-to-right sum of the segments are the same
// operations in the same order (matmul_segments.cuh spells them for the other path).
//
// CTA: 4 warps, 64 rows (16 a warp) x 64 tokens (8 mma n-tiles of 8). Per segment the
// CTA stages its tokens' int8 activations and block scales in shared memory; each warp
// reads its 16 rows' weights from global memory (L2-resident: each row is read once per
// 64-token tile) and decodes each 32-block straight into mma A fragments.
//
// Fragments (PTX ISA, m16n8k32 .s8; g = lane / 4, i = lane % 4):
//   A: a0 = A[g][4i..4i+3], a1 = A[g+8][4i..], a2 = A[g][16+4i..], a3 = A[g+8][16+4i..]
//   B: b0 = B[4i..4i+3][g], b1 = B[16+4i..][g]
//   C: c0 = C[g][2i], c1 = C[g][2i+1], c2 = C[g+8][2i], c3 = C[g+8][2i+1]
#pragma once

#include "engine/cuda/matmul_segments.cuh"

namespace hearth::engine::cuda::mm {

constexpr int kMmaWarps = 4;
constexpr int kMmaRows = 16 * kMmaWarps;  // rows per CTA
constexpr int kMmaTokens = 64;            // tokens per CTA
constexpr int kMmaTiles = kMmaTokens / 8;
constexpr int kActStride = kSegment + 16;  // bytes per staged token row (bank spread)

__device__ __forceinline__ void mma_s8(int c[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                       uint32_t b0, uint32_t b1) {
  c[0] = c[1] = c[2] = c[3] = 0;
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// One weight row's 32-block as this lane's share of an A fragment: lo = values 4i..4i+3,
// hi = values 16+4i..16+4i+3 (signed int8 each), and the block's float parameters.
// (Host-callable: matmul_on_host's tensor-core variant decodes through it.)
struct RowBlock {
  uint32_t lo = 0, hi = 0;
  float p0 = 0.0f, p1 = 0.0f;  // Q4_0/Q5_0/Q8_0/Q6_K: d; Q4_1/Q5_1: d, m; Q4_K/Q5_K: d*sc, dmin*mn
  int sc0 = 0, sc1 = 0;        // Q6_K: the scales of the two 16-halves
};

template <int TYPE>
MM_HD RowBlock row_block(const uint8_t* data, const uint16_t* aux, int64_t nb, int64_t r, int64_t s,
                         int j, int i) {
  RowBlock o;
  const int64_t nsb = nb / kSegBlocks;
  if constexpr (TYPE == kQ4_0 || TYPE == kQ4_1 || TYPE == kQ5_0 || TYPE == kQ5_1) {
    const int64_t blk = r * nb + s * kSegBlocks + j;
    const int64_t nseg = (nb + kSegBlocks - 1) / kSegBlocks;
    const SegmentChunks seg{data + r * nseg * kNibbleSegBytes<TYPE>, nseg, s};
    const uint32_t qh = kNibbleFive<TYPE> ? ld32(seg.at(8 * 16 + 4 * j)) : 0u;
    nibble_word<TYPE>(ld32(seg.at(j * 16 + 4 * i)), qh, i, &o.lo, &o.hi);
    if constexpr (kNibbleMin<TYPE>) {
      o.p0 = half_bits_to_float(aux[2 * blk]);
      o.p1 = half_bits_to_float(aux[2 * blk + 1]);
    } else {
      o.p0 = half_bits_to_float(aux[blk]);
    }
  } else if constexpr (TYPE == kQ8_0) {
    const int64_t blk = r * nb + s * kSegBlocks + j;
    const int64_t nseg = (nb + kSegBlocks - 1) / kSegBlocks;
    const SegmentChunks seg{data + r * nseg * 256, nseg, s};
    o.lo = ld32(seg.at(j * 32 + 4 * i));
    o.hi = ld32(seg.at(j * 32 + 16 + 4 * i));
    o.p0 = half_bits_to_float(aux[blk]);
  } else if constexpr (TYPE == kQ4_K || TYPE == kQ5_K) {
    const SegmentChunks sb{data + r * nsb * (TYPE == kQ4_K ? 144 : 176), nsb, s};
    const uint32_t h = ld32(sb.at(0));
    int sc[8], mn[8];
    unpack_k4_scales(ld32(sb.at(4)), ld32(sb.at(8)), ld32(sb.at(12)), sc, mn);
    const int qs = (TYPE == kQ4_K ? 16 : 48) + (j / 2) * 32;  // byte offsets in the super-block
    const int shift = 4 * (j & 1);
    o.lo = (ld32(sb.at(qs + 4 * i)) >> shift) & 0x0F0F0F0Fu;
    o.hi = (ld32(sb.at(qs + 16 + 4 * i)) >> shift) & 0x0F0F0F0Fu;
    if constexpr (TYPE == kQ5_K) {
      o.lo |= ((ld32(sb.at(16 + 4 * i)) >> j) & 0x01010101u) << 4;
      o.hi |= ((ld32(sb.at(32 + 4 * i)) >> j) & 0x01010101u) << 4;
    }
    const float d = half_bits_to_float(static_cast<uint16_t>(h & 0xFFFF));
    const float dmin = half_bits_to_float(static_cast<uint16_t>(h >> 16));
    o.p0 = fmul(d, i2f(sc[j]));
    o.p1 = fmul(dmin, i2f(mn[j]));
  } else {  // Q6_K (repacked: ql 128, qh 64, scales 16; d in aux)
    const SegmentChunks sb{data + r * nsb * 208, nsb, s};
    const int h = j / 4, m = j % 4;
    const int ql = h * 64 + (m & 1) * 32, qh = 128 + h * 32;  // byte offsets
    const int sl = 4 * (m >> 1), shh = 2 * m;
    const uint32_t lo = ((ld32(sb.at(ql + 4 * i)) >> sl) & 0x0F0F0F0Fu) |
                        (((ld32(sb.at(qh + 4 * i)) >> shh) & 0x03030303u) << 4);
    const uint32_t hi = ((ld32(sb.at(ql + 16 + 4 * i)) >> sl) & 0x0F0F0F0Fu) |
                        (((ld32(sb.at(qh + 16 + 4 * i)) >> shh) & 0x03030303u) << 4);
    o.lo = vsub4(lo, 0x20202020u);
    o.hi = vsub4(hi, 0x20202020u);
    o.sc0 = static_cast<int>(static_cast<int8_t>(*sb.at(192 + h * 8 + 2 * m)));
    o.sc1 = static_cast<int>(static_cast<int8_t>(*sb.at(192 + h * 8 + 2 * m + 1)));
    o.p0 = half_bits_to_float(aux[r * nsb + s]);
  }
  return o;
}

// The block's contribution for one (row, token), as the __dp4a path computes it.
template <int TYPE>
MM_HD float contribution(const RowBlock& w, int dot, int dot1, float ad, float asf) {
  if constexpr (TYPE == kQ4_K || TYPE == kQ5_K) {
    const float v = fsub(fmul(w.p0, i2f(dot)), fmul(w.p1, asf));
    return fmul(ad, v);
  } else if constexpr (kNibbleMin<TYPE>) {
    return contribution_min(w.p0, w.p1, ad, dot, asf);
  } else if constexpr (TYPE == kQ6_K) {
    return fmul(fmul(w.p0, ad), i2f(w.sc0 * dot + w.sc1 * dot1));
  } else {
    return fmul(fmul(w.p0, ad), i2f(dot));
  }
}

// y for rows [64 blockIdx.x, +64) and tokens [64 blockIdx.y, +64).
template <int TYPE>
__global__ void __launch_bounds__(kMmaWarps * 32)
    matmul_mma_kernel(const uint8_t* __restrict__ data, const uint16_t* __restrict__ aux,
                      const Act act, float* __restrict__ y, int64_t rows, int64_t n_tokens,
                      int64_t nseg) {
  __shared__ __align__(16) int8_t s_aq[kMmaTokens * kActStride];
  __shared__ float s_ad[kMmaTokens * kSegBlocks];
  __shared__ float s_as[kMmaTokens * kSegBlocks];
  const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
  const int g = lane / 4, i = lane % 4;
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kMmaTokens;
  const int64_t r_a = static_cast<int64_t>(blockIdx.x) * kMmaRows + warp * 16 + g;
  const int64_t r_b = r_a + 8;
  const int64_t ld_a = min64(r_a, rows - 1), ld_b = min64(r_b, rows - 1);
  float part[kMmaTiles][4], acc[kMmaTiles][4];
#pragma unroll
  for (int nt = 0; nt < kMmaTiles; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[nt][e] = 0.0f;
  }
  for (int64_t s = 0; s < nseg; ++s) {
    __syncthreads();  // the previous segment's reads of the staged activations are done
    for (int idx = static_cast<int>(threadIdx.x); idx < kMmaTokens * (kSegment / 16);
         idx += kMmaWarps * 32) {
      const int tok = idx / (kSegment / 16), chunk = idx % (kSegment / 16);
      const int64_t k = s * kSegment + chunk * 16;
      if (t0 + tok < n_tokens && k < act.cols) {
        *reinterpret_cast<int4*>(s_aq + tok * kActStride + chunk * 16) =
            *reinterpret_cast<const int4*>(act.aq + (t0 + tok) * act.cols + k);
      }
    }
    for (int idx = static_cast<int>(threadIdx.x); idx < kMmaTokens * kSegBlocks;
         idx += kMmaWarps * 32) {
      const int tok = idx / kSegBlocks, jb = idx % kSegBlocks;
      const int64_t b = s * kSegBlocks + jb;
      if (t0 + tok < n_tokens && b < act.nb) {
        s_ad[idx] = act.ad[(t0 + tok) * act.nb + b];
        s_as[idx] = i2f(act.as[(t0 + tok) * act.nb + b]);
      }
    }
    __syncthreads();
#pragma unroll
    for (int nt = 0; nt < kMmaTiles; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) part[nt][e] = 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kSegBlocks; ++j) {
      if (s * kSegBlocks + j >= act.nb) break;  // a short last segment (Q4_0, Q8_0)
      const RowBlock wa = row_block<TYPE>(data, aux, act.nb, ld_a, s, j, i);
      const RowBlock wb = row_block<TYPE>(data, aux, act.nb, ld_b, s, j, i);
#pragma unroll
      for (int nt = 0; nt < kMmaTiles; ++nt) {
        const int8_t* bp = s_aq + (nt * 8 + g) * kActStride + j * 32 + 4 * i;
        const uint32_t b0 = *reinterpret_cast<const uint32_t*>(bp);
        const uint32_t b1 = *reinterpret_cast<const uint32_t*>(bp + 16);
        int c[4], c1[4] = {0, 0, 0, 0};
        if constexpr (TYPE == kQ6_K) {
          mma_s8(c, wa.lo, wb.lo, 0u, 0u, b0, b1);   // values 0..15
          mma_s8(c1, 0u, 0u, wa.hi, wb.hi, b0, b1);  // values 16..31
        } else {
          mma_s8(c, wa.lo, wb.lo, wa.hi, wb.hi, b0, b1);
        }
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int tok = nt * 8 + 2 * i + (e & 1);
          const float ad = s_ad[tok * kSegBlocks + j], asf = s_as[tok * kSegBlocks + j];
          part[nt][e] =
              fadd(part[nt][e], contribution<TYPE>(e < 2 ? wa : wb, c[e], c1[e], ad, asf));
        }
      }
    }
#pragma unroll
    for (int nt = 0; nt < kMmaTiles; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[nt][e] = s == 0 ? part[nt][e] : fadd(acc[nt][e], part[nt][e]);
    }
  }
#pragma unroll
  for (int nt = 0; nt < kMmaTiles; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int64_t r = e < 2 ? r_a : r_b;
      const int64_t t = t0 + nt * 8 + 2 * i + (e & 1);
      if (r < rows && t < n_tokens) y[t * rows + r] = acc[nt][e];
    }
  }
}

}  // namespace hearth::engine::cuda::mm
