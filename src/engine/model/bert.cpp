// The bert encoder's forward chunk (llama.cpp's LLM_ARCH_BERT graph): token + position
// (+ token type 0) embeddings and their LayerNorm, then per layer self-attention with
// biases (every token of a sequence sees the whole sequence unless attention.causal),
// residual add and LayerNorm, a GELU FFN with biases, residual add and LayerNorm. The
// hidden state of the last layer is the output (no final norm, no vocabulary head).
// Q/K/V and the attention are the decoder's (forward.cpp), so the batch-invariance
// contract holds unchanged: every value depends only on its own sequence.
#include <algorithm>

#include "engine/model/activation.h"
#include "engine/model/engine_impl.h"
#include "engine/model/norm.h"

namespace hearth {

namespace {

void add_bias(float* y, const engine::VectorWeight& b, int64_t n) {
  if (b.data == nullptr) return;
  for (int64_t i = 0; i < n; ++i) y[i] += b.data[i];
}

}  // namespace

void Engine::Impl::run_chunk_encoder(std::span<const BatchToken> chunk, float* hidden) {
  const int64_t T = static_cast<int64_t>(chunk.size());
  const int32_t e = hp.n_embd;
  float* x = s.x.data();
  float* xn = s.xn.data();
  float* row = s.proj.data();  // scratch for one position row per token
  for (int64_t t = 0; t < T; ++t) {
    float* xt = x + t * e;
    kb::dequantize_row(
        w.token_embd.type,
        w.token_embd.data + static_cast<size_t>(chunk[t].token) * w.token_embd_row_bytes, xt, e);
    if (w.type_row0.data != nullptr) {
      for (int32_t i = 0; i < e; ++i) xt[i] += w.type_row0.data[i];
    }
    float* pe = row + t * e;
    kb::dequantize_row(w.position_embd.type, w.position_embd.row(chunk[t].pos), pe, e);
    for (int32_t i = 0; i < e; ++i) xt[i] = pe[i] + xt[i];
  }
  for_each_token(T, 4 * e, [&](int64_t t) {
    engine::layer_norm(x + t * e, w.tok_norm.data, w.tok_norm_b.data, e, hp.ln_eps, x + t * e);
  });

  plan_attention_blocks(chunk);
  const int32_t ff = hp.n_ff;
  for (int32_t l = 0; l < hp.n_layer; ++l) {
    const engine::LayerWeights& L = w.layers[static_cast<size_t>(l)];
    std::copy(x, x + T * e, xn);  // qkv() reads s.xn
    qkv(chunk, l);
    attention(chunk, l);
    matmul(L.wo, s.att.data(), T, s.proj.data());
    for_each_token(T, 6 * e, [&](int64_t t) {
      float* p = s.proj.data() + t * e;
      add_bias(p, L.bo, e);
      for (int32_t i = 0; i < e; ++i) p[i] += x[t * e + i];
      engine::layer_norm(p, L.attn_out_norm.data, L.attn_out_norm_b.data, e, hp.ln_eps, x + t * e);
    });
    matmul(L.w_up, x, T, s.up.data());
    for_each_token(T, 16 * ff, [&](int64_t t) {
      float* u = s.up.data() + t * ff;
      add_bias(u, L.ffn_up_b, ff);
      engine::gelu_inplace(u, ff);
    });
    matmul(L.w_down, s.up.data(), T, s.proj.data());
    for_each_token(T, 6 * e, [&](int64_t t) {
      float* p = s.proj.data() + t * e;
      add_bias(p, L.ffn_down_b, e);
      for (int32_t i = 0; i < e; ++i) p[i] += x[t * e + i];
      engine::layer_norm(p, L.layer_out_norm.data, L.layer_out_norm_b.data, e, hp.ln_eps,
                         x + t * e);
    });
  }
  for (const BatchToken& t : chunk) kv->append_to(t.seq, std::max(kv->len(t.seq), t.pos + 1));
  if (hidden != nullptr) std::copy(x, x + T * e, hidden);
}

}  // namespace hearth
