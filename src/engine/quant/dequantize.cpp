// Reference dequantization of every block type (ggml's formulas, our code).
// Float expressions are written one rounding at a time, in ggml's order, so the
// output is bit-identical to ggml's dequantize_row_* (products are
// kept rounded before the add: see rounded() in scales.h).
#include <cassert>
#include <cstring>

#include "engine/quant/quant.h"
#include "engine/quant/scales.h"
#include "hearth/engine/fp16.h"

namespace hearth::engine {
namespace {

void dequant_q4_0(const BlockQ4_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>((x[i].qs[j] & 0x0F) - 8) * d;
      y[j + 16] = static_cast<float>((x[i].qs[j] >> 4) - 8) * d;
    }
    y += kQK32;
  }
}

void dequant_q4_1(const BlockQ4_1* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float m = fp16_to_fp32(x[i].m);
    for (int j = 0; j < 16; ++j) {
      y[j] = rounded(static_cast<float>(x[i].qs[j] & 0x0F) * d) + m;
      y[j + 16] = rounded(static_cast<float>(x[i].qs[j] >> 4) * d) + m;
    }
    y += kQK32;
  }
}

void dequant_q5_0(const BlockQ5_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, 4);
    for (int j = 0; j < 16; ++j) {
      const int hi0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int hi1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
      y[j] = static_cast<float>(((x[i].qs[j] & 0x0F) | hi0) - 16) * d;
      y[j + 16] = static_cast<float>(((x[i].qs[j] >> 4) | hi1) - 16) * d;
    }
    y += kQK32;
  }
}

void dequant_q5_1(const BlockQ5_1* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float m = fp16_to_fp32(x[i].m);
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, 4);
    for (int j = 0; j < 16; ++j) {
      const int hi0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int hi1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
      y[j] = rounded(static_cast<float>((x[i].qs[j] & 0x0F) | hi0) * d) + m;
      y[j + 16] = rounded(static_cast<float>((x[i].qs[j] >> 4) | hi1) * d) + m;
    }
    y += kQK32;
  }
}

void dequant_q8_0(const BlockQ8_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < kQK32; ++j) y[j] = static_cast<float>(x[i].qs[j]) * d;
    y += kQK32;
  }
}

void dequant_q8_1(const BlockQ8_1* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < kQK32; ++j) y[j] = static_cast<float>(x[i].qs[j]) * d;
    y += kQK32;
  }
}

void dequant_q2_k(const BlockQ2_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float dmin = fp16_to_fp32(x[i].dmin);
    const uint8_t* q = x[i].qs;
    int is = 0;
    for (int half = 0; half < 2; ++half) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part) {
          const uint8_t sc = x[i].scales[is++];
          const float dl = d * static_cast<float>(sc & 0xF);
          const float ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; ++l) {
            const int v = (q[l + 16 * part] >> shift) & 3;
            *y++ = rounded(dl * static_cast<float>(v)) - ml;
          }
        }
      }
      q += 32;
    }
  }
}

void dequant_q3_k(const BlockQ3_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d_all = fp16_to_fp32(x[i].d);
    int8_t scales[16];
    unpack_q3k_scales(x[i].scales, scales);
    const uint8_t* q = x[i].qs;
    const uint8_t* hm = x[i].hmask;
    uint8_t m = 1;
    int is = 0;
    for (int half = 0; half < 2; ++half) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part) {
          const float dl = d_all * static_cast<float>(scales[is++] - 32);
          for (int l = 0; l < 16; ++l) {
            const int lo = (q[l + 16 * part] >> shift) & 3;
            const int v = lo - ((hm[l + 16 * part] & m) ? 0 : 4);
            *y++ = dl * static_cast<float>(v);
          }
        }
        m = static_cast<uint8_t>(m << 1);
      }
      q += 32;
    }
  }
}

void dequant_q4_k(const BlockQ4_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float dmin = fp16_to_fp32(x[i].dmin);
    const uint8_t* q = x[i].qs;
    for (int j = 0; j < 4; ++j) {
      uint8_t sc, mn;
      k4_scale_min(2 * j, x[i].scales, &sc, &mn);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = dmin * static_cast<float>(mn);
      k4_scale_min(2 * j + 1, x[i].scales, &sc, &mn);
      const float d2 = d * static_cast<float>(sc);
      const float m2 = dmin * static_cast<float>(mn);
      for (int l = 0; l < 32; ++l) *y++ = rounded(d1 * static_cast<float>(q[l] & 0xF)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = rounded(d2 * static_cast<float>(q[l] >> 4)) - m2;
      q += 32;
    }
  }
}

