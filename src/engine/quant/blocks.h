// Byte layouts of the ggml/GGUF block-quantized tensor types, and a constexpr
// table of block geometry. The layouts are fixed by the file format: every struct
// here is exactly the on-disk block (static_asserts pin the sizes).
//
// Half-precision fields are stored as raw uint16_t bit patterns (IEEE binary16).
#pragma once

#include <cstddef>
#include <cstdint>

#include "hearth/gguf/gguf.h"

namespace hearth::engine {

inline constexpr int kQK32 = 32;  // elements per block of the legacy formats
inline constexpr int kQKK = 256;  // elements per super-block of the k-quants

// Legacy 32-element formats: value = d * (q - 8) and friends.
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK32 / 2];  // element j in the low nibble of qs[j], j+16 in the high nibble
};
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK32 / 2];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];  // fifth bit of element j at bit j (little-endian uint32)
  uint8_t qs[kQK32 / 2];
};
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK32 / 2];
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK32];
};
struct BlockQ8_1 {
  uint16_t d;
  uint16_t s;  // d * sum(qs)
  int8_t qs[kQK32];
};

// k-quants: 256-element super-blocks with per-sub-block scales.
struct BlockQ2_K {
  uint8_t scales[kQKK / 16];  // low nibble scale, high nibble min
  uint8_t qs[kQKK / 4];
  uint16_t d;
  uint16_t dmin;
};
struct BlockQ3_K {
  uint8_t hmask[kQKK / 8];
  uint8_t qs[kQKK / 4];
  uint8_t scales[12];  // 16 six-bit scales, packed
  uint16_t d;
};
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];  // 8 six-bit scales + 8 six-bit mins, packed
  uint8_t qs[kQKK / 2];
};
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQKK / 8];
  uint8_t qs[kQKK / 2];
};
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];
  uint8_t qh[kQKK / 4];
  int8_t scales[kQKK / 16];
  uint16_t d;
};
// Activation-side format of the k-quant dot products (float scale, block sums).
struct BlockQ8_K {
  float d;
  int8_t qs[kQKK];
  int16_t bsums[kQKK / 16];
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);

// Geometry of a tensor type as the kernels see it. block_size 0 = not handled here.
struct BlockGeometry {
  int block_size;   // elements per block
  int block_bytes;  // bytes per block
};

constexpr BlockGeometry block_geometry(gguf::TensorType t) {
  using T = gguf::TensorType;
  switch (t) {
    case T::kF32:
      return {1, 4};
    case T::kF16:
      return {1, 2};
    case T::kBF16:
      return {1, 2};
    case T::kQ4_0:
      return {kQK32, sizeof(BlockQ4_0)};
    case T::kQ4_1:
      return {kQK32, sizeof(BlockQ4_1)};
    case T::kQ5_0:
      return {kQK32, sizeof(BlockQ5_0)};
    case T::kQ5_1:
      return {kQK32, sizeof(BlockQ5_1)};
    case T::kQ8_0:
      return {kQK32, sizeof(BlockQ8_0)};
    case T::kQ8_1:
      return {kQK32, sizeof(BlockQ8_1)};
    case T::kQ2_K:
      return {kQKK, sizeof(BlockQ2_K)};
    case T::kQ3_K:
      return {kQKK, sizeof(BlockQ3_K)};
    case T::kQ4_K:
      return {kQKK, sizeof(BlockQ4_K)};
    case T::kQ5_K:
      return {kQKK, sizeof(BlockQ5_K)};
    case T::kQ6_K:
      return {kQKK, sizeof(BlockQ6_K)};
    case T::kQ8_K:
      return {kQKK, sizeof(BlockQ8_K)};
    default:
      return {0, 0};
  }
}

// Bytes of a row of n elements (n a multiple of the block size; 0 for unknown types).
constexpr size_t quant_row_bytes(gguf::TensorType t, int64_t n) {
  const BlockGeometry g = block_geometry(t);
  if (g.block_size == 0) return 0;
  return static_cast<size_t>(n / g.block_size) * static_cast<size_t>(g.block_bytes);
}

// ggml's spelling of a type name ("q4_K"), or "type<id>" text for others.
constexpr const char* quant_type_name(gguf::TensorType t) {
  using T = gguf::TensorType;
  switch (t) {
    case T::kF32:
      return "f32";
    case T::kF16:
      return "f16";
    case T::kBF16:
      return "bf16";
    case T::kQ4_0:
      return "q4_0";
    case T::kQ4_1:
      return "q4_1";
    case T::kQ5_0:
      return "q5_0";
    case T::kQ5_1:
      return "q5_1";
    case T::kQ8_0:
      return "q8_0";
    case T::kQ8_1:
      return "q8_1";
    case T::kQ2_K:
      return "q2_K";
    case T::kQ3_K:
      return "q3_K";
    case T::kQ4_K:
      return "q4_K";
    case T::kQ5_K:
      return "q5_K";
    case T::kQ6_K:
      return "q6_K";
    case T::kQ8_K:
      return "q8_K";
    case T::kIQ2_XXS:
      return "iq2_xxs";
    case T::kIQ2_XS:
      return "iq2_xs";
    case T::kIQ3_XXS:
      return "iq3_xxs";
    case T::kIQ1_S:
      return "iq1_s";
    case T::kIQ4_NL:
      return "iq4_nl";
    case T::kIQ3_S:
      return "iq3_s";
    case T::kIQ2_S:
      return "iq2_s";
    case T::kIQ4_XS:
      return "iq4_xs";
    case T::kI8:
      return "i8";
    case T::kI16:
      return "i16";
    case T::kI32:
      return "i32";
    case T::kI64:
      return "i64";
    case T::kF64:
      return "f64";
    case T::kIQ1_M:
      return "iq1_m";
    case T::kTQ1_0:
      return "tq1_0";
    case T::kTQ2_0:
      return "tq2_0";
  }
  return "unknown";
}

}  // namespace hearth::engine
