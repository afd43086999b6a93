// Save policy: when cold / continued / finish saves fire and which prefix a cold
// save persists. Pure functions of their inputs. Evict and shutdown saves are
// unconditional and never consult the policy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "hearth/cache/types.h"
#include "hearth/status.h"

namespace hearth::cache {

struct PolicyConfig {
  uint64_t min_tokens = 512;             // no save below this many tokens
  uint64_t cold_min_tokens = 512;        // no cold save for shorter prefills
  uint64_t cold_max_tokens = 30000;      // no cold save for longer prefills
  uint64_t continued_interval = 2048;    // continued save every N new tokens
  uint64_t boundary_trim_tokens = 32;    // drop the last N tokens before saving
  uint64_t boundary_align_tokens = 2048; // round down to a multiple; walk stride
  uint64_t session_resume_wait_ms = 500; // parent_key wait for an in-flight save
};

// Error (invalid_argument naming the field) unless min_tokens <= cold_min_tokens
// <= cold_max_tokens, continued_interval > 0 and boundary_align_tokens > 0.
Status validate_policy(const PolicyConfig& cfg);

// Number of tokens to keep: floor((len - trim) / align) * align, or nullopt
// ("too short") when len - trim < align.
std::optional<size_t> trim_boundary(size_t len, uint64_t trim, uint64_t align);

// Cold save: nullopt when no save fires (len outside [cold_min, cold_max] or too
// short after trimming); else the prefix length to save. The rest of the prompt
// (tokens[n..]) still needs prefilling after the save point.
std::optional<size_t> cold_save_split(size_t len, const PolicyConfig& cfg);

// live - last_saved_at >= continued_interval && live >= min_tokens.
bool should_continued_save(uint64_t live_count, uint64_t last_saved_at, const PolicyConfig& cfg);
// live >= min_tokens.
bool should_finish_save(uint64_t live_count, const PolicyConfig& cfg);

}  // namespace hearth::cache
