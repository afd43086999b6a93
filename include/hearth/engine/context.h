// How many positions per sequence an engine holds: the context rule (docs/runtime.md,
// "Context and KV budget"). Pure, so it is unit-tested apart from any model.
//
// The KV cache is committed at load for every sequence the engine holds, so its size
// is (n_ctx x bytes per position + min(n_ctx, ring positions) x ring bytes per position)
// x sequences, and the budget bounds exactly that: layers that keep every position
// grow with the context, sliding-window layers keep a ring of a fixed size.
#pragma once

#include <cstdint>
#include <string>

#include "hearth/status.h"

namespace hearth {

// The KV memory budget of a model that sets none: 4 GiB. A fixed figure, not a share
// of this machine's memory, so the same model and flags get the same context on every
// machine (benchmarks, tests and clients' context limits reproduce); 4 GiB holds the
// full context of the 1-3 B models at n_seq_max 4 and about 18k positions of a 0.6 B
// Qwen3 at n_seq_max 1.
inline constexpr uint64_t kDefaultKvBudgetBytes = uint64_t{4} << 30;

// A context chosen from the budget is rounded down to a multiple of this (the model's
// own length is kept as is), and is never smaller than min(this, the model's own).
inline constexpr int32_t kContextGranule = 256;

struct ContextRequest {
  int32_t n_ctx_train = 0;          // the model's own context length (> 0)
  int32_t requested = 0;            // an explicit context; 0 = choose from the budget
  uint64_t bytes_per_position = 0;  // KV bytes of one position of one sequence (> 0)
                                    // in the layers that keep every position
  // Sliding-window layers keeping a ring (engine/model/kv_store.h): their KV bytes of
  // one position of one sequence, and the ring's positions (window + slack, rounded);
  // a context below that holds n_ctx positions there instead.
  uint64_t ring_bytes_per_position = 0;
  int32_t ring_positions = 0;
  int32_t n_seq = 1;          // sequences whose KV is allocated
  uint64_t budget_bytes = 0;  // 0 = kDefaultKvBudgetBytes
};

struct ContextChoice {
  int32_t n_ctx = 0;
  uint64_t kv_bytes = 0;      // context_kv_bytes(request, n_ctx)
  uint64_t budget_bytes = 0;  // the budget that applied (the default when 0 was asked)
  bool capped = false;        // the model's own context did not fit the budget
};

// n_ctx = `requested` when given, else the model's own when its KV fits the budget,
// else the largest multiple of kContextGranule whose KV fits. Errors (InvalidArgument):
// a requested context whose KV exceeds the budget (the message names both), or a
// budget too small for min(kContextGranule, the model's own) positions.
Result<ContextChoice> choose_context(const ContextRequest& request);

// The KV bytes of every sequence at a context of n_ctx positions.
uint64_t context_kv_bytes(const ContextRequest& request, int32_t n_ctx);

// "4 GiB", "112 KiB", "300 B": a byte count for messages and logs.
std::string format_bytes(uint64_t bytes);

}  // namespace hearth
