// The Cache's side of the remote tier: publishing local saves to Redis, pulling
// remote rows into the local ram tier, and the cross-node row index (a full resync
// from the meta hash at start and after Redis returns, then the stream).
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "cache/remote_tier.h"

namespace hearth::cache {

// True on a thread saving a row it pulled from the remote tier (that save is not
// published back).
bool remote_pull_in_progress();

// Rows other nodes (or this one) published, per namespace id: what a prefix
// lookup may pull.
class RemoteIndex {
 public:
  void insert(const RemoteRowMeta& m);
  // Forgets `key` (in whichever namespace holds it).
  void erase(const CacheKey& key);
  void clear();
  // The remote row sharing the longest common prefix with `tokens`, when that is
  // longer than `better_than` tokens: {key, common length}.
  std::optional<std::pair<CacheKey, size_t>> longest(const Digest256& ns_id,
                                                     std::span<const Token> tokens,
                                                     size_t better_than) const;
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::map<Digest256, std::map<CacheKey, std::vector<Token>>> rows_;
};

// Runs the index follower thread; owned by Cache::Impl.
class RemoteSync {
 public:
  RemoteSync(RemoteTier& tier, RemoteIndex& index, uint32_t poll_ms);
  ~RemoteSync();
  // Row entries read from Redis into the index (resyncs and stream), for /metrics.
  uint64_t learned() const { return learned_.load(); }

 private:
  void run();
  RemoteTier& tier_;
  RemoteIndex& index_;
  uint32_t poll_ms_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<uint64_t> learned_{0};
  std::thread thread_;
};

}  // namespace hearth::cache
