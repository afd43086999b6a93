// RowStore over hearth::cache::Cache: a thin adapter. Async saves go through
// Cache::save_async and the cache's per-tier writers, so a stuck disk never holds up a
// RAM-tier model, a key is in flight in the cache itself from the moment its save is
// queued (resume lookups see it), and drops are the cache's saves_dropped. Rows carry the
// last-position logits as TLV 0x0A.
#pragma once

#include <mutex>

#include "hearth/cache/cache.h"
#include "runtime/row_store.h"

namespace hearth::runtime {

class CacheRowStore : public RowStore, public std::enable_shared_from_this<CacheRowStore> {
 public:
  static Result<std::shared_ptr<CacheRowStore>> open(const CacheOptions& options);
  explicit CacheRowStore(std::unique_ptr<cache::Cache> cache);

  RowHit lookup_exact(const RowKey& key, bool resume) override;
  bool save_pending(const RowKey& key) const override;
  bool drop_duplicate_save(const RowKey& key) override { return cache_->drop_duplicate_save(key); }
  RowHit lookup_longest_prefix(const RowNamespace& ns, std::span<const TokenId> tokens,
                               size_t min_tokens, size_t stride) override;
  Result<RowKey> save(const RowNamespace& ns, const RowMeta& meta, CacheRow row, Tier tier,
                      SaveReason reason, bool sync) override;
  bool tier_enabled(Tier tier) const override;
  std::map<std::string, uint64_t> counters() const override;
  void count(const std::string& name, uint64_t by = 1) override;
  bool flush(std::chrono::milliseconds deadline) override;
  std::vector<CacheRowSummary> rows() const override;
  CacheEvictSummary evict_bytes(uint64_t target, std::span<const Tier> tiers) override;
  uint64_t gc() override;
  bool flush_namespace(const RowNamespace& ns, std::chrono::milliseconds deadline) override;
  double write_bytes_per_s(Tier tier) const override {
    return cache_->tier_write_bytes_per_s(tier);
  }
  void pressure_enable(bool on) override { cache_->scheduler_enable(on); }
  cache::ForceCheckResult pressure_force_check() override {
    return cache_->scheduler_force_check();
  }
  cache::SchedulerStatus pressure_status() const override { return cache_->scheduler_status(); }

  cache::Cache& cache() { return *cache_; }

 private:
  RowHit load(const RowKey& key, size_t n_tokens);

  std::unique_ptr<cache::Cache> cache_;
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> runtime_counters_;  // guarded by mu_
};

}  // namespace hearth::runtime
