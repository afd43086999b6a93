// Portable reference kernels: the definition of the canonical order that every
// SIMD kernel reproduces (see canonical.h and docs/engine-kernels.md).
#include <cmath>
#include <cstring>

#include "engine/kernels/canonical.h"
#include "engine/kernels/kernel_set.h"
#include "engine/quant/blocks.h"
#include "engine/quant/scales.h"
#include "hearth/engine/fp16.h"

namespace hearth::engine {
namespace {

using canon::Lanes32;
using canon::Phase4;

// ---- 32-element block formats -------------------------------------------------

int32_t isum_q4_0(const BlockQ4_0& w, const int8_t* y) {
  int32_t s = 0;
  for (int j = 0; j < 16; ++j) {
    s += ((w.qs[j] & 0xF) - 8) * y[j];
    s += ((w.qs[j] >> 4) - 8) * y[j + 16];
  }
  return s;
}
int32_t isum_q4_1(const BlockQ4_1& w, const int8_t* y) {
  int32_t s = 0;
  for (int j = 0; j < 16; ++j) s += (w.qs[j] & 0xF) * y[j] + (w.qs[j] >> 4) * y[j + 16];
  return s;
}
int32_t isum_q5(const uint8_t* qs, const uint8_t* qh_bytes, int bias, const int8_t* y) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  int32_t s = 0;
  for (int j = 0; j < 16; ++j) {
    const int q0 = ((qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1u) << 4)) - bias;
    const int q1 = ((qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4)) - bias;
    s += q0 * y[j] + q1 * y[j + 16];
  }
  return s;
}
int32_t isum_q8(const int8_t* w, const int8_t* y) {
  int32_t s = 0;
  for (int j = 0; j < 32; ++j) s += w[j] * y[j];
  return s;
}

float dot_q4_0(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const BlockQ4_0*>(vw);
  const auto* x = static_cast<const BlockQ8_0*>(vx);
  Phase4 acc;
  for (int64_t b = 0; b < n / kQK32; ++b) {
    acc.add(b, fp16_to_fp32(w[b].d) * fp16_to_fp32(x[b].d), isum_q4_0(w[b], x[b].qs));
  }
  return acc.sum();
}
float dot_q4_1(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const BlockQ4_1*>(vw);
  const auto* x = static_cast<const BlockQ8_1*>(vx);
  Phase4 acc;
  for (int64_t b = 0; b < n / kQK32; ++b) {
    acc.add(b, fp16_to_fp32(w[b].d) * fp16_to_fp32(x[b].d), isum_q4_1(w[b], x[b].qs));
    acc.add_min(b, fp16_to_fp32(w[b].m), fp16_to_fp32(x[b].s));
  }
  return acc.sum();
}
float dot_q5_0(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const BlockQ5_0*>(vw);
  const auto* x = static_cast<const BlockQ8_0*>(vx);
  Phase4 acc;
  for (int64_t b = 0; b < n / kQK32; ++b) {
    acc.add(b, fp16_to_fp32(w[b].d) * fp16_to_fp32(x[b].d), isum_q5(w[b].qs, w[b].qh, 16, x[b].qs));
  }
  return acc.sum();
}
float dot_q5_1(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const BlockQ5_1*>(vw);
  const auto* x = static_cast<const BlockQ8_1*>(vx);
  Phase4 acc;
  for (int64_t b = 0; b < n / kQK32; ++b) {
    acc.add(b, fp16_to_fp32(w[b].d) * fp16_to_fp32(x[b].d), isum_q5(w[b].qs, w[b].qh, 0, x[b].qs));
    acc.add_min(b, fp16_to_fp32(w[b].m), fp16_to_fp32(x[b].s));
  }
  return acc.sum();
}
float dot_q8_0(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const BlockQ8_0*>(vw);
  const auto* x = static_cast<const BlockQ8_0*>(vx);
  Phase4 acc;
  for (int64_t b = 0; b < n / kQK32; ++b) {
    acc.add(b, fp16_to_fp32(w[b].d) * fp16_to_fp32(x[b].d), isum_q8(w[b].qs, x[b].qs));
  }
  return acc.sum();
}

// ---- k-quants x Q8_K: per super-block exact integer sums, then
//      acc = fma(d, isum, acc); acc = fma(-dmin, imin, acc) (no min term for Q3/Q6).