void dequant_q5_k(const BlockQ5_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float dmin = fp16_to_fp32(x[i].dmin);
    const uint8_t* ql = x[i].qs;
    const uint8_t* qh = x[i].qh;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0; j < 4; ++j) {
      uint8_t sc, mn;
      k4_scale_min(2 * j, x[i].scales, &sc, &mn);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = dmin * static_cast<float>(mn);
      k4_scale_min(2 * j + 1, x[i].scales, &sc, &mn);
      const float d2 = d * static_cast<float>(sc);
      const float m2 = dmin * static_cast<float>(mn);
      for (int l = 0; l < 32; ++l) {
        const int v = (ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0);
        *y++ = rounded(d1 * static_cast<float>(v)) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        const int v = (ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0);
        *y++ = rounded(d2 * static_cast<float>(v)) - m2;
      }
      ql += 32;
      u1 = static_cast<uint8_t>(u1 << 2);
      u2 = static_cast<uint8_t>(u2 << 2);
    }
  }
}

void dequant_q6_k(const BlockQ6_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const uint8_t* ql = x[i].ql;
    const uint8_t* qh = x[i].qh;
    const int8_t* sc = x[i].scales;
    for (int half = 0; half < 2; ++half) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

void dequant_q8_k(const BlockQ8_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    for (int j = 0; j < kQKK; ++j) y[j] = x[i].d * static_cast<float>(x[i].qs[j]);
    y += kQKK;
  }
}

template <class Block>
const Block* blocks(const void* p) {
  return static_cast<const Block*>(p);
}

}  // namespace

bool is_dequantizable_type(gguf::TensorType t) {
  return block_geometry(t).block_size != 0;
}

bool is_supported_weight_type(gguf::TensorType t) {
  return is_dequantizable_type(t) && t != gguf::TensorType::kQ8_1 && t != gguf::TensorType::kQ8_K;
}

void dequantize_row(gguf::TensorType t, const void* src, float* dst, int64_t n) {
  using T = gguf::TensorType;
  const BlockGeometry g = block_geometry(t);
  assert(g.block_size != 0 && n % g.block_size == 0);
  const int64_t nb = g.block_size ? n / g.block_size : 0;
  switch (t) {
    case T::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case T::kF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
      return;
    }
    case T::kBF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(h[i]);
      return;
    }
    case T::kQ4_0:
      return dequant_q4_0(blocks<BlockQ4_0>(src), dst, nb);
    case T::kQ4_1:
      return dequant_q4_1(blocks<BlockQ4_1>(src), dst, nb);
    case T::kQ5_0:
      return dequant_q5_0(blocks<BlockQ5_0>(src), dst, nb);
    case T::kQ5_1:
      return dequant_q5_1(blocks<BlockQ5_1>(src), dst, nb);
    case T::kQ8_0:
      return dequant_q8_0(blocks<BlockQ8_0>(src), dst, nb);
    case T::kQ8_1:
      return dequant_q8_1(blocks<BlockQ8_1>(src), dst, nb);
    case T::kQ2_K:
      return dequant_q2_k(blocks<BlockQ2_K>(src), dst, nb);
    case T::kQ3_K:
      return dequant_q3_k(blocks<BlockQ3_K>(src), dst, nb);
    case T::kQ4_K:
      return dequant_q4_k(blocks<BlockQ4_K>(src), dst, nb);
    case T::kQ5_K:
      return dequant_q5_k(blocks<BlockQ5_K>(src), dst, nb);
    case T::kQ6_K:
      return dequant_q6_k(blocks<BlockQ6_K>(src), dst, nb);
    case T::kQ8_K:
      return dequant_q8_k(blocks<BlockQ8_K>(src), dst, nb);
    default:
      assert(false && "dequantize_row: unsupported type");
      return;
  }
}

}  // namespace hearth::engine
