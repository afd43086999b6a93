#include "jinja/value.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace hearth::jinja {

const Value* Value::find(std::string_view key) const {
  if (!dict_) return nullptr;
  for (const auto& [k, v] : *dict_) {
    if (k.kind_ == Kind::kString && k.str_ == key) return &v;
  }
  return nullptr;
}

const Value* Value::find(const Value& key) const {
  if (!dict_) return nullptr;
  for (const auto& [k, v] : *dict_) {
    if (equals(k, key)) return &v;
  }
  return nullptr;
}

const void* Value::identity() const {
  if (list_) return list_.get();
  if (dict_) return dict_.get();
  if (fn_) return fn_.get();
  return nullptr;
}

const Value* CallArgs::get(size_t pos, std::string_view name) const {
  for (const auto& [k, v] : kwargs) {
    if (k == name) return &v;
  }
  if (pos < args.size()) return &args[pos];
  return nullptr;
}

std::string undefined_message(const Value& u) {
  return u.str().empty() ? std::string("an undefined value was used") : u.str();
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
    case Kind::kInt:
      return v.as_int() != 0;
    case Kind::kFloat:
      return v.as_double() != 0.0;
    case Kind::kString:
      return !v.str().empty();
    case Kind::kList:
    case Kind::kTuple:
      return !v.items().empty();
    case Kind::kDict:
      return !v.entries().empty();
    case Kind::kNamespace:
    case Kind::kCallable:
      return true;
  }
  return false;
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.is_sequence() && b.is_sequence()) {
    if (a.kind() != b.kind()) return false;  // [1] != (1,)
    const auto& x = a.items();
    const auto& y = b.items();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!equals(x[i], y[i])) return false;
    }
    return true;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      return a.str() == b.str();
    case Kind::kDict: {
      const auto& x = a.entries();
      const auto& y = b.entries();
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x) {
        const Value* other = b.find(k);
        if (!other || !equals(v, *other)) return false;
      }
      return true;
    }
    default:
      return a.identity() == b.identity();
  }
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then Python's layout: exponent form when the decimal
  // exponent is < -4 or >= 16.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool neg = false;
  if (!sci.empty() && sci[0] == '-') {
    neg = true;
    sci.erase(0, 1);
  }
  const size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  const int exp = std::atoi(sci.c_str() + e + 1);
  std::string digits;
  for (char c : mant) {
    if (c != '.') digits.push_back(c);
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out = neg ? "-" : "";
  if (exp < -4 || exp >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out.append(".").append(digits.substr(1));
    char eb[16];
    std::snprintf(eb, sizeof(eb), "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += eb;
    return out;
  }
  if (exp < 0) {
    out.append("0.").append(static_cast<size_t>(-exp - 1), '0').append(digits);
    return out;
  }
  const size_t int_digits = static_cast<size_t>(exp) + 1;
  if (digits.size() <= int_digits) {
    out.append(digits).append(int_digits - digits.size(), '0').append(".0");
  } else {
    out.append(digits.substr(0, int_digits)).append(".").append(digits.substr(int_digits));
  }
  return out;
}

namespace {

// Decodes one UTF-8 code point at i; invalid bytes decode as themselves (len 1).
uint32_t decode_utf8(std::string_view s, size_t i, size_t* len) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) {
    *len = 1;
    return b;
  }
  uint32_t cp = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
  for (size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) {
      *len = 1;
      return b;
    }
    cp = (cp << 6) | (c & 0x3F);
  }
  *len = n;
  return cp;
}

// Python's str.isprintable for the code points chat text carries: controls, format
// characters and separators other than the space are not printable.
bool printable(uint32_t cp) {
  if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) return false;
  if (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F)) {
    return false;
  }
  if ((cp >= 0x205F && cp <= 0x2064) || cp == 0x3000 || cp == 0xFEFF) return false;
  if ((cp >= 0xE000 && cp <= 0xF8FF) || cp >= 0xF0000) return false;
  return true;
}

