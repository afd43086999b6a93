// The per-architecture part of the hyperparameters: which features the forward pass
// switches on for each architecture, as llama.cpp builds its graph, and the metadata
// this engine refuses (an error naming the key) rather than ignore.
#include <cmath>
#include <initializer_list>
#include <string_view>

#include "engine/model/hparams.h"

namespace hearth::engine {
namespace {

bool is(const Hparams& hp, std::initializer_list<std::string_view> archs) {
  for (std::string_view a : archs)
    if (hp.arch == a) return true;
  return false;
}

Result<int32_t> read_count(const gguf::GgufFile& f, const std::string& key, uint64_t max) {
  auto v = f.get_u64(key);
  if (!v.ok()) {
    if (v.status().code() == ErrorCode::kNotFound) {
      return InvalidArgument("model metadata is missing required key " + key);
    }
    return v.status();
  }
  if (*v > max) {
    return InvalidArgument("model metadata key " + key + " has out-of-range value " +
                           std::to_string(*v));
  }
  return static_cast<int32_t>(*v);
}

Status refuse(const std::string& key, const std::string& why) {
  return Unsupported("model metadata key " + key + " is not supported: " + why);
}

// Keys whose presence (with a value that changes the model) this engine cannot honour
// for the architecture.
Status refuse_foreign_keys(const gguf::GgufFile& f, const Hparams& hp) {
  const std::string a = hp.arch + ".";
  if (!is(hp, {"gemma2", "gemma3", "phi3"}) && f.has(a + "attention.sliding_window")) {
    return refuse(a + "attention.sliding_window",
                  "sliding-window attention is implemented for gemma2 and gemma3 only");
  }
  for (const char* k : {"attn_logit_softcapping", "final_logit_softcapping"}) {
    if (hp.arch != "gemma2" && f.has(a + k)) {
      return refuse(a + k, "logit soft-capping is implemented for gemma2 only");
    }
  }
  if (!is(hp, {"llama", "qwen3moe"}) && f.has(a + "expert_count")) {
    HEARTH_ASSIGN_OR_RETURN(uint64_t n, f.get_u64_or(a + "expert_count", 0));
    if (n > 0) return refuse(a + "expert_count", "experts are implemented for llama and qwen3moe");
  }
  HEARTH_ASSIGN_OR_RETURN(uint64_t shared, f.get_u64_or(a + "expert_shared_count", 0));
  if (shared > 0) return refuse(a + "expert_shared_count", "shared experts are not implemented");
  if (f.has(a + "expert_gating_func")) {
    // llama_expert_gating_func_type: 1 = softmax (the only one implemented).
    HEARTH_ASSIGN_OR_RETURN(uint64_t g, f.get_u64(a + "expert_gating_func"));
    if (g != 1) {
      return refuse(a + "expert_gating_func",
                    "gating function " + std::to_string(g) + " (only 1, softmax)");
    }
  }
  HEARTH_ASSIGN_OR_RETURN(float w_scale, f.get_f32_or(a + "expert_weights_scale", 1.0f));
  if (w_scale != 1.0f) {
    return refuse(a + "expert_weights_scale", "expert weight scaling " + std::to_string(w_scale));
  }
  HEARTH_ASSIGN_OR_RETURN(bool w_norm, f.get_bool_or(a + "expert_weights_norm", true));
  if (!w_norm) {
    return refuse(a + "expert_weights_norm", "unnormalized expert weights are not implemented");
  }
  if (hp.arch != "gemma3" && f.has(a + "rope.freq_base_swa")) {
    return refuse(a + "rope.freq_base_swa", "a second rope base is implemented for gemma3 only");
  }
  if (f.has(a + "attention.sliding_window_pattern")) {
    return refuse(a + "attention.sliding_window_pattern",
                  "the sliding-window layer pattern is fixed per architecture");
  }
  return OkStatus();
}

Status read_experts(const gguf::GgufFile& f, Hparams& hp) {
  const std::string a = hp.arch + ".";
  if (hp.arch == "llama" && !f.has(a + "expert_count")) return OkStatus();  // dense
  HEARTH_ASSIGN_OR_RETURN(hp.n_expert, read_count(f, a + "expert_count", 1024));
  if (hp.n_expert == 0) {
    if (hp.arch == "qwen3moe") return InvalidArgument(a + "expert_count must be positive");
    return OkStatus();
  }
  HEARTH_ASSIGN_OR_RETURN(hp.n_expert_used, read_count(f, a + "expert_used_count", 1024));
  if (hp.n_expert_used < 1 || hp.n_expert_used > hp.n_expert) {
    return InvalidArgument(a + "expert_used_count " + std::to_string(hp.n_expert_used) +
                           " must be in [1, " + a + "expert_count " + std::to_string(hp.n_expert) +
                           "]");
  }
  // llama (Mixtral): the experts have feed_forward_length; qwen3moe: its own key, or
  // (as llama.cpp) feed_forward_length / expert_used_count without it.
  hp.n_ff_exp = hp.n_ff;
  if (hp.arch == "qwen3moe") {
    HEARTH_ASSIGN_OR_RETURN(uint64_t ff, f.get_u64_or(a + "expert_feed_forward_length", 0));
    hp.n_ff_exp = ff > 0 ? static_cast<int32_t>(ff) : hp.n_ff / hp.n_expert_used;
    if (ff > (1u << 30) || hp.n_ff_exp < 1) {
      return InvalidArgument(a + "expert_feed_forward_length is out of range");
    }
  }
  return OkStatus();
}

Status read_gemma(const gguf::GgufFile& f, Hparams& hp) {
  const std::string a = hp.arch + ".";
  hp.post_norms = true;
  hp.gelu = true;
  hp.embd_scale = std::sqrt(static_cast<float>(hp.n_embd));
  // llama.cpp scales Q by 1/sqrt(head_dim), except for the 27B models (46 / 62 layers),
  // whose query_pre_attn_scalar is n_embd / n_head.
  const bool is_27b = hp.n_layer == (hp.arch == "gemma2" ? 46 : 62);
  hp.q_scale = 1.0f / std::sqrt(static_cast<float>(is_27b ? hp.n_embd / hp.n_head : hp.head_dim));
  HEARTH_ASSIGN_OR_RETURN(hp.n_swa, read_count(f, a + "attention.sliding_window", 1u << 30));
  if (hp.arch == "gemma2") {
    // Even layers slide, odd layers are global; both use the one rope.
    hp.swa_period = 2;
    hp.rope_base_swa = hp.rope_base;
    hp.rope_freq_scale_swa = hp.rope_freq_scale;
    HEARTH_ASSIGN_OR_RETURN(hp.attn_softcap, f.get_f32_or(a + "attn_logit_softcapping", 50.0f));
    HEARTH_ASSIGN_OR_RETURN(hp.final_softcap, f.get_f32_or(a + "final_logit_softcapping", 30.0f));
    if (!(hp.attn_softcap >= 0) || !(hp.final_softcap >= 0)) {
      return InvalidArgument(a + "attn_logit_softcapping and final_logit_softcapping must be >= 0");
    }
  } else {
    // Every 6th layer is global (rope.freq_base and the file's scaling); the sliding
    // ones use base 10000 without scaling.
    hp.qk_norm = true;
    hp.swa_period = 6;
    HEARTH_ASSIGN_OR_RETURN(hp.rope_base_swa, f.get_f32_or(a + "rope.freq_base_swa", 10000.0f));
    if (!(hp.rope_base_swa > 0)) return InvalidArgument(a + "rope.freq_base_swa must be positive");
    hp.rope_freq_scale_swa = 1.0f;
  }
  return OkStatus();
}

// pooling_type (any architecture), and bert's encoder keys.
Status read_embedding_keys(const gguf::GgufFile& f, Hparams& hp) {
  const std::string a = hp.arch + ".";
  if (f.has(a + "pooling_type")) {
    HEARTH_ASSIGN_OR_RETURN(const uint64_t p, f.get_u64(a + "pooling_type"));
    if (p > 3) {
      return refuse(a + "pooling_type", "pooling type " + std::to_string(p) +
                                            " (implemented: 0 none, 1 mean, 2 cls, 3 last)");
    }
    hp.pooling_type = static_cast<int32_t>(p);
  }
  if (hp.arch != "bert") {
    HEARTH_ASSIGN_OR_RETURN(const bool causal, f.get_bool_or(a + "attention.causal", true));
    if (!causal) return refuse(a + "attention.causal", "non-causal attention is bert's only");
    return OkStatus();
  }
  hp.encoder = true;
  hp.has_qkv_bias = true;
  HEARTH_ASSIGN_OR_RETURN(hp.causal, f.get_bool_or(a + "attention.causal", false));
  if (!f.has(a + "attention.layer_norm_epsilon")) {
    return InvalidArgument("model metadata is missing required key " + a +
                           "attention.layer_norm_epsilon");
  }
  HEARTH_ASSIGN_OR_RETURN(hp.ln_eps, f.get_f32(a + "attention.layer_norm_epsilon"));
  if (!(hp.ln_eps > 0)) return InvalidArgument(a + "attention.layer_norm_epsilon must be positive");
  if (hp.n_head_kv != hp.n_head) {
    return refuse(a + "attention.head_count_kv", "bert's heads all have their own K and V");
  }
  for (const char* t : {"cls.weight", "cls.output.weight"}) {
    if (f.tensor(t) != nullptr) {
      return Unsupported(std::string("tensor ") + t +
                         " (a classifier head, rank pooling) is not supported");
    }
  }
  return OkStatus();
}

}  // namespace

Status read_arch_features(const gguf::GgufFile& f, Hparams& hp) {
  HEARTH_RETURN_IF_ERROR(refuse_foreign_keys(f, hp));
  if (is(hp, {"llama", "qwen3moe"})) HEARTH_RETURN_IF_ERROR(read_experts(f, hp));
  if (is(hp, {"qwen3", "qwen3moe"})) hp.qk_norm = true;
  if (hp.arch == "phi3") {
    // attn_qkv and the gate/up ffn_up are fused; Q is scaled before QK^T. A
    // phi3.attention.sliding_window is accepted and not applied: llama.cpp disables
    // Phi-3's sliding window too (its converters do not fill it in reliably).
    hp.fused_qkv = true;
    hp.fused_gate_up = true;
    hp.q_scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
  }
  if (is(hp, {"gemma2", "gemma3"})) HEARTH_RETURN_IF_ERROR(read_gemma(f, hp));
  HEARTH_RETURN_IF_ERROR(read_embedding_keys(f, hp));
  return OkStatus();
}

}  // namespace hearth::engine
