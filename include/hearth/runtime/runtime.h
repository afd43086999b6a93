// hearth's runtime: many loaded models, each driven by its own worker thread running a
// continuous-batching scheduler, all sharing one token-exact KV cache.
//
//   auto rt = Runtime::create(RuntimeOptions{});           // starts the shared cache
//   ModelConfig cfg; cfg.model_path = "m.gguf"; cfg.n_seq_max = 4;
//   auto id = (*rt)->load_model(cfg);                       // "model_1" unless cfg.id set
//   auto r = (*rt)->complete(*id, "Hello", RequestParams{});
//   r->reply, r->finish_key (hand it back as parent_key for the next turn)
//
// Every method is thread-safe and returns errors as values (no exceptions escape).
// Error codes: NotFound (unknown model), AlreadyExists (id in use), InvalidArgument (bad
// config/params, a prompt token id outside the vocabulary), OutOfRange (prompt +
// response_tokens > context), ResourceExhausted
// (request queue full: HTTP 429), Unavailable (model restarting/unloading, runtime shut
// down), Internal (the model's worker failed during the request).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hearth/cache/config.h"
#include "hearth/cache/io.h"
#include "hearth/cache/scheduler.h"
#include "hearth/cache/types.h"
#include "hearth/engine/kv_type.h"
#include "hearth/progress.h"
#include "hearth/runtime/backend.h"
#include "hearth/status.h"

