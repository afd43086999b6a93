// Row conversion between f32 and the GGUF tensor types.
//
// dequantize_row reproduces ggml's reference dequantization bit for bit (same
// formulas, same float operation order, no fused multiply-add). quantize_row
// follows ggml's reference quantizers (quantize_row_*_ref), so files written by
// hearth are what llama.cpp's `quantize` would write without an imatrix.
#pragma once

#include <cstdint>

#include "engine/quant/blocks.h"
#include "hearth/gguf/gguf.h"
#include "hearth/status.h"

namespace hearth::engine {

// Types dequantize_row handles: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1
// Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K.
bool is_dequantizable_type(gguf::TensorType t);
// Types a weight matrix may have for matmul() (the above minus the
// activation-only Q8_1 / Q8_K).
bool is_supported_weight_type(gguf::TensorType t);
// Types quantize_row handles: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1
// Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K.
bool is_quantizable_type(gguf::TensorType t);

// n elements of type t at src -> n floats at dst. n must be a multiple of the
// block size and t dequantizable (checked with assert only: this is a hot path).
void dequantize_row(gguf::TensorType t, const void* src, float* dst, int64_t n);

// n floats -> n elements of type t (quant_row_bytes(t, n) bytes at dst).
// Errors: unsupported type (named), n not a multiple of the block size.
Status quantize_row(gguf::TensorType t, const float* src, void* dst, int64_t n);

}  // namespace hearth::engine
