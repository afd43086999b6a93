// ServiceApi over hearth::runtime::Runtime. The runtime calls its stream sink on the
// model's worker thread; this adapter hands each fragment to the HTTP thread through
// a small queue, so a slow client never stalls the batch, and turns "the client is
// gone" into Runtime::cancel.
#include "server/runtime_service.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <tuple>

#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "hearth/cache/types.h"
#include "hearth/gguf/gguf.h"
#include "hearth/log.h"
#include "hearth/runtime/runtime.h"

namespace hearth::server {
namespace {

namespace rt = hearth::runtime;

// A tier by name; an unknown name is an error naming it, never a default.
Result<rt::Tier> tier_named(const std::string& name) {
  if (auto t = rt::tier_from_name(name)) return *t;
  return InvalidArgument("tier '" + name + "' is not one of ram, ram_file, disk");
}

// An API integer narrowed to the runtime's int32 fields: out of range is an error
// naming the field, never a silent wrap (4294967304 once became a context of 8).
Result<int32_t> checked_int32(int64_t value, const std::string& name, int64_t min) {
  if (value < min || value > INT32_MAX) {
    return InvalidArgument(name + " must be between " + std::to_string(min) + " and " +
                           std::to_string(INT32_MAX) + " (got " + std::to_string(value) + ")");
  }
  return static_cast<int32_t>(value);
}

// Events from the worker thread(s) to the request's HTTP thread, for every choice.
struct Channel {
  explicit Channel(size_t n) : unsent(n), stats(n) {}
  std::mutex mu;
  std::condition_variable cv;
  std::vector<GeneratedPiece> unsent;  // per choice: generated since its last piece
  std::deque<GeneratedPiece> pieces;
  size_t finished = 0;  // choices that ended (on_done or on_error)
  std::vector<rt::RequestStats> stats;
  Status error;

  bool all_finished() const { return finished == unsent.size(); }
  void push_piece(size_t index, std::string_view text) {  // under mu
    GeneratedPiece& u = unsent[index];
    u.index = static_cast<int32_t>(index);
    u.text = std::string(text);
    pieces.push_back(std::move(u));
    u = GeneratedPiece{};
    cv.notify_one();
  }
};

// The runtime's callbacks for choice `index`, feeding the channel.
rt::StreamSink channel_sink(const std::shared_ptr<Channel>& channel, size_t index) {
  rt::StreamSink rsink;
  rsink.on_token = [channel, index](TokenId token) {
    std::lock_guard<std::mutex> lock(channel->mu);
    channel->unsent[index].tokens.push_back(token);
  };
  rsink.on_logprobs = [channel, index](const TokenLogprobs& lp) {
    std::lock_guard<std::mutex> lock(channel->mu);
    channel->unsent[index].logprobs.push_back(lp);
  };
  rsink.on_text = [channel, index](std::string_view text) {
    std::lock_guard<std::mutex> lock(channel->mu);
    channel->push_piece(index, text);
  };
  rsink.on_done = [channel, index](const rt::RequestStats& stats) {
    std::lock_guard<std::mutex> lock(channel->mu);
    if (!channel->unsent[index].tokens.empty()) channel->push_piece(index, "");
    channel->stats[index] = stats;
    ++channel->finished;
    channel->cv.notify_one();
  };
  rsink.on_error = [channel](const Status& error) {
    std::lock_guard<std::mutex> lock(channel->mu);
    if (channel->error.ok())
      channel->error = error.ok() ? Internal("runtime reported an error without a message") : error;
    ++channel->finished;
    channel->cv.notify_one();
  };
  return rsink;
}

// A request the runtime queued; run() drains its channel on the caller's thread.
class RuntimeGeneration final : public Generation {
 public:
  RuntimeGeneration(rt::Runtime& runtime, std::vector<rt::RequestId> ids,
                    std::shared_ptr<Channel> channel)
      : runtime_(runtime), ids_(std::move(ids)), channel_(std::move(channel)) {}
  ~RuntimeGeneration() override {
    if (!ran_) cancel();  // never streamed (the reply failed first)
  }

