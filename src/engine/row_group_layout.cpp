#include "engine/row_group_layout.h"

#include <cassert>
#include <cstring>

#include "engine/kernels/kernel_set.h"
#include "engine/quant/blocks.h"
#include "engine/quant/quant.h"

namespace hearth::engine {
namespace {

constexpr size_t kGroupBlockBytes = kInterleavedRows * sizeof(BlockQ4_0);
constexpr size_t kQuantOffset = offsetof(BlockQ4_0, qs);
constexpr size_t kScalesBytes = kInterleavedRows * sizeof(uint16_t);
constexpr int kQuantWords = sizeof(BlockQ4_0::qs) / 4;
static_assert(kScalesBytes + kQuantWords * 4 * kInterleavedRows == kGroupBlockBytes);

// Offsets, inside one interleaved group block, of row r's scale and of its quant
// word m (bytes [4m, 4m + 4) of its qs).
size_t scale_at(int row) {
  return static_cast<size_t>(row) * sizeof(uint16_t);
}
size_t quant_word_at(int row, int word) {
  return kScalesBytes + static_cast<size_t>(word) * 4 * kInterleavedRows +
         static_cast<size_t>(row) * 4;
}

}  // namespace

bool has_interleaved_layout(gguf::TensorType type) {
  return type == gguf::TensorType::kQ4_0;
}

void interleave_row_group(gguf::TensorType type, const uint8_t* rows, size_t row_stride,
                          int64_t cols, uint8_t* group) {
  assert(has_interleaved_layout(type));
  (void)type;
  const int64_t nb = cols / kQK32;
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* out = group + static_cast<size_t>(b) * kGroupBlockBytes;
    for (int r = 0; r < kInterleavedRows; ++r) {
      const uint8_t* in = rows + r * row_stride + static_cast<size_t>(b) * sizeof(BlockQ4_0);
      std::memcpy(out + scale_at(r), in, sizeof(uint16_t));
      for (int m = 0; m < kQuantWords; ++m)
        std::memcpy(out + quant_word_at(r, m), in + kQuantOffset + 4 * m, 4);
    }
  }
}

void deinterleave_row_group(gguf::TensorType type, const uint8_t* group, int64_t cols,
                            uint8_t* rows) {
  assert(has_interleaved_layout(type));
  const size_t row_bytes = quant_row_bytes(type, cols);
  const int64_t nb = cols / kQK32;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* in = group + static_cast<size_t>(b) * kGroupBlockBytes;
    for (int r = 0; r < kInterleavedRows; ++r) {
      uint8_t* out = rows + r * row_bytes + static_cast<size_t>(b) * sizeof(BlockQ4_0);
      std::memcpy(out, in + scale_at(r), sizeof(uint16_t));
      for (int m = 0; m < kQuantWords; ++m)
        std::memcpy(out + kQuantOffset + 4 * m, in + quant_word_at(r, m), 4);
    }
  }
}

}  // namespace hearth::engine
