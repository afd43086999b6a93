// The per-segment dot products of matmul.cu, one per weight type: the partial sum of one
// K segment (256 elements) of one weight row against up to NT tokens' activations. The
// arithmetic of each (row, token) is the same whatever NT is: the weight block is
// decoded once and reused, every token's sum runs over the segment's blocks in order.
// Device layouts (what upload_matrix writes) are described in matmul.cu.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>

// HD functions run on the device and, through matmul_on_host, on the host: the host
// spellings of the rounding intrinsics below give the same bits (IEEE round to nearest,
// fma correctly rounded, no contraction).
#define MM_HD __host__ __device__ __forceinline__
#ifdef __CUDA_ARCH__
#define MM_UNROLL _Pragma("unroll")
#else
#define MM_UNROLL
#endif

namespace hearth::engine::cuda::mm {

MM_HD float fmul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  volatile float r = a * b;  // volatile: no contraction with a neighbouring add
  return r;
#endif
}
MM_HD float fadd(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  volatile float r = a + b;
  return r;
#endif
}
MM_HD float fsub(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  volatile float r = a - b;
  return r;
#endif
}
MM_HD float ffma(float a, float b, float c) {
#ifdef __CUDA_ARCH__
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
MM_HD float i2f(int v) {
#ifdef __CUDA_ARCH__
  return __int2float_rn(v);
#else
  return static_cast<float>(v);
#endif
}
MM_HD int sdot4(int a, int b, int c) {
#ifdef __CUDA_ARCH__
  return __dp4a(a, b, c);
#else
  for (int i = 0; i < 4; ++i) {
    c += static_cast<int>(static_cast<int8_t>((a >> (8 * i)) & 0xFF)) *
         static_cast<int>(static_cast<int8_t>((b >> (8 * i)) & 0xFF));
  }
  return c;
#endif
}
// Byte-wise a - b modulo 256.
MM_HD uint32_t vsub4(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
  return __vsub4(a, b);
#else
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) {
    r |= (((a >> (8 * i)) - (b >> (8 * i))) & 0xFFu) << (8 * i);
  }
  return r;
#endif
}
MM_HD float fdiv(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fdiv_rn(a, b);
#else
  volatile float r = a / b;
  return r;
#endif
}
// Round half to even, as __float2int_rn (the host runs in the default rounding mode).
MM_HD int f2i_rn(float v) {
#ifdef __CUDA_ARCH__
  return __float2int_rn(v);
#else
  return static_cast<int>(std::nearbyint(v));
#endif
}
MM_HD int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
// sizeof(T) bytes at p, which is aligned to them: a plain load on the device, memcpy on the
// host (the host twin must not assume alignment or aliasing rules the device may).
template <class T>
MM_HD T ld_aligned(const void* p) {
#ifdef __CUDA_ARCH__
  return *reinterpret_cast<const T*>(p);
#else
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
#endif
}
MM_HD uint4 ld16(const void* p) {
  return ld_aligned<uint4>(p);
}
MM_HD int4 ld16i(const void* p) {
  return ld_aligned<int4>(p);
}
MM_HD float4 ld16f(const float* p) {
  return ld_aligned<float4>(p);
}
MM_HD uint32_t ld32(const uint8_t* p) {
  return ld_aligned<uint32_t>(p);
}
MM_HD float half_bits_to_float(uint16_t h) {
  __half_raw r;
  r.x = h;
  return __half2float(__half(r));
}
MM_HD float bf16_bits_to_float(uint32_t h) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(h << 16);
#else
  const uint32_t u = h << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// gguf::TensorType values (hearth/gguf/gguf.h is C++20; cuda_matmul_test pins them).
constexpr int32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8,
                  kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kBF16 = 30;

constexpr int kQBlock = 32;    // elements per activation block (one float scale each)
constexpr int kSegment = 256;  // elements per K segment
constexpr int kSegBlocks = kSegment / kQBlock;

// The quantized activations: token t's block b is aq[t * cols + 32 b ...] (int8), with
// scale ad[t * nb + b] and integer sum as[t * nb + b]; nb = cols / 32.
struct Act {
  const int8_t* aq;
  const float* ad;
  const int* as;
  int64_t cols;
  int64_t nb;
};