namespace hearth::runtime {

// ---------------------------------------------------------------- configuration

// One vocabulary with the cache (include/hearth/cache/types.h): a tier, a fingerprint
// mode and a save reason are the cache's own types, named here for the runtime's users.
using cache::FingerprintMode;  // kSafe: SHA-256 of the whole file; kGgufChunked (default):
                               // of the GGUF metadata + first tensor; kFastUnsafe: trust
                               // ModelConfig::fingerprint_hex as given
using cache::SaveReason;
using cache::Tier;
using cache::tier_from_name;
using cache::tier_name;  // "ram", "ram_file", "disk"

// Cache save-policy, per model. The default rule is the cost rule (docs/cache-design.md,
// "When a row is saved"): a row is saved when prefilling its tokens again would cost more
// than writing it, both estimated from measured rates (the model's prefill tokens/s, the
// tier's write bytes/s; priors before the first measurement). Setting min_tokens (>= 0)
// switches to the spec's static gates: a row is saved when it holds min_tokens tokens.
struct ModelSavePolicy {
  static constexpr int32_t kCostRule = -1;  // min_tokens value: the cost rule decides
  int32_t min_tokens = kCostRule;           // no save shorter than this (the spec: 512)
  int32_t cold_min_tokens = 512;            // no cold save for shorter prompts
  int32_t cold_max_tokens = 30000;          // cold save length cap
  int32_t continued_interval = 2048;        // continued save every N generated tokens
  int32_t boundary_trim_tokens = 32;        // cold save drops the last N prompt tokens...
  int32_t boundary_align_tokens = 2048;     // ...then rounds down to a multiple of this;
                                            // also the stride of the prefix walk
  int32_t session_resume_wait_ms = 500;     // wait for an in-flight parent finish save
  int32_t evict_save_timeout_ms = 30000;    // bound on unload/shutdown saves
  // The cost rule's rates; 0 = measured (the default). A value fixes the rate (tests,
  // or an operator who knows the machine): prefill tokens per second of this model, and
  // bytes per second a save to this model's tier writes.
  int32_t prefill_tokens_per_s = 0;
  int32_t write_bytes_per_s = 0;
};

// Sets the policy field named `key` ("min_tokens", "cold_min_tokens", "cold_max_tokens",
// "continued_interval", "boundary_trim_tokens", "boundary_align_tokens",
// "session_resume_wait_ms", "evict_save_timeout_ms", "prefill_tokens_per_s",
// "write_bytes_per_s"): the one list of the names configuration files and the admin API
// accept. InvalidArgument names an unknown key, or a value outside 0..INT32_MAX.
Status set_save_policy_field(ModelSavePolicy& policy, std::string_view key, int64_t value);

// ---------------------------------------------------------------- batch strategies

// One running sequence as a batch strategy sees it at the start of a tick.
struct PlanCandidate {
  int32_t slot = 0;
  bool decode = false;            // has a sampled token waiting to be fed
  int32_t prefill_remaining = 0;  // prompt tokens still to prefill (0 when decoding)
};

// One row of the tick's forward pass: a decode row (one token) or a prefill slice.
struct PlanRow {
  int32_t slot = 0;
  bool decode = false;
  int32_t prefill_len = 0;
};

// Builds one tick's batch (LlamaCppEx's replaceable build_batch). `candidates` are in
// admission order; `budget` is n_batch (tokens per forward pass); `chunk` is the per-row
// prefill cap (0 = none). The result may name each candidate at most once: a decode row
// only for a decoding candidate, a prefill slice of 1..prefill_remaining tokens (and at
// most `chunk`) only for a prefilling one, all within `budget`. A candidate left out waits
// a tick. The worker checks these rules and treats a violation as a worker failure.
// Called on the model's worker thread only.
class BatchPlanner {
 public:
  virtual ~BatchPlanner() = default;
  virtual std::vector<PlanRow> plan(std::span<const PlanCandidate> candidates, int32_t budget,
                                    int32_t chunk) const = 0;
  virtual std::string name() const = 0;
};

// The built-in strategies.
enum class BatchStrategy {
  kDecodeFirst,   // every decode row, then prefill slices in what is left (default)
  kPrefillFirst,  // prefill slices first; decode rows that no longer fit wait a tick
  kBalanced,      // prefill gets at most half the budget while decoders are waiting
};
const char* batch_strategy_name(BatchStrategy strategy);  // "decode_first", ...
std::optional<BatchStrategy> batch_strategy_from_name(std::string_view name);
std::shared_ptr<const BatchPlanner> builtin_batch_planner(BatchStrategy strategy);

// Engine threads a model gets by default: the machine's cores divided among `n_models`
// loaded models (at least 1), so several models do not each take every core.
int32_t default_thread_count(int32_t n_models);

// ---------------------------------------------------------------- speculative decoding

// How a request's tokens are drafted before the target verifies them in one forward pass
// (docs/runtime.md, "Speculative decoding"). The output is the same tokens as without
// speculation, bit for bit, for every sampler: each token is still drawn by the request's
// own sampler from the target's logits, in order; a draft only decides how many positions
// of one forward pass are usable.
enum class SpeculativeType {
  kNone,   // one token per forward pass
  kDraft,  // a smaller draft model beside the target (SpeculativeConfig::draft_model)
  kNgram,  // prompt lookup: the tokens that followed the context's last n-gram earlier on
};
const char* speculative_type_name(SpeculativeType type);  // "none", "draft", "ngram"
std::optional<SpeculativeType> speculative_type_from_name(std::string_view name);

// Per model: the draft model and the defaults of the per-request SpeculativeParams.
struct SpeculativeConfig {
  // Default type of the model's requests; unset: kDraft when draft_model is set, else kNone.
  std::optional<SpeculativeType> type;
  // GGUF of the draft model, loaded beside the target with the target's n_ctx, n_seq_max
  // and threads. Its vocabulary must be the target's (the load fails naming the key).
  std::string draft_model;
  int32_t draft_max = 16;  // most tokens drafted per forward pass of the target (1..256)
  int32_t draft_min = 0;   // a draft shorter than this is not verified (0..draft_max)
  // Draft model: drafting stops at a token whose draft probability is below this (0..1).
  float draft_p_min = 0.0f;
  int32_t ngram_max = 3;  // prompt lookup tries the last ngram_max..1 tokens (1..8)
  // Where the draft model's layers run (ModelConfig::device / n_gpu_layers' meaning).
  // Unset draft_device: the target's device and layer count; a draft_device without
  // draft_n_gpu_layers puts every draft layer on it.
  std::optional<std::string> draft_device;
  std::optional<int32_t> draft_n_gpu_layers;
  // Adaptive drafting (docs/runtime.md, "Adaptive drafting"): each tick a request drafts
  // the number of tokens (0..draft_max) that maximises its expected tokens per second,
  // from its recent acceptance and the worker's measured cost of verify passes; 0 when no
  // draft pays, then a one-token probe every probe_interval plain steps (0 = no probes).
  // false: always draft up to draft_max.
  bool adaptive = true;
  int32_t probe_interval = 16;  // 0..4096
  SpeculativeType resolved_type() const {
    return type ? *type : draft_model.empty() ? SpeculativeType::kNone : SpeculativeType::kDraft;
  }
};

struct ModelConfig {
  std::string id;          // empty: generated ("model_1", "model_2", ...)
  std::string model_path;  // GGUF file (the engine backend's; fingerprinted either way)
  // Optional: builds the backend (a custom backend; tests inject a stub here). Unset =
  // EngineBackend over hearth::Engine loading model_path.
  BackendFactory factory;

