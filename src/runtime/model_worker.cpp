#include "runtime/model_worker.h"

#include <algorithm>
#include <stdexcept>

#include "hearth/log.h"
#include "runtime/batch_planner.h"
#include "runtime/logprobs.h"
#include "runtime/save_policy.h"
#include "runtime/slot_choice.h"

namespace hearth::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// How often an otherwise idle worker re-checks requests waiting for a pending parent save:
// the cache has no publish notification, and an idle worker has no batch to delay.
constexpr auto kResumePoll = std::chrono::milliseconds(2);

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// A backend error inside the worker: unwinds to the supervision boundary.
struct WorkerFault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Queued requests and their other choices (Runtime::infer_n), each to be answered.
std::vector<RequestPtr> with_forks(const std::deque<RequestPtr>& queued) {
  std::vector<RequestPtr> out;
  for (const RequestPtr& r : queued) {
    out.push_back(r);
    out.insert(out.end(), r->forks.begin(), r->forks.end());
  }
  return out;
}

template <typename F, typename... Args>
bool call_sink(const F& fn, Args&&... args) {
  if (!fn) return true;
  try {
    fn(std::forward<Args>(args)...);
    return true;
  } catch (...) {
    return false;  // a throwing sink is treated as a cancel
  }
}

}  // namespace

ModelWorker::ModelWorker(ModelConfig config, std::unique_ptr<Backend> backend, RowNamespace ns,
                         std::shared_ptr<RowStore> store, std::function<void(RequestId)> unregister,
                         std::unique_ptr<Backend> draft, std::vector<LoadedAdapter> adapters)
    : config_(std::move(config)),
      ns_(ns),
      store_(std::move(store)),
      unregister_(std::move(unregister)),
      chunk_(effective_chunk(config_.prefill_chunk_size, config_.n_batch)),
      planner_(config_.batch_planner ? config_.batch_planner
                                     : builtin_batch_planner(BatchStrategy::kDecodeFirst)),
      backend_info_(backend->info()),
      backend_(std::move(backend)),
      adapters_(std::move(adapters)) {
  for (const LoadedAdapter& a : adapters_)
    next_adapter_id_ = std::max(next_adapter_id_, a.info.id + 1);
  saved_ns_.push_back(ns_);
  slots_.resize(static_cast<size_t>(config_.n_seq_max));
  for (size_t i = 0; i < slots_.size(); ++i) {
    slots_[i].seq = static_cast<int32_t>(i);
    slots_[i].resident_ns = ns_;
  }
  step_costs_ = StepCosts(config_.n_batch);
  if (draft)
    draft_ = std::make_unique<DraftModel>(std::move(draft), config_.n_seq_max, config_.n_ctx);
  thread_ = std::thread([this] { thread_main(); });
}

ModelWorker::~ModelWorker() {
  stop();
}

std::shared_ptr<Backend> ModelWorker::backend() const {
  std::lock_guard lock(mu_);
  return backend_;
}

Status ModelWorker::submit(RequestPtr request) {
  std::lock_guard lock(mu_);
  if (stopping_) return Unavailable("model '" + config_.id + "' is unloading");
  if (failed_) return Unavailable("model '" + config_.id + "' failed and is not serving");
  if (backend_info_.embedding_only) {
    return InvalidArgument("model '" + config_.id + "' (" + backend_info_.architecture +
                           ") is an embedding model: it serves embeddings, not generation");
  }
  const size_t free_slots = static_cast<size_t>(config_.n_seq_max - active_);
  // The bound counts sequences: a request with n choices waits as n of them.
  size_t queued = in_admission_;
  for (const RequestPtr& q : queue_) queued += 1 + q->forks.size();
  if (queued + 1 + request->forks.size() > static_cast<size_t>(config_.max_queue) + free_slots)
    return ResourceExhausted("request queue of model '" + config_.id + "' is full (max_queue " +
                             std::to_string(config_.max_queue) + ")");
  HEARTH_RETURN_IF_ERROR(resolve_adapters(*request));
  for (const RequestPtr& f : request->forks) {
    f->adapters = request->adapters;
    f->ns = request->ns;
  }
  queue_.push_back(std::move(request));
  cv_.notify_all();
  return OkStatus();
}

void ModelWorker::wake() {
  std::lock_guard lock(mu_);
  cv_.notify_all();
}

Status ModelWorker::run_job(std::function<Status(Backend&)> fn) {
  Job job{std::move(fn), {}};
  auto done = job.done.get_future();
  {
    std::lock_guard lock(mu_);
    if (stopping_) return Unavailable("model '" + config_.id + "' is unloading");
    if (failed_) return Unavailable("model '" + config_.id + "' failed and is not serving");
    jobs_.push_back(&job);
    cv_.notify_all();
  }
  return done.get();
}

Status ModelWorker::shutdown_save() {
  return run_job([this](Backend&) -> Status {
    for (Slot& s : slots_) {
      if (s.resident.empty()) continue;
      fire_save(s, static_cast<int32_t>(s.resident.size()), SaveReason::kShutdown, true, nullptr);
    }
    return OkStatus();
  });
}

Result<VerifyResult> ModelWorker::verify(std::span<const TokenId> prefix,
                                         std::span<const TokenId> draft) {
  Result<VerifyResult> out = Internal("verify did not run");
  const Status st = run_job([&](Backend& backend) -> Status {
    {
      std::lock_guard lock(mu_);
      // The spec: verify mutates the context, so it runs only while the model is idle.
      if (active_ > 0 || !queue_.empty())
        return FailedPrecondition("busy: model '" + config_.id +
                                  "' has requests in flight; verify runs only while it is idle");
    }
    out = verify_now(backend, prefix, draft);
    return OkStatus();
  });
  if (!st.ok()) return st;
  return out;
}

