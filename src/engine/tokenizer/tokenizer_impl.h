// Internal state shared by the tokenizer's pieces (SPM, BPE, special-token
// partitioning, decoding). Built once by Tokenizer::create and then read-only.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/pretokenizer.h"
#include "hearth/engine/tokenizer.h"

namespace hearth {

namespace tokenizer {

// std::string keys looked up by std::string_view without a copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

enum class ModelKind { kSpm, kBpe, kWpm };

// A piece of input after special-token partitioning: raw text, or one special token.
struct Fragment {
  std::string_view text;  // raw text (when token < 0)
  int32_t token = -1;     // special token id, or -1 for raw text
};

}  // namespace tokenizer

struct Tokenizer::Impl {
  Vocab vocab;
  tokenizer::ModelKind kind = tokenizer::ModelKind::kSpm;
  tokenizer::PreTokenizer pre = tokenizer::PreTokenizer::kDefault;
  std::vector<TokenType> types;  // one per token (filled in when the vocab has none)
  tokenizer::TokenMap token_to_id;
  // SPM byte fallback: id of "<0xXX>" for each byte, or -1.
  std::array<int32_t, 256> byte_token{};
  // BPE merge priorities keyed by "left right"; empty -> tiktoken ranks (token ids).
  tokenizer::TokenMap merge_rank;
  bool ignore_merges = false;
  size_t max_token_len = 0;  // WordPiece: the longest token text, in bytes  // llama3: a word that
                             // is a whole token skips merging
  // Control / user-defined / unknown tokens, longest text first (for partitioning).
  std::vector<int32_t> special_tokens;
  std::vector<bool> eog;  // one per token

  int32_t lookup(std::string_view text) const {
    auto it = token_to_id.find(text);
    return it == token_to_id.end() ? -1 : it->second;
  }
  float score(int32_t id) const {
    return vocab.scores.empty() ? 0.0f : vocab.scores[static_cast<size_t>(id)];
  }
};

namespace tokenizer {

// Splits text at occurrences of special tokens, longest token first, as llama.cpp
// does: user-defined tokens everywhere; control and unknown tokens only where their
// text lies wholly inside one of `special_ranges` (sorted, disjoint, non-adjacent byte
// ranges of `text`, as normalize_special_ranges returns them).
std::vector<Fragment> partition_special(const Tokenizer::Impl& impl, std::string_view text,
                                        std::span<const TextRange> special_ranges);

// Validates `ranges` against a text of `text_size` bytes, drops empty ones, sorts them
// and merges touching or overlapping ones.
Result<std::vector<TextRange>> normalize_special_ranges(std::span<const TextRange> ranges,
                                                        size_t text_size);

// SentencePiece BPE over already-escaped text ("▁" for spaces). Appends ids.
void spm_tokenize(const Tokenizer::Impl& impl, std::string_view text, std::vector<int32_t>& out);

// Byte-level BPE: pre-tokenize, byte-encode, merge. Appends ids.
void bpe_tokenize(const Tokenizer::Impl& impl, std::string_view text, std::vector<int32_t>& out);

// WordPiece (bert, wpm.cpp): normalize, split into words, longest-match each. Appends ids.
void wpm_tokenize(const Tokenizer::Impl& impl, std::string_view text, std::vector<int32_t>& out);

}  // namespace tokenizer
}  // namespace hearth
