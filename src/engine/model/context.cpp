// The context rule; see include/hearth/engine/context.h.
#include "hearth/engine/context.h"

#include <algorithm>
#include <cstdio>

namespace hearth {
namespace {

std::string kv_text(int32_t n_ctx, const ContextRequest& r, uint64_t bytes) {
  return "context " + std::to_string(n_ctx) + " needs " + format_bytes(bytes) + " of KV (" +
         std::to_string(r.n_seq) + " sequences x " + format_bytes(r.bytes_per_position) +
         " per position)";
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

Result<ContextChoice> choose_context(const ContextRequest& r) {
  if (r.n_ctx_train < 1) return InvalidArgument("the model's context length must be positive");
  if (r.requested < 0) {
    return InvalidArgument("context must be >= 0, got " + std::to_string(r.requested));
  }
  if (r.bytes_per_position == 0 || r.n_seq < 1) {
    return InvalidArgument("KV bytes per position and sequences must be positive");
  }
  ContextChoice c;
  c.budget_bytes = r.budget_bytes > 0 ? r.budget_bytes : kDefaultKvBudgetBytes;
  const std::string budget_text =
      "kv_budget " + format_bytes(c.budget_bytes) + (r.budget_bytes > 0 ? "" : " (the default)");
  const uint64_t per_position = r.bytes_per_position * static_cast<uint64_t>(r.n_seq);
  if (r.requested > 0) {
    c.n_ctx = r.requested;
    c.kv_bytes = per_position * static_cast<uint64_t>(c.n_ctx);
    if (c.kv_bytes > c.budget_bytes) {
      return InvalidArgument(kv_text(c.n_ctx, r, c.kv_bytes) + ", more than " + budget_text +
                             ": lower context or raise kv_budget");
    }
    return c;
  }
  const uint64_t fits = c.budget_bytes / per_position;
  if (fits >= static_cast<uint64_t>(r.n_ctx_train)) {
    c.n_ctx = r.n_ctx_train;
  } else {
    c.capped = true;
    c.n_ctx = static_cast<int32_t>(fits / kContextGranule * kContextGranule);
    const int32_t floor = std::min(kContextGranule, r.n_ctx_train);
    if (c.n_ctx < floor) {
      return InvalidArgument(budget_text + " holds " + std::to_string(fits) +
                             " positions, fewer than " + std::to_string(floor) + " (" +
                             kv_text(floor, r, per_position * floor) +
                             "): raise kv_budget or set a context");
    }
  }
  c.kv_bytes = per_position * static_cast<uint64_t>(c.n_ctx);
  return c;
}

}  // namespace hearth
