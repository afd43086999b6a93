// `hearth gen-model`: writes a llama-architecture GGUF with seeded random weights.
// The same options always produce the same bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hearth/gguf/gguf.h"
#include "hearth/status.h"

namespace hearth::cli {

struct ModelPreset {
  const char* name;
  uint32_t n_vocab;  // used with the built-in vocabulary
  uint32_t n_embd;
  uint32_t n_layer;
  uint32_t n_head;
  uint32_t n_head_kv;
  uint32_t n_ff;
  uint32_t n_ctx;
  float rope_base;
  float rms_eps;
};

// "tiny", "small", "tinyllama-1.1b"; nullptr for an unknown name.
const ModelPreset* find_preset(const std::string& name);
std::vector<std::string> preset_names();

// A weight type choice: --type value -> llama_ftype and the base tensor type.
struct WeightType {
  const char* name;       // "f32", "q4_k_m", ...
  uint32_t llama_ftype;   // general.file_type
  gguf::TensorType base;  // type of most 2-D weights
};
const WeightType* find_weight_type(const std::string& name);
std::vector<std::string> weight_type_names();

struct GenModelOptions {
  std::string preset = "tiny";
  std::string type = "f32";
  uint64_t seed = 0;
  std::string out;
  std::optional<std::string> vocab_from;  // copy tokenizer.* from this GGUF
  double stddev = 0.02;
  unsigned threads = 0;  // 0: one per core; the bytes do not depend on it
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
std::vector<PlannedTensor> plan_tensors(const ModelPreset& p, uint32_t n_vocab,
                                        const WeightType& w);

Status generate_model(const GenModelOptions& opts);

}  // namespace hearth::cli
