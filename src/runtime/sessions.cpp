#include "runtime/sessions.h"

#include <algorithm>

namespace hearth::runtime {

Status check_session_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxSessionIdLength)
    return InvalidArgument("session_id must be 1-" + std::to_string(kMaxSessionIdLength) +
                           " characters, got " + std::to_string(id.size()));
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok)
      return InvalidArgument("session_id '" + std::string(id) +
                             "' may hold only A-Z a-z 0-9 . _ : -");
  }
  return OkStatus();
}

std::string_view session_error_code(const Status& status) {
  for (std::string_view code : {kNoSession, kStickyBusy}) {
    const std::string& m = status.message();
    if (m.size() > code.size() && m.compare(0, code.size(), code) == 0 && m[code.size()] == ':')
      return code;
  }
  return {};
}

Result<SessionTable::Acquired> SessionTable::acquire(std::string_view id, bool must_exist) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    if (must_exist)
      return NotFound(std::string(kNoSession) + ": session '" + std::string(id) +
                      "' is not open (unknown, released or expired)");
    Session s;
    s.busy = true;
    s.last_used = Clock::now();
    sessions_.emplace(std::string(id), std::move(s));
    return Acquired{true, {}};
  }
  if (it->second.busy)
    return FailedPrecondition(std::string(kStickyBusy) + ": session '" + std::string(id) +
                              "' already has a request in flight");
  it->second.busy = true;
  return Acquired{false, it->second.tokens};
}

void SessionTable::abort(std::string_view id, bool created) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  if (created) {
    sessions_.erase(it);
  } else {
    it->second.busy = false;
  }
}

std::optional<int32_t> SessionTable::pinned(std::string_view id) const {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second.seq < 0) return std::nullopt;
  return it->second.seq;
}

std::map<int32_t, std::string> SessionTable::pins() const {
  std::lock_guard lock(mu_);
  std::map<int32_t, std::string> out;
  for (const auto& [id, s] : sessions_)
    if (s.seq >= 0) out[s.seq] = id;
  return out;
}

std::vector<TokenId> SessionTable::tokens(std::string_view id) const {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  return it == sessions_.end() ? std::vector<TokenId>{} : it->second.tokens;
}

void SessionTable::pin(std::string_view id, int32_t seq) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it != sessions_.end()) it->second.seq = seq;
}

void SessionTable::end(std::string_view id, const std::optional<std::vector<TokenId>>& tokens) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  if (it->second.seq < 0) {
    sessions_.erase(it);
    return;
  }
  if (tokens) it->second.tokens = *tokens;
  it->second.busy = false;
  it->second.last_used = Clock::now();
}

void SessionTable::erase(std::string_view id) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it != sessions_.end()) sessions_.erase(it);
}

size_t SessionTable::erase_seq(int32_t seq) {
  std::lock_guard lock(mu_);
  return std::erase_if(sessions_, [seq](const auto& kv) { return kv.second.seq == seq; });
}

void SessionTable::clear() {
  std::lock_guard lock(mu_);
  sessions_.clear();
}

std::vector<std::string> SessionTable::expired(std::chrono::milliseconds idle,
                                               Clock::time_point now) const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<Clock::time_point, std::string>> due;
  if (idle.count() <= 0) return {};
  for (const auto& [id, s] : sessions_)
    if (!s.busy && s.seq >= 0 && now - s.last_used >= idle) due.emplace_back(s.last_used, id);
  std::sort(due.begin(), due.end());
  std::vector<std::string> out;
  for (auto& [t, id] : due) out.push_back(std::move(id));
  return out;
}

std::optional<SessionTable::Clock::time_point> SessionTable::next_expiry(
    std::chrono::milliseconds idle) const {
  std::lock_guard lock(mu_);
  if (idle.count() <= 0) return std::nullopt;
  std::optional<Clock::time_point> next;
  for (const auto& [id, s] : sessions_)
    if (!s.busy && s.seq >= 0 && (!next || s.last_used + idle < *next)) next = s.last_used + idle;
  return next;
}

std::optional<std::string> SessionTable::lru_idle(const std::vector<int32_t>& among) const {
  std::lock_guard lock(mu_);
  const Session* best = nullptr;
  std::optional<std::string> out;
  for (const auto& [id, s] : sessions_) {
    if (s.busy || s.seq < 0 || std::find(among.begin(), among.end(), s.seq) == among.end())
      continue;
    if (!best || s.last_used < best->last_used) {
      best = &s;
      out = id;
    }
  }
  return out;
}

std::optional<bool> SessionTable::busy(std::string_view id) const {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  return it->second.busy;
}

std::vector<SessionInfo> SessionTable::list(Clock::time_point now) const {
  std::lock_guard lock(mu_);
  std::vector<SessionInfo> out;
  for (const auto& [id, s] : sessions_) {
    SessionInfo i;
    i.id = id;
    i.seq = s.seq;
    i.n_tokens = static_cast<int64_t>(s.tokens.size());
    i.busy = s.busy;
    i.idle_ms =
        s.busy ? 0
               : std::chrono::duration_cast<std::chrono::milliseconds>(now - s.last_used).count();
    out.push_back(std::move(i));
  }
  return out;
}

}  // namespace hearth::runtime
