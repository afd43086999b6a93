// Byte-level BPE pre-tokenizers: split text into words before BPE merging, the way
// llama.cpp's per-model regex lists do (tokenizer.ggml.pre selects the list).
//
// There is no Unicode regex engine in hearth's dependencies, so each regex is a
// hand-written matcher with the same leftmost-first, backtracking semantics. A list
// of regexes is applied in order; each one re-splits every fragment produced so far,
// keeping both the matches and the unmatched text between them as fragments.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hearth/status.h"

namespace hearth::tokenizer {

enum class PreTokenizer {
  kDefault,  // llama.cpp's fallback list (punctuation runs, gpt-2, digits)
  kGpt2,     // gpt-2, mpt, olmo, phi-2, ...
  kLlama3,   // llama3 / llama-bpe, dbrx, smaug-bpe: digits in groups of 1-3
  kQwen2,    // qwen2, stablelm2: like llama3 but one digit per word
  kDeepseekLlm,
  kDeepseekCoder,
  kFalcon,
  kStarcoder,  // starcoder, refact, command-r, smollm, codeshell, exaone, ...
};

// Maps a tokenizer.ggml.pre value to its pre-tokenizer; Unsupported for unknown names.
Result<PreTokenizer> pre_tokenizer_from_name(std::string_view name);

// Splits `codepoints` into words, returned as lengths (in codepoints) that add up to
// codepoints.size().
std::vector<size_t> pre_tokenize(PreTokenizer kind, const std::vector<uint32_t>& codepoints);

}  // namespace hearth::tokenizer
