// Helpers shared by the engine quant / kernel / matmul tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "engine/quant/blocks.h"
#include "engine/quant/quant.h"
#include "hearth/engine/fp16.h"
#include "hearth/gguf/gguf.h"

namespace hearth::engine::testing {

using gguf::TensorType;

// Every weight type the kernels handle.
inline const std::vector<TensorType>& weight_types() {
  static const std::vector<TensorType> v = {
      TensorType::kF32,  TensorType::kF16,  TensorType::kBF16, TensorType::kQ4_0, TensorType::kQ4_1,
      TensorType::kQ5_0, TensorType::kQ5_1, TensorType::kQ8_0, TensorType::kQ2_K, TensorType::kQ3_K,
      TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K};
  return v;
}

inline std::vector<float> gaussian(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// A quantized row of n elements (through the reference quantizer).
inline std::vector<uint8_t> quantized(TensorType t, const std::vector<float>& x) {
  std::vector<uint8_t> out(quant_row_bytes(t, static_cast<int64_t>(x.size())));
  (void)quantize_row(t, x.data(), out.data(), static_cast<int64_t>(x.size()));
  return out;
}

// Random bytes with every fp16 scale field overwritten by a sane value, so that
// the whole bit space of the quant fields is exercised (including values the
// quantizer never writes).
inline std::vector<uint8_t> random_blocks(TensorType t, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(quant_row_bytes(t, n));
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  const BlockGeometry g = block_geometry(t);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  auto put_half = [&](uint8_t* p, float v) {
    const uint16_t h = fp32_to_fp16(v);
    std::memcpy(p, &h, 2);
  };
  const int64_t nb = n / g.block_size;
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* blk = out.data() + b * g.block_bytes;
    switch (t) {
      case TensorType::kF32: {
        const float v = scale(rng) * 20 - 0.5f;
        std::memcpy(blk, &v, 4);
        break;
      }
      case TensorType::kF16:
        put_half(blk, scale(rng) * 20 - 0.5f);
        break;
      case TensorType::kBF16: {
        const uint16_t h = fp32_to_bf16(scale(rng) * 20 - 0.5f);
        std::memcpy(blk, &h, 2);
        break;
      }
      case TensorType::kQ4_0:
      case TensorType::kQ5_0:
      case TensorType::kQ8_0:
        put_half(blk, scale(rng));
        break;
      case TensorType::kQ4_1:
      case TensorType::kQ5_1:
        put_half(blk, scale(rng));
        put_half(blk + 2, -scale(rng) * 8);
        break;
      case TensorType::kQ2_K: {
        auto* q = reinterpret_cast<BlockQ2_K*>(blk);
        q->d = fp32_to_fp16(scale(rng));
        q->dmin = fp32_to_fp16(scale(rng));
        break;
      }
      case TensorType::kQ3_K:
        reinterpret_cast<BlockQ3_K*>(blk)->d = fp32_to_fp16(scale(rng) / 8);
        break;
      case TensorType::kQ4_K: {
        auto* q = reinterpret_cast<BlockQ4_K*>(blk);
        q->d = fp32_to_fp16(scale(rng) / 8);
        q->dmin = fp32_to_fp16(scale(rng) / 8);
        break;
      }
      case TensorType::kQ5_K: {
        auto* q = reinterpret_cast<BlockQ5_K*>(blk);
        q->d = fp32_to_fp16(scale(rng) / 8);
        q->dmin = fp32_to_fp16(scale(rng) / 8);
        break;
      }
      case TensorType::kQ6_K:
        reinterpret_cast<BlockQ6_K*>(blk)->d = fp32_to_fp16(scale(rng) / 16);
        break;
      default:
        break;
    }
  }
  return out;
}

inline uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

}  // namespace hearth::engine::testing
