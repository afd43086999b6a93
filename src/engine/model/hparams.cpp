#include "engine/model/hparams.h"

#include <algorithm>
#include <iterator>
#include <string_view>

namespace hearth::engine {
namespace {

Result<int32_t> read_positive(const gguf::GgufFile& f, const std::string& key) {
  auto v = f.get_u64(key);
  if (!v.ok()) {
    if (v.status().code() == ErrorCode::kNotFound) {
      return InvalidArgument("model metadata is missing required key " + key);
    }
    return v.status();
  }
  if (*v == 0 || *v > (1u << 30)) {
    return InvalidArgument("model metadata key " + key + " has out-of-range value " +
                           std::to_string(*v));
  }
  return static_cast<int32_t>(*v);
}

}  // namespace

std::string file_type_name(uint32_t ft) {
  switch (ft) {
    case 0:
      return "F32";
    case 1:
      return "F16";
    case 2:
      return "Q4_0";
    case 3:
      return "Q4_1";
    case 7:
      return "Q8_0";
    case 8:
      return "Q5_0";
    case 9:
      return "Q5_1";
    case 10:
      return "Q2_K";
    case 11:
      return "Q3_K_S";
    case 12:
      return "Q3_K_M";
    case 13:
      return "Q3_K_L";
    case 14:
      return "Q4_K_S";
    case 15:
      return "Q4_K_M";
    case 16:
      return "Q5_K_S";
    case 17:
      return "Q5_K_M";
    case 18:
      return "Q6_K";
    case 32:
      return "BF16";
    default:
      return "";
  }
}

Result<Hparams> read_hparams(const gguf::GgufFile& f) {
  Hparams hp;
  hp.arch = f.architecture();
  if (hp.arch.empty()) return InvalidArgument("model metadata has no general.architecture");
  static constexpr std::string_view kArchs[] = {"llama", "qwen2",  "qwen3",  "qwen3moe",
                                                "phi3",  "gemma2", "gemma3", "bert"};
  if (std::find(std::begin(kArchs), std::end(kArchs), hp.arch) == std::end(kArchs)) {
    return Unsupported("unsupported architecture '" + hp.arch +
                       "' (supported: llama, qwen2, qwen3, qwen3moe, phi3, gemma2, gemma3, bert)");
  }
  const std::string a = hp.arch + ".";
  hp.rope_neox = hp.arch != "llama";
  hp.has_qkv_bias = hp.arch == "qwen2";
  auto name = f.get_string("general.name");
  hp.name = name.ok() ? *name : "";

  HEARTH_ASSIGN_OR_RETURN(hp.n_embd, read_positive(f, a + "embedding_length"));
  HEARTH_ASSIGN_OR_RETURN(hp.n_layer, read_positive(f, a + "block_count"));
  HEARTH_ASSIGN_OR_RETURN(hp.n_ff, read_positive(f, a + "feed_forward_length"));
  HEARTH_ASSIGN_OR_RETURN(hp.n_head, read_positive(f, a + "attention.head_count"));
  HEARTH_ASSIGN_OR_RETURN(hp.n_ctx_train, read_positive(f, a + "context_length"));
  if (f.has(a + "attention.head_count_kv")) {
    HEARTH_ASSIGN_OR_RETURN(hp.n_head_kv, read_positive(f, a + "attention.head_count_kv"));
  } else {
    hp.n_head_kv = hp.n_head;
  }
  if (hp.n_head % hp.n_head_kv != 0) {
    return InvalidArgument(a + "attention.head_count " + std::to_string(hp.n_head) +
                           " is not a multiple of " + a + "attention.head_count_kv " +
                           std::to_string(hp.n_head_kv));
  }
  // The head size: attention.key_length when given (Mistral-Nemo, Qwen3, Gemma: it
  // may differ from n_embd / n_head), else n_embd / n_head.
  if (f.has(a + "attention.key_length")) {
    HEARTH_ASSIGN_OR_RETURN(hp.head_dim, read_positive(f, a + "attention.key_length"));
  } else if (hp.n_embd % hp.n_head != 0) {
    return InvalidArgument(a + "embedding_length " + std::to_string(hp.n_embd) +
                           " is not a multiple of " + a + "attention.head_count " +
                           std::to_string(hp.n_head) + " and there is no " + a +
                           "attention.key_length");
  } else {
    hp.head_dim = hp.n_embd / hp.n_head;
  }
  if (f.has(a + "attention.value_length")) {
    HEARTH_ASSIGN_OR_RETURN(int32_t vl, read_positive(f, a + "attention.value_length"));
    if (vl != hp.head_dim) {
      return Unsupported(a + "attention.value_length " + std::to_string(vl) +
                         " differs from the key head size " + std::to_string(hp.head_dim) +
                         " (not supported)");
    }
  }
  if (f.has(a + "rope.dimension_count")) {
    HEARTH_ASSIGN_OR_RETURN(hp.n_rot, read_positive(f, a + "rope.dimension_count"));
  } else {
    hp.n_rot = hp.head_dim;
  }
  if (hp.n_rot > hp.head_dim || hp.n_rot % 2 != 0) {
    return InvalidArgument(a + "rope.dimension_count " + std::to_string(hp.n_rot) +
                           " must be even and at most the head dimension " +
                           std::to_string(hp.head_dim));
  }
  HEARTH_ASSIGN_OR_RETURN(hp.rope_base, f.get_f32_or(a + "rope.freq_base", 10000.0f));
  if (!(hp.rope_base > 0)) return InvalidArgument(a + "rope.freq_base must be positive");
  HEARTH_ASSIGN_OR_RETURN(hp.rms_eps, f.get_f32_or(a + "attention.layer_norm_rms_epsilon", 1e-5f));
  if (!(hp.rms_eps > 0)) {
    return InvalidArgument(a + "attention.layer_norm_rms_epsilon must be positive");
  }

  // Rope scaling: "linear" divides positions by the factor; older files use
  // rope.scale_linear.
  float factor = 1.0f;
  std::string type = "none";
  if (f.has(a + "rope.scaling.type")) {
    HEARTH_ASSIGN_OR_RETURN(type, f.get_string(a + "rope.scaling.type"));
    HEARTH_ASSIGN_OR_RETURN(factor, f.get_f32_or(a + "rope.scaling.factor", 1.0f));
  } else if (f.has(a + "rope.scale_linear")) {
    HEARTH_ASSIGN_OR_RETURN(factor, f.get_f32(a + "rope.scale_linear"));
    type = "linear";
  }
  if (factor == 0.0f) factor = 1.0f;  // llama.cpp treats 0 as "no scaling"
  if (type == "none") {
    factor = 1.0f;
  } else if (type != "linear" && factor != 1.0f) {
    return Unsupported(a + "rope.scaling.type '" + type + "' is not supported (only linear)");
  }
  if (!(factor > 0)) return InvalidArgument(a + "rope.scaling.factor must be positive");
  // YaRN / LongRoPE magnitude scaling (cos and sin times attn_factor) is not implemented.
  HEARTH_ASSIGN_OR_RETURN(const float attn_factor,
                          f.get_f32_or(a + "rope.scaling.attn_factor", 1.0f));
  if (attn_factor != 1.0f) {
    return Unsupported(a + "rope.scaling.attn_factor " + std::to_string(attn_factor) +
                       " is not supported (only 1)");
  }
  // Phi-3 LongRoPE's per-dimension factors: not implemented.
  for (const char* t : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
    if (f.tensor(t) != nullptr) {
      return Unsupported(std::string("tensor ") + t + " (LongRoPE scaling) is not supported");
    }
  }
  hp.rope_scaling_type = type;
  hp.rope_scaling_factor = factor;
  hp.rope_freq_scale = 1.0f / factor;

  hp.has_file_type = f.find("general.file_type") != nullptr;
  auto ft = f.get_u64_or("general.file_type", 0);
  hp.file_type = ft.ok() ? static_cast<uint32_t>(*ft) : 0;

  const gguf::TensorInfo* emb = f.tensor("token_embd.weight");
  if (emb == nullptr) return InvalidArgument("model is missing tensor token_embd.weight");
  if (emb->dims.size() != 2) {
    return InvalidArgument("tensor token_embd.weight must have 2 dimensions");
  }
  hp.n_vocab = static_cast<int32_t>(emb->dims[1]);
  HEARTH_RETURN_IF_ERROR(read_arch_features(f, hp));
  return hp;
}

}  // namespace hearth::engine
