// The one sampler of the runtime: a request's SamplingOptions on hearth::Sampler (the
// engine's chain and its portable PRNG), with the token history the penalties read.
// Every backend hands this out from make_sampler, so a seed means the same draws
// whichever backend runs the model.
#pragma once

#include <memory>
#include <span>

#include "hearth/runtime/backend.h"

namespace hearth::runtime {

// An unset seed draws a fresh one from std::random_device.
std::unique_ptr<TokenSampler> make_token_sampler(const SamplingOptions& options,
                                                 std::span<const TokenId> history);

}  // namespace hearth::runtime
