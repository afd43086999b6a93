// Reference quantizers: the algorithms of ggml's quantize_row_*_ref (no
// importance matrix), written for hearth. Used to write model files and, for the
// Q8_0 / Q8_1 / Q8_K / F16 / BF16 targets, to quantize activation rows before a
// matmul (so this code's output must not depend on the ISA: products that feed
// a rounding step are kept rounded on their own, see rounded()).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

#include "engine/quant/quant.h"
#include "engine/quant/scales.h"
#include "hearth/engine/fp16.h"

namespace hearth::engine {
namespace {

constexpr float kGroupMaxEps = 1e-15f;

// Round half to even via the 1.5*2^23 trick (valid for |v| < 2^22), as ggml does.
inline int nearest_int(float v) {
  float shifted = rounded(v) + 12582912.f;
  int32_t bits;
  std::memcpy(&bits, &shifted, 4);
  return (bits & 0x007fffff) - 0x00400000;
}

void quantize_q4_0(const float* x, BlockQ4_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK32) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK32; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::min(15, static_cast<int>(static_cast<int8_t>(rounded(x[j] * id) + 8.5f)));
      const int q1 =
          std::min(15, static_cast<int>(static_cast<int8_t>(rounded(x[j + 16] * id) + 8.5f)));
      y[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void min_max(const float* x, int n, float* min, float* max) {
  *min = FLT_MAX;
  *max = -FLT_MAX;
  for (int j = 0; j < n; ++j) {
    *min = std::min(*min, x[j]);
    *max = std::max(*max, x[j]);
  }
}

void quantize_q4_1(const float* x, BlockQ4_1* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK32) {
    float min, max;
    min_max(x, kQK32, &min, &max);
    const float d = (max - min) / 15;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    y[i].m = fp32_to_fp16(min);
    for (int j = 0; j < 16; ++j) {
      const int q0 =
          std::min(15, static_cast<int>(static_cast<int8_t>(rounded((x[j] - min) * id) + 0.5f)));
      const int q1 = std::min(
          15, static_cast<int>(static_cast<int8_t>(rounded((x[j + 16] - min) * id) + 0.5f)));
      y[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void quantize_q5_0(const float* x, BlockQ5_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK32) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK32; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int q0 =
          std::min(31, static_cast<int>(static_cast<int8_t>(rounded(x[j] * id) + 16.5f)));
      const int q1 =
          std::min(31, static_cast<int>(static_cast<int8_t>(rounded(x[j + 16] * id) + 16.5f)));
      y[i].qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
      qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
      qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + 16);
    }
    std::memcpy(y[i].qh, &qh, 4);
  }
}

void quantize_q5_1(const float* x, BlockQ5_1* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK32) {
    float min, max;
    min_max(x, kQK32, &min, &max);
    const float d = (max - min) / 31;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    y[i].m = fp32_to_fp16(min);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int q0 = static_cast<uint8_t>(rounded((x[j] - min) * id) + 0.5f);
      const int q1 = static_cast<uint8_t>(rounded((x[j + 16] - min) * id) + 0.5f);
      y[i].qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
      qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
      qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + 16);
    }
    std::memcpy(y[i].qh, &qh, 4);
  }
}

// Shared by Q8_0 and Q8_1: scale = amax / 127, q = round-half-away(x / scale).
float quantize_32_to_int8(const float* x, int8_t* qs) {
  float amax = 0.0f;
  for (int j = 0; j < kQK32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < kQK32; ++j) qs[j] = static_cast<int8_t>(std::round(x[j] * id));
  return d;
}

void quantize_q8_0(const float* x, BlockQ8_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK32)
    y[i].d = fp32_to_fp16(quantize_32_to_int8(x, y[i].qs));
}

void quantize_q8_1(const float* x, BlockQ8_1* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK32) {
    const float d = quantize_32_to_int8(x, y[i].qs);
    int sum = 0;
    for (int j = 0; j < kQK32; ++j) sum += y[i].qs[j];
    y[i].d = fp32_to_fp16(d);
    y[i].s = fp32_to_fp16(static_cast<float>(sum) * d);
  }
}

void quantize_q8_k(const float* x, BlockQ8_K* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQKK; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      std::memset(&y[i], 0, sizeof(BlockQ8_K));
      continue;
    }
    const float iscale = -127.f / max;
    for (int j = 0; j < kQKK; ++j) {
      y[i].qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * x[j])));
    }
    for (int j = 0; j < kQKK / 16; ++j) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += y[i].qs[16 * j + l];
      y[i].bsums[j] = static_cast<int16_t>(sum);
    }
    y[i].d = 1 / iscale;
  }
}

