// GBNF text -> GrammarData. The syntax is llama.cpp's: `name ::= alternatives`, quoted
// literals, [character classes] (ranges, ^ negation), `.`, rule references, (groups),
// the postfixes * + ? {m} {m,} {m,n} {,n}, escapes \xHH \uHHHH \UHHHHHHHH \t \n \r \\ \"
// \[ \] \- \^, and # comments. Newlines are plain white space; a rule ends where the next
// `name ::=` starts. Groups and repetitions become helper rules named `<rule>_<n>`.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar_check.h"
#include "grammar/grammar_data.h"
#include "hearth/grammar/grammar.h"

namespace hearth::grammar {
namespace {

constexpr uint32_t kMaxRepeat = 10000;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

class Parser {
 public:
  explicit Parser(std::string_view src) : src_(src) {}

  Result<Grammar> run() {
    skip_space();
    while (i_ < src_.size()) {
      HEARTH_RETURN_IF_ERROR(parse_rule());
      skip_space();
    }
    for (const PRule& r : rules_) {
      if (!r.defined) return error(r.first_use, "undefined rule '" + r.name + "'");
    }
    auto root = ids_.find("root");
    if (root == ids_.end()) return InvalidArgument("the grammar has no 'root' rule");
    auto data = std::make_shared<GrammarData>();
    data->classes = std::move(classes_);
    for (CharClass& c : data->classes) c.finish();
    for (PRule& r : rules_) {
      Rule out;
      out.name = r.name;
      for (const std::vector<Element>& alt : r.alts) {
        out.alts.push_back(static_cast<uint32_t>(data->elems.size()));
        data->elems.insert(data->elems.end(), alt.begin(), alt.end());
        data->elems.push_back(Element{ElemType::kEnd, 0});
      }
      data->rules.push_back(std::move(out));
    }
    data->root = root->second;
    data->index_same_rest();
    HEARTH_RETURN_IF_ERROR(check_left_recursion(*data));
    return Grammar(std::move(data));
  }

 private:
  struct PRule {
    std::string name;
    std::vector<std::vector<Element>> alts;
    bool defined = false;
    size_t first_use = 0;
    uint32_t helpers = 0;  // helper rules made for it so far
  };

  Status error(size_t pos, const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t k = 0; k < pos && k < src_.size(); ++k) {
      if (src_[k] == '\n') {
        ++line;
        col = 1;
      } else if ((static_cast<unsigned char>(src_[k]) & 0xC0) != 0x80) {
        ++col;
      }
    }
    return InvalidArgument("line " + std::to_string(line) + ", column " + std::to_string(col) +
                           ": " + what);
  }

  void skip_space() {
    while (i_ < src_.size()) {
      char c = src_[i_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++i_;
      } else if (c == '#') {
        while (i_ < src_.size() && src_[i_] != '\n') ++i_;
      } else {
        break;
      }
    }
  }

  std::string_view peek_name(size_t at) const {
    size_t e = at;
    while (e < src_.size() && is_name_char(src_[e])) ++e;
    return src_.substr(at, e - at);
  }

  // At `name ::=`?
  bool at_rule_start() const {
    std::string_view name = peek_name(i_);
    if (name.empty()) return false;
    size_t k = i_ + name.size();
    while (k < src_.size() && (src_[k] == ' ' || src_[k] == '\t')) ++k;
    return src_.compare(k, 3, "::=") == 0;
  }

  uint32_t rule_id(std::string_view name, size_t pos) {
    auto it = ids_.find(std::string(name));
    if (it != ids_.end()) return it->second;
    const uint32_t id = static_cast<uint32_t>(rules_.size());
    rules_.push_back(PRule{std::string(name), {}, false, pos, 0});
    ids_.emplace(std::string(name), id);
    return id;
  }

  uint32_t helper_rule(uint32_t owner) {
    std::string name;
    do {
      name = rules_[owner].name + "_" + std::to_string(++rules_[owner].helpers);
    } while (ids_.count(name));
    const uint32_t id = rule_id(name, i_);
    rules_[id].defined = true;
    return id;
  }

  Status parse_rule() {
    const size_t start = i_;
    std::string_view name = peek_name(i_);
    if (name.empty()) return error(i_, "expected a rule name");
    i_ += name.size();
    while (i_ < src_.size() && (src_[i_] == ' ' || src_[i_] == '\t')) ++i_;
    if (src_.compare(i_, 3, "::=") != 0) return error(i_, "expected '::=' after rule name");
    i_ += 3;
    const uint32_t id = rule_id(name, start);
    if (rules_[id].defined)
      return error(start, "rule '" + std::string(name) + "' is defined twice");
    rules_[id].defined = true;
    std::vector<std::vector<Element>> alts;
    HEARTH_RETURN_IF_ERROR(parse_alternatives(id, /*nested=*/false, alts));
    rules_[id].alts = std::move(alts);
    return OkStatus();
  }

