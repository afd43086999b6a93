#include "cache/remote_sync.h"

#include <algorithm>

namespace hearth::cache {

void RemoteIndex::insert(const RemoteRowMeta& m) {
  std::lock_guard lock(mu_);
  rows_[m.info.ns.id()][m.key] = m.info.tokens;
}

void RemoteIndex::erase(const CacheKey& key) {
  std::lock_guard lock(mu_);
  for (auto& [ns, rows] : rows_) rows.erase(key);
}

void RemoteIndex::clear() {
  std::lock_guard lock(mu_);
  rows_.clear();
}

size_t RemoteIndex::size() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [ns, rows] : rows_) n += rows.size();
  return n;
}

std::optional<std::pair<CacheKey, size_t>> RemoteIndex::longest(const Digest256& ns_id,
                                                                std::span<const Token> tokens,
                                                                size_t better_than) const {
  std::lock_guard lock(mu_);
  auto it = rows_.find(ns_id);
  if (it == rows_.end()) return std::nullopt;
  std::optional<std::pair<CacheKey, size_t>> best;
  size_t best_len = better_than;
  for (const auto& [key, row_tokens] : it->second) {
    const size_t n = std::min(row_tokens.size(), tokens.size());
    size_t common = 0;
    while (common < n && row_tokens[common] == tokens[common]) ++common;
    if (common > best_len) {
      best_len = common;
      best = std::make_pair(key, common);
    }
  }
  return best;
}

RemoteSync::RemoteSync(RemoteTier& tier, RemoteIndex& index, uint32_t poll_ms)
    : tier_(tier), index_(index), poll_ms_(poll_ms) {
  thread_ = std::thread([this] { run(); });
}

RemoteSync::~RemoteSync() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RemoteSync::run() {
  std::string last_id;  // empty = a full resync is due
  std::unique_lock lock(mu_);
  while (!stop_) {
    lock.unlock();
    if (last_id.empty()) {
      // Full resync from the meta hash, then the whole stream (re-inserting a row
      // is harmless), so nothing published during the scan is missed.
      auto all = tier_.scan_index();
      if (all.ok()) {
        index_.clear();
        for (const auto& m : *all) index_.insert(m);
        learned_.fetch_add(all->size());
        last_id = "0-0";
      }
    } else {
      auto news = tier_.read_index(&last_id);
      if (news.ok()) {
        for (const auto& m : *news) index_.insert(m);
        learned_.fetch_add(news->size());
      } else {
        last_id.clear();  // Redis went away: resync when it returns (it may be empty)
      }
    }
    lock.lock();
    cv_.wait_for(lock, std::chrono::milliseconds(poll_ms_), [&] { return stop_; });
  }
}

}  // namespace hearth::cache