Result<VerifyResult> ModelWorker::verify_now(Backend& backend, std::span<const TokenId> prefix,
                                             std::span<const TokenId> draft) {
  // The sequence whose resident cells share the longest prefix (or the cache's longest
  // cached prefix, when longer) supplies the prefix; at least its last token is fed again,
  // with the draft, for the logits at each draft position.
  // A sequence pinned by a sticky session keeps its cells for the session's next turn.
  static const std::vector<TokenId> kNoCells;
  const std::map<int32_t, std::string> pins = sessions_.pins();
  std::vector<size_t> unpinned;
  std::vector<const std::vector<TokenId>*> residents;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (pins.count(slots_[i].seq)) continue;
    unpinned.push_back(i);
    // verify runs on the base model: cells of an adapter set count as empty.
    residents.push_back(slots_[i].resident_ns == ns_ ? &slots_[i].resident : &kNoCells);
  }
  if (unpinned.empty())
    return FailedPrecondition("busy: every sequence is pinned by a sticky session");
  const SlotChoice choice = choose_slot(residents, prefix, config_.slot_affinity);
  Slot& s = slots_[unpinned[choice.slot]];
  if (!(s.resident_ns == ns_)) {
    if (Status st = backend.seq_truncate(s.seq, 0); !st.ok()) return st;
    s.resident.clear();
    s.last_logits.clear();
    s.resident_ns = ns_;
  }
  const size_t last = prefix.size() - 1;
  size_t keep = std::min(choice.resident_lcp, last);
  RowHit hit = store_->lookup_longest_prefix(
      ns_, prefix, 1, static_cast<size_t>(std::max(1, config_.policy.boundary_align_tokens)));
  if (hit && hit.row->tokens.size() <= static_cast<size_t>(config_.n_ctx) &&
      std::min(hit.n_tokens, last) > keep && restore_row(s.seq, *hit.row).ok()) {
    s.resident = hit.row->tokens;
    keep = std::min(hit.n_tokens, last);
  }
  hit.row.reset();
  auto fail = [&](const Status& error) -> Status {
    (void)backend.seq_truncate(s.seq, 0);
    s.resident.clear();
    s.last_logits.clear();
    return error;
  };
  if (keep < s.resident.size()) {
    if (!backend.seq_truncate(s.seq, static_cast<int32_t>(keep)).ok()) {
      keep = 0;  // a sliding window no longer holds `keep`
      if (Status st = backend.seq_truncate(s.seq, 0); !st.ok()) return fail(st);
    }
    s.resident.resize(keep);
  }
  s.last_logits.clear();
  s.uncached_cells = false;
  for (size_t at = keep; at < last;) {  // the prefix without its last token, n_batch at a time
    const size_t n = std::min(last - at, static_cast<size_t>(config_.n_batch));
    StepRow row{s.seq, static_cast<int32_t>(at), prefix.subspan(at, n), false, 0};
    std::vector<std::vector<float>> none;
    if (Status st = backend.step(std::span<const StepRow>(&row, 1), &none); !st.ok())
      return fail(st);
    s.resident.insert(s.resident.end(), row.tokens.begin(), row.tokens.end());
    at += n;
  }
  std::vector<TokenId> tail{prefix[last]};
  tail.insert(tail.end(), draft.begin(), draft.end());
  StepRow row{s.seq, static_cast<int32_t>(last), tail, false, static_cast<int32_t>(tail.size())};
  std::vector<std::vector<float>> logits;
  if (Status st = backend.step(std::span<const StepRow>(&row, 1), &logits); !st.ok())
    return fail(st);
  steps_.fetch_add(1);
  if (logits.size() != tail.size())
    return fail(Internal("verify: step returned wrong logits count"));
  // Greedy as the runtime's greedy requests pick (argmax, lowest id on ties).
  SamplingOptions greedy;
  greedy.temperature = 0;
  auto sampler = backend.make_sampler(greedy, {});
  if (!sampler.ok()) return fail(sampler.status());
  VerifyResult v;
  for (;; ++v.accepted) {
    v.next = (*sampler)->sample(logits[static_cast<size_t>(v.accepted)]);
    if (static_cast<size_t>(v.accepted) == draft.size() ||
        v.next != draft[static_cast<size_t>(v.accepted)])
      break;
  }
  const auto& eog = backend_info_.eog_tokens;
  v.eos = std::find(eog.begin(), eog.end(), v.next) != eog.end();
  // Keep prefix + accepted draft tokens (exact cells of those tokens), drop the rest.
  const size_t n_keep = prefix.size() + static_cast<size_t>(v.accepted);
  s.resident.assign(prefix.begin(), prefix.end());
  s.resident.insert(s.resident.end(), draft.begin(), draft.begin() + v.accepted);
  if (n_keep < tail.size() + last) {
    if (Status st = backend.seq_truncate(s.seq, static_cast<int32_t>(n_keep)); !st.ok())
      return fail(st);
  }
  s.last_logits = std::move(logits[static_cast<size_t>(v.accepted)]);
  return v;
}

Status ModelWorker::evict() {
  return run_job([this](Backend& backend) -> Status {
    for (Slot& s : slots_) {
      if (s.resident.empty()) continue;
      fire_save(s, static_cast<int32_t>(s.resident.size()), SaveReason::kEvict, true, nullptr);
      if (!s.busy()) {  // release idle cells (and the idle session pinning them)
        HEARTH_RETURN_IF_ERROR(backend.seq_truncate(s.seq, 0));
        s.resident.clear();
        s.last_logits.clear();
        sessions_.erase_seq(s.seq);
      }
    }
    return OkStatus();
  });
}

Status ModelWorker::release_session(std::string_view id) {
  const std::string sid(id);
  return run_job([this, sid](Backend&) -> Status {
    const std::optional<bool> busy = sessions_.busy(sid);
    if (!busy)
      return NotFound(std::string(kNoSession) + ": session '" + sid +
                      "' is not open (unknown, released or expired)");
    if (*busy)
      return FailedPrecondition(std::string(kStickyBusy) + ": session '" + sid +
                                "' has a request in flight");
    release_session_cells(sid, "explicit", true);
    return OkStatus();
  });
}

void ModelWorker::release_session_cells(const std::string& id, const char* why, bool sync) {
  const std::optional<int32_t> seq = sessions_.pinned(id);
  sessions_.erase(id);
  if (seq) {
    Slot& s = slots_[static_cast<size_t>(*seq)];
    if (!s.busy() && !s.resident.empty()) {
      // The spec's evict save: the session's cells reach the cache before they are freed,
      // so a later request without the session restores them.
      fire_save(s, static_cast<int32_t>(s.resident.size()), SaveReason::kEvict, sync, nullptr);
      check(backend_->seq_truncate(s.seq, 0), "seq_truncate");
      s.resident.clear();
      s.last_logits.clear();
    }
  }
  // Counted once the evict save is submitted, so whoever sees the count and then flushes
  // the cache finds the save.
  store_->count(std::string("sessions_released_") + why);
}

void ModelWorker::expire_sessions() {
  const auto idle = std::chrono::milliseconds(config_.session_idle_ms);
  for (const std::string& id : sessions_.expired(idle, Clock::now()))
    release_session_cells(id, "idle", false);
}

bool ModelWorker::continues_session(const Request& r, const std::vector<Slot*>& candidates) {
  if (!r.params.session_id || candidates.size() != 1) return false;
  const std::optional<int32_t> seq = sessions_.pinned(*r.params.session_id);
  if (!seq || *seq != candidates.front()->seq) return false;  // opening the session
  const std::vector<TokenId> held = sessions_.tokens(*r.params.session_id);
  const std::vector<TokenId>& resident = candidates.front()->resident;
  // Cells made under another adapter set (LoRA) are never continued.
  if (!(candidates.front()->resident_ns == r.ns)) {
    store_->count("session_fallbacks");
    return false;
  }
  // The session's tokens lead the prompt, and its cells hold a prefix of them.
  const bool continues = !held.empty() && held.size() <= r.prompt.size() &&
                         std::equal(held.begin(), held.end(), r.prompt.begin()) &&
                         !resident.empty() && common_prefix(resident, held) == resident.size();
  if (!continues) store_->count("session_fallbacks");
  return continues;
}

