// The runtime's view of one loaded model: a Backend turns tokens into logits for several
// sequences at once and can copy a sequence's KV cells out and back in. The runtime's
// per-model worker thread is the only caller of the mutating methods (step, kv_*, seq_*,
// embed, load_adapter), so implementations need no locking for those. The const methods
// (info, tokenize, detokenize, text_stream, make_sampler) must be safe to call
// from any thread while a step runs: they read only static model data (the vocabulary).
//
// One implementation ships: EngineBackend (hearth::Engine; src/runtime/engine_backend.h).
// The tests' deterministic StubBackend lives with them (tests/testing/stub_backend.h) and
// reaches the runtime the way any custom backend does, through ModelConfig::factory.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hearth/engine/embedding.h"
#include "hearth/status.h"
#include "hearth/text_range.h"

namespace hearth::runtime {

using TokenId = int32_t;

// Static facts about a loaded model, for model_info and scheduling.
struct BackendInfo {
  std::string backend_name;  // "engine", or a custom backend's name
  std::string architecture;  // e.g. "llama", "qwen2"
  int32_t vocab_size = 0;    // length of every logits row
  int32_t n_ctx = 0;         // context size per sequence (positions)
  int32_t n_ctx_train = 0;
  int32_t n_seq_max = 1;   // sequences this backend instance can hold at once
  int32_t n_embd = 0;      // embedding width
  std::string quant_type;  // e.g. "q4_k_m", "f16"
  int32_t quant_bits = 0;
  // Where the layers run (hearth::ModelInfo::device): "cpu", or the GPU's description
  // ("cuda:0 NVIDIA H200, sm_90"), and how many layers run on it (0 on the CPU).
  std::string device = "cpu";
  int32_t n_gpu_layers = 0;
  uint64_t memory_estimate_bytes = 0;  // weights + the KV committed for all sequences
  std::vector<TokenId> eog_tokens;     // end-of-generation tokens (EOS, EOT, ...)
  std::string chat_template;           // tokenizer.chat_template (Jinja text) or empty
  // The chat template's bos_token / eos_token: the texts of the vocabulary's BOS and EOS
  // tokens (empty when it has none), and whether tokenizing with add_special prepends BOS.
  std::string bos_text;
  std::string eos_text;
  bool add_bos = false;
  // Bytes of the longest token text (0 = unknown): no token stands for more bytes of
  // input, which bounds a prompt's token count before it is tokenized.
  int32_t max_token_bytes = 0;
  // Embeddings: the model's own pooling (GGUF <arch>.pooling_type, else mean), and
  // whether it can only embed (bert: no vocabulary head; generation is refused).
  Pooling pooling = Pooling::kMean;
  bool embedding_only = false;
  // kv_pack's layout, when it is `kv_pack_groups` equal position-major runs (one per
  // layer and K/V, each the same bytes per position): the cache can then store a row
  // as a delta of a shorter one (docs/cache-design.md, delta rows). 0 = opaque (e.g.
  // sliding-window rings, which pack only their window): rows are always saved whole.
  int32_t kv_pack_groups = 0;
};

// Everything that decides which cache namespace this model's KV bytes belong to. The
// runtime turns it into the cache key prefix (fingerprint || quant byte || ctx_params_hash).
struct KvIdentity {
  std::string model_path;  // hashed for fingerprint modes safe / gguf_chunked
  uint8_t quant_byte = 0;  // the cache key's quant byte (GGUF file type)
  // Text naming everything that changes KV bytes: KV element type, rope parameters, the
  // engine's numerics id. Hashed (SHA-256) into the default ctx_params_hash.
  std::string kv_layout;
};

// Per-request sampling knobs. temperature <= 0 is greedy (argmax, lowest id on ties).
struct SamplingOptions {
  float temperature = 1.0f;
  int32_t top_k = 0;                // 0 = off
  float top_p = 1.0f;               // 1 = off
  float min_p = 0.0f;               // 0 = off
  float repetition_penalty = 1.0f;  // 1 = off; applies over the last 64 tokens
  float frequency_penalty = 0.0f;   // 0 = off; minus this per occurrence in the last 64 tokens
  float presence_penalty = 0.0f;    // 0 = off; minus this once if in the last 64 tokens
  std::optional<uint64_t> seed;     // unset = a fresh random seed per request
  // GBNF grammar (docs/grammar.md); empty = unconstrained. Tokens the grammar rejects get
  // no probability; the chain above then picks among the rest exactly as it would
  // among all tokens. End-of-generation tokens are allowed only where the grammar can end.
  std::string grammar;
  // Lazy grammar: unconstrained until the generated text contains one of these; the
  // grammar then applies from the start of the trigger (the trigger's own text is the
  // first text the grammar matches). A token that would complete a trigger is allowed
  // only if the grammar accepts the text from the trigger on. Empty = from the first token.
  std::vector<std::string> grammar_triggers;
  // Added to these tokens' logits before the penalties and everything else (OpenAI's
  // logit_bias): each bias in [-100, 100], -100 in practice bans the token, +100 forces
  // it. Ids must lie in the vocabulary (Runtime checks them against the model).
  std::vector<std::pair<TokenId, float>> logit_bias;
};

// The one range check of the sampling knobs (Runtime checks every request with it):
// InvalidArgument names the field and the value, e.g. "sampling.top_p must be in (0, 1],
// got 2". NaN is out of every range. A grammar that does not parse is
// "sampling.grammar: line L, column C: ...".
Status check_sampling(const SamplingOptions& options);

// One request's sampler: stateful (RNG, penalty window). Owned by the worker thread.
class TokenSampler {
 public:
  virtual ~TokenSampler() = default;
  // Picks the next token from one logits row (vocab_size floats). Does not mutate logits.
  virtual TokenId sample(std::span<const float> logits) = 0;
  // Records a token into the sampler's history (prompt tokens at creation, then each
  // generated token after it is chosen).
  virtual void accept(TokenId token) = 0;
  // The row the last sample() chose from after logit_bias and the penalties, before
  // truncation and temperature: what logprobs are computed from. Empty = the sampler
  // does not expose it (the runtime then uses the raw logits).
  virtual std::span<const float> adjusted_logits() const { return {}; }
};

// Incremental detokenizer: bytes of a multi-byte UTF-8 character split across tokens are
// held back until complete, so every returned fragment is valid UTF-8.
class TextStream {
 public:
  virtual ~TextStream() = default;
  virtual std::string push(TokenId token) = 0;  // may return "" (fragment held back)
  virtual std::string flush() = 0;              // whatever is still held back
};

// A LoRA adapter (llama.cpp's GGUF adapter format) to load into a model, with its
// default scale (ModelConfig::adapters, Runtime::load_adapter).
struct AdapterSpec {
  std::string path;
  float scale = 1.0f;
};

// One adapter applied to a forward row: its id in the model's adapter list and the
// user's scale (never 0: a zero-scale adapter is left out, which is the base model).
struct AdapterUse {
  int32_t id = 0;
  float scale = 1.0f;
  bool operator==(const AdapterUse&) const = default;
};

// One row of a forward pass: `tokens` at positions pos, pos+1, ... of sequence `seq`.
// A prefill slice has many tokens, a decode row has one. want_logits asks for the logits
// of the row's last token; logits_last_n > 0 for those of its last logits_last_n tokens
// (a speculative row: the pending token and the drafted ones), one row each, in order.
struct StepRow {
  int32_t seq = 0;
  int32_t pos = 0;
  std::span<const TokenId> tokens;
  bool want_logits = false;
  int32_t logits_last_n = 0;
  // How many logits rows this row yields.
  size_t n_logits() const {
    const size_t n = logits_last_n > 0 ? static_cast<size_t>(logits_last_n) : want_logits ? 1 : 0;
    return std::min(n, tokens.size());
  }
  // LoRA adapters applied to this row's tokens, in this order (ids given to
  // load_adapter); empty: the base model. A sequence keeps one set while it holds KV.
  std::span<const AdapterUse> adapters = {};
};

class Backend {
 public:
  virtual ~Backend() = default;