  Result<GenerateStats> run(GenerateSink& sink) override {
    ran_ = true;
    Channel& channel = *channel_;
    bool cancelled = false;
    std::unique_lock<std::mutex> lock(channel.mu);
    for (;;) {
      channel.cv.wait(lock, [&] { return channel.all_finished() || !channel.pieces.empty(); });
      while (!channel.pieces.empty()) {
        GeneratedPiece piece = std::move(channel.pieces.front());
        channel.pieces.pop_front();
        if (cancelled) continue;
        lock.unlock();  // the sink writes to a socket: never under the lock
        if (!sink.on_piece(piece)) {
          cancel();
          cancelled = true;
        }
        lock.lock();
      }
      if (channel.all_finished() && channel.pieces.empty()) break;
    }
    if (!channel.error.ok()) return channel.error;
    const auto& first = channel.stats.front();
    GenerateStats out;
    out.prompt_tokens = first.prompt_tokens;
    out.cached_tokens = first.cache_delta.read;
    out.cache_hit_kind = rt::cache_hit_kind_name(first.cache_hit_kind);
    out.steps_after_cancel = first.steps_after_cancel;
    out.queue_seconds = first.queue_ms / 1000.0;
    if (first.restore_tier) {
      out.restore_seconds = first.restore_ms / 1000.0;
      out.restore_tier = rt::tier_name(*first.restore_tier);
    }
    if (first.finish_key) out.finish_key = *first.finish_key;
    for (const rt::RequestStats& st : channel.stats) {
      ChoiceEnd end;
      end.completion_tokens = st.completion_tokens;
      end.finish_reason =
          cancelled || st.cancelled ? "cancelled" : rt::finish_reason_name(st.finish_reason);
      if (st.stop_sequence) end.matched_stop = *st.stop_sequence;
      out.completion_tokens += st.completion_tokens;
      out.draft_tokens += st.draft_tokens;
      out.draft_accepted += st.draft_accepted;
      out.choices.push_back(std::move(end));
    }
    out.finish_reason = out.choices.front().finish_reason;
    out.matched_stop = out.choices.front().matched_stop;
    return out;
  }

 private:
  void cancel() {
    for (rt::RequestId id : ids_) runtime_.cancel(id);
  }

  rt::Runtime& runtime_;
  const std::vector<rt::RequestId> ids_;
  std::shared_ptr<Channel> channel_;
  bool ran_ = false;
};

class RuntimeService : public ServiceApi {
 public:
  RuntimeService(std::unique_ptr<rt::Runtime> runtime, const ServerConfig& config,
                 const rt::CacheOptions& cache, RuntimeServiceOptions options)
      : runtime_(std::move(runtime)),
        config_(config),
        cache_(cache),
        options_(std::move(options)) {}

  std::vector<ModelDescription> list_models() override { return runtime_->list_models(); }

  Result<ModelDescription> model_info(const std::string& id) override {
    return runtime_->model_info(id);
  }

  Result<ModelDescription> load_model(rt::ModelConfig config) override {
    HEARTH_ASSIGN_OR_RETURN(config.max_queue, checked_int32(config_.limits.max_queued_requests,
                                                            "limits.max_queued_requests", 0));
    if (options_.backend_for) config.factory = options_.backend_for(config);
    HEARTH_ASSIGN_OR_RETURN(std::string id, runtime_->load_model(std::move(config)));
    return runtime_->model_info(id);
  }

  Status unload_model(const std::string& id) override { return runtime_->unload_model(id); }

  Result<std::vector<TokenId>> tokenize(const std::string& model, const std::string& text,
                                        bool add_special,
                                        std::span<const TextRange> special_ranges) override {
    return runtime_->tokenize_with_special_ranges(model, text, add_special, special_ranges);
  }

  Result<std::string> detokenize(const std::string& model,
                                 const std::vector<TokenId>& tokens) override {
    return runtime_->detokenize(model, tokens);
  }

  Result<std::vector<std::string>> token_bytes(const std::string& model,
                                               std::span<const TokenId> tokens) override {
    return runtime_->token_bytes(model, tokens);
  }

  Result<std::unique_ptr<Generation>> start_generation(const GenerateRequest& request) override {
    rt::RequestParams params;
    params.response_tokens = static_cast<int32_t>(request.max_tokens);
    params.sampling = request.sampling;
    params.stop_sequences = request.stop;
    params.parent_key = request.parent_key;
    params.cache_prompt = request.cache_prompt;
    params.session_id = request.session_id;
    params.lora = request.lora;
    params.logprobs = request.logprobs;
    if (request.n < 1) return InvalidArgument("n must be >= 1, got " + std::to_string(request.n));
    params.thinking = request.thinking;
    params.speculative = request.speculative;

    const auto n = static_cast<size_t>(request.n);
    auto channel = std::make_shared<Channel>(n);
    std::vector<rt::StreamSink> sinks;
    for (size_t i = 0; i < n; ++i) sinks.push_back(channel_sink(channel, i));
    std::vector<rt::RequestId> ids;
    if (n == 1) {
      HEARTH_ASSIGN_OR_RETURN(rt::RequestId id, runtime_->infer(request.model, request.prompt,
                                                                params, std::move(sinks[0])));
      ids.push_back(id);
    } else {
      HEARTH_ASSIGN_OR_RETURN(
          ids, runtime_->infer_n(request.model, request.prompt, params, std::move(sinks)));
    }
    return std::unique_ptr<Generation>(
        std::make_unique<RuntimeGeneration>(*runtime_, std::move(ids), std::move(channel)));
  }

