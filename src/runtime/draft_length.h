// Adaptive draft length for speculative decoding (docs/runtime.md, "Adaptive drafting"):
// how many tokens a request drafts this tick, from its recent acceptance and the measured
// cost of the worker's forward passes, so that speculation never costs more than it saves.
// The choice only decides how many positions one forward pass scores: the tokens sampled
// are the plain decode's whatever it picks.
#pragma once

#include <cstdint>
#include <vector>

namespace hearth::runtime {

// Per worker: the seconds of a decode-only forward pass by its token count (an exponential
// average per count, from the worker's own timing), and of one draft-model pass.
class StepCosts {
 public:
  explicit StepCosts(int32_t max_tokens);
  // A forward pass of `tokens` tokens, all decode rows (plain or verify), took `seconds`.
  void record(int32_t tokens, double seconds);
  // The draft model proposed `tokens` tokens in `seconds` (its catch-up pass included).
  void record_draft(int32_t tokens, double seconds);
  // Estimated seconds of a decode pass of `tokens` tokens: the measured average, else
  // interpolated between the nearest measured counts, else extrapolated at the measured
  // per-token slope (kPriorExtraTokenCost of a one-token pass while only one count is
  // known). 0 while nothing is measured.
  double pass(int32_t tokens) const;
  // Estimated seconds of drafting `tokens` tokens with the draft model (0 until measured).
  double draft(int32_t tokens) const { return draft_token_s_ * tokens; }

  // Before any verify pass is measured, an extra token is assumed to cost this fraction
  // of a one-token pass (about what the small-batch GEMM gives on Q4_0; measurements
  // replace it after the first verify).
  static constexpr double kPriorExtraTokenCost = 0.25;

 private:
  std::vector<double> avg_;  // avg_[n]: seconds of an n-token pass; 0 = not measured
  double draft_token_s_ = 0;
};

// Per request: the recent acceptance and the draft length that pays.
class DraftLength {
 public:
  // probe_interval: after this many decode steps without a draft, draft once (one token)
  // so that a request whose drafts start to agree is noticed (0 = never probe).
  explicit DraftLength(int32_t probe_interval = 16) : probe_interval_(probe_interval) {}

  // The draft length for this tick's decode row: the k in [k_min, k_max] that maximises
  // the step's expected tokens per second, ((yield - 1) + E(k)) / (pass(tokens + k) +
  // draft(k)), where `tokens` and `yield` are the step's tokens and expected new tokens so
  // far (this row's pending token included) and E(k) = (1 - a^(k+1)) / (1 - a) the
  // expected tokens of a k-token draft at acceptance a. 0 (decode plainly) unless that
  // beats the plain step by kMinGain, except for a one-token probe every probe_interval
  // plain steps. k_min is at least 1; 0 when k_max < k_min.
  int32_t choose(const StepCosts& costs, int32_t tokens, double yield, int32_t k_min, int32_t k_max,
                 bool draft_model);
  // A verify accepted `accepted` drafted tokens; `rejected`: it ended at a drafted token
  // the target did not pick (not at the end of the draft or of the generation).
  void observe(int32_t accepted, bool rejected);
  // A decode step that carried no draft (none chosen, or the drafter found none).
  void plain_step();

  // The recent acceptance a: accepted / judged draft tokens, the counts aged by kDecay at
  // each verify and by kIdleDecay at each plain step (starts at kPrior). Ageing during
  // plain steps too lets accepted probes after a long run without drafts outweigh the old
  // failures within a few probes, while one lucky probe at a low acceptance does not
  // start a run of rejected drafts.
  double acceptance() const { return judged_ > 0 ? accepted_ / judged_ : kPrior; }
  // E(k) at the current acceptance.
  double expected_tokens(int32_t k) const;

  static constexpr double kDecay = 0.9;
  static constexpr double kIdleDecay = 0.97;
  static constexpr double kPrior = 0.5;     // as 2 judged tokens, 1 accepted
  static constexpr double kMinGain = 0.03;  // a draft must promise 3% more tokens per second

 private:
  int32_t probe_interval_;
  int32_t plain_steps_ = 0;  // since the last draft
  double accepted_ = kPrior * 2;
  double judged_ = 2;
};

}  // namespace hearth::runtime
