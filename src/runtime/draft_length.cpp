#include "runtime/draft_length.h"

#include <algorithm>

namespace hearth::runtime {
namespace {

constexpr double kAverageWeight = 0.25;  // of a new sample in the per-count averages

void blend(double& avg, double sample) {
  avg = avg == 0 ? sample : (1 - kAverageWeight) * avg + kAverageWeight * sample;
}

}  // namespace

StepCosts::StepCosts(int32_t max_tokens)
    : avg_(static_cast<size_t>(std::max(max_tokens, 1)) + 1, 0.0) {}

void StepCosts::record(int32_t tokens, double seconds) {
  if (tokens < 1 || static_cast<size_t>(tokens) >= avg_.size() || !(seconds > 0)) return;
  blend(avg_[static_cast<size_t>(tokens)], seconds);
}

void StepCosts::record_draft(int32_t tokens, double seconds) {
  if (tokens < 1 || !(seconds > 0)) return;
  blend(draft_token_s_, seconds / tokens);
}

double StepCosts::pass(int32_t tokens) const {
  const size_t n = static_cast<size_t>(std::max(tokens, 1));
  if (n < avg_.size() && avg_[n] > 0) return avg_[n];
  size_t lo = 0, hi = 0;  // nearest measured counts below and above n (0 = none)
  for (size_t i = std::min(n, avg_.size()) - 1; i >= 1 && lo == 0; --i)
    if (avg_[i] > 0) lo = i;
  for (size_t i = n + 1; i < avg_.size() && hi == 0; ++i)
    if (avg_[i] > 0) hi = i;
  if (lo && hi) {
    const double f = static_cast<double>(n - lo) / static_cast<double>(hi - lo);
    return avg_[lo] + f * (avg_[hi] - avg_[lo]);
  }
  if (hi) return avg_[hi];  // nothing smaller measured: at most the larger pass's cost
  if (!lo) return 0;
  size_t first = 1;
  while (avg_[first] == 0) ++first;
  const double slope = lo > first ? (avg_[lo] - avg_[first]) / static_cast<double>(lo - first)
                                  : kPriorExtraTokenCost * avg_[lo] / static_cast<double>(lo);
  return avg_[lo] + std::max(slope, 0.0) * static_cast<double>(n - lo);
}

double DraftLength::expected_tokens(int32_t k) const {
  const double a = acceptance();
  double sum = 0, term = 1;
  for (int32_t i = 0; i <= k; ++i, term *= a) sum += term;
  return sum;
}

int32_t DraftLength::choose(const StepCosts& costs, int32_t tokens, double yield, int32_t k_min,
                            int32_t k_max, bool draft_model) {
  k_min = std::max(k_min, 1);
  if (k_max < k_min) return 0;
  const double plain = costs.pass(tokens);
  if (plain <= 0) return 0;  // nothing measured yet: the first decode step measures
  const double a = acceptance();
  int32_t best_k = 0;
  double best_rate = 0;
  double expected = 1, term = 1;  // E(k) = 1 + a + ... + a^k, built up as k grows
  double pass = plain;            // a longer pass never costs less: averages taken at another time
                        // (another load) must not make a verify look cheaper than a decode
  for (int32_t k = 1; k <= k_max; ++k) {
    term *= a;
    expected += term;
    pass = std::max(pass, costs.pass(tokens + k));
    if (k < k_min) continue;
    const double seconds = pass + (draft_model ? costs.draft(k) : 0.0);
    const double rate = (yield - 1 + expected) / seconds;
    if (rate > best_rate) {
      best_rate = rate;
      best_k = k;
    }
    if (term < 1e-4) break;  // longer drafts add (almost) nothing but cost
  }
  if (best_k > 0 && best_rate > yield / plain * (1 + kMinGain)) return best_k;
  if (probe_interval_ > 0 && plain_steps_ >= probe_interval_) return k_min;
  return 0;
}

void DraftLength::plain_step() {
  ++plain_steps_;
  if (judged_ < 1e-3) return;  // keep the ratio (the acceptance) representable
  accepted_ *= kIdleDecay;
  judged_ *= kIdleDecay;
}

void DraftLength::observe(int32_t accepted, bool rejected) {
  accepted_ = kDecay * accepted_ + accepted;
  judged_ = kDecay * judged_ + accepted + (rejected ? 1 : 0);
  plain_steps_ = 0;
}

}  // namespace hearth::runtime
