// When a sequence saves: pure functions of the model's save policy and the slot's
// counts, unit-tested without a model like the batch planner. The worker asks these
// and only performs what they decide (kv_pack, RowStore::save).
#pragma once

#include <cstddef>
#include <cstdint>

#include "hearth/runtime/runtime.h"

namespace hearth::runtime {

// Length of the cold save for a prompt of prompt_len tokens whose first `resident`
// tokens are already in the KV (restored or reused): the prompt capped at
// cold_max_tokens, less boundary_trim_tokens, rounded down to boundary_align_tokens.
// 0 = no cold save (prompt under cold_min_tokens, result under min_tokens, or nothing
// beyond what is resident).
int32_t cold_save_length(const ModelSavePolicy& policy, size_t prompt_len, size_t resident);

// Whether a save of n_tokens is allowed at all (the min_tokens gate when the policy sets
// one; the sequence holds `resident` tokens, so a longer save is impossible). Under the
// cost rule (min_tokens = kCostRule) the caller asks cost_rule_saves as well.
bool save_allowed(const ModelSavePolicy& policy, int64_t n_tokens, size_t resident);

// The cost rule's inputs: how fast this model prefills and how fast its tier writes.
struct SaveRates {
  double prefill_tokens_per_s = 0;
  double write_bytes_per_s = 0;
};

// Priors used before the first measurement: a small model prefilling on a few CPU cores,
// and each tier's write bandwidth on modest hardware (docs/cache-design.md).
inline constexpr double kPriorPrefillTokensPerS = 500.0;
double prior_write_bytes_per_s(Tier tier);

// The rates the rule uses: the policy's fixed rate where set, else the measurement,
// else the prior.
SaveRates effective_rates(const ModelSavePolicy& policy, Tier tier, double measured_prefill,
                          double measured_write);

// The cost rule: save a row of n_tokens taking `bytes` when prefilling those tokens again
// would take longer than writing the row: n / prefill_tokens_per_s > bytes / write_bytes_per_s.
bool cost_rule_saves(int64_t n_tokens, uint64_t bytes, const SaveRates& rates);

// Whether a continued save is due after `generated` tokens, the last one having been
// at `last_saved_at` generated tokens (continued_interval; 0 disables).
bool continued_save_due(const ModelSavePolicy& policy, size_t generated, size_t last_saved_at);

}  // namespace hearth::runtime
