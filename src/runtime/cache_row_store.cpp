#include "runtime/cache_row_store.h"

#include <cstring>

#include "hearth/log.h"
#include "hearth/sha256.h"

namespace hearth::runtime {
namespace {

constexpr size_t kMaxQueuedSaves = 64;

cache::Tier to_cache_tier(Tier t) {
  switch (t) {
    case Tier::kRam:
      return cache::Tier::kRam;
    case Tier::kRamFile:
      return cache::Tier::kRamFile;
    case Tier::kDisk:
      return cache::Tier::kDisk;
  }
  return cache::Tier::kRam;
}

Tier from_cache_tier(cache::Tier t) {
  switch (t) {
    case cache::Tier::kRam:
      return Tier::kRam;
    case cache::Tier::kRamFile:
      return Tier::kRamFile;
    case cache::Tier::kDisk:
      return Tier::kDisk;
  }
  return Tier::kRam;
}

cache::SaveReason to_cache_reason(SaveReason r) {
  switch (r) {
    case SaveReason::kCold:
      return cache::SaveReason::kCold;
    case SaveReason::kContinued:
      return cache::SaveReason::kContinued;
    case SaveReason::kFinish:
      return cache::SaveReason::kFinish;
    case SaveReason::kEvict:
      return cache::SaveReason::kEvict;
    case SaveReason::kShutdown:
      return cache::SaveReason::kShutdown;
  }
  return cache::SaveReason::kUnknown;
}

std::span<const cache::Token> as_cache_tokens(std::span<const TokenId> t) {
  static_assert(sizeof(TokenId) == sizeof(cache::Token));
  return {reinterpret_cast<const cache::Token*>(t.data()), t.size()};
}

}  // namespace

const char* save_reason_name(SaveReason reason) {
  return cache::save_reason_name(to_cache_reason(reason));
}

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
  cfg.scheduler = options.pressure;  // validated by Cache::open (an error at start)
  // The runtime gates saves per model; the cache's own policy only sets lookup defaults.
  cfg.policy.min_tokens = 1;
  cfg.policy.cold_min_tokens = 1;
  HEARTH_ASSIGN_OR_RETURN(auto c, cache::Cache::open(cfg));
  return std::make_shared<CacheRowStore>(
      std::move(c), std::max(1, options.writer_threads),
      std::chrono::milliseconds(options.testing_publish_delay_ms));
}

CacheRowStore::CacheRowStore(std::unique_ptr<cache::Cache> c, int32_t writer_threads,
                             std::chrono::milliseconds publish_delay)
    : cache_(std::move(c)), publish_delay_(publish_delay) {
  for (int32_t i = 0; i < writer_threads; ++i) writers_.emplace_back([this] { writer_loop(); });
}

CacheRowStore::~CacheRowStore() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : writers_) t.join();
}

RowHit CacheRowStore::load(const RowKey& key, size_t n_tokens) {
  auto lease = cache_->checkout(key);
  if (!lease.ok()) return {};
  auto row = std::make_shared<CacheRow>();
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
    if (pinned->lease.row().tier != cache::Tier::kRam) {
      // A file row is read (pread, CRC per chunk) straight into its destination: a
      // mapping would cost page faults and a second pass.
      row->payload_size = pinned->lease.payload_size();
      row->read_into = [p = pinned.get()](std::span<const std::span<uint8_t>> dst) {
        return p->lease.read_payload(dst);
      };
      row->pin = std::move(pinned);
      return RowHit{row, usable};
    }
    auto view = pinned->lease.view();  // CRC-verified
    if (!view.ok()) return {};
    row->view = *view;
    row->pin = std::move(pinned);
    return RowHit{row, usable};
  }
  row->kv.resize(lease->payload_size());
  if (!lease->read_payload(row->kv).ok()) return {};
  return RowHit{row, usable};
}

RowHit CacheRowStore::lookup_exact_or_wait(const RowKey& key, std::chrono::milliseconds wait,
                                           bool* waited) {
  *waited = false;
  {
    std::unique_lock lock(mu_);
    if (in_flight_.count(key)) {
      *waited = true;
      cv_.wait_for(lock, wait, [&] { return !in_flight_.count(key); });
    }
  }
  auto info = cache_->lookup_exact(
      key, *waited ? cache::Cache::HitKind::kResume : cache::Cache::HitKind::kExact);
  if (!info) return {};
  return load(key, 0);
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
  Job job;
  job.key = row_key(ns, row.tokens);
  job.tier = to_cache_tier(tier);
  job.meta.save_reason = to_cache_reason(reason);
  job.meta.quant_bits = meta.quant_bits;
  job.meta.ns = ns;
  job.meta.fingerprint_mode = meta.fingerprint_mode;
  auto ct = as_cache_tokens(row.tokens);
  job.meta.tokens.assign(ct.begin(), ct.end());
  job.meta.context_size = meta.context_size;
  if (!row.last_logits.empty()) {
    cache::KvcTlv tlv;
    tlv.tag = cache::kTagLogits;
    tlv.value.resize(row.last_logits.size() * sizeof(float));
    std::memcpy(tlv.value.data(), row.last_logits.data(), tlv.value.size());
    job.meta.extra_tlvs.push_back(std::move(tlv));
  }
  job.payload = std::move(row.kv);
  {
    std::lock_guard lock(mu_);
    fingerprints_[job.key] = ns.fingerprint;
  }
  if (sync) {
    HEARTH_RETURN_IF_ERROR(write(job));
    return job.key;
  }
  std::lock_guard lock(mu_);
  if (jobs_.size() >= kMaxQueuedSaves) {
    runtime_counters_["runtime_saves_dropped"]++;
    return ResourceExhausted("save queue full");
  }
  const RowKey key = job.key;
  PendingSave& pending = in_flight_[key];
  pending.count++;
  pending.tier = job.tier;
  pending.bytes = job.payload.size();
  pending.n_tokens = job.meta.tokens.size();
  in_flight_ns_.insert(ns.id());
  jobs_.push_back(std::move(job));
  cv_.notify_all();
  return key;
}