  Status parse_alternatives(uint32_t owner, bool nested, std::vector<std::vector<Element>>& alts) {
    for (;;) {
      std::vector<Element> seq;
      HEARTH_RETURN_IF_ERROR(parse_sequence(owner, nested, seq));
      alts.push_back(std::move(seq));
      skip_space();
      if (i_ < src_.size() && src_[i_] == '|') {
        ++i_;
        continue;
      }
      return OkStatus();
    }
  }

  Status parse_sequence(uint32_t owner, bool nested, std::vector<Element>& seq) {
    for (;;) {
      skip_space();
      if (i_ >= src_.size()) {
        if (nested) return error(i_, "expected ')' before the end of the grammar");
        return OkStatus();
      }
      const char c = src_[i_];
      if (c == '|') return OkStatus();
      if (c == ')') {
        if (!nested) return error(i_, "unexpected ')'");
        return OkStatus();
      }
      if (!nested && at_rule_start()) return OkStatus();
      std::vector<Element> term;
      HEARTH_RETURN_IF_ERROR(parse_term(owner, term));
      HEARTH_RETURN_IF_ERROR(parse_postfixes(owner, term));
      seq.insert(seq.end(), term.begin(), term.end());
    }
  }

  Status parse_term(uint32_t owner, std::vector<Element>& term) {
    const char c = src_[i_];
    if (c == '"') {
      const size_t start = i_++;
      for (;;) {
        if (i_ >= src_.size()) return error(start, "unterminated string literal");
        if (src_[i_] == '"') {
          ++i_;
          return OkStatus();
        }
        uint32_t cp = 0;
        HEARTH_RETURN_IF_ERROR(parse_char(cp));
        term.push_back(single_class(cp));
      }
    }
    if (c == '[') return parse_class(term);
    if (c == '.') {
      ++i_;
      CharClass any;
      any.negated = true;
      term.push_back(add_class(std::move(any)));
      return OkStatus();
    }
    if (c == '(') {
      ++i_;
      const uint32_t id = helper_rule(owner);
      std::vector<std::vector<Element>> alts;
      HEARTH_RETURN_IF_ERROR(parse_alternatives(owner, /*nested=*/true, alts));
      if (i_ >= src_.size() || src_[i_] != ')') return error(i_, "expected ')'");
      ++i_;
      rules_[id].alts = std::move(alts);
      term.push_back(Element{ElemType::kRef, id});
      return OkStatus();
    }
    if (is_name_char(c)) {
      std::string_view name = peek_name(i_);
      term.push_back(Element{ElemType::kRef, rule_id(name, i_)});
      i_ += name.size();
      return OkStatus();
    }
    if (c == '<') return error(i_, "token references (<...>) are not supported");
    return error(i_, std::string("unexpected character '") + c + "'");
  }

  Status parse_class(std::vector<Element>& term) {
    const size_t start = i_;
    ++i_;  // '['
    CharClass cls;
    if (i_ < src_.size() && src_[i_] == '^') {
      cls.negated = true;
      ++i_;
    }
    for (;;) {
      if (i_ >= src_.size()) return error(start, "unterminated character class");
      if (src_[i_] == ']') {
        ++i_;
        break;
      }
      uint32_t lo = 0;
      HEARTH_RETURN_IF_ERROR(parse_char(lo));
      uint32_t hi = lo;
      if (i_ + 1 < src_.size() && src_[i_] == '-' && src_[i_ + 1] != ']') {
        const size_t at = i_;
        ++i_;
        HEARTH_RETURN_IF_ERROR(parse_char(hi));
        if (hi < lo) return error(at, "character range is reversed");
      }
      cls.ranges.emplace_back(lo, hi);
    }
    term.push_back(add_class(std::move(cls)));
    return OkStatus();
  }

  Status parse_hex(size_t digits, uint32_t& cp) {
    cp = 0;
    for (size_t k = 0; k < digits; ++k) {
      if (i_ >= src_.size()) return error(i_, "expected a hex digit");
      const char h = src_[i_];
      uint32_t v;
      if (h >= '0' && h <= '9') {
        v = static_cast<uint32_t>(h - '0');
      } else if (h >= 'a' && h <= 'f') {
        v = static_cast<uint32_t>(h - 'a' + 10);
      } else if (h >= 'A' && h <= 'F') {
        v = static_cast<uint32_t>(h - 'A' + 10);
      } else {
        return error(i_, std::string("expected a hex digit, got '") + h + "'");
      }
      cp = cp * 16 + v;
      ++i_;
    }
    if (cp > 0x10FFFF) return error(i_, "code point beyond U+10FFFF");
    return OkStatus();
  }

