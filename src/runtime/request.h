// One admitted request as it travels from the caller's thread to a model's worker.
#pragma once

#include <atomic>
#include <chrono>
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
  std::chrono::steady_clock::time_point enqueued_at = std::chrono::steady_clock::now();
};

using RequestPtr = std::shared_ptr<Request>;

}  // namespace hearth::runtime