// A row's K segment in the device layout: every row is stored as 16-byte chunks, chunk c of
// segment s at (c * nseg + s) * 16 from the row's start (a short last segment zero-padded),
// so that the lanes reading segments s, s+1, ... read consecutive 16 bytes (coalesced).
// The bytes of a segment: Q4_0 / Q8_0 its blocks' quants, K-quants the super-block, float
// types its 256 values.
struct SegmentChunks {
  const uint8_t* row;
  int64_t nseg, s;
  MM_HD const uint8_t* at(int byte) const {
    return row + ((byte >> 4) * nseg + s) * 16 + (byte & 15);
  }
};

// Activation quantization of one 32-block whose largest |x| is amax: the scale d and the
// int8 value of each x.
MM_HD float act_scale(float amax) {
  return fdiv(amax, 127.0f);
}
MM_HD int act_quant(float x, float d) {
  const float id = d != 0.0f ? fdiv(1.0f, d) : 0.0f;
  const int q = f2i_rn(fmul(x, id));
  return q < -127 ? -127 : (q > 127 ? 127 : q);
}

// sum over i of w[i] . a[i] (4 int8 lanes each), in order: exact integer arithmetic.
MM_HD int dot8(const int w[8], const int4& a0, const int4& a1) {
  int s = 0;
  s = sdot4(w[0], a0.x, s);
  s = sdot4(w[1], a0.y, s);
  s = sdot4(w[2], a0.z, s);
  s = sdot4(w[3], a0.w, s);
  s = sdot4(w[4], a1.x, s);
  s = sdot4(w[5], a1.y, s);
  s = sdot4(w[6], a1.z, s);
  s = sdot4(w[7], a1.w, s);
  return s;
}

MM_HD void load_act(const Act& a, int64_t t, int64_t b, int4* a0, int4* a1) {
  const int8_t* p = a.aq + t * a.cols + b * kQBlock;
  *a0 = ld16i(p);
  *a1 = ld16i(p + 16);
}

// A 32-block with one float scale dw and signed int8 values w: acc += (dw * da) * dot.
template <int NT>
MM_HD void accumulate_scaled(const int w[8], float dw, const Act& a, int64_t t0, int ntile,
                             int64_t b, float acc[NT]) {
  MM_UNROLL
  for (int t = 0; t < NT; ++t) {
    if (t < ntile) {
      int4 a0, a1;
      load_act(a, t0 + t, b, &a0, &a1);
      const int sumi = dot8(w, a0, a1);
      const float c = fmul(fmul(dw, a.ad[(t0 + t) * a.nb + b]), i2f(sumi));
      acc[t] = fadd(acc[t], c);
    }
  }
}

// A 32-block with value d*q + m (Q4_1, Q5_1; q >= 0), for one token: the block's activation
// scale da, integer dot and integer activation sum.
// c = da * (d * float(dot(q, a)) + m * float(sum(a))).
MM_HD float contribution_min(float dw, float mw, float da, int dot, float sum_a) {
  return fmul(da, fadd(fmul(dw, i2f(dot)), fmul(mw, sum_a)));
}

// A 32-block with value d*q + m: acc += contribution_min(...) per token.
template <int NT>
MM_HD void accumulate_min(const int w[8], float dw, float mw, const Act& a, int64_t t0, int ntile,
                          int64_t b, float acc[NT]) {
  MM_UNROLL
  for (int t = 0; t < NT; ++t) {
    if (t < ntile) {
      int4 a0, a1;
      load_act(a, t0 + t, b, &a0, &a1);
      const int64_t ab = (t0 + t) * a.nb + b;
      const float c = contribution_min(dw, mw, a.ad[ab], dot8(w, a0, a1), i2f(a.as[ab]));
      acc[t] = fadd(acc[t], c);
    }
  }
}

// Bits k..k+3 of qh as bit 4 of the bytes 0..3 of a word: the fifth bit of four Q5_0 / Q5_1
// values.
MM_HD uint32_t q5_high_bits(uint32_t qh, int k) {
  uint32_t r = 0;
  MM_UNROLL
  for (int i = 0; i < 4; ++i) r |= ((qh >> (k + i)) & 1u) << (8 * i + 4);
  return r;
}

// The 32-element nibble formats: Q4_0, Q4_1, Q5_0, Q5_1.
template <int TYPE>
constexpr bool kNibbleFive = TYPE == kQ5_0 || TYPE == kQ5_1;  // a fifth bit in qh
template <int TYPE>
constexpr bool kNibbleMin = TYPE == kQ4_1 || TYPE == kQ5_1;  // value d*q + m
// Device bytes of a segment (8 blocks): their 16 qs bytes each, then their 4 qh bytes each.
template <int TYPE>
constexpr int kNibbleSegBytes = kNibbleFive<TYPE> ? 160 : 128;

