// Weight matrices on the device and the one matmul every GPU layer uses (matmul.cu).
// C++17 host interface, no CUDA header (see cuda_api.h).
//
// Batch invariance (what the persistent KV cache relies on, docs/engine.md): the bits of
// output y[t][r] depend only on row r of the matrix and row t of x. The same operations
// in the same order produce it whether n_tokens is 1 or 512 and whichever other tokens
// share the call: launch shapes may change with n_tokens, the per-output arithmetic
// (activation quantization, how K is split, the order partial sums are combined) may
// not. No float atomics, no split that depends on n_tokens.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/cuda/cuda_api.h"

namespace hearth::engine::cuda {

// A GGUF weight matrix on the device: rows x cols, in a layout private to matmul.cu
// (the GGUF blocks as they are, or repacked at upload).
struct DeviceMatrix {
  int32_t type = 0;  // gguf::TensorType value
  int64_t rows = 0;
  int64_t cols = 0;
  DeviceBuffer data;
  DeviceBuffer aux;  // a second array when the layout splits scales from quants (may be empty)
};

// The weight types matmul() takes: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, F16, BF16,
// F32.
bool matmul_supports(int32_t type);

// Copies a GGUF matrix to the device: `rows` rows of `row_bytes` bytes each at `host`
// (the GGUF block layout, cols a multiple of the type's block size). Synchronous on
// `stream` (the host bytes may be released when it returns).
Error upload_matrix(int32_t type, int64_t rows, int64_t cols, const void* host, size_t row_bytes,
                    const Stream& stream, DeviceMatrix* out);

// Device scratch bytes matmul() needs for n_tokens rows of `cols` inputs (quantized
// activations and any partial sums).
size_t matmul_scratch_bytes(int64_t n_tokens, int64_t cols, int64_t rows);

// y[t * w.rows + r] = sum over k of W[r][k] * x[t * w.cols + k], t < n_tokens.
// x, y and scratch are device pointers; asynchronous on `stream`. y must not overlap x or
// scratch; scratch is 16-byte aligned, and so is x for the float weight types (errors
// name the misaligned pointer). The numerics are described at the top of matmul.cu.
Error matmul(const DeviceMatrix& w, const float* x, int64_t n_tokens, float* y, void* scratch,
             size_t scratch_bytes, const Stream& stream);

// Whether matmul() runs calls of 32 tokens or more of the quantized types on the tensor
// cores (int8 mma.sync) rather than __dp4a: the same bits either way, faster prefill. Off
// by default until it has been checked on a device; HEARTH_CUDA_MMA=1 in the environment
// turns it on at start.
void set_matmul_tensor_cores(bool on);
bool matmul_tensor_cores();

// matmul()'s arithmetic run on the host over a GGUF matrix (as upload_matrix takes it) and
// host x / y: the same bits as the device (the rounding of every step is explicit), for
// tests without a GPU and for checking the device against it bit for bit. Slow.
// tensor_core_path: decode the blocks as the tensor-core kernel does (quantized types; the
// bits must not change).
Error matmul_on_host(int32_t type, int64_t rows, int64_t cols, const void* host, size_t row_bytes,
                     const float* x, int64_t n_tokens, float* y, bool tensor_core_path = false);

}  // namespace hearth::engine::cuda
