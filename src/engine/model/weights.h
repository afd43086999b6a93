// The model's tensors, bound in place to the mmapped GGUF file (no copies of matrices).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/hparams.h"
#include "engine/model/kernels_bridge.h"
#include "hearth/gguf/gguf.h"
#include "hearth/status.h"

namespace hearth::engine {

// A 1-D float vector (norm weight or bias). Points into the file when it is F32,
// otherwise into `owned` (converted once at load; these are tiny).
struct VectorWeight {
  const float* data = nullptr;
  std::vector<float> owned;
};

// One layer. Fused tensors (phi3's attn_qkv and gate/up ffn_up) are bound as views
// of their row ranges, so wq/wk/wv and w_gate/w_up are plain matrices either way.
struct LayerWeights {
  VectorWeight attn_norm;
  kb::WeightView wq, wk, wv, wo;
  VectorWeight bq, bk, bv;      // qwen2 only
  VectorWeight q_norm, k_norm;  // qk_norm: head_dim floats each
  VectorWeight post_attn_norm;  // post_norms (gemma)
  VectorWeight ffn_norm;
  VectorWeight post_ffw_norm;           // post_norms (gemma)
  kb::WeightView w_gate, w_up, w_down;  // dense FFN
  // MoE FFN: the router (n_expert rows) and each expert's matrices, views of the
  // 3-D ffn_{gate,up,down}_exps tensors (expert e is the e-th slice).
  kb::WeightView gate_inp;
  std::vector<kb::WeightView> gate_exps, up_exps, down_exps;
  // bert: the attention output's bias, the LayerNorms after the attention and after the
  // FFN (weight and bias), the FFN's biases (w_up / w_down; no gate). A bias whose
  // tensor the file leaves out has data == nullptr.
  VectorWeight bo, attn_out_norm, attn_out_norm_b, ffn_up_b, ffn_down_b;
  VectorWeight layer_out_norm, layer_out_norm_b;
};

struct ModelWeights {
  kb::WeightView token_embd;  // rows = n_vocab, cols = n_embd
  size_t token_embd_row_bytes = 0;
  VectorWeight output_norm;
  kb::WeightView output;  // token_embd when tied
  bool tied = false;
  // Llama 3.1-style per-dimension rope frequency divisors (n_rot / 2 of them); data is
  // null when the file has no rope_freqs.weight.
  VectorWeight rope_freqs;
  std::vector<LayerWeights> layers;
  // bert: learned position embeddings (n_ctx_train rows), row 0 of token_types (every
  // token is "sentence A", as llama.cpp; data == nullptr without the tensor), and the
  // LayerNorm of the embeddings.
  kb::WeightView position_embd;
  VectorWeight type_row0;
  VectorWeight tok_norm, tok_norm_b;
  uint64_t n_params = 0;
  uint64_t n_bytes = 0;
  gguf::TensorType dominant_type = gguf::TensorType::kF32;
};

// Finds every tensor the architecture needs and checks shape and type; errors name
// the tensor.
Result<ModelWeights> bind_weights(const gguf::GgufFile& file, const Hparams& hp);

}  // namespace hearth::engine
