#include "runtime/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace hearth::runtime {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (auto& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
}

std::string StopMatcher::push(std::string_view fragment) {
  if (matched_) return {};
  held_ += fragment;
  size_t first = std::string::npos;
  const std::string* which = nullptr;
  for (const std::string& s : stops_) {
    size_t at = held_.find(s);
    if (at != std::string::npos && (first == std::string::npos || at < first)) {
      first = at;
      which = &s;
    }
  }
  if (which) {
    matched_ = *which;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Hold back the longest suffix that is a proper prefix of some stop sequence.
  size_t hold = 0;
  for (const std::string& s : stops_) {
    const size_t max_len = std::min(s.size() - 1, held_.size());
    for (size_t len = max_len; len > hold; --len) {
      if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  return out;
}

std::string StopMatcher::flush() {
  if (matched_) return {};
  return std::exchange(held_, {});
}

}  // namespace hearth::runtime
