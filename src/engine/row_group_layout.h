// Interleaved row groups: a load-time layout of a weight matrix for decode.
//
// Decode reads every weight once per token, and on AVX2 the Q4_0 row-group kernel
// spends more of its work regrouping 8 rows' blocks in registers (loads of 16-byte
// halves, 32-bit and 64-bit unpacks, the 8 scales gathered in general registers)
// than on the dot products themselves. Done once when the weights are copied into
// their arena, the regrouping leaves the kernel plain 32-byte loads, and with 16
// rows per group each activation broadcast feeds two registers of rows: one
// thread, 18-20 -> 35-37 GB/s from L3 (docs/engine.md, round z5).
//
// Layout (Q4_0, the only type with one): rows [0, rows / kInterleavedRows *
// kInterleavedRows) form groups of kInterleavedRows (16) consecutive rows; group g
// takes exactly the bytes its rows took (16 * row_bytes, at data + g * 16 *
// row_bytes), block by block: for block b, at b * 16 * sizeof(BlockQ4_0),
//   - the 16 rows' fp16 scales, row order (32 bytes);
//   - for m = 0..3, bytes [4m, 4m + 4) of the 16 rows' quants, row order (64 bytes).
// One group is one contiguous stream, which the hardware prefetchers follow from
// group to group. The rows after the last whole group stay as they are. The quants
// and scales are unchanged bytes, so a kernel reading a group computes the same
// bits as on the plain rows (matmul regroups the rows into plain form for the
// paths that need it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "hearth/gguf.h"

namespace hearth::engine {

// Whether `type` has an interleaved row-group layout.
bool has_interleaved_layout(gguf::TensorType type);

// kInterleavedRows plain rows of `cols` elements (row i at rows + i * row_stride) into one
// interleaved group at `group` (kInterleavedRows * row bytes). has_interleaved_layout(type).
void interleave_row_group(gguf::TensorType type, const uint8_t* rows, size_t row_stride,
                          int64_t cols, uint8_t* group);

// The inverse: one interleaved group into kInterleavedRows plain rows, row i at
// rows + i * row_bytes (contiguous).
void deinterleave_row_group(gguf::TensorType type, const uint8_t* group, int64_t cols,
                            uint8_t* rows);

}  // namespace hearth::engine
