// The transformer forward pass. Prefill and decode are the same code: a chunk of
// tokens (from any sequences) goes through every layer together, and every value a
// token produces is computed by a reduction whose order depends only on that token's
// own inputs (see docs/engine.md, "Batch invariance").
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/kernels/canonical.h"
#include "engine/model/activation.h"
#include "engine/model/attention.h"
#include "engine/model/engine_impl.h"
#include "engine/model/half_rows.h"
#include "engine/model/norm.h"
#include "engine/model/rope.h"
#include "engine/quant/quant.h"

namespace hearth {

using engine::KvStore;

Status Engine::Impl::validate(std::span<const BatchToken> batch, bool allow_private) {
  if (batch.empty()) return InvalidArgument("forward: empty batch");
  const int32_t n_seq = allow_private ? kv->n_seq() : opts.n_seq_max;
  // Expected next position per sequence; reused, so validation allocates nothing.
  std::vector<int32_t>& next = s.next_pos;
  next.resize(static_cast<size_t>(kv->n_seq()));
  for (int32_t q = 0; q < kv->n_seq(); ++q) next[static_cast<size_t>(q)] = kv->len(q);
  for (size_t i = 0; i < batch.size(); ++i) {
    const BatchToken& t = batch[i];
    auto where = [&] { return "forward: batch[" + std::to_string(i) + "]: "; };
    if (t.token < 0 || t.token >= hp.n_vocab) {
      return OutOfRange(where() + "token id " + std::to_string(t.token) +
                        " is outside the vocabulary [0, " + std::to_string(hp.n_vocab) + ")");
    }
    if (t.seq < 0 || t.seq >= n_seq) {
      return InvalidArgument(where() + "seq " + std::to_string(t.seq) + " is outside [0, " +
                             std::to_string(opts.n_seq_max) + ")");
    }
    int32_t& expect = next[static_cast<size_t>(t.seq)];
    if (t.pos != expect) {
      return InvalidArgument(where() + "pos " + std::to_string(t.pos) + " of seq " +
                             std::to_string(t.seq) + " must be " + std::to_string(expect) +
                             " (positions of a sequence are contiguous)");
    }
    if (t.pos >= kv->n_ctx()) {
      return OutOfRange(where() + "context overflow: seq " + std::to_string(t.seq) + " position " +
                        std::to_string(t.pos) + " exceeds n_ctx " + std::to_string(kv->n_ctx()));
    }
    ++expect;
  }
  return OkStatus();
}

Status Engine::Impl::run(std::span<const BatchToken> batch, std::vector<float>* logits,
                         std::vector<float>* hidden) {
  size_t n_out = 0;
  for (const BatchToken& t : batch) n_out += t.logits ? 1 : 0;
  if (logits != nullptr) logits->resize(n_out * static_cast<size_t>(hp.n_vocab));
  if (hidden != nullptr) hidden->resize(batch.size() * static_cast<size_t>(hp.n_embd));
  size_t out_done = 0;
  const size_t step = static_cast<size_t>(opts.n_batch);
  // The routing override applies to this forward only.
  struct ClearOverride {
    int32_t& layer;
    ~ClearOverride() { layer = -1; }
  } clear{s.runner_up_layer};
  for (size_t b = 0; b < batch.size(); b += step) {
    const auto chunk = batch.subspan(b, std::min(step, batch.size() - b));
    float* lg = logits != nullptr && n_out > 0
                    ? logits->data() + out_done * static_cast<size_t>(hp.n_vocab)
                    : nullptr;
    float* hd = hidden != nullptr ? hidden->data() + b * static_cast<size_t>(hp.n_embd) : nullptr;
    s.last_chunk = b + chunk.size() == batch.size();
    if (hp.encoder) {
      run_chunk_encoder(chunk, hd);
    } else {
      HEARTH_RETURN_IF_ERROR(run_chunk(chunk, lg, hd));
    }
    for (const BatchToken& t : chunk) out_done += t.logits ? 1 : 0;
  }
  return OkStatus();
}

// Blocks of up to kAttentionBlockTokens tokens of one sequence (in batch order, so in
// increasing position order): a block's tokens share each K tile (attend_tokens). The
// grouping depends only on the chunk, so it is made once per chunk, not per layer.
void Engine::Impl::plan_attention_blocks(std::span<const BatchToken> chunk) {
  s.attn_order.clear();
  s.attn_blocks.clear();
  for (size_t i = 0; i < chunk.size(); ++i) {
    bool seen = false;
    for (size_t j = 0; j < i && !seen; ++j) seen = chunk[j].seq == chunk[i].seq;
    if (seen) continue;
    const int32_t begin = static_cast<int32_t>(s.attn_order.size());
    for (size_t j = i; j < chunk.size(); ++j)
      if (chunk[j].seq == chunk[i].seq) s.attn_order.push_back(static_cast<int32_t>(j));
    const int32_t end = static_cast<int32_t>(s.attn_order.size());
    if (!hp.causal) {  // every token of the sequence attends up to its last position
      s.attn_last.resize(chunk.size());
      const int32_t last = chunk[static_cast<size_t>(s.attn_order[end - 1])].pos;
      for (int32_t k = begin; k < end; ++k)
        s.attn_last[static_cast<size_t>(s.attn_order[k])] = last;
    }
    for (int32_t b = begin; b < end; b += kAttentionBlockTokens)
      s.attn_blocks.push_back({b, std::min(end, b + kAttentionBlockTokens)});
  }
}

// One sequence's one decode token: the score pass over every KV head at once, split by
// positions across the threads (whole K rows read together), then softmax and P.V per
// head (attend_split_*). False when that does not apply (the caller then attends per
// head); the outputs are the same bits either way.
bool Engine::Impl::attention_split(std::span<const BatchToken> chunk, int32_t layer, int32_t group,
                                   float scale, const engine::AttendMask& mask,
                                   kb::ThreadPool& tp) {
  // Below a few thousand positions the KV mostly stays in cache and the second barrier
  // costs more than the whole rows gain (decode after 512: 0.92x). split_shared is
  // empty where the split cannot run (engine.cpp).
  if (s.split_shared.empty() || s.attn_blocks.size() != 1 || chunk.size() != 1 ||
      chunk[0].pos + 1 < kSplitMinPositions) {
    return false;
  }
  const int32_t hd = hp.head_dim, n_kv = hp.n_head_kv;
  const BatchToken& t = chunk[0];
  engine::TokenQueries per_head[kMaxSplitHeads];
  engine::AttendTask tasks[kMaxSplitHeads];
  for (int32_t g = 0; g < n_kv; ++g) {
    const size_t first = static_cast<size_t>(g) * group * hd;
    per_head[g] = {t.pos, s.q16.data() + first, s.att.data() + first};
  }
  if (!engine::attend_split_tasks(*kv, t.seq, layer - first_cpu_layer(), n_kv, group, per_head, hd,
                                  scale, s.split_shared.data(), tasks, mask)) {
    return false;
  }
  // Whole tiles per thread: a range starts at a multiple of the widest tile.
  const int64_t tiles = engine::attend_split_tiles(t.pos);
  const int64_t parts = std::min<int64_t>(tp.size(), tiles);
  const size_t slot_floats = engine::attend_split_scratch_floats(n_kv, group, hd);
  tp.parallel_for(parts, [&](int64_t begin, int64_t end) {
    for (int64_t part = begin; part < end; ++part) {
      const auto [p0, p1] = engine::attend_split_part(tiles, parts, part);
      engine::attend_split_scores(tasks, n_kv, p0, p1,
                                  s.split_slots.data() + static_cast<size_t>(part) * slot_floats);
    }
  });
  tp.parallel_for(n_kv, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) engine::attend_split_finish(tasks[g]);
  });
  return true;
}