  Result<runtime::EmbeddingResult> embed(const std::string& model,
                                         const std::vector<runtime::EmbeddingInput>& inputs,
                                         const runtime::EmbeddingOptions& options) override {
    return runtime_->embeddings(model, inputs, options);
  }

  std::map<std::string, int64_t> cache_counters() override {
    std::map<std::string, int64_t> out;
    for (const auto& [k, v] : runtime_->cache_counters()) out[k] = static_cast<int64_t>(v);
    return out;
  }

  // Per-tier usage from the cache's bytes_<tier> / rows_<tier> counters.
  std::vector<TierUsage> tier_usage() override {
    const auto counters = runtime_->cache_counters();
    auto get = [&](const std::string& name) -> int64_t {
      auto it = counters.find(name);
      return it == counters.end() ? 0 : static_cast<int64_t>(it->second);
    };
    std::vector<TierUsage> out;
    const std::tuple<const char*, bool, uint64_t> tiers[] = {
        {"ram", true, cache_.ram_bytes},
        {"ram_file", !cache_.ram_file_dir.empty(), cache_.ram_file_bytes},
        {"disk", !cache_.disk_dir.empty(), cache_.disk_bytes}};
    for (const auto& [name, enabled, quota] : tiers) {
      const std::string n = name;
      if (!enabled) continue;
      out.push_back({n, get("bytes_" + n), get("rows_" + n), static_cast<int64_t>(quota)});
    }
    return out;
  }
  Result<std::string> cache_rows_json(int64_t limit) override {
    nlohmann::json rows = nlohmann::json::array();
    for (const rt::CacheRowSummary& r : runtime_->cache_rows()) {
      if (limit > 0 && static_cast<int64_t>(rows.size()) >= limit) break;
      nlohmann::json row = {{"key", r.key_hex},
                            {"tier", rt::tier_name(r.tier)},
                            {"bytes", r.size_bytes},
                            {"tokens", r.n_tokens},
                            {"hits", r.hits},
                            {"last_used_ns", r.last_used_ns},
                            {"refcount", r.refcount},
                            {"delta_depth", r.delta_depth},
                            {"status", r.in_flight ? "in_flight" : "available"}};
      row["fingerprint"] =
          r.fingerprint_hex.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.fingerprint_hex);
      rows.push_back(std::move(row));
    }
    return json_text(rows);
  }
  Result<int64_t> cache_evict_bytes(const std::vector<std::string>& tiers, int64_t bytes) override {
    std::vector<rt::Tier> ts;
    for (const std::string& t : tiers) {
      HEARTH_ASSIGN_OR_RETURN(rt::Tier tier, tier_named(t));
      ts.push_back(tier);
    }
    return static_cast<int64_t>(
        runtime_->cache_evict_bytes(static_cast<uint64_t>(std::max<int64_t>(bytes, 0)), ts).bytes);
  }
  Result<int64_t> cache_gc() override { return static_cast<int64_t>(runtime_->cache_gc()); }

  Result<PrefillOutcome> prefill(const GenerateRequest& request) override {
    rt::RequestParams params;
    params.parent_key = request.parent_key;
    params.lora = request.lora;
    HEARTH_ASSIGN_OR_RETURN(rt::PrefillResult r,
                            runtime_->prefill_only(request.model, request.prompt, params));
    PrefillOutcome out;
    out.finish_key = r.finish_key;
    out.cache_hit_kind = rt::cache_hit_kind_name(r.cache_hit_kind);
    out.prompt_tokens = static_cast<int64_t>(request.prompt.size());
    out.cached_tokens = r.cache_delta.read;
    out.committed_tokens = r.committed_tokens;
    return out;
  }
  Result<rt::VerifyResult> verify(const GenerateRequest& request, const std::vector<TokenId>& draft,
                                  int32_t k) override {
    return runtime_->verify(request.model, request.prompt, draft, k);
  }
  Status evict_model(const std::string& id) override { return runtime_->evict(id); }
  Result<std::vector<rt::AdapterInfo>> list_adapters(const std::string& model) override {
    return runtime_->list_adapters(model);
  }
  Result<rt::AdapterInfo> load_adapter(const std::string& model,
                                       const rt::AdapterSpec& spec) override {
    return runtime_->load_adapter(model, spec);
  }
  Status unload_adapter(const std::string& model, int32_t id) override {
    return runtime_->unload_adapter(model, id);
  }
  Status set_adapter_scales(const std::string& model,
                            std::span<const rt::AdapterScale> scales) override {
    return runtime_->set_adapter_scales(model, scales);
  }
  Status shutdown_model(const std::string& id) override { return runtime_->shutdown(id); }
  Status release_session(const std::string& model, const std::string& session_id) override {
    return runtime_->release_session(model, session_id);
  }
  Result<cache::SchedulerStatus> pressure_status() override { return runtime_->pressure_status(); }
  Status pressure_enable(bool on) override {
    runtime_->pressure_enable(on);
    return OkStatus();
  }
  Result<cache::ForceCheckResult> pressure_force_check() override {
    return runtime_->pressure_force_check();
  }

