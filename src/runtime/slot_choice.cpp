#include "runtime/slot_choice.h"

#include <algorithm>

namespace hearth::runtime {

size_t common_prefix(std::span<const TokenId> resident, std::span<const TokenId> prompt) {
  const size_t m = std::min(resident.size(), prompt.size());
  size_t n = 0;
  while (n < m && resident[n] == prompt[n]) ++n;
  return n;
}

SlotChoice choose_slot(std::span<const std::vector<TokenId>* const> residents,
                       std::span<const TokenId> prompt, bool affinity) {
  SlotChoice best;
  bool have = false;
  for (size_t i = 0; i < residents.size(); ++i) {
    const std::vector<TokenId>& cells = *residents[i];
    const size_t lcp = affinity ? common_prefix(cells, prompt) : 0;
    const bool better =
        !have || lcp > best.resident_lcp ||
        (lcp == best.resident_lcp && cells.empty() && !residents[best.slot]->empty());
    if (better) {
      best = {i, lcp};
      have = true;
    }
  }
  return best;
}

StartPlan plan_start(size_t prompt_len, size_t resident_lcp, size_t row_len, bool row_complete) {
  if (prompt_len == 0) return {};
  const size_t sticky = std::min(resident_lcp, prompt_len - 1);
  if (sticky > 0 && sticky >= row_len && !row_complete) return {StartFrom::kSticky, sticky};
  if (row_len > 0) {
    return {StartFrom::kRestore, row_complete ? prompt_len : std::min(row_len, prompt_len - 1)};
  }
  return {};
}

}  // namespace hearth::runtime