std::string string_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (size_t i = 0; i < s.size();) {
    size_t len = 1;
    const uint32_t cp = decode_utf8(s, i, &len);
    char buf[16];
    if (cp == static_cast<uint32_t>(quote) || cp == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(cp));
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (!printable(cp)) {
      if (cp < 0x100) {
        std::snprintf(buf, sizeof(buf), "\\x%02x", cp);
      } else if (cp < 0x10000) {
        std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
      } else {
        std::snprintf(buf, sizeof(buf), "\\U%08x", cp);
      }
      out += buf;
    } else {
      out.append(s.substr(i, len));
    }
    i += len;
  }
  out.push_back(quote);
  return out;
}

}  // namespace

std::string to_repr(const Value& v) {
  switch (v.kind()) {
    case Kind::kString:
      return string_repr(v.str());
    case Kind::kList:
    case Kind::kTuple: {
      const bool tuple = v.kind() == Kind::kTuple;
      std::string out = tuple ? "(" : "[";
      const auto& items = v.items();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        out += to_repr(items[i]);
      }
      if (tuple && items.size() == 1) out += ",";
      out += tuple ? ")" : "]";
      return out;
    }
    case Kind::kDict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, val] : v.entries()) {
        if (!first) out += ", ";
        first = false;
        out.append(to_repr(k)).append(": ").append(to_repr(val));
      }
      return out + "}";
    }
    default:
      return to_str(v);
  }
}

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return "";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return v.as_bool() ? "True" : "False";
    case Kind::kInt:
      return std::to_string(v.as_int());
    case Kind::kFloat:
      return float_repr(v.as_double());
    case Kind::kString:
      return v.str();
    case Kind::kList:
    case Kind::kTuple:
    case Kind::kDict:
      return to_repr(v);
    case Kind::kNamespace:
      return "<Namespace>";
    case Kind::kCallable:
      return std::string("<function ").append(v.callable_name()).append(">");
  }
  return "";
}

const char* kind_name(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return "list";
    case Kind::kTuple:
      return "tuple";
    case Kind::kDict:
      return "dict";
    case Kind::kNamespace:
      return "Namespace";
    case Kind::kCallable:
      return "function";
  }
  return "object";
}

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    size_t len = 1;
    decode_utf8(s, i, &len);
    i += len;
    ++n;
  }
  return n;
}

size_t utf8_offset(std::string_view s, size_t index) {
  size_t i = 0;
  for (size_t n = 0; n < index && i < s.size(); ++n) {
    size_t len = 1;
    decode_utf8(s, i, &len);
    i += len;
  }
  return i;
}

Value substring(const Value& s, size_t byte_begin, size_t byte_end) {
  std::vector<TextRange> ranges;
  for (const auto& r : s.ranges()) {
    const size_t b = std::max(r.begin, byte_begin);
    const size_t e = std::min(r.end, byte_end);
    if (b < e) ranges.push_back({b - byte_begin, e - byte_begin});
  }
  return Value::string_with_ranges(s.str().substr(byte_begin, byte_end - byte_begin),
                                   std::move(ranges));
}

Value derived_string(std::string text, std::initializer_list<const Value*> inputs) {
  bool literal = true;
  for (const Value* v : inputs) {
    if (v && v->is_string() && !v->str().empty() && !v->fully_literal()) literal = false;
    if (v && !v->is_string()) literal = false;
  }
  return literal ? Value::literal(std::move(text)) : Value::string(std::move(text));
}

void RangedText::add_range(size_t begin, size_t end) {
  if (begin >= end) return;
  if (!ranges_.empty() && ranges_.back().end == begin) {
    ranges_.back().end = end;
  } else {
    ranges_.push_back({begin, end});
  }
}

void RangedText::append(const Value& v) {
  if (!v.is_string()) {
    append_plain(to_str(v));
    return;
  }
  const size_t base = text_.size();
  text_ += v.str();
  for (const auto& r : v.ranges()) add_range(base + r.begin, base + r.end);
}

void RangedText::append_literal(std::string_view s) {
  const size_t base = text_.size();
  text_ += s;
  add_range(base, text_.size());
}

void RangedText::append_plain(std::string_view s) {
  text_ += s;
}

Value RangedText::take() {
  return Value::string_with_ranges(std::move(text_), std::move(ranges_));
}

}  // namespace hearth::jinja
