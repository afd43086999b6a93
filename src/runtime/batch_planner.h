// Builds one tick's batch: which sequences decode and how long each prefill slice is.
// Pure function of its inputs, so each strategy is unit-tested without a model.
//   decode rows are kept whole (one token each); prefill rows are sliced head-first (in
//   the given order, which is admission order) to min(remaining, chunk, budget left).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hearth/runtime/runtime.h"

namespace hearth::runtime {

struct PlanCandidate {
  int32_t slot = 0;
  bool decode = false;            // has a sampled token waiting to be fed
  int32_t prefill_remaining = 0;  // prompt tokens still to prefill (0 when decoding)
};

struct PlanRow {
  int32_t slot = 0;
  bool decode = false;
  int32_t prefill_len = 0;
};

// budget = n_batch; chunk <= 0 means no per-row cap.
std::vector<PlanRow> plan_batch(std::span<const PlanCandidate> candidates, int32_t budget,
                                int32_t chunk, BatchStrategy strategy);

// max(64, n_batch / 4) unless configured (-1 = unlimited -> 0 here).
int32_t effective_chunk(int32_t configured, int32_t n_batch);

}  // namespace hearth::runtime