  // Context per sequence; 0 = the model's own, or the largest that fits kv_budget_bytes.
  // An explicit context whose KV exceeds the budget fails the load (docs/runtime.md).
  int32_t n_ctx = 0;
  // Bound on the KV memory the backend commits at load for all its sequences; 0 = the
  // engine's default, hearth::kDefaultKvBudgetBytes (4 GiB).
  uint64_t kv_budget_bytes = 0;
  int32_t n_batch = 512;           // max tokens per forward pass; must be >= n_seq_max
  int32_t n_seq_max = 1;           // concurrent sequences (continuous batching)
  int32_t prefill_chunk_size = 0;  // per-row prefill slice cap; 0 = max(64, n_batch/4),
                                   // -1 = unlimited
  // Engine threads (counting the worker thread that drives them); 0 = the default,
  // default_thread_count(models loaded with this one). `hearth serve` divides the cores
  // among the models it loads at start.
  int32_t n_threads = 0;
  // Element type of the engine's K and V rows (f16, q8_0, q4_0: hearth/engine/kv_type.h).
  // Part of the cache namespace through the backend's kv_layout: rows never cross types.
  KvType kv_type = KvType::kF16;
  // How each tick's batch is built; null = builtin_batch_planner(kDecodeFirst). A library
  // user may pass their own BatchPlanner.
  std::shared_ptr<const BatchPlanner> batch_planner;
  // Sliding-window layers (gemma2/3) keep every position (EngineOptions::swa_full)
  // instead of a ring of window + n_batch: more KV memory, but sticky and restored
  // prefixes can be cut anywhere instead of falling back to a cold prefill.
  bool swa_full = false;
  // Weight matrices read in place from the file mapping (EngineOptions::weights_in_place:
  // no copy at load, pages shared with the page cache) instead of copied once into huge
  // pages with interleaved row groups (the default: faster decode; docs/engine.md).
  bool weights_in_place = false;
  // Where the engine backend's layers run (EngineOptions::device, docs/gpu.md): "cpu"
  // (default), "cuda" or "cuda:N" (hearth/engine/device_spec.h), and how many of the
  // first layers run on the GPU (-1 = every layer and the output head; a count > 0 needs
  // a GPU device). The load fails naming `device` when the build or the machine lacks
  // it. Part of the cache namespace through the engine's numerics id (rows never cross
  // devices). A custom BackendFactory refuses any device but "cpu".
  std::string device = "cpu";
  int32_t n_gpu_layers = -1;
  // Embeddings' pooling when a request names none; unset: the model's own (GGUF
  // <arch>.pooling_type, else mean).
  std::optional<Pooling> pooling;
  // Prefer the free sequence whose resident KV cells share the longest prefix with a new
  // prompt (reused in place: cache_hit_kind sticky) over restoring from the cache.
  bool slot_affinity = true;

  FingerprintMode fingerprint_mode = FingerprintMode::kGgufChunked;
  std::string fingerprint_hex;                     // required for kFastUnsafe (64 hex chars)
  std::optional<std::string> ctx_params_hash_hex;  // default: SHA-256 of KvIdentity::kv_layout

  // LoRA adapters loaded with the model (ids 0, 1, ... in this order; reloaded after a
  // worker restart), each with its default scale. Backends without adapter support fail
  // the load with Unsupported.
  std::vector<AdapterSpec> adapters;

  // Where this model's saves go; unset: RuntimeOptions::default_tier.
  std::optional<Tier> tier;
  ModelSavePolicy policy;

  int32_t max_queue = 64;           // waiting requests beyond n_seq_max; more -> 429
  int32_t max_restarts = 5;         // consecutive worker failures before the model is marked
                                    // failed (0 = fail at the first)
  int32_t restart_backoff_ms = 20;  // doubled per consecutive restart, capped at 2 s
  // The engine backend's load progress (bytes of weights), on the loading thread; may
  // be empty. Called again when a restarted worker reloads the model.
  ProgressFn on_load_progress;

  // Jinja chat template overriding the backend's tokenizer.chat_template (the server's
  // per-model chat_template_file); empty = the model's own. LoadedModelInfo carries it.
  std::string chat_template;

