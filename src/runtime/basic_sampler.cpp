#include "runtime/basic_sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace hearth::runtime {

BasicSampler::BasicSampler(const SamplingOptions& options, std::span<const TokenId> history)
    : options_(options), rng_(options.seed ? *options.seed : std::random_device{}()) {
  for (TokenId t : history) accept(t);
}

void BasicSampler::accept(TokenId token) {
  recent_.push_back(token);
  if (recent_.size() > kPenaltyWindow) recent_.pop_front();
}

TokenId BasicSampler::sample(std::span<const float> logits_in) {
  const size_t n = logits_in.size();
  if (n == 0) return 0;
  std::vector<float> logits(logits_in.begin(), logits_in.end());
  if (options_.repetition_penalty != 1.0f) {
    const float p = options_.repetition_penalty;
    for (TokenId t : recent_) {
      if (t < 0 || static_cast<size_t>(t) >= n) continue;
      float& l = logits[static_cast<size_t>(t)];
      l = l > 0 ? l / p : l * p;
    }
  }
  if (options_.frequency_penalty != 0.0f || options_.presence_penalty != 0.0f) {
    // OpenAI-style: count occurrences in the window, subtract once per token id.
    std::vector<std::pair<TokenId, int32_t>> counts;
    for (TokenId t : recent_) {
      if (t < 0 || static_cast<size_t>(t) >= n) continue;
      auto it =
          std::find_if(counts.begin(), counts.end(), [t](const auto& c) { return c.first == t; });
      if (it == counts.end())
        counts.emplace_back(t, 1);
      else
        ++it->second;
    }
    for (const auto& [t, c] : counts)
      logits[static_cast<size_t>(t)] -=
          static_cast<float>(c) * options_.frequency_penalty + options_.presence_penalty;
  }
  if (options_.temperature <= 0.0f) {
    size_t best = 0;
    for (size_t i = 1; i < n; ++i)
      if (logits[i] > logits[best]) best = i;
    return static_cast<TokenId>(best);
  }
  // Candidates sorted by logit, descending; ties broken by id for determinism.
  std::vector<uint32_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0u);
  std::stable_sort(ids.begin(), ids.end(),
                   [&](uint32_t a, uint32_t b) { return logits[a] > logits[b]; });
  size_t keep = n;
  if (options_.top_k > 0) keep = std::min(keep, static_cast<size_t>(options_.top_k));
  const double inv_t = 1.0 / options_.temperature;
  const double max_l = logits[ids[0]];
  std::vector<double> probs(keep);
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) {
    probs[i] = std::exp((logits[ids[i]] - max_l) * inv_t);
    sum += probs[i];
  }
  for (double& p : probs) p /= sum;
  if (options_.min_p > 0.0f) {
    const double floor = probs[0] * options_.min_p;
    size_t k = 1;
    while (k < keep && probs[k] >= floor) ++k;
    keep = k;
  }
  if (options_.top_p < 1.0f) {
    double cum = 0;
    size_t k = 0;
    while (k < keep) {
      cum += probs[k++];
      if (cum >= options_.top_p) break;
    }
    keep = std::max<size_t>(k, 1);
  }
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += probs[i];
  // 53-bit uniform in [0, total).
  const double u = static_cast<double>(rng_() >> 11) * (1.0 / 9007199254740992.0) * total;
  double acc = 0;
  for (size_t i = 0; i < keep; ++i) {
    acc += probs[i];
    if (u < acc) return static_cast<TokenId>(ids[i]);
  }
  return static_cast<TokenId>(ids[keep - 1]);
}

std::unique_ptr<TokenSampler> make_basic_sampler(const SamplingOptions& options,
                                                 std::span<const TokenId> history) {
  return std::make_unique<BasicSampler>(options, history);
}

}  // namespace hearth::runtime