// Word i (qs bytes 4i..4i+3) of a nibble-format block as 4 int8 values each: lo = values
// 4i..4i+3 (low nibbles), hi = values 16+4i..16+4i+3 (high nibbles). Q5_0 / Q5_1 add the fifth
// bit of value v from bit v of qh; Q4_0 subtracts 8 and Q5_0 16 (byte-wise: the signed
// value); Q4_1 / Q5_1 keep q >= 0 (their m term is applied per block).
template <int TYPE>
MM_HD void nibble_word(uint32_t q, uint32_t qh, int i, uint32_t* lo, uint32_t* hi) {
  uint32_t l = q & 0x0F0F0F0Fu, h = (q >> 4) & 0x0F0F0F0Fu;
  if constexpr (kNibbleFive<TYPE>) {
    l |= q5_high_bits(qh, 4 * i);
    h |= q5_high_bits(qh, 16 + 4 * i);
  }
  if constexpr (TYPE == kQ4_0) {
    l = vsub4(l, 0x08080808u);
    h = vsub4(h, 0x08080808u);
  } else if constexpr (TYPE == kQ5_0) {
    l = vsub4(l, 0x10101010u);
    h = vsub4(h, 0x10101010u);
  }
  *lo = l;
  *hi = h;
}

// Q4_0, Q4_1, Q5_0, Q5_1: data = per segment the 16 qs bytes of each of its 8 blocks, then
// (Q5_0, Q5_1) their 4 qh bytes; aux = per block the fp16 d (Q4_0, Q5_0) or d and m (Q4_1,
// Q5_1).
template <int TYPE, int NT>
MM_HD void segment_nibbles(const uint8_t* data, const uint16_t* aux, int64_t r, int64_t s,
                           const Act& a, int64_t t0, int ntile, float acc[NT]) {
  const int64_t nseg = (a.nb + kSegBlocks - 1) / kSegBlocks;
  const SegmentChunks seg{data + r * nseg * kNibbleSegBytes<TYPE>, nseg, s};
  const int64_t b0 = s * kSegBlocks;
  const int64_t b1 = min64(b0 + kSegBlocks, a.nb);
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t blk = r * a.nb + b;
    const int j = static_cast<int>(b - b0);
    const uint4 q = ld16(seg.at(j * 16));
    const uint32_t qw[4] = {q.x, q.y, q.z, q.w};
    uint32_t qh = 0;
    if constexpr (kNibbleFive<TYPE>) qh = ld32(seg.at(8 * 16 + 4 * j));
    int w[8];
    MM_UNROLL
    for (int i = 0; i < 4; ++i) {
      uint32_t lo, hi;
      nibble_word<TYPE>(qw[i], qh, i, &lo, &hi);
      w[i] = static_cast<int>(lo);
      w[i + 4] = static_cast<int>(hi);
    }
    if constexpr (kNibbleMin<TYPE>) {
      accumulate_min<NT>(w, half_bits_to_float(aux[2 * blk]), half_bits_to_float(aux[2 * blk + 1]),
                         a, t0, ntile, b, acc);
    } else {
      accumulate_scaled<NT>(w, half_bits_to_float(aux[blk]), a, t0, ntile, b, acc);
    }
  }
}

// Q8_0: data = 32 int8 per block, aux = the fp16 d of each block.
template <int NT>
MM_HD void segment_q8_0(const uint8_t* data, const uint16_t* aux, int64_t r, int64_t s,
                        const Act& a, int64_t t0, int ntile, float acc[NT]) {
  const int64_t nseg = (a.nb + kSegBlocks - 1) / kSegBlocks;
  const SegmentChunks seg{data + r * nseg * 256, nseg, s};
  const int64_t b0 = s * kSegBlocks;
  const int64_t b1 = min64(b0 + kSegBlocks, a.nb);
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t blk = r * a.nb + b;
    const int off = static_cast<int>(b - b0) * 32;
    const uint4 q0 = ld16(seg.at(off)), q1 = ld16(seg.at(off + 16));
    const int w[8] = {static_cast<int>(q0.x), static_cast<int>(q0.y), static_cast<int>(q0.z),
                      static_cast<int>(q0.w), static_cast<int>(q1.x), static_cast<int>(q1.y),
                      static_cast<int>(q1.z), static_cast<int>(q1.w)};
    accumulate_scaled<NT>(w, half_bits_to_float(aux[blk]), a, t0, ntile, b, acc);
  }
}

