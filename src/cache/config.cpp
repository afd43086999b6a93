#include <unistd.h>

#include <string>

#include "hearth/cache/config.h"

namespace hearth::cache {

Status validate_cache_config(const CacheConfig& c) {
  HEARTH_RETURN_IF_ERROR(validate_policy(c.policy));
  HEARTH_RETURN_IF_ERROR(validate_scheduler_config(c.scheduler));
  HEARTH_RETURN_IF_ERROR(validate_remote_tier_config(c.remote));
  if (c.writer_threads == 0) return InvalidArgument("cache: writer_threads must be > 0");
  if (c.writer_queue_depth == 0) return InvalidArgument("cache: writer_queue_depth must be > 0");
  if (c.max_delta_depth > kMaxDeltaDepth) {
    return InvalidArgument("cache: max_delta_depth " + std::to_string(c.max_delta_depth) +
                           " is above " + std::to_string(kMaxDeltaDepth));
  }
  if (c.reservation_ttl_ms == 0) return InvalidArgument("cache: reservation_ttl_ms must be > 0");
  if (!c.ram_file_dir.empty() && c.ram_file_dir == c.disk_dir) {
    return InvalidArgument("cache: ram_file_dir and disk_dir must differ (" + c.disk_dir + ")");
  }
  return OkStatus();
}

std::string default_ram_file_dir() {
  return "/dev/shm/hearth-" + std::to_string(static_cast<unsigned>(::getuid()));
}

}  // namespace hearth::cache
