#include "hearth/cache/policy.h"

#include <string>

namespace hearth::cache {

Status validate_policy(const PolicyConfig& c) {
  if (c.cold_min_tokens < c.min_tokens) {
    return InvalidArgument("policy: cold_min_tokens (" + std::to_string(c.cold_min_tokens) +
                           ") < min_tokens (" + std::to_string(c.min_tokens) + ")");
  }
  if (c.cold_max_tokens < c.cold_min_tokens) {
    return InvalidArgument("policy: cold_max_tokens (" + std::to_string(c.cold_max_tokens) +
                           ") < cold_min_tokens (" + std::to_string(c.cold_min_tokens) + ")");
  }
  if (c.continued_interval == 0) return InvalidArgument("policy: continued_interval must be > 0");
  if (c.boundary_align_tokens == 0) {
    return InvalidArgument("policy: boundary_align_tokens must be > 0");
  }
  return OkStatus();
}

std::optional<size_t> trim_boundary(size_t len, uint64_t trim, uint64_t align) {
  if (align == 0 || len < trim || len - trim < align) return std::nullopt;
  return static_cast<size_t>(((len - trim) / align) * align);
}

std::optional<size_t> cold_save_split(size_t len, const PolicyConfig& cfg) {
  if (len < cfg.cold_min_tokens || len > cfg.cold_max_tokens) return std::nullopt;
  return trim_boundary(len, cfg.boundary_trim_tokens, cfg.boundary_align_tokens);
}

bool should_continued_save(uint64_t live, uint64_t last_saved_at, const PolicyConfig& cfg) {
  return live >= last_saved_at && live - last_saved_at >= cfg.continued_interval &&
         live >= cfg.min_tokens;
}

bool should_finish_save(uint64_t live, const PolicyConfig& cfg) { return live >= cfg.min_tokens; }

}  // namespace hearth::cache