// Search for a scale (and min) of an asymmetric quantization of n values into
// 0..nmax minimizing the weighted error: the first guess is (max-min)/nmax, then
// nstep+1 alternative grids are tried and the least-squares fit of each kept if
// it lowers the error (ggml's make_qkx2_quants). Returns the scale; *neg_min is
// the (positive) amount subtracted.
float fit_scale_min(int n, int nmax, const float* x, const float* w, uint8_t* L, float* neg_min,
                    uint8_t* Laux, float rmin, float rdelta, int nstep, bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *neg_min = -min;
    return 0.f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::clamp(l, 0, nmax));
    float diff = scale * L[i] + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_error += w[i] * diff;
  }
  if (nstep < 1) {
    *neg_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
      Laux[i] = static_cast<uint8_t>(l);
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * Laux[i] + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        cur_error += w[i] * diff;
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *neg_min = -min;
  return scale;
}

// Symmetric scale search into -nmax..nmax-1 (ggml's make_qx_quants with
// rmse_type 1, no importance weights): 19 candidate grids around nmax/max,
// each refit by weighted least squares (weights x^2). L gets q + nmax.
float fit_scale_symmetric(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        L[i] = static_cast<int8_t>(nmax + std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Q3_K's variant (ggml's make_q3_quants with rmse): greedy per-element refinement.
float fit_scale_q3(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  const float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * L[i];
      if (slx > 0) {
        float sl2 = suml2 - w * L[i] * L[i];
        const int new_l = std::clamp(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
        if (new_l != L[i]) {
          slx += w * x[i] * new_l;
          sl2 += w * new_l * new_l;
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<int8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (n_changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// Packs 256 2-bit values: byte l of each 32-byte group holds elements l, l+32,
// l+64, l+96 of its 128-element half in bits 0-1, 2-3, 4-5, 6-7.
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < kQKK; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                           (L[j + l + 96] << 6));
    }
  }
}

void quantize_q2_k(const float* x, BlockQ2_K* y, int64_t nb) {
  uint8_t L[kQKK], Laux[16];
  float weights[16], mins[16], scales[16];
  const float q4scale = 15.f;
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = fit_scale_min(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f,
                                15, true);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    if (max_scale > 0) {
      const float iscale = q4scale / max_scale;
      for (int j = 0; j < 16; ++j)
        y[i].scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      y[i].d = fp32_to_fp16(max_scale / q4scale);
    } else {
      for (int j = 0; j < 16; ++j) y[i].scales[j] = 0;
      y[i].d = fp32_to_fp16(0.f);
    }
    if (max_min > 0) {
      const float iscale = q4scale / max_min;
      for (int j = 0; j < 16; ++j) {
        y[i].scales[j] =
            static_cast<uint8_t>(y[i].scales[j] | (nearest_int(iscale * mins[j]) << 4));
      }
      y[i].dmin = fp32_to_fp16(max_min / q4scale);
    } else {
      y[i].dmin = fp32_to_fp16(0.f);
    }
    for (int j = 0; j < 16; ++j) {
      const float d = fp16_to_fp32(y[i].d) * static_cast<float>(y[i].scales[j] & 0xF);
      if (d == 0.0f) continue;
      const float dm = fp16_to_fp32(y[i].dmin) * static_cast<float>(y[i].scales[j] >> 4);
      for (int l = 0; l < 16; ++l) {
        L[16 * j + l] =
            static_cast<uint8_t>(std::clamp(nearest_int((x[16 * j + l] + dm) / d), 0, 3));
      }
    }
    pack_2bit(L, y[i].qs);
  }
}

void quantize_q3_k(const float* x, BlockQ3_K* y, int64_t nb) {
  int8_t L[kQKK];
  float scales[16];
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    float max_scale = 0, amax = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = fit_scale_q3(16, 4, x + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > amax) {
        amax = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    std::memset(y[i].scales, 0, 12);
    if (max_scale != 0.0f) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < 16; ++j) {
        const int l =
            std::clamp(static_cast<int>(static_cast<int8_t>(nearest_int(iscale * scales[j]))), -32,
                       31) +
            32;
        if (j < 8) {
          y[i].scales[j] = static_cast<uint8_t>(l & 0xF);
        } else {
          y[i].scales[j - 8] = static_cast<uint8_t>(y[i].scales[j - 8] | ((l & 0xF) << 4));
        }
        y[i].scales[j % 4 + 8] =
            static_cast<uint8_t>(y[i].scales[j % 4 + 8] | ((l >> 4) << (2 * (j / 4))));
      }
      y[i].d = fp32_to_fp16(1 / iscale);
    } else {
      y[i].d = fp32_to_fp16(0.f);
    }
    int8_t sc[16];
    unpack_q3k_scales(y[i].scales, sc);
    for (int j = 0; j < 16; ++j) {
      const float d = fp16_to_fp32(y[i].d) * static_cast<float>(sc[j] - 32);
      if (d == 0.0f) continue;
      for (int l = 0; l < 16; ++l) {
        L[16 * j + l] = static_cast<int8_t>(std::clamp(nearest_int(x[16 * j + l] / d), -4, 3) + 4);
      }
    }
    std::memset(y[i].hmask, 0, sizeof(y[i].hmask));
    uint8_t low[kQKK];
    int m = 0;
    uint8_t hm = 1;
    for (int j = 0; j < kQKK; ++j) {
      int v = L[j];
      if (v > 3) {
        y[i].hmask[m] = static_cast<uint8_t>(y[i].hmask[m] | hm);
        v -= 4;
      }
      low[j] = static_cast<uint8_t>(v);
      if (++m == kQKK / 8) {
        m = 0;
        hm = static_cast<uint8_t>(hm << 1);
      }
    }
    pack_2bit(low, y[i].qs);
  }
}

