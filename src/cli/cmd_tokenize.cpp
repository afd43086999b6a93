// `hearth tokenize -m MODEL TEXT [--json] [--no-bos] [--parse-special]`: tokenize
// text with a GGUF model's vocabulary and print ids with their pieces.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/registry.h"
#include "common/json_text.h"
#include "hearth/engine/tokenizer.h"
#include "hearth/gguf/gguf.h"

namespace hearth::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  bool json = false;
  bool no_bos = false;
  bool parse_special = false;
};

bool is_valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    const size_t n = b < 0x80                   ? 1
                     : (b >= 0xC2 && b <= 0xDF) ? 2
                     : (b >= 0xE0 && b <= 0xEF) ? 3
                     : (b >= 0xF0 && b <= 0xF4) ? 4
                                                : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

// Pieces may hold bytes that are not valid UTF-8 on their own (byte tokens): the
// plain listing shows those, and control characters, as escapes.
std::string printable(const std::string& piece) {
  const bool escape_high = !is_valid_utf8(piece);
  std::string out;
  for (unsigned char c : piece) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F || (escape_high && c >= 0x80)) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02X", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

int run_tokenize(const TokenizeOptions& o) {
  auto file = gguf::GgufFile::open(o.model);
  if (!file.ok()) {
    std::fprintf(stderr, "hearth tokenize: %s\n", file.status().to_string().c_str());
    return 1;
  }
  auto vocab = vocab_from_gguf(*file);
  if (!vocab.ok()) {
    std::fprintf(stderr, "hearth tokenize: %s\n", vocab.status().to_string().c_str());
    return 1;
  }
  if (o.no_bos) vocab->add_bos = false;
  auto tok = Tokenizer::create(std::move(vocab).value());
  if (!tok.ok()) {
    std::fprintf(stderr, "hearth tokenize: %s\n", tok.status().to_string().c_str());
    return 1;
  }
  auto ids = tok->encode(o.text, /*add_special=*/true, o.parse_special);
  if (!ids.ok()) {
    std::fprintf(stderr, "hearth tokenize: %s\n", ids.status().to_string().c_str());
    return 1;
  }
  if (o.json) {
    nlohmann::json j;
    j["tokens"] = *ids;
    j["pieces"] = nlohmann::json::array();
    for (int32_t id : *ids) j["pieces"].push_back(tok->token_to_piece(id));
    // Incomplete UTF-8 in a piece becomes U+FFFD in the JSON text.
    std::printf("%s\n", json_text(j).c_str());
  } else {
    for (int32_t id : *ids) {
      std::printf("%6d -> '%s'\n", id, printable(tok->token_to_piece(id)).c_str());
    }
  }
  return 0;
}

Registrar reg("tokenize", [](CLI::App& root) {
  auto opts = std::make_shared<TokenizeOptions>();
  auto* cmd = root.add_subcommand("tokenize", "Tokenize text with a GGUF model's vocabulary");
  cmd->add_option("-m,--model", opts->model, "GGUF model (or vocabulary-only GGUF) file")
      ->required();
  cmd->add_option("text", opts->text, "Text to tokenize")->required();
  cmd->add_flag("--json", opts->json, R"(Print {"tokens":[...],"pieces":[...]})");
  cmd->add_flag("--no-bos", opts->no_bos, "Do not prepend BOS even if the model asks for it");
  cmd->add_flag("--parse-special", opts->parse_special,
                "Recognise control-token text such as <s> or <|im_start|> in TEXT");
  cmd->callback([opts] { exit_code() = run_tokenize(*opts); });
});

}  // namespace
}  // namespace hearth::cli
