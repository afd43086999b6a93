// A self-contained TokenSampler: repetition penalty, temperature, top-k, min-p, top-p,
// then a draw from a seeded 64-bit Mersenne Twister. Greedy (temperature <= 0) is argmax
// with the lowest id winning ties. Deterministic for a given seed and logits, so a warm
// request samples exactly what a cold one does.
#pragma once

#include <deque>
#include <memory>
#include <random>

#include "hearth/backend.h"

namespace hearth::runtime {

class BasicSampler : public TokenSampler {
 public:
  BasicSampler(const SamplingOptions& options, std::span<const TokenId> history);
  TokenId sample(std::span<const float> logits) override;
  void accept(TokenId token) override;

 private:
  static constexpr size_t kPenaltyWindow = 64;
  SamplingOptions options_;
  std::mt19937_64 rng_;
  std::deque<TokenId> recent_;
};

std::unique_ptr<TokenSampler> make_basic_sampler(const SamplingOptions& options,
                                                 std::span<const TokenId> history);

}  // namespace hearth::runtime
