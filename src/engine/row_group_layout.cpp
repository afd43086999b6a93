#include "engine/row_group_layout.h"

#include <cassert>
#include <cstring>

#include "engine/kernels/kernel_set.h"
#include "engine/quant/blocks.h"

namespace hearth::engine {
namespace {

// A block field: `count` units of `unit` bytes at `offset` in the plain block. The
// interleaved block holds the fields in order, and within a field unit u of rows
// 0..15 side by side, unit by unit.
struct Field {
  size_t offset;
  size_t unit;
  size_t count;
};
struct Format {
  size_t block_bytes;
  int block_elems;
  Field fields[4];
  int n_fields;
};

Format format_of(gguf::TensorType type) {
  switch (type) {
    case gguf::TensorType::kQ4_0:
      return {sizeof(BlockQ4_0), kQK32, {{0, 2, 1}, {offsetof(BlockQ4_0, qs), 4, 4}}, 2};
    case gguf::TensorType::kQ4_K:
      return {sizeof(BlockQ4_K),
              kQKK,
              {{offsetof(BlockQ4_K, d), 2, 1},
               {offsetof(BlockQ4_K, dmin), 2, 1},
               {offsetof(BlockQ4_K, scales), 1, 12},
               {offsetof(BlockQ4_K, qs), 4, 32}},
              4};
    case gguf::TensorType::kQ6_K:
      return {sizeof(BlockQ6_K),
              kQKK,
              {{offsetof(BlockQ6_K, d), 2, 1},
               {offsetof(BlockQ6_K, scales), 1, 16},
               {offsetof(BlockQ6_K, ql), 4, 32},
               {offsetof(BlockQ6_K, qh), 4, 16}},
              4};
    default:
      return {0, 1, {}, 0};
  }
}

// Copies n bytes, n one of the field units (1, 2 or 4): a fixed-size copy the
// compiler turns into one move (prefill regroups every panel's rows through here).
inline void copy_unit(uint8_t* to, const uint8_t* from, size_t n) {
  switch (n) {
    case 1:
      *to = *from;
      break;
    case 2:
      std::memcpy(to, from, 2);
      break;
    default:
      assert(n == 4);
      std::memcpy(to, from, 4);
      break;
  }
}

// Calls move(row, plain byte offset in the row's block, interleaved byte offset in
// the group's block, bytes) for every unit of every row of one block.
template <class Move>
void for_each_unit(const Format& f, Move&& move) {
  size_t at = 0;
  for (int i = 0; i < f.n_fields; ++i) {
    const Field& field = f.fields[i];
    for (size_t u = 0; u < field.count; ++u) {
      for (int r = 0; r < kInterleavedRows; ++r) {
        move(r, field.offset + u * field.unit, at, field.unit);
        at += field.unit;
      }
    }
  }
  assert(at == f.block_bytes * kInterleavedRows);
}

}  // namespace

bool has_interleaved_layout(gguf::TensorType type) {
  return format_of(type).n_fields > 0;
}

void interleave_row_group(gguf::TensorType type, const uint8_t* rows, size_t row_stride,
                          int64_t cols, uint8_t* group) {
  const Format f = format_of(type);
  assert(f.n_fields > 0);
  const size_t group_block = f.block_bytes * kInterleavedRows;
  for (int64_t b = 0; b < cols / f.block_elems; ++b) {
    const uint8_t* in = rows + static_cast<size_t>(b) * f.block_bytes;
    uint8_t* out = group + static_cast<size_t>(b) * group_block;
    for_each_unit(f, [&](int r, size_t plain, size_t grouped, size_t n) {
      copy_unit(out + grouped, in + r * row_stride + plain, n);
    });
  }
}

void deinterleave_row_group(gguf::TensorType type, const uint8_t* group, int64_t cols,
                            uint8_t* rows) {
  const Format f = format_of(type);
  assert(f.n_fields > 0);
  const size_t row_bytes = f.block_bytes * static_cast<size_t>(cols / f.block_elems);
  const size_t group_block = f.block_bytes * kInterleavedRows;
  for (int64_t b = 0; b < cols / f.block_elems; ++b) {
    const uint8_t* in = group + static_cast<size_t>(b) * group_block;
    uint8_t* out = rows + static_cast<size_t>(b) * f.block_bytes;
    for_each_unit(f, [&](int r, size_t plain, size_t grouped, size_t n) {
      copy_unit(out + r * row_bytes + plain, in + grouped, n);
    });
  }
}

}  // namespace hearth::engine
