// One request as it travels from the caller's thread to a model's worker.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <vector>

#include "hearth/runtime/runtime.h"
#include "runtime/row_store.h"

namespace hearth::runtime {

struct Request {
  enum class Kind { kGenerate, kPrefillOnly };

  RequestId id = 0;
  Kind kind = Kind::kGenerate;
  std::vector<TokenId> prompt;
  RequestParams params;
  // LoRA adapters applied (resolved from params.lora or the model's scales at submit:
  // non-zero scales, in the canonical (file SHA-256, scale) order the fingerprint uses)
  // and the cache namespace they give (the base model's when none).
  std::vector<AdapterUse> adapters;
  RowNamespace ns;
  StreamSink sink;  // streaming requests
  // Runtime::infer_n: the other choices of this prompt. They are queued and admitted with
  // this request (which prefills) and fork from its KV when its prefill ends.
  std::vector<std::shared_ptr<Request>> forks;
  // Blocking requests (complete, prefill_only) get their result here instead of the sink.
  std::optional<std::promise<Result<CompletionResult>>> promise;

  // Resume wait (worker thread only). The cache lookup happens when the worker admits the
  // request, so a queued request pins no row and finds rows saved while it waited. When
  // its parent_key's save is still pending at that moment, the request stays queued until
  // the row publishes or resume_deadline passes (ModelWorker::lookup).
  std::optional<std::chrono::steady_clock::time_point> resume_deadline;
  bool resume_waited = false;

  std::atomic<bool> cancelled{false};
  // The model's step count when the cancel was requested (kNoStep: not recorded). The
  // flag is set first and the count read after, so a canceller that is preempted in
  // between can only under-report, never blame the worker for its own delay.
  static constexpr uint64_t kNoStep = UINT64_MAX;
  std::atomic<uint64_t> cancel_step{kNoStep};
  void request_cancel(const std::atomic<uint64_t>& steps) {
    cancelled.store(true);
    uint64_t expected = kNoStep;
    cancel_step.compare_exchange_strong(expected, steps.load());
  }
  std::chrono::steady_clock::time_point enqueued_at = std::chrono::steady_clock::now();
};

using RequestPtr = std::shared_ptr<Request>;

}  // namespace hearth::runtime
