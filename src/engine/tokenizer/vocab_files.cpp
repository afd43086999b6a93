#include "engine/tokenizer/vocab_files.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/unicode.h"

namespace hearth::tokenizer {
namespace {

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot open '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

Result<std::string> base64_decode(std::string_view s) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    if (c == '=') break;
    const int v = base64_value(c);
    if (v < 0) return InvalidArgument("invalid base64 character");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

}  // namespace

Result<Vocab> vocab_from_gpt2_files(const std::string& encoder_json_path,
                                    const std::string& vocab_bpe_path, std::string_view pre) {
  HEARTH_ASSIGN_OR_RETURN(std::string json_text, read_file(encoder_json_path));
  nlohmann::json encoder = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (!encoder.is_object())
    return InvalidArgument("'" + encoder_json_path + "' is not a JSON object");
  Vocab v;
  v.model = "gpt2";
  v.pre = std::string(pre);
  v.add_space_prefix = false;
  for (auto it = encoder.begin(); it != encoder.end(); ++it) {
    if (!it.value().is_number_integer()) {
      return InvalidArgument("'" + encoder_json_path + "': id of '" + it.key() +
                             "' is not an integer");
    }
    const int64_t id = it.value().get<int64_t>();
    if (id < 0 || id > 10'000'000) {
      return InvalidArgument("'" + encoder_json_path + "': id " + std::to_string(id) +
                             " out of range");
    }
    if (static_cast<size_t>(id) >= v.tokens.size()) v.tokens.resize(static_cast<size_t>(id) + 1);
    v.tokens[static_cast<size_t>(id)] = it.key();
  }
  HEARTH_ASSIGN_OR_RETURN(std::string merges_text, read_file(vocab_bpe_path));
  std::istringstream lines(merges_text);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    v.merges.push_back(line);
  }
  return v;
}

Result<Vocab> vocab_from_tiktoken(const std::string& path, std::string_view pre) {
  HEARTH_ASSIGN_OR_RETURN(std::string text, read_file(path));
  Vocab v;
  v.model = "gpt2";
  v.pre = std::string(pre);
  v.add_space_prefix = false;
  std::istringstream lines(text);
  std::string line;
  size_t line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    if (line.empty()) continue;
    const size_t space = line.find(' ');
    if (space == std::string::npos) {
      return InvalidArgument("'" + path + "' line " + std::to_string(line_no) + ": no rank");
    }
    auto bytes = base64_decode(std::string_view(line).substr(0, space));
    if (!bytes.ok()) {
      return InvalidArgument("'" + path + "' line " + std::to_string(line_no) + ": " +
                             bytes.status().message());
    }
    const long rank = std::strtol(line.c_str() + space + 1, nullptr, 10);
    if (rank < 0 || rank > 10'000'000) {
      return InvalidArgument("'" + path + "' line " + std::to_string(line_no) + ": bad rank");
    }
    std::string encoded;
    for (char c : *bytes) encoded += byte_to_unicode(static_cast<uint8_t>(c));
    if (static_cast<size_t>(rank) >= v.tokens.size())
      v.tokens.resize(static_cast<size_t>(rank) + 1);
    v.tokens[static_cast<size_t>(rank)] = std::move(encoded);
  }
  return v;
}

}  // namespace hearth::tokenizer