  // ---- any thread ----
  virtual BackendInfo info() const = 0;
  virtual KvIdentity kv_identity() const = 0;
  // add_special: prepend BOS (or what the model's tokenizer adds) when the model wants it.
  // special_ranges: byte ranges of `text` where the text of a control token (e.g.
  // "<|im_start|>", "</s>") becomes that token; elsewhere it is plain text. Empty is
  // parse_special=false, {0, text.size()} is parse_special=true (special_ranges_for), a
  // rendered chat prompt passes its template's own text. A range outside `text` ->
  // InvalidArgument.
  virtual Result<std::vector<TokenId>> tokenize(
      std::string_view text, bool add_special, std::span<const TextRange> special_ranges) const = 0;
  virtual Result<std::string> detokenize(std::span<const TokenId> tokens) const = 0;
  virtual std::unique_ptr<TextStream> text_stream() const = 0;
  // One token's raw bytes, as it adds them to a text (no leading space dropped; may be a
  // part of a UTF-8 character). The default decodes the token alone.
  virtual Result<std::string> token_bytes(TokenId token) const {
    return detokenize(std::span<const TokenId>(&token, 1));
  }
  // history: the prompt, fed to accept() so penalties see it.
  virtual Result<std::unique_ptr<TokenSampler>> make_sampler(
      const SamplingOptions& options, std::span<const TokenId> history) const = 0;

