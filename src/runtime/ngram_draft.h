// Prompt lookup (SpeculativeType::kNgram): drafts from the context itself, no second model.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hearth/runtime/backend.h"

namespace hearth::runtime {

// The tokens that followed the most recent earlier occurrence of the context's last n
// tokens, for n = ngram_max down to 1 (the first n that occurs wins), max_draft of them:
// when fewer follow it (the occurrence is less than max_draft tokens back), the copy goes
// on past the context's end as the repetition it is (period: the distance back). Empty
// when no suffix of the context occurs earlier in it.
std::vector<TokenId> ngram_draft(std::span<const TokenId> context, int32_t ngram_max,
                                 int32_t max_draft);

}  // namespace hearth::runtime