  int64_t queue_depth() override {
    int64_t n = 0;
    for (const auto& m : runtime_->list_models()) n += m.queued_requests;
    return n;
  }

  void shutdown() override { runtime_->shutdown(); }

 private:
  std::unique_ptr<rt::Runtime> runtime_;
  const ServerConfig config_;
  const rt::CacheOptions cache_;
  const RuntimeServiceOptions options_;
};

}  // namespace

Result<std::unique_ptr<ServiceApi>> make_runtime_service(const ServerConfig& config,
                                                         RuntimeServiceOptions service_options) {
  rt::RuntimeOptions options;
  if (config.ram.quota_bytes > 0)
    options.cache.ram_bytes = static_cast<uint64_t>(config.ram.quota_bytes);
  if (config.ram_file.enabled) {
    options.cache.ram_file_dir = config.ram_file.dir;
    if (config.ram_file.quota_bytes > 0)
      options.cache.ram_file_bytes = static_cast<uint64_t>(config.ram_file.quota_bytes);
  }
  if (config.disk.enabled) {
    options.cache.disk_dir = config.disk.dir;
    if (config.disk.quota_bytes > 0)
      options.cache.disk_bytes = static_cast<uint64_t>(config.disk.quota_bytes);
  }
  options.cache.writer_threads = static_cast<int32_t>(config.writer_threads);
  options.cache.max_delta_depth = static_cast<uint32_t>(config.max_delta_depth);
  options.cache.remote = config.remote;
  // A model without a tier saves to the most durable tier this server runs.
  options.default_tier = config.disk.enabled       ? rt::Tier::kDisk
                         : config.ram_file.enabled ? rt::Tier::kRamFile
                                                   : rt::Tier::kRam;
  // [pressure]: the cache's memory-pressure scheduler (config.cpp validated the values).
  const PressureConfig& p = config.pressure;
  cache::SchedulerConfig& sched = options.cache.pressure;
  sched.enabled = p.enabled;
  const std::optional<cache::PressureSource> source = cache::pressure_source_from_name(p.source);
  if (!source) return InvalidArgument("pressure.source '" + p.source + "' is not noop or system");
  sched.source = *source;
  sched.interval_ms = static_cast<uint64_t>(p.interval_ms);
  sched.high_watermark = p.high_watermark;
  sched.low_watermark = p.low_watermark;
  sched.min_evict_bytes = static_cast<uint64_t>(p.min_evict_bytes);
  sched.evict_tiers.clear();
  for (const std::string& t : p.evict_tiers) {
    HEARTH_ASSIGN_OR_RETURN(rt::Tier tier, tier_named(t));
    sched.evict_tiers.push_back(tier);
  }
  HEARTH_ASSIGN_OR_RETURN(auto runtime, rt::Runtime::create(options));
  auto service = std::make_unique<RuntimeService>(std::move(runtime), config, options.cache,
                                                  std::move(service_options));
  // Threads: the cores divided among the models this server loads at start (a model's
  // own `threads` wins); models loaded later over HTTP get the runtime's default.
  const int32_t shared_threads =
      rt::default_thread_count(static_cast<int32_t>(std::max<size_t>(1, config.models.size())));
  for (rt::ModelConfig m : config.models) {
    if (m.n_threads == 0) m.n_threads = shared_threads;
    auto loaded = service->load_model(m);
    if (!loaded.ok()) {
      service->shutdown();
      return Status(loaded.status().code(),
                    "model '" + m.id + "' (" + m.model_path + "): " + loaded.status().message());
    }
    log::info("loaded model '" + m.id + "' from " + m.model_path + " (context " +
              std::to_string(loaded->context_size) + ")");
  }
  return std::unique_ptr<ServiceApi>(std::move(service));
}

}  // namespace hearth::server
