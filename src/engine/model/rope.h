// Rotary position embedding, computed the way ggml's CPU backend does (float32, with
// the angle advanced by repeated multiplication) so that angles agree with llama.cpp.
#pragma once

#include <cstdint>

namespace hearth::engine {

// cs receives n_rot floats: (cos, sin) of theta_i for i = 0 .. n_rot/2-1, where
// the unscaled angle is pos * base^(-2i/n_rot) (advanced by repeated multiplication, in
// float32), divided by freq_factors[i] when given (rope_freqs.weight, n_rot/2 floats),
// then multiplied by freq_scale (1 / linear scaling factor).
void rope_angles(int32_t pos, int32_t n_rot, float base, float freq_scale,
                 const float* freq_factors, float* cs);

// Rotates the first n_rot dims of each of n_heads heads of x in place.
// neox = false: pairs (2i, 2i+1); neox = true: pairs (i, i + n_rot/2).
void rope_apply(float* x, int32_t n_heads, int32_t head_dim, int32_t n_rot, const float* cs,
                bool neox);

}  // namespace hearth::engine
