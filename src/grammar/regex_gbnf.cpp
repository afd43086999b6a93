#include "grammar/regex_gbnf.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "grammar/gbnf_text.h"

namespace hearth::grammar {
namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

// JSON text of one character inside a string literal.
std::string json_char_literal(uint32_t cp) {
  std::string bytes;
  if (cp == '"') {
    bytes = "\\\"";
  } else if (cp == '\\') {
    bytes = "\\\\";
  } else if (cp == '\n') {
    bytes = "\\n";
  } else if (cp == '\t') {
    bytes = "\\t";
  } else if (cp == '\r') {
    bytes = "\\r";
  } else if (cp < 0x20) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", cp);
    bytes = buf;
  } else if (cp < 0x80) {
    bytes = std::string(1, static_cast<char>(cp));
  } else if (cp < 0x800) {
    bytes += static_cast<char>(0xC0 | (cp >> 6));
    bytes += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    bytes += static_cast<char>(0xE0 | (cp >> 12));
    bytes += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    bytes += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    bytes += static_cast<char>(0xF0 | (cp >> 18));
    bytes += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    bytes += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    bytes += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return gbnf_literal(bytes);
}

std::string class_text(const Ranges& ranges, bool negated) {
  std::string out = negated ? "[^" : "[";
  for (const auto& [lo, hi] : ranges) {
    out += gbnf_class_char(lo);
    if (hi != lo) {
      out += '-';
      out += gbnf_class_char(hi);
    }
  }
  // A raw control character, quote or backslash is never valid JSON string text.
  if (negated) out += "\\\"\\\\\\x00-\\x1F";
  return out + "]";
}

// A positive class: its JSON-safe part as a [class], with " and \ as escaped literals.
std::string positive_class(const Ranges& ranges) {
  Ranges safe;
  bool quote = false, backslash = false;
  for (auto [lo, hi] : ranges) {
    if (lo <= '"' && hi >= '"') quote = true;
    if (lo <= '\\' && hi >= '\\') backslash = true;
    // Cut out [0, 0x1F], '"', '\\'.
    const std::pair<uint32_t, uint32_t> holes[] = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
    Ranges pieces = {{lo, hi}};
    for (auto [hlo, hhi] : holes) {
      Ranges next;
      for (auto [a, b] : pieces) {
        if (b < hlo || a > hhi) {
          next.emplace_back(a, b);
          continue;
        }
        if (a < hlo) next.emplace_back(a, hlo - 1);
        if (b > hhi) next.emplace_back(hhi + 1, b);
      }
      pieces = std::move(next);
    }
    safe.insert(safe.end(), pieces.begin(), pieces.end());
  }
  std::vector<std::string> alts;
  if (!safe.empty()) alts.push_back(class_text(safe, false));
  if (quote) alts.push_back(json_char_literal('"'));
  if (backslash) alts.push_back(json_char_literal('\\'));
  if (alts.empty()) return "";
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

class RegexParser {
 public:
  explicit RegexParser(std::string_view p) : p_(p) {}

  Result<std::string> run() {
    size_t end = p_.size();
    if (!p_.empty() && p_[0] == '^') i_ = 1;
    if (end > i_ && p_[end - 1] == '$' && (end < 2 || p_[end - 2] != '\\')) --end;
    p_ = p_.substr(0, end);
    HEARTH_ASSIGN_OR_RETURN(std::string out, alternation());
    if (i_ < p_.size()) return error("unexpected ')'");
    return out.empty() ? std::string("\"\"") : out;
  }

 private:
  Status error(const std::string& what) const {
    return InvalidArgument("pattern: " + what + " at offset " + std::to_string(i_));
  }

  Result<std::string> alternation() {
    std::vector<std::string> alts;
    for (;;) {
      HEARTH_ASSIGN_OR_RETURN(std::string seq, sequence());
      alts.push_back(seq.empty() ? "\"\"" : seq);
      if (i_ < p_.size() && p_[i_] == '|') {
        ++i_;
        continue;
      }
      break;
    }
    if (alts.size() == 1) return alts[0];
    std::string out = "(";
    for (size_t k = 0; k < alts.size(); ++k) out += (k ? " | " : "") + alts[k];
    return out + ")";
  }

  Result<std::string> sequence() {
    std::string out;
    while (i_ < p_.size() && p_[i_] != '|' && p_[i_] != ')') {
      HEARTH_ASSIGN_OR_RETURN(std::string a, atom());
      HEARTH_ASSIGN_OR_RETURN(std::string q, quantifier());
      if (a.empty()) continue;
      if (!out.empty()) out += ' ';
      out += q.empty() ? a : "(" + a + ")" + q;
    }
    return out;
  }

  Result<std::string> quantifier() {
    if (i_ >= p_.size()) return std::string();
    std::string q;
    const char c = p_[i_];
    if (c == '*' || c == '+' || c == '?') {
      q = std::string(1, c);
      ++i_;
    } else if (c == '{') {
      const size_t close = p_.find('}', i_);
      if (close == std::string_view::npos) return error("unterminated {m,n}");
      for (size_t k = i_ + 1; k < close; ++k) {
        if (!(p_[k] >= '0' && p_[k] <= '9') && p_[k] != ',') return error("bad {m,n}");
      }
      q = std::string(p_.substr(i_, close - i_ + 1));
      i_ = close + 1;
    } else {
      return std::string();
    }
    if (i_ < p_.size() && p_[i_] == '?') ++i_;  // lazy: the same language
    if (i_ < p_.size() && (p_[i_] == '+' || p_[i_] == '*')) return error("possessive quantifier");
    return q;
  }

  Result<uint32_t> utf8_char() {
    const unsigned char c = static_cast<unsigned char>(p_[i_]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i_ + len > p_.size()) return error("invalid UTF-8");
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < len; ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(p_[i_ + k]) & 0x3F);
    i_ += len;
    return cp;
  }

  Result<uint32_t> hex(size_t n) {
    if (i_ + n > p_.size()) return error("short hex escape");
    uint32_t v = 0;
    for (size_t k = 0; k < n; ++k) {
      const char h = p_[i_++];
      v *= 16;
      if (h >= '0' && h <= '9')
        v += static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f')
        v += static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        v += static_cast<uint32_t>(h - 'A' + 10);
      else
        return error("bad hex escape");
    }
    return v;
  }

  // An escape after '\': either a class (\d \w \s and negations) or one code point.
  struct Escape {
    Ranges ranges;
    bool negated = false;
    bool is_class = false;
    uint32_t cp = 0;
  };
  Result<Escape> escape() {
    if (i_ >= p_.size()) return error("trailing backslash");
    const char e = p_[i_++];
    Escape out;
    static const Ranges kDigit = {{'0', '9'}};
    static const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
    static const Ranges kSpace = {{'\t', '\r'}, {' ', ' '}};
    switch (e) {
      case 'd':
        out = {kDigit, false, true, 0};
        return out;
      case 'D':
        out = {kDigit, true, true, 0};
        return out;
      case 'w':
        out = {kWord, false, true, 0};
        return out;
      case 'W':
        out = {kWord, true, true, 0};
        return out;
      case 's':
        out = {kSpace, false, true, 0};
        return out;
      case 'S':
        out = {kSpace, true, true, 0};
        return out;
      case 'n':
        out.cp = '\n';
        return out;
      case 't':
        out.cp = '\t';
        return out;
      case 'r':
        out.cp = '\r';
        return out;
      case 'f':
        out.cp = '\f';
        return out;
      case 'v':
        out.cp = '\v';
        return out;
      case '0':
        out.cp = 0;
        return out;
      case 'x': {
        HEARTH_ASSIGN_OR_RETURN(out.cp, hex(2));
        return out;
      }
      case 'u': {
        HEARTH_ASSIGN_OR_RETURN(out.cp, hex(4));
        return out;
      }
      case 'b':
      case 'B':
        return error("word boundary \\" + std::string(1, e) + " is not supported");
      default:
        if (e >= '1' && e <= '9') return error("backreference is not supported");
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) {
          return error(std::string("escape \\") + e + " is not supported");
        }
        out.cp = static_cast<unsigned char>(e);
        return out;
    }
  }