  // Sticky sessions (RequestParams::session_id): a session idle (no request in flight)
  // for longer than this is released: its cells are saved to the cache (reason evict)
  // and freed. 0 = never expire on idleness (still released when its sequence is needed).
  int32_t session_idle_ms = 300000;
  // Speculative decoding: the draft model and the requests' defaults.
  SpeculativeConfig speculative;
  // Builds the draft backend; unset = an engine backend over speculative.draft_model.
  // Tests inject a stub here.
  BackendFactory draft_factory;
};

struct CacheOptions {
  uint64_t ram_bytes = 1ull << 30;  // RAM tier quota
  std::string ram_file_dir;         // ram_file tier directory (e.g. /dev/shm/hearth); "" = off
  uint64_t ram_file_bytes = 4ull << 30;
  std::string disk_dir;  // disk tier directory; "" = off
  uint64_t disk_bytes = 64ull << 30;
  int32_t writer_threads = 2;  // async save workers per tier (the cache's writers)
  // Delta rows: a row continuing a shorter row of its tier stores only the positions
  // after it, at most this many links above a full row (cache::CacheConfig::
  // max_delta_depth; 0 = every row whole). Backends whose KV has no delta layout
  // (BackendInfo::kv_pack_groups = 0) always save whole rows.
  uint32_t max_delta_depth = 8;
  // The shared remote (Redis) tier; off while remote.url is empty.
  cache::RemoteTierConfig remote;
  // Memory-pressure eviction (off by default): the cache's poller evicts LRU rows of
  // pressure.evict_tiers while used/total memory is above the high watermark.
  cache::SchedulerConfig pressure;
  // The file tiers' I/O (hearth::cache::CacheIo); null = the real system calls. Tests
  // wrap it to inject faults and slow or stuck publishes.
  std::shared_ptr<cache::CacheIo> io;
};

struct RuntimeOptions {
  CacheOptions cache;
  // The save tier of a model whose ModelConfig::tier is unset (the spec's default: RAM,
  // the one tier every cache has; `hearth serve` picks its most durable enabled tier).
  Tier default_tier = Tier::kRam;
};

// ---------------------------------------------------------------- models

enum class ModelStatus { kIdle, kPrefilling, kGenerating, kRestarting, kFailed };
const char* model_status_name(ModelStatus status);  // "idle", "prefilling", ...

// Model ids are 1-128 characters of A-Z a-z 0-9 . _ : / - with no empty, "." or ".."
// segment between slashes ("org/model-7b:q4"). They reach URLs, metrics labels and
// logs; load_model refuses any other id (InvalidArgument).
inline constexpr size_t kMaxModelIdLength = 128;
Status check_model_id(std::string_view id);
// A valid id made from arbitrary text (e.g. a file name): other characters become '_'.
std::string model_id_from(std::string_view text);

// One open sticky session (RequestParams::session_id, Runtime::continue_session).
struct SessionInfo {
  std::string id;
  int32_t seq = -1;      // the pinned sequence; -1 until its first request is admitted
  int64_t n_tokens = 0;  // tokens the session holds (prompt + generated so far)
  bool busy = false;     // a request of the session is queued or running
  int64_t idle_ms = 0;   // since its last request ended (0 while busy)
};

// Session ids are 1-128 characters of A-Z a-z 0-9 . _ : - (chosen by the client).
inline constexpr size_t kMaxSessionIdLength = 128;
Status check_session_id(std::string_view id);
// The errors of the session calls carry these codes, first in their message
// ("no_session: ...", "sticky_busy: ..."): NotFound for no_session (unknown, released or
// expired), FailedPrecondition for sticky_busy (a request of the session is in flight).
inline constexpr std::string_view kNoSession = "no_session";
inline constexpr std::string_view kStickyBusy = "sticky_busy";
// The session code of an error ("no_session", "sticky_busy"), empty for any other error.
std::string_view session_error_code(const Status& status);
// One input of Runtime::embeddings: text, or token ids used as they are.
struct EmbeddingInput {
  std::string text;
  std::optional<std::vector<TokenId>> tokens;
};

struct EmbeddingOptions {
  std::optional<Pooling> pooling;  // unset: the model's (LoadedModelInfo::pooling)
  int32_t normalize = 2;           // embd_normalize: -1 none, 0 max-abs, 1 taxicab, 2 L2, p
  // > 0: keep the first `dimensions` values of each vector, then normalise (Matryoshka
  // shortening; meaningful for models trained for it). 0: the model's width.
  int32_t dimensions = 0;
};

struct EmbeddingResult {
  // Per input: one vector of `width` floats, or with Pooling::kNone n_tokens[i] of them
  // back to back.
  std::vector<std::vector<float>> vectors;
  std::vector<int32_t> n_tokens;  // tokens each input was evaluated as
  Pooling pooling = Pooling::kMean;
  int32_t width = 0;
};

struct LoadedModelInfo {
  std::string id;
  ModelStatus status = ModelStatus::kIdle;  // dominant phase of in-flight requests
  std::string backend;                      // BackendInfo::backend_name
  std::string model_path;
  std::string architecture;
  int32_t context_size = 0;
  int32_t n_seq_max = 1;
  int32_t n_vocab = 0;               // valid token ids are [0, n_vocab)
  int32_t embedding_dim = 0;         // width of embeddings() vectors
  Pooling pooling = Pooling::kMean;  // embeddings' default: ModelConfig::pooling, else the model's
  bool embedding_only = false;       // bert: embeddings only, generation is refused
  std::string quant_type;
  int32_t quant_bits = 0;
  std::string device = "cpu";  // BackendInfo::device ("cuda:0 NVIDIA H200, sm_90")
  int32_t n_gpu_layers = 0;    // BackendInfo::n_gpu_layers (0 on the CPU)
  Tier tier = Tier::kRam;
  std::string fingerprint_hex;
  std::string ctx_params_hash_hex;
  std::chrono::system_clock::time_point loaded_at;
  uint64_t memory_estimate_bytes = 0;
  int32_t active_requests = 0;  // requests holding a sequence
  int32_t queued_requests = 0;
  int32_t restarts = 0;
  uint64_t scheduler_steps = 0;  // Backend::step calls so far (one per tick with work)
  std::string chat_template;     // BackendInfo::chat_template
  std::string bos_text;          // BackendInfo::bos_text
  std::string eos_text;          // BackendInfo::eos_text
  bool add_bos = false;          // BackendInfo::add_bos
  int32_t max_token_bytes = 0;   // BackendInfo::max_token_bytes
  int32_t n_threads = 0;         // engine threads (ModelConfig::n_threads, resolved)
  int32_t n_batch = 0;
  std::string batch_strategy;  // BatchPlanner::name()
  // The cost rule's current estimates (ModelSavePolicy): measured or fixed.
  double prefill_tokens_per_s = 0;
  double write_bytes_per_s = 0;
  int32_t session_idle_ms = 0;        // ModelConfig::session_idle_ms
  std::vector<SessionInfo> sessions;  // open sticky sessions, by id
};

// A loaded LoRA adapter of a model (Runtime::list_adapters).
struct AdapterInfo {
  int32_t id = 0;  // stable: an unloaded adapter's id is never reused
  std::string path;
  float scale = 1.0f;      // the model's current scale (requests without `lora` use it)
  std::string sha256_hex;  // of the file; with the scale, what the cache keys rows on
};
// An adapter's scale, by id (Runtime::set_adapter_scales, RequestParams::lora).
struct AdapterScale {
  int32_t id = 0;
  float scale = 1.0f;
};

// ---------------------------------------------------------------- requests

using RequestId = uint64_t;

enum class CacheHitKind {
  kCold,          // nothing restored
  kExact,         // parent_key row restored
  kResume,        // parent_key row whose finish save was in flight, waited for
  kPartial,       // longest cached prefix (radix / stride walk) restored
  kSticky,        // the sequence's resident KV cells already held a prefix
  kContinuation,  // a sticky session's pinned sequence, extended with no lookup
};
const char* cache_hit_kind_name(CacheHitKind kind);  // "cold", "exact", ...
// The cache counter that counts requests started with this kind ("hits_exact", ...,
// "misses"); the runtime's counters carry it with a "runtime_" prefix
// (Runtime::cache_counters, GET /hearth/cache/counters).
const char* hit_counter_name(CacheHitKind kind);

enum class FinishReason { kStop, kLength, kCancelled };
const char* finish_reason_name(FinishReason reason);  // "stop", "length", "cancelled"

struct CacheDelta {
  int64_t read = 0;     // tokens restored from the cache
  int64_t created = 0;  // tokens computed by forward passes (prefilled + decoded)
};

// The log-probability of a generated token and of the most likely tokens at its
// position: the log-softmax of the logits the sampler chose from, after logit_bias and
// the penalties, before top_k / top_p / min_p / temperature (docs/runtime.md, Logprobs).
struct TokenLogprob {
  TokenId token = 0;
  float logprob = 0;
};
struct TokenLogprobs {
  TokenId token = 0;  // the token generated
  float logprob = 0;
  std::vector<TokenLogprob> top;  // the RequestParams::logprobs most likely, best first
                                  // (ties: lowest id first)
};
inline constexpr int32_t kMaxTopLogprobs = 20;

// Closes a reasoning ("think") block after a token budget: once `budget` tokens were
// generated inside the block, the next tokens are `close` (the family's closing tag),
// appended to the sequence instead of sampled ones; sampling then resumes. The block
// opens when the generated tokens end with `open`, or at the start (starts_inside: the
// prompt opened it). Off when budget < 0 or close is empty.
struct ThinkingBudget {
  int32_t budget = -1;
  bool starts_inside = false;
  std::vector<TokenId> open;
  std::vector<TokenId> close;
};

struct RequestParams {
  int32_t response_tokens = 128;          // max tokens to generate
  std::optional<std::string> parent_key;  // finish_key of an earlier turn (hex)
  SamplingOptions sampling;
  std::vector<std::string> stop_sequences;  // generation ends before the first match
  bool capture_logits = false;              // fill CompletionResult::token_logits (tests)
  // -1: no logprobs (nothing computed). 0..kMaxTopLogprobs: each generated token's
  // logprob and that many top alternatives (StreamSink::on_logprobs,
  // CompletionResult::logprobs).
  int32_t logprobs = -1;
  bool add_special = true;  // complete(): tokenizer adds BOS when the model wants
  // complete(): control-token text in the prompt (a prompt rendered with a chat template)
  // becomes control tokens. Set false for a prompt that is user text.
  bool parse_special = true;
  // false: no cache lookup (nor reuse of a sequence's resident cells) and no save for this
  // request (llama-server's cache_prompt); finish_key stays unset.
  bool cache_prompt = true;
  ThinkingBudget thinking;
  // Sticky session (docs/runtime.md, "Sticky sessions"). Unknown id: the session opens,
  // pinning the sequence this request runs on. Open id: the request runs on the pinned
  // sequence; when the session's tokens (its last prompt + generated tokens) are a prefix
  // of the prompt, only the rest is prefilled, with no cache lookup (hit kind
  // continuation); otherwise the prompt is admitted as usual on that sequence (counted as
  // runtime_session_fallbacks). A request of a session that is already in flight fails
  // with sticky_busy. Not with cache_prompt = false nor with several choices.
  std::optional<std::string> session_id;
  // Speculative decoding for this request (llama-server's speculative.n_max / n_min /
  // p_min); each unset field takes the model's SpeculativeConfig value.
  struct Speculative {
    std::optional<SpeculativeType> type;
    std::optional<int32_t> n_max;  // 0 = off
    std::optional<int32_t> n_min;
    std::optional<float> p_min;
    std::optional<bool> adaptive;  // SpeculativeConfig::adaptive
  } speculative;
  // LoRA scales for this request (llama-server's `lora` field): every adapter of the
  // model not listed runs at scale 0. Unset: the model's current scales
  // (Runtime::set_adapter_scales). An unknown id -> InvalidArgument naming lora[i].id.
  std::optional<std::vector<AdapterScale>> lora;
};

struct RequestStats {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  double prefill_ms = 0;     // admit -> first token sampled (includes restore)
  double generation_ms = 0;  // first token -> finish
  double queue_ms = 0;       // waiting for a free sequence
  // A prompt restored from a cache row: checkout (and verify) to KV ready, and the
  // tier the row came from. -1 / unset when nothing was restored (cold, sticky).
  double restore_ms = -1;
  std::optional<Tier> restore_tier;
  CacheHitKind cache_hit_kind = CacheHitKind::kCold;
  FinishReason finish_reason = FinishReason::kStop;
  bool cancelled = false;
  std::optional<std::string> finish_key;  // hex; unset when the save was gated off
  int64_t committed_tokens = 0;
  CacheDelta cache_delta;
  std::optional<std::string> stop_sequence;  // the stop sequence that ended it, if any
  // Cancelled requests: Backend::step calls that started after the cancel was requested
  // and before the sequence was freed. The scheduler checks cancel flags at the top of
  // every tick, so this is 0 or 1 (the step already running). -1 when not cancelled.
  int64_t steps_after_cancel = -1;
  // Speculative decoding: tokens drafted and verified, and how many of them the target
  // agreed with (each accepted one saved a forward pass).
  int64_t draft_tokens = 0;
  int64_t draft_accepted = 0;
  // Forward passes that decoded this request's tokens, and how many of them verified a
  // draft (draft_tokens / draft_steps is the mean draft length).
  int64_t decode_steps = 0;
  int64_t draft_steps = 0;
};

struct CompletionResult {
  std::string reply;                    // generated text, stop sequence excluded
  std::vector<TokenId> generated;       // generated token ids
  std::vector<TokenId> context_tokens;  // prompt + generated
  // Tokens whose KV cells the sequence held at the end (the finish row's length): the
  // last sampled token is never fed back, so usually context_tokens.size() - 1.
  int64_t committed_tokens = 0;
  std::optional<std::string> finish_key;  // hex; pass as parent_key for the next turn
  CacheHitKind cache_hit_kind = CacheHitKind::kCold;
  FinishReason finish_reason = FinishReason::kStop;
  CacheDelta cache_delta;
  RequestStats stats;
  std::optional<std::string> stop_sequence;
  std::vector<std::vector<float>> token_logits;  // per generated token, if capture_logits
  std::vector<TokenLogprobs> logprobs;           // per generated token, if params.logprobs >= 0
};

// Runtime::verify's answer (the spec's {ok, AcceptedCount, NextToken | eos}).
struct VerifyResult {
  int32_t accepted = 0;  // leading draft tokens the model's greedy choice agrees with
  TokenId next = 0;      // the model's greedy token after prefix + accepted draft tokens
  bool eos = false;      // next is an end-of-generation token
};

struct PrefillResult {
  std::vector<TokenId> context_tokens;
  int64_t committed_tokens = 0;
  std::optional<std::string> finish_key;  // unset when below min_tokens
  CacheHitKind cache_hit_kind = CacheHitKind::kCold;
  CacheDelta cache_delta;
};

// Streaming callbacks, invoked on the model's worker thread: keep them short and never
// call back into a blocking Runtime method from them. Exactly one of on_done / on_error
// is called, exactly once, after which no callback runs again. A callback that throws is
// treated as a cancel.
struct StreamSink {
  std::function<void(std::string_view text)> on_text;  // non-empty UTF-8 fragments
  std::function<void(TokenId token)> on_token;         // every generated token
  // params.logprobs >= 0: each generated token's logprobs, just before its on_token.
  std::function<void(const TokenLogprobs& logprobs)> on_logprobs;
  std::function<void(const RequestStats& stats)> on_done;
  std::function<void(const Status& error)> on_error;
};

// ---------------------------------------------------------------- cache admin

// One cache row as the operator sees it (Runtime::cache_rows).
struct CacheRowSummary {
  std::string key_hex;
  Tier tier = Tier::kRam;
  uint64_t size_bytes = 0;  // what the tier quota counts (the payload while still queued)
  uint32_t n_tokens = 0;
  uint32_t hits = 0;
  uint64_t last_used_ns = 0;  // steady clock
  bool in_flight = false;     // save reserved, not yet published
  uint32_t refcount = 0;      // active checkouts, plus one per delta row continuing it
  uint32_t delta_depth = 0;   // 0: a full row; else a delta row this many links above one
  // Model fingerprint (hex), from the row's KVC fingerprint TLV (an in-flight async save:
  // from its metadata); empty only for a sync save not yet published.
  std::string fingerprint_hex;
};

struct CacheEvictSummary {
  uint64_t rows = 0;
  uint64_t bytes = 0;
};

// ---------------------------------------------------------------- the runtime

class Runtime {
 public:
  static Result<std::unique_ptr<Runtime>> create(RuntimeOptions options);
  ~Runtime();  // shutdown()
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // ---- registry ----
  // Loads (fingerprints, builds the backend, starts the worker). Returns the model id.
  Result<std::string> load_model(ModelConfig config);
  // Stops admitting, cancels in-flight requests (their finish saves still run), runs
  // shutdown saves bounded by policy.evict_save_timeout_ms, joins the worker.
  Status unload_model(std::string_view model_id);
  std::vector<LoadedModelInfo> list_models() const;
  Result<LoadedModelInfo> model_info(std::string_view model_id) const;

