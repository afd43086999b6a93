// Hyperparameters of a llama-family model, read from GGUF metadata (<arch>.* keys).
#pragma once

#include <cstdint>
#include <string>

#include "hearth/gguf/gguf.h"
#include "hearth/status.h"

namespace hearth::engine {

struct Hparams {
  std::string arch;  // "llama" or "qwen2"
  std::string name;
  int32_t n_vocab = 0;  // rows of token_embd
  int32_t n_ctx_train = 0;
  int32_t n_embd = 0;
  int32_t n_layer = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;
  int32_t n_rot = 0;
  int32_t n_ff = 0;
  float rope_base = 10000.0f;
  float rope_freq_scale = 1.0f;  // 1 / linear scaling factor
  std::string rope_scaling_type = "none";
  float rope_scaling_factor = 1.0f;
  float rms_eps = 1e-5f;
  bool rope_neox = false;
  bool has_qkv_bias = false;
  uint32_t file_type = 0;
  bool has_file_type = false;  // general.file_type present; else the dominant tensor type names it

  int32_t kv_dim() const { return n_head_kv * head_dim; }
  int32_t q_dim() const { return n_head * head_dim; }
};

// Reads and validates the hyperparameters; errors name the key.
Result<Hparams> read_hparams(const gguf::GgufFile& file);

// "Q4_K_M" etc. for a llama_ftype, or "" when unknown.
std::string file_type_name(uint32_t file_type);

}  // namespace hearth::engine