float dot_q2_k(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const BlockQ2_K*>(vw);
  const auto* x = static_cast<const BlockQ8_K*>(vx);
  float acc = 0.0f;
  for (int64_t b = 0; b < n / kQKK; ++b) {
    int32_t isum = 0, imin = 0;
    for (int j = 0; j < 16; ++j) {
      // Sub-block j: elements 16j..16j+15 = half j/8, bit pair (j%8)/2, bytes 16*(j%2)..
      const uint8_t* q = w[b].qs + 32 * (j / 8) + 16 * (j % 2);
      const int shift = 2 * ((j % 8) / 2);
      const int8_t* y = x[b].qs + 16 * j;
      int32_t s = 0;
      for (int l = 0; l < 16; ++l) s += ((q[l] >> shift) & 3) * y[l];
      isum += (w[b].scales[j] & 0xF) * s;
      imin += (w[b].scales[j] >> 4) * x[b].bsums[j];
    }
    const float d = x[b].d * fp16_to_fp32(w[b].d);
    const float dmin = x[b].d * fp16_to_fp32(w[b].dmin);
    acc = std::fma(d, static_cast<float>(isum), acc);
    acc = std::fma(-dmin, static_cast<float>(imin), acc);
  }
  return acc;
}

float dot_q3_k(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const BlockQ3_K*>(vw);
  const auto* x = static_cast<const BlockQ8_K*>(vx);
  float acc = 0.0f;
  for (int64_t b = 0; b < n / kQKK; ++b) {
    int8_t sc[16];
    unpack_q3k_scales(w[b].scales, sc);
    int32_t isum = 0;
    for (int j = 0; j < 16; ++j) {
      const int byte0 = 32 * (j / 8) + 16 * (j % 2);
      const int pair = (j % 8) / 2;  // which 2-bit field and which hmask bit (+4 per half)
      const uint8_t hbit = static_cast<uint8_t>(1u << (pair + 4 * (j / 8)));
      const int8_t* y = x[b].qs + 16 * j;
      int32_t s = 0;
      for (int l = 0; l < 16; ++l) {
        const int lo = (w[b].qs[byte0 + l] >> (2 * pair)) & 3;
        const int hi_idx = 16 * (j % 2) + l;
        s += (lo - ((w[b].hmask[hi_idx] & hbit) ? 0 : 4)) * y[l];
      }
      isum += (sc[j] - 32) * s;
    }
    const float d = x[b].d * fp16_to_fp32(w[b].d);
    acc = std::fma(d, static_cast<float>(isum), acc);
  }
  return acc;
}

float dot_q4_k(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const BlockQ4_K*>(vw);
  const auto* x = static_cast<const BlockQ8_K*>(vx);
  float acc = 0.0f;
  for (int64_t b = 0; b < n / kQKK; ++b) {
    uint8_t sc[8], mn[8];
    k4_unpack_scales(w[b].scales, sc, mn);
    int32_t isum = 0, imin = 0;
    for (int j = 0; j < 8; ++j) {
      const uint8_t* q = w[b].qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      const int8_t* y = x[b].qs + 32 * j;
      int32_t s = 0;
      for (int l = 0; l < 32; ++l) s += ((q[l] >> shift) & 0xF) * y[l];
      isum += sc[j] * s;
      imin += mn[j] * (x[b].bsums[2 * j] + x[b].bsums[2 * j + 1]);
    }
    const float d = x[b].d * fp16_to_fp32(w[b].d);
    const float dmin = x[b].d * fp16_to_fp32(w[b].dmin);
    acc = std::fma(d, static_cast<float>(isum), acc);
    acc = std::fma(-dmin, static_cast<float>(imin), acc);
  }
  return acc;
}

float dot_q5_k(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const BlockQ5_K*>(vw);
  const auto* x = static_cast<const BlockQ8_K*>(vx);
  float acc = 0.0f;
  for (int64_t b = 0; b < n / kQKK; ++b) {
    uint8_t sc[8], mn[8];
    k4_unpack_scales(w[b].scales, sc, mn);
    int32_t isum = 0, imin = 0;
    for (int j = 0; j < 8; ++j) {
      const uint8_t* q = w[b].qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      const uint8_t hbit = static_cast<uint8_t>(1u << j);
      const int8_t* y = x[b].qs + 32 * j;
      int32_t s = 0;
      for (int l = 0; l < 32; ++l) {
        const int v = ((q[l] >> shift) & 0xF) | ((w[b].qh[l] & hbit) ? 16 : 0);
        s += v * y[l];
      }
      isum += sc[j] * s;
      imin += mn[j] * (x[b].bsums[2 * j] + x[b].bsums[2 * j + 1]);
    }
    const float d = x[b].d * fp16_to_fp32(w[b].d);
    const float dmin = x[b].d * fp16_to_fp32(w[b].dmin);
    acc = std::fma(d, static_cast<float>(isum), acc);
    acc = std::fma(-dmin, static_cast<float>(imin), acc);
  }
  return acc;
}

