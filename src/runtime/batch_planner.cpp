#include "runtime/batch_planner.h"

#include <algorithm>

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

}  // namespace hearth::runtime
