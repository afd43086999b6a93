#include "engine/tokenizer/unicode.h"

#include <algorithm>
#include <array>

namespace hearth::tokenizer {
namespace {

struct CodepointRange {
  uint32_t lo;
  uint32_t hi;
};
struct CodepointMap {
  uint32_t from;
  uint32_t to;
};

#include "engine/tokenizer/unicode_tables.inc"

template <size_t N>
bool in_ranges(const CodepointRange (&ranges)[N], uint32_t cp) {
  const CodepointRange* end = ranges + N;
  const CodepointRange* it = std::upper_bound(
      ranges, end, cp, [](uint32_t v, const CodepointRange& r) { return v < r.lo; });
  if (it == ranges) return false;
  --it;
  return cp <= it->hi;
}

template <size_t N>
uint32_t mapped(const CodepointMap (&map)[N], uint32_t cp) {
  const CodepointMap* end = map + N;
  const CodepointMap* it =
      std::lower_bound(map, end, cp, [](const CodepointMap& m, uint32_t v) { return m.from < v; });
  return it != end && it->from == cp ? it->to : cp;
}

// GPT-2 keeps the printable Latin-1 bytes as themselves and moves the others
// (controls, space, 0x7F-0xA0, 0xAD) to 256, 257, ... in byte order.
struct ByteLevelTables {
  std::array<std::string, 256> byte_to_utf8;
  std::array<uint32_t, 256> byte_to_cp{};
  std::array<int, 256> moved_to_byte{};  // (codepoint - 256) -> byte, for moved bytes
  uint32_t moved_end = 256;
  ByteLevelTables() {
    for (int b = 0; b < 256; ++b) {
      const bool printable =
          (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      if (printable) {
        byte_to_cp[b] = static_cast<uint32_t>(b);
      } else {
        moved_to_byte[moved_end - 256] = b;
        byte_to_cp[b] = moved_end++;
      }
      byte_to_utf8[b] = codepoint_to_utf8(byte_to_cp[b]);
    }
  }
};

const ByteLevelTables& byte_level() {
  static const ByteLevelTables tables;
  return tables;
}

}  // namespace

size_t utf8_lead_length(uint8_t lead) {
  static constexpr size_t kLookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLookup[lead >> 4];
}

size_t utf8_char_length(std::string_view s, size_t pos) {
  const size_t n = utf8_lead_length(static_cast<uint8_t>(s[pos]));
  if (n == 1 || pos + n > s.size()) return 1;
  for (size_t i = 1; i < n; ++i) {
    if ((static_cast<uint8_t>(s[pos + i]) & 0xC0) != 0x80) return 1;
  }
  return n;
}

uint32_t decode_utf8(std::string_view s, size_t& pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t b0 = byte(pos);
  const auto cont = [&](size_t i) { return i < s.size() && (byte(i) & 0xC0) == 0x80; };
  if (b0 < 0x80) {
    pos += 1;
    return b0;
  }
  if ((b0 & 0xE0) == 0xC0) {
    if (cont(pos + 1)) {
      const uint32_t cp = ((b0 & 0x1Fu) << 6) | (byte(pos + 1) & 0x3Fu);
      pos += 2;
      return cp;
    }
  } else if ((b0 & 0xF0) == 0xE0) {
    if (cont(pos + 1) && cont(pos + 2)) {
      const uint32_t cp =
          ((b0 & 0x0Fu) << 12) | ((byte(pos + 1) & 0x3Fu) << 6) | (byte(pos + 2) & 0x3Fu);
      pos += 3;
      return cp;
    }
  } else if ((b0 & 0xF8) == 0xF0) {
    if (cont(pos + 1) && cont(pos + 2) && cont(pos + 3)) {
      const uint32_t cp = ((b0 & 0x07u) << 18) | ((byte(pos + 1) & 0x3Fu) << 12) |
                          ((byte(pos + 2) & 0x3Fu) << 6) | (byte(pos + 3) & 0x3Fu);
      pos += 4;
      return cp;
    }
  }
  pos += 1;
  return kReplacementChar;
}

std::vector<uint32_t> utf8_to_codepoints(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) out.push_back(decode_utf8(s, pos));
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp <= 0x7F) {
    out.push_back(static_cast<char>(cp));
  } else if (cp <= 0x7FF) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp <= 0xFFFF) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp <= 0x10FFFF) {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    append_utf8(out, kReplacementChar);
  }
}

std::string codepoint_to_utf8(uint32_t cp) {
  std::string s;
  append_utf8(s, cp);
  return s;
}

bool is_letter(uint32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return in_ranges(kLetterRanges, cp);
}

bool is_number(uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return in_ranges(kNumberRanges, cp);
}

bool is_punctuation(uint32_t cp) {
  return in_ranges(kPunctuationRanges, cp);
}

bool is_control(uint32_t cp) {
  return in_ranges(kControlRanges, cp);
}

bool is_symbol(uint32_t cp) {
  return in_ranges(kSymbolRanges, cp);
}

uint32_t to_lower(uint32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 0x20 : cp;
  return mapped(kLowercaseMap, cp);
}

uint32_t nfd_first(uint32_t cp) {
  if (cp < 0x80) return cp;
  return mapped(kNfdFirstMap, cp);
}

bool is_whitespace(uint32_t cp) {
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

const std::string& byte_to_unicode(uint8_t byte) {
  return byte_level().byte_to_utf8[byte];
}

int unicode_to_byte(uint32_t cp) {
  if (cp < 256) {
    const bool printable =
        (cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF);
    return printable ? static_cast<int>(cp) : -1;
  }
  const ByteLevelTables& t = byte_level();
  return cp < t.moved_end ? t.moved_to_byte[cp - 256] : -1;
}

}  // namespace hearth::tokenizer
