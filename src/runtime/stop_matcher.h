// Streaming stop-sequence matcher. Text arrives in fragments; text that could still be the
// start of a stop sequence is held back, so a caller streaming released text never sees
// any part of a stop sequence, and the reply ends right before the first match.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::runtime {

class StopMatcher {
 public:
  StopMatcher() = default;
  explicit StopMatcher(std::vector<std::string> stops);
  // Appends `fragment`; returns the text that is now safe to release.
  std::string push(std::string_view fragment);
  // Releases everything still held back (end of generation without a match).
  std::string flush();
  // The stop sequence that matched, once one has.
  const std::optional<std::string>& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  std::optional<std::string> matched_;
};

}  // namespace hearth::runtime