std::vector<Slot*> ModelWorker::candidate_slots(const Request& r, size_t needed) {
  if (r.params.session_id) {
    if (const std::optional<int32_t> seq = sessions_.pinned(*r.params.session_id)) {
      Slot& s = slots_[static_cast<size_t>(*seq)];
      if (s.busy()) return {};  // cannot happen: a session runs one request at a time
      return {&s};
    }
  }
  std::vector<Slot*> out;
  std::vector<int32_t> pinned_free;
  const std::map<int32_t, std::string> pins = sessions_.pins();
  for (Slot& s : slots_) {
    if (s.busy()) continue;
    (pins.count(s.seq) ? pinned_free.push_back(s.seq) : out.push_back(&s));
  }
  // Every free sequence is pinned: the least recently used idle sessions give theirs up.
  while (out.size() < needed) {
    const std::optional<std::string> lru = sessions_.lru_idle(pinned_free);
    if (!lru) break;
    const int32_t seq = *sessions_.pinned(*lru);
    release_session_cells(*lru, "lru", false);
    pinned_free.erase(std::find(pinned_free.begin(), pinned_free.end(), seq));
    out.push_back(&slots_[static_cast<size_t>(seq)]);
  }
  return out;
}

void ModelWorker::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  // The worker's last finish saves may still be queued on the cache's tier writers: wait
  // for them (same bound as the shutdown saves) so the rows are published when unload
  // returns.
  bool flushed = true;
  for (const RowNamespace& ns : saved_ns_)
    flushed = store_->flush_namespace(
                  ns, std::chrono::milliseconds(config_.policy.evict_save_timeout_ms)) &&
              flushed;
  if (!flushed)
    log::warn("runtime: model '" + config_.id + "' unloaded with saves still in flight");
}

LoadedModelInfo ModelWorker::info() const {
  std::lock_guard lock(mu_);
  LoadedModelInfo i;
  i.id = config_.id;
  i.status = failed_ ? ModelStatus::kFailed : status_;
  i.backend = backend_info_.backend_name;
  i.model_path = config_.model_path;
  i.architecture = backend_info_.architecture;
  i.context_size = config_.n_ctx;
  i.n_seq_max = config_.n_seq_max;
  i.n_vocab = backend_info_.vocab_size;
  i.embedding_dim = backend_info_.n_embd;
  i.pooling = config_.pooling.value_or(backend_info_.pooling);
  i.embedding_only = backend_info_.embedding_only;
  i.quant_type = backend_info_.quant_type;
  i.quant_bits = backend_info_.quant_bits;
  i.device = backend_info_.device;
  i.n_gpu_layers = backend_info_.n_gpu_layers;
  i.tier = *config_.tier;  // Runtime::load_model resolved it
  i.fingerprint_hex = to_hex(ns_.fingerprint);
  i.ctx_params_hash_hex = to_hex(ns_.ctx_params_hash);
  i.loaded_at = loaded_at_;
  i.memory_estimate_bytes = backend_info_.memory_estimate_bytes;
  i.active_requests = active_;
  i.queued_requests = static_cast<int32_t>(queue_.size());
  i.restarts = restarts_;
  i.scheduler_steps = steps_.load();
  i.chat_template =
      config_.chat_template.empty() ? backend_info_.chat_template : config_.chat_template;
  i.bos_text = backend_info_.bos_text;
  i.eos_text = backend_info_.eos_text;
  i.add_bos = backend_info_.add_bos;
  i.max_token_bytes = backend_info_.max_token_bytes;
  i.n_threads = config_.n_threads;
  i.n_batch = config_.n_batch;
  i.batch_strategy = planner_->name();
  const SaveRates rates = save_rates();
  i.prefill_tokens_per_s = rates.prefill_tokens_per_s;
  i.write_bytes_per_s = rates.write_bytes_per_s;
  i.session_idle_ms = config_.session_idle_ms;
  i.sessions = sessions_.list(Clock::now());
  return i;
}

std::optional<ModelWorker::Restore> ModelWorker::lookup(Request& r) {
  const ModelSavePolicy& p = config_.policy;
  if (!r.params.cache_prompt) return Restore{};  // no lookup at all
  if (r.params.parent_key) {
    auto key = digest_from_hex(*r.params.parent_key);
    if (key.ok()) {
      // The resume wait is non-blocking: blocking here would stall every other sequence
      // of the batch for up to session_resume_wait_ms. A pending parent save keeps the
      // request queued instead (later requests take the free sequences meanwhile), and
      // each loop checks again until the row publishes or the bound, counted from the
      // first time the request could have been admitted, expires.
      const auto now = Clock::now();
      if (!r.resume_deadline)
        r.resume_deadline = now + std::chrono::milliseconds(std::max(0, p.session_resume_wait_ms));
      if (now < *r.resume_deadline && store_->save_pending(*key)) {
        r.resume_waited = true;
        return std::nullopt;
      }
      RowHit hit = store_->lookup_exact(*key, r.resume_waited);
      // Usable when the row is a prefix of the new prompt (the usual next turn), made
      // under this request's namespace (the key of another adapter set is not).
      if (hit && hit.row->tokens.size() <= r.prompt.size() &&
          row_key(r.ns, hit.row->tokens) == *key &&
          std::equal(hit.row->tokens.begin(), hit.row->tokens.end(), r.prompt.begin())) {
        const size_t len = hit.row->tokens.size();
        return Restore{std::move(hit.row), len,
                       r.resume_waited ? CacheHitKind::kResume : CacheHitKind::kExact};
      }
    } else {
      log::debug("runtime: ignoring malformed parent_key: " + key.status().message());
    }
  }
  RowHit hit = store_->lookup_longest_prefix(
      r.ns, r.prompt, 1, static_cast<size_t>(std::max(1, p.boundary_align_tokens)));
  if (hit && hit.row->tokens.size() <= static_cast<size_t>(config_.n_ctx)) {
    const size_t len = std::min(hit.n_tokens, r.prompt.size());
    return Restore{std::move(hit.row), len, CacheHitKind::kPartial};
  }
  return Restore{};
}

void ModelWorker::check(const Status& status, const char* what) {
  if (!status.ok()) throw WorkerFault(std::string(what) + ": " + status.to_string());
}

// ---------------------------------------------------------------- the worker thread

void ModelWorker::thread_main() {
  for (;;) {
    try {
      std::unique_lock lock(mu_);
      const bool any_busy =
          std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.busy(); });
      if (!any_busy) {
        auto ready = [this] {
          return stopping_ || !jobs_.empty() || queue_.size() > resume_waiting_;
        };
        const auto expiry =
            sessions_.next_expiry(std::chrono::milliseconds(config_.session_idle_ms));
        if (resume_waiting_ > 0) {
          cv_.wait_for(lock, kResumePoll, ready);
        } else if (expiry) {
          cv_.wait_until(lock, *expiry, ready);
        } else {
          cv_.wait(lock, ready);
        }
      }
      if (stopping_) {
        lock.unlock();
        shutdown_saves();
        return;
      }
      loop_once(lock);
    } catch (const std::exception& e) {
      handle_failure(e.what());
    } catch (...) {
      handle_failure("unknown exception");
    }
  }
}

