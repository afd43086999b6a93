// Enum names and the default ChatML template.
#include "hearth/runtime.h"

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
  }
  return "unknown";
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

}  // namespace hearth::runtime