  Result<std::string> atom() {
    const char c = p_[i_];
    if (c == '(') {
      ++i_;
      if (i_ < p_.size() && p_[i_] == '?') {
        if (i_ + 1 < p_.size() && p_[i_ + 1] == ':') {
          i_ += 2;
        } else {
          return error("lookaround and named groups are not supported");
        }
      }
      HEARTH_ASSIGN_OR_RETURN(std::string inner, alternation());
      if (i_ >= p_.size() || p_[i_] != ')') return error("missing ')'");
      ++i_;
      return "(" + inner + ")";
    }
    if (c == '[') return char_class();
    if (c == '.') {
      ++i_;
      return class_text({{'\n', '\n'}}, true);
    }
    if (c == '^' || c == '$') return error("anchor inside the pattern is not supported");
    if (c == '*' || c == '+' || c == '?' || c == '{') return error("quantifier without an atom");
    if (c == '\\') {
      ++i_;
      HEARTH_ASSIGN_OR_RETURN(Escape e, escape());
      if (e.is_class) return e.negated ? class_text(e.ranges, true) : positive_class(e.ranges);
      return json_char_literal(e.cp);
    }
    HEARTH_ASSIGN_OR_RETURN(uint32_t cp, utf8_char());
    return json_char_literal(cp);
  }

  Result<std::string> char_class() {
    ++i_;  // '['
    bool negated = false;
    if (i_ < p_.size() && p_[i_] == '^') {
      negated = true;
      ++i_;
    }
    Ranges ranges;
    bool first = true;
    for (;;) {
      if (i_ >= p_.size()) return error("unterminated character class");
      if (p_[i_] == ']' && !first) {
        ++i_;
        break;
      }
      first = false;
      uint32_t lo;
      if (p_[i_] == '\\') {
        ++i_;
        HEARTH_ASSIGN_OR_RETURN(Escape e, escape());
        if (e.is_class) {
          if (e.negated) return error("negated class escape inside [...] is not supported");
          ranges.insert(ranges.end(), e.ranges.begin(), e.ranges.end());
          continue;
        }
        lo = e.cp;
      } else {
        HEARTH_ASSIGN_OR_RETURN(lo, utf8_char());
      }
      uint32_t hi = lo;
      if (i_ + 1 < p_.size() && p_[i_] == '-' && p_[i_ + 1] != ']') {
        ++i_;
        if (p_[i_] == '\\') {
          ++i_;
          HEARTH_ASSIGN_OR_RETURN(Escape e, escape());
          if (e.is_class) return error("class escape as a range end");
          hi = e.cp;
        } else {
          HEARTH_ASSIGN_OR_RETURN(hi, utf8_char());
        }
        if (hi < lo) return error("reversed range in [...]");
      }
      ranges.emplace_back(lo, hi);
    }
    std::sort(ranges.begin(), ranges.end());
    if (negated) return class_text(ranges, true);
    std::string out = positive_class(ranges);
    if (out.empty()) return error("character class without a JSON-safe character");
    return out;
  }

  std::string_view p_;
  size_t i_ = 0;
};

}  // namespace

Result<std::string> regex_to_gbnf(std::string_view pattern) {
  return RegexParser(pattern).run();
}

}  // namespace hearth::grammar
