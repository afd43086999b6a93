#include "runtime/cache_row_store.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/buffer_pool.h"
#include "hearth/sha256.h"

namespace hearth::runtime {
namespace {

// Async saves waiting per tier before save_async drops (and counts) one.
constexpr uint32_t kMaxQueuedSaves = 64;

std::span<const cache::Token> as_cache_tokens(std::span<const TokenId> t) {
  static_assert(sizeof(TokenId) == sizeof(cache::Token));
  return {reinterpret_cast<const cache::Token*>(t.data()), t.size()};
}

}  // namespace

RowKey row_key(const RowNamespace& ns, std::span<const TokenId> tokens) {
  return cache::make_key(ns, as_cache_tokens(tokens));
}

Result<std::shared_ptr<CacheRowStore>> CacheRowStore::open(const CacheOptions& options) {
  cache::CacheConfig cfg;
  cfg.ram_quota_bytes = options.ram_bytes;
  cfg.ram_file_dir = options.ram_file_dir;
  cfg.ram_file_quota_bytes = options.ram_file_bytes;
  cfg.disk_dir = options.disk_dir;
  cfg.disk_quota_bytes = options.disk_bytes;
  cfg.writer_threads = static_cast<uint32_t>(std::max(1, options.writer_threads));
  cfg.writer_queue_depth = kMaxQueuedSaves;
  cfg.scheduler = options.pressure;  // validated by Cache::open (an error at start)
  cfg.io = options.io;
  cfg.max_delta_depth = options.max_delta_depth;
  cfg.remote = options.remote;
  // The runtime gates saves per model; the cache's own policy only sets lookup defaults.
  cfg.policy.min_tokens = 1;
  cfg.policy.cold_min_tokens = 1;
  HEARTH_ASSIGN_OR_RETURN(auto c, cache::Cache::open(cfg));
  return std::make_shared<CacheRowStore>(std::move(c));
}

CacheRowStore::CacheRowStore(std::unique_ptr<cache::Cache> c) : cache_(std::move(c)) {}

RowHit CacheRowStore::load(const RowKey& key, size_t n_tokens) {
  const auto t0 = std::chrono::steady_clock::now();
  auto lease = cache_->checkout(key);
  if (!lease.ok()) return {};
  auto row = std::make_shared<CacheRow>();
  row->tier = lease->row().tier;
  const auto loaded = [&] {
    row->load_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  const cache::KvcInfo& info = lease->info();
  row->tokens.assign(info.tokens.begin(), info.tokens.end());
  if (const cache::KvcTlv* tlv = info.find_tlv(cache::kTagLogits)) {
    row->last_logits.resize(tlv->value.size() / sizeof(float));
    std::memcpy(row->last_logits.data(), tlv->value.data(), row->last_logits.size() * 4);
  }
  const size_t usable = n_tokens == 0 ? row->tokens.size() : n_tokens;
  if (auto owner = weak_from_this().lock()) {
    // Keep the lease (pinning the row) and this store (owning the cache) alive while
    // the row is in use; members are destroyed in reverse order, the lease first.
    struct Pinned {
      std::shared_ptr<const CacheRowStore> owner;
      cache::Lease lease;
    };
    auto pinned = std::make_shared<Pinned>(Pinned{std::move(owner), std::move(*lease)});
    // A file row's payload is read straight into its destination (a backend's in-place
    // KV import spans) by large reads (two threads for a large row, O_DIRECT for a cold
    // disk row), each chunk CRC-checked while still in cache. One pass, no staging
    // buffer. A row resident in memory, a RAM slab or a ram_file row's kept mapping
    // (Lease::resident), is unpacked from there (`view`: the CRC32C checked on the
    // slab's first use, on each lease of a mapping), K turned into tiles on the way. A
    // delta row exists whole nowhere: its chain's links are scattered straight into
    // the destination.
    row->payload_size = pinned->lease.payload_size();
    row->read_into = [p = pinned.get()](std::span<const std::span<uint8_t>> dst) {
      return p->lease.read_payload(dst);
    };
    if (pinned->lease.resident()) {
      row->view = [p = pinned.get()] { return p->lease.view(); };
    }
    row->pin = std::move(pinned);
    loaded();
    return RowHit{row, usable};
  }
  row->kv.resize(lease->payload_size());
  if (!lease->read_payload(row->kv).ok()) return {};
  loaded();
  return RowHit{row, usable};
}

RowHit CacheRowStore::lookup_exact(const RowKey& key, bool resume) {
  auto info = cache_->lookup_exact(
      key, resume ? cache::Cache::HitKind::kResume : cache::Cache::HitKind::kExact);
  if (!info) return {};
  return load(key, 0);
}

bool CacheRowStore::save_pending(const RowKey& key) const {
  return cache_->save_pending(key);
}

RowHit CacheRowStore::lookup_longest_prefix(const RowNamespace& ns, std::span<const TokenId> tokens,
                                            size_t min_tokens, size_t stride) {
  auto t = as_cache_tokens(tokens);
  if (auto hit = cache_->lookup_radix(ns, t, min_tokens)) {
    if (RowHit h = load(hit->row.key, hit->n_tokens)) return h;
  }
  if (auto hit = cache_->lookup_longest_prefix(ns, t, stride, std::max<size_t>(min_tokens, 1)))
    return load(hit->row.key, hit->n_tokens);
  return {};
}

Result<RowKey> CacheRowStore::save(const RowNamespace& ns, const RowMeta& meta, CacheRow row,
                                   Tier tier, SaveReason reason, bool sync) {
  cache::KvcBuildMeta m;
  m.save_reason = reason;
  m.quant_bits = meta.quant_bits;
  m.ns = ns;
  m.fingerprint_mode = meta.fingerprint_mode;
  auto ct = as_cache_tokens(row.tokens);
  m.tokens.assign(ct.begin(), ct.end());
  m.context_size = meta.context_size;
  m.kv_groups = static_cast<uint32_t>(std::max(0, meta.kv_groups));
  if (!row.last_logits.empty()) {
    cache::KvcTlv tlv;
    tlv.tag = cache::kTagLogits;
    tlv.value.resize(row.last_logits.size() * sizeof(float));
    std::memcpy(tlv.value.data(), row.last_logits.data(), tlv.value.size());
    m.extra_tlvs.push_back(std::move(tlv));
  }
  const RowKey key = row_key(ns, row.tokens);
  if (sync) {
    auto r = cache_->save(tier, m, row.kv);  // copies: the buffer can go back at once
    payload_buffers().give(std::move(row.kv));
    if (!r.ok() && r.status().code() != ErrorCode::kAlreadyExists) return r.status();
    return key;
  }
  if (!cache_->save_async(tier, std::move(m), std::move(row.kv)))
    return ResourceExhausted(std::string("the ") + tier_name(tier) +
                             " tier's save queue is full (counted as saves_dropped)");
  return key;
}

bool CacheRowStore::tier_enabled(Tier tier) const {
  return cache_->tier_enabled(tier);
}

std::map<std::string, uint64_t> CacheRowStore::counters() const {
  std::map<std::string, uint64_t> out;
  for (auto& [name, v] : cache_->counters_snapshot()) out[name] = v;
  std::lock_guard lock(mu_);
  for (auto& [name, v] : runtime_counters_) out[name] = v;
  return out;
}

void CacheRowStore::count(const std::string& name, uint64_t by) {
  std::lock_guard lock(mu_);
  runtime_counters_["runtime_" + name] += by;
}

bool CacheRowStore::flush(std::chrono::milliseconds deadline) {
  return cache_->wait_idle_for(static_cast<uint64_t>(std::max<int64_t>(0, deadline.count())));
}

std::vector<CacheRowSummary> CacheRowStore::rows() const {
  std::vector<CacheRowSummary> out;
  for (const cache::RowInfo& r : cache_->dump()) {  // queued saves included, in flight
    CacheRowSummary s;
    s.key_hex = to_hex(r.key);
    s.tier = r.tier;
    s.size_bytes = r.size;
    s.n_tokens = r.n_tokens;
    s.hits = r.hits;
    s.last_used_ns = r.last_used_ns;
    s.in_flight = r.status == cache::RowStatus::kReserved;
    s.refcount = r.refcount;
    s.delta_depth = r.delta_depth;
    if (r.fingerprint != Digest256{}) s.fingerprint_hex = to_hex(r.fingerprint);
    out.push_back(std::move(s));
  }
  return out;
}

CacheEvictSummary CacheRowStore::evict_bytes(uint64_t target, std::span<const Tier> tiers) {
  std::vector<cache::Tier> ct(tiers.begin(), tiers.end());
  const cache::EvictResult r = cache_->evict_bytes(target, ct);
  return CacheEvictSummary{r.rows, r.bytes};
}

uint64_t CacheRowStore::gc() {
  return cache_->gc();
}

bool CacheRowStore::flush_namespace(const RowNamespace& ns, std::chrono::milliseconds deadline) {
  return cache_->wait_namespace_idle(ns,
                                     static_cast<uint64_t>(std::max<int64_t>(0, deadline.count())));
}

}  // namespace hearth::runtime