  // ---- LoRA adapters (docs/runtime.md "LoRA adapters") ----
  // The model's adapters in id order.
  Result<std::vector<AdapterInfo>> list_adapters(std::string_view model_id) const;
  // Loads an adapter (validated against the model: errors name the key or tensor);
  // returns it with its new id. Requests may use it at once.
  Result<AdapterInfo> load_adapter(std::string_view model_id, const AdapterSpec& spec);
  // Forgets adapter `id`. FailedPrecondition while a queued or running request uses it.
  Status unload_adapter(std::string_view model_id, int32_t id);
  // llama-server's POST /lora-adapters: the listed adapters get these scales, every
  // other adapter of the model scale 0. Unknown id -> InvalidArgument naming it.
  Status set_adapter_scales(std::string_view model_id, std::span<const AdapterScale> scales);

  // ---- requests ----
  // Tokenizes `prompt`, runs it, blocks until done.
  Result<CompletionResult> complete(std::string_view model_id, std::string_view prompt,
                                    const RequestParams& params);
  Result<CompletionResult> complete_tokens(std::string_view model_id,
                                           std::span<const TokenId> prompt,
                                           const RequestParams& params);
  // Streaming: admits (or queues FIFO) and returns at once; events go to `sink`.
  Result<RequestId> infer(std::string_view model_id, std::span<const TokenId> prompt,
                          const RequestParams& params, StreamSink sink);
  // n = sinks.size() choices for one prompt (OpenAI's n): the first sequence prefills the
  // prompt once (with the cache as infer does), the others copy its KV (Backend::kv_copy)
  // and its last logits, then each samples on its own into its sink. Choice i samples
  // with seed + i (wrapping) when params.sampling.seed is set, so choice 0 is what infer
  // gives and the same request gives the same n outputs; unset, each draws its own. The
  // request waits in the queue until n sequences are free at once. Returns the n request
  // ids (each cancellable); n above the model's n_seq_max -> InvalidArgument naming n.
  Result<std::vector<RequestId>> infer_n(std::string_view model_id, std::span<const TokenId> prompt,
                                         const RequestParams& params,
                                         std::vector<StreamSink> sinks);
  // Idempotent, fire-and-forget; observed between ticks. Unknown ids are ignored.
  void cancel(RequestId request);
  // The spec's continue: appends `suffix` to the open session `session_id` (the exact
  // tokens that follow its stored tokens) and generates, with no cache lookup; streams like
  // infer. params.session_id and parent_key must be unset. Errors: no_session (unknown,
  // released or expired), sticky_busy (the session's request is still in flight).
  Result<RequestId> continue_session(std::string_view model_id, std::string_view session_id,
                                     std::span<const TokenId> suffix, const RequestParams& params,
                                     StreamSink sink);
  // Releases a session: its cells are saved to the cache (reason evict) and freed, so a
  // later request without the session is still warm. no_session / sticky_busy as above.
  Status release_session(std::string_view model_id, std::string_view session_id);

