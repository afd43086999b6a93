// Names: the runtime enums' names and the save-policy settings' names.
#include <climits>
#include <string>
#include <utility>

#include "hearth/runtime/runtime.h"

namespace hearth::runtime {

const char* model_status_name(ModelStatus status) {
  switch (status) {
    case ModelStatus::kIdle:
      return "idle";
    case ModelStatus::kPrefilling:
      return "prefilling";
    case ModelStatus::kGenerating:
      return "generating";
    case ModelStatus::kRestarting:
      return "restarting";
    case ModelStatus::kFailed:
      return "failed";
  }
  return "unknown";
}

const char* cache_hit_kind_name(CacheHitKind kind) {
  switch (kind) {
    case CacheHitKind::kCold:
      return "cold";
    case CacheHitKind::kExact:
      return "exact";
    case CacheHitKind::kResume:
      return "resume";
    case CacheHitKind::kPartial:
      return "partial";
    case CacheHitKind::kSticky:
      return "sticky";
    case CacheHitKind::kContinuation:
      return "continuation";
  }
  return "unknown";
}

const char* hit_counter_name(CacheHitKind kind) {
  switch (kind) {
    case CacheHitKind::kExact:
      return "hits_exact";
    case CacheHitKind::kResume:
      return "hits_resume";
    case CacheHitKind::kPartial:
      return "hits_longest_prefix";
    case CacheHitKind::kSticky:
      return "hits_sticky";
    case CacheHitKind::kContinuation:
      return "hits_continuation";
    case CacheHitKind::kCold:
      return "misses";
  }
  return "misses";
}

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

Status set_save_policy_field(ModelSavePolicy& policy, std::string_view key, int64_t value) {
  static constexpr std::pair<std::string_view, int32_t ModelSavePolicy::*> kFields[] = {
      {"min_tokens", &ModelSavePolicy::min_tokens},
      {"cold_min_tokens", &ModelSavePolicy::cold_min_tokens},
      {"cold_max_tokens", &ModelSavePolicy::cold_max_tokens},
      {"continued_interval", &ModelSavePolicy::continued_interval},
      {"boundary_trim_tokens", &ModelSavePolicy::boundary_trim_tokens},
      {"boundary_align_tokens", &ModelSavePolicy::boundary_align_tokens},
      {"session_resume_wait_ms", &ModelSavePolicy::session_resume_wait_ms},
      {"evict_save_timeout_ms", &ModelSavePolicy::evict_save_timeout_ms},
      {"prefill_tokens_per_s", &ModelSavePolicy::prefill_tokens_per_s},
      {"write_bytes_per_s", &ModelSavePolicy::write_bytes_per_s},
  };
  for (const auto& [name, field] : kFields) {
    if (name != key) continue;
    // min_tokens = -1 (ModelSavePolicy::kCostRule) goes back to the cost rule.
    const int64_t lowest = key == "min_tokens" ? ModelSavePolicy::kCostRule : 0;
    if (value < lowest || value > INT32_MAX) {
      return InvalidArgument("policy." + std::string(key) + " must be in " +
                             std::to_string(lowest) + ".." + std::to_string(INT32_MAX) + ", got " +
                             std::to_string(value));
    }
    policy.*field = static_cast<int32_t>(value);
    return OkStatus();
  }
  return InvalidArgument("policy." + std::string(key) + " is not a save-policy setting");
}

}  // namespace hearth::runtime
