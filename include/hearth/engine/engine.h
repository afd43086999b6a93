// The inference engine: a llama-family transformer (llama, qwen2) evaluated on the CPU
// straight from a memory-mapped GGUF file, or with some or all of its layers on a GPU
// (EngineOptions::device; docs/gpu.md).
//
// Numerics contract (what the persistent KV cache relies on): the logits and the KV
// bytes produced for a position depend only on the model file, the tokens of that
// sequence up to and including the position, and numerics_id(). They are bit-identical
// whether the position was computed in one batch, in chunks of any size, token by token,
// with any thread count, or alongside other sequences in the same batch.
//
// Thread-compatible: one caller at a time per Engine (callers serialize access).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hearth/engine/embedding.h"
#include "hearth/engine/kv_type.h"
#include "hearth/progress.h"
#include "hearth/status.h"

namespace hearth {

class Tokenizer;    // include/hearth/engine/tokenizer.h
class LoraAdapter;  // a loaded LoRA adapter (Engine::load_lora); opaque

// One adapter active on a sequence, with the user's scale (the adapter's alpha / rank
// rule is applied on top, as llama.cpp does).
struct LoraUse {
  std::shared_ptr<const LoraAdapter> adapter;
  float scale = 1.0f;
};

struct EngineOptions {
  int n_threads = 2;  // worker threads used by forward(); results do not depend on it
  // Positions per sequence: 0 = the model's own context_length, or the largest that
  // fits kv_budget_bytes (hearth/engine/context.h); an explicit n_ctx whose KV exceeds
  // the budget fails the load.
  int32_t n_ctx = 0;
  // Bound on the KV memory committed at load (all n_seq_max + 1 sequences: the +1 is
  // embed()'s private one); 0 = kDefaultKvBudgetBytes (4 GiB).
  uint64_t kv_budget_bytes = 0;
  int32_t n_seq_max = 4;  // sequences 0 .. n_seq_max-1 may hold KV at the same time
  int32_t n_batch = 512;  // largest number of tokens evaluated at once; forward() splits
                          // bigger batches internally (the results do not change)
  // false (default): the weight matrices are copied once at load into memory backed
  // by transparent huge pages (Q4_0 decode measured 7-20% faster; the file mapping's
  // pages are released, so resident memory does not double). true: they are read
  // in place from the file mapping (no copy; pages shared with other processes).
  // The results are the same bits either way.
  bool weights_in_place = false;
  // Element type of the K and V rows (hearth/engine/kv_type.h). Part of numerics_id():
  // rows of one type are never read by an engine of another. Quantized types need
  // head_dim % 32 == 0 (else load() fails naming kv_type).
  KvType kv_type = KvType::kF16;
  // Load progress in bytes of weights copied into place (not with weights_in_place),
  // called on the loading thread; may be empty. The engine itself never prints.
  ProgressFn on_load_progress;
  // Sliding-window layers (gemma2, gemma3) keep every position, as the other layers do,
  // instead of a ring of window + n_batch positions (the default): more KV memory, so a
  // shorter context from the same budget, but seq_truncate to any length and saved rows
  // that hold every position (numerics_id() ends ":full" instead of ":window"). Like
  // llama.cpp's --swa-full. The bits of logits and KV are the same either way.
  bool swa_full = false;
  // Private sequences embed_batch() packs inputs into, one input each per forward (their
  // KV is committed at load like the others'): 0 = 8 for an encoder (bert: short
  // contexts), 1 for a decoder (its context may be long).
  int32_t n_embed_seq = 0;
  // Where the layers run (docs/gpu.md): "cpu" (default) or "cuda:N" (device N; "cuda"
  // is "cuda:0"). With a GPU, the first n_gpu_layers layers run on it and the rest on
  // the CPU; -1 (or n_layer or more) puts every layer and the output head on the GPU.
  // Part of numerics_id(): GPU layers compute other bits than the CPU's, so rows never
  // cross devices or splits. A build without CUDA, or a machine without that device,
  // fails the load naming `device`.
  std::string device = "cpu";
  int32_t n_gpu_layers = -1;
};

struct ModelInfo {
  // general.architecture: llama, qwen2, qwen3, qwen3moe, phi3, gemma2 or gemma3
  std::string arch;
  std::string name;  // general.name, or the file name when absent
  std::string path;  // the file the engine was loaded from
  int32_t n_vocab = 0;
  int32_t n_ctx_train = 0;  // <arch>.context_length
  int32_t n_ctx = 0;        // positions per sequence in this engine
  int32_t n_seq_max = 0;
  uint64_t kv_bytes = 0;          // KV memory committed at load (n_seq_max + 1 sequences)
  uint64_t kv_budget_bytes = 0;   // the budget it was held to (EngineOptions, or the default)
  KvType kv_type = KvType::kF16;  // element type of the K and V rows
  int32_t n_embd = 0;
  int32_t n_layer = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;  // attention.key_length, else n_embd / n_head
  int32_t n_rot = 0;     // rope.dimension_count (defaults to head_dim)
  int32_t n_ff = 0;
  float rope_base = 10000.0f;
  std::string rope_scaling_type = "none";  // "none" or "linear"
  float rope_scaling_factor = 1.0f;        // positions are divided by this (linear)
  float rms_eps = 1e-5f;
  bool rope_neox = false;         // qwen2 rotates (i, i + d/2); llama rotates (2i, 2i+1)
  int32_t n_expert = 0;           // MoE: experts per layer (0: dense)
  int32_t n_expert_used = 0;      // MoE: experts each token routes to
  int32_t n_swa = 0;              // sliding window of the sliding layers (0: none)
  bool tied_embeddings = false;   // output projection is token_embd (no output.weight)
  uint32_t file_type = 0;         // general.file_type (llama_ftype), 0 when absent
  std::string quant_name;         // "Q4_K_M", "F16", ... from file_type, else the dominant type
  double bits_per_weight = 0;     // weight bytes * 8 / weight elements
  uint64_t n_params = 0;          // elements of all weight tensors
  uint64_t weight_bytes = 0;      // bytes of all weight tensors
  uint64_t token_embd_bytes = 0;  // of which token_embd.weight (decode reads one row of it
                                  // unless it is tied to the output projection)
  // "huge-page copy" (the matrices were copied at load) or "file mapping" (read in
  // place: EngineOptions::weights_in_place, or the copy could not be allocated).
  std::string weights_placement;
  std::string chat_template;  // tokenizer.chat_template (Jinja text), empty when absent
  // Embeddings: the file's <arch>.pooling_type, else mean; whether attention is causal
  // (bert: false); the private sequences embed_batch packs into.
  Pooling pooling = Pooling::kMean;
  bool causal = true;
  bool encoder = false;  // bert: no logits (forward with logits fails), embeddings only
  int32_t n_embed_seq = 1;
  // "cpu", or the GPU's description ("cuda:0 NVIDIA H200, sm_90") and how many layers
  // run on it (0 on the CPU; n_layer: all, with the output head).
  std::string device = "cpu";
  int32_t n_gpu_layers = 0;
};

// One token of a batch. pos must equal the sequence's current length when the token is
// appended (positions of a sequence are contiguous 0..n-1). Tokens of the same sequence
// must appear in increasing pos order within a batch.
struct BatchToken {
  int32_t token = 0;
  int32_t pos = 0;
  int32_t seq = 0;
  bool logits = false;  // produce the n_vocab logits of this position
};

class Engine {
 public:
  // Maps the GGUF file and validates architecture, hyperparameters, tensor names,
  // shapes and types. Errors name the offending key or tensor.
  static Result<std::unique_ptr<Engine>> load(const std::string& path,
                                              const EngineOptions& options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const ModelInfo& info() const;
  const Tokenizer& tokenizer() const;

  // Evaluates the batch, appending K/V of every token to its sequence. logits_out is
  // resized to n_vocab * (number of tokens with logits = true); the rows come in batch
  // order. Errors (nothing is modified): bad token id, seq out of range, pos != current
  // length of the sequence, context overflow, empty batch.
  Status forward(std::span<const BatchToken> batch, std::vector<float>& logits_out);

  // LoRA adapters (llama.cpp's GGUF adapter format; docs/engine.md "LoRA adapters").
  // load_lora validates the file against this engine's model (architecture, tensor
  // names, shapes, types; errors name the key or tensor); the result may be shared by
  // any number of sequences and outlives nothing but this engine.
  Result<std::shared_ptr<const LoraAdapter>> load_lora(const std::string& path) const;
  // The adapters applied to seq's later forwards, in this order (empty: the base model).
  // y = W x + sum_i scale_i * B_i (A_i x) for every adapted matrix, per token, so a
  // token's logits never depend on the other sequences of its batch. The KV already in
  // seq is not touched: callers keep a sequence's adapter set fixed while it holds KV
  // (the runtime keys its cache rows on the set).
  Status set_lora(int32_t seq, std::vector<LoraUse> uses);

  // Number of positions a sequence holds (0 for an empty one); -1 for an unknown seq.
  int32_t seq_len(int32_t seq) const;
  Status seq_clear(int32_t seq);
  // Keeps the first n positions (0 <= n <= seq_len). Sliding-window layers (unless
  // EngineOptions::swa_full) hold only the last window + n_batch positions written, so
  // a truncation whose next query would see a position they no longer hold fails with
  // FailedPrecondition, naming the window and the smallest n that works; seq is
  // unchanged (seq_truncate(seq, 0), then a prefill, always works).
  Status seq_truncate(int32_t seq, int32_t n);

  // Size of one position's KV of every layer (K and V, in the engine's KV type), as a
  // layer that keeps every position stores it.
  size_t kv_bytes_per_position() const;
  // Size of kv_pack's bytes for n_pos positions: n_pos * kv_bytes_per_position(), less
  // the positions sliding-window layers do not save (below).
  size_t kv_pack_bytes(int32_t n_pos) const;
  // Appends nothing, replaces out with the first n_pos positions of seq, as far as
  // continuing at n_pos needs them: for each layer l, its K rows then its V rows, each
  // row n_head_kv * head_dim values in the KV type (F16 values, or Q8_0 / Q4_0 blocks;
  // little-endian), exactly as the engine stores them; rows 0..n_pos-1, except on a
  // sliding-window layer (unless swa_full) only the last min(n_pos, n_swa) of them,
  // n_pos - min(n_pos, n_swa) .. n_pos-1. FailedPrecondition when such a layer no
  // longer holds those (seq was truncated far below its length).
  Status kv_pack(int32_t seq, int32_t n_pos, std::vector<uint8_t>& out) const;
  // Replaces seq's contents with n_pos positions from kv_pack's format.
  // bytes.size() must equal kv_pack_bytes(n_pos).
  Status kv_unpack(int32_t seq, std::span<const uint8_t> bytes, int32_t n_pos);
  // Makes dst hold a copy of src's first n_pos positions (a fork: n > 1 choices share
  // their prompt's KV). src != dst, n_pos <= seq_len(src).
  Status kv_copy(int32_t src, int32_t dst, int32_t n_pos);
  // In-place restore, for readers that can write straight into the KV (a file read
  // lands in the sequence's memory, no staging copy): empties seq and returns the
  // writable byte runs of positions [0, n_pos) in kv_pack's order (their concatenation
  // is kv_pack's bytes). Fill them, then kv_import_commit(seq, n_pos).
  Result<std::vector<std::span<uint8_t>>> kv_import_spans(int32_t seq, int32_t n_pos);
  Status kv_import_commit(int32_t seq, int32_t n_pos);

  // Identifies everything that determines the bits of logits and KV (engine numerics
  // version, kernel family, KV format). Two engines with equal numerics_id() on the same
  // model file produce identical bits; the KV cache keys on it.
  std::string numerics_id() const;

  // Embedding of a token sequence: mean over positions of the final-norm hidden state,
  // L2-normalised (n_embd floats). Uses a private scratch sequence; no user sequence is
  // touched.
  Result<std::vector<float>> embed(std::span<const int32_t> tokens);

  // Embeddings of several token sequences, unnormalised: per input, its pooled n_embd
  // vector, or with Pooling::kNone its n_tokens * n_embd token vectors. Inputs are
  // packed into forward passes (each its own private sequence, up to n_embed_seq of
  // them and n_batch tokens per pass), so an input's vector has the same bits whichever
  // inputs share its pass. The hidden state pooled is the final-normed one (decoders) or
  // the last layer's (bert); mean sums in double. Errors name the input: empty, a token
  // outside the vocabulary, longer than n_ctx, or (non-causal attention) than n_batch.
  Result<std::vector<std::vector<float>>> embed_batch(std::span<const std::vector<int32_t>> inputs,
                                                      Pooling pooling);

  // MoE routing diagnostics, for agreement checks against another engine (an expert
  // choice is discrete: where two experts nearly tie, rounding-level differences pick
  // either). router_margins(): for the last token of the last forward, per layer, the
  // router probability of the last expert it chose minus that of the best one it did
  // not choose (empty for dense models). route_runner_up(layer): the next forward only,
  // routes the last token of its batch on `layer` to that best unchosen expert in place
  // of the last chosen one (weights renormalized as usual); -1 routes as the router says.
  std::span<const float> router_margins() const;
  void route_runner_up(int32_t layer);

  struct Impl;

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hearth
