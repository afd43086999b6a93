// How a request takes a sequence: which free slot, and what its KV starts from (the
// slot's resident cells, a cached row, or nothing). Pure functions of the slots' tokens
// and the lookup's result, unit-tested without a model; the worker carries out the
// decision (seq_truncate, restore) and falls back to cold when a restore fails.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "hearth/runtime/backend.h"

namespace hearth::runtime {

// Tokens of prompt whose prefix `resident` already holds.
size_t common_prefix(std::span<const TokenId> resident, std::span<const TokenId> prompt);

struct SlotChoice {
  size_t slot = 0;          // index into the candidates
  size_t resident_lcp = 0;  // prompt tokens its resident cells hold (0 without affinity)
};

// Among the free slots (residents[i] = the resident tokens of free slot i; at least one),
// the longest resident prefix of the prompt when `affinity`, ties to an empty slot (no
// cells to drop), then to the first.
SlotChoice choose_slot(std::span<const std::vector<TokenId>* const> residents,
                       std::span<const TokenId> prompt, bool affinity);

enum class StartFrom {
  kCold,     // drop every cell, prefill the whole prompt
  kSticky,   // keep `keep` resident cells
  kRestore,  // restore the row, then keep `keep` of its tokens
};

struct StartPlan {
  StartFrom from = StartFrom::kCold;
  size_t keep = 0;
};

// What a prompt of prompt_len tokens starts from. resident_lcp: its prefix held by the
// chosen slot's cells; row_len: prompt tokens a looked-up row covers (0 = no row);
// row_complete: the row is exactly the prompt and carries last-position logits (a hit
// then needs no forward pass before its first token). A resident prefix wins over a row
// that covers no more. At least one prompt token is always recomputed unless the plan
// restores a complete row: the first token is sampled from logits that must exist.
StartPlan plan_start(size_t prompt_len, size_t resident_lcp, size_t row_len, bool row_complete);

}  // namespace hearth::runtime
