// Engine internals shared by engine.cpp (lifecycle, sequences, KV transfer) and
// forward.cpp (the transformer evaluation).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "engine/model/attention.h"
#include "engine/model/gpu_layers.h"
#include "engine/model/hparams.h"
#include "engine/model/kernels_bridge.h"
#include "engine/model/kv_store.h"
#include "engine/model/lora.h"
#include "engine/model/weight_arena.h"
#include "engine/model/weights.h"
#include "hearth/engine/engine.h"
#include "hearth/gguf/gguf.h"

namespace hearth {

namespace kb = engine::kb;

// Tokens of one sequence whose attention shares each K tile (more share the tile
// conversion better; the score scratch grows with them).
constexpr int32_t kAttentionBlockTokens = 8;
// Most KV heads a decode token's split attention takes (more: attention per head).
constexpr int32_t kMaxSplitHeads = 64;
// Fewest positions a decode token's attention is split at (forward.cpp).
constexpr int32_t kSplitMinPositions = 2048;

// Scratch for one chunk of up to n_batch tokens, allocated once at load.
struct ForwardScratch {
  std::vector<float> x, xn, q, k, v, att, proj, gate, up, rope;
  std::vector<float> rope_swa;  // angles of the sliding-window layers' rope (gemma3)
  std::vector<float> q16;       // Q rounded to F16 (held as float)
  std::vector<uint16_t> k16;    // F16 K rows on their way into the store's tiles
  std::vector<float> scores;    // n_threads * attend_tokens_scratch_floats(...)
  // A decode token split by positions (attend_split_*): every KV head's score rows,
  // then each thread's scratch for its positions.
  std::vector<float> split_shared, split_slots;
  std::vector<int32_t> attn_order;  // attention(): the chunk's token indices by sequence
  std::vector<std::pair<int32_t, int32_t>> attn_blocks;  // [begin, end) into attn_order
  // Non-causal attention: per token of the chunk, the last position of its sequence in
  // the chunk (what the token attends up to).
  std::vector<int32_t> attn_last;
  std::vector<int32_t> next_pos;  // validate(): expected position per sequence
  std::vector<float> out_x;       // gathered rows for the output head
  // MoE (moe.cpp): per token, the router's probabilities, the chosen experts and their
  // renormalized weights (n_expert_used each, in llama.cpp's order: by probability,
  // highest first); then the (token, slot) pairs grouped by expert, their gathered
  // inputs and outputs, and where each pair's output row lies.
  std::vector<float> moe_probs;
  std::vector<int32_t> moe_expert;
  std::vector<float> moe_weight;
  std::vector<int32_t> moe_pairs;  // token * n_expert_used + slot, grouped by expert
  std::vector<int32_t> moe_begin;  // n_expert + 1 offsets into moe_pairs
  std::vector<int32_t> moe_next;   // n_expert: the grouping cursor
  std::vector<int32_t> moe_row;    // per (token, slot): its row in moe_x / moe_y
  std::vector<float> moe_x, moe_y;
  // Routing diagnostics (Engine::router_margins / route_runner_up): the batch's last
  // token's margin per layer, and the layer whose routing the next forward overrides.
  std::vector<float> router_margin;
  int32_t runner_up_layer = -1;
  bool last_chunk = false;  // run(): this chunk holds the batch's last token
  // LoRA (lora_forward.cpp): the chunk, each token's sequence's adapter uses (null:
  // none), the longest list, and the rows gathered per adapter.
  std::span<const BatchToken> lora_chunk;
  std::vector<const std::vector<LoraUse>*> lora_uses;
  size_t lora_max_uses = 0;
  std::vector<const LoraAdapter*> lora_distinct;
  std::vector<int32_t> lora_rows, out_token;  // out_token: the token of each output row
  std::vector<float> lora_scale, lora_x, lora_t, lora_d;
  kb::MatmulScratch mm;
};

struct Engine::Impl {
  gguf::GgufFile file;
  engine::Hparams hp;
  engine::ModelWeights w;
  engine::WeightArena arena;  // the matrices' copies, unless weights_in_place
  ModelInfo info;
  EngineOptions opts;
  int n_threads = 1;
  std::shared_ptr<Tokenizer> tokenizer;
  std::unique_ptr<kb::ThreadPool> pool;
  std::unique_ptr<kb::ThreadPool> inline_pool;  // size 1: for work too small to split

