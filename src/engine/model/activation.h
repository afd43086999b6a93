// Element-wise activations of the forward pass, in canonical operations
// (engine/kernels/canonical.h) so every ISA gives the same bits.
#pragma once

#include <cstdint>

namespace hearth::engine {

// gate[i] = canon::silu_mul(gate[i], up[i]) for i < n: SiLU(gate) * up.
void silu_mul(float* gate, const float* up, int64_t n);

}  // namespace hearth::engine