void ModelWorker::loop_once(std::unique_lock<std::mutex>& lock) {
  std::deque<Job*> jobs;
  jobs.swap(jobs_);
  // Requests cancelled while queued end now rather than when a sequence frees up.
  std::vector<RequestPtr> cancelled;
  for (auto it = queue_.begin(); it != queue_.end();) {
    if ((*it)->cancelled.load()) {
      cancelled.push_back(std::move(*it));
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  size_t free_slots = 0;
  for (const Slot& s : slots_) free_slots += s.busy() ? 0 : 1;
  const std::shared_ptr<Backend> backend = backend_;
  lock.unlock();

  expire_sessions();
  for (Job* job : jobs) {
    Status st;
    try {
      st = job->fn(*backend);
    } catch (const std::exception& e) {
      st = Internal(std::string("job threw: ") + e.what());
    }
    job->done.set_value(st);
  }
  for (RequestPtr& r : cancelled) admit(std::move(r), {}, {});  // ends it, computes nothing
  admit_queued(free_slots);
  tick();
  publish_status();
}

void ModelWorker::admit_queued(size_t free_slots) {
  // Requests left waiting for a pending save go back to the queue head, in order, also
  // when an admission throws (the restarted worker serves them).
  std::vector<RequestPtr> waiting;
  size_t waiting_seqs = 0;  // sequences of `waiting`
  auto requeue = [&] {
    std::lock_guard lock(mu_);
    queue_.insert(queue_.begin(), std::make_move_iterator(waiting.begin()),
                  std::make_move_iterator(waiting.end()));
    resume_waiting_ = waiting.size();
    in_admission_ = 0;  // every request taken is now active, ended or queued again
  };
  RequestPtr r;  // popped, not yet admitted nor waiting
  try {
    while (free_slots > 0) {
      {
        std::lock_guard lock(mu_);
        if (failed_ || queue_.empty()) break;
        // A request with n choices needs n free sequences at once; it waits at the head
        // of the queue (FIFO) until they are.
        if (queue_.front()->forks.size() + 1 > free_slots) break;
        r = std::move(queue_.front());
        queue_.pop_front();
        in_admission_ = waiting_seqs + 1 + r->forks.size();
      }
      const size_t needed = 1 + r->forks.size();
      std::vector<Slot*> candidates;
      if (!r->cancelled.load()) {
        candidates = candidate_slots(*r, needed);
        if (candidates.size() < needed) {  // the free sequences are pinned by busy sessions
          waiting.push_back(std::move(r));
          waiting_seqs += needed;
          continue;
        }
      }
      std::optional<Restore> restore;
      if (r->cancelled.load()) {
        restore = Restore{};
      } else if (continues_session(*r, candidates)) {
        restore = Restore{nullptr, 0, CacheHitKind::kContinuation};  // no lookup
      } else {
        restore = lookup(*r);
      }
      if (!restore) {
        waiting.push_back(std::move(r));
        waiting_seqs += needed;
        continue;
      }
      free_slots -= needed;
      admit(std::move(r), std::move(*restore), candidates);
      std::lock_guard lock(mu_);
      in_admission_ = waiting_seqs;  // ended, or active (counted there since admit's ++active_)
    }
  } catch (...) {
    if (r) waiting.push_back(std::move(r));  // its lookup threw: serve it after the restart
    requeue();
    throw;
  }
  requeue();
}

void ModelWorker::admit(RequestPtr r, Restore restore, const std::vector<Slot*>& candidates) {
  if (r->cancelled.load()) {          // cancelled while queued: done at once, nothing computed
    for (RequestPtr& f : r->forks) {  // its other choices end with it
      f->cancelled.store(true);
      admit(f, {}, {});
    }
    if (r->params.session_id) sessions_.end(*r->params.session_id, std::nullopt);
    RequestStats stats;
    stats.prompt_tokens = static_cast<int64_t>(r->prompt.size());
    stats.finish_reason = FinishReason::kCancelled;
    stats.cancelled = true;
    stats.steps_after_cancel = steps_after_cancel(*r);
    if (r->promise) {
      CompletionResult res;
      res.context_tokens = r->prompt;
      res.finish_reason = FinishReason::kCancelled;
      res.stats = stats;
      r->promise->set_value(std::move(res));
    } else {
      call_sink(r->sink.on_done, stats);
    }
    unregister_(r->id);
    return;
  }
  Backend& backend = *backend_;  // worker thread: backend_ only changes on this thread
  const auto& prompt = r->prompt;
  const size_t n = prompt.size();

  // Pick a free sequence (slot affinity: the longest resident prefix; a session: its
  // pinned one). Cells made under another adapter set count as empty.
  static const std::vector<TokenId> kNoCells;
  std::vector<const std::vector<TokenId>*> residents;
  for (Slot* slot : candidates)
    residents.push_back(slot->resident_ns == r->ns ? &slot->resident : &kNoCells);
  const bool use_cache = r->params.cache_prompt;
  const bool continuation = restore.kind == CacheHitKind::kContinuation;
  const SlotChoice choice =
      choose_slot(residents, prompt, (config_.slot_affinity || continuation) && use_cache);
  Slot& s = *candidates[choice.slot];
  if (r->params.session_id) sessions_.pin(*r->params.session_id, s.seq);
  s.begin(r, ++admit_counter_, Clock::now());
  s.uncached_cells = !use_cache;
  if (!(s.resident_ns == r->ns)) {  // its cells are another set's: never reused
    check(backend.seq_truncate(s.seq, 0), "seq_truncate");
    s.resident.clear();
    s.last_logits.clear();
    s.resident_ns = r->ns;
    if (std::find(saved_ns_.begin(), saved_ns_.end(), r->ns) == saved_ns_.end())
      saved_ns_.push_back(r->ns);
  }
  {
    std::lock_guard lock(mu_);
    ++active_;
    if (in_admission_ > 0) --in_admission_;  // counted once: from here as active
  }

  // Reuse resident cells, restore a cached row, or start cold.
  const RowPtr& row = restore.row;
  const size_t row_len = row ? restore.len : 0;  // usable tokens
  const bool row_complete =
      row && row_len == n && row->tokens.size() == n && !row->last_logits.empty();
  StartPlan start = plan_start(n, choice.resident_lcp, row_len, row_complete);
  if (start.from == StartFrom::kRestore) {
    const auto t_restore = Clock::now();
    Status st = restore_row(s.seq, *row);
    if (st.ok()) {
      s.resident = row->tokens;
      s.last_logits = row->last_logits;
      s.hit = restore.kind;
      s.restore_ms = row->load_ms + ms_between(t_restore, Clock::now());
      s.restore_tier = row->tier;
    } else {
      log::warn("runtime: restore failed, prefilling cold: " + st.to_string());
      store_->count("restore_failures");
      start = {};
    }
  }
  switch (start.from) {
    case StartFrom::kCold:
      check(backend.seq_truncate(s.seq, 0), "seq_truncate");
      s.resident.clear();
      s.last_logits.clear();
      s.hit = CacheHitKind::kCold;
      break;
    case StartFrom::kSticky:
      s.hit = continuation ? CacheHitKind::kContinuation : CacheHitKind::kSticky;
      [[fallthrough]];
    case StartFrom::kRestore:
      // Keep only what matches the prompt; without stored logits for the last prompt
      // position, that one token is recomputed.
      if (start.keep < s.resident.size()) {
        const Status cut = backend.seq_truncate(s.seq, static_cast<int32_t>(start.keep));
        if (cut.code() == ErrorCode::kFailedPrecondition) {
          // Sliding-window layers no longer hold what continuing at `keep` needs (they
          // keep a ring of the last window + n_batch positions): prefill cold instead.
          store_->count("truncate_fallbacks");
          check(backend.seq_truncate(s.seq, 0), "seq_truncate");
          s.resident.clear();
          s.hit = CacheHitKind::kCold;
        } else {
          check(cut, "seq_truncate");
          s.resident.resize(start.keep);
        }
        s.last_logits.clear();
      }
      s.delta.read = static_cast<int64_t>(s.resident.size());
      break;
  }
  if (use_cache) store_->count(hit_counter_name(s.hit));
  restore.row.reset();  // drop the pinned row early

  auto sampler = backend.make_sampler(r->params.sampling, prompt);
  check(sampler.status(), "make_sampler");
  s.sampler = std::move(sampler).value();
  s.text = backend.text_stream();
  s.stop = StopMatcher(r->params.stop_sequences);
  s.spec = resolve_speculative(config_.speculative, r->params.speculative);
  s.draft_length = DraftLength(s.spec.probe_interval);

  // Cold save boundary: trimmed, aligned prefix of the prompt (policy cold_save_split).
  s.cold_boundary = cold_save_length(config_.policy, n, s.resident.size());
  s.cursor = static_cast<int32_t>(s.resident.size());
  admit_forks(s, candidates);
  if (s.cursor == static_cast<int32_t>(n)) after_prefill(s, s.last_logits);
}

void ModelWorker::admit_forks(Slot& parent, const std::vector<Slot*>& candidates) {
  for (const RequestPtr& f : parent.request->forks) {
    auto free = std::find_if(candidates.begin(), candidates.end(),
                             [](const Slot* c) { return !c->busy(); });
    if (free == candidates.end()) throw WorkerFault("invariant: no free sequence for a fork");
    Slot& c = **free;
    c.begin(f, ++admit_counter_, Clock::now());
    c.resident_ns = parent.resident_ns;
    {
      std::lock_guard lock(mu_);
      ++active_;
      if (in_admission_ > 0) --in_admission_;
    }
    c.awaiting_fork = true;
    c.fork_parent = parent.seq;
    c.hit = parent.hit;
    auto sampler = backend_->make_sampler(f->params.sampling, f->prompt);
    check(sampler.status(), "make_sampler");
    c.sampler = std::move(sampler).value();
    c.text = backend_->text_stream();
    c.stop = StopMatcher(f->params.stop_sequences);
    c.spec = resolve_speculative(config_.speculative, f->params.speculative);
    c.draft_length = DraftLength(c.spec.probe_interval);
  }
}

void ModelWorker::fork_into_children(Slot& parent, const std::vector<float>& logits) {
  for (Slot& c : slots_) {
    if (!c.busy() || !c.awaiting_fork || c.fork_parent != parent.seq || c.finishing) continue;
    const int32_t n_pos = static_cast<int32_t>(parent.resident.size());
    check(backend_->kv_copy(parent.seq, c.seq, n_pos), "kv_copy");
    c.awaiting_fork = false;
    c.resident = parent.resident;
    c.last_logits = logits;
    c.cursor = static_cast<int32_t>(c.request->prompt.size());
    start_generating(c, logits);
  }
}

Status ModelWorker::restore_row(int32_t seq, const CacheRow& row) {
  const int32_t n = static_cast<int32_t>(row.tokens.size());
  Backend& backend = *backend_;
  if (!row.read_into) return backend.kv_unpack(seq, row.kv_bytes(), n);
  if (row.view) {
    HEARTH_ASSIGN_OR_RETURN(std::span<const uint8_t> payload, row.view());
    return backend.kv_unpack(seq, payload, n);
  }
  HEARTH_ASSIGN_OR_RETURN(std::vector<std::span<uint8_t>> spans, backend.kv_import_spans(seq, n));
  if (spans.empty()) {  // no in-place import: stage the payload, then unpack
    std::vector<uint8_t> staged(row.payload_size);
    const std::span<uint8_t> one[1] = {staged};
    HEARTH_RETURN_IF_ERROR(row.read_into(one));
    return backend.kv_unpack(seq, staged, n);
  }
  HEARTH_RETURN_IF_ERROR(row.read_into(spans));
  return backend.kv_import_commit(seq, n);
}

void ModelWorker::tick() {
  for (Slot& s : slots_)
    if (s.busy() && !s.finishing && s.request->cancelled.load()) {
      s.finishing = true;
      s.reason = FinishReason::kCancelled;
    }
  for (Slot& s : slots_)
    if (s.busy() && s.finishing) finish(s);

  std::vector<Slot*> order;
  for (Slot& s : slots_)
    if (s.busy() && !s.awaiting_fork) order.push_back(&s);
  if (order.empty()) return;
  std::sort(order.begin(), order.end(),
            [](const Slot* a, const Slot* b) { return a->admit_order < b->admit_order; });
  std::vector<PlanCandidate> candidates;
  for (Slot* s : order) {
    PlanCandidate c;
    c.slot = s->seq;
    c.decode = s->has_pending;
    c.prefill_remaining =
        s->has_pending ? 0 : static_cast<int32_t>(s->request->prompt.size()) - s->cursor;
    candidates.push_back(c);
  }
  const int32_t n_decode = static_cast<int32_t>(
      std::count_if(candidates.begin(), candidates.end(), [](auto& c) { return c.decode; }));
  if (n_decode > config_.n_batch)
    throw WorkerFault("invariant: " + std::to_string(n_decode) + " decoders exceed n_batch " +
                      std::to_string(config_.n_batch));
  const std::vector<PlanRow> plan = planner_->plan(candidates, config_.n_batch, chunk_);
  if (Status valid = check_plan(candidates, plan, config_.n_batch, chunk_); !valid.ok())
    check(valid, ("batch strategy " + planner_->name()).c_str());
  if (plan.empty()) return;

  std::vector<StepRow> rows;
  rows.reserve(plan.size());
  for (const PlanRow& pr : plan) {
    Slot& s = slots_[static_cast<size_t>(pr.slot)];
    StepRow row;
    row.seq = s.seq;
    row.pos = static_cast<int32_t>(s.resident.size());
    row.adapters = s.request->adapters;
    if (pr.decode) {
      row.tokens = std::span<const TokenId>(&s.pending, 1);
      row.want_logits = true;
    } else {
      const auto& prompt = s.request->prompt;
      row.tokens = std::span<const TokenId>(prompt).subspan(static_cast<size_t>(s.cursor),
                                                            static_cast<size_t>(pr.prefill_len));
      row.want_logits = s.cursor + pr.prefill_len == static_cast<int32_t>(prompt.size());
    }
    rows.push_back(row);
  }
  // Speculative decoding: decode rows whose request drafts carry [pending, draft...] with
  // logits at every position, in the batch budget the plan left.
  // Adaptive requests draft the length that pays at this step's size (runtime/draft_length.h):
  // `step_tokens` and `step_yield` are the step's tokens and expected new tokens so far.
  int32_t step_tokens = 0;
  double step_yield = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    step_tokens += static_cast<int32_t>(rows[i].tokens.size());
    if (plan[i].decode) step_yield += 1;
  }
  int32_t budget = config_.n_batch - step_tokens;
  for (size_t i = 0; i < plan.size() && budget > 0; ++i) {
    Slot& s = slots_[static_cast<size_t>(plan[i].slot)];
    if (!plan[i].decode || !s.spec.enabled()) continue;
    const int32_t left =
        s.request->params.response_tokens - static_cast<int32_t>(s.generated.size());
    const int32_t room = config_.n_ctx - static_cast<int32_t>(s.resident.size()) - 1;
    int32_t limit = std::min({left - 1, room, budget});
    const bool model_drafts = s.spec.type == SpeculativeType::kDraft;
    if (s.spec.adaptive) {
      limit = s.draft_length.choose(step_costs_, step_tokens, step_yield, s.spec.n_min,
                                    std::min(limit, s.spec.n_max), model_drafts && draft_);
      if (limit == 0) continue;
    }
    const auto draft_start = Clock::now();
    std::vector<TokenId> draft =
        propose_draft(s.spec, draft_.get(), s.seq, s.resident, s.pending, limit);
    if (model_drafts)
      step_costs_.record_draft(static_cast<int32_t>(draft.size()),
                               ms_between(draft_start, Clock::now()) / 1000.0);
    if (draft.empty()) continue;
    budget -= static_cast<int32_t>(draft.size());
    step_tokens += static_cast<int32_t>(draft.size());
    step_yield += s.draft_length.expected_tokens(static_cast<int32_t>(draft.size())) - 1;
    s.spec_row.assign(1, s.pending);
    s.spec_row.insert(s.spec_row.end(), draft.begin(), draft.end());
    rows[i].tokens = s.spec_row;
    rows[i].logits_last_n = static_cast<int32_t>(s.spec_row.size());
  }
  std::vector<std::vector<float>> logits;
  const auto step_start = Clock::now();
  check(backend_->step(rows, &logits), "step");
  steps_.fetch_add(1);
  {
    int64_t prefill = 0, total = 0;
    for (size_t i = 0; i < plan.size(); ++i) {
      total += static_cast<int64_t>(rows[i].tokens.size());
      if (!plan[i].decode) prefill += plan[i].prefill_len;
    }
    const double seconds = ms_between(step_start, Clock::now()) / 1000.0;
    record_step(prefill, total, seconds);
    if (prefill == 0) step_costs_.record(static_cast<int32_t>(total), seconds);  // decode only
  }
  size_t wanted = 0;
  for (const StepRow& row : rows) wanted += row.n_logits();
  if (logits.size() != wanted) throw WorkerFault("invariant: step returned wrong logits count");

  size_t li = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    Slot& s = slots_[static_cast<size_t>(plan[i].slot)];
    const StepRow& row = rows[i];
    if (plan[i].decode) s.decode_steps += 1;
    if (plan[i].decode && row.tokens.size() == 1) s.draft_length.plain_step();
    if (plan[i].decode && row.tokens.size() > 1) {
      s.draft_steps += 1;
      accept_speculative(s, row.pos, row.tokens,
                         std::span<std::vector<float>>(logits).subspan(li, row.tokens.size()));
      li += row.tokens.size();
      continue;
    }
    s.resident.insert(s.resident.end(), row.tokens.begin(), row.tokens.end());
    s.delta.created += static_cast<int64_t>(row.tokens.size());
    if (plan[i].decode) {
      s.has_pending = false;
      s.last_logits = std::move(logits[li++]);
      sample_next(s, s.last_logits);
    } else {
      s.cursor += plan[i].prefill_len;
      if (row.want_logits) {
        s.last_logits = std::move(logits[li++]);
      } else {
        s.last_logits.clear();
      }
      // The cold save as soon as the prefill passes its boundary, while sliding-window
      // layers still hold the positions just before it (a ring of window + n_batch).
      if (s.cold_boundary > 0 && s.cursor >= s.cold_boundary) {
        fire_save(s, s.cold_boundary, SaveReason::kCold, false, nullptr);
        s.cold_boundary = 0;
      }
      if (row.want_logits) after_prefill(s, s.last_logits);
    }
  }
  for (Slot& s : slots_)
    if (s.busy() && s.finishing) finish(s);
}

