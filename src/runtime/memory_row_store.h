// In-process RowStore: rows in a map, async saves published by one writer thread.
// Used for the stub tests and whenever the cache subsystem is not built in. Quotas are
// enforced by dropping least-recently-used rows.
#pragma once

#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "runtime/row_store.h"

namespace hearth::runtime {

class MemoryRowStore : public RowStore {
 public:
  explicit MemoryRowStore(uint64_t quota_bytes);
  ~MemoryRowStore() override;

  RowPtr lookup_exact(const Digest256& key) override;
  RowPtr lookup_exact_or_wait(const Digest256& key, std::chrono::milliseconds wait,
                              bool* waited) override;
  RowPtr lookup_longest_prefix(const RowNamespace& ns, std::span<const TokenId> tokens,
                               int32_t min_tokens, int32_t stride) override;
  Result<Digest256> save(const RowNamespace& ns, CacheRow row, Tier tier, SaveReason reason,
                         bool sync, std::chrono::milliseconds deadline) override;
  std::map<std::string, uint64_t> counters() const override;
  void count(const std::string& name) override;
  void flush(std::chrono::milliseconds deadline) override;

  // Test hook: the writer sleeps this long before publishing each async row.
  void set_publish_delay(std::chrono::milliseconds delay);

 private:
  struct Entry {
    RowNamespace ns;
    RowPtr row;
    uint64_t bytes = 0;
    std::list<Digest256>::iterator lru;
  };
  struct Job {
    Digest256 key;
    RowNamespace ns;
    RowPtr row;
    SaveReason reason;
  };
  struct KeyHash {
    size_t operator()(const Digest256& d) const {
      size_t h;
      std::memcpy(&h, d.data(), sizeof h);
      return h;
    }
  };

  void writer_loop();
  void publish_locked(const Job& job);

  const uint64_t quota_bytes_;
  mutable std::mutex mu_;
  std::condition_variable cv_;         // writer wakeups, publish notifications
  std::unordered_map<Digest256, Entry, KeyHash> rows_;
  std::list<Digest256> lru_;           // front = most recent
  uint64_t bytes_ = 0;
  std::set<Digest256> in_flight_;
  std::deque<Job> jobs_;
  std::map<std::string, uint64_t> counters_;
  std::chrono::milliseconds publish_delay_{0};
  bool stop_ = false;
  std::thread writer_;
};

}  // namespace hearth::runtime
