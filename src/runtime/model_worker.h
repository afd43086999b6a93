// One loaded model: its backend, its worker thread and its continuous-batching scheduler.
//
// Callers (any thread) push requests and jobs into a mutex-protected inbox and wake the
// worker with a condition variable. The worker thread is the only code that touches the
// backend's KV cells: each loop it runs queued jobs (embeddings, evict), admits queued
// requests into free sequences (looking them up in the cache then, and restoring cached
// KV), observes cancellations, then runs one tick = one Backend::step over every decode
// row plus prefill slices.
//
// Supervision: the loop body is an exception boundary. A throw or a backend error fails
// the in-flight requests with Internal, rebuilds the backend from the factory after a
// backoff, and keeps serving queued requests; after max_restarts consecutive failures the
// model is marked failed and refuses work. Other models and the cache are untouched.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "hearth/runtime/runtime.h"
#include "runtime/request.h"
#include "runtime/row_store.h"
#include "runtime/save_policy.h"
#include "runtime/sessions.h"
#include "runtime/slot.h"

namespace hearth::runtime {

// One LoRA adapter of the model (model_worker_lora.cpp).
struct LoadedAdapter {
  AdapterInfo info;
  Digest256 sha256{};
};

class ModelWorker {
 public:
  // `unregister` is called with a request id when it finishes (the runtime's cancel map).
  // `draft`: the speculative draft model's backend (null: none).
  ModelWorker(ModelConfig config, std::unique_ptr<Backend> backend, RowNamespace ns,
              std::shared_ptr<RowStore> store, std::function<void(RequestId)> unregister,
              std::unique_ptr<Backend> draft = nullptr, std::vector<LoadedAdapter> adapters = {});
  ~ModelWorker();  // stop() + join

  // Queues a request (FIFO). ResourceExhausted when the queue is full, Unavailable when
  // stopping or failed.
  Status submit(RequestPtr request);
  // LoRA adapters (model_worker_lora.cpp; Runtime's methods of the same names).
  std::vector<AdapterInfo> list_adapters() const;
  Result<AdapterInfo> load_adapter(const AdapterSpec& spec);
  Status unload_adapter(int32_t id);
  Status set_adapter_scales(std::span<const AdapterScale> scales);
  // Wakes the worker so it notices a cancel flag.
  void wake();
  // Runs `job` on the worker thread between ticks and waits for it.
  Status run_job(std::function<Status(Backend&)> job);
  // Runtime::verify on the worker thread between ticks (FailedPrecondition while busy).
  Result<VerifyResult> verify(std::span<const TokenId> prefix, std::span<const TokenId> draft);
  bool has_draft_model() const { return draft_ != nullptr; }
  // Synchronous evict saves of every sequence's KV.
  Status evict();
  // Synchronous shutdown saves of every sequence's KV; the model keeps serving.
  Status shutdown_save();
  // Sticky sessions: callers acquire one when they submit a request of it.
  SessionTable& sessions() { return sessions_; }
  // Releases an idle session: a synchronous evict save of its cells, which are freed.
  // no_session / sticky_busy (runtime.h).
  Status release_session(std::string_view id);
  // Stops admitting, runs shutdown saves (bounded), ends requests, joins the thread, then
  // waits (same bound) for this model's async saves to publish.
  void stop();

  // Snapshot of the backend for thread-safe const calls (tokenize, ...).
  std::shared_ptr<Backend> backend() const;
  const ModelConfig& config() const { return config_; }
  const RowNamespace& row_namespace() const { return ns_; }
  LoadedModelInfo info() const;
  // Backend::step calls so far; Runtime::cancel records it in the request.
  const std::atomic<uint64_t>& steps() const { return steps_; }

 private:
  // What the admission-time cache lookup found for a request.
  struct Restore {
    RowPtr row;
    size_t len = 0;  // leading tokens of row that match the prompt
    CacheHitKind kind = CacheHitKind::kCold;
  };
  struct Job {
    std::function<Status(Backend&)> fn;
    std::promise<Status> done;
  };

