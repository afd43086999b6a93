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

std::string ascii_upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  }
  return out;
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return out;
}

std::string py_capitalize(std::string_view s) {
  std::string out = ascii_lower(s);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 32);
  return out;
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
