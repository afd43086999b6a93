// A ChatML model for tests that need real control tokens: the shared small-qwen2-f32.gguf
// (real weights, a 512-token SentencePiece vocabulary without ChatML markers) copied with
// its last two tokens turned into the control tokens "<|im_start|>" and "<|im_end|>" and a
// tokenizer.chat_template naming them, so the server picks the chatml family.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "hearth/gguf/gguf.h"
#include "hearth/status.h"

namespace hearth::server::testing {

inline std::string small_qwen2_path() {
  return std::string(HEARTH_SHARED_DIR) + "/reference/models/small-qwen2-f32.gguf";
}

inline const char* kChatmlTemplate =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
    "{% endfor %}<|im_start|>assistant\n";

// Writes the patched copy to `out`; the control ids are n_vocab - 2 and n_vocab - 1.
inline Status write_chatml_model(const std::string& out,
                                 const std::string& chat_template = kChatmlTemplate) {
  HEARTH_ASSIGN_OR_RETURN(gguf::GgufFile in, gguf::GgufFile::open(small_qwen2_path()));
  HEARTH_ASSIGN_OR_RETURN(std::vector<std::string> tokens,
                          in.get_string_array("tokenizer.ggml.tokens"));
  HEARTH_ASSIGN_OR_RETURN(std::vector<int32_t> types,
                          in.get_i32_array("tokenizer.ggml.token_type"));
  if (tokens.size() < 2 || types.size() != tokens.size())
    return InvalidArgument("unexpected vocabulary in " + small_qwen2_path());
  const size_t n = tokens.size();
  tokens[n - 2] = "<|im_start|>";
  tokens[n - 1] = "<|im_end|>";
  types[n - 2] = types[n - 1] = 3;  // control
  gguf::GgufWriter w;
  for (const auto& [key, value] : in.metadata()) w.set(key, value);
  w.set("tokenizer.ggml.tokens", gguf::Value::string_array(tokens));
  w.set("tokenizer.ggml.token_type", gguf::Value::i32_array(types));
  w.set_string("tokenizer.chat_template", chat_template);
  for (const gguf::TensorInfo& t : in.tensors()) {
    HEARTH_RETURN_IF_ERROR(
        w.add_tensor(t.name, t.dims, t.type, std::vector<uint8_t>(t.data, t.data + t.n_bytes)));
  }
  return w.write_file(out);
}

}  // namespace hearth::server::testing