  // One character of a literal or class: an escape or one UTF-8 encoded code point.
  Status parse_char(uint32_t& cp) {
    const unsigned char c = static_cast<unsigned char>(src_[i_]);
    if (c == '\\') {
      const size_t at = i_;
      if (++i_ >= src_.size()) return error(at, "unfinished escape");
      const char e = src_[i_++];
      switch (e) {
        case 'x':
          return parse_hex(2, cp);
        case 'u':
          return parse_hex(4, cp);
        case 'U':
          return parse_hex(8, cp);
        case 't':
          cp = '\t';
          return OkStatus();
        case 'n':
          cp = '\n';
          return OkStatus();
        case 'r':
          cp = '\r';
          return OkStatus();
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
        case '/':
        case '\'':
          cp = static_cast<unsigned char>(e);
          return OkStatus();
        default:
          return error(at, std::string("unknown escape '\\") + e + "'");
      }
    }
    if (c == '\n' || c == '\r') return error(i_, "line break inside a literal or class");
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i_ + len > src_.size()) return error(i_, "invalid UTF-8");
    cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < len; ++k) {
      const unsigned char b = static_cast<unsigned char>(src_[i_ + k]);
      if ((b & 0xC0) != 0x80) return error(i_, "invalid UTF-8");
      cp = (cp << 6) | (b & 0x3F);
    }
    i_ += len;
    return OkStatus();
  }

  Element add_class(CharClass cls) {
    classes_.push_back(std::move(cls));
    return Element{ElemType::kClass, static_cast<uint32_t>(classes_.size() - 1)};
  }
  Element single_class(uint32_t cp) {
    CharClass cls;
    cls.ranges.emplace_back(cp, cp);
    return add_class(std::move(cls));
  }

  Status parse_count(uint32_t& v) {
    const size_t at = i_;
    uint64_t n = 0;
    while (i_ < src_.size() && src_[i_] >= '0' && src_[i_] <= '9') {
      n = n * 10 + static_cast<uint64_t>(src_[i_] - '0');
      if (n > kMaxRepeat) return error(at, "repetition count above " + std::to_string(kMaxRepeat));
      ++i_;
    }
    if (i_ == at) return error(at, "expected a repetition count");
    v = static_cast<uint32_t>(n);
    return OkStatus();
  }

  void skip_inline_space() {
    while (i_ < src_.size() && (src_[i_] == ' ' || src_[i_] == '\t')) ++i_;
  }

  // A run of postfix operators. Chained *, + and ? fold into one before it is applied
  // (x++ is x+, x?? is x?, any other pair is x*): repeating a repetition directly would
  // make a rule that can re-enter itself without a character, which the left-recursion
  // check rejects.
  Status parse_postfixes(uint32_t owner, std::vector<Element>& term) {
    char pending = 0;  // the folded run of *, + and ? not applied yet
    auto apply_pending = [&] {
      if (pending != 0) repeat(owner, term, pending == '+' ? 1 : 0, 1, pending != '?');
      pending = 0;
    };
    for (;;) {
      skip_inline_space();
      const char c = i_ < src_.size() ? src_[i_] : '\0';
      if (c == '*' || c == '+' || c == '?') {
        pending = pending == 0 || (pending == c && c != '*') ? c : '*';
        ++i_;
        continue;
      }
      apply_pending();
      if (c != '{') return OkStatus();
      const size_t at = i_;
      ++i_;
      uint32_t min = 0, max = 0;
      bool unbounded = false;
      skip_inline_space();
      if (i_ < src_.size() && src_[i_] != ',') HEARTH_RETURN_IF_ERROR(parse_count(min));
      skip_inline_space();
      if (i_ < src_.size() && src_[i_] == ',') {
        ++i_;
        skip_inline_space();
        if (i_ < src_.size() && src_[i_] == '}') {
          unbounded = true;
        } else {
          HEARTH_RETURN_IF_ERROR(parse_count(max));
          if (max < min) return error(at, "repetition {m,n} with n < m");
        }
      } else {
        max = min;
      }
      skip_inline_space();
      if (i_ >= src_.size() || src_[i_] != '}') return error(i_, "expected '}'");
      ++i_;
      repeat(owner, term, min, max, unbounded);
    }
  }

  // term{min,max} (max ignored when unbounded) as a sequence of elements.
  void repeat(uint32_t owner, std::vector<Element>& term, uint32_t min, uint32_t max,
              bool unbounded) {
    Element x;
    if (term.size() == 1) {
      x = term[0];
    } else {
      const uint32_t id = helper_rule(owner);
      rules_[id].alts = {term};
      x = Element{ElemType::kRef, id};
    }
    std::vector<Element> out(min, x);
    if (unbounded) {
      // r ::= x r | (empty)
      const uint32_t r = helper_rule(owner);
      rules_[r].alts = {{x, Element{ElemType::kRef, r}}, {}};
      out.push_back(Element{ElemType::kRef, r});
    } else if (max > min) {
      // o1 ::= x | (empty);  ok ::= x o(k-1) | (empty)
      uint32_t prev = 0;
      for (uint32_t k = 1; k <= max - min; ++k) {
        const uint32_t o = helper_rule(owner);
        if (k == 1) {
          rules_[o].alts = {{x}, {}};
        } else {
          rules_[o].alts = {{x, Element{ElemType::kRef, prev}}, {}};
        }
        prev = o;
      }
      out.push_back(Element{ElemType::kRef, prev});
    }
    term = std::move(out);
  }

  std::string_view src_;
  size_t i_ = 0;
  std::vector<PRule> rules_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<CharClass> classes_;
};

}  // namespace

Result<Grammar> parse_gbnf(std::string_view text) {
  return Parser(text).run();
}

size_t Grammar::rule_count() const {
  return data_->rules.size();
}

}  // namespace hearth::grammar
