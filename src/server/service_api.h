// The narrow interface the HTTP layer needs from the inference runtime. The server
// only ever talks to a ServiceApi, which production wires to hearth::Runtime through
// an adapter (runtime_service.h). Tests drive that same adapter over the real runtime,
// with a deterministic backend in place of the engine, so the seam stays under test.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hearth/runtime/runtime.h"
#include "hearth/server/server.h"
#include "hearth/status.h"
#include "hearth/text_range.h"

namespace hearth::server {

using TokenId = int32_t;

// A loaded model as the runtime describes it (its id, context, vocabulary, chat
// template, scheduler state): the runtime's own type, not a copy.
using ModelDescription = runtime::LoadedModelInfo;

// The runtime's own sampling knobs: the request parser fills them, the runtime
// validates and honours them; nothing converts between two copies.
using runtime::SamplingOptions;

struct GenerateRequest {
  std::string model;
  std::vector<TokenId> prompt;
  int64_t max_tokens = 16;
  SamplingOptions sampling;
  // Matched by the runtime, which ends the generation before the first match and
  // never streams any part of it.
  std::vector<std::string> stop;
  // Cache control (docs/api.md "Cache control"): the finish_key of an earlier turn to
  // restore exactly, and cache_prompt = false for no lookup and no save.
  std::optional<std::string> parent_key;
  bool cache_prompt = true;
  // Sticky session (docs/api.md "Sessions"): opened by its first request, continued by
  // the next ones.
  std::optional<std::string> session_id;
  // LoRA scales for this request (llama-server's `lora`; RequestParams::lora).
  std::optional<std::vector<runtime::AdapterScale>> lora;
  // Choices (OpenAI's n): the prompt is prefilled once and the others fork from its KV;
  // choice i samples with seed + i (Runtime::infer_n).
  int32_t n = 1;
  // -1: none; 0..20: each token's logprob and that many top alternatives.
  int32_t logprobs = -1;
  runtime::ThinkingBudget thinking;                 // off unless the request set a thinking budget
  runtime::RequestParams::Speculative speculative;  // unset fields: the model's defaults
};

// What POST /hearth/prefill reports: the prompt is in the cache under finish_key.
struct PrefillOutcome {
  std::optional<std::string> finish_key;  // unset when the save policy declined the row
  std::string cache_hit_kind;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;     // restored from the cache
  int64_t committed_tokens = 0;  // tokens the row holds
};

using runtime::TokenLogprob;
using runtime::TokenLogprobs;

// How one choice of a generation ended.
struct ChoiceEnd {
  std::string finish_reason;  // "stop", "length" or "cancelled"
  std::string matched_stop;   // the stop string that ended it, if one did
  int64_t completion_tokens = 0;
};

struct GenerateStats {
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens restored from the KV cache
  int64_t completion_tokens = 0;
  std::string finish_reason;   // "stop" (EOS or a stop string), "length" or "cancelled"
  std::string matched_stop;    // the stop string that ended it, if one did
  std::string cache_hit_kind;  // "cold", "exact", "resume", "partial", "sticky", "continuation"
  // Cancelled generations: scheduler steps between the cancel and the sequence being
  // freed (0 or 1 for the runtime); -1 when not cancelled or unknown.
  int64_t steps_after_cancel = -1;
  // The key of the row the finish save wrote (hex), to send back as parent_key; empty
  // when no row was saved (the save policy, cache_prompt false).
  std::string finish_key;
  double queue_seconds = 0;     // waiting in the model's queue for a sequence
  double restore_seconds = -1;  // restoring the prompt from a cache row; -1 = none
  std::string restore_tier;     // the row's tier ("ram", "ram_file", "disk") when restored
  // Speculative decoding, summed over the choices: tokens drafted, and accepted.
  int64_t draft_tokens = 0;
  int64_t draft_accepted = 0;
  // One per choice (GenerateRequest::n), in index order. The fields above are the
  // request's: prompt counted once, completion_tokens summed over the choices,
  // finish_reason / matched_stop those of choice 0.
  std::vector<ChoiceEnd> choices;
};

// One piece of one choice: the text the runtime released, the ids of the tokens
// generated since the previous piece of that choice, and their logprobs when asked.
struct GeneratedPiece {
  int32_t index = 0;  // the choice
  std::string text;
  std::vector<TokenId> tokens;
  std::vector<TokenLogprobs> logprobs;  // one per token when GenerateRequest::logprobs >= 0
};

// Receives a generation as it happens, one piece at a time: the text the runtime
// released and the ids of the tokens generated since the previous piece (a token's text
// can arrive with a later token's, when it ends inside a UTF-8 character or could start
// a stop string; the tokens of a matched stop string come with no text). Returns false
// to cancel (client gone, shutdown deadline); the generation then ends "cancelled".
class GenerateSink {
 public:
  virtual ~GenerateSink() = default;
  virtual bool on_piece(const GeneratedPiece& piece) = 0;
};

// A generation the runtime accepted: queued for its model or running. run() streams it
// into the sink and returns when it ends; destroying it before then cancels it.
class Generation {
 public:
  virtual ~Generation() = default;
  virtual Result<GenerateStats> run(GenerateSink& sink) = 0;
};

struct TierUsage {
  std::string tier;
  int64_t bytes = 0;
  int64_t rows = 0;
  int64_t quota_bytes = 0;
};

class ServiceApi {
 public:
  virtual ~ServiceApi() = default;

