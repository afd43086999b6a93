// What a gen-model file holds for each family: its tensors (names and shapes as the
// engine and llama.cpp bind them, per-tensor types with llama.cpp's Q4_K_M rules) and
// its <arch>.* hyperparameter keys.
#include <string_view>

#include "cli/gen_model.h"

namespace hearth::cli {
namespace {

using gguf::TensorType;

// llama.cpp's use_more_bits(): the first and last eighth of the layers, and every
// third layer in between, get the bigger type in the *_K_M mixes.
bool use_more_bits(uint32_t i, uint32_t n) {
  return i < n / 8 || i >= 7 * n / 8 || (i >= n / 8 && (i - n / 8) % 3 == 2);
}

// When a row does not divide into the chosen type's blocks, llama.cpp falls back
// to a type with 32-element blocks, and to F16 when even that does not fit.
TensorType fit_row(TensorType t, uint64_t ne0) {
  const gguf::TypeTraits* tr = gguf::type_traits(t);
  if (ne0 % tr->block_size == 0) return t;
  TensorType fallback = TensorType::kF16;
  switch (t) {
    case TensorType::kQ4_K:
      fallback = TensorType::kQ5_0;
      break;
    case TensorType::kQ5_K:
      fallback = TensorType::kQ5_1;
      break;
    case TensorType::kQ6_K:
      fallback = TensorType::kQ8_0;
      break;
    default:
      break;
  }
  return ne0 % gguf::type_traits(fallback)->block_size == 0 ? fallback : TensorType::kF16;
}

// Roles: the llama tensor names without "blk.N." and ".weight"; expert tensors take
// their dense counterpart's role (ffn_down_exps: ffn_down), and a tied token_embd
// takes the output projection's.
TensorType weight_type_for(const WeightType& w, std::string_view role, uint32_t layer,
                           uint32_t n_layer) {
  if (w.base == TensorType::kF32 || w.base == TensorType::kF16 || w.base == TensorType::kBF16 ||
      w.base == TensorType::kQ8_0) {
    return w.base;
  }
  if (role == "output") return TensorType::kQ6_K;  // llama.cpp's rule for every 4/5-bit mix
  if (w.llama_ftype == 15 && (role == "attn_v" || role == "ffn_down") &&
      use_more_bits(layer, n_layer)) {
    return TensorType::kQ6_K;
  }
  return w.base;
}

// bert, as llama.cpp's converter names its tensors: embeddings (token, type, position)
// and their LayerNorm; per layer Q, K, V, output and the FFN's up and down, each with a
// bias, and the two LayerNorms (weight 1, random bias).
std::vector<PlannedTensor> plan_bert(const ModelPreset& p, uint32_t n_vocab, const WeightType& w,
                                     uint32_t n_ctx) {
  const uint64_t embd = p.n_embd, ff = p.n_ff;
  std::vector<PlannedTensor> out;
  auto weight = [&](std::string name, std::string_view role, uint32_t layer,
                    std::vector<uint64_t> dims) {
    const TensorType t = fit_row(weight_type_for(w, role, layer, p.n_layer), dims[0]);
    out.push_back({std::move(name), std::move(dims), t, false});
  };
  auto vec = [&](std::string name, uint64_t n, bool one) {
    out.push_back({std::move(name), {n}, TensorType::kF32, one});
  };
  weight("token_embd.weight", "token_embd", 0, {embd, n_vocab});
  out.push_back({"token_types.weight", {embd, 2}, TensorType::kF32, false});
  out.push_back({"position_embd.weight", {embd, n_ctx}, TensorType::kF32, false});
  vec("token_embd_norm.weight", embd, true);
  vec("token_embd_norm.bias", embd, false);
  for (uint32_t i = 0; i < p.n_layer; ++i) {
    const std::string blk = "blk." + std::to_string(i) + ".";
    for (const char* m : {"attn_q", "attn_k", "attn_v"}) {
      weight(blk + m + ".weight", m, i, {embd, embd});
      vec(blk + m + ".bias", embd, false);
    }
    weight(blk + "attn_output.weight", "attn_output", i, {embd, embd});
    vec(blk + "attn_output.bias", embd, false);
    vec(blk + "attn_output_norm.weight", embd, true);
    vec(blk + "attn_output_norm.bias", embd, false);
    weight(blk + "ffn_up.weight", "ffn_up", i, {embd, ff});
    vec(blk + "ffn_up.bias", ff, false);
    weight(blk + "ffn_down.weight", "ffn_down", i, {ff, embd});
    vec(blk + "ffn_down.bias", embd, false);
    vec(blk + "layer_output_norm.weight", embd, true);
    vec(blk + "layer_output_norm.bias", embd, false);
  }
  return out;
}

}  // namespace

std::vector<PlannedTensor> plan_tensors(const ModelPreset& p, uint32_t n_vocab, const WeightType& w,
                                        uint32_t n_ctx) {
  const std::string_view arch = p.arch;
  if (arch == "bert") return plan_bert(p, n_vocab, w, n_ctx > 0 ? n_ctx : p.n_ctx);
  const bool gemma = arch == "gemma2" || arch == "gemma3";
  const bool qk_norm = arch == "qwen3" || arch == "qwen3moe" || arch == "gemma3";
  const uint64_t embd = p.n_embd, hd = p.head_size();
  const uint64_t q = hd * p.n_head, kv = hd * p.n_head_kv, ff = p.n_ff, n_exp = p.n_expert;
  std::vector<PlannedTensor> out;
  auto weight = [&](std::string name, std::string_view role, uint32_t layer,
                    std::vector<uint64_t> dims) {
    const TensorType t = fit_row(weight_type_for(w, role, layer, p.n_layer), dims[0]);
    out.push_back({std::move(name), std::move(dims), t, false});
  };
  // Norms, and the MoE router (llama.cpp keeps it F32 in every mix; random, not 1).
  auto norm = [&](std::string name, uint64_t n) {
    out.push_back({std::move(name), {n}, TensorType::kF32, true});
  };
  auto router = [&](std::string name) {
    out.push_back({std::move(name), {embd, n_exp}, TensorType::kF32, false});
  };
  weight("token_embd.weight", p.tied() ? "output" : "token_embd", 0, {embd, n_vocab});
  for (uint32_t i = 0; i < p.n_layer; ++i) {
    const std::string blk = "blk." + std::to_string(i) + ".";
    norm(blk + "attn_norm.weight", embd);
    if (arch == "phi3") {
      weight(blk + "attn_qkv.weight", "attn_qkv", i, {embd, q + 2 * kv});
    } else {
      weight(blk + "attn_q.weight", "attn_q", i, {embd, q});
      weight(blk + "attn_k.weight", "attn_k", i, {embd, kv});
      weight(blk + "attn_v.weight", "attn_v", i, {embd, kv});
    }
    if (qk_norm) {
      norm(blk + "attn_q_norm.weight", hd);
      norm(blk + "attn_k_norm.weight", hd);
    }
    weight(blk + "attn_output.weight", "attn_output", i, {q, embd});
    if (gemma) norm(blk + "post_attention_norm.weight", embd);
    norm(blk + "ffn_norm.weight", embd);
    if (p.moe()) {
      router(blk + "ffn_gate_inp.weight");
      weight(blk + "ffn_gate_exps.weight", "ffn_gate", i, {embd, ff, n_exp});
      weight(blk + "ffn_up_exps.weight", "ffn_up", i, {embd, ff, n_exp});
      weight(blk + "ffn_down_exps.weight", "ffn_down", i, {ff, embd, n_exp});
    } else if (arch == "phi3") {
      weight(blk + "ffn_up.weight", "ffn_up", i, {embd, 2 * ff});  // gate rows, then up rows
      weight(blk + "ffn_down.weight", "ffn_down", i, {ff, embd});
    } else {
      weight(blk + "ffn_gate.weight", "ffn_gate", i, {embd, ff});
      weight(blk + "ffn_up.weight", "ffn_up", i, {embd, ff});
      weight(blk + "ffn_down.weight", "ffn_down", i, {ff, embd});
    }
    if (gemma) norm(blk + "post_ffw_norm.weight", embd);
  }
  norm("output_norm.weight", embd);
  if (!p.tied()) weight("output.weight", "output", 0, {embd, n_vocab});
  return out;
}

void write_hparams(gguf::GgufWriter& writer, const ModelPreset& p, uint32_t n_vocab,
                   uint32_t n_ctx) {
  const std::string_view family = p.arch;
  const std::string a = std::string(p.gguf_arch()) + ".";
  if (family == "bert") {
    writer.set_u32(a + "context_length", n_ctx);
    writer.set_u32(a + "embedding_length", p.n_embd);
    writer.set_u32(a + "block_count", p.n_layer);
    writer.set_u32(a + "feed_forward_length", p.n_ff);
    writer.set_u32(a + "attention.head_count", p.n_head);
    writer.set_f32(a + "attention.layer_norm_epsilon", p.rms_eps);
    writer.set(a + "attention.causal", gguf::Value::boolean(false));
    // bge's pooling ([CLS]); requests and the model settings may choose another.
    writer.set_u32(a + "pooling_type", 2);
    return;
  }
  writer.set_u32(a + "vocab_size", n_vocab);
  writer.set_u32(a + "context_length", n_ctx);
  writer.set_u32(a + "embedding_length", p.n_embd);
  writer.set_u32(a + "block_count", p.n_layer);
  // Qwen3-MoE files carry the dense-equivalent width (experts used x expert width)
  // besides the expert width, as the published ones do.
  writer.set_u32(a + "feed_forward_length",
                 family == "qwen3moe" ? p.n_ff * p.n_expert_used : p.n_ff);
  writer.set_u32(a + "attention.head_count", p.n_head);
  writer.set_u32(a + "attention.head_count_kv", p.n_head_kv);
  writer.set_f32(a + "rope.freq_base", p.rope_base);
  writer.set_u32(a + "rope.dimension_count", p.head_size());
  writer.set_f32(a + "attention.layer_norm_rms_epsilon", p.rms_eps);
  if (p.head_dim != 0) {
    writer.set_u32(a + "attention.key_length", p.head_dim);
    writer.set_u32(a + "attention.value_length", p.head_dim);
  }
  if (p.moe()) {
    writer.set_u32(a + "expert_count", p.n_expert);
    writer.set_u32(a + "expert_used_count", p.n_expert_used);
    if (family == "qwen3moe") writer.set_u32(a + "expert_feed_forward_length", p.n_ff);
  }
  if (p.n_swa > 0) writer.set_u32(a + "attention.sliding_window", p.n_swa);
  if (family == "gemma2") {
    // Gemma 2's published soft-caps.
    writer.set_f32(a + "attn_logit_softcapping", 50.0f);
    writer.set_f32(a + "final_logit_softcapping", 30.0f);
  }
}

}  // namespace hearth::cli