// The 8 six-bit scales and mins of a Q4_K / Q5_K super-block from its 12 scale bytes
// (words u0, u1, u2), as k4_scale_min in src/engine/quant/scales.h.
MM_HD void unpack_k4_scales(uint32_t u0, uint32_t u1, uint32_t u2, int sc[8], int mn[8]) {
  const uint32_t low6 = 0x3f3f3f3fu, low4 = 0x0f0f0f0fu, low2 = 0x03030303u;
  const uint32_t s_lo = u0 & low6;
  const uint32_t m_lo = u1 & low6;
  const uint32_t s_hi = (u2 & low4) | (((u0 >> 6) & low2) << 4);
  const uint32_t m_hi = ((u2 >> 4) & low4) | (((u1 >> 6) & low2) << 4);
  MM_UNROLL
  for (int i = 0; i < 4; ++i) {
    sc[i] = static_cast<int>((s_lo >> (8 * i)) & 0xFF);
    sc[i + 4] = static_cast<int>((s_hi >> (8 * i)) & 0xFF);
    mn[i] = static_cast<int>((m_lo >> (8 * i)) & 0xFF);
    mn[i + 4] = static_cast<int>((m_hi >> (8 * i)) & 0xFF);
  }
}

// A K-quant 32-block with value d*sc*q - dmin*mn (q >= 0):
// acc += da * ((d*sc) * dot(q, a) - (dmin*mn) * sum(a)).
template <int NT>
MM_HD void accumulate_k_min(const int w[8], float dsc, float dmn, const Act& a, int64_t t0,
                            int ntile, int64_t b, float acc[NT]) {
  MM_UNROLL
  for (int t = 0; t < NT; ++t) {
    if (t < ntile) {
      int4 a0, a1;
      load_act(a, t0 + t, b, &a0, &a1);
      const int sumi = dot8(w, a0, a1);
      const int64_t ab = (t0 + t) * a.nb + b;
      const float v = fsub(fmul(dsc, i2f(sumi)), fmul(dmn, i2f(a.as[ab])));
      acc[t] = fadd(acc[t], fmul(a.ad[ab], v));
    }
  }
}

// Q4_K: the GGUF super-block (144 bytes: d, dmin, 12 scale bytes, 128 qs), chunked.
template <int NT>
MM_HD void segment_q4_k(const uint8_t* data, int64_t r, int64_t s, const Act& a, int64_t t0,
                        int ntile, float acc[NT]) {
  const int64_t nsb = a.nb / kSegBlocks;
  const SegmentChunks sb{data + r * nsb * 144, nsb, s};
  const uint4 h = ld16(sb.at(0));
  uint32_t q[32];
  MM_UNROLL
  for (int i = 0; i < 8; ++i) {
    const uint4 v = ld16(sb.at(16 * (1 + i)));
    q[4 * i] = v.x;
    q[4 * i + 1] = v.y;
    q[4 * i + 2] = v.z;
    q[4 * i + 3] = v.w;
  }
  const float d = half_bits_to_float(static_cast<uint16_t>(h.x & 0xFFFF));
  const float dmin = half_bits_to_float(static_cast<uint16_t>(h.x >> 16));
  int sc[8], mn[8];
  unpack_k4_scales(h.y, h.z, h.w, sc, mn);
  MM_UNROLL
  for (int j = 0; j < 8; ++j) {
    // sub-block j: nibble (j & 1) of qs[32 (j / 2) + l], l < 32
    int w[8];
    MM_UNROLL
    for (int i = 0; i < 8; ++i) {
      w[i] = static_cast<int>((q[(j / 2) * 8 + i] >> (4 * (j & 1))) & 0x0F0F0F0Fu);
    }
    const float dsc = fmul(d, i2f(sc[j]));
    const float dmn = fmul(dmin, i2f(mn[j]));
    accumulate_k_min<NT>(w, dsc, dmn, a, t0, ntile, s * kSegBlocks + j, acc);
  }
}

