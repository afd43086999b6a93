#include "jinja/lexer.h"

#include "jinja/strings.h"

#include <cstdint>

namespace hearth::jinja {

std::string at(int line, int column, std::string_view what) {
  return std::string("line ")
      .append(std::to_string(line))
      .append(", column ")
      .append(std::to_string(column))
      .append(": ")
      .append(what);
}

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c);
}

int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Python's unicode-escape decoding of a string literal's body (what Jinja2 applies).
Result<std::string> decode_escapes(std::string_view body, int line, int column) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (c != '\\' || i + 1 == body.size()) {
      out.push_back(c);
      continue;
    }
    const char e = body[++i];
    switch (e) {
      case '\n':
        break;  // line continuation
      case '\\':
        out.push_back('\\');
        break;
      case '\'':
        out.push_back('\'');
        break;
      case '"':
        out.push_back('"');
        break;
      case 'a':
        out.push_back('\a');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'v':
        out.push_back('\v');
        break;
      case 'x':
      case 'u':
      case 'U': {
        const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (size_t k = 0; k < n; ++k) {
          const int h = i + 1 + k < body.size() ? hex_value(body[i + 1 + k]) : -1;
          if (h < 0) {
            return InvalidArgument(at(
                line, column, "truncated \\" + std::string(1, e) + " escape in a string literal"));
          }
          cp = cp * 16 + static_cast<uint32_t>(h);
        }
        if (cp > 0x10FFFF) {
          return InvalidArgument(at(line, column, "illegal Unicode character in a string literal"));
        }
        append_utf8(out, cp);
        i += n;
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          uint32_t cp = static_cast<uint32_t>(e - '0');
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7';
               ++k) {
            cp = cp * 8 + static_cast<uint32_t>(body[++i] - '0');
          }
          append_utf8(out, cp);
        } else {
          out.push_back('\\');
          out.push_back(e);
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string src) : src_(std::move(src)) {}

  Result<std::vector<Token>> run() {
    while (pos_ < src_.size()) {
      const size_t open = find_tag(pos_);
      if (open == std::string::npos) {
        emit_data(src_.substr(pos_), pos_);
        pos_ = src_.size();
        break;
      }
      const char kind = src_[open + 1];  // '{', '%' or '#'
      const char mod = open + 2 < src_.size() ? src_[open + 2] : 0;
      std::string data = src_.substr(pos_, open - pos_);
      if (mod == '-') {
        rstrip_all(data);
      } else if (kind != '{' && mod != '+') {
        lstrip_line(data, pos_);
      }
      emit_data(std::move(data), pos_);
      pos_ = open;
      Status s = kind == '#' ? comment() : kind == '%' ? block() : variable();
      if (!s.ok()) return s;
    }
    Token eof;
    eof.type = Tok::kEof;
    position(src_.size(), &eof.line, &eof.column);
    tokens_.push_back(eof);
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return std::string::npos;
  }

  void position(size_t offset, int* line, int* column) {
    // Incremental: offsets only grow during lexing, except for rare re-reads.
    if (offset < line_pos_) {
      line_pos_ = 0;
      line_ = 1;
      line_start_ = 0;
    }
    for (; line_pos_ < offset && line_pos_ < src_.size(); ++line_pos_) {
      if (src_[line_pos_] == '\n') {
        ++line_;
        line_start_ = line_pos_ + 1;
      }
    }
    *line = line_;
    *column = static_cast<int>(offset - line_start_) + 1;
  }

  void push(Tok type, std::string text, size_t offset) {
    Token t;
    t.type = type;
    t.text = std::move(text);
    position(offset, &t.line, &t.column);
    tokens_.push_back(std::move(t));
  }

  void emit_data(std::string data, size_t offset) {
    if (!data.empty()) push(Tok::kData, std::move(data), offset);
  }

  static void rstrip_all(std::string& s) {
    while (!s.empty() && is_space(s.back())) s.pop_back();
  }

  // lstrip_blocks: spaces and tabs between the start of a line and a block or comment
  // tag go, when nothing else precedes the tag on that line.
  void lstrip_line(std::string& data, size_t data_offset) const {
    const size_t nl = data.rfind('\n');
    size_t start;
    if (nl != std::string::npos) {
      start = nl + 1;
    } else {
      if (!(data_offset == 0 || src_[data_offset - 1] == '\n')) return;
      start = 0;
    }
    for (size_t i = start; i < data.size(); ++i) {
      if (data[i] != ' ' && data[i] != '\t') return;
    }
    data.resize(start);
  }

  // After a block or comment end: "-" strips all following whitespace, otherwise
  // trim_blocks drops one newline unless the tag ended with "+".
  void after_block_end(char mod) {
    if (mod == '-') {
      while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
    } else if (mod != '+' && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
    }
  }

  Status comment() {
    const size_t start = pos_;
    const size_t end = src_.find("#}", pos_ + 2);
    if (end == std::string::npos) {
      int l, c;
      position(start, &l, &c);
      return InvalidArgument(at(l, c, "unexpected end of template: missing end of comment tag"));
    }
    const char mod = end > start + 2 ? src_[end - 1] : 0;
    pos_ = end + 2;
    after_block_end(mod == '-' || mod == '+' ? mod : 0);
    return OkStatus();
  }

  // {% raw %}...{% endraw %}: the body is data, verbatim.
  bool try_raw() {
    size_t i = pos_ + 2;
    if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
    while (i < src_.size() && is_space(src_[i])) ++i;
    if (src_.compare(i, 3, "raw") != 0 || (i + 3 < src_.size() && is_name_char(src_[i + 3]))) {
      return false;
    }
    i += 3;
    while (i < src_.size() && is_space(src_[i])) ++i;
    char open_mod = 0;
    if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) open_mod = src_[i++];
    if (src_.compare(i, 2, "%}") != 0) return false;
    size_t body = i + 2;
    if (open_mod == '-') {
      while (body < src_.size() && is_space(src_[body])) ++body;
    } else if (open_mod != '+' && body < src_.size() && src_[body] == '\n') {
      ++body;
    }
    // Find {%[-+]? endraw [-+]?%}
    for (size_t j = src_.find("{%", body); j != std::string::npos; j = src_.find("{%", j + 2)) {
      size_t k = j + 2;
      const char close_mod_before = k < src_.size() ? src_[k] : 0;
      if (close_mod_before == '-' || close_mod_before == '+') ++k;
      while (k < src_.size() && is_space(src_[k])) ++k;
      if (src_.compare(k, 6, "endraw") != 0) continue;
      k += 6;
      while (k < src_.size() && is_space(src_[k])) ++k;
      char end_mod = 0;
      if (k < src_.size() && (src_[k] == '-' || src_[k] == '+')) end_mod = src_[k++];
      if (src_.compare(k, 2, "%}") != 0) continue;
      std::string text = src_.substr(body, j - body);
      if (close_mod_before == '-') {
        rstrip_all(text);
      } else if (close_mod_before != '+') {
        lstrip_line(text, body);
      }
      emit_data(std::move(text), body);
      pos_ = k + 2;
      after_block_end(end_mod);
      return true;
    }
    return false;
  }

  Status block() {
    if (try_raw()) return OkStatus();
    push(Tok::kBlockBegin, "{%", pos_);
    pos_ += 2;
    if (pos_ < src_.size() && (src_[pos_] == '-' || src_[pos_] == '+')) ++pos_;
    return expression(true);
  }

  Status variable() {
    push(Tok::kVarBegin, "{{", pos_);
    pos_ += 2;
    if (pos_ < src_.size() && (src_[pos_] == '-' || src_[pos_] == '+')) ++pos_;
    return expression(false);
  }

  Status error_here(std::string_view what) {
    int l, c;
    position(pos_, &l, &c);
    return InvalidArgument(at(l, c, what));
  }

  // Tokens inside {{ }} or {% %} up to the matching end.
  Status expression(bool block) {
    const char* end = block ? "%}" : "}}";
    std::vector<char> brackets;
    while (true) {
      while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
      if (pos_ >= src_.size()) {
        return error_here(block ? "unexpected end of template: missing '%}'"
                                : "unexpected end of template: missing '}}'");
      }
      if (brackets.empty()) {
        char mod = 0;
        size_t p = pos_;
        if (src_[p] == '-' || src_[p] == '+') {
          if (src_.compare(p + 1, 2, end) == 0) mod = src_[p++];
        }
        if (src_.compare(p, 2, end) == 0) {
          if (mod == '+' && !block) return error_here("unexpected '+'");
          push(block ? Tok::kBlockEnd : Tok::kVarEnd, end, pos_);
          pos_ = p + 2;
          if (block) {
            after_block_end(mod);
          } else if (mod == '-') {
            while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
          }
          return OkStatus();
        }
      }
      const char c = src_[pos_];
      const size_t start = pos_;
      if (is_name_start(c) || static_cast<unsigned char>(c) >= 0x80) {
        while (pos_ < src_.size() &&
               (is_name_char(src_[pos_]) || static_cast<unsigned char>(src_[pos_]) >= 0x80)) {
          ++pos_;
        }
        push(Tok::kName, src_.substr(start, pos_ - start), start);
      } else if (is_digit(c)) {
        HEARTH_RETURN_IF_ERROR(number());
      } else if (c == '\'' || c == '"') {
        HEARTH_RETURN_IF_ERROR(string_literal());
      } else {
        static const char* kOps[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/",
                                     "*",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                     ">",  "<",  "=",  ".",  ":",  "|",  ",", ";"};
        std::string op;
        for (const char* o : kOps) {
          if (src_.compare(pos_, std::char_traits<char>::length(o), o) == 0) {
            op = o;
            break;
          }
        }
        if (op.empty()) {
          return error_here(std::string("unexpected char '").append(1, c).append("'"));
        }
        if (op == "(" || op == "[" || op == "{") {
          if (brackets.size() >= 256) return error_here("brackets nested too deeply");
          brackets.push_back(op == "(" ? ')' : op == "[" ? ']' : '}');
        } else if (op == ")" || op == "]" || op == "}") {
          if (brackets.empty() || brackets.back() != op[0]) {
            return error_here("unexpected '" + op + "'");
          }
          brackets.pop_back();
        }
        pos_ += op.size();
        push(Tok::kOp, op, start);
      }
    }
  }

  Status number() {
    const size_t start = pos_;
    auto digits = [&] {
      while (pos_ < src_.size() &&
             (is_digit(src_[pos_]) ||
              (src_[pos_] == '_' && pos_ + 1 < src_.size() && is_digit(src_[pos_ + 1])))) {
        ++pos_;
      }
    };
    digits();
    bool is_float = false;
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && is_digit(src_[pos_ + 1])) {
      is_float = true;
      ++pos_;
      digits();
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t p = pos_ + 1;
      if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
      if (p < src_.size() && is_digit(src_[p])) {
        is_float = true;
        pos_ = p;
        digits();
      }
    }
    std::string text;
    for (size_t i = start; i < pos_; ++i) {
      if (src_[i] != '_') text.push_back(src_[i]);
    }
    push(is_float ? Tok::kFloat : Tok::kInt, std::move(text), start);
    return OkStatus();
  }

  Status string_literal() {
    const size_t start = pos_;
    const char q = src_[pos_++];
    size_t i = pos_;
    while (i < src_.size() && src_[i] != q) {
      if (src_[i] == '\\') ++i;
      ++i;
    }
    if (i >= src_.size()) {
      pos_ = start;
      return error_here("unexpected end of template: unterminated string");
    }
    int l, c;
    position(start, &l, &c);
    auto decoded = decode_escapes(std::string_view(src_).substr(pos_, i - pos_), l, c);
    if (!decoded.ok()) return decoded.status();
    pos_ = i + 1;
    push(Tok::kString, std::move(decoded).value(), start);
    return OkStatus();
  }

  std::string src_;
  size_t pos_ = 0;
  std::vector<Token> tokens_;
  size_t line_pos_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
};

// Newlines (CRLF, CR) become "\n"; one newline at the very end is dropped.
std::string normalize(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

Result<std::vector<Token>> tokenize(std::string_view source) {
  return Lexer(normalize(source)).run();
}

}  // namespace hearth::jinja
