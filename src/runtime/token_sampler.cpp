#include "runtime/token_sampler.h"

#include <random>
#include <vector>

#include "hearth/engine/sampler.h"

namespace hearth::runtime {
namespace {

class ChainSampler : public TokenSampler {
 public:
  ChainSampler(const SamplingParams& params, std::span<const TokenId> history)
      : sampler_(params), history_(history.begin(), history.end()) {}
  TokenId sample(std::span<const float> logits) override {
    return sampler_.sample(logits, history_);
  }
  void accept(TokenId token) override { history_.push_back(token); }

 private:
  Sampler sampler_;
  std::vector<int32_t> history_;
};

}  // namespace

std::unique_ptr<TokenSampler> make_token_sampler(const SamplingOptions& o,
                                                 std::span<const TokenId> history) {
  SamplingParams p;
  p.temperature = o.temperature;
  p.top_k = o.top_k;
  p.top_p = o.top_p;
  p.min_p = o.min_p;
  p.repetition_penalty = o.repetition_penalty;
  p.frequency_penalty = o.frequency_penalty;
  p.presence_penalty = o.presence_penalty;
  p.seed = o.seed ? *o.seed : std::random_device{}();
  return std::make_unique<ChainSampler>(p, history);
}

}  // namespace hearth::runtime