void Engine::Impl::attention(std::span<const BatchToken> chunk, int32_t layer) {
  const int32_t hd = hp.head_dim;
  const int32_t group = hp.n_head / hp.n_head_kv;
  // Q already carries hp.q_scale when the architecture scales it before QK^T.
  const float scale = hp.q_scale > 0 ? 1.0f : 1.0f / std::sqrt(static_cast<float>(hd));
  const engine::AttendMask mask{hp.attn_softcap, hp.layer_slides(layer) ? hp.n_swa : 0};
  int64_t macs = 0;
  for (const BatchToken& t : chunk) macs += static_cast<int64_t>(t.pos + 1) * hp.n_head * hd * 2;
  if (!hp.causal) macs *= 2;  // about twice the positions each
  kb::ThreadPool& tp = pool_for(macs);
  if (attention_split(chunk, layer, group, scale, mask, tp)) return;
  // Items are (block, KV head). One slot per thread, each with its own scratch; which
  // thread runs a slot does not matter, every output is computed by one sequential loop.
  const int64_t items = static_cast<int64_t>(s.attn_blocks.size()) * hp.n_head_kv;
  const int64_t n_slots = std::min<int64_t>(tp.size(), items);
  const size_t scratch_floats =
      engine::attend_tokens_scratch_floats(kAttentionBlockTokens, group, kv->n_ctx(), hd);
  tp.parallel_for(n_slots, [&](int64_t slot_begin, int64_t slot_end) {
    for (int64_t slot = slot_begin; slot < slot_end; ++slot) {
      float* scratch = s.scores.data() + static_cast<size_t>(slot) * scratch_floats;
      // Items are dealt round-robin: later blocks attend to more positions, so
      // contiguous ranges would give the last slot most of the work.
      for (int64_t it = slot; it < items; it += n_slots) {
        const auto [b0, b1] = s.attn_blocks[static_cast<size_t>(it / hp.n_head_kv)];
        const int32_t g = static_cast<int32_t>(it % hp.n_head_kv);
        engine::TokenQueries tq[kAttentionBlockTokens];
        for (int32_t i = b0; i < b1; ++i) {
          const int64_t t = s.attn_order[static_cast<size_t>(i)];
          const int64_t first = t * hp.q_dim() + static_cast<int64_t>(g) * group * hd;
          const int32_t upto =
              hp.causal ? chunk[static_cast<size_t>(t)].pos : s.attn_last[static_cast<size_t>(t)];
          tq[i - b0] = {upto, s.q16.data() + first, s.att.data() + first};
        }
        engine::attend_tokens(
            *kv, chunk[static_cast<size_t>(s.attn_order[static_cast<size_t>(b0)])].seq,
            layer - first_cpu_layer(), g, group, std::span(tq, static_cast<size_t>(b1 - b0)), hd,
            scale, scratch, mask);
      }
    }
  });
}

