// RowStore over hearth::cache::Cache. Async saves are queued on this store's own writer
// threads, which call the cache's synchronous save: that way a key is known to be in flight
// from the moment the save is queued, so a follow-up request with that parent_key waits for
// it (resume) instead of missing. Rows carry the last-position logits as TLV 0x0A.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "hearth/cache.h"
#include "runtime/row_store.h"

namespace hearth::runtime {

class CacheRowStore : public RowStore, public std::enable_shared_from_this<CacheRowStore> {
 public:
  static Result<std::shared_ptr<CacheRowStore>> open(const CacheOptions& options);
  CacheRowStore(std::unique_ptr<cache::Cache> cache, int32_t writer_threads,
                std::chrono::milliseconds publish_delay);
  ~CacheRowStore() override;

  RowHit lookup_exact_or_wait(const RowKey& key, std::chrono::milliseconds wait,
                              bool* waited) override;
  RowHit lookup_longest_prefix(const RowNamespace& ns, std::span<const TokenId> tokens,
                               size_t min_tokens, size_t stride) override;
  Result<RowKey> save(const RowNamespace& ns, const RowMeta& meta, CacheRow row, Tier tier,
                      SaveReason reason, bool sync) override;
  bool tier_enabled(Tier tier) const override;
  std::map<std::string, uint64_t> counters() const override;
  void count(const std::string& name) override;
  bool flush(std::chrono::milliseconds deadline) override;
  std::vector<CacheRowSummary> rows() const override;
  CacheEvictSummary evict_bytes(uint64_t target, std::span<const Tier> tiers) override;
  uint64_t gc() override;
  void flush_namespace(const RowNamespace& ns, std::chrono::milliseconds deadline) override;

  cache::Cache& cache() { return *cache_; }

 private:
  struct Job {
    RowKey key;
    cache::Tier tier;
    cache::KvcBuildMeta meta;
    std::vector<uint8_t> payload;
  };
  void writer_loop();
  Status write(const Job& job);
  RowHit load(const RowKey& key, size_t n_tokens);

  std::unique_ptr<cache::Cache> cache_;
  const std::chrono::milliseconds publish_delay_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  // Every queued or writing async save, by key: what rows() reports for it until the
  // cache itself lists the row. `count` > 1 when the same key is queued twice.
  struct PendingSave {
    int32_t count = 0;
    cache::Tier tier = cache::Tier::kRam;
    uint64_t bytes = 0;
    uint64_t n_tokens = 0;
  };
  std::map<RowKey, PendingSave> in_flight_;
  std::multiset<Digest256> in_flight_ns_;  // RowNamespace::id() of every queued/writing save
  std::map<std::string, uint64_t> runtime_counters_;
  std::map<RowKey, Digest256> fingerprints_;  // key -> model fingerprint, saves of this process
  bool stop_ = false;
  std::vector<std::thread> writers_;
};

}  // namespace hearth::runtime
