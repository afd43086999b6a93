#include "server/stop_matcher.h"

#include <algorithm>

namespace hearth::server {

size_t incomplete_utf8_suffix(std::string_view s) {
  // Walk back over at most 3 continuation bytes to the lead byte.
  const size_t n = s.size();
  for (size_t back = 1; back <= std::min<size_t>(4, n); ++back) {
    const auto c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte
    size_t need = 1;
    if ((c & 0xE0) == 0xC0)
      need = 2;
    else if ((c & 0xF0) == 0xE0)
      need = 3;
    else if ((c & 0xF8) == 0xF0)
      need = 4;
    return need > back ? back : 0;
  }
  return 0;
}

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (auto& s : stops) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

std::string StopMatcher::push(std::string_view fragment) {
  if (stopped_) return {};
  pending_.append(fragment);
  size_t earliest = std::string::npos;
  for (const auto& stop : stops_) {
    const size_t at = pending_.find(stop);
    if (at < earliest) {
      earliest = at;
      matched_ = stop;
    }
  }
  if (earliest != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, earliest);
    pending_.clear();
    return out;
  }
  // Hold back the longest suffix that could still grow into a stop string.
  size_t hold = 0;
  for (const auto& stop : stops_) {
    const size_t max_len = std::min(stop.size() - 1, pending_.size());
    for (size_t len = max_len; len > hold; --len) {
      if (std::string_view(pending_).substr(pending_.size() - len) ==
          std::string_view(stop).substr(0, len)) {
        hold = len;
        break;
      }
    }
  }
  hold = std::max(hold, incomplete_utf8_suffix(pending_));
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string StopMatcher::flush() {
  if (stopped_) return {};
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace hearth::server
