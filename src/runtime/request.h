// One admitted request as it travels from the caller's thread to a model's worker.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <vector>

#include "hearth/runtime.h"
#include "runtime/row_store.h"

namespace hearth::runtime {

struct Request {
  enum class Kind { kGenerate, kPrefillOnly };

  RequestId id = 0;
  Kind kind = Kind::kGenerate;
  std::vector<TokenId> prompt;
  RequestParams params;
  StreamSink sink;  // streaming requests
  // Blocking requests (complete, prefill_only) get their result here instead of the sink.
  std::optional<std::promise<Result<CompletionResult>>> promise;

  // Cache lookup done on the caller's thread (it may wait for an in-flight parent save).
  RowPtr restore_row;
  size_t restore_len = 0;  // leading tokens of restore_row that match the prompt
  CacheHitKind restore_kind = CacheHitKind::kCold;

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
