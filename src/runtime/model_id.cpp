// The model id rule. Ids travel into URLs (/v1/models/ID), Prometheus labels, log lines
// and file names: a small alphabet keeps each of those free of escaping bugs.
#include "hearth/runtime/runtime.h"

namespace hearth::runtime {

namespace {

bool id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == ':' || c == '/' || c == '-';
}

}  // namespace

Status check_model_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxModelIdLength) {
    return InvalidArgument("model id must be 1 to " + std::to_string(kMaxModelIdLength) +
                           " characters");
  }
  for (char c : id) {
    if (!id_char(c)) {
      return InvalidArgument("model id may only contain A-Z a-z 0-9 . _ : / - (found byte " +
                             std::to_string(static_cast<unsigned char>(c)) + ")");
    }
  }
  size_t start = 0;
  while (start <= id.size()) {
    const size_t end = std::min(id.find('/', start), id.size());
    const std::string_view segment = id.substr(start, end - start);
    if (segment.empty() || segment == "." || segment == "..") {
      return InvalidArgument("model id '" + std::string(id) +
                             "' has an empty, '.' or '..' path segment");
    }
    start = end + 1;
  }
  return OkStatus();
}

std::string model_id_from(std::string_view text) {
  std::string id;
  for (char c : text.substr(0, kMaxModelIdLength)) id += id_char(c) && c != '/' ? c : '_';
  if (id.empty() || id == "." || id == "..") id = "model";
  return id;
}

}  // namespace hearth::runtime