// Q4_K and Q5_K share the scale search and the packing of scales/mins.
void fit_k4_superblock(const float* x, int nmax, float rmin, float rdelta, int nstep, uint8_t* L,
                       uint8_t packed_scales[12], uint16_t* d_out, uint16_t* dmin_out) {
  uint8_t Laux[32];
  float weights[32], mins[8], scales[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = fit_scale_min(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin,
                              rdelta, nstep, false);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < 8; ++j) {
    const uint8_t ls =
        std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    if (j < 4) {
      packed_scales[j] = ls;
      packed_scales[j + 4] = lm;
    } else {
      packed_scales[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      packed_scales[j - 4] = static_cast<uint8_t>(packed_scales[j - 4] | ((ls >> 4) << 6));
      packed_scales[j] = static_cast<uint8_t>(packed_scales[j] | ((lm >> 4) << 6));
    }
  }
  *d_out = fp32_to_fp16(max_scale / 63.f);
  *dmin_out = fp32_to_fp16(max_min / 63.f);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, mn;
    k4_scale_min(j, packed_scales, &sc, &mn);
    const float d = fp16_to_fp32(*d_out) * static_cast<float>(sc);
    if (d == 0.0f) continue;
    const float dm = fp16_to_fp32(*dmin_out) * static_cast<float>(mn);
    for (int l = 0; l < 32; ++l) {
      L[32 * j + l] =
          static_cast<uint8_t>(std::clamp(nearest_int((x[32 * j + l] + dm) / d), 0, nmax));
    }
  }
}

void quantize_q4_k(const float* x, BlockQ4_K* y, int64_t nb) {
  uint8_t L[kQKK];
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    std::memset(&y[i], 0, sizeof(BlockQ4_K));
    fit_k4_superblock(x, 15, -1.f, 0.1f, 20, L, y[i].scales, &y[i].d, &y[i].dmin);
    uint8_t* q = y[i].qs;
    for (int j = 0; j < kQKK; j += 64, q += 32) {
      for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
    }
  }
}

void quantize_q5_k(const float* x, BlockQ5_K* y, int64_t nb) {
  uint8_t L[kQKK];
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    std::memset(&y[i], 0, sizeof(BlockQ5_K));
    fit_k4_superblock(x, 31, -0.5f, 0.1f, 15, L, y[i].scales, &y[i].d, &y[i].dmin);
    uint8_t* ql = y[i].qs;
    uint8_t m1 = 1, m2 = 2;
    for (int n = 0; n < kQKK; n += 64, ql += 32) {
      for (int j = 0; j < 32; ++j) {
        int l1 = L[n + j];
        if (l1 > 15) {
          l1 -= 16;
          y[i].qh[j] = static_cast<uint8_t>(y[i].qh[j] | m1);
        }
        int l2 = L[n + j + 32];
        if (l2 > 15) {
          l2 -= 16;
          y[i].qh[j] = static_cast<uint8_t>(y[i].qh[j] | m2);
        }
        ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
      }
      m1 = static_cast<uint8_t>(m1 << 2);
      m2 = static_cast<uint8_t>(m2 << 2);
    }
  }
}

