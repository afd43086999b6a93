#include "runtime/ngram_draft.h"

#include <algorithm>

namespace hearth::runtime {

std::vector<TokenId> ngram_draft(std::span<const TokenId> context, int32_t ngram_max,
                                 int32_t max_draft) {
  const size_t len = context.size();
  if (max_draft <= 0) return {};
  for (size_t n = static_cast<size_t>(std::max(ngram_max, 0)); n >= 1; --n) {
    if (n >= len) continue;
    const auto suffix = context.subspan(len - n);
    // Latest match first: an earlier occurrence ending at `end` (exclusive), end < len.
    for (size_t end = len - 1; end >= n; --end) {
      if (!std::equal(suffix.begin(), suffix.end(), context.begin() + (end - n))) continue;
      // Copy what followed; past the context's end the copy continues from its own start
      // (a match `len - end` tokens back is a repetition of that period).
      std::vector<TokenId> out;
      out.reserve(static_cast<size_t>(max_draft));
      for (size_t src = end; out.size() < static_cast<size_t>(max_draft); ++src)
        out.push_back(src < len ? context[src] : out[src - len]);
      return out;
    }
  }
  return {};
}

}  // namespace hearth::runtime
