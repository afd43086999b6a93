// The narrow interface the HTTP layer needs from the inference runtime. The server
// only ever talks to a ServiceApi, which production wires to hearth::Runtime through
// an adapter (runtime_service.h). Tests drive that same adapter over the real runtime,
// with a deterministic backend in place of the engine, so the seam stays under test.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hearth/runtime.h"
#include "hearth/server.h"
#include "hearth/status.h"
#include "hearth/text_range.h"

namespace hearth::server {

using TokenId = int32_t;

struct ModelDescription {
  std::string id;
  std::string path;            // file it was loaded from (may name no file for a custom backend)
  int64_t context_length = 0;  // tokens the model accepts per sequence
  int64_t n_vocab = 0;
  int64_t embedding_dim = 0;
  std::string chat_template;  // tokenizer.chat_template (Jinja text) or empty
  // Bytes of the longest stored token text (0 = unknown): no token stands for more bytes
  // of input than that, which bounds a prompt's length before it is tokenized.
  int64_t max_token_bytes = 0;
  int64_t created_unix = 0;
  // Scheduler state at the time of the call (-1: the service does not know).
  int64_t active_sequences = -1;  // requests holding a sequence
  int64_t scheduler_steps = -1;   // forward passes (ticks with work) since load
};

using ModelLoadOptions = ModelConfig;

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
};

struct GenerateStats {
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens restored from the KV cache
  int64_t completion_tokens = 0;
  std::string finish_reason;  // "stop" (EOS or a stop string), "length" or "cancelled"
  std::string matched_stop;   // the stop string that ended it, if one did
  // Cancelled generations: scheduler steps between the cancel and the sequence being
  // freed (0 or 1 for the runtime); -1 when not cancelled or unknown.
  int64_t steps_after_cancel = -1;
};

// Receives a generation as it happens. on_token returns false to cancel (client
// gone, shutdown deadline); the service then finishes with on_done or on_error.
class GenerateSink {
 public:
  virtual ~GenerateSink() = default;
  virtual bool on_token(const std::string& text_fragment, TokenId token) = 0;
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
  virtual Result<ModelDescription> load_model(const ModelLoadOptions& options) = 0;
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

  // Blocks until the generation ends. Returns the stats on success (also after a
  // cancellation requested by the sink: finish_reason is then "cancelled").
  virtual Result<GenerateStats> generate(const GenerateRequest& request, GenerateSink& sink) = 0;

  // One L2-normalised embedding per input text.
  virtual Result<std::vector<std::vector<float>>> embed(const std::string& model,
                                                        const std::vector<std::string>& inputs) = 0;

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

  // Requests waiting inside the runtime's scheduler (for /metrics).
  virtual int64_t queue_depth() { return 0; }

  // Graceful stop: cancel or finish in-flight work and persist what should be saved.
  virtual void shutdown() = 0;
};

}  // namespace hearth::server
