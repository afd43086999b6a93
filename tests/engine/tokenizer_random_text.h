// Seeded random text for tokenizer property tests: ASCII words, runs of spaces,
// tabs and newlines, accented Latin, Cyrillic, Greek, CJK (including rare
// extension-B ideographs), Khmer, and emoji (some with ZWJ / variation selectors).
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace hearth::testing {

inline void append_codepoint(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

inline std::string random_text(std::mt19937& rng) {
  static const char* kWords[] = {"the",   "Hello", "world", "token",        "cache", "I'm",
                                 "don't", "3.14",  "2024",  "foo_bar",      "x",     "(",
                                 ")",     "==",    "->",    "http://a.b/c", "<tag>", "Ünïcödé"};
  auto pick = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
  std::string out;
  const uint32_t parts = 1 + pick(12);
  for (uint32_t p = 0; p < parts; ++p) {
    switch (pick(12)) {
      case 0:
      case 1:
      case 2:
        out += kWords[pick(sizeof(kWords) / sizeof(kWords[0]))];
        break;
      case 3:
        out.append(1 + pick(4), ' ');
        break;
      case 4:
        out += "\t\n\r "[pick(4)];
        break;
      case 5:  // printable ASCII
        for (uint32_t i = 0, n = 1 + pick(6); i < n; ++i) {
          out.push_back(static_cast<char>(0x21 + pick(94)));
        }
        break;
      case 6:  // Latin-1 supplement / Latin extended / Greek / Cyrillic
        for (uint32_t i = 0, n = 1 + pick(5); i < n; ++i) {
          static const uint32_t kBases[] = {0xC0, 0x100, 0x391, 0x410};
          append_codepoint(out, kBases[pick(4)] + pick(48));
        }
        break;
      case 7:  // common CJK
        for (uint32_t i = 0, n = 1 + pick(4); i < n; ++i) {
          append_codepoint(out, 0x4E00 + pick(0x5000));
        }
        break;
      case 8:  // rare CJK (extension B) and Khmer
        append_codepoint(out, pick(2) ? 0x20000 + pick(0x2A00) : 0x1780 + pick(0x54));
        break;
      case 9: {  // emoji, sometimes joined or with a variation selector
        static const uint32_t kEmoji[] = {0x1F680, 0x1F999, 0x1F601, 0x2705,
                                          0x1F636, 0x1F32B, 0x1F468, 0x1F469};
        append_codepoint(out, kEmoji[pick(8)]);
        if (pick(3) == 0) {
          append_codepoint(out, 0x200D);
          append_codepoint(out, kEmoji[pick(8)]);
        }
        if (pick(3) == 0) append_codepoint(out, 0xFE0F);
        break;
      }
      case 10:
        out += " ";
        out += kWords[pick(sizeof(kWords) / sizeof(kWords[0]))];
        break;
      default:  // any BMP codepoint outside the surrogates
      {
        uint32_t cp = 0x80 + pick(0xFF7D);  // up to U+FFFC
        if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0x20AC;
        append_codepoint(out, cp);
      } break;
    }
  }
  return out;
}

}  // namespace hearth::testing
