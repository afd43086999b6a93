// Rows of floats to IEEE half (the F16 KV store, queries rounded to F16 before
// attention): the kernel table's F16C code where it has one, else fp16.h's scalar
// conversions; the same bits either way.
#pragma once

#include <cstdint>

namespace hearth::engine {

// y[i] = fp32_to_fp16(x[i]) for i < n.
void to_f16(const float* x, uint16_t* y, int64_t n);

// y[i] = fp16_to_fp32(fp32_to_fp16(x[i] * scale)) for i < n: x scaled, then rounded to
// the nearest F16 value, kept as a float.
void round_to_f16(const float* x, float scale, float* y, int64_t n);

}  // namespace hearth::engine
