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

void Cache::Impl::remote_publish_delta(const CacheKey& key, const KvcBuildMeta& full_meta,
                                       const KvcDelta& local, std::span<const uint8_t> prefix,
                                       std::span<const uint8_t> delta_payload, uint32_t crc,
                                       std::span<const uint8_t> full_payload) {
  // The parent is touched first: present in Redis (every chunk) and its TTL / LRU
  // refreshed, so the chain is whole when the child lands.
  if (auto depth = remote->touch_row(local.parent_key);
      depth && *depth + 1 <= cfg.max_delta_depth) {
    if (*depth + 1 == local.depth) return remote_publish(key, prefix, delta_payload);
    // The parent's Redis row is at another depth than the local one (e.g. published
    // whole): the same delta bytes, the header's depth that of the Redis chain.
    KvcBuildMeta m = full_meta;
    m.delta = local;
    m.delta->depth = *depth + 1;
    auto p = kvc_build_prefix_with_crc(m, delta_payload.size(), crc);
    if (p.ok()) return remote_publish(key, *p, delta_payload);
  }
  // No parent in Redis (never published, evicted, expired) or the chain is full:
  // the whole row, a new root.
  auto whole = kvc_build_prefix(full_meta, full_payload);
  if (whole.ok()) remote_publish(key, *whole, full_payload);
}

std::optional<std::vector<uint8_t>> Cache::Impl::remote_assemble(const KvcInfo& info,
                                                                 std::vector<uint8_t> payload,
                                                                 bool* unavailable) {
  // The chain, child first: each link's parsed header and own payload.
  struct Link {
    KvcInfo info;
    std::vector<uint8_t> payload;
  };
  std::vector<Link> links;
  links.push_back(Link{info, std::move(payload)});
  std::optional<std::vector<uint8_t>> base;  // the deepest link's parent's whole payload
  while (links.back().info.delta) {
    if (links.size() > kMaxDeltaDepth) return std::nullopt;
    const KvcInfo& child = links.back().info;
    const KvcDelta& d = *child.delta;  // kvc_parse checked it: its key replays over our head
    const uint64_t parent_full = uint64_t(d.groups) * d.bytes_per_position * d.parent_tokens;
    // The parent from a local tier when this node holds it (verified by its lease).
    if ((base = local_full_payload(d.parent_key))) {
      if (base->size() != parent_full) return std::nullopt;
      break;
    }
    // Else from Redis: verified (CRC32C, key replay; a corrupt row is deleted there).
    // The fetch refreshes the link's LRU clock; touch_row its TTL.
    RemoteTier::Fetch outcome{};
    auto bytes = remote->fetch(d.parent_key, &outcome);
    if (!bytes) {
      if (outcome == RemoteTier::Fetch::kUnavailable) {
        *unavailable = true;
      } else {
        remote_index.erase(d.parent_key);
      }
      return std::nullopt;
    }
    if (remote->config().ttl_s > 0) (void)remote->touch_row(d.parent_key);
    auto pi = kvc_parse(*bytes, d.parent_key);
    if (!pi.ok()) return std::nullopt;
    const uint64_t pfull = pi->delta ? pi->delta->full_payload_bytes : pi->payload_length;
    if (pi->tokens.size() != d.parent_tokens || pi->ns.fingerprint != child.ns.fingerprint ||
        pfull != parent_full || (pi->delta ? pi->delta->depth : 0) + 1 != d.depth ||
        (pi->delta && (pi->delta->groups != d.groups ||
                       pi->delta->bytes_per_position != d.bytes_per_position))) {
      return std::nullopt;  // does not continue into the link above
    }
    std::vector<uint8_t> own(bytes->begin() + static_cast<std::ptrdiff_t>(pi->payload_offset),
                             bytes->end());
    links.push_back(Link{std::move(pi).value(), std::move(own)});
  }
  if (!base) {  // the chain ended at a full row from Redis
    base = std::move(links.back().payload);
    links.pop_back();
  }
  for (auto it = links.rbegin(); it != links.rend(); ++it) {
    base = kvc_join_delta(*base, it->payload, it->info.tokens.size(), *it->info.delta);
  }
  return base;
}

RowPtr Cache::Impl::remote_pull(const CacheKey& key) {
  RemoteTier::Fetch outcome{};
  std::string manifest;
  auto bytes = remote->fetch(key, &outcome, &manifest);  // verified (CRC32C + key replay)
  if (!bytes) {
    // Gone from Redis (evicted, expired, or corrupt and deleted): the index forgets
    // it, so prefix lookups stop pulling it. Unavailable keeps it: Redis may return.
    if (outcome == RemoteTier::Fetch::kMiss || outcome == RemoteTier::Fetch::kCorrupt)
      remote_index.erase(key);
    return nullptr;
  }
  auto info = kvc_parse(*bytes, key);
  if (!info.ok()) return nullptr;
  KvcBuildMeta m = kvc_build_meta_of(*info);
  std::vector<uint8_t> payload(bytes->begin() + static_cast<std::ptrdiff_t>(info->payload_offset),
                               bytes->end());
  bytes->clear();
  bytes->shrink_to_fit();
  if (info->delta) {
    // A delta row: its whole payload from its chain, or a miss (never a partial row).
    bool unavailable = false;
    auto whole = remote_assemble(*info, std::move(payload), &unavailable);
    if (!whole) {
      if (unavailable) return nullptr;  // Redis may return: the chain may be whole
      // Broken in Redis: this row can never be restored from there, so it goes the
      // way of a corrupt row (deleted if still the one read, forgotten), and the
      // next save of its key publishes a good one.
      remote->note_chain_broken();
      remote->delete_corrupt(key, manifest);
      remote_index.erase(key);
      return nullptr;
    }
    payload = std::move(*whole);
    m.kv_groups = info->delta->groups;  // the local tier may cut its own delta
    m.delta.reset();
  }
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
  out.emplace_back("remote_delta_publishes", c.delta_publishes);
  out.emplace_back("remote_chain_broken", c.chain_broken);
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