  // Prefills `prompt` into KV and fires a finish save; returns its key.
  Result<PrefillResult> prefill_only(std::string_view model_id, std::span<const TokenId> prompt,
                                     const RequestParams& params = {});

  // The spec's verify(model, Prefix, Draft, K): scores the first min(K, draft.size())
  // draft tokens after `prefix` in one forward pass and returns how many of them agree
  // with the model's greedy choice, and its own next token. The prefix comes from a
  // sequence's resident cells or the cache as a request's would; the draft's cells are
  // dropped again (the sequence keeps prefix + accepted). Runs only while the model is
  // idle: FailedPrecondition "busy" while requests are in flight or queued.
  Result<VerifyResult> verify(std::string_view model_id, std::span<const TokenId> prefix,
                              std::span<const TokenId> draft, int32_t k);

  // ---- model utilities (safe while the model generates) ----
  // parse_special: the text of control tokens ("<|im_start|>", "</s>") becomes their ids;
  // false (the default) tokenizes it as the plain text it is, which user text needs.
  Result<std::vector<TokenId>> tokenize(std::string_view model_id, std::string_view text,
                                        bool add_special = true, bool parse_special = false) const;
  // tokenize with control-token text honoured only inside `special_ranges` (byte ranges of
  // `text`): a rendered chat prompt passes its template's own text, so message content
  // never becomes control tokens (Tokenizer::encode_with_special_ranges).
  Result<std::vector<TokenId>> tokenize_with_special_ranges(
      std::string_view model_id, std::string_view text, bool add_special,
      std::span<const TextRange> special_ranges) const;
  Result<std::string> detokenize(std::string_view model_id, std::span<const TokenId> tokens) const;
  // Each token's raw bytes as it adds them to a text (Backend::token_bytes): what
  // logprobs report per token.
  Result<std::vector<std::string>> token_bytes(std::string_view model_id,
                                               std::span<const TokenId> tokens) const;
  // One embedding per input (the model's pooling, L2-normalised), run on the model's
  // worker between ticks.
  Result<std::vector<std::vector<float>>> embeddings(std::string_view model_id,
                                                     std::span<const std::string> inputs);
  // The general form: text inputs (tokenized with the model's specials: [CLS] .. [SEP]
  // for bert, BOS for llama) or token arrays (used as given), run together on the
  // worker (Backend::embed_batch packs them into few forward passes), then each vector
  // truncated to `dimensions` and normalised (llama-server's embd_normalize; with
  // Pooling::kNone each token's vector is).
  Result<EmbeddingResult> embeddings(std::string_view model_id,
                                     std::span<const EmbeddingInput> inputs,
                                     const EmbeddingOptions& options);

