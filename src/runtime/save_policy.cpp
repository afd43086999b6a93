#include "runtime/save_policy.h"

#include <algorithm>

namespace hearth::runtime {

int32_t cold_save_length(const ModelSavePolicy& p, size_t prompt_len, size_t resident) {
  const auto n = static_cast<int64_t>(prompt_len);
  if (n < p.cold_min_tokens) return 0;
  int64_t len = std::min<int64_t>(n, p.cold_max_tokens) - p.boundary_trim_tokens;
  if (p.boundary_align_tokens > 0) len = len / p.boundary_align_tokens * p.boundary_align_tokens;
  if (len < p.min_tokens || len <= static_cast<int64_t>(resident) || len <= 0) return 0;
  return static_cast<int32_t>(len);
}

bool save_allowed(const ModelSavePolicy& p, int64_t n_tokens, size_t resident) {
  return n_tokens > 0 && n_tokens >= p.min_tokens &&
         static_cast<uint64_t>(n_tokens) <= static_cast<uint64_t>(resident);
}

bool continued_save_due(const ModelSavePolicy& p, size_t generated, size_t last_saved_at) {
  return p.continued_interval > 0 && generated >= last_saved_at &&
         generated - last_saved_at >= static_cast<size_t>(p.continued_interval);
}

}  // namespace hearth::runtime
