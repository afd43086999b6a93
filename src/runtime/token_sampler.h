// The one sampler of the runtime: a request's SamplingOptions on hearth::Sampler (the
// engine's chain and its portable PRNG), with the token history the penalties read, and
// the request's grammar (if any) masking the logits first.
// Every backend hands this out from make_sampler, so a seed means the same draws
// whichever backend runs the model.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <span>

#include "hearth/grammar/grammar.h"
#include "hearth/runtime/backend.h"

namespace hearth::runtime {

// An unset seed draws a fresh one from std::random_device. vocab: the model's token
// bytes, needed when options.grammar is set (Unsupported without it); a grammar that
// does not parse -> InvalidArgument (check_sampling reports it before a request runs).
Result<std::unique_ptr<TokenSampler>> make_token_sampler(
    const SamplingOptions& options, std::span<const TokenId> history,
    std::shared_ptr<const grammar::TokenVocab> vocab = nullptr);

// A model's TokenVocab, built on the first grammar request (a large vocabulary's trie
// costs time and memory that requests without a grammar never need). Thread-safe.
class LazyTokenVocab {
 public:
  using Builder = std::function<std::shared_ptr<const grammar::TokenVocab>()>;
  explicit LazyTokenVocab(Builder build) : build_(std::move(build)) {}
  std::shared_ptr<const grammar::TokenVocab> get() const {
    std::lock_guard<std::mutex> lock(mu_);
    if (!vocab_) vocab_ = build_();
    return vocab_;
  }

 private:
  Builder build_;
  mutable std::mutex mu_;
  mutable std::shared_ptr<const grammar::TokenVocab> vocab_;  // guarded by mu_
};

}  // namespace hearth::runtime
