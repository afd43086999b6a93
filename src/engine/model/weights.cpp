#include "engine/model/weights.h"

#include <map>

#include "hearth/engine/fp16.h"

namespace hearth::engine {
namespace {

std::string dims_string(const std::vector<uint64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

class Binder {
 public:
  Binder(const gguf::GgufFile& f, ModelWeights& w) : f_(f), w_(w) {}

  Result<const gguf::TensorInfo*> find(const std::string& name, const std::vector<uint64_t>& dims) {
    const gguf::TensorInfo* t = f_.tensor(name);
    if (t == nullptr) return InvalidArgument("model is missing tensor " + name);
    if (t->dims != dims) {
      return InvalidArgument("tensor " + name + " has shape " + dims_string(t->dims) +
                             ", expected " + dims_string(dims));
    }
    return t;
  }

  // A matrix with cols = ne0 (contiguous), rows = ne1.
  Status matrix(const std::string& name, int64_t cols, int64_t rows, kb::WeightView& out) {
    return rows_of(name, cols, rows, /*row0=*/0, rows, /*counted=*/false, out);
  }

  // Rows [row0, row0 + rows) of a matrix tensor with cols = ne0 and total_rows = ne1
  // (a fused tensor's part); `counted` says whether the tensor was already counted.
  Status rows_of(const std::string& name, int64_t cols, int64_t total_rows, int64_t row0,
                 int64_t rows, bool counted, kb::WeightView& out) {
    HEARTH_ASSIGN_OR_RETURN(
        const gguf::TensorInfo* t,
        find(name, {static_cast<uint64_t>(cols), static_cast<uint64_t>(total_rows)}));
    if (!kb::type_supported(t->type)) {
      return Unsupported("tensor " + name + " has unsupported type " +
                         gguf::tensor_type_name(t->type));
    }
    out.type = t->type;
    out.rows = rows;
    out.cols = cols;
    out.data = t->data + static_cast<size_t>(row0) * gguf::row_bytes(t->type, cols);
    if (!counted) count(*t);
    return OkStatus();
  }

  // The n expert matrices (cols = ne0, rows = ne1) of a 3-D [cols, rows, n] tensor.
  Status experts(const std::string& name, int64_t cols, int64_t rows, int64_t n,
                 std::vector<kb::WeightView>& out) {
    HEARTH_ASSIGN_OR_RETURN(const gguf::TensorInfo* t,
                            find(name, {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows),
                                        static_cast<uint64_t>(n)}));
    if (!kb::type_supported(t->type)) {
      return Unsupported("tensor " + name + " has unsupported type " +
                         gguf::tensor_type_name(t->type));
    }
    const size_t bytes = gguf::row_bytes(t->type, cols) * static_cast<size_t>(rows);
    out.assign(static_cast<size_t>(n), kb::WeightView{});
    for (int64_t e = 0; e < n; ++e) {
      kb::WeightView& v = out[static_cast<size_t>(e)];
      v.type = t->type;
      v.rows = rows;
      v.cols = cols;
      v.data = t->data + static_cast<size_t>(e) * bytes;
    }
    count(*t);
    return OkStatus();
  }

  Status vector(const std::string& name, int64_t n, VectorWeight& out) {
    HEARTH_ASSIGN_OR_RETURN(const gguf::TensorInfo* t, find(name, {static_cast<uint64_t>(n)}));
    count(*t);
    if (t->type == gguf::TensorType::kF32) {
      out.data = reinterpret_cast<const float*>(t->data);
      return OkStatus();
    }
    if (t->type != gguf::TensorType::kF16 && t->type != gguf::TensorType::kBF16) {
      return Unsupported("tensor " + name + " has unsupported type " +
                         gguf::tensor_type_name(t->type) + " (norms and biases: F32/F16/BF16)");
    }
    out.owned.resize(static_cast<size_t>(n));
    const uint16_t* s = reinterpret_cast<const uint16_t*>(t->data);
    for (int64_t i = 0; i < n; ++i) {
      out.owned[i] = t->type == gguf::TensorType::kF16 ? fp16_to_fp32(s[i]) : bf16_to_fp32(s[i]);
    }
    out.data = out.owned.data();
    return OkStatus();
  }

  // An optional vector: absent leaves out.data null.
  Status optional_vector(const std::string& name, int64_t n, VectorWeight& out) {
    if (f_.tensor(name) == nullptr) return OkStatus();
    return vector(name, n, out);
  }

  void finish() {
    uint64_t best = 0;
    for (const auto& [type, n] : per_type_) {
      if (n > best) {
        best = n;
        w_.dominant_type = type;
      }
    }
  }

 private:
  void count(const gguf::TensorInfo& t) {
    w_.n_params += t.n_elements;
    w_.n_bytes += t.n_bytes;
    if (t.dims.size() >= 2) per_type_[t.type] += t.n_elements;
  }

  const gguf::GgufFile& f_;
  ModelWeights& w_;
  std::map<gguf::TensorType, uint64_t> per_type_;
};

// bert's tensors, as llama.cpp names them (fused attn_qkv or separate Q/K/V, each
// with its bias).
Status bind_bert(const gguf::GgufFile& f, const Hparams& hp, Binder& b, ModelWeights& w) {
  const int64_t e = hp.n_embd, kv = hp.kv_dim(), ff = hp.n_ff;
  HEARTH_RETURN_IF_ERROR(b.matrix("position_embd.weight", e, hp.n_ctx_train, w.position_embd));
  if (const gguf::TensorInfo* t = f.tensor("token_types.weight"); t != nullptr) {
    if (t->dims.size() != 2 || t->dims[0] != static_cast<uint64_t>(e) || t->dims[1] < 1) {
      return InvalidArgument("tensor token_types.weight must have shape [" + std::to_string(e) +
                             ", n_token_types >= 1]");
    }
    kb::WeightView types;
    HEARTH_RETURN_IF_ERROR(
        b.matrix("token_types.weight", e, static_cast<int64_t>(t->dims[1]), types));
    w.type_row0.owned.resize(static_cast<size_t>(e));
    kb::dequantize_row(types.type, types.data, w.type_row0.owned.data(), e);
    w.type_row0.data = w.type_row0.owned.data();
  }
  HEARTH_RETURN_IF_ERROR(b.vector("token_embd_norm.weight", e, w.tok_norm));
  HEARTH_RETURN_IF_ERROR(b.vector("token_embd_norm.bias", e, w.tok_norm_b));
  w.layers.resize(static_cast<size_t>(hp.n_layer));
  for (int32_t i = 0; i < hp.n_layer; ++i) {
    LayerWeights& l = w.layers[static_cast<size_t>(i)];
    const std::string p = "blk." + std::to_string(i) + ".";
    if (f.tensor(p + "attn_qkv.weight") != nullptr) {
      const std::string n = p + "attn_qkv.weight";
      HEARTH_RETURN_IF_ERROR(b.rows_of(n, e, e + 2 * kv, 0, e, false, l.wq));
      HEARTH_RETURN_IF_ERROR(b.rows_of(n, e, e + 2 * kv, e, kv, true, l.wk));
      HEARTH_RETURN_IF_ERROR(b.rows_of(n, e, e + 2 * kv, e + kv, kv, true, l.wv));
      VectorWeight bqkv;
      HEARTH_RETURN_IF_ERROR(b.vector(p + "attn_qkv.bias", e + 2 * kv, bqkv));
      const float* src = bqkv.data;
      l.bq.owned.assign(src, src + e);
      l.bk.owned.assign(src + e, src + e + kv);
      l.bv.owned.assign(src + e + kv, src + e + 2 * kv);
      l.bq.data = l.bq.owned.data();
      l.bk.data = l.bk.owned.data();
      l.bv.data = l.bv.owned.data();
    } else {
      HEARTH_RETURN_IF_ERROR(b.matrix(p + "attn_q.weight", e, e, l.wq));
      HEARTH_RETURN_IF_ERROR(b.matrix(p + "attn_k.weight", e, kv, l.wk));
      HEARTH_RETURN_IF_ERROR(b.matrix(p + "attn_v.weight", e, kv, l.wv));
      HEARTH_RETURN_IF_ERROR(b.vector(p + "attn_q.bias", e, l.bq));
      HEARTH_RETURN_IF_ERROR(b.vector(p + "attn_k.bias", kv, l.bk));
      HEARTH_RETURN_IF_ERROR(b.vector(p + "attn_v.bias", kv, l.bv));
    }
    HEARTH_RETURN_IF_ERROR(b.matrix(p + "attn_output.weight", e, e, l.wo));
    HEARTH_RETURN_IF_ERROR(b.optional_vector(p + "attn_output.bias", e, l.bo));
    HEARTH_RETURN_IF_ERROR(b.vector(p + "attn_output_norm.weight", e, l.attn_out_norm));
    HEARTH_RETURN_IF_ERROR(b.vector(p + "attn_output_norm.bias", e, l.attn_out_norm_b));
    HEARTH_RETURN_IF_ERROR(b.matrix(p + "ffn_up.weight", e, ff, l.w_up));
    HEARTH_RETURN_IF_ERROR(b.optional_vector(p + "ffn_up.bias", ff, l.ffn_up_b));
    HEARTH_RETURN_IF_ERROR(b.matrix(p + "ffn_down.weight", ff, e, l.w_down));
    HEARTH_RETURN_IF_ERROR(b.optional_vector(p + "ffn_down.bias", e, l.ffn_down_b));
    HEARTH_RETURN_IF_ERROR(b.vector(p + "layer_output_norm.weight", e, l.layer_out_norm));
    HEARTH_RETURN_IF_ERROR(b.vector(p + "layer_output_norm.bias", e, l.layer_out_norm_b));
  }
  return OkStatus();
}

}  // namespace

Result<ModelWeights> bind_weights(const gguf::GgufFile& f, const Hparams& hp) {
  ModelWeights w;
  Binder b(f, w);
  if (hp.encoder) {
    HEARTH_RETURN_IF_ERROR(b.matrix("token_embd.weight", hp.n_embd, hp.n_vocab, w.token_embd));
    w.token_embd_row_bytes = gguf::row_bytes(w.token_embd.type, static_cast<uint64_t>(hp.n_embd));
    HEARTH_RETURN_IF_ERROR(bind_bert(f, hp, b, w));
    b.finish();
    return w;
  }
  const int64_t e = hp.n_embd, q = hp.q_dim(), kv = hp.kv_dim(), ff = hp.n_ff, hd = hp.head_dim;
  HEARTH_RETURN_IF_ERROR(b.matrix("token_embd.weight", e, hp.n_vocab, w.token_embd));
  w.token_embd_row_bytes = gguf::row_bytes(w.token_embd.type, static_cast<uint64_t>(e));
  HEARTH_RETURN_IF_ERROR(b.vector("output_norm.weight", e, w.output_norm));
  if (f.tensor("output.weight") != nullptr) {
    HEARTH_RETURN_IF_ERROR(b.matrix("output.weight", e, hp.n_vocab, w.output));
  } else {
    w.output = w.token_embd;
    w.tied = true;
  }
  if (f.tensor("rope_freqs.weight") != nullptr) {
    HEARTH_RETURN_IF_ERROR(b.vector("rope_freqs.weight", hp.n_rot / 2, w.rope_freqs));
  }
  w.layers.resize(static_cast<size_t>(hp.n_layer));
  for (int32_t i = 0; i < hp.n_layer; ++i) {
    LayerWeights& l = w.layers[static_cast<size_t>(i)];
    const std::string p = "blk." + std::to_string(i) + ".";
    HEARTH_RETURN_IF_ERROR(b.vector(p + "attn_norm.weight", e, l.attn_norm));
    if (hp.fused_qkv) {
      const std::string n = p + "attn_qkv.weight";
      HEARTH_RETURN_IF_ERROR(b.rows_of(n, e, q + 2 * kv, 0, q, false, l.wq));
      HEARTH_RETURN_IF_ERROR(b.rows_of(n, e, q + 2 * kv, q, kv, true, l.wk));
      HEARTH_RETURN_IF_ERROR(b.rows_of(n, e, q + 2 * kv, q + kv, kv, true, l.wv));
    } else {
      HEARTH_RETURN_IF_ERROR(b.matrix(p + "attn_q.weight", e, q, l.wq));
      HEARTH_RETURN_IF_ERROR(b.matrix(p + "attn_k.weight", e, kv, l.wk));
      HEARTH_RETURN_IF_ERROR(b.matrix(p + "attn_v.weight", e, kv, l.wv));
    }
    HEARTH_RETURN_IF_ERROR(b.matrix(p + "attn_output.weight", q, e, l.wo));
    if (hp.qk_norm) {
      HEARTH_RETURN_IF_ERROR(b.vector(p + "attn_q_norm.weight", hd, l.q_norm));
      HEARTH_RETURN_IF_ERROR(b.vector(p + "attn_k_norm.weight", hd, l.k_norm));
    }
    if (hp.post_norms) {
      HEARTH_RETURN_IF_ERROR(b.vector(p + "post_attention_norm.weight", e, l.post_attn_norm));
      HEARTH_RETURN_IF_ERROR(b.vector(p + "post_ffw_norm.weight", e, l.post_ffw_norm));
    }
    if (hp.has_qkv_bias) {
      HEARTH_RETURN_IF_ERROR(b.vector(p + "attn_q.bias", q, l.bq));
      HEARTH_RETURN_IF_ERROR(b.vector(p + "attn_k.bias", kv, l.bk));
      HEARTH_RETURN_IF_ERROR(b.vector(p + "attn_v.bias", kv, l.bv));
    }
    HEARTH_RETURN_IF_ERROR(b.vector(p + "ffn_norm.weight", e, l.ffn_norm));
    if (hp.is_moe()) {
      const int64_t n = hp.n_expert, fe = hp.n_ff_exp;
      HEARTH_RETURN_IF_ERROR(b.matrix(p + "ffn_gate_inp.weight", e, n, l.gate_inp));
      HEARTH_RETURN_IF_ERROR(b.experts(p + "ffn_gate_exps.weight", e, fe, n, l.gate_exps));
      HEARTH_RETURN_IF_ERROR(b.experts(p + "ffn_up_exps.weight", e, fe, n, l.up_exps));
      HEARTH_RETURN_IF_ERROR(b.experts(p + "ffn_down_exps.weight", fe, e, n, l.down_exps));
    } else if (hp.fused_gate_up) {
      const std::string n = p + "ffn_up.weight";
      HEARTH_RETURN_IF_ERROR(b.rows_of(n, e, 2 * ff, 0, ff, false, l.w_gate));
      HEARTH_RETURN_IF_ERROR(b.rows_of(n, e, 2 * ff, ff, ff, true, l.w_up));
      HEARTH_RETURN_IF_ERROR(b.matrix(p + "ffn_down.weight", ff, e, l.w_down));
    } else {
      HEARTH_RETURN_IF_ERROR(b.matrix(p + "ffn_gate.weight", e, ff, l.w_gate));
      HEARTH_RETURN_IF_ERROR(b.matrix(p + "ffn_up.weight", e, ff, l.w_up));
      HEARTH_RETURN_IF_ERROR(b.matrix(p + "ffn_down.weight", ff, e, l.w_down));
    }
  }
  b.finish();
  return w;
}

}  // namespace hearth::engine
