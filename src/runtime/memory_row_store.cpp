#include "runtime/memory_row_store.h"

#include <algorithm>

namespace hearth::runtime {

const char* save_reason_name(SaveReason reason) {
  switch (reason) {
    case SaveReason::kCold: return "cold";
    case SaveReason::kContinued: return "continued";
    case SaveReason::kFinish: return "finish";
    case SaveReason::kEvict: return "evict";
    case SaveReason::kShutdown: return "shutdown";
  }
  return "unknown";
}

Digest256 row_key(const RowNamespace& ns, std::span<const TokenId> tokens) {
  Sha256 h;
  h.update(ns.fingerprint.data(), ns.fingerprint.size());
  h.update(&ns.quant_byte, 1);
  h.update(ns.ctx_params_hash.data(), ns.ctx_params_hash.size());
  for (TokenId t : tokens) {
    const uint32_t v = static_cast<uint32_t>(t);
    const uint8_t le[4] = {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8),
                           static_cast<uint8_t>(v >> 16), static_cast<uint8_t>(v >> 24)};
    h.update(le, 4);
  }
  return h.digest();
}

MemoryRowStore::MemoryRowStore(uint64_t quota_bytes)
    : quota_bytes_(quota_bytes), writer_([this] { writer_loop(); }) {}

MemoryRowStore::~MemoryRowStore() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  writer_.join();
}

RowPtr MemoryRowStore::lookup_exact(const Digest256& key) {
  std::lock_guard lock(mu_);
  auto it = rows_.find(key);
  if (it == rows_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.row;
}

RowPtr MemoryRowStore::lookup_exact_or_wait(const Digest256& key, std::chrono::milliseconds wait,
                                            bool* waited) {
  std::unique_lock lock(mu_);
  *waited = false;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (!rows_.count(key) && in_flight_.count(key)) {
    *waited = true;
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) break;
  }
  auto it = rows_.find(key);
  if (it == rows_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.row;
}

RowPtr MemoryRowStore::lookup_longest_prefix(const RowNamespace& ns,
                                             std::span<const TokenId> tokens,
                                             int32_t min_tokens, int32_t) {
  std::lock_guard lock(mu_);
  RowPtr best;
  Digest256 best_key{};
  for (const auto& [key, e] : rows_) {
    if (!(e.ns == ns)) continue;
    const auto& rt = e.row->tokens;
    if (rt.size() > tokens.size() || static_cast<int32_t>(rt.size()) < min_tokens) continue;
    if (best && rt.size() <= best->tokens.size()) continue;
    if (!std::equal(rt.begin(), rt.end(), tokens.begin())) continue;
    best = e.row;
    best_key = key;
  }
  if (best) lru_.splice(lru_.begin(), lru_, rows_[best_key].lru);
  return best;
}

void MemoryRowStore::publish_locked(const Job& job) {
  in_flight_.erase(job.key);
  counters_[std::string("saves_") + save_reason_name(job.reason)]++;
  if (rows_.count(job.key)) {
    counters_["saves_duplicate"]++;
    cv_.notify_all();
    return;
  }
  Entry e;
  e.ns = job.ns;
  e.row = job.row;
  e.bytes = job.row->kv.size() + job.row->tokens.size() * 4 + job.row->last_logits.size() * 4;
  lru_.push_front(job.key);
  e.lru = lru_.begin();
  bytes_ += e.bytes;
  rows_.emplace(job.key, std::move(e));
  while (bytes_ > quota_bytes_ && lru_.size() > 1) {
    auto victim = rows_.find(lru_.back());
    bytes_ -= victim->second.bytes;
    rows_.erase(victim);
    lru_.pop_back();
    counters_["evictions"]++;
  }
  counters_["bytes_written"] += job.row->kv.size();
  cv_.notify_all();
}

Result<Digest256> MemoryRowStore::save(const RowNamespace& ns, CacheRow row, Tier,
                                       SaveReason reason, bool sync,
                                       std::chrono::milliseconds) {
  Job job{row_key(ns, row.tokens), ns, std::make_shared<const CacheRow>(std::move(row)), reason};
  std::lock_guard lock(mu_);
  if (sync) {
    publish_locked(job);
  } else {
    in_flight_.insert(job.key);
    jobs_.push_back(job);
    cv_.notify_all();
  }
  return job.key;
}

void MemoryRowStore::writer_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stop_ and drained
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    if (publish_delay_.count() > 0) {
      lock.unlock();
      std::this_thread::sleep_for(publish_delay_);
      lock.lock();
    }
    publish_locked(job);
  }
}

std::map<std::string, uint64_t> MemoryRowStore::counters() const {
  std::lock_guard lock(mu_);
  auto c = counters_;
  c["rows"] = rows_.size();
  c["bytes"] = bytes_;
  return c;
}

void MemoryRowStore::count(const std::string& name) {
  std::lock_guard lock(mu_);
  counters_[name]++;
}

void MemoryRowStore::flush(std::chrono::milliseconds deadline) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, deadline, [this] { return jobs_.empty() && in_flight_.empty(); });
}

void MemoryRowStore::set_publish_delay(std::chrono::milliseconds delay) {
  std::lock_guard lock(mu_);
  publish_delay_ = delay;
}

}  // namespace hearth::runtime
