// Interleaved row groups: a load-time layout of a weight matrix for decode.
//
// Decode reads every weight once per token. Kernels that put one row per lane (so
// each block's integer sum builds up without a horizontal reduction) must first
// regroup the rows' blocks: on AVX2 that costs the Q4_0 row-group kernel more
// than its dot products (16-byte half loads, unpacks, scales gathered one by
// one). Done once when the weights are copied into their arena, the regrouping
// leaves the kernels plain 32-byte loads, and with 16 rows per group each
// activation broadcast feeds two registers of rows (docs/engine-kernels.md).
//
// Layout (Q4_0, Q4_K and Q6_K): rows [0, rows / kInterleavedRows * kInterleavedRows)
// form groups of kInterleavedRows (16) consecutive rows; group g takes exactly the
// bytes its rows took (16 * row_bytes, at data + g * 16 * row_bytes), block by
// block (block b at b * 16 * block bytes). Within a block each field of the GGUF
// block is stored unit by unit, the 16 rows' unit side by side:
//   - Q4_0: d (2 bytes; 32 for the 16 rows), then quant word m = 0..3 (bytes
//     [4m, 4m + 4) of qs; 64 bytes per word).
//   - Q4_K: d, dmin (32 bytes each), packed scale byte k = 0..11 (16 bytes each),
//     quant word k = 0..31 (64 bytes each).
//   - Q6_K: d (32 bytes), scale j = 0..15 (16 bytes each), ql word k = 0..31 and
//     then qh word k = 0..15 (64 bytes each).
// A group is one contiguous stream (the Q4_K and Q6_K kernels, whose reads within
// a block jump about, add a software prefetch ahead of it). The rows after the last whole group
// stay as they are. Nothing is converted, only moved, so a kernel reading a group computes the same
// bits as on the plain rows (matmul regroups the rows into plain form for the paths that need it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "hearth/gguf/gguf.h"

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