void ModelWorker::after_prefill(Slot& s, std::vector<float> logits) {
  if (s.cold_boundary > 0) {
    fire_save(s, s.cold_boundary, SaveReason::kCold, false, nullptr);
    s.cold_boundary = 0;
  }
  if (!s.request->forks.empty()) {
    if (logits.empty()) throw WorkerFault("invariant: no logits at the end of prefill");
    fork_into_children(s, logits);
  }
  start_generating(s, logits);
}

void ModelWorker::start_generating(Slot& s, const std::vector<float>& logits) {
  if (s.request->kind == Request::Kind::kPrefillOnly) {
    s.finishing = true;
    s.reason = FinishReason::kStop;
    return;
  }
  if (s.request->params.response_tokens <= 0) {
    s.finishing = true;
    s.reason = FinishReason::kLength;
    return;
  }
  if (logits.empty()) throw WorkerFault("invariant: no logits at the end of prefill");
  sample_next(s, logits);
}

void ModelWorker::sample_next(Slot& s, std::span<const float> logits) {
  Request& r = *s.request;
  if (r.params.capture_logits) s.token_logits.emplace_back(logits.begin(), logits.end());
  const ThinkingBudget& budget = r.params.thinking;
  if (budget.budget == 0 && budget.starts_inside && !budget.close.empty() && s.generated.empty() &&
      s.think == Slot::Think::kBefore) {
    s.think = Slot::Think::kInside;  // a zero budget closes the block the prompt opened
    s.forced = budget.close;
  }
  TokenId t;
  const bool forced = !s.forced.empty();
  if (forced) {  // a thinking budget closing its block
    t = s.forced.front();
    s.forced.erase(s.forced.begin());
  } else {
    t = s.sampler->sample(logits);
  }
  s.sampler->accept(t);
  std::optional<TokenLogprobs> lp;
  if (r.params.logprobs >= 0) {
    // A forced token was not sampled: its logprobs are the model's raw distribution.
    const std::span<const float> adjusted =
        forced ? std::span<const float>() : s.sampler->adjusted_logits();
    lp = token_logprobs(adjusted.empty() ? logits : adjusted, t, r.params.logprobs);
  }
  if (!s.has_first_token) {
    s.has_first_token = true;
    s.first_token_at = Clock::now();
  }
  const auto& eog = backend_info_.eog_tokens;
  if (std::find(eog.begin(), eog.end(), t) != eog.end()) {
    s.finishing = true;
    s.reason = FinishReason::kStop;
    return;
  }
  s.generated.push_back(t);
  if (lp) {
    if (!call_sink(r.sink.on_logprobs, *lp)) r.request_cancel(steps_);
    s.logprobs.push_back(std::move(*lp));
  }
  track_thinking(s, r.params.thinking);
  if (!call_sink(r.sink.on_token, t)) r.request_cancel(steps_);
  const std::string released = s.stop.push(s.text->push(t));
  if (!released.empty()) {
    s.reply += released;
    if (!call_sink(r.sink.on_text, std::string_view(released))) r.request_cancel(steps_);
  }
  if (s.stop.matched()) {
    s.finishing = true;
    s.reason = FinishReason::kStop;
    return;
  }
  if (static_cast<int32_t>(s.generated.size()) >= r.params.response_tokens ||
      static_cast<int32_t>(s.resident.size()) >= config_.n_ctx) {
    s.finishing = true;
    s.reason = FinishReason::kLength;
    return;
  }
  s.has_pending = true;
  s.pending = t;
  if (continued_save_due(config_.policy, s.generated.size(), s.last_continued_at)) {
    fire_save(s, static_cast<int32_t>(s.resident.size()), SaveReason::kContinued, false, nullptr);
    s.last_continued_at = s.generated.size();
  }
}

