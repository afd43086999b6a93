// Hyperparameters of a model, read from GGUF metadata (<arch>.* keys), and the
// architecture's features the forward pass switches on.
#pragma once

#include <cstdint>
#include <string>

#include "hearth/gguf/gguf.h"
#include "hearth/status.h"

namespace hearth::engine {

struct Hparams {
  // "llama", "qwen2", "qwen3", "qwen3moe", "phi3", "gemma2", "gemma3" or "bert"
  std::string arch;
  std::string name;
  int32_t n_vocab = 0;  // rows of token_embd
  int32_t n_ctx_train = 0;
  int32_t n_embd = 0;
  int32_t n_layer = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;  // attention.key_length (= value_length), else n_embd / n_head
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

  // Architecture features (hparams_arch.cpp sets them per architecture).
  bool qk_norm = false;        // qwen3, gemma3: per-head RMSNorm of Q and K before RoPE
  bool post_norms = false;     // gemma2/3: post_attention_norm and post_ffw_norm
  bool fused_qkv = false;      // phi3: one attn_qkv tensor (Q rows, then K, then V)
  bool fused_gate_up = false;  // phi3: one ffn_up tensor (gate rows, then up rows)
  bool gelu = false;           // gemma: tanh GELU (ggml's F16 table) in place of SiLU
  float embd_scale = 0.0f;     // gemma: embeddings times sqrt(n_embd); 0: none
  // > 0: Q is multiplied by this before its F16 rounding and the softmax scale is 1
  // (gemma, phi3); 0: the scores are scaled by 1/sqrt(head_dim) in the softmax.
  float q_scale = 0.0f;
  float attn_softcap = 0.0f;   // gemma2: scores -> c * tanh(scores / c) before the mask
  float final_softcap = 0.0f;  // gemma2: the same on the logits
  // Sliding-window attention: layer l attends to the last n_swa positions when
  // l % swa_period != swa_period - 1 (gemma2: period 2, gemma3: 6); those layers use
  // rope_base_swa and rope_freq_scale_swa.
  int32_t n_swa = 0;
  int32_t swa_period = 0;
  float rope_base_swa = 10000.0f;
  float rope_freq_scale_swa = 1.0f;
  // Mixture of experts (qwen3moe, llama with experts): softmax router, top
  // n_expert_used, weights renormalized; experts are SwiGLU FFNs of width n_ff_exp.
  int32_t n_expert = 0;
  int32_t n_expert_used = 0;
  int32_t n_ff_exp = 0;
  // bert (bert.cpp): an encoder: learned position embeddings (position_embd), LayerNorm
  // with bias (eps attention.layer_norm_epsilon) after the embeddings and after each
  // residual add, biases on every matrix, a GELU FFN without gate, no output head.
  bool encoder = false;
  float ln_eps = 1e-12f;
  // attention.causal: false (bert's default) lets every token of a sequence attend to
  // the whole sequence; the sequence must then be evaluated in one forward chunk.
  bool causal = true;
  // <arch>.pooling_type (llama_pooling_type 0..3), -1 when the file does not say.
  int32_t pooling_type = -1;

  int32_t kv_dim() const { return n_head_kv * head_dim; }
  int32_t q_dim() const { return n_head * head_dim; }
  bool is_moe() const { return n_expert > 0; }
  bool layer_slides(int32_t l) const { return n_swa > 0 && l % swa_period != swa_period - 1; }
  // The FFN width the scratch needs per token.
  int32_t ffn_width() const { return is_moe() ? n_expert_used * n_ff_exp : n_ff; }
};

// Reads and validates the hyperparameters; errors name the key.
Result<Hparams> read_hparams(const gguf::GgufFile& file);

// The architecture-specific part of read_hparams (hparams_arch.cpp): sets the
// features above for hp.arch from its keys, and refuses (naming the key) metadata
// this engine does not implement for it.
Status read_arch_features(const gguf::GgufFile& file, Hparams& hp);

// "Q4_K_M" etc. for a llama_ftype, or "" when unknown.
std::string file_type_name(uint32_t file_type);

}  // namespace hearth::engine