void Engine::Impl::qkv(std::span<const BatchToken> chunk, int32_t l) {
  const engine::LayerWeights& L = w.layers[static_cast<size_t>(l)];
  const int64_t T = static_cast<int64_t>(chunk.size());
  const int32_t qd = hp.q_dim(), kvd = hp.kv_dim(), hd = hp.head_dim;
  const int32_t kl = l - first_cpu_layer();  // the layer's index in the host KV store
  matmul_many({{&L.wq, s.q.data()}, {&L.wk, s.k.data()}, {&L.wv, s.v.data()}}, s.xn.data(), T);
  lora_layer(l, engine::LoraTarget::kQ, s.xn.data(), s.q.data(), T);
  lora_layer(l, engine::LoraTarget::kK, s.xn.data(), s.k.data(), T);
  lora_layer(l, engine::LoraTarget::kV, s.xn.data(), s.v.data(), T);
  const float* angles =
      hp.layer_slides(l) && !s.rope_swa.empty() ? s.rope_swa.data() : s.rope.data();
  // Element-wise stages run on the pool, one token per call: each token's values
  // are computed by the same operations whichever thread runs it.
  for_each_token(T, 4 * (qd + 2 * kvd), [&](int64_t t) {
    float* q = s.q.data() + t * qd;
    float* k = s.k.data() + t * kvd;
    float* v = s.v.data() + t * kvd;
    if (hp.has_qkv_bias) {
      for (int32_t i = 0; i < qd; ++i) q[i] += L.bq.data[i];
      for (int32_t i = 0; i < kvd; ++i) k[i] += L.bk.data[i];
      for (int32_t i = 0; i < kvd; ++i) v[i] += L.bv.data[i];
    }
    if (hp.qk_norm) {  // per head, in place
      for (int32_t h = 0; h < hp.n_head; ++h)
        engine::rms_norm(q + h * hd, L.q_norm.data, hd, hp.rms_eps, q + h * hd);
      for (int32_t h = 0; h < hp.n_head_kv; ++h)
        engine::rms_norm(k + h * hd, L.k_norm.data, hd, hp.rms_eps, k + h * hd);
    }
    if (!hp.encoder) {  // bert's positions are learned embeddings, not rotations
      const float* cs = angles + t * hp.n_rot;
      engine::rope_apply(q, hp.n_head, hd, hp.n_rot, cs, hp.rope_neox);
      engine::rope_apply(k, hp.n_head_kv, hd, hp.n_rot, cs, hp.rope_neox);
    }
    // K and V go to the sequence's store in the KV type before any token attends
    // (quantized rows by the reference quantizers: per token, whatever the batch).
    if (kv->type() == KvType::kF16) {
      uint16_t* kr = s.k16.data() + t * kvd;
      engine::to_f16(k, kr, kvd);
      kv->put_k(chunk[t].seq, kl, chunk[t].pos, kr);
      // V head by head into its runs (KvStore: one run per KV head).
      for (int32_t c = 0; c < kvd; c += kv->v_head_dim())
        engine::to_f16(v + c, kv->v_cols(chunk[t].seq, kl, chunk[t].pos, c), kv->v_head_dim());
    } else {
      const gguf::TensorType qt =
          kv->type() == KvType::kQ8_0 ? gguf::TensorType::kQ8_0 : gguf::TensorType::kQ4_0;
      // kv_dim is a multiple of 32 (checked at load): these cannot fail.
      (void)engine::quantize_row(qt, k, kv->k_bytes(chunk[t].seq, kl, chunk[t].pos), kvd);
      (void)engine::quantize_row(qt, v, kv->v_bytes(chunk[t].seq, kl, chunk[t].pos), kvd);
    }
    float* q16 = s.q16.data() + t * qd;
    // (x * 1 is x for every float, NaN included: the unscaled rounding is the same call.)
    engine::round_to_f16(q, hp.q_scale > 0 ? hp.q_scale : 1.0f, q16, qd);
  });
}

