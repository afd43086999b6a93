#include "grammar/gbnf_text.h"

#include <cstdio>

namespace hearth::grammar {
namespace {

std::string hex_escape(uint32_t cp) {
  char buf[12];
  if (cp < 0x100) {
    std::snprintf(buf, sizeof buf, "\\x%02X", cp);
  } else if (cp < 0x10000) {
    std::snprintf(buf, sizeof buf, "\\u%04X", cp);
  } else {
    std::snprintf(buf, sizeof buf, "\\U%08X", cp);
  }
  return buf;
}

}  // namespace

std::string gbnf_literal(std::string_view bytes) {
  std::string out = "\"";
  for (char ch : bytes) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7F) {
      out += hex_escape(c);
    } else {
      out += ch;  // printable ASCII and the bytes of UTF-8 characters
    }
  }
  out += '"';
  return out;
}

std::string gbnf_class_char(uint32_t cp) {
  if (cp == '\\' || cp == ']' || cp == '[' || cp == '-' || cp == '^' || cp == '"') {
    return std::string("\\") + static_cast<char>(cp);
  }
  if (cp >= 0x20 && cp < 0x7F) return std::string(1, static_cast<char>(cp));
  return hex_escape(cp);
}

}  // namespace hearth::grammar
