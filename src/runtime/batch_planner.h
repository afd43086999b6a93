// The built-in batch strategies (BatchPlanner, include/hearth/runtime/runtime.h) and the
// check the worker runs on any planner's output. Pure functions of their inputs, so each
// strategy is unit-tested without a model:
//   decode rows are kept whole (one token each); prefill rows are sliced head-first (in
//   the given order, which is admission order) to min(remaining, chunk, budget left).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hearth/runtime/runtime.h"
#include "hearth/status.h"

namespace hearth::runtime {

// budget = n_batch; chunk <= 0 means no per-row cap.
std::vector<PlanRow> plan_batch(std::span<const PlanCandidate> candidates, int32_t budget,
                                int32_t chunk, BatchStrategy strategy);

// max(64, n_batch / 4) unless configured (-1 = unlimited -> 0 here).
int32_t effective_chunk(int32_t configured, int32_t n_batch);

// The BatchPlanner contract: each row names a distinct candidate, decode rows only
// decoding candidates, prefill slices 1..min(remaining, chunk) tokens of prefilling ones,
// all within budget. InvalidArgument names the first broken rule.
Status check_plan(std::span<const PlanCandidate> candidates, std::span<const PlanRow> rows,
                  int32_t budget, int32_t chunk);

}  // namespace hearth::runtime
