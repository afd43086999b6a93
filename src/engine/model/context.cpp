// The context rule; see include/hearth/engine/context.h.
#include "hearth/engine/context.h"

#include <algorithm>
#include <cstdio>

namespace hearth {
namespace {

std::string kv_text(int32_t n_ctx, const ContextRequest& r, uint64_t bytes) {
  std::string per = format_bytes(r.bytes_per_position) + " per position";
  if (r.ring_bytes_per_position > 0) {
    per += " + " + format_bytes(r.ring_bytes_per_position) + " x " +
           std::to_string(std::min(n_ctx, r.ring_positions)) + " sliding-window positions";
  }
  return "context " + std::to_string(n_ctx) + " needs " + format_bytes(bytes) + " of KV (" +
         std::to_string(r.n_seq) + " sequences x " + per + ")";
}

}  // namespace

std::string format_bytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 4) {
    v /= 1024.0;
    ++unit;
  }
  char buf[32];
  if (unit == 0 || v == static_cast<double>(static_cast<uint64_t>(v))) {
    std::snprintf(buf, sizeof buf, "%llu %s", static_cast<unsigned long long>(v), kUnits[unit]);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f %s", v, kUnits[unit]);
  }
  return buf;
}

uint64_t context_kv_bytes(const ContextRequest& r, int32_t n_ctx) {
  const auto n = static_cast<uint64_t>(std::max(n_ctx, 0));
  const auto ring = static_cast<uint64_t>(std::max(std::min(n_ctx, r.ring_positions), 0));
  return (r.bytes_per_position * n + r.ring_bytes_per_position * ring) *
         static_cast<uint64_t>(std::max(r.n_seq, 0));
}

Result<ContextChoice> choose_context(const ContextRequest& r) {
  if (r.n_ctx_train < 1) return InvalidArgument("the model's context length must be positive");
  if (r.requested < 0) {
    return InvalidArgument("context must be >= 0, got " + std::to_string(r.requested));
  }
  if (r.bytes_per_position + r.ring_bytes_per_position == 0 || r.n_seq < 1 ||
      (r.ring_bytes_per_position > 0 && r.ring_positions < 1)) {
    return InvalidArgument("KV bytes per position, ring positions and sequences must be positive");
  }
  ContextChoice c;
  c.budget_bytes = r.budget_bytes > 0 ? r.budget_bytes : kDefaultKvBudgetBytes;
  const std::string budget_text =
      "kv_budget " + format_bytes(c.budget_bytes) + (r.budget_bytes > 0 ? "" : " (the default)");
  if (r.requested > 0) {
    c.n_ctx = r.requested;
    c.kv_bytes = context_kv_bytes(r, c.n_ctx);
    if (c.kv_bytes > c.budget_bytes) {
      return InvalidArgument(kv_text(c.n_ctx, r, c.kv_bytes) + ", more than " + budget_text +
                             ": lower context or raise kv_budget");
    }
    return c;
  }
  // The most positions whose KV fits: the ring grows with n_ctx up to ring_positions,
  // then stays; layers that keep every position grow throughout.
  const uint64_t per_seq = c.budget_bytes / static_cast<uint64_t>(r.n_seq);
  const uint64_t ring_full = r.ring_bytes_per_position * static_cast<uint64_t>(r.ring_positions);
  const uint64_t both = r.bytes_per_position + r.ring_bytes_per_position;
  uint64_t fits = per_seq / both;
  if (fits >= static_cast<uint64_t>(r.ring_positions) && per_seq >= ring_full) {
    fits =
        r.bytes_per_position > 0 ? (per_seq - ring_full) / r.bytes_per_position : uint64_t{1} << 31;
  }
  if (fits >= static_cast<uint64_t>(r.n_ctx_train)) {
    c.n_ctx = r.n_ctx_train;
  } else {
    c.capped = true;
    c.n_ctx = static_cast<int32_t>(fits / kContextGranule * kContextGranule);
    const int32_t floor = std::min(kContextGranule, r.n_ctx_train);
    if (c.n_ctx < floor) {
      return InvalidArgument(budget_text + " holds " + std::to_string(fits) +
                             " positions, fewer than " + std::to_string(floor) + " (" +
                             kv_text(floor, r, context_kv_bytes(r, floor)) +
                             "): raise kv_budget or set a context");
    }
  }
  c.kv_bytes = context_kv_bytes(r, c.n_ctx);
  return c;
}

}  // namespace hearth
