#include "runtime/token_sampler.h"

#include <cmath>
#include <random>
#include <string>
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
  std::span<const float> adjusted_logits() const override { return sampler_.adjusted_logits(); }

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
  p.logit_bias.assign(o.logit_bias.begin(), o.logit_bias.end());
  p.seed = o.seed ? *o.seed : std::random_device{}();
  return std::make_unique<ChainSampler>(p, history);
}

Status check_sampling(const SamplingOptions& o) {
  auto bad = [](const char* field, const char* range, double value) {
    return InvalidArgument(std::string("sampling.") + field + " must be " + range + ", got " +
                           std::to_string(value));
  };
  if (!(o.temperature >= 0) || !std::isfinite(o.temperature))
    return bad("temperature", ">= 0", o.temperature);
  if (o.top_k < 0) return bad("top_k", ">= 0", o.top_k);
  if (!(o.top_p > 0 && o.top_p <= 1)) return bad("top_p", "in (0, 1]", o.top_p);
  if (!(o.min_p >= 0 && o.min_p <= 1)) return bad("min_p", "in [0, 1]", o.min_p);
  if (!(o.repetition_penalty > 0) || !std::isfinite(o.repetition_penalty))
    return bad("repetition_penalty", "> 0", o.repetition_penalty);
  if (!std::isfinite(o.frequency_penalty))
    return bad("frequency_penalty", "finite", o.frequency_penalty);
  if (!std::isfinite(o.presence_penalty))
    return bad("presence_penalty", "finite", o.presence_penalty);
  for (const auto& [id, bias] : o.logit_bias) {
    if (id < 0) return bad("logit_bias id", ">= 0", id);
    if (!(bias >= -100 && bias <= 100)) return bad("logit_bias value", "in [-100, 100]", bias);
  }
  return OkStatus();
}

}  // namespace hearth::runtime
