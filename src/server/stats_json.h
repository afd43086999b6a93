// GET /hearth/stats: one JSON snapshot of what the dashboard shows (live requests and
// slots, per-model throughput, cache tiers, hits by kind, saves and evictions). Every
// number is read from the same place /metrics reads it (Metrics, the service's
// counters and tier usage), never kept twice.
#pragma once

#include <nlohmann/json.hpp>

#include "server/generation.h"

namespace hearth::server {

nlohmann::json server_stats_json(ServerContext& ctx);

}  // namespace hearth::server