// Q5_K: the GGUF super-block (176 bytes: d, dmin, 12 scale bytes, 32 qh, 128 qs), chunked.
template <int NT>
MM_HD void segment_q5_k(const uint8_t* data, int64_t r, int64_t s, const Act& a, int64_t t0,
                        int ntile, float acc[NT]) {
  const int64_t nsb = a.nb / kSegBlocks;
  const SegmentChunks sb{data + r * nsb * 176, nsb, s};
  const uint4 h = ld16(sb.at(0));
  uint32_t qh[8];
  {
    const uint4 v0 = ld16(sb.at(16)), v1 = ld16(sb.at(32));
    qh[0] = v0.x, qh[1] = v0.y, qh[2] = v0.z, qh[3] = v0.w;
    qh[4] = v1.x, qh[5] = v1.y, qh[6] = v1.z, qh[7] = v1.w;
  }
  uint32_t q[32];
  MM_UNROLL
  for (int i = 0; i < 8; ++i) {
    const uint4 v = ld16(sb.at(16 * (3 + i)));
    q[4 * i] = v.x;
    q[4 * i + 1] = v.y;
    q[4 * i + 2] = v.z;
    q[4 * i + 3] = v.w;
  }
  const float d = half_bits_to_float(static_cast<uint16_t>(h.x & 0xFFFF));
  const float dmin = half_bits_to_float(static_cast<uint16_t>(h.x >> 16));
  int sc[8], mn[8];
  unpack_k4_scales(h.y, h.z, h.w, sc, mn);
  MM_UNROLL
  for (int j = 0; j < 8; ++j) {
    // sub-block j: nibble (j & 1) of qs[32 (j / 2) + l], fifth bit = bit j of qh[l]
    int w[8];
    MM_UNROLL
    for (int i = 0; i < 8; ++i) {
      const uint32_t lo = (q[(j / 2) * 8 + i] >> (4 * (j & 1))) & 0x0F0F0F0Fu;
      const uint32_t hi = ((qh[i] >> j) & 0x01010101u) << 4;
      w[i] = static_cast<int>(lo | hi);
    }
    const float dsc = fmul(d, i2f(sc[j]));
    const float dmn = fmul(dmin, i2f(mn[j]));
    accumulate_k_min<NT>(w, dsc, dmn, a, t0, ntile, s * kSegBlocks + j, acc);
  }
}

// Q6_K repacked: data = 208 bytes per super-block (ql 128, qh 64, scales 16, as in GGUF; chunked),
// aux = its fp16 d. 32-block g = 4 h + m: ql[64 h + 32 (m & 1) + l] nibble (m >> 1),
// qh[32 h + l] bits 2m..2m+1, scale sc[8 h + 2 m] for l < 16 and sc[8 h + 2 m + 1] after;
// value d * sc * (q - 32). acc += (d * da) * (sc0 * dot0 + sc1 * dot1).
template <int NT>
MM_HD void segment_q6_k(const uint8_t* data, const uint16_t* aux, int64_t r, int64_t s,
                        const Act& a, int64_t t0, int ntile, float acc[NT]) {
  const int64_t nsb = a.nb / kSegBlocks;
  const SegmentChunks blk{data + r * nsb * 208, nsb, s};
  uint32_t u[52];
  MM_UNROLL
  for (int i = 0; i < 13; ++i) {
    const uint4 v = ld16(blk.at(16 * i));
    u[4 * i] = v.x;
    u[4 * i + 1] = v.y;
    u[4 * i + 2] = v.z;
    u[4 * i + 3] = v.w;
  }
  const uint32_t* ql = u;        // 32 words
  const uint32_t* qh = u + 32;   // 16 words
  const uint32_t* scw = u + 48;  // 4 words: 16 int8 scales
  const float d = half_bits_to_float(aux[r * nsb + s]);
  MM_UNROLL
  for (int g = 0; g < 8; ++g) {
    const int h = g / 4, m = g % 4;
    int w[8];
    MM_UNROLL
    for (int i = 0; i < 8; ++i) {
      const uint32_t lo = (ql[h * 16 + (m & 1) * 8 + i] >> (4 * (m >> 1))) & 0x0F0F0F0Fu;
      const uint32_t hi = ((qh[h * 8 + i] >> (2 * m)) & 0x03030303u) << 4;
      w[i] = static_cast<int>(vsub4(lo | hi, 0x20202020u));
    }
    const int si = h * 8 + 2 * m;
    const int sc0 = static_cast<int>(static_cast<int8_t>((scw[si / 4] >> (8 * (si % 4))) & 0xFF));
    const int sc1 =
        static_cast<int>(static_cast<int8_t>((scw[(si + 1) / 4] >> (8 * ((si + 1) % 4))) & 0xFF));
    const int64_t b = s * kSegBlocks + g;
    MM_UNROLL
    for (int t = 0; t < NT; ++t) {
      if (t < ntile) {
        int4 a0, a1;
        load_act(a, t0 + t, b, &a0, &a1);
        int d0 = 0, d1 = 0;
        d0 = sdot4(w[0], a0.x, d0);
        d0 = sdot4(w[1], a0.y, d0);
        d0 = sdot4(w[2], a0.z, d0);
        d0 = sdot4(w[3], a0.w, d0);
        d1 = sdot4(w[4], a1.x, d1);
        d1 = sdot4(w[5], a1.y, d1);
        d1 = sdot4(w[6], a1.z, d1);
        d1 = sdot4(w[7], a1.w, d1);
        const int sumi = sc0 * d0 + sc1 * d1;
        const float c = fmul(fmul(d, a.ad[(t0 + t) * a.nb + b]), i2f(sumi));
        acc[t] = fadd(acc[t], c);
      }
    }
  }
}

