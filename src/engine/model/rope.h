// Rotary position embedding, computed the way ggml's CPU backend does (float32, with
// the angle advanced by repeated multiplication) so that angles agree with llama.cpp.
#pragma once

#include <cstdint>

namespace hearth::engine {

// cs receives n_rot floats: (cos, sin) of theta_i for i = 0 .. n_rot/2-1, where
// theta_0 = pos * freq_scale and theta_{i+1} = theta_i * base^(-2/n_rot), in float32.
void rope_angles(int32_t pos, int32_t n_rot, float base, float freq_scale, float* cs);

// Rotates the first n_rot dims of each of n_heads heads of x in place.
// neox = false: pairs (2i, 2i+1); neox = true: pairs (i, i + n_rot/2).
void rope_apply(float* x, int32_t n_heads, int32_t head_dim, int32_t n_rot, const float* cs,
                bool neox);

}  // namespace hearth::engine
