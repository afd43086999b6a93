// Vocabularies from non-GGUF tokenizer files, for tests and tools:
//   GPT-2 format: encoder.json ({"token": id}) + vocab.bpe (merge lines "A B").
//   tiktoken format: lines "<base64 token bytes> <rank>", rank = id = merge priority.
// Both yield a byte-level BPE ("gpt2") Vocab with no special tokens.
#pragma once

#include <string>
#include <string_view>

#include "hearth/status.h"
#include "hearth/engine/tokenizer.h"

namespace hearth::tokenizer {

Result<Vocab> vocab_from_gpt2_files(const std::string& encoder_json_path,
                                    const std::string& vocab_bpe_path, std::string_view pre);

// Token texts are stored byte-level encoded (as GGUF does); merges stay empty so the
// tokenizer uses the tiktoken rule (the merged token's id is the pair's priority).
Result<Vocab> vocab_from_tiktoken(const std::string& path, std::string_view pre);

}  // namespace hearth::tokenizer