void ModelWorker::accept_speculative(Slot& s, int32_t row_pos, std::span<const TokenId> tokens,
                                     std::span<std::vector<float>> logits) {
  // logits[j] are the target's logits after tokens[0..j]: the row a plain decode of
  // tokens[j] would have produced (batch invariance). tokens[j + 1] was drafted: its cells
  // are usable only when the request's sampler, run on logits[j], picks that very token.
  s.has_pending = false;
  const size_t n_draft = tokens.size() - 1;
  s.draft_tokens += static_cast<int64_t>(n_draft);
  int32_t accepted = 0;
  bool rejected = false;
  for (size_t j = 0;; ++j) {
    s.resident.push_back(tokens[j]);
    s.delta.created += 1;
    s.last_logits = std::move(logits[j]);
    sample_next(s, s.last_logits);
    if (j == n_draft || s.finishing || !s.has_pending || s.request->cancelled.load()) break;
    if (s.pending != tokens[j + 1]) {
      rejected = true;
      break;
    }
    s.has_pending = false;  // the drafted token's cells are already computed
    s.draft_accepted += 1;
    accepted += 1;
  }
  s.draft_length.observe(accepted, rejected);
  const int32_t computed = row_pos + static_cast<int32_t>(tokens.size());
  if (static_cast<int32_t>(s.resident.size()) < computed)
    check(backend_->seq_truncate(s.seq, static_cast<int32_t>(s.resident.size())),
          "seq_truncate (rejected draft)");
}

