// libFuzzer target: grammars and schemas come from request bodies. The input is
// "TEXT\0BYTES": TEXT as GBNF must parse or fail with a message, and a grammar that
// parses is fed BYTES through the matcher (token masks over a small vocabulary
// included). TEXT that is JSON is also converted as a JSON Schema: the result must be
// a grammar that parses, or an error with a message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "hearth/grammar/grammar.h"
#include "hearth/grammar/json_schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hearth::grammar;
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t nul = all.find('\0');
  const std::string_view text = all.substr(0, nul);
  const std::string_view bytes = nul == std::string_view::npos ? "" : all.substr(nul + 1);
  static const auto vocab = TokenVocab::build(
      {"", "a", "{", "}", "\"", "ab", "1", " ", "\xC3", "\xA9", "é", "[", "]"}, {0});

  auto g = parse_gbnf(text);
  if (!g.ok()) {
    if (g.status().message().empty()) std::abort();
  } else {
    Matcher m(g.value());
    std::vector<uint8_t> mask;
    for (size_t i = 0; i < bytes.size() && i < 256; ++i) {
      m.allowed_tokens(*vocab, mask);
      (void)m.accept_bytes(bytes.substr(i, 1));
    }
  }
  const nlohmann::json schema = nlohmann::json::parse(text, nullptr, false);
  if (!schema.is_discarded()) {
    auto gbnf = json_schema_to_gbnf(schema);
    if (gbnf.ok()) {
      if (!parse_gbnf(gbnf.value()).ok()) std::abort();  // the converter wrote bad GBNF
    } else if (gbnf.status().message().empty()) {
      std::abort();
    }
  }
  return 0;
}
