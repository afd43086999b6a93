// Log-probabilities of a sampled token and of the most likely alternatives, from one
// logits row (the sampler's adjusted row: after logit_bias and penalties).
#pragma once

#include <cstdint>
#include <span>

#include "hearth/runtime/runtime.h"

namespace hearth::runtime {

// log-softmax of `logits` (in double) at `chosen`, and the top_n most likely tokens, best
// first, ties by lowest id. top_n is clamped to [0, logits.size()].
TokenLogprobs token_logprobs(std::span<const float> logits, TokenId chosen, int32_t top_n);

}  // namespace hearth::runtime