void ModelWorker::record_step(int64_t prefill_tokens, int64_t total_tokens, double seconds) {
  // Only steps that are mostly prefill say how fast this model prefills.
  if (prefill_tokens < 1 || prefill_tokens * 2 < total_tokens || seconds <= 0) return;
  const double sample = static_cast<double>(total_tokens) / seconds;
  const double old = prefill_rate_.load();
  prefill_rate_.store(old == 0 ? sample : 0.75 * old + 0.25 * sample);
}

SaveRates ModelWorker::save_rates() const {
  return effective_rates(config_.policy, *config_.tier, prefill_rate_.load(),
                         store_->write_bytes_per_s(*config_.tier));
}

bool ModelWorker::worth_saving(int64_t n_tokens, uint64_t bytes) {
  if (config_.policy.min_tokens != ModelSavePolicy::kCostRule) return true;  // static gates
  if (cost_rule_saves(n_tokens, bytes, save_rates())) return true;
  store_->count("saves_skipped_cost");
  return false;
}

namespace {
bool ends_with(const std::vector<TokenId>& seq, const std::vector<TokenId>& tail) {
  return !tail.empty() && seq.size() >= tail.size() &&
         std::equal(tail.begin(), tail.end(), seq.end() - static_cast<ptrdiff_t>(tail.size()));
}
}  // namespace

void ModelWorker::track_thinking(Slot& s, const ThinkingBudget& b) {
  if (b.budget < 0 || b.close.empty() || s.think == Slot::Think::kDone) return;
  if (s.think == Slot::Think::kBefore) {
    if (b.starts_inside && s.generated.size() == 1) {
      s.think = Slot::Think::kInside;  // this token is the block's first
    } else {
      if (ends_with(s.generated, b.open)) s.think = Slot::Think::kInside;
      return;
    }
  }
  if (ends_with(s.generated, b.close)) {
    s.think = Slot::Think::kDone;
    s.forced.clear();
    return;
  }
  ++s.think_tokens;
  if (s.forced.empty() && s.think_tokens >= b.budget) s.forced = b.close;
}

void ModelWorker::fire_save(Slot& s, int32_t n_tokens, SaveReason reason, bool sync,
                            std::optional<std::string>* key_out) {
  if (!save_allowed(config_.policy, n_tokens, s.resident.size())) return;
  // cache_prompt = false: nothing of this request (or of its cells) is saved.
  if (s.busy() ? !s.request->params.cache_prompt : s.uncached_cells) return;
  // The cost rule judges the policy's own saves; evict and shutdown saves are asked for
  // (the spec: unconditional). Skip the pack when the last one says it is not worth it.
  const bool judged = reason != SaveReason::kEvict && reason != SaveReason::kShutdown;
  if (judged && kv_bytes_per_token_ > 0 &&
      !worth_saving(n_tokens, static_cast<uint64_t>(kv_bytes_per_token_ * n_tokens)))
    return;
  // Cells whose row is already saved (an exact hit that added nothing, a session
  // released after its finish save) are not packed again only to be dropped: tens of
  // megabytes copied and freed on the worker while the next request waits.
  const RowKey cells_key = row_key(s.resident_ns, std::span(s.resident).first(n_tokens));
  if (store_->drop_duplicate_save(cells_key)) {
    if (key_out) *key_out = to_hex(cells_key);
    return;
  }
  // The pack runs on this thread, every stream waiting: its time is counted.
  const auto t_pack = Clock::now();
  auto kv = backend_->kv_pack(s.seq, n_tokens);
  store_->count("save_packs");
  store_->count(
      "save_pack_ns",
      static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t_pack).count()));
  if (!kv.ok()) {
    log::warn(std::string("runtime: kv_pack for a ") + save_reason_name(reason) +
              " save failed: " + kv.status().to_string());
    store_->count("save_failures");
    return;
  }
  const bool first_pack = kv_bytes_per_token_ == 0;
  kv_bytes_per_token_ = static_cast<double>(kv->size()) / n_tokens;
  if (judged && first_pack && !worth_saving(n_tokens, kv->size())) return;
  CacheRow row;
  row.tokens.assign(s.resident.begin(), s.resident.begin() + n_tokens);
  row.kv = std::move(kv).value();
  if (static_cast<size_t>(n_tokens) == s.resident.size()) row.last_logits = s.last_logits;
  RowMeta meta;
  meta.quant_bits = static_cast<uint8_t>(std::clamp(backend_info_.quant_bits, 0, 255));
  meta.context_size = static_cast<uint32_t>(config_.n_ctx);
  meta.fingerprint_mode = config_.fingerprint_mode;
  meta.kv_groups = backend_info_.kv_pack_groups;
  auto key = store_->save(s.resident_ns, meta, std::move(row), *config_.tier, reason, sync);
  if (!key.ok()) {
    log::warn(std::string("runtime: ") + save_reason_name(reason) +
              " save failed: " + key.status().to_string());
    store_->count("save_failures");
    return;
  }
  if (key_out) *key_out = to_hex(*key);
}