  // ---- cache ----
  // Synchronous evict save of every sequence of the model holding KV (in flight or idle);
  // idle sequences' cells are released. No-op for an idle model with no live context.
  Status evict(std::string_view model_id);
  // The spec's shutdown(model): a synchronous shutdown save of every sequence holding KV,
  // then return; the model keeps serving (a graceful restart's "save what is live").
  Status shutdown(std::string_view model_id);
  // The cache's memory-pressure scheduler (CacheOptions::pressure): enable / disable its
  // timer, check now (sample + maybe evict), read its state.
  void pressure_enable(bool on);
  cache::ForceCheckResult pressure_force_check();
  cache::SchedulerStatus pressure_status() const;
  // Cache counters by name (hits_exact, hits_resume, hits_longest_prefix, misses,
  // saves_cold, saves_continued, saves_finish, saves_evict, saves_shutdown, ...).
  std::map<std::string, uint64_t> cache_counters() const;
  // Every row, least recently used first, then in-flight saves.
  std::vector<CacheRowSummary> cache_rows() const;
  // Evicts least-recently-used unreferenced rows of `tiers` (empty = all) until at
  // least `target` bytes are freed or none remain.
  CacheEvictSummary cache_evict_bytes(uint64_t target, std::span<const Tier> tiers = {});
  // Evicts every unreferenced published row; returns how many.
  uint64_t cache_gc();
  // Waits until every async save queued so far has published (or failed); false when
  // `deadline` passed first. A reply is delivered after its saves are queued, so after
  // cache_flush() every row a finished request saves is in cache_rows().
  bool cache_flush(std::chrono::milliseconds deadline = std::chrono::seconds(30));

  // Stops admitting everywhere, cancels in-flight requests, runs shutdown saves, joins
  // every worker and the cache writers. Idempotent; the server calls it on SIGTERM.
  void shutdown();

  class Impl;

 private:
  explicit Runtime(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hearth::runtime
