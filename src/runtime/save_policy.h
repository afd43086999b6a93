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

// Whether a save of n_tokens is allowed at all (min_tokens gate; the sequence holds
// `resident` tokens, so a longer save is impossible).
bool save_allowed(const ModelSavePolicy& policy, int64_t n_tokens, size_t resident);

// Whether a continued save is due after `generated` tokens, the last one having been
// at `last_saved_at` generated tokens (continued_interval; 0 disables).
bool continued_save_due(const ModelSavePolicy& policy, size_t generated, size_t last_saved_at);

}  // namespace hearth::runtime
