#include "runtime/batch_planner.h"

#include <algorithm>
#include <string>

namespace hearth::runtime {

int32_t effective_chunk(int32_t configured, int32_t n_batch) {
  if (configured < 0) return 0;
  if (configured == 0) return std::max(64, n_batch / 4);
  return configured;
}

std::vector<PlanRow> plan_batch(std::span<const PlanCandidate> candidates, int32_t budget,
                                int32_t chunk, BatchStrategy strategy) {
  std::vector<PlanRow> rows;
  int32_t n_decode = 0;
  for (const PlanCandidate& c : candidates) n_decode += c.decode ? 1 : 0;
  int32_t left = budget;

  auto add_decoders = [&] {
    for (const PlanCandidate& c : candidates) {
      if (!c.decode || left < 1) continue;
      rows.push_back({c.slot, true, 0});
      --left;
    }
  };
  auto add_prefill = [&](int32_t cap) {
    int32_t avail = std::min(left, cap);
    for (const PlanCandidate& c : candidates) {
      if (c.decode || c.prefill_remaining <= 0 || avail <= 0) continue;
      int32_t len = std::min(c.prefill_remaining, avail);
      if (chunk > 0) len = std::min(len, chunk);
      rows.push_back({c.slot, false, len});
      avail -= len;
      left -= len;
    }
  };

  switch (strategy) {
    case BatchStrategy::kDecodeFirst:
      add_decoders();
      add_prefill(left);
      break;
    case BatchStrategy::kPrefillFirst:
      add_prefill(left);
      add_decoders();
      break;
    case BatchStrategy::kBalanced:
      add_decoders();
      add_prefill(n_decode > 0 ? budget / 2 : budget);
      break;
  }
  // Keep the output in candidate order so rows of one tick are deterministic.
  std::stable_sort(rows.begin(), rows.end(), [&](const PlanRow& a, const PlanRow& b) {
    auto pos = [&](int32_t slot) {
      for (size_t i = 0; i < candidates.size(); ++i)
        if (candidates[i].slot == slot) return i;
      return candidates.size();
    };
    return pos(a.slot) < pos(b.slot);
  });
  return rows;
}

namespace {

class BuiltinPlanner final : public BatchPlanner {
 public:
  explicit BuiltinPlanner(BatchStrategy s) : strategy_(s) {}
  std::vector<PlanRow> plan(std::span<const PlanCandidate> candidates, int32_t budget,
                            int32_t chunk) const override {
    return plan_batch(candidates, budget, chunk, strategy_);
  }
  std::string name() const override { return batch_strategy_name(strategy_); }

 private:
  const BatchStrategy strategy_;
};

constexpr BatchStrategy kStrategies[] = {BatchStrategy::kDecodeFirst, BatchStrategy::kPrefillFirst,
                                         BatchStrategy::kBalanced};

}  // namespace

const char* batch_strategy_name(BatchStrategy strategy) {
  switch (strategy) {
    case BatchStrategy::kDecodeFirst:
      return "decode_first";
    case BatchStrategy::kPrefillFirst:
      return "prefill_first";
    case BatchStrategy::kBalanced:
      return "balanced";
  }
  return "unknown";
}

std::optional<BatchStrategy> batch_strategy_from_name(std::string_view name) {
  for (BatchStrategy s : kStrategies)
    if (name == batch_strategy_name(s)) return s;
  return std::nullopt;
}

std::shared_ptr<const BatchPlanner> builtin_batch_planner(BatchStrategy strategy) {
  return std::make_shared<const BuiltinPlanner>(strategy);
}

Status check_plan(std::span<const PlanCandidate> candidates, std::span<const PlanRow> rows,
                  int32_t budget, int32_t chunk) {
  // Runs every tick: the message is built only when a rule is broken.
  auto broken = [](const PlanRow& r, const std::string& why) {
    return InvalidArgument("batch plan row for slot " + std::to_string(r.slot) + ": " + why);
  };
  int64_t used = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const PlanRow& r = rows[i];
    const PlanCandidate* c = nullptr;
    for (const PlanCandidate& x : candidates)
      if (x.slot == r.slot) c = &x;
    if (c == nullptr) return broken(r, "no such candidate");
    for (size_t j = 0; j < i; ++j)
      if (rows[j].slot == r.slot) return broken(r, "slot named twice");
    if (r.decode != c->decode)
      return broken(r, c->decode ? "the slot decodes" : "the slot prefills");
    if (!r.decode) {
      const int32_t cap = chunk > 0 ? std::min(chunk, c->prefill_remaining) : c->prefill_remaining;
      if (r.prefill_len < 1 || r.prefill_len > cap)
        return broken(r, "prefill_len " + std::to_string(r.prefill_len) + " outside 1.." +
                             std::to_string(cap));
    }
    used += r.decode ? 1 : r.prefill_len;
  }
  if (used > budget)
    return InvalidArgument("batch plan: " + std::to_string(used) + " tokens exceed n_batch " +
                           std::to_string(budget));
  return OkStatus();
}

}  // namespace hearth::runtime
