// Runtime: the model registry and the request API over per-model workers.
#include "hearth/runtime/runtime.h"

#include <atomic>
#include <cmath>
#include <mutex>
#include <set>
#include <unordered_map>

#include "hearth/log.h"
#include "runtime/backend_factories.h"
#include "runtime/model_identity.h"
#include "runtime/model_worker.h"
#include "runtime/speculative.h"

namespace hearth::runtime {

class Runtime::Impl {
 public:
  explicit Impl(RuntimeOptions options) : options_(std::move(options)) {}

  RuntimeOptions options_;
  std::shared_ptr<RowStore> store_;

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<ModelWorker>, std::less<>> models_;
  std::set<std::string, std::less<>> loading_;  // ids reserved by loads in progress
  uint64_t next_model_ = 1;
  bool shut_down_ = false;

  std::atomic<uint64_t> next_request_{1};
  std::mutex req_mu_;
  struct Live {
    std::weak_ptr<Request> request;
    std::weak_ptr<ModelWorker> worker;
  };
  std::unordered_map<RequestId, Live> live_;

  Result<std::shared_ptr<ModelWorker>> find(std::string_view id) const {
    std::lock_guard lock(mu_);
    auto it = models_.find(id);
    if (it == models_.end()) return NotFound("no model '" + std::string(id) + "' is loaded");
    return it->second;
  }

  void unregister(RequestId id) {
    std::lock_guard lock(req_mu_);
    live_.erase(id);
  }

  Status validate_prompt(const ModelWorker& w, std::span<const TokenId> prompt) const {
    if (prompt.empty()) return InvalidArgument("prompt is empty");
    if (static_cast<int64_t>(prompt.size()) >= w.config().n_ctx)
      return OutOfRange("prompt of " + std::to_string(prompt.size()) +
                        " tokens does not fit the context of " + std::to_string(w.config().n_ctx) +
                        " positions");
    const int32_t vocab = w.backend()->info().vocab_size;
    for (TokenId t : prompt)
      if (t < 0 || t >= vocab)
        return InvalidArgument("prompt token id " + std::to_string(t) +
                               " is outside the vocabulary of " + std::to_string(vocab) +
                               " tokens");
    return OkStatus();
  }

  // Builds and queues a request (the worker looks it up in the cache when it admits it).
  // On success the request belongs to the worker.
  // `forks`: the sinks of choices 1.. of Runtime::infer_n (empty for one choice).
  // A request of a session acquires it first (busy until the request ends): unknown ids
  // open one (no_session instead when `continue_session`), a busy one is sticky_busy. A
  // continuation's prompt is the session's tokens followed by `prompt`.
  Result<RequestPtr> start(std::string_view model_id, std::span<const TokenId> prompt,
                           const RequestParams& params, Request::Kind kind, StreamSink sink,
                           bool blocking, std::future<Result<CompletionResult>>* future,
                           std::vector<StreamSink> forks = {}, bool continue_session = false) {
    if (!params.session_id)
      return queue(model_id, prompt, params, kind, std::move(sink), blocking, future,
                   std::move(forks));
    const std::string& sid = *params.session_id;
    HEARTH_RETURN_IF_ERROR(check_session_id(sid));
    if (!forks.empty())
      return InvalidArgument("session_id cannot be combined with several choices (n > 1)");
    if (!params.cache_prompt)
      return InvalidArgument("session_id cannot be combined with cache_prompt = false");
    HEARTH_ASSIGN_OR_RETURN(auto worker, find(model_id));
    HEARTH_ASSIGN_OR_RETURN(SessionTable::Acquired got,
                            worker->sessions().acquire(sid, continue_session));
    std::vector<TokenId> joined;
    if (continue_session) {
      joined = std::move(got.tokens);
      joined.insert(joined.end(), prompt.begin(), prompt.end());
      prompt = joined;
    }
    Result<RequestPtr> r =
        queue(model_id, prompt, params, kind, std::move(sink), blocking, future, {});
    if (!r.ok()) worker->sessions().abort(sid, got.created);
    return r;
  }