void ModelWorker::finish(Slot& s) {
  RequestPtr r = s.request;
  // Forks still waiting for this prompt's prefill (it was cancelled first) end with it.
  for (Slot& c : slots_)
    if (c.busy() && c.awaiting_fork && c.fork_parent == s.seq && !c.finishing) {
      c.finishing = true;
      c.reason = FinishReason::kCancelled;
    }
  if (!s.stop.matched()) {
    std::string rest = s.stop.push(s.text->flush());
    rest += s.stop.flush();
    if (!rest.empty()) {
      s.reply += rest;
      call_sink(r->sink.on_text, std::string_view(rest));
    }
  }
  if (!s.finish_key && !s.awaiting_fork)
    fire_save(s, static_cast<int32_t>(s.resident.size()), SaveReason::kFinish, false,
              &s.finish_key);
  const auto now = Clock::now();
  CompletionResult res;
  res.reply = std::move(s.reply);
  res.generated = s.generated;
  res.context_tokens = r->prompt;
  res.context_tokens.insert(res.context_tokens.end(), s.generated.begin(), s.generated.end());
  res.committed_tokens = static_cast<int64_t>(s.resident.size());
  res.finish_key = s.finish_key;
  res.cache_hit_kind = s.hit;
  res.finish_reason = s.reason;
  res.cache_delta = s.delta;
  res.stop_sequence = s.stop.matched();
  res.token_logits = std::move(s.token_logits);
  res.logprobs = std::move(s.logprobs);
  RequestStats& st = res.stats;
  st.prompt_tokens = static_cast<int64_t>(r->prompt.size());
  st.completion_tokens = static_cast<int64_t>(s.generated.size());
  const auto first = s.has_first_token ? s.first_token_at : now;
  st.prefill_ms = ms_between(s.admitted_at, first);
  st.generation_ms = ms_between(first, now);
  st.queue_ms = ms_between(r->enqueued_at, s.admitted_at);
  st.restore_ms = s.restore_ms;
  st.restore_tier = s.restore_tier;
  st.cache_hit_kind = s.hit;
  st.finish_reason = s.reason;
  st.cancelled = s.reason == FinishReason::kCancelled;
  if (st.cancelled) st.steps_after_cancel = steps_after_cancel(*r);
  st.finish_key = s.finish_key;
  st.committed_tokens = res.committed_tokens;
  st.cache_delta = s.delta;
  st.stop_sequence = res.stop_sequence;
  st.draft_tokens = s.draft_tokens;
  st.draft_accepted = s.draft_accepted;
  st.decode_steps = s.decode_steps;
  st.draft_steps = s.draft_steps;

  s.release();
  if (r->params.session_id) sessions_.end(*r->params.session_id, res.context_tokens);
  {
    std::lock_guard lock(mu_);
    --active_;
    consecutive_failures_ = 0;
  }
  if (r->promise) {
    r->promise->set_value(std::move(res));
  } else {
    call_sink(r->sink.on_done, st);
  }
  unregister_(r->id);
}

int64_t ModelWorker::steps_after_cancel(const Request& r) const {
  const uint64_t at = r.cancel_step.load();
  const uint64_t now = steps_.load();
  // kNoStep: the canceller set the flag but had not recorded the count yet, so the
  // worker saw the cancel before any further step.
  return at == Request::kNoStep || at > now ? 0 : static_cast<int64_t>(now - at);
}

void ModelWorker::deliver_error(const RequestPtr& r, const Status& error) {
  if (r->params.session_id) sessions_.erase(*r->params.session_id);  // its cells are gone
  if (r->promise) {
    r->promise->set_value(error);
  } else {
    call_sink(r->sink.on_error, error);
  }
  unregister_(r->id);
}

void ModelWorker::publish_status() {
  int prefilling = 0, generating = 0;
  for (const Slot& s : slots_) {
    if (!s.busy()) continue;
    (s.prefilling() ? prefilling : generating)++;
  }
  std::lock_guard lock(mu_);
  if (prefilling + generating == 0)
    status_ = ModelStatus::kIdle;
  else
    status_ = prefilling > generating ? ModelStatus::kPrefilling : ModelStatus::kGenerating;
}

void ModelWorker::handle_failure(const std::string& what) {
  log::error("runtime: model '" + config_.id + "' worker failed: " + what);
  const Status error = Internal("model '" + config_.id + "' worker failed: " + what);
  for (Slot& s : slots_) {
    if (s.busy()) {
      RequestPtr r = std::move(s.request);
      s.request.reset();
      deliver_error(r, error);
    }
    const int32_t seq = s.seq;
    s = Slot();
    s.seq = seq;
  }
  sessions_.clear();  // the rebuilt backend holds no cells
  int32_t failures;
  {
    std::lock_guard lock(mu_);
    active_ = 0;
    ++restarts_;
    failures = ++consecutive_failures_;
    if (failures > config_.max_restarts) {
      failed_ = true;
      status_ = ModelStatus::kFailed;
    } else {
      status_ = ModelStatus::kRestarting;
    }
  }
  if (failures > config_.max_restarts) {
    std::deque<RequestPtr> queued;
    {
      std::lock_guard lock(mu_);
      queued.swap(queue_);
    }
    for (auto& r : with_forks(queued))
      deliver_error(r, Unavailable("model '" + config_.id + "' failed after " +
                                   std::to_string(failures) + " consecutive worker failures"));
    return;
  }
  if (draft_) draft_->reset();  // its cells mirrored sequences that are gone
  // Back off (interruptible by stop), then rebuild the backend from scratch: its KV cells
  // may be half-written.
  const int64_t backoff =
      std::min<int64_t>(2000, static_cast<int64_t>(config_.restart_backoff_ms) << (failures - 1));
  {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(backoff), [this] { return stopping_; });
    if (stopping_) return;
  }
  Result<std::unique_ptr<Backend>> fresh =
      config_.factory ? config_.factory()
                      : Result<std::unique_ptr<Backend>>(Unavailable("no factory"));
  if (!fresh.ok()) {
    handle_failure("rebuilding the backend: " + fresh.status().to_string());
    return;
  }
  if (Status st = reload_adapters(**fresh); !st.ok()) {
    handle_failure("reloading the LoRA adapters: " + st.to_string());
    return;
  }
  std::lock_guard lock(mu_);
  backend_ = std::shared_ptr<Backend>(std::move(fresh).value());
  status_ = ModelStatus::kIdle;
}

void ModelWorker::shutdown_saves() {
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(config_.policy.evict_save_timeout_ms);
  // Idle sticky sessions' cells too: the sessions end with the model, their rows stay.
  const std::map<int32_t, std::string> pins = sessions_.pins();
  for (Slot& s : slots_) {
    if (s.busy() || !pins.count(s.seq) || s.resident.empty() || Clock::now() >= deadline) continue;
    try {
      fire_save(s, static_cast<int32_t>(s.resident.size()), SaveReason::kShutdown, true, nullptr);
    } catch (...) {
      // best effort
    }
  }
  sessions_.clear();
  for (Slot& s : slots_) {
    if (!s.busy()) continue;
    if (Clock::now() < deadline && !s.resident.empty()) {
      try {
        fire_save(s, static_cast<int32_t>(s.resident.size()), SaveReason::kShutdown, true,
                  &s.finish_key);
      } catch (...) {
        // best effort
      }
    }
    s.finishing = true;
    s.reason = FinishReason::kCancelled;
    finish(s);
  }
  std::deque<RequestPtr> queued;
  std::deque<Job*> jobs;
  {
    std::lock_guard lock(mu_);
    queued.swap(queue_);
    jobs.swap(jobs_);
  }
  const Status gone = Unavailable("model '" + config_.id + "' is unloading");
  for (auto& r : with_forks(queued)) deliver_error(r, gone);
  for (Job* j : jobs) j->done.set_value(gone);
}

}  // namespace hearth::runtime