float dot_q6_k(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const BlockQ6_K*>(vw);
  const auto* x = static_cast<const BlockQ8_K*>(vx);
  float acc = 0.0f;
  for (int64_t b = 0; b < n / kQKK; ++b) {
    int32_t isum = 0;
    for (int j = 0; j < 16; ++j) {
      // Sub-block j (16 elements at 16j): half h = j/8, quarter g = (j%8)/2 of
      // the half, byte offset 16*(j%2) within the 32-byte lane group.
      const int h = j / 8, g = (j % 8) / 2, o = 16 * (j % 2);
      const uint8_t* ql = w[b].ql + 64 * h + 32 * (g & 1) + o;
      const uint8_t* qh = w[b].qh + 32 * h + o;
      const int lshift = 4 * (g >> 1);
      const int hshift = 2 * g;
      const int8_t* y = x[b].qs + 16 * j;
      int32_t s = 0;
      for (int l = 0; l < 16; ++l) {
        const int v = (((ql[l] >> lshift) & 0xF) | (((qh[l] >> hshift) & 3) << 4)) - 32;
        s += v * y[l];
      }
      isum += w[b].scales[j] * s;
    }
    const float d = x[b].d * fp16_to_fp32(w[b].d);
    acc = std::fma(d, static_cast<float>(isum), acc);
  }
  return acc;
}

// ---- float formats: 32-lane canonical order ------------------------------------

template <class Load>
float lanes_dot(int64_t n, Load load) {
  Lanes32 lanes;
  const int64_t full = n - n % 32;
  for (int64_t i = 0; i < full; i += 32) {
    for (int l = 0; l < 32; ++l) {
      float a, b;
      load(i + l, &a, &b);
      lanes.v[l] = std::fma(a, b, lanes.v[l]);
    }
  }
  float r = lanes.reduce();
  for (int64_t i = full; i < n; ++i) {
    float a, b;
    load(i, &a, &b);
    r = std::fma(a, b, r);
  }
  return r;
}

float dot_f32(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const float*>(vw);
  const auto* x = static_cast<const float*>(vx);
  return lanes_dot(n, [&](int64_t i, float* a, float* b) {
    *a = w[i];
    *b = x[i];
  });
}
float dot_f16(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const uint16_t*>(vw);
  const auto* x = static_cast<const uint16_t*>(vx);
  return lanes_dot(n, [&](int64_t i, float* a, float* b) {
    *a = fp16_to_fp32(w[i]);
    *b = fp16_to_fp32(x[i]);
  });
}
float dot_bf16(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const uint16_t*>(vw);
  const auto* x = static_cast<const uint16_t*>(vx);
  return lanes_dot(n, [&](int64_t i, float* a, float* b) {
    *a = bf16_to_fp32(w[i]);
    *b = bf16_to_fp32(x[i]);
  });
}
KernelSet make_scalar() {
  using T = gguf::TensorType;
  KernelSet k{};
  k.isa = "scalar";
  auto set = [&](T t, VecDotFn f) { k.dot[static_cast<int>(t)] = f; };
  set(T::kF32, dot_f32);
  set(T::kF16, dot_f16);
  set(T::kBF16, dot_bf16);
  set(T::kQ4_0, dot_q4_0);
  set(T::kQ4_1, dot_q4_1);
  set(T::kQ5_0, dot_q5_0);
  set(T::kQ5_1, dot_q5_1);
  set(T::kQ8_0, dot_q8_0);
  set(T::kQ2_K, dot_q2_k);
  set(T::kQ3_K, dot_q3_k);
  set(T::kQ4_K, dot_q4_k);
  set(T::kQ5_K, dot_q5_k);
  set(T::kQ6_K, dot_q6_k);
  return k;
}

}  // namespace

gguf::TensorType activation_type(gguf::TensorType weight) {
  using T = gguf::TensorType;
  switch (weight) {
    case T::kQ4_0:
    case T::kQ5_0:
    case T::kQ8_0:
      return T::kQ8_0;
    case T::kQ4_1:
    case T::kQ5_1:
      return T::kQ8_1;
    case T::kQ2_K:
    case T::kQ3_K:
    case T::kQ4_K:
    case T::kQ5_K:
    case T::kQ6_K:
      return T::kQ8_K;
    case T::kF16:
      return T::kF16;
    case T::kBF16:
      return T::kBF16;
    default:
      return T::kF32;
  }
}

const KernelSet& scalar_kernels() {
  static const KernelSet k = make_scalar();
  return k;
}

}  // namespace hearth::engine