  Result<RequestPtr> queue(std::string_view model_id, std::span<const TokenId> prompt,
                           const RequestParams& params, Request::Kind kind, StreamSink sink,
                           bool blocking, std::future<Result<CompletionResult>>* future,
                           std::vector<StreamSink> forks) {
    HEARTH_ASSIGN_OR_RETURN(auto worker, find(model_id));
    HEARTH_RETURN_IF_ERROR(validate_prompt(*worker, prompt));
    HEARTH_RETURN_IF_ERROR(check_sampling(params.sampling));
    HEARTH_RETURN_IF_ERROR(check_speculative_params(params.speculative, worker->has_draft_model()));
    const int32_t vocab = worker->backend()->info().vocab_size;
    for (const auto& [id, bias] : params.sampling.logit_bias)
      if (id >= vocab)
        return InvalidArgument("sampling.logit_bias token id " + std::to_string(id) +
                               " is outside the vocabulary of " + std::to_string(vocab) +
                               " tokens");
    if (params.response_tokens < 1)
      return InvalidArgument("response_tokens must be >= 1, got " +
                             std::to_string(params.response_tokens));
    if (params.logprobs < -1 || params.logprobs > kMaxTopLogprobs)
      return InvalidArgument("logprobs must be in [-1, " + std::to_string(kMaxTopLogprobs) +
                             "], got " + std::to_string(params.logprobs));
    const int64_t n = 1 + static_cast<int64_t>(forks.size());
    if (n > worker->config().n_seq_max)
      return InvalidArgument("n (" + std::to_string(n) + " choices) exceeds the " +
                             std::to_string(worker->config().n_seq_max) +
                             " sequences (n_seq_max) of model '" + std::string(model_id) + "'");
    auto make = [&](StreamSink s, uint64_t choice) {
      auto r = std::make_shared<Request>();
      r->id = next_request_.fetch_add(1);
      r->kind = kind;
      r->prompt.assign(prompt.begin(), prompt.end());
      r->params = params;
      if (params.sampling.seed) r->params.sampling.seed = *params.sampling.seed + choice;
      r->sink = std::move(s);
      return r;
    };
    auto r = make(std::move(sink), 0);
    for (size_t i = 0; i < forks.size(); ++i) r->forks.push_back(make(std::move(forks[i]), i + 1));
    if (blocking) {
      r->promise.emplace();
      *future = r->promise->get_future();
    }
    {
      std::lock_guard lock(req_mu_);
      live_[r->id] = Live{r, worker};
      for (const RequestPtr& f : r->forks) live_[f->id] = Live{f, worker};
    }
    Status st = worker->submit(r);
    if (!st.ok()) {
      unregister(r->id);
      for (const RequestPtr& f : r->forks) unregister(f->id);
      return st;
    }
    return r;
  }
};

Runtime::Runtime(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Runtime::~Runtime() {
  shutdown();
}

Result<std::unique_ptr<Runtime>> Runtime::create(RuntimeOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  HEARTH_ASSIGN_OR_RETURN(impl->store_, make_row_store(impl->options_.cache));
  return std::unique_ptr<Runtime>(new Runtime(std::move(impl)));
}

Result<std::string> Runtime::load_model(ModelConfig config) {
  Impl& im = *impl_;
  if (config.n_seq_max < 1) return InvalidArgument("n_seq_max must be >= 1");
  if (config.n_batch < config.n_seq_max)
    return InvalidArgument("n_batch (" + std::to_string(config.n_batch) +
                           ") must be >= n_seq_max (" + std::to_string(config.n_seq_max) +
                           "): every decoding sequence needs a row in each forward pass");
  if (config.max_queue < 0) return InvalidArgument("max_queue must be >= 0");
  if (config.n_threads < 0 || config.n_threads > 256)
    return InvalidArgument("n_threads must be in 0..256, got " + std::to_string(config.n_threads));
  if (config.prefill_chunk_size < -1)
    return InvalidArgument(
        "prefill_chunk_size must be -1 (unlimited), 0 (default) or positive, got " +
        std::to_string(config.prefill_chunk_size));
  if (config.max_restarts < 0) return InvalidArgument("max_restarts must be >= 0");
  if (config.session_idle_ms < 0)
    return InvalidArgument("session_idle_ms must be >= 0 (0 = no idle expiry), got " +
                           std::to_string(config.session_idle_ms));
  if (config.restart_backoff_ms < 0) return InvalidArgument("restart_backoff_ms must be >= 0");
  if (config.n_ctx < 0) return InvalidArgument("n_ctx must be >= 0");
  // A custom backend sizes its own KV; a budget it would not see is refused, not ignored.
  if (config.factory && config.kv_budget_bytes > 0)
    return InvalidArgument(
        "kv_budget_bytes is honoured by the engine backend only, not by a "
        "custom BackendFactory");
  if (!config.id.empty()) HEARTH_RETURN_IF_ERROR(check_model_id(config.id));
  HEARTH_RETURN_IF_ERROR(check_speculative_config(config.speculative));
  if (config.draft_factory && config.speculative.draft_model.empty())
    return InvalidArgument("draft_factory is set but speculative.draft_model is empty");
  // Like the KV budget: a device a custom backend would not see is refused, not ignored.
  if (config.factory && config.device != "cpu")
    return InvalidArgument("device \"" + config.device +
                           "\" is honoured by the engine backend only, not by a custom "
                           "BackendFactory");
  if (config.draft_factory && config.speculative.draft_device.value_or("cpu") != "cpu")
    return InvalidArgument("draft_device \"" + *config.speculative.draft_device +
                           "\" is honoured by the engine backend only, not by a custom "
                           "draft_factory");
  {
    std::lock_guard lock(im.mu_);
    if (im.shut_down_) return Unavailable("runtime is shut down");
    if (config.id.empty()) {
      do {
        config.id = "model_" + std::to_string(im.next_model_++);
      } while (im.models_.count(config.id) || im.loading_.count(config.id));
    }
    if (im.models_.count(config.id) || im.loading_.count(config.id))
      return AlreadyExists("model id '" + config.id + "' is already loaded");
    if (config.n_threads == 0)
      config.n_threads =
          default_thread_count(static_cast<int32_t>(im.models_.size() + im.loading_.size() + 1));
    im.loading_.insert(config.id);
  }
  auto release = [&] {
    std::lock_guard lock(im.mu_);
    im.loading_.erase(config.id);
  };
  auto built = [&]() -> Result<std::shared_ptr<ModelWorker>> {
    if (!config.factory) {
      HEARTH_ASSIGN_OR_RETURN(config.factory, default_backend_factory(config));
    }
    HEARTH_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, config.factory());
    // The configured adapters get ids 0, 1, ...; the worker reloads them after a restart.
    std::vector<LoadedAdapter> adapters;
    for (size_t i = 0; i < config.adapters.size(); ++i) {
      const AdapterSpec& a = config.adapters[i];
      const std::string field = std::string("adapters[").append(std::to_string(i)).append("]");
      if (!std::isfinite(a.scale)) return InvalidArgument(field + ".scale: must be finite");
      const auto id = static_cast<int32_t>(i);
      if (Status st = backend->load_adapter(id, a.path); !st.ok())
        return Status(st.code(), field + ": " + st.message());
      auto sha = sha256_file(a.path);
      if (!sha.ok()) return Status(sha.status().code(), field + ": " + sha.status().message());
      adapters.push_back(LoadedAdapter{AdapterInfo{id, a.path, a.scale, to_hex(*sha)}, *sha});
    }
    const BackendInfo info = backend->info();
    if (info.n_seq_max < config.n_seq_max)
      return InvalidArgument("backend holds " + std::to_string(info.n_seq_max) +
                             " sequences, config asks for n_seq_max " +
                             std::to_string(config.n_seq_max));
    if (config.n_ctx == 0 || config.n_ctx > info.n_ctx) config.n_ctx = info.n_ctx;
    if (!config.tier) config.tier = im.options_.default_tier;
    if (!im.store_->tier_enabled(*config.tier))
      return InvalidArgument(std::string("tier ") + tier_name(*config.tier) +
                             " is not enabled in the cache (set its directory in CacheOptions)");
    HEARTH_ASSIGN_OR_RETURN(RowNamespace ns, compute_namespace(config, backend->kv_identity()));
    std::unique_ptr<Backend> draft;
    if (!config.speculative.draft_model.empty()) {
      // The draft model: the target's context, sequences and threads, its own KV.
      if (!config.draft_factory) {
        ModelConfig dc;
        dc.model_path = config.speculative.draft_model;
        dc.n_ctx = config.n_ctx;
        dc.n_seq_max = config.n_seq_max;
        dc.n_batch = config.n_batch;
        dc.n_threads = config.n_threads;
        dc.kv_type = config.kv_type;
        dc.swa_full = config.swa_full;
        dc.weights_in_place = config.weights_in_place;
        // Its own device when one is given (every layer on it unless draft_n_gpu_layers
        // says otherwise), else the target's device and layer count.
        const SpeculativeConfig& sc = config.speculative;
        dc.device = sc.draft_device.value_or(config.device);
        dc.n_gpu_layers =
            sc.draft_n_gpu_layers.value_or(sc.draft_device ? -1 : config.n_gpu_layers);
        HEARTH_RETURN_IF_ERROR(
            check_engine_device(dc.device, dc.n_gpu_layers, "draft_device", "draft_n_gpu_layers"));
        HEARTH_ASSIGN_OR_RETURN(config.draft_factory, default_backend_factory(dc));
      }
      auto built_draft = config.draft_factory();
      if (!built_draft.ok())
        return Status(built_draft.status().code(), "draft_model '" +
                                                       config.speculative.draft_model +
                                                       "': " + built_draft.status().message());
      draft = std::move(built_draft).value();
      HEARTH_RETURN_IF_ERROR(check_draft_vocab(*backend, *draft));
      if (draft->info().n_seq_max < config.n_seq_max)
        return InvalidArgument("draft_model holds " + std::to_string(draft->info().n_seq_max) +
                               " sequences, the target needs n_seq_max " +
                               std::to_string(config.n_seq_max));
    }
    return std::make_shared<ModelWorker>(
        config, std::move(backend), ns, im.store_, [&im](RequestId id) { im.unregister(id); },
        std::move(draft), std::move(adapters));
  }();
  if (!built.ok()) {
    release();
    return built.status();
  }
  std::lock_guard lock(im.mu_);
  im.loading_.erase(config.id);
  im.models_[config.id] = *built;
  log::info("runtime: loaded model '" + config.id + "'");
  return config.id;
}

Status Runtime::unload_model(std::string_view model_id) {
  std::shared_ptr<ModelWorker> worker;
  {
    std::lock_guard lock(impl_->mu_);
    auto it = impl_->models_.find(model_id);
    if (it == impl_->models_.end())
      return NotFound("no model '" + std::string(model_id) + "' is loaded");
    worker = std::move(it->second);
    impl_->models_.erase(it);
  }
  worker->stop();
  return OkStatus();
}

std::vector<LoadedModelInfo> Runtime::list_models() const {
  std::vector<std::shared_ptr<ModelWorker>> workers;
  {
    std::lock_guard lock(impl_->mu_);
    for (auto& [id, w] : impl_->models_) workers.push_back(w);
  }
  std::vector<LoadedModelInfo> out;
  for (auto& w : workers) out.push_back(w->info());
  return out;
}

Result<std::vector<AdapterInfo>> Runtime::list_adapters(std::string_view model_id) const {
  HEARTH_ASSIGN_OR_RETURN(auto worker, impl_->find(model_id));
  return worker->list_adapters();
}

Result<AdapterInfo> Runtime::load_adapter(std::string_view model_id, const AdapterSpec& spec) {
  HEARTH_ASSIGN_OR_RETURN(auto worker, impl_->find(model_id));
  return worker->load_adapter(spec);
}

Status Runtime::unload_adapter(std::string_view model_id, int32_t id) {
  HEARTH_ASSIGN_OR_RETURN(auto worker, impl_->find(model_id));
  return worker->unload_adapter(id);
}

Status Runtime::set_adapter_scales(std::string_view model_id,
                                   std::span<const AdapterScale> scales) {
  HEARTH_ASSIGN_OR_RETURN(auto worker, impl_->find(model_id));
  return worker->set_adapter_scales(scales);
}

Result<LoadedModelInfo> Runtime::model_info(std::string_view model_id) const {
  HEARTH_ASSIGN_OR_RETURN(auto worker, impl_->find(model_id));
  return worker->info();
}

Result<CompletionResult> Runtime::complete(std::string_view model_id, std::string_view prompt,
                                           const RequestParams& params) {
  HEARTH_ASSIGN_OR_RETURN(auto tokens,
                          tokenize(model_id, prompt, params.add_special, params.parse_special));
  return complete_tokens(model_id, tokens, params);
}

Result<CompletionResult> Runtime::complete_tokens(std::string_view model_id,
                                                  std::span<const TokenId> prompt,
                                                  const RequestParams& params) {
  std::future<Result<CompletionResult>> future;
  HEARTH_RETURN_IF_ERROR(
      impl_->start(model_id, prompt, params, Request::Kind::kGenerate, {}, true, &future).status());
  return future.get();
}

Result<RequestId> Runtime::infer(std::string_view model_id, std::span<const TokenId> prompt,
                                 const RequestParams& params, StreamSink sink) {
  HEARTH_ASSIGN_OR_RETURN(RequestPtr r,
                          impl_->start(model_id, prompt, params, Request::Kind::kGenerate,
                                       std::move(sink), false, nullptr));
  return r->id;
}

Result<std::vector<RequestId>> Runtime::infer_n(std::string_view model_id,
                                                std::span<const TokenId> prompt,
                                                const RequestParams& params,
                                                std::vector<StreamSink> sinks) {
  if (sinks.empty()) return InvalidArgument("n must be >= 1 (no sinks given)");
  StreamSink first = std::move(sinks.front());
  sinks.erase(sinks.begin());
  HEARTH_ASSIGN_OR_RETURN(RequestPtr r,
                          impl_->start(model_id, prompt, params, Request::Kind::kGenerate,
                                       std::move(first), false, nullptr, std::move(sinks)));
  std::vector<RequestId> ids{r->id};
  for (const RequestPtr& f : r->forks) ids.push_back(f->id);
  return ids;
}

void Runtime::cancel(RequestId request) {
  std::shared_ptr<Request> r;
  std::shared_ptr<ModelWorker> w;
  {
    std::lock_guard lock(impl_->req_mu_);
    auto it = impl_->live_.find(request);
    if (it == impl_->live_.end()) return;
    r = it->second.request.lock();
    w = it->second.worker.lock();
  }
  if (r && w) {
    r->request_cancel(w->steps());
  } else if (r) {
    r->cancelled = true;
  }
  if (w) w->wake();
}

Result<RequestId> Runtime::continue_session(std::string_view model_id, std::string_view session_id,
                                            std::span<const TokenId> suffix,
                                            const RequestParams& params, StreamSink sink) {
  if (params.session_id && *params.session_id != session_id)
    return InvalidArgument("params.session_id '" + *params.session_id +
                           "' differs from the session continued, '" + std::string(session_id) +
                           "'");
  if (params.parent_key)
    return InvalidArgument("parent_key cannot be combined with continue_session (no lookup runs)");
  RequestParams p = params;
  p.session_id = std::string(session_id);
  HEARTH_ASSIGN_OR_RETURN(RequestPtr r, impl_->start(model_id, suffix, p, Request::Kind::kGenerate,
                                                     std::move(sink), false, nullptr, {}, true));
  return r->id;
}

Status Runtime::release_session(std::string_view model_id, std::string_view session_id) {
  HEARTH_RETURN_IF_ERROR(check_session_id(session_id));
  HEARTH_ASSIGN_OR_RETURN(auto worker, impl_->find(model_id));
  return worker->release_session(session_id);
}

Result<PrefillResult> Runtime::prefill_only(std::string_view model_id,
                                            std::span<const TokenId> prompt,
                                            const RequestParams& params) {
  std::future<Result<CompletionResult>> future;
  HEARTH_RETURN_IF_ERROR(
      impl_->start(model_id, prompt, params, Request::Kind::kPrefillOnly, {}, true, &future)
          .status());
  HEARTH_ASSIGN_OR_RETURN(CompletionResult c, future.get());
  PrefillResult out;
  out.context_tokens = std::move(c.context_tokens);
  out.committed_tokens = c.committed_tokens;
  out.finish_key = std::move(c.finish_key);
  out.cache_hit_kind = c.cache_hit_kind;
  out.cache_delta = c.cache_delta;
  return out;
}

Result<std::vector<TokenId>> Runtime::tokenize(std::string_view model_id, std::string_view text,
                                               bool add_special, bool parse_special) const {
  const std::vector<TextRange> ranges = special_ranges_for(text, parse_special);
  return tokenize_with_special_ranges(model_id, text, add_special, ranges);
}

Result<std::vector<TokenId>> Runtime::tokenize_with_special_ranges(
    std::string_view model_id, std::string_view text, bool add_special,
    std::span<const TextRange> special_ranges) const {
  HEARTH_ASSIGN_OR_RETURN(auto worker, impl_->find(model_id));
  return worker->backend()->tokenize(text, add_special, special_ranges);
}

Result<std::string> Runtime::detokenize(std::string_view model_id,
                                        std::span<const TokenId> tokens) const {
  HEARTH_ASSIGN_OR_RETURN(auto worker, impl_->find(model_id));
  return worker->backend()->detokenize(tokens);
}

Result<std::vector<std::string>> Runtime::token_bytes(std::string_view model_id,
                                                      std::span<const TokenId> tokens) const {
  HEARTH_ASSIGN_OR_RETURN(auto worker, impl_->find(model_id));
  const std::shared_ptr<Backend> backend = worker->backend();
  std::vector<std::string> out;
  out.reserve(tokens.size());
  for (TokenId t : tokens) {
    HEARTH_ASSIGN_OR_RETURN(std::string bytes, backend->token_bytes(t));
    out.push_back(std::move(bytes));
  }
  return out;
}

Result<std::vector<std::vector<float>>> Runtime::embeddings(std::string_view model_id,
                                                            std::span<const std::string> inputs) {
  std::vector<EmbeddingInput> in;
  for (const std::string& text : inputs) in.push_back({text, std::nullopt});
  HEARTH_ASSIGN_OR_RETURN(EmbeddingResult r, embeddings(model_id, in, EmbeddingOptions{}));
  return std::move(r.vectors);
}

Result<EmbeddingResult> Runtime::embeddings(std::string_view model_id,
                                            std::span<const EmbeddingInput> inputs,
                                            const EmbeddingOptions& options) {
  HEARTH_ASSIGN_OR_RETURN(auto worker, impl_->find(model_id));
  const LoadedModelInfo info = worker->info();
  EmbeddingResult result;
  result.pooling = options.pooling.value_or(info.pooling);
  result.width = info.embedding_dim;
  if (options.dimensions < 0 || options.dimensions > info.embedding_dim) {
    return InvalidArgument("dimensions " + std::to_string(options.dimensions) + " is outside [1, " +
                           std::to_string(info.embedding_dim) +
                           "], the embedding width of model '" + info.id + "'");
  }
  if (options.dimensions > 0) result.width = options.dimensions;
  std::vector<float> probe(1, 1.0f);  // checks `normalize` before any work
  HEARTH_RETURN_IF_ERROR(normalize_embedding(probe, options.normalize));
  std::vector<std::vector<TokenId>> tokenized;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<TokenId> t;
    if (inputs[i].tokens) {
      t = *inputs[i].tokens;
    } else {
      // Inputs are user text: control-token text in them stays text, as the server counts it.
      HEARTH_ASSIGN_OR_RETURN(t, worker->backend()->tokenize(inputs[i].text, true, {}));
    }
    if (t.empty()) return InvalidArgument("input " + std::to_string(i) + " has no tokens");
    result.n_tokens.push_back(static_cast<int32_t>(t.size()));
    tokenized.push_back(std::move(t));
  }
  HEARTH_RETURN_IF_ERROR(worker->run_job([&](Backend& backend) -> Status {
    HEARTH_ASSIGN_OR_RETURN(result.vectors, backend.embed_batch(tokenized, result.pooling));
    return OkStatus();
  }));
  // Each vector (each token's, without pooling): shortened, then normalised.
  const size_t e = static_cast<size_t>(info.embedding_dim), w = static_cast<size_t>(result.width);
  for (std::vector<float>& v : result.vectors) {
    std::vector<float> out;
    out.reserve(v.size() / e * w);
    for (size_t row = 0; row + e <= v.size(); row += e) {
      const size_t at = out.size();
      out.insert(out.end(), v.begin() + static_cast<std::ptrdiff_t>(row),
                 v.begin() + static_cast<std::ptrdiff_t>(row + w));
      HEARTH_RETURN_IF_ERROR(normalize_embedding(std::span(out).subspan(at, w), options.normalize));
    }
    v = std::move(out);
  }
  return result;
}

