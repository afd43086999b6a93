// Element-wise activations of the forward pass, in canonical operations
// (engine/kernels/canonical.h) so every ISA gives the same bits.
#pragma once

#include <cstdint>

namespace hearth::engine {

// gate[i] = canon::silu_mul(gate[i], up[i]) for i < n: SiLU(gate) * up.
void silu_mul(float* gate, const float* up, int64_t n);

// gate[i] = GELU(gate[i]) * up[i], GELU evaluated as ggml's CPU backend does: for
// -10 < x < 10 the tanh GELU of x rounded to F16, itself rounded to F16 (a table of
// all 65536 F16 inputs, built once); x <= -10 gives 0 and x >= 10 gives x.
void gelu_mul(float* gate, const float* up, int64_t n);

// x[i] = GELU(x[i]), the same GELU (bert's FFN, which has no gate).
void gelu_inplace(float* x, int64_t n);

}  // namespace hearth::engine