// Float weights (F32, F16, BF16): acc = fma(w[k], x[k], acc) for k in the segment in
// order, in fp32 on the float activations. cols is a multiple of 8.
template <int NT, class Load8>
MM_HD void segment_float(const Load8& load, int64_t r, int64_t s, const float* x, int64_t cols,
                         int64_t t0, int ntile, float acc[NT]) {
  const int64_t k0 = s * kSegment;
  const int64_t k1 = min64(k0 + kSegment, cols);
  for (int64_t k = k0; k < k1; k += 8) {
    float w[8];
    load(r, k, w);
    MM_UNROLL
    for (int t = 0; t < NT; ++t) {
      if (t < ntile) {
        const float* xp = x + (t0 + t) * cols + k;
        const float4 x0 = ld16f(xp), x1 = ld16f(xp + 4);
        float c = acc[t];
        c = ffma(w[0], x0.x, c);
        c = ffma(w[1], x0.y, c);
        c = ffma(w[2], x0.z, c);
        c = ffma(w[3], x0.w, c);
        c = ffma(w[4], x1.x, c);
        c = ffma(w[5], x1.y, c);
        c = ffma(w[6], x1.z, c);
        c = ffma(w[7], x1.w, c);
        acc[t] = c;
      }
    }
  }
}

// Element k of row r of a float matrix in the chunked layout (esize bytes a value).
MM_HD const uint8_t* float_at(const uint8_t* p, int64_t nseg, int esize, int64_t r, int64_t k) {
  const SegmentChunks seg{p + r * nseg * kSegment * esize, nseg, k / kSegment};
  return seg.at(static_cast<int>(k % kSegment) * esize);
}

struct LoadF32 {
  const uint8_t* p;
  int64_t nseg;
  MM_HD void operator()(int64_t r, int64_t k, float w[8]) const {
    // k % 8 == 0: values k..k+3 and k+4..k+7 are two whole chunks
    const float4 a = ld16f(reinterpret_cast<const float*>(float_at(p, nseg, 4, r, k))),
                 b = ld16f(reinterpret_cast<const float*>(float_at(p, nseg, 4, r, k + 4)));
    w[0] = a.x, w[1] = a.y, w[2] = a.z, w[3] = a.w;
    w[4] = b.x, w[5] = b.y, w[6] = b.z, w[7] = b.w;
  }
};

struct LoadF16 {
  const uint8_t* p;
  int64_t nseg;
  MM_HD void operator()(int64_t r, int64_t k, float w[8]) const {
    const uint4 v = ld16(float_at(p, nseg, 2, r, k));
    const uint32_t u[4] = {v.x, v.y, v.z, v.w};
    MM_UNROLL
    for (int i = 0; i < 4; ++i) {
      w[2 * i] = half_bits_to_float(static_cast<uint16_t>(u[i] & 0xFFFF));
      w[2 * i + 1] = half_bits_to_float(static_cast<uint16_t>(u[i] >> 16));
    }
  }
};

struct LoadBF16 {
  const uint8_t* p;
  int64_t nseg;
  MM_HD void operator()(int64_t r, int64_t k, float w[8]) const {
    const uint4 v = ld16(float_at(p, nseg, 2, r, k));
    const uint32_t u[4] = {v.x, v.y, v.z, v.w};
    MM_UNROLL
    for (int i = 0; i < 4; ++i) {
      w[2 * i] = bf16_bits_to_float(u[i] & 0xFFFFu);
      w[2 * i + 1] = bf16_bits_to_float(u[i] >> 16);
    }
  }
};

}  // namespace hearth::engine::cuda::mm