void quantize_q6_k(const float* x, BlockQ6_K* y, int64_t nb) {
  int8_t L[kQKK];
  float scales[16];
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < 16; ++ib) {
      scales[ib] = fit_scale_symmetric(16, 32, x + 16 * ib, L + 16 * ib);
      if (std::fabs(scales[ib]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[ib]);
        max_scale = scales[ib];
      }
    }
    std::memset(&y[i], 0, sizeof(BlockQ6_K));
    if (max_abs_scale < kGroupMaxEps) continue;
    const float iscale = -128.f / max_scale;
    y[i].d = fp32_to_fp16(1 / iscale);
    for (int ib = 0; ib < 16; ++ib) {
      y[i].scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
    }
    for (int j = 0; j < 16; ++j) {
      const float d = fp16_to_fp32(y[i].d) * static_cast<float>(y[i].scales[j]);
      if (d == 0.0f) continue;
      for (int l = 0; l < 16; ++l) {
        L[16 * j + l] =
            static_cast<int8_t>(std::clamp(nearest_int(x[16 * j + l] / d), -32, 31) + 32);
      }
    }
    uint8_t* ql = y[i].ql;
    uint8_t* qh = y[i].qh;
    for (int j = 0; j < kQKK; j += 128, ql += 64, qh += 32) {
      for (int l = 0; l < 32; ++l) {
        const int q1 = L[j + l], q2 = L[j + l + 32], q3 = L[j + l + 64], q4 = L[j + l + 96];
        ql[l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) |
                                     ((q4 >> 4) << 6));
      }
    }
  }
}

template <class Block>
Block* blocks(void* p) {
  return static_cast<Block*>(p);
}

}  // namespace

bool is_quantizable_type(gguf::TensorType t) {
  return is_dequantizable_type(t);
}

Status quantize_row(gguf::TensorType t, const float* src, void* dst, int64_t n) {
  using T = gguf::TensorType;
  const BlockGeometry g = block_geometry(t);
  if (g.block_size == 0) {
    return Unsupported(std::string("quantize_row: tensor type ") + quant_type_name(t) + " (id " +
                       std::to_string(static_cast<uint32_t>(t)) + ") is not supported");
  }
  if (n < 0 || n % g.block_size != 0) {
    return InvalidArgument("quantize_row: row length " + std::to_string(n) +
                           " is not a multiple of the block size " + std::to_string(g.block_size));
  }
  const int64_t nb = n / g.block_size;
  switch (t) {
    case T::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      break;
    case T::kF16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(src[i]);
      break;
    }
    case T::kBF16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_bf16(src[i]);
      break;
    }
    case T::kQ4_0:
      quantize_q4_0(src, blocks<BlockQ4_0>(dst), nb);
      break;
    case T::kQ4_1:
      quantize_q4_1(src, blocks<BlockQ4_1>(dst), nb);
      break;
    case T::kQ5_0:
      quantize_q5_0(src, blocks<BlockQ5_0>(dst), nb);
      break;
    case T::kQ5_1:
      quantize_q5_1(src, blocks<BlockQ5_1>(dst), nb);
      break;
    case T::kQ8_0:
      quantize_q8_0(src, blocks<BlockQ8_0>(dst), nb);
      break;
    case T::kQ8_1:
      quantize_q8_1(src, blocks<BlockQ8_1>(dst), nb);
      break;
    case T::kQ2_K:
      quantize_q2_k(src, blocks<BlockQ2_K>(dst), nb);
      break;
    case T::kQ3_K:
      quantize_q3_k(src, blocks<BlockQ3_K>(dst), nb);
      break;
    case T::kQ4_K:
      quantize_q4_k(src, blocks<BlockQ4_K>(dst), nb);
      break;
    case T::kQ5_K:
      quantize_q5_k(src, blocks<BlockQ5_K>(dst), nb);
      break;
    case T::kQ6_K:
      quantize_q6_k(src, blocks<BlockQ6_K>(dst), nb);
      break;
    case T::kQ8_K:
      quantize_q8_k(src, blocks<BlockQ8_K>(dst), nb);
      break;
    default:
      return Unsupported(std::string("quantize_row: tensor type ") + quant_type_name(t) +
                         " is not supported");
  }
  return OkStatus();
}

}  // namespace hearth::engine
