// Vocab from a GGUF file's tokenizer.ggml.* metadata.
#include <string>

#include "hearth/engine/tokenizer.h"
#include "hearth/gguf/gguf.h"
#include "hearth/log.h"

namespace hearth {
namespace {

// Reads an optional token id; ids outside [0, n) become -1 (with a warning).
Result<int32_t> read_id(const gguf::GgufFile& file, std::string_view key, int32_t fallback,
                        size_t n) {
  if (!file.has(key)) return fallback;
  HEARTH_ASSIGN_OR_RETURN(int64_t id, file.get_i64(key));
  if (id < 0 || static_cast<uint64_t>(id) >= n) {
    // -1 and its u32 spelling 0xFFFFFFFF are common ways of writing "none".
    const bool means_none = id == -1 || id == 0xFFFFFFFFll;
    const std::string message = "tokenizer: " + std::string(key) + " = " + std::to_string(id) +
                                " is outside the vocabulary of " + std::to_string(n) +
                                " tokens; ignored";
    if (means_none) {
      log::debug(message);
    } else {
      log::warn(message);
    }
    return -1;
  }
  return static_cast<int32_t>(id);
}

}  // namespace

Result<Vocab> vocab_from_gguf(const gguf::GgufFile& file) {
  Vocab v;
  HEARTH_ASSIGN_OR_RETURN(v.model, file.get_string("tokenizer.ggml.model"));
  if (file.has("tokenizer.ggml.pre")) {
    HEARTH_ASSIGN_OR_RETURN(v.pre, file.get_string("tokenizer.ggml.pre"));
  }
  HEARTH_ASSIGN_OR_RETURN(v.tokens, file.get_string_array("tokenizer.ggml.tokens"));
  const size_t n = v.tokens.size();
  if (file.has("tokenizer.ggml.scores")) {
    HEARTH_ASSIGN_OR_RETURN(v.scores, file.get_f32_array("tokenizer.ggml.scores"));
    if (v.scores.size() != n) {
      return InvalidArgument("tokenizer.ggml.scores has " + std::to_string(v.scores.size()) +
                             " entries for " + std::to_string(n) + " tokens");
    }
  }
  if (file.has("tokenizer.ggml.token_type")) {
    HEARTH_ASSIGN_OR_RETURN(std::vector<int32_t> types,
                            file.get_i32_array("tokenizer.ggml.token_type"));
    if (types.size() != n) {
      return InvalidArgument("tokenizer.ggml.token_type has " + std::to_string(types.size()) +
                             " entries for " + std::to_string(n) + " tokens");
    }
    v.token_types.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (types[i] < 0 || types[i] > 6) {
        return InvalidArgument("tokenizer.ggml.token_type[" + std::to_string(i) +
                               "] = " + std::to_string(types[i]) + " is not a token type (0-6)");
      }
      v.token_types.push_back(static_cast<TokenType>(types[i]));
    }
  }
  if (file.has("tokenizer.ggml.merges")) {
    HEARTH_ASSIGN_OR_RETURN(v.merges, file.get_string_array("tokenizer.ggml.merges"));
  }

  const bool spm = v.model == "llama";
  const bool wpm = v.model == "bert";  // llama.cpp's defaults: [CLS] 101, [UNK] 100, [SEP] 102
  int32_t bos_default = spm && n > 1 ? 1 : -1;
  if (wpm) {
    HEARTH_ASSIGN_OR_RETURN(bos_default,
                            read_id(file, "tokenizer.ggml.cls_token_id", n > 101 ? 101 : -1, n));
  }
  HEARTH_ASSIGN_OR_RETURN(v.bos_id, read_id(file, "tokenizer.ggml.bos_token_id", bos_default, n));
  HEARTH_ASSIGN_OR_RETURN(v.eos_id,
                          read_id(file, "tokenizer.ggml.eos_token_id", spm && n > 2 ? 2 : -1, n));
  HEARTH_ASSIGN_OR_RETURN(v.unk_id, read_id(file, "tokenizer.ggml.unknown_token_id",
                                            spm && n > 0 ? 0 : (wpm && n > 100 ? 100 : -1), n));
  // llama.cpp's key spelling ("seperator").
  HEARTH_ASSIGN_OR_RETURN(
      v.sep_id, read_id(file, "tokenizer.ggml.seperator_token_id", wpm && n > 102 ? 102 : -1, n));
  HEARTH_ASSIGN_OR_RETURN(v.pad_id, read_id(file, "tokenizer.ggml.padding_token_id", -1, n));
  HEARTH_ASSIGN_OR_RETURN(v.eot_id, read_id(file, "tokenizer.ggml.eot_token_id", -1, n));

  const bool llama3 = v.pre == "llama3" || v.pre == "llama-v3" || v.pre == "llama-bpe";
  HEARTH_ASSIGN_OR_RETURN(v.add_bos,
                          file.get_bool_or("tokenizer.ggml.add_bos_token", spm || llama3 || wpm));
  HEARTH_ASSIGN_OR_RETURN(v.add_eos, file.get_bool_or("tokenizer.ggml.add_eos_token", false));
  HEARTH_ASSIGN_OR_RETURN(v.add_sep, file.get_bool_or("tokenizer.ggml.add_sep_token", wpm));
  HEARTH_ASSIGN_OR_RETURN(v.add_space_prefix,
                          file.get_bool_or("tokenizer.ggml.add_space_prefix", spm));
  return v;
}

}  // namespace hearth
