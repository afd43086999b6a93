#include "jinja/strings.h"

#include <algorithm>

namespace hearth::jinja {

void append_utf8(std::string& out, uint32_t cp) {
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

namespace {

// Decodes the code point at i into cp, returning its byte length.
size_t decode_at(std::string_view s, size_t i, uint32_t* cp) {
  const size_t len = utf8_offset(s.substr(i), 1);
  const auto b = static_cast<unsigned char>(s[i]);
  if (len == 1) {
    *cp = b;
    return 1;
  }
  uint32_t v = len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
  for (size_t k = 1; k < len; ++k) v = (v << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  *cp = v;
  return len;
}

// Start offset of the code point that ends at `end`.
size_t prev_start(std::string_view s, size_t end) {
  size_t i = end - 1;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80 && end - i < 4) --i;
  if (utf8_offset(s.substr(i), 1) != end - i) return end - 1;
  return i;
}

}  // namespace

std::vector<uint32_t> code_points(std::string_view s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    i += decode_at(s, i, &cp);
    out.push_back(cp);
  }
  return out;
}

bool py_isspace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

std::pair<size_t, size_t> strip_bounds(std::string_view s, const std::string* chars, bool left,
                                       bool right) {
  std::vector<uint32_t> set;
  if (chars) set = code_points(*chars);
  auto strip = [&](uint32_t cp) {
    return chars ? std::find(set.begin(), set.end(), cp) != set.end() : py_isspace(cp);
  };
  size_t b = 0, e = s.size();
  if (left) {
    while (b < e) {
      uint32_t cp;
      const size_t len = decode_at(s, b, &cp);
      if (!strip(cp)) break;
      b += len;
    }
  }
  if (right) {
    while (e > b) {
      const size_t p = prev_start(s, e);
      uint32_t cp;
      decode_at(s, p, &cp);
      if (!strip(cp)) break;
      e = p;
    }
  }
  return {b, e};
}

std::vector<std::pair<size_t, size_t>> split_bounds(std::string_view s, const std::string* sep,
                                                    int64_t maxsplit) {
  std::vector<std::pair<size_t, size_t>> out;
  if (sep) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      const size_t p = s.find(*sep, start);
      if (p == std::string_view::npos) break;
      out.push_back({start, p});
      start = p + sep->size();
    }
    out.push_back({start, s.size()});
    return out;
  }
  size_t i = 0;
  auto skip_space = [&] {
    while (i < s.size()) {
      uint32_t cp;
      const size_t len = decode_at(s, i, &cp);
      if (!py_isspace(cp)) break;
      i += len;
    }
  };
  skip_space();
  while (i < s.size()) {
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
      // The rest, with trailing whitespace stripped.
      size_t e = strip_bounds(s.substr(i), nullptr, false, true).second;
      out.push_back({i, i + e});
      return out;
    }
    const size_t start = i;
    while (i < s.size()) {
      uint32_t cp;
      const size_t len = decode_at(s, i, &cp);
      if (py_isspace(cp)) break;
      i += len;
    }
    out.push_back({start, i});
    skip_space();
  }
  return out;
}

std::vector<std::string> split_lines(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0, i = 0;
  while (i < s.size()) {
    uint32_t cp;
    const size_t len = decode_at(s, i, &cp);
    const bool brk = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C ||
                     cp == 0x1D || cp == 0x1E || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
    if (!brk) {
      i += len;
      continue;
    }
    out.emplace_back(s.substr(start, i - start));
    i += len;
    if (cp == '\r' && i < s.size() && s[i] == '\n') ++i;
    start = i;
  }
  if (start < s.size()) out.emplace_back(s.substr(start));
  return out;
}

std::string py_replace(std::string_view s, std::string_view old, std::string_view repl,
                       int64_t count) {
  std::string out;
  if (old.empty()) {
    // Inserts repl before every code point and at the end.
    int64_t n = 0;
    size_t i = 0;
    while (i <= s.size()) {
      if (count < 0 || n < count) {
        out += repl;
        ++n;
      }
      if (i == s.size()) break;
      const size_t len = utf8_offset(s.substr(i), 1);
      out += s.substr(i, len);
      i += len;
    }
    return out;
  }
  size_t start = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    const size_t p = s.find(old, start);
    if (p == std::string_view::npos) break;
    out += s.substr(start, p - start);
    out += repl;
    start = p + old.size();
    ++n;
  }
  out += s.substr(start);
  return out;
}

namespace {

// Simple case mappings of the scripts chat text commonly carries: Latin-1, Latin
// Extended-A, Greek and Cyrillic (Python's str.upper/lower cover all of Unicode).
uint32_t to_upper_cp(uint32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  if (c == 0xB5) return 0x39C;
  if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c >= 0x100 && c <= 0x17F) {
    if (c == 0x131) return 'I';
    if (c == 0x17F) return 'S';
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c % 2 == 0) ? c - 1 : c;
    if (c == 0x130 || c == 0x138 || c == 0x149) return c;
    return (c % 2 == 1) ? c - 1 : c;
  }
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 32;
  if (c == 0x3C2) return 0x3A3;
  if (c >= 0x3AC && c <= 0x3AF) {
    static const uint32_t m[] = {0x386, 0x388, 0x389, 0x38A};
    return m[c - 0x3AC];
  }
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}

uint32_t to_lower_cp(uint32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c == 0x178) return 0xFF;
  if (c >= 0x100 && c <= 0x17F) {
    if (c == 0x130) return 'i';
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c % 2 == 1) ? c + 1 : c;
    if (c == 0x131 || c == 0x138 || c == 0x149 || c == 0x17F) return c;
    return (c % 2 == 0) ? c + 1 : c;
  }
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 37;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

std::string map_case(std::string_view s, bool upper) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    const size_t len = decode_at(s, i, &cp);
    if (len == 1 && cp >= 0x80) {
      out.push_back(s[i]);  // an invalid byte stays as it is
    } else if (upper && cp == 0xDF) {
      out += "SS";
    } else {
      append_utf8(out, upper ? to_upper_cp(cp) : to_lower_cp(cp));
    }
    i += len;
  }
  return out;
}

}  // namespace

std::string py_upper(std::string_view s) {
  return map_case(s, true);
}

std::string py_lower(std::string_view s) {
  return map_case(s, false);
}

std::string py_capitalize(std::string_view s) {
  if (s.empty()) return {};
  const size_t first = utf8_offset(s, 1);
  return py_upper(s.substr(0, first)) + py_lower(s.substr(first));
}

std::string py_title(std::string_view s) {
  std::string out(s);
  bool prev_cased = false;
  for (auto& c : out) {
    const bool lower = c >= 'a' && c <= 'z';
    const bool upper = c >= 'A' && c <= 'Z';
    if (lower && !prev_cased) c = static_cast<char>(c - 32);
    if (upper && prev_cased) c = static_cast<char>(c + 32);
    prev_cased = lower || upper;
  }
  return out;
}

}  // namespace hearth::jinja
