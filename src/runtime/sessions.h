// Sticky sessions of one model: which sequence each session pins, the tokens it holds,
// whether a request of it is in flight, and when it was last used. Thread-safe: callers
// acquire a session when they submit a request, the worker pins, ends and releases them.
// The KV work (the release save, freeing the cells) is the worker's (model_worker.cpp).
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hearth/runtime/runtime.h"

namespace hearth::runtime {

class SessionTable {
 public:
  using Clock = std::chrono::steady_clock;

  struct Acquired {
    bool created = false;         // the id was unknown: this request opens the session
    std::vector<TokenId> tokens;  // what the session holds (empty when created)
  };
  // Marks the session busy for one request. Unknown id: opens it, unless must_exist
  // (no_session). Busy: sticky_busy.
  Result<Acquired> acquire(std::string_view id, bool must_exist);
  // Undoes an acquire whose request was never queued.
  void abort(std::string_view id, bool created);

  // The sequence the session pins (nullopt: unknown or not pinned yet).
  std::optional<int32_t> pinned(std::string_view id) const;
  // The sessions pinning a sequence: seq -> id.
  std::map<int32_t, std::string> pins() const;
  // The tokens the session holds (empty when unknown).
  std::vector<TokenId> tokens(std::string_view id) const;
  // Pins the session to `seq` (its request was admitted there).
  void pin(std::string_view id, int32_t seq);
  // The session's request ended: it now holds `tokens` (unset: unchanged) and is idle. A
  // session whose request never reached a sequence is closed.
  void end(std::string_view id, const std::optional<std::vector<TokenId>>& tokens);
  void erase(std::string_view id);
  // Closes every session pinning `seq` (its cells are gone); returns how many.
  size_t erase_seq(int32_t seq);
  void clear();

  // Idle sessions past idle_ms (0 = none expire), least recently used first.
  std::vector<std::string> expired(std::chrono::milliseconds idle, Clock::time_point now) const;
  // When the next idle session expires (nullopt: none will).
  std::optional<Clock::time_point> next_expiry(std::chrono::milliseconds idle) const;
  // The least recently used idle pinned session whose seq is in `among` (nullopt: none).
  std::optional<std::string> lru_idle(const std::vector<int32_t>& among) const;
  // Busy state of a session: nullopt when unknown.
  std::optional<bool> busy(std::string_view id) const;

  std::vector<SessionInfo> list(Clock::time_point now) const;

 private:
  struct Session {
    int32_t seq = -1;
    std::vector<TokenId> tokens;
    bool busy = false;
    Clock::time_point last_used;
  };
  mutable std::mutex mu_;
  std::map<std::string, Session, std::less<>> sessions_;
};

}  // namespace hearth::runtime