  // ---- worker thread only ----
  // One forward pass over all rows (several sequences). logits_out receives
  // StepRow::n_logits() vocab_size rows per StepRow, in row order. On error the KV cells
  // written by this call are unspecified: the runtime truncates or restarts.
  virtual Status step(std::span<const StepRow> rows,
                      std::vector<std::vector<float>>* logits_out) = 0;
  // Serialises the KV cells of positions [0, n_pos) of `seq`.
  virtual Result<std::vector<uint8_t>> kv_pack(int32_t seq, int32_t n_pos) = 0;
  // Replaces `seq`'s cells with positions [0, n_pos) from kv_pack bytes.
  virtual Status kv_unpack(int32_t seq, std::span<const uint8_t> bytes, int32_t n_pos) = 0;
  // Makes `dst`'s cells a copy of positions [0, n_pos) of `src` (n > 1 choices fork
  // from the sequence that prefilled their prompt). The default goes through kv_pack and
  // kv_unpack; a backend with direct access to its cells copies them in place.
  virtual Status kv_copy(int32_t src, int32_t dst, int32_t n_pos) {
    HEARTH_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, kv_pack(src, n_pos));
    return kv_unpack(dst, bytes, n_pos);
  }
  // Optional in-place restore: empties `seq` and returns writable spans of its cells for
  // positions [0, n_pos) whose concatenation is kv_pack's layout; after the caller has
  // filled them, kv_import_commit(seq, n_pos) makes them live. An empty result means
  // the backend has none (use kv_unpack); so does a failure before the commit (the
  // sequence stays empty).
  virtual Result<std::vector<std::span<uint8_t>>> kv_import_spans(int32_t seq, int32_t n_pos) {
    (void)seq, (void)n_pos;
    return std::vector<std::span<uint8_t>>{};
  }
  virtual Status kv_import_commit(int32_t seq, int32_t n_pos) {
    (void)seq, (void)n_pos;
    return Unsupported("this backend has no in-place KV import");
  }
  // Drops positions >= n_pos of `seq` (n_pos = 0 empties it).
  virtual Status seq_truncate(int32_t seq, int32_t n_pos) = 0;
  // Mean-pooled, L2-normalised embedding of `tokens` (uses no sequence slot).
  virtual Result<std::vector<float>> embed(std::span<const TokenId> tokens) = 0;
  // Unnormalised embeddings of several inputs, pooled as asked (Pooling::kNone: every
  // token's vector, n_tokens * n_embd floats), in one or a few forward passes; an
  // input's vector must not depend on the others. The default serves mean pooling
  // through embed() (already L2-normalised) and refuses the others.
  virtual Result<std::vector<std::vector<float>>> embed_batch(
      std::span<const std::vector<TokenId>> inputs, Pooling pooling) {
    if (pooling != Pooling::kMean) {
      return Unsupported("pooling '" + std::string(pooling_name(pooling)) +
                         "' is not supported by this backend (mean only)");
    }
    std::vector<std::vector<float>> out;
    for (const auto& in : inputs) {
      HEARTH_ASSIGN_OR_RETURN(auto v, embed(in));
      out.push_back(std::move(v));
    }
    return out;
  }
  // LoRA: makes adapter `id` usable in StepRow::adapters (errors name the file's bad
  // key or tensor), and forgets it. Backends without adapter support: Unsupported.
  virtual Status load_adapter(int32_t id, const std::string& path) {
    (void)id;
    return Unsupported("this backend does not support LoRA adapters (" + path + ")");
  }
  virtual Status unload_adapter(int32_t id) {
    return NotFound("no LoRA adapter " + std::to_string(id) + " is loaded");
  }
};

// Builds a backend for a model; called at load and again when the worker restarts.
using BackendFactory = std::function<Result<std::unique_ptr<Backend>>()>;

}  // namespace hearth::runtime
