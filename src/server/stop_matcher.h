// Applies OpenAI `stop` strings to a stream of text fragments. Text that might be
// the start of a stop string is held back until it is known not to be, so a
// client never sees part of a stop sequence; an incomplete trailing UTF-8
// sequence is held back too, so every emitted piece is valid UTF-8 for JSON.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hearth::server {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Adds a fragment and returns the text that is now safe to emit. Once a stop
  // string is seen, returns the text before it and stopped() turns true; later
  // pushes return nothing.
  std::string push(std::string_view fragment);
  // At the end of generation: whatever was held back (never part of a stop).
  std::string flush();
  bool stopped() const { return stopped_; }
  // The stop string that ended the text (empty until stopped).
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
  std::string matched_;
};

// Bytes at the end of `s` that form an incomplete UTF-8 sequence (0..3).
size_t incomplete_utf8_suffix(std::string_view s);

}  // namespace hearth::server