Result<VerifyResult> Runtime::verify(std::string_view model_id, std::span<const TokenId> prefix,
                                     std::span<const TokenId> draft, int32_t k) {
  HEARTH_ASSIGN_OR_RETURN(auto worker, impl_->find(model_id));
  if (k < 1) return InvalidArgument("verify: k must be >= 1, got " + std::to_string(k));
  HEARTH_RETURN_IF_ERROR(impl_->validate_prompt(*worker, prefix));
  draft = draft.first(std::min(draft.size(), static_cast<size_t>(k)));
  const int32_t vocab = worker->backend()->info().vocab_size;
  for (TokenId t : draft)
    if (t < 0 || t >= vocab)
      return InvalidArgument("draft token id " + std::to_string(t) +
                             " is outside the vocabulary of " + std::to_string(vocab) + " tokens");
  if (static_cast<int64_t>(prefix.size() + draft.size()) > worker->config().n_ctx)
    return OutOfRange("prefix (" + std::to_string(prefix.size()) + ") + draft (" +
                      std::to_string(draft.size()) + " tokens) does not fit the context of " +
                      std::to_string(worker->config().n_ctx) + " positions");
  return worker->verify(prefix, draft);
}

Status Runtime::evict(std::string_view model_id) {
  HEARTH_ASSIGN_OR_RETURN(auto worker, impl_->find(model_id));
  return worker->evict();
}