Status CacheRowStore::write(const Job& job) {
  auto r = cache_->save(job.tier, job.meta, job.payload);
  if (!r.ok() && r.status().code() != ErrorCode::kAlreadyExists) return r.status();
  return OkStatus();
}

void CacheRowStore::writer_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping and drained
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    if (publish_delay_.count() > 0) std::this_thread::sleep_for(publish_delay_);
    Status st = write(job);
    if (!st.ok()) log::warn(std::string("runtime: async save failed: ") + st.to_string());
    lock.lock();
    if (!st.ok()) runtime_counters_["runtime_save_failures"]++;
    if (auto it = in_flight_.find(job.key); --it->second.count == 0) in_flight_.erase(it);
    in_flight_ns_.erase(in_flight_ns_.find(job.meta.ns.id()));
    cv_.notify_all();
  }
}

bool CacheRowStore::tier_enabled(Tier tier) const {
  return cache_->tier_enabled(to_cache_tier(tier));
}

std::map<std::string, uint64_t> CacheRowStore::counters() const {
  std::map<std::string, uint64_t> out;
  for (auto& [name, v] : cache_->counters_snapshot()) out[name] = v;
  std::lock_guard lock(mu_);
  for (auto& [name, v] : runtime_counters_) out[name] = v;
  out["runtime_saves_queued"] = jobs_.size();
  return out;
}

void CacheRowStore::count(const std::string& name) {
  std::lock_guard lock(mu_);
  runtime_counters_["runtime_" + name]++;
}

bool CacheRowStore::flush(std::chrono::milliseconds deadline) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, deadline, [this] { return jobs_.empty() && in_flight_.empty(); });
}

std::vector<CacheRowSummary> CacheRowStore::rows() const {
  std::vector<CacheRowSummary> out;
  // Pending saves are read before the cache's rows: a save leaves in_flight_ only after it
  // published, so every save queued before this call shows up, as a cache row or below.
  std::map<RowKey, PendingSave> pending;
  {
    std::lock_guard lock(mu_);
    pending = in_flight_;
  }
  const std::vector<cache::RowInfo> dump = cache_->dump();
  std::lock_guard lock(mu_);
  for (const cache::RowInfo& r : dump) {
    pending.erase(r.key);
    CacheRowSummary s;
    s.key_hex = to_hex(r.key);
    s.tier = from_cache_tier(r.tier);
    s.size_bytes = r.size;
    s.n_tokens = r.n_tokens;
    s.hits = r.hits;
    s.last_used_ns = r.last_used_ns;
    s.in_flight = r.status == cache::RowStatus::kReserved;
    if (auto it = fingerprints_.find(r.key); it != fingerprints_.end())
      s.fingerprint_hex = to_hex(it->second);
    out.push_back(std::move(s));
  }
  for (const auto& [key, p] : pending) {  // queued, not yet reserved in the cache
    CacheRowSummary s;
    s.key_hex = to_hex(key);
    s.tier = from_cache_tier(p.tier);
    s.size_bytes = p.bytes;
    s.n_tokens = static_cast<uint32_t>(p.n_tokens);
    s.in_flight = true;
    if (auto it = fingerprints_.find(key); it != fingerprints_.end())
      s.fingerprint_hex = to_hex(it->second);
    out.push_back(std::move(s));
  }
  return out;
}

CacheEvictSummary CacheRowStore::evict_bytes(uint64_t target, std::span<const Tier> tiers) {
  std::vector<cache::Tier> ct;
  for (Tier t : tiers) ct.push_back(to_cache_tier(t));
  const cache::EvictResult r = cache_->evict_bytes(target, ct);
  return CacheEvictSummary{r.rows, r.bytes};
}

uint64_t CacheRowStore::gc() {
  return cache_->gc();
}

void CacheRowStore::flush_namespace(const RowNamespace& ns, std::chrono::milliseconds deadline) {
  const Digest256 id = ns.id();
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, deadline, [&] { return in_flight_ns_.count(id) == 0; });
}

}  // namespace hearth::runtime
