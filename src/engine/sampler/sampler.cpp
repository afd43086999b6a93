// Sampling chain: logit_bias -> penalties -> top_k -> top_p -> min_p -> temperature -> draw.
// Candidates are always ordered by (logit desc, id asc), so the result is a pure
// function of (params, logits, history, PRNG state).
#include "hearth/engine/sampler.h"

#include <algorithm>
#include <cmath>

namespace hearth {
namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

}  // namespace

Rng::Rng(uint64_t seed) {
  uint64_t x = seed;
  for (uint64_t& s : s_) s = splitmix64(x);
}

uint64_t Rng::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::next_double() {
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

Sampler::Sampler(SamplingParams params) : params_(params), rng_(params.seed) {}

void Sampler::reset() {
  rng_ = Rng(params_.seed);
}

int32_t Sampler::greedy(std::span<const float> logits) {
  if (logits.empty()) return -1;
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
  }
  return best;
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  if (logits.empty()) return -1;
  const SamplingParams& p = params_;
  const int32_t n_vocab = static_cast<int32_t>(logits.size());
  penalized_.assign(logits.begin(), logits.end());
  for (const auto& [id, bias] : p.logit_bias)
    if (id >= 0 && id < n_vocab) penalized_[static_cast<size_t>(id)] += bias;

  // Penalties over the last penalty_last_n tokens (negative: the whole history).
  const bool penalize =
      p.repetition_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f;
  if (penalize && p.penalty_last_n != 0 && !history.empty()) {
    size_t n = history.size();
    if (p.penalty_last_n > 0) n = std::min(n, static_cast<size_t>(p.penalty_last_n));
    window_.assign(history.end() - static_cast<std::ptrdiff_t>(n), history.end());
    std::sort(window_.begin(), window_.end());
    for (size_t i = 0; i < window_.size();) {
      size_t j = i;
      while (j < window_.size() && window_[j] == window_[i]) ++j;
      const int32_t id = window_[i];
      const float count = static_cast<float>(j - i);
      i = j;
      if (id < 0 || id >= n_vocab) continue;
      float& l = penalized_[static_cast<size_t>(id)];
      if (p.repetition_penalty != 1.0f) {
        l = l > 0 ? l / p.repetition_penalty : l * p.repetition_penalty;
      }
      // Explicit FMA: the same bits in every build (-march=native used to contract it).
      l -= std::fma(count, p.frequency_penalty, p.presence_penalty);
    }
  }
  if (p.temperature <= 0.0f) return greedy(penalized_);

  cand_.resize(logits.size());
  for (int32_t i = 0; i < n_vocab; ++i) cand_[i] = {i, penalized_[static_cast<size_t>(i)], 0.0f};
  auto better = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  size_t n = cand_.size();
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < n) {
    n = static_cast<size_t>(p.top_k);
    std::partial_sort(cand_.begin(), cand_.begin() + static_cast<std::ptrdiff_t>(n), cand_.end(),
                      better);
  } else {
    std::sort(cand_.begin(), cand_.end(), better);
  }

  // Probabilities of the current set (at temperature 1), in double for stability.
  auto normalize = [&](size_t count) {
    const double max = cand_[0].logit;
    double sum = 0;
    for (size_t i = 0; i < count; ++i) sum += std::exp(static_cast<double>(cand_[i].logit) - max);
    for (size_t i = 0; i < count; ++i) {
      cand_[i].p = static_cast<float>(std::exp(static_cast<double>(cand_[i].logit) - max) / sum);
    }
  };
  if (p.top_p < 1.0f) {
    normalize(n);
    double cum = 0;
    size_t keep = n;
    for (size_t i = 0; i < n; ++i) {
      cum += cand_[i].p;
      if (cum >= p.top_p) {
        keep = i + 1;
        break;
      }
    }
    n = keep;
  }
  if (p.min_p > 0.0f) {
    normalize(n);
    const float threshold = cand_[0].p * p.min_p;
    size_t keep = 1;
    while (keep < n && cand_[keep].p >= threshold) ++keep;
    n = keep;
  }

  // Temperature, then a draw from the renormalized distribution.
  const double max = cand_[0].logit / static_cast<double>(p.temperature);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    const double e = std::exp(cand_[i].logit / static_cast<double>(p.temperature) - max);
    cand_[i].p = static_cast<float>(e);
    sum += cand_[i].p;  // the same values the walk below adds
  }
  const double u = rng_.next_double() * sum;
  double cum = 0;
  for (size_t i = 0; i < n; ++i) {
    cum += cand_[i].p;
    if (u < cum) return cand_[i].id;
  }
  return cand_[n - 1].id;
}

}  // namespace hearth