Status Runtime::shutdown(std::string_view model_id) {
  HEARTH_ASSIGN_OR_RETURN(auto worker, impl_->find(model_id));
  return worker->shutdown_save();
}

void Runtime::pressure_enable(bool on) {
  impl_->store_->pressure_enable(on);
}

cache::ForceCheckResult Runtime::pressure_force_check() {
  return impl_->store_->pressure_force_check();
}

cache::SchedulerStatus Runtime::pressure_status() const {
  return impl_->store_->pressure_status();
}

std::map<std::string, uint64_t> Runtime::cache_counters() const {
  return impl_->store_->counters();
}

std::vector<CacheRowSummary> Runtime::cache_rows() const {
  return impl_->store_->rows();
}

CacheEvictSummary Runtime::cache_evict_bytes(uint64_t target, std::span<const Tier> tiers) {
  return impl_->store_->evict_bytes(target, tiers);
}

uint64_t Runtime::cache_gc() {
  return impl_->store_->gc();
}

bool Runtime::cache_flush(std::chrono::milliseconds deadline) {
  return impl_->store_->flush(deadline);
}

void Runtime::shutdown() {
  std::map<std::string, std::shared_ptr<ModelWorker>, std::less<>> models;
  {
    std::lock_guard lock(impl_->mu_);
    if (impl_->shut_down_) return;
    impl_->shut_down_ = true;
    models.swap(impl_->models_);
  }
  for (auto& [id, w] : models) w->stop();
  impl_->store_->flush(std::chrono::milliseconds(30000));
}

}  // namespace hearth::runtime
