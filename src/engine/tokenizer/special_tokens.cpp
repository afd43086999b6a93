// Special-token partitioning: before the model's tokenizer runs, the input is cut
// at every occurrence of a special token's text, longest tokens first, so that e.g.
// "<|im_start|>user" yields the <|im_start|> id followed by tokenized "user".
//
// Control tokens are only cut out inside the caller's special ranges. An occurrence
// outside them stays text (and may still hold a shorter special token's text, which
// the later, shorter passes look at under the same rule).
#include <algorithm>

#include "engine/tokenizer/tokenizer_impl.h"

namespace hearth::tokenizer {
namespace {

// True when [begin, begin + size) lies inside one of `ranges` (normalized).
bool inside(std::span<const TextRange> ranges, size_t begin, size_t size) {
  auto after = std::upper_bound(ranges.begin(), ranges.end(), begin,
                                [](size_t pos, const TextRange& r) { return pos < r.begin; });
  if (after == ranges.begin()) return false;
  return begin + size <= std::prev(after)->end;
}

}  // namespace

Result<std::vector<TextRange>> normalize_special_ranges(std::span<const TextRange> ranges,
                                                        size_t text_size) {
  std::vector<TextRange> out;
  for (const TextRange& r : ranges) {
    if (r.begin > r.end || r.end > text_size) {
      return InvalidArgument("tokenizer: special range [" + std::to_string(r.begin) + ", " +
                             std::to_string(r.end) + ") is not inside the text of " +
                             std::to_string(text_size) + " bytes");
    }
    if (r.begin < r.end) out.push_back(r);
  }
  std::sort(out.begin(), out.end(),
            [](const TextRange& a, const TextRange& b) { return a.begin < b.begin; });
  std::vector<TextRange> merged;
  for (const TextRange& r : out) {
    if (!merged.empty() && r.begin <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, r.end);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

std::vector<Fragment> partition_special(const Tokenizer::Impl& impl, std::string_view text,
                                        std::span<const TextRange> special_ranges) {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({text, -1});

  std::vector<Fragment> next;
  for (int32_t id : impl.special_tokens) {
    const TokenType type = impl.types[static_cast<size_t>(id)];
    // Control and unknown tokens are only recognised where the caller allows it;
    // user-defined tokens always are (llama.cpp's rule).
    const bool ranged = type == TokenType::kControl || type == TokenType::kUnknown;
    if (ranged && special_ranges.empty()) continue;
    const std::string& special = impl.vocab.tokens[static_cast<size_t>(id)];
    if (special.empty()) continue;

    bool changed = false;
    next.clear();
    for (const Fragment& f : fragments) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      std::string_view raw = f.text;
      size_t from = 0;  // where to look next in raw; skips occurrences left as text
      for (size_t found = raw.find(special, from); found != std::string_view::npos;
           found = raw.find(special, from)) {
        const size_t offset = static_cast<size_t>(raw.data() - text.data()) + found;
        if (ranged && !inside(special_ranges, offset, special.size())) {
          from = found + 1;
          continue;
        }
        changed = true;
        if (found > 0) next.push_back({raw.substr(0, found), -1});
        next.push_back({{}, id});
        raw = raw.substr(found + special.size());
        from = 0;
      }
      if (!raw.empty()) next.push_back({raw, -1});
    }
    if (changed) fragments.swap(next);
  }
  return fragments;
}

}  // namespace hearth::tokenizer
