// `hearth gen-model`: writes a GGUF of one of the engine's architecture families
// (llama, qwen3, qwen3moe, gemma2, gemma3, phi3, mixtral, bert) with seeded random weights.
// The same options always produce the same bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hearth/gguf/gguf.h"
#include "hearth/progress.h"
#include "hearth/status.h"

namespace hearth::cli {

// A model shape. The family decides the tensors and metadata keys (gen_model_plan.cpp);
// "mixtral" is written as general.architecture "llama" with expert tensors.
struct ModelPreset {
  const char* arch;  // llama, qwen3, qwen3moe, gemma2, gemma3, phi3, mixtral, bert
  const char* name;  // unique within its family ("tiny" exists in every family)
  uint32_t n_vocab;  // used with the built-in vocabulary
  uint32_t n_embd;
  uint32_t n_layer;
  uint32_t n_head;
  uint32_t n_head_kv;
  uint32_t head_dim;  // 0: n_embd / n_head, and no attention.key_length key
  uint32_t n_ff;      // dense FFN width; MoE: the width of each expert
  uint32_t n_expert;  // 0: dense
  uint32_t n_expert_used;
  uint32_t n_ctx;
  float rope_base;
  float rms_eps;   // bert: the LayerNorm epsilon
  uint32_t n_swa;  // gemma2/3: attention.sliding_window

  uint32_t head_size() const { return head_dim ? head_dim : n_embd / n_head; }
  bool moe() const { return n_expert > 0; }
  // The general.architecture the file carries.
  const char* gguf_arch() const;
  // Whether the output projection is tied to token_embd (no output.weight), as in the
  // real files of the family (qwen3, qwen3moe, gemma2, gemma3).
  bool tied() const;
};

// The families gen-model writes, in the order `--help` lists them.
std::vector<std::string> arch_names();
// The preset `name` of family `arch`; with no arch, llama's preset of that name, else
// the only family that has one. nullptr when there is none.
const ModelPreset* find_preset(const std::optional<std::string>& arch, const std::string& name);
// "arch/name" of every preset.
std::vector<std::string> preset_names();
// The names of one family's presets.
std::vector<std::string> preset_names(const std::string& arch);

// A weight type choice: --type value -> llama_ftype and the base tensor type.
struct WeightType {
  const char* name;       // "f32", "q4_k_m", ...
  uint32_t llama_ftype;   // general.file_type
  gguf::TensorType base;  // type of most 2-D weights
};
const WeightType* find_weight_type(const std::string& name);
std::vector<std::string> weight_type_names();

struct GenModelOptions {
  std::optional<std::string> arch;    // unset: llama, or the family of a preset only it has
  std::optional<std::string> preset;  // unset: the family's "tiny"
  std::optional<uint32_t> ctx;        // overrides the preset's context_length
  std::string type = "f32";
  uint64_t seed = 0;
  std::string out;
  std::optional<std::string> vocab_from;  // copy tokenizer.* from this GGUF
  double stddev = 0.02;
  unsigned threads = 0;  // 0: one per core; the bytes do not depend on it
  ProgressFn progress;   // tensor bytes written so far and in all; may be empty
};

// One tensor of the generated model, in file order.
struct PlannedTensor {
  std::string name;
  std::vector<uint64_t> dims;  // ne[0] first
  gguf::TensorType type;
  bool is_norm;  // filled with 1.0 rather than random values
};

// The tensor list (names, shapes, per-tensor types) for a preset and weight type,
// with llama.cpp's Q4_K_M mix and its fallbacks for rows that do not fit a block.
// n_ctx: the context_length written (bert's position_embd has that many rows); 0: the
// preset's.
std::vector<PlannedTensor> plan_tensors(const ModelPreset& p, uint32_t n_vocab, const WeightType& w,
                                        uint32_t n_ctx = 0);

// The <arch>.* hyperparameter keys of a preset (n_ctx: its context_length).
void write_hparams(gguf::GgufWriter& writer, const ModelPreset& p, uint32_t n_vocab,
                   uint32_t n_ctx);

Status generate_model(const GenModelOptions& opts);

}  // namespace hearth::cli
