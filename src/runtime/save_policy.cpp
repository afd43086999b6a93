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

double prior_write_bytes_per_s(Tier tier) {
  switch (tier) {
    case Tier::kRam:
      return 2e9;  // a memcpy into the slab, well under memory bandwidth
    case Tier::kRamFile:
      return 1e9;  // tmpfs write + rename
    case Tier::kDisk:
      return 1e8;  // write + fdatasync + link + directory fsync on a modest SSD
  }
  return 1e8;
}

SaveRates effective_rates(const ModelSavePolicy& p, Tier tier, double measured_prefill,
                          double measured_write) {
  SaveRates r;
  r.prefill_tokens_per_s = p.prefill_tokens_per_s > 0 ? p.prefill_tokens_per_s
                           : measured_prefill > 0     ? measured_prefill
                                                      : kPriorPrefillTokensPerS;
  r.write_bytes_per_s = p.write_bytes_per_s > 0 ? p.write_bytes_per_s
                        : measured_write > 0    ? measured_write
                                                : prior_write_bytes_per_s(tier);
  return r;
}

bool cost_rule_saves(int64_t n_tokens, uint64_t bytes, const SaveRates& r) {
  if (n_tokens <= 0 || r.prefill_tokens_per_s <= 0 || r.write_bytes_per_s <= 0) return false;
  const double prefill_s = static_cast<double>(n_tokens) / r.prefill_tokens_per_s;
  const double write_s = static_cast<double>(bytes) / r.write_bytes_per_s;
  return prefill_s > write_s;
}

bool continued_save_due(const ModelSavePolicy& p, size_t generated, size_t last_saved_at) {
  return p.continued_interval > 0 && generated >= last_saved_at &&
         generated - last_saved_at >= static_cast<size_t>(p.continued_interval);
}

}  // namespace hearth::runtime