  // Fills r.adapters and r.ns from r.params.lora or the model's scales (mu_ held).
  Status resolve_adapters(Request& r) const;
  // Loads the model's adapters into a rebuilt backend (worker restart).
  Status reload_adapters(Backend& backend);
  void thread_main();
  void loop_once(std::unique_lock<std::mutex>& lock);
  // Pops requests from the queue head into free sequences, looking each up in the cache;
  // those waiting for a pending parent save go back to the queue head.
  void admit_queued(size_t free_slots);
  // Cache lookup for a request being admitted (exact, resume, longest prefix). nullopt:
  // its parent_key's save is still pending and its resume wait has not expired.
  std::optional<Restore> lookup(Request& request);
  // The free sequences `request` may take (its session's pinned one, else free unpinned
  // ones), releasing least recently used idle sessions until `needed` are free. Fewer
  // than `needed`: the request waits.
  std::vector<Slot*> candidate_slots(const Request& request, size_t needed);
  // Saves (evict) and frees the cells of an idle session and closes it. `why` names the
  // runtime counter "sessions_released_<why>".
  void release_session_cells(const std::string& id, const char* why, bool sync);
  // Releases the sessions idle for longer than ModelConfig::session_idle_ms.
  void expire_sessions();
  void admit(RequestPtr request, Restore restore, const std::vector<Slot*>& candidates);
  void tick();
  // Restores a cached row into seq: in place from a file row when the backend can,
  // else through kv_unpack.
  Status restore_row(int32_t seq, const CacheRow& row);
  void after_prefill(Slot& slot, std::vector<float> logits);
  // Runtime::infer_n: takes a free sequence for each other choice of parent's request.
  void admit_forks(Slot& parent, const std::vector<Slot*>& candidates);
  // The request continues its session: it runs on the session's pinned sequence
  // (candidates) and its prompt starts with the session's tokens. A session request
  // whose prompt does not is counted as a fallback (runtime_session_fallbacks).
  bool continues_session(const Request& request, const std::vector<Slot*>& candidates);
  // parent's prompt is prefilled: copies its KV into its waiting forks, which start.
  void fork_into_children(Slot& parent, const std::vector<float>& logits);
  // Prefill done (or forked): ends a prefill-only request, or samples the first token.
  void start_generating(Slot& slot, const std::vector<float>& logits);
  void sample_next(Slot& slot, std::span<const float> logits);
  // A decode row that carried a draft ([pending, draft...], one logits row each): samples
  // position by position while the sampled token is the drafted one, then drops the
  // cells of the rejected draft tokens.
  void accept_speculative(Slot& slot, int32_t row_pos, std::span<const TokenId> tokens,
                          std::span<std::vector<float>> logits);
  // Verify's body (worker thread; the model is idle).
  Result<VerifyResult> verify_now(Backend& backend, std::span<const TokenId> prefix,
                                  std::span<const TokenId> draft);
  // Advances the slot's thinking-budget state after a generated token; queues the
  // closing tokens once the budget is spent.
  static void track_thinking(Slot& slot, const ThinkingBudget& budget);
  void finish(Slot& slot);
  void deliver_error(const RequestPtr& request, const Status& error);
  void fire_save(Slot& slot, int32_t n_tokens, SaveReason reason, bool sync,
                 std::optional<std::string>* key_out);
  // The save policy's cost rule for a row of n_tokens taking `bytes` (true when the
  // policy uses static gates instead).
  bool worth_saving(int64_t n_tokens, uint64_t bytes);
  SaveRates save_rates() const;
  // Folds one step's throughput into the measured prefill rate.
  void record_step(int64_t prefill_tokens, int64_t total_tokens, double seconds);
  void handle_failure(const std::string& what);
  void shutdown_saves();
  void publish_status();
  void check(const Status& status, const char* what);
  // Steps since the request's cancel was requested (RequestStats::steps_after_cancel).
  int64_t steps_after_cancel(const Request& request) const;

  const ModelConfig config_;
  const RowNamespace ns_;
  const std::shared_ptr<RowStore> store_;
  const std::function<void(RequestId)> unregister_;
  const int32_t chunk_;
  const std::shared_ptr<const BatchPlanner> planner_;
  BackendInfo backend_info_;
  std::chrono::system_clock::time_point loaded_at_ = std::chrono::system_clock::now();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<Backend> backend_;  // guarded by mu_ (swapped on restart)
  std::deque<RequestPtr> queue_;      // waiting for a free sequence
  // Requests at the head of queue_ that the last admission left waiting for a pending
  // parent save (re-checked every loop; an idle worker polls for them).
  size_t resume_waiting_ = 0;
  // Sequences of requests an admission has taken off queue_ and not yet made active,
  // ended or put back (guarded by mu_): submit() counts them as queued, so a request
  // in admission (its cache lookup runs unlocked) does not free a place in the bound.
  size_t in_admission_ = 0;
  std::deque<Job*> jobs_;
  std::vector<LoadedAdapter> adapters_;  // guarded by mu_, in id order
  int32_t next_adapter_id_ = 0;          // guarded by mu_
  // Namespaces this worker has saved under (worker thread; read by stop() after the
  // join): the base model's and each adapter set's.
  std::vector<RowNamespace> saved_ns_;
  bool stopping_ = false;
  bool failed_ = false;
  int32_t restarts_ = 0;  // total
  int32_t consecutive_failures_ = 0;
  int32_t active_ = 0;
  ModelStatus status_ = ModelStatus::kIdle;
  std::atomic<uint64_t> steps_{0};  // written by the worker thread only
  // Measured prefill tokens/s (moving mean; 0 = none yet), written by the worker thread.
  std::atomic<double> prefill_rate_{0};
  double kv_bytes_per_token_ = 0;  // from the last kv_pack (worker thread)

  SessionTable sessions_;

  // Worker-thread state.
  std::unique_ptr<DraftModel> draft_;  // speculative draft model, or null
  StepCosts step_costs_{1};            // measured decode-pass costs (adaptive drafting)
  std::vector<Slot> slots_;
  uint64_t admit_counter_ = 0;
  std::thread thread_;
};

}  // namespace hearth::runtime
