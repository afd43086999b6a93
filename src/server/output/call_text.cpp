#include "server/output/call_text.h"

#include <cctype>

namespace hearth::server {
namespace {

using nlohmann::ordered_json;

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

bool is_ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_ident(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}

// A recursive-descent reader of Python literals, producing JSON values.
class PyReader {
 public:
  explicit PyReader(std::string_view s) : s_(s) {}

  bool at_end() {
    pos_ = skip_blank(s_, pos_);
    return pos_ >= s_.size();
  }
  bool eat(char c) {
    pos_ = skip_blank(s_, pos_);
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::optional<std::string> ident() {
    pos_ = skip_blank(s_, pos_);
    if (pos_ >= s_.size() || !is_ident_start(s_[pos_])) return std::nullopt;
    const size_t b = pos_;
    while (pos_ < s_.size() && is_ident(s_[pos_])) ++pos_;
    return std::string(s_.substr(b, pos_ - b));
  }
  std::optional<ordered_json> value(int depth = 0) {
    if (depth > 64) return std::nullopt;
    pos_ = skip_blank(s_, pos_);
    if (pos_ >= s_.size()) return std::nullopt;
    const char c = s_[pos_];
    if (c == '"' || c == '\'') return string();
    if (c == '[' || c == '(') {
      const char close = c == '[' ? ']' : ')';
      ++pos_;
      ordered_json arr = ordered_json::array();
      if (eat(close)) return arr;
      do {
        auto v = value(depth + 1);
        if (!v) return std::nullopt;
        arr.push_back(std::move(*v));
      } while (eat(','));
      if (!eat(close)) return std::nullopt;
      return arr;
    }
    if (c == '{') {
      ++pos_;
      ordered_json obj = ordered_json::object();
      if (eat('}')) return obj;
      do {
        auto k = value(depth + 1);
        if (!k || !k->is_string() || !eat(':')) return std::nullopt;
        auto v = value(depth + 1);
        if (!v) return std::nullopt;
        obj[k->get<std::string>()] = std::move(*v);
      } while (eat(','));
      if (!eat('}')) return std::nullopt;
      return obj;
    }
    if (c == '-' || c == '+' || std::isdigit(static_cast<unsigned char>(c))) return number();
    auto word = ident();
    if (!word) return std::nullopt;
    if (*word == "True" || *word == "true") return ordered_json(true);
    if (*word == "False" || *word == "false") return ordered_json(false);
    if (*word == "None" || *word == "null") return ordered_json(nullptr);
    return std::nullopt;
  }

 private:
  std::optional<ordered_json> string() {
    const char q = s_[pos_++];
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != q) {
      char c = s_[pos_++];
      if (c == '\\' && pos_ < s_.size()) {
        const char e = s_[pos_++];
        switch (e) {
          case 'n':
            c = '\n';
            break;
          case 't':
            c = '\t';
            break;
          case 'r':
            c = '\r';
            break;
          case '0':
            c = '\0';
            break;
          default:
            c = e;
            break;  // \\, \', \" and anything else: the character itself
        }
      }
      out += c;
    }
    if (pos_ >= s_.size()) return std::nullopt;
    ++pos_;  // closing quote
    return ordered_json(std::move(out));
  }
  std::optional<ordered_json> number() {
    const size_t b = pos_;
    if (s_[pos_] == '-' || s_[pos_] == '+') ++pos_;
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.' ||
            ((s_[pos_] == '-' || s_[pos_] == '+') && (s_[pos_ - 1] == 'e' || s_[pos_ - 1] == 'E'))))
      ++pos_;
    std::string text(s_.substr(b, pos_ - b));
    if (!text.empty() && text[0] == '+') text.erase(0, 1);
    auto v = parse_json(text);
    if (!v || !v->is_number()) return std::nullopt;
    return v;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

size_t skip_blank(std::string_view s, size_t pos) {
  while (pos < s.size() && is_blank(s[pos])) ++pos;
  return pos;
}

size_t bracketed_end(std::string_view s, size_t pos, bool python) {
  std::string stack;
  char quote = 0;
  for (size_t i = pos; i < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
      continue;
    }
    if (c == '"' || (python && c == '\'')) {
      quote = c;
    } else if (c == '{' || c == '[' || (python && c == '(')) {
      stack += c == '{' ? '}' : c == '[' ? ']' : ')';
    } else if (c == '}' || c == ']' || (python && c == ')')) {
      if (stack.empty() || stack.back() != c) return i + 1;  // mismatched: ends here (invalid)
      stack.pop_back();
      if (stack.empty()) return i + 1;
    }
  }
  return std::string_view::npos;
}

std::optional<ordered_json> parse_json(std::string_view text) {
  ordered_json v = ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) return std::nullopt;
  return v;
}

std::optional<ToolCall> call_from_json(const ordered_json& value) {
  if (!value.is_object()) return std::nullopt;
  if (value.contains("function") && value["function"].is_object()) {
    auto call = call_from_json(value["function"]);
    if (call && value.contains("id") && value["id"].is_string())
      call->id = value["id"].get<std::string>();
    return call;
  }
  auto name = value.find("name");
  if (name == value.end() || !name->is_string() || name->get<std::string>().empty())
    return std::nullopt;
  const ordered_json* args = nullptr;
  for (const char* key : {"arguments", "parameters"}) {
    if (value.contains(key)) args = &value[key];
  }
  ToolCall call;
  call.name = name->get<std::string>();
  if (value.contains("id") && value["id"].is_string()) call.id = value["id"].get<std::string>();
  if (!args || args->is_null()) {
    call.arguments = "{}";
  } else if (args->is_object()) {
    call.arguments = args->dump();
  } else if (args->is_string()) {
    auto inner = parse_json(args->get<std::string>());
    if (!inner || !inner->is_object()) return std::nullopt;
    call.arguments = inner->dump();
  } else {
    return std::nullopt;
  }
  return call;
}

std::optional<std::vector<ToolCall>> calls_from_json_text(std::string_view text) {
  auto v = parse_json(text);
  if (!v) return std::nullopt;
  std::vector<ToolCall> calls;
  if (v->is_array()) {
    if (v->empty()) return std::nullopt;
    for (const auto& item : *v) {
      auto call = call_from_json(item);
      if (!call) return std::nullopt;
      calls.push_back(std::move(*call));
    }
    return calls;
  }
  auto call = call_from_json(*v);
  if (!call) return std::nullopt;
  calls.push_back(std::move(*call));
  return calls;
}

std::optional<std::vector<ToolCall>> parse_pythonic_calls(std::string_view text) {
  PyReader r(text);
  const bool bracketed = r.eat('[');
  std::vector<ToolCall> calls;
  do {
    auto name = r.ident();
    if (!name || !r.eat('(')) return std::nullopt;
    ordered_json args = ordered_json::object();
    if (!r.eat(')')) {
      do {
        auto key = r.ident();
        if (!key || !r.eat('=')) return std::nullopt;
        auto v = r.value();
        if (!v) return std::nullopt;
        args[*key] = std::move(*v);
      } while (r.eat(','));
      if (!r.eat(')')) return std::nullopt;
    }
    calls.push_back({"", *name, args.dump()});
  } while (r.eat(','));
  if (bracketed && !r.eat(']')) return std::nullopt;
  if (!r.at_end()) return std::nullopt;
  return calls;
}

}  // namespace hearth::server