void Engine::Impl::ffn_dense(int64_t T, int32_t l) {
  const engine::LayerWeights& L = w.layers[static_cast<size_t>(l)];
  const int32_t ff = hp.n_ff;
  matmul_many({{&L.w_gate, s.gate.data()}, {&L.w_up, s.up.data()}}, s.xn.data(), T);
  lora_layer(l, engine::LoraTarget::kGate, s.xn.data(), s.gate.data(), T);
  lora_layer(l, engine::LoraTarget::kUp, s.xn.data(), s.up.data(), T);
  for_each_token(T, 16 * ff, [&](int64_t t) {
    float* g = s.gate.data() + t * ff;
    const float* u = s.up.data() + t * ff;
    if (hp.gelu) {
      engine::gelu_mul(g, u, ff);
    } else {
      engine::silu_mul(g, u, ff);
    }
  });
  matmul(L.w_down, s.gate.data(), T, s.proj.data());
  lora_layer(l, engine::LoraTarget::kDown, s.gate.data(), s.proj.data(), T);
}

Status Engine::Impl::run_chunk(std::span<const BatchToken> chunk, float* logits, float* hidden) {
  const int64_t T = static_cast<int64_t>(chunk.size());
  const int32_t e = hp.n_embd;
  float* x = s.x.data();
  float* xn = s.xn.data();

  // Embeddings: dequantized rows of token_embd, plus the adapters' rows (gemma: then
  // times sqrt(n_embd), as llama.cpp scales after its LoRA).
  lora_plan(chunk);
  const uint8_t* emb = w.token_embd.data;
  for (int64_t t = 0; t < T; ++t) {
    kb::dequantize_row(w.token_embd.type,
                       emb + static_cast<size_t>(chunk[t].token) * w.token_embd_row_bytes,
                       x + t * e, e);
  }
  if (s.lora_max_uses > 0) lora_add(LoraSite{-1, engine::LoraTarget::kQ, true, false}, x, x, T);
  if (hp.embd_scale > 0) {
    for (int64_t i = 0; i < T * e; ++i) x[i] *= hp.embd_scale;
  }
  // RoPE angles per token (shared by all layers and heads; gemma3's sliding layers
  // have their own base).
  for (int64_t t = 0; t < T; ++t) {
    engine::rope_angles(chunk[t].pos, hp.n_rot, hp.rope_base, hp.rope_freq_scale, w.rope_freqs.data,
                        s.rope.data() + t * hp.n_rot);
    if (!s.rope_swa.empty()) {
      engine::rope_angles(chunk[t].pos, hp.n_rot, hp.rope_base_swa, hp.rope_freq_scale_swa,
                          w.rope_freqs.data, s.rope_swa.data() + t * hp.n_rot);
    }
  }

  if (gpu) {
    // The GPU layers first; with all of them and the output head there, the logits
    // come straight back (hidden states are normed here on the host).
    const bool head_on_gpu = gpu->has_output() && hidden == nullptr;
    HEARTH_RETURN_IF_ERROR(gpu->run(chunk, x, s.rope.data(), head_on_gpu ? nullptr : x,
                                    head_on_gpu ? logits : nullptr));
    if (head_on_gpu) {
      for (const BatchToken& t : chunk) kv->append_to(t.seq, std::max(kv->len(t.seq), t.pos + 1));
      return OkStatus();
    }
  }
  plan_attention_blocks(chunk);
  for (int32_t l = first_cpu_layer(); l < hp.n_layer; ++l) {
    const engine::LayerWeights& L = w.layers[static_cast<size_t>(l)];
    for_each_token(T, e, [&](int64_t t) {
      engine::rms_norm(x + t * e, L.attn_norm.data, e, hp.rms_eps, xn + t * e);
    });
    qkv(chunk, l);
    attention(chunk, l);
    matmul(L.wo, s.att.data(), T, s.proj.data());
    lora_layer(l, engine::LoraTarget::kO, s.att.data(), s.proj.data(), T);
    for_each_token(T, (hp.post_norms ? 3 : 2) * e, [&](int64_t t) {
      float* p = s.proj.data() + t * e;
      if (hp.post_norms) engine::rms_norm(p, L.post_attn_norm.data, e, hp.rms_eps, p);
      for (int64_t i = 0; i < e; ++i) x[t * e + i] += p[i];
      engine::rms_norm(x + t * e, L.ffn_norm.data, e, hp.rms_eps, xn + t * e);
    });
    if (hp.is_moe()) {
      ffn_moe(T, l);
    } else {
      ffn_dense(T, l);
    }
    for_each_token(T, 2 * e, [&](int64_t t) {
      float* p = s.proj.data() + t * e;
      if (hp.post_norms) engine::rms_norm(p, L.post_ffw_norm.data, e, hp.rms_eps, p);
      for (int64_t i = 0; i < e; ++i) x[t * e + i] += p[i];
    });
  }

  for (const BatchToken& t : chunk) {
    kv->append_to(t.seq, std::max(kv->len(t.seq), t.pos + 1));
  }

  if (hidden != nullptr) {
    for (int64_t t = 0; t < T; ++t) {
      engine::rms_norm(x + t * e, w.output_norm.data, e, hp.rms_eps, hidden + t * e);
    }
  }
  if (logits != nullptr) {
    int64_t n_out = 0;
    s.out_token.clear();
    for (int64_t t = 0; t < T; ++t) {
      if (!chunk[t].logits) continue;
      engine::rms_norm(x + t * e, w.output_norm.data, e, hp.rms_eps, s.out_x.data() + n_out * e);
      s.out_token.push_back(static_cast<int32_t>(t));
      ++n_out;
    }
    if (n_out > 0) {
      matmul(w.output, s.out_x.data(), n_out, logits);
      if (s.lora_max_uses > 0)
        lora_add(LoraSite{-1, engine::LoraTarget::kQ, false, true}, s.out_x.data(), logits, n_out,
                 s.out_token.data());
      if (hp.final_softcap > 0) {  // gemma2, as ggml: scale, tanh, scale
        const int64_t V = hp.n_vocab;
        for_each_token(n_out, 8 * V, [&](int64_t t) {
          engine::canon::softcap(logits + t * V, static_cast<int32_t>(V), hp.final_softcap);
        });
      }
    }
  }
  return OkStatus();
}

}  // namespace hearth
