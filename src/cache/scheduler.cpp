// The memory-pressure scheduler's decision step and its run-time controls.
#include <chrono>

#include "cache/cache_impl.h"

namespace hearth::cache {
namespace {
int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

ForceCheckResult Cache::Impl::force_check() {
  SchedulerConfig c;
  {
    std::lock_guard<std::mutex> lock(sched_mu);
    c = sched;
  }
  ForceCheckResult out;
  if (!c.enabled) {
    out.outcome = ForceCheckResult::Outcome::kSkippedDisabled;
    return out;
  }
  PressureReading r = sample_pressure(c.source, c.callback);
  {
    std::lock_guard<std::mutex> lock(sched_mu);
    sched_state.last_used = r.used;
    sched_state.last_total = r.total;
    sched_state.sampled_at_ms = unix_ms();
  }
  double ratio = r.total ? static_cast<double>(r.used) / static_cast<double>(r.total) : 0.0;
  if (ratio < c.high_watermark) {
    out.outcome = ForceCheckResult::Outcome::kSkippedBelowWatermark;
    return out;
  }
  // Free enough to bring used/total down to the low watermark.
  double excess = static_cast<double>(r.used) - c.low_watermark * static_cast<double>(r.total);
  uint64_t target = excess > 0 ? static_cast<uint64_t>(excess) : 0;
  if (target < c.min_evict_bytes) target = c.min_evict_bytes;
  uint32_t mask = 0;
  for (Tier t : c.evict_tiers) mask |= 1u << static_cast<int>(t);
  EvictResult e = evict(target, mask);
  if (e.rows == 0) {
    out.outcome = ForceCheckResult::Outcome::kSkippedNothingToEvict;
    return out;
  }
  {
    std::lock_guard<std::mutex> lock(sched_mu);
    sched_state.last_evicted_bytes = e.bytes;
    sched_state.last_evicted_at_ms = unix_ms();
  }
  out.outcome = ForceCheckResult::Outcome::kEvicted;
  out.rows = e.rows;
  out.bytes = e.bytes;
  return out;
}

Status Cache::scheduler_configure(const SchedulerConfig& cfg) {
  HEARTH_RETURN_IF_ERROR(validate_scheduler_config(cfg));
  {
    std::lock_guard<std::mutex> lock(impl_->sched_mu);
    impl_->sched = cfg;
  }
  impl_->bg_cv.notify_all();
  return OkStatus();
}

void Cache::scheduler_enable(bool on) {
  {
    std::lock_guard<std::mutex> lock(impl_->sched_mu);
    impl_->sched.enabled = on;
  }
  impl_->bg_cv.notify_all();
}

ForceCheckResult Cache::scheduler_force_check() { return impl_->force_check(); }

SchedulerStatus Cache::scheduler_status() const {
  std::lock_guard<std::mutex> lock(impl_->sched_mu);
  SchedulerStatus s = impl_->sched_state;
  const SchedulerConfig& c = impl_->sched;
  s.enabled = c.enabled;
  s.source = c.source;
  s.interval_ms = c.interval_ms;
  s.high_watermark = c.high_watermark;
  s.low_watermark = c.low_watermark;
  s.min_evict_bytes = c.min_evict_bytes;
  s.evict_tiers = c.evict_tiers;
  return s;
}

}  // namespace hearth::cache