  // The pool for `macs` multiply-adds: waking workers costs more than tiny jobs save.
  // Results do not depend on the choice (thread count never changes the bits).
  kb::ThreadPool& pool_for(int64_t macs) {
    return macs < (int64_t{1} << 16) ? *inline_pool : *pool;
  }
  // f(t) for t in [0, n_tokens), spread over the pool when the batch is large enough;
  // `work` is the per-token cost in multiply-adds. f must touch only token t's data.
  template <class F>
  void for_each_token(int64_t n_tokens, int64_t work, F&& f) {
    pool_for(n_tokens * work).parallel_for(n_tokens, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) f(t);
    });
  }
  void matmul(const kb::WeightView& w, const float* x, int64_t n_tokens, float* y) {
    kb::matmul(w, x, n_tokens, y, pool_for(w.rows * w.cols * n_tokens), s.mm);
  }
  // Matrices sharing the input x (Q, K, V; gate, up): one dispatch in decode.
  void matmul_many(std::initializer_list<kb::MatmulPart> parts, const float* x, int64_t n_tokens) {
    int64_t macs = 0;
    for (const kb::MatmulPart& p : parts) macs += p.w->rows * p.w->cols * n_tokens;
    kb::matmul_many(std::span(parts.begin(), parts.size()), x, n_tokens, pool_for(macs), s.mm);
  }
  std::unique_ptr<engine::KvStore>
      kv;  // n_seq_max user sequences + n_embed_seq private (embeddings)
  // The layers on a GPU (EngineOptions::device), null on the CPU. Their KV lives on the
  // device; kv keeps the lengths and the CPU layers' rows.
  std::unique_ptr<engine::GpuLayers> gpu;
  int32_t first_cpu_layer() const { return gpu ? gpu->n_layers() : 0; }
  // Bytes of the GPU layers' part of a packed row of n positions (first in its layout).
  size_t gpu_pack_bytes(int32_t n) const {
    return gpu ? static_cast<size_t>(n) * gpu->bytes_per_position() : 0;
  }
  std::vector<std::vector<LoraUse>> seq_lora;  // Engine::set_lora, per user sequence
  ForwardScratch s;

  int32_t embed_seq() const { return opts.n_seq_max; }

  // Checks the batch against the current sequence lengths. allow_private admits the
  // embed sequence.
  Status validate(std::span<const BatchToken> batch, bool allow_private);
  // Evaluates a validated batch. logits: n_vocab rows for tokens with logits = true.
  // hidden (optional): final-normed hidden state of every token (n_embd rows).
  // Errors come only from the GPU layers (a CUDA failure); the positions of the chunks
  // evaluated before it stay appended.
  Status run(std::span<const BatchToken> batch, std::vector<float>* logits,
             std::vector<float>* hidden);

 private:
  Status run_chunk(std::span<const BatchToken> chunk, float* logits, float* hidden);
  // bert (bert.cpp): the hidden state of every token, no logits.
  void run_chunk_encoder(std::span<const BatchToken> chunk, float* hidden);
  // Q, K and V of every token of the chunk on one layer: biases, Q/K norms, RoPE; K and
  // V stored, Q rounded to F16 into s.q16.
  void qkv(std::span<const BatchToken> chunk, int32_t layer);
  // The FFN of T tokens on one layer, s.xn -> s.proj: dense, or MoE (moe.cpp).
  void ffn_dense(int64_t T, int32_t layer);
  void ffn_moe(int64_t T, int32_t layer);
  void plan_attention_blocks(std::span<const BatchToken> chunk);  // once per chunk
  // Attention of every token of the chunk on one layer, over plan_attention_blocks' blocks.
  void attention(std::span<const BatchToken> chunk, int32_t layer);
  bool attention_split(std::span<const BatchToken> chunk, int32_t layer, int32_t group, float scale,
                       const engine::AttendMask& mask, kb::ThreadPool& tp);
  // LoRA (lora_forward.cpp): lora_plan once per chunk; lora_add after a base matmul adds
  // the deltas of the matrix at `site` to y (n_rows rows; row r is token row_token[r] of
  // the chunk, or token r when row_token is null). x: the matmul's input rows.
  struct LoraSite {
    int32_t layer = -1;
    engine::LoraTarget target = engine::LoraTarget::kQ;
    bool embd = false, output = false;
  };
  void lora_plan(std::span<const BatchToken> chunk);
  void lora_add(const LoraSite& site, const float* x, float* y, int64_t n_rows,
                const int32_t* row_token = nullptr);
  void lora_layer(int32_t layer, engine::LoraTarget t, const float* x, float* y, int64_t n) {
    if (s.lora_max_uses > 0) lora_add(LoraSite{layer, t, false, false}, x, y, n);
  }
};

}  // namespace hearth
