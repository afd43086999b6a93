#include "runtime/token_sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "hearth/engine/sampler.h"

namespace hearth::runtime {
namespace {

constexpr float kBanned = -std::numeric_limits<float>::infinity();

class ChainSampler : public TokenSampler {
 public:
  ChainSampler(const SamplingParams& params, std::span<const TokenId> history)
      : sampler_(params), history_(history.begin(), history.end()) {}
  TokenId sample(std::span<const float> logits) override {
    return sampler_.sample(logits, history_);
  }
  void accept(TokenId token) override { history_.push_back(token); }
  std::span<const float> adjusted_logits() const override { return sampler_.adjusted_logits(); }

 protected:
  Sampler sampler_;
  std::vector<int32_t> history_;
};

// The chain over grammar-masked logits: disallowed tokens get -inf, so every step of
// the chain (penalties, top-k/p, min-p, temperature, the draw) sees exactly the allowed
// tokens. Greedy checks the unconstrained argmax first: when the grammar allows it, it
// is the masked argmax too, and the mask is not needed.
class GrammarSampler : public ChainSampler {
 public:
  GrammarSampler(const SamplingParams& params, std::span<const TokenId> history, grammar::Grammar g,
                 std::shared_ptr<const grammar::TokenVocab> vocab,
                 std::vector<std::string> triggers)
      : ChainSampler(params, history),
        grammar_(std::move(g)),
        vocab_(std::move(vocab)),
        triggers_(std::move(triggers)) {
    for (const std::string& t : triggers_) longest_trigger_ = std::max(longest_trigger_, t.size());
    if (triggers_.empty()) matcher_.emplace(grammar_);
  }

  TokenId sample(std::span<const float> logits) override {
    if (!matcher_) return sample_lazy(logits);
    if (sampler_.params().temperature <= 0.0f) {
      const TokenId t = sampler_.sample(logits, history_);
      if (matcher_->token_allowed(*vocab_, t)) return t;
    }
    matcher_->allowed_tokens(*vocab_, mask_);
    masked_.assign(logits.begin(), logits.end());
    bool any = false;
    const size_t n = std::min(masked_.size(), mask_.size());
    for (size_t i = 0; i < masked_.size(); ++i) {
      if (i >= n || !mask_[i]) {
        masked_[i] = kBanned;
      } else {
        any = true;
      }
    }
    // Nothing allowed (the vocabulary cannot spell what the grammar needs): end.
    if (!any) return vocab_->eog().empty() ? sampler_.sample(logits, history_) : vocab_->eog()[0];
    TokenId t = sampler_.sample(masked_, history_);
    if (t < 0 || static_cast<size_t>(t) >= n || !mask_[static_cast<size_t>(t)]) {
      t = Sampler::greedy(masked_);  // a rounding edge of the draw landed on a banned token
    }
    return t;
  }

  void accept(TokenId token) override {
    ChainSampler::accept(token);
    if (token < 0 || token >= vocab_->size() || vocab_->is_eog(token)) return;
    const std::string& bytes = vocab_->bytes(token);
    if (matcher_) {
      (void)matcher_->accept_bytes(bytes);  // sample() only hands out accepted tokens
      return;
    }
    text_ += bytes;
    if (auto at = trigger_start(text_, text_.size() - bytes.size())) {
      matcher_.emplace(grammar_);
      (void)matcher_->accept_bytes(std::string_view(text_).substr(*at));
      text_.clear();
    } else if (text_.size() > 4 * longest_trigger_ + 256) {
      text_.erase(0, text_.size() - longest_trigger_);  // only the tail can start a trigger
    }
  }

 private:
  // The start of the earliest trigger in `text` that ends after byte `old_size` (so a
  // trigger completed by the newest bytes), or nullopt.
  std::optional<size_t> trigger_start(const std::string& text, size_t old_size) const {
    std::optional<size_t> best;
    for (const std::string& t : triggers_) {
      const size_t from = old_size >= t.size() ? old_size - t.size() + 1 : 0;
      const size_t at = text.find(t, from);
      if (at != std::string::npos && (!best || at < *best)) best = at;
    }
    return best;
  }

  // Before a trigger: the unconstrained chain, except that a token completing a trigger
  // must leave text the grammar accepts; such a token is banned and the draw repeated
  // from the same PRNG state, which is the draw over the logits without it.
  TokenId sample_lazy(std::span<const float> logits) {
    std::optional<std::vector<float>> banned;
    const Sampler saved = sampler_;
    for (;;) {
      const std::span<const float> row = banned ? std::span<const float>(*banned) : logits;
      const TokenId t = sampler_.sample(row, history_);
      if (t < 0 || t >= vocab_->size() || vocab_->is_eog(t)) return t;
      const std::string candidate = text_ + vocab_->bytes(t);
      auto at = trigger_start(candidate, text_.size());
      if (!at) return t;
      grammar::Matcher probe(grammar_);
      if (probe.accept_bytes(std::string_view(candidate).substr(*at))) return t;
      if (!banned) banned.emplace(logits.begin(), logits.end());
      (*banned)[static_cast<size_t>(t)] = kBanned;
      if (std::none_of(banned->begin(), banned->end(), [](float v) { return v != kBanned; })) {
        return t;
      }
      sampler_ = saved;
    }
  }

  grammar::Grammar grammar_;
  std::shared_ptr<const grammar::TokenVocab> vocab_;
  std::vector<std::string> triggers_;
  size_t longest_trigger_ = 0;
  std::optional<grammar::Matcher> matcher_;  // unset until a trigger (lazy grammars)
  std::string text_;                         // generated text before a trigger
  std::vector<uint8_t> mask_;
  std::vector<float> masked_;
};

}  // namespace

Result<std::unique_ptr<TokenSampler>> make_token_sampler(
    const SamplingOptions& o, std::span<const TokenId> history,
    std::shared_ptr<const grammar::TokenVocab> vocab) {
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
  if (o.grammar.empty()) {
    if (!o.grammar_triggers.empty()) {
      return InvalidArgument("sampling.grammar_triggers needs sampling.grammar");
    }
    return std::unique_ptr<TokenSampler>(std::make_unique<ChainSampler>(p, history));
  }
  if (!vocab) return Unsupported("this backend has no token bytes for grammar sampling");
  auto g = grammar::parse_gbnf(o.grammar);
  if (!g.ok()) return InvalidArgument("sampling.grammar: " + g.status().message());
  return std::unique_ptr<TokenSampler>(std::make_unique<GrammarSampler>(
      p, history, std::move(g).value(), std::move(vocab), o.grammar_triggers));
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
  if (!o.grammar.empty()) {
    auto g = grammar::parse_gbnf(o.grammar);
    if (!g.ok()) return InvalidArgument("sampling.grammar: " + g.status().message());
  } else if (!o.grammar_triggers.empty()) {
    return InvalidArgument("sampling.grammar_triggers needs sampling.grammar");
  }
  for (size_t i = 0; i < o.grammar_triggers.size(); ++i) {
    if (o.grammar_triggers[i].empty()) {
      return InvalidArgument("sampling.grammar_triggers[" + std::to_string(i) + "] is empty");
    }
  }
  for (const auto& [id, bias] : o.logit_bias) {
    if (id < 0) return bad("logit_bias id", ">= 0", id);
    if (!(bias >= -100 && bias <= 100)) return bad("logit_bias value", "in [-100, 100]", bias);
  }
  return OkStatus();
}

}  // namespace hearth::runtime
