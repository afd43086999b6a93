// Cache::Impl's remote-tier glue: start, publish after a local save, pull into the
// ram tier on a local miss, counters. See remote_tier.h for the Redis layout.
#include "cache/cache_impl.h"

namespace hearth::cache {

namespace {
thread_local bool t_pulling = false;
}  // namespace

bool remote_pull_in_progress() {
  return t_pulling;
}

Status Cache::Impl::start_remote() {
  if (cfg.remote.url.empty()) return OkStatus();
  auto t = RemoteTier::open(cfg.remote);  // a down Redis is not an error: degraded
  if (!t.ok()) return t.status();
  remote = std::move(*t);
  remote_sync = std::make_unique<RemoteSync>(*remote, remote_index, cfg.remote.index_poll_ms);
  return OkStatus();
}

void Cache::Impl::remote_publish(const CacheKey& key, std::span<const uint8_t> prefix,
                                 std::span<const uint8_t> payload) {
  auto r = remote->publish(key, prefix, payload);
  if (!r.ok()) return;  // counted by the tier (errors / skipped); local row stands
  auto info = kvc_parse_meta(prefix, prefix.size() + payload.size());
  if (info.ok()) remote_index.insert(RemoteRowMeta{key, prefix.size() + payload.size(), *info});
}

RowPtr Cache::Impl::remote_pull(const CacheKey& key) {
  RemoteTier::Fetch outcome{};
  auto bytes = remote->fetch(key, &outcome);  // verified (CRC32C + key replay) or nullopt
  if (!bytes) {
    // Gone from Redis (evicted, expired, or corrupt and deleted): the index forgets
    // it, so prefix lookups stop pulling it. Unavailable keeps it: Redis may return.
    if (outcome == RemoteTier::Fetch::kMiss || outcome == RemoteTier::Fetch::kCorrupt)
      remote_index.erase(key);
    return nullptr;
  }
  auto info = kvc_parse(*bytes, key);
  if (!info.ok()) return nullptr;
  // A delta row from Redis (not one hearth publishes) keeps its link, which do_save
  // refuses: a miss, never a chain this node cannot walk.
  KvcBuildMeta m = kvc_build_meta_of(*info);
  std::vector<uint8_t> payload(bytes->begin() + static_cast<std::ptrdiff_t>(info->payload_offset),
                               bytes->end());
  bytes->clear();
  bytes->shrink_to_fit();
  t_pulling = true;
  auto saved = do_save(Tier::kRam, m, payload, &payload);
  t_pulling = false;
  (void)saved;  // kAlreadyExists: a concurrent pull won; either way look it up
  return meta.find(key);
}

void Cache::Impl::remote_counters(std::vector<std::pair<std::string, uint64_t>>& out) const {
  if (!remote) return;
  const RemoteCounters c = remote->counters();
  out.emplace_back("remote_publishes", c.publishes);
  out.emplace_back("remote_publish_lost", c.publish_lost);
  out.emplace_back("remote_bytes_stored", c.bytes_stored);
  out.emplace_back("remote_hits", c.hits);
  out.emplace_back("remote_misses", c.misses);
  out.emplace_back("remote_corrupt", c.corrupt);
  out.emplace_back("remote_corrupt_deleted", c.corrupt_deleted);
  out.emplace_back("remote_errors", c.errors);
  out.emplace_back("remote_skipped", c.skipped);
  out.emplace_back("remote_recoveries", c.recoveries);
  if (remote_sync) out.emplace_back("remote_index_learned", remote_sync->learned());
}

}  // namespace hearth::cache