  virtual std::vector<ModelDescription> list_models() = 0;
  virtual Result<ModelDescription> model_info(const std::string& id) = 0;
  // The service adds what the server owns (queue bound, backend); the rest is the caller's.
  virtual Result<ModelDescription> load_model(runtime::ModelConfig config) = 0;
  virtual Status unload_model(const std::string& id) = 0;

  // special_ranges: byte ranges of `text` where control-token text like "<|im_start|>"
  // becomes the control token; elsewhere it is plain text. Empty for user text
  // (parse_special false), special_ranges_for(text, true) for all of it, a RenderedChat's
  // ranges for a chat prompt (its template's text, never the messages' content).
  virtual Result<std::vector<TokenId>> tokenize(const std::string& model, const std::string& text,
                                                bool add_special,
                                                std::span<const TextRange> special_ranges) = 0;
  virtual Result<std::string> detokenize(const std::string& model,
                                         const std::vector<TokenId>& tokens) = 0;
  // Each token's raw bytes (for logprobs' token / bytes fields).
  virtual Result<std::vector<std::string>> token_bytes(const std::string& model,
                                                       std::span<const TokenId> tokens) = 0;

  // Validates the request and queues it for its model, the one queue there is: every
  // refusal comes back here, before any reply has started (unknown model, a parameter
  // out of range, a prompt the context cannot hold: InvalidArgument / OutOfRange naming
  // the field; the model's queue full: ResourceExhausted; shutting down: Unavailable).
  virtual Result<std::unique_ptr<Generation>> start_generation(const GenerateRequest& request) = 0;

  // Embeddings of texts or token arrays, pooled and normalised as `options` say
  // (Runtime::embeddings).
  virtual Result<runtime::EmbeddingResult> embed(const std::string& model,
                                                 const std::vector<runtime::EmbeddingInput>& inputs,
                                                 const runtime::EmbeddingOptions& options) = 0;

  // Cache administration. Counters are name -> monotonic value.
  virtual std::map<std::string, int64_t> cache_counters() = 0;
  virtual std::vector<TierUsage> tier_usage() = 0;
  // One JSON-serialisable row per cache entry; fields are the cache's own.
  virtual Result<std::string> cache_rows_json(int64_t limit) = 0;
  // Evicts LRU rows of `tiers` ("ram", "ram_file", "disk"; empty = all) until at least
  // `bytes` are freed; returns the bytes freed.
  virtual Result<int64_t> cache_evict_bytes(const std::vector<std::string>& tiers,
                                            int64_t bytes) = 0;
  virtual Result<int64_t> cache_gc() = 0;

  // Cache control (docs/api.md): warm a prompt without generating; the spec's evict(model)
  // and shutdown(model); the memory-pressure scheduler. The defaults answer Unsupported
  // (HTTP 501) for services without a cache.
  virtual Result<PrefillOutcome> prefill(const GenerateRequest& request) {
    (void)request;
    return Unsupported("prefill is not supported by this service");
  }
  // The spec's verify (Runtime::verify): request.prompt is the prefix. Unsupported by
  // default.
  virtual Result<runtime::VerifyResult> verify(const GenerateRequest& request,
                                               const std::vector<TokenId>& draft, int32_t k) {
    (void)request, (void)draft, (void)k;
    return Unsupported("verify is not supported by this service");
  }
  virtual Status evict_model(const std::string& id) {
    (void)id;
    return Unsupported("evict is not supported by this service");
  }
  virtual Status shutdown_model(const std::string& id) {
    (void)id;
    return Unsupported("shutdown saves are not supported by this service");
  }
  // Releases a sticky session of a model (its cells saved to the cache, then freed).
  virtual Status release_session(const std::string& model, const std::string& session_id) {
    (void)model;
    (void)session_id;
    return Unsupported("sessions are not supported by this service");
  }
  virtual Result<cache::SchedulerStatus> pressure_status() {
    return Unsupported("the pressure scheduler is not available in this service");
  }
  virtual Status pressure_enable(bool on) {
    (void)on;
    return Unsupported("the pressure scheduler is not available in this service");
  }
  virtual Result<cache::ForceCheckResult> pressure_force_check() {
    return Unsupported("the pressure scheduler is not available in this service");
  }

  // LoRA adapters of a model (Runtime's methods of the same names). The defaults answer
  // Unsupported (HTTP 501).
  virtual Result<std::vector<runtime::AdapterInfo>> list_adapters(const std::string& model) {
    return Unsupported("LoRA adapters are not supported by this service (" + model + ")");
  }
  virtual Result<runtime::AdapterInfo> load_adapter(const std::string& model,
                                                    const runtime::AdapterSpec& spec) {
    (void)spec;
    return Unsupported("LoRA adapters are not supported by this service (" + model + ")");
  }
  virtual Status unload_adapter(const std::string& model, int32_t id) {
    (void)id;
    return Unsupported("LoRA adapters are not supported by this service (" + model + ")");
  }
  virtual Status set_adapter_scales(const std::string& model,
                                    std::span<const runtime::AdapterScale> scales) {
    (void)scales;
    return Unsupported("LoRA adapters are not supported by this service (" + model + ")");
  }

  // Requests waiting inside the runtime's scheduler (for /metrics).
  virtual int64_t queue_depth() { return 0; }

  // Graceful stop: cancel or finish in-flight work and persist what should be saved.
  virtual void shutdown() = 0;
};

}  // namespace hearth::server
