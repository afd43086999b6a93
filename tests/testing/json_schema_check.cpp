#include "testing/json_schema_check.h"

#include <cmath>
#include <regex>

namespace hearth::testing {
namespace {

using nlohmann::json;

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool is_type(const json& v, const std::string& t) {
  if (t == "string") return v.is_string();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "number") return v.is_number();
  if (t == "integer") {
    if (v.is_number_integer()) return true;
    return v.is_number_float() && std::floor(v.get<double>()) == v.get<double>();
  }
  return false;
}

const json* resolve(const json& root, const std::string& ref) {
  const json* at = &root;
  size_t i = 1;
  while (i < ref.size()) {
    size_t j = ref.find('/', i + 1);
    if (j == std::string::npos) j = ref.size();
    std::string key = ref.substr(i + 1, j - i - 1);
    if (!at->is_object() || !at->contains(key)) return nullptr;
    at = &(*at)[key];
    i = j;
  }
  return at;
}

std::string check(const json& v, const json& s, const json& root, const std::string& where) {
  if (s.is_boolean()) return s.get<bool>() ? "" : where + ": schema false";
  if (s.contains("nullable") && s["nullable"].get<bool>() && v.is_null()) return "";
  if (s.contains("$ref")) {
    const json* t = resolve(root, s["$ref"].get<std::string>());
    if (!t) return where + ": unresolvable $ref";
    std::string e = check(v, *t, root, where);
    if (!e.empty()) return e;
  }
  if (s.contains("type")) {
    bool ok = false;
    if (s["type"].is_string()) {
      ok = is_type(v, s["type"].get<std::string>());
    } else {
      for (const json& t : s["type"]) ok = ok || is_type(v, t.get<std::string>());
    }
    if (!ok) return where + ": not of type " + s["type"].dump();
  }
  if (s.contains("const") && s["const"] != v) return where + ": not the const";
  if (s.contains("enum")) {
    bool found = false;
    for (const json& e : s["enum"]) found = found || e == v;
    if (!found) return where + ": not in enum";
  }
  if (s.contains("anyOf")) {
    bool any = false;
    for (const json& sub : s["anyOf"]) any = any || check(v, sub, root, where).empty();
    if (!any) return where + ": no anyOf branch matches";
  }
  if (s.contains("oneOf")) {
    int n = 0;
    for (const json& sub : s["oneOf"]) n += check(v, sub, root, where).empty();
    if (n != 1) return where + ": " + std::to_string(n) + " oneOf branches match";
  }
  if (s.contains("allOf")) {
    for (const json& sub : s["allOf"]) {
      std::string e = check(v, sub, root, where);
      if (!e.empty()) return e;
    }
  }
  if (v.is_string()) {
    const std::string str = v.get<std::string>();
    const size_t n = code_points(str);
    if (s.contains("minLength") && n < s["minLength"].get<size_t>()) return where + ": too short";
    if (s.contains("maxLength") && n > s["maxLength"].get<size_t>()) return where + ": too long";
    if (s.contains("pattern") && !std::regex_search(str, std::regex(s["pattern"].get<std::string>(),
                                                                    std::regex::ECMAScript))) {
      return where + ": pattern mismatch";
    }
    if (s.contains("format")) {
      static const std::map<std::string, std::string> kFormats = {
          {"date", R"(\d{4}-\d{2}-\d{2})"},
          {"time", R"(\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2}))"},
          {"date-time", R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2}))"},
          {"uuid",
           R"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"}};
      auto f = kFormats.find(s["format"].get<std::string>());
      if (f == kFormats.end() || !std::regex_match(str, std::regex(f->second))) {
        return where + ": not a " + s["format"].get<std::string>();
      }
    }
  }
  if (v.is_number()) {
    const double x = v.get<double>();
    if (s.contains("minimum") && x < s["minimum"].get<double>()) return where + ": below minimum";
    if (s.contains("maximum") && x > s["maximum"].get<double>()) return where + ": above maximum";
    if (s.contains("exclusiveMinimum") && x <= s["exclusiveMinimum"].get<double>())
      return where + ": not above exclusiveMinimum";
    if (s.contains("exclusiveMaximum") && x >= s["exclusiveMaximum"].get<double>())
      return where + ": not below exclusiveMaximum";
  }
  if (v.is_object()) {
    const json props = s.value("properties", json::object());
    if (s.contains("required")) {
      for (const json& r : s["required"]) {
        if (!v.contains(r.get<std::string>())) return where + ": missing " + r.dump();
      }
    }
    for (const auto& [k, x] : v.items()) {
      if (props.contains(k)) {
        std::string e = check(x, props[k], root, where + "/" + k);
        if (!e.empty()) return e;
      } else if (s.contains("additionalProperties")) {
        std::string e = check(x, s["additionalProperties"], root, where + "/" + k);
        if (!e.empty()) return where + ": additional property " + k + ": " + e;
      }
    }
  }
  if (v.is_array()) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>())
      return where + ": too few items";
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>())
      return where + ": too many items";
    size_t first = 0;
    if (s.contains("prefixItems")) {
      const json& p = s["prefixItems"];
      for (size_t k = 0; k < p.size() && k < v.size(); ++k) {
        std::string e = check(v[k], p[k], root, where + "/" + std::to_string(k));
        if (!e.empty()) return e;
      }
      first = p.size();
    }
    if (s.contains("items")) {
      for (size_t k = first; k < v.size(); ++k) {
        std::string e = check(v[k], s["items"], root, where + "/" + std::to_string(k));
        if (!e.empty()) return e;
      }
    }
  }
  return "";
}

}  // namespace

std::string validate_json_schema(const json& instance, const json& schema, const json& root) {
  return check(instance, schema, root, "#");
}

}  // namespace hearth::testing
