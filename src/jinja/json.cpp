#include "jinja/json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace hearth::jinja {
namespace {

template <typename J>
Value convert(const J& j, bool literal_strings) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return Value::none();
    case nlohmann::json::value_t::boolean:
      return Value::boolean(j.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value::integer(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const auto u = j.template get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::number(static_cast<double>(u));
      return Value::integer(static_cast<int64_t>(u));
    }
    case nlohmann::json::value_t::number_float:
      return Value::number(j.template get<double>());
    case nlohmann::json::value_t::string: {
      std::string s = j.template get<std::string>();
      return literal_strings ? Value::literal(std::move(s)) : Value::string(std::move(s));
    }
    case nlohmann::json::value_t::array: {
      List items;
      items.reserve(j.size());
      for (const auto& x : j) items.push_back(convert(x, literal_strings));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Dict d;
      d.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) {
        d.emplace_back(Value::string(it.key()), convert(it.value(), literal_strings));
      }
      return Value::dict(std::move(d));
    }
    default:
      return Value::none();
  }
}

void json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out.push_back('"');
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    char buf[16];
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\b') {
      out += "\\b";
    } else if (c == '\f') {
      out += "\\f";
    } else if (c < 0x20 || (ensure_ascii && c == 0x7F)) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else if (c >= 0x80 && ensure_ascii) {
      const size_t len = utf8_offset(s.substr(i), 1);
      uint32_t cp = c;
      if (len > 1) {
        cp = len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
        for (size_t k = 1; k < len; ++k)
          cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
      }
      if (cp >= 0x10000) {
        const uint32_t v = cp - 0x10000;
        std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      } else {
        std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
      }
      out += buf;
      i += len;
      continue;
    } else {
      out.push_back(static_cast<char>(c));
    }
    ++i;
  }
  out.push_back('"');
}

std::string json_float(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return float_repr(d);
}

Status dump(std::string& out, const Value& v, const JsonOptions& o, int level, size_t limit) {
  if (level > 200) return InvalidArgument("tojson: value nests too deeply");
  if (out.size() > limit) return InvalidArgument("tojson: output too large");
  auto newline = [&](int lv) {
    if (o.indent < 0) return;
    out.push_back('\n');
    out.append(static_cast<size_t>(o.indent) * static_cast<size_t>(lv), ' ');
  };
  switch (v.kind()) {
    case Kind::kNone:
      out += "null";
      return OkStatus();
    case Kind::kBool:
      out += v.as_bool() ? "true" : "false";
      return OkStatus();
    case Kind::kInt:
      out += std::to_string(v.as_int());
      return OkStatus();
    case Kind::kFloat:
      out += json_float(v.as_double());
      return OkStatus();
    case Kind::kString:
      json_string(out, v.str(), o.ensure_ascii);
      return OkStatus();
    case Kind::kList:
    case Kind::kTuple: {
      const auto& items = v.items();
      if (items.empty()) {
        out += "[]";
        return OkStatus();
      }
      out.push_back('[');
      newline(level + 1);
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) {
          out += o.item_sep;
          newline(level + 1);
        }
        HEARTH_RETURN_IF_ERROR(dump(out, items[i], o, level + 1, limit));
      }
      newline(level);
      out.push_back(']');
      return OkStatus();
    }
    case Kind::kDict: {
      std::vector<std::pair<std::string, const Value*>> entries;
      for (const auto& [k, val] : v.entries()) {
        std::string key;
        switch (k.kind()) {
          case Kind::kString:
            key = k.str();
            break;
          case Kind::kNone:
            key = "null";
            break;
          case Kind::kBool:
            key = k.as_bool() ? "true" : "false";
            break;
          case Kind::kInt:
            key = std::to_string(k.as_int());
            break;
          case Kind::kFloat:
            key = json_float(k.as_double());
            break;
          default:
            return InvalidArgument(std::string("keys must be str, int, float, bool or None, not ") +
                                   kind_name(k));
        }
        entries.emplace_back(std::move(key), &val);
      }
      if (entries.empty()) {
        out += "{}";
        return OkStatus();
      }
      if (o.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
      }
      out.push_back('{');
      newline(level + 1);
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) {
          out += o.item_sep;
          newline(level + 1);
        }
        json_string(out, entries[i].first, o.ensure_ascii);
        out += o.key_sep;
        HEARTH_RETURN_IF_ERROR(dump(out, *entries[i].second, o, level + 1, limit));
      }
      newline(level);
      out.push_back('}');
      return OkStatus();
    }
    default:
      return InvalidArgument(std::string("Object of type ") + kind_name(v) +
                             " is not JSON serializable");
  }
}

}  // namespace

Value from_json(const nlohmann::json& j, bool literal_strings) {
  return convert(j, literal_strings);
}

Value from_ordered_json(const nlohmann::ordered_json& j, bool literal_strings) {
  return convert(j, literal_strings);
}

Result<std::string> to_json(const Value& v, const JsonOptions& opts) {
  std::string out;
  HEARTH_RETURN_IF_ERROR(dump(out, v, opts, 0, size_t{64} << 20));
  return out;
}

}  // namespace hearth::jinja
