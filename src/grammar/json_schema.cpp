// JSON Schema -> GBNF. Each schema becomes an expression; objects, arrays and $refs get
// named rules (a $ref's rule is named before its target is visited, so recursive
// schemas work). Every keyword is either used, an annotation, or an error naming it.
#include "hearth/grammar/json_schema.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "grammar/gbnf_text.h"
#include "grammar/regex_gbnf.h"

namespace hearth::grammar {
namespace {

using nlohmann::json;

// Rules every converted grammar may use. Whitespace and number lengths are bounded, so
// a sampler cannot wander forever inside one token of JSON.
constexpr const char* kPrimitives = R"(ws ::= | " " | "\n" [ \t]{0,20}
json-hex ::= [0-9a-fA-F]
json-char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" ([0-9a-cA-Ce-fE-F] json-hex{3} | [dD] [0-7] json-hex{2}))
json-string ::= "\"" json-char* "\""
json-integer ::= "-"? ("0" | [1-9] [0-9]{0,15})
json-number ::= json-integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?
json-boolean ::= "true" | "false"
json-null ::= "null"
json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null
json-object ::= "{" ws (json-string ws ":" ws json-value ws ("," ws json-string ws ":" ws json-value ws)*)? "}"
json-array ::= "[" ws (json-value ws ("," ws json-value ws)*)? "]"
)";

const std::set<std::string>& annotations() {
  static const std::set<std::string> k = {
      "title",    "description", "$schema",    "$id",   "$comment",    "default",      "examples",
      "readOnly", "writeOnly",   "deprecated", "$defs", "definitions", "discriminator"};
  return k;
}

std::string repeat_suffix(uint64_t min, std::optional<uint64_t> max) {
  if (!max) return min == 0 ? "*" : min == 1 ? "+" : "{" + std::to_string(min) + ",}";
  if (min == 0 && *max == 1) return "?";
  if (min == *max) return "{" + std::to_string(min) + "}";
  return "{" + std::to_string(min) + "," + std::to_string(*max) + "}";
}

// Same-length decimal strings a <= b: every number between them.
std::string same_len(const std::string& a, const std::string& b) {
  if (a.empty()) return "";
  const size_t n = a.size() - 1;
  auto rest = [&](const std::string& s) { return s.substr(1); };
  auto digits = [&](size_t k) { return k == 0 ? std::string() : " [0-9]" + repeat_suffix(k, k); };
  if (a[0] == b[0]) {
    std::string tail = same_len(rest(a), rest(b));
    return "\"" + std::string(1, a[0]) + "\"" + (tail.empty() ? "" : " " + tail);
  }
  if (rest(a) == std::string(n, '0') && rest(b) == std::string(n, '9')) {
    return "[" + std::string(1, a[0]) + "-" + std::string(1, b[0]) + "]" + digits(n);
  }
  std::vector<std::string> alts;
  std::string t = same_len(rest(a), std::string(n, '9'));
  alts.push_back("\"" + std::string(1, a[0]) + "\"" + (t.empty() ? "" : " " + t));
  if (a[0] + 1 <= b[0] - 1) {
    alts.push_back("[" + std::string(1, static_cast<char>(a[0] + 1)) + "-" +
                   std::string(1, static_cast<char>(b[0] - 1)) + "]" + digits(n));
  }
  t = same_len(std::string(n, '0'), rest(b));
  alts.push_back("\"" + std::string(1, b[0]) + "\"" + (t.empty() ? "" : " " + t));
  std::string out = "(";
  for (size_t k = 0; k < alts.size(); ++k) out += (k ? " | " : "") + alts[k];
  return out + ")";
}

constexpr size_t kMaxDigits = 16;

// Non-negative integers in [lo, hi] (hi unset: unbounded), without leading zeros.
std::string uint_range(uint64_t lo, std::optional<uint64_t> hi) {
  const std::string los = std::to_string(lo);
  const size_t dlo = los.size();
  const size_t dhi = hi ? std::to_string(*hi).size() : dlo;
  std::vector<std::string> alts;
  for (size_t d = dlo; d <= dhi; ++d) {
    const std::string a = d == dlo ? los : std::string(1, '1').append(d - 1, '0');
    const std::string b = hi && d == dhi ? std::to_string(*hi) : std::string(d, '9');
    alts.push_back(same_len(a, b));
  }
  if (!hi && dlo < kMaxDigits) alts.push_back("[1-9] [0-9]" + repeat_suffix(dlo, kMaxDigits - 1));
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t k = 0; k < alts.size(); ++k) out += (k ? " | " : "") + alts[k];
  return out + ")";
}

std::string alternatives(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t k = 0; k < alts.size(); ++k) out += (k ? " | " : "") + alts[k];
  return out + ")";
}

std::string pointer_escape(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

class Converter {
 public:
  Converter(const json& root, std::string name) : root_(root), name_(std::move(name)) {}

  // The start rule and the schema's own rules (not the shared primitives).
  Result<std::string> run() {
    HEARTH_ASSIGN_OR_RETURN(std::string body, visit(root_, "", name_));
    std::string out = name_ + " ::= " + body + "\n";
    for (const auto& [name, rule] : rules_) out += name + " ::= " + rule + "\n";
    return out;
  }

 private:
  static Status error(const std::string& path, const std::string& what) {
    return InvalidArgument(what + " at '" + (path.empty() ? "#" : "#" + path) + "'");
  }
  static Status unsupported(const std::string& path, const std::string& key) {
    return error(path, "unsupported JSON Schema keyword '" + key + "'");
  }

  std::string new_rule(const std::string& hint) {
    std::string base;
    for (char c : hint) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      base += ok ? c : '-';
    }
    if (base.empty()) base = "s";
    base = name_ + "-" + base;
    std::string name = base;
    for (int k = 2; rules_.count(name); ++k) name = base + "-" + std::to_string(k);
    rules_[name] = "";
    return name;
  }

  Result<const json*> resolve(const std::string& ref, const std::string& path) {
    if (ref.empty() || ref[0] != '#')
      return error(path, "only local $ref ('#/...') is supported, got '" + ref + "'");
    const json* at = &root_;
    size_t i = 1;
    while (i < ref.size()) {
      if (ref[i] != '/') return error(path, "bad $ref '" + ref + "'");
      size_t j = ref.find('/', i + 1);
      if (j == std::string::npos) j = ref.size();
      std::string key;
      for (size_t k = i + 1; k < j; ++k) {
        if (ref[k] == '~' && k + 1 < j) {
          key += ref[k + 1] == '1' ? '/' : '~';
          ++k;
        } else {
          key += ref[k];
        }
      }
      if (at->is_object() && at->contains(key)) {
        at = &(*at)[key];
      } else if (at->is_array() && !key.empty() &&
                 key.find_first_not_of("0123456789") == std::string::npos &&
                 std::stoul(key) < at->size()) {
        at = &(*at)[std::stoul(key)];
      } else {
        return error(path, "$ref '" + ref + "' points at nothing");
      }
      i = j;
    }
    return at;
  }

  Result<std::string> visit(const json& s, const std::string& path, const std::string& hint) {
    if (++depth_ > 64) return error(path, "schema nested too deeply");
    auto r = visit_inner(s, path, hint);
    --depth_;
    return r;
  }

  Result<std::string> visit_inner(const json& s, const std::string& path, const std::string& hint) {
    if (s.is_boolean()) {
      if (s.get<bool>()) return std::string("json-value");
      return error(path, "schema 'false' admits no value");
    }
    if (!s.is_object()) return error(path, "a schema must be an object or a boolean");
    std::set<std::string> used;
    auto has = [&](const char* k) { return s.contains(k); };
    auto take = [&](const char* k) -> const json& {
      used.insert(k);
      return s[k];
    };
    auto check_rest = [&]() -> Status {
      for (const auto& [k, v] : s.items()) {
        (void)v;
        if (!used.count(k) && !annotations().count(k)) return unsupported(path, k);
      }
      return OkStatus();
    };

    std::string expr;
    if (has("$ref")) {
      const json& ref = take("$ref");
      if (!ref.is_string()) return error(path + "/$ref", "$ref must be a string");
      const std::string target = ref.get<std::string>();
      auto it = refs_.find(target);
      if (it != refs_.end()) {
        expr = it->second;
      } else {
        HEARTH_ASSIGN_OR_RETURN(const json* t, resolve(target, path));
        const std::string name = new_rule(target.substr(target.rfind('/') + 1));
        refs_[target] = name;
        HEARTH_ASSIGN_OR_RETURN(std::string body, visit(*t, target.substr(1), name));
        rules_[name] = body;
        expr = name;
      }
    } else if (has("const")) {
      if (has("type")) take("type");  // the value itself decides
      expr = gbnf_literal(take("const").dump());
    } else if (has("enum")) {
      const json& e = take("enum");
      if (has("type")) take("type");
      if (!e.is_array() || e.empty())
        return error(path + "/enum", "enum must be a non-empty array");
      std::vector<std::string> alts;
      for (const json& v : e) alts.push_back(gbnf_literal(v.dump()));
      expr = alternatives(alts);
    } else if (has("anyOf") || has("oneOf")) {
      const char* key = has("anyOf") ? "anyOf" : "oneOf";
      if (has("anyOf") && has("oneOf")) return error(path, "both anyOf and oneOf");
      const json& list = take(key);
      if (!list.is_array() || list.empty())
        return error(path + "/" + key, std::string(key) + " must be a non-empty array");
      std::vector<std::string> alts;
      for (size_t k = 0; k < list.size(); ++k) {
        HEARTH_ASSIGN_OR_RETURN(std::string a,
                                visit(list[k], path + "/" + key + "/" + std::to_string(k), hint));
        alts.push_back(a);
      }
      expr = alternatives(alts);
    } else if (has("allOf")) {
      const json& list = take("allOf");
      if (!list.is_array() || list.empty())
        return error(path + "/allOf", "allOf must be a non-empty array");
      HEARTH_ASSIGN_OR_RETURN(json merged, merge_all_of(list, path + "/allOf"));
      HEARTH_ASSIGN_OR_RETURN(expr, visit(merged, path + "/allOf", hint));
    } else {
      HEARTH_ASSIGN_OR_RETURN(expr, typed(s, path, hint, used));
    }
    if (has("nullable")) {
      const json& n = take("nullable");
      if (!n.is_boolean()) return error(path + "/nullable", "nullable must be a boolean");
      if (n.get<bool>()) expr = "(" + expr + " | json-null)";
    }
    HEARTH_RETURN_IF_ERROR(check_rest());
    return expr;
  }

  // allOf of object schemas (or $refs to them): their properties and required merged.
  Result<json> merge_all_of(const json& list, const std::string& path) {
    json merged = json::object();
    for (size_t k = 0; k < list.size(); ++k) {
      const json* part = &list[k];
      const std::string p = path + "/" + std::to_string(k);
      if (part->is_object() && part->contains("$ref") && part->size() == 1) {
        HEARTH_ASSIGN_OR_RETURN(part, resolve((*part)["$ref"].get<std::string>(), p));
      }
      if (!part->is_object()) return error(p, "allOf parts must be schema objects");
      for (const auto& [key, v] : part->items()) {
        if (key == "properties") {
          if (!v.is_object()) return error(p + "/properties", "properties must be an object");
          for (const auto& [name, sub] : v.items()) merged["properties"][name] = sub;
        } else if (key == "required") {
          if (!v.is_array()) return error(p + "/required", "required must be an array");
          for (const json& name : v) merged["required"].push_back(name);
        } else if (annotations().count(key)) {
          continue;
        } else if (merged.contains(key) && merged[key] != v) {
          return error(p, "allOf parts disagree on '" + key + "'");
        } else {
          merged[key] = v;
        }
      }
    }
    return merged;
  }

  Result<std::string> typed(const json& s, const std::string& path, const std::string& hint,
                            std::set<std::string>& used) {
    std::vector<std::string> types;
    if (s.contains("type")) {
      used.insert("type");
      const json& t = s["type"];
      if (t.is_string()) {
        types.push_back(t.get<std::string>());
      } else if (t.is_array() && !t.empty()) {
        for (const json& x : t) {
          if (!x.is_string()) return error(path + "/type", "type entries must be strings");
          types.push_back(x.get<std::string>());
        }
      } else {
        return error(path + "/type", "type must be a string or a non-empty array");
      }
    } else if (s.contains("properties") || s.contains("additionalProperties") ||
               s.contains("required")) {
      types.push_back("object");
    } else if (s.contains("items") || s.contains("prefixItems") || s.contains("minItems") ||
               s.contains("maxItems")) {
      types.push_back("array");
    } else if (s.contains("minLength") || s.contains("maxLength") || s.contains("pattern") ||
               s.contains("format")) {
      types.push_back("string");
    } else if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") ||
               s.contains("exclusiveMaximum")) {
      types.push_back("number");
    } else {
      return std::string("json-value");
    }
    std::vector<std::string> alts;
    for (const std::string& t : types) {
      std::string e;
      if (t == "string") {
        HEARTH_ASSIGN_OR_RETURN(e, string_schema(s, path, used));
      } else if (t == "integer" || t == "number") {
        HEARTH_ASSIGN_OR_RETURN(e, number_schema(s, path, t == "integer", used));
      } else if (t == "boolean") {
        e = "json-boolean";
      } else if (t == "null") {
        e = "json-null";
      } else if (t == "object") {
        HEARTH_ASSIGN_OR_RETURN(e, object_schema(s, path, hint, used));
      } else if (t == "array") {
        HEARTH_ASSIGN_OR_RETURN(e, array_schema(s, path, hint, used));
      } else {
        return error(path + "/type", "unknown type '" + t + "'");
      }
      alts.push_back(e);
    }
    return alternatives(alts);
  }

  static Result<std::optional<uint64_t>> count(const json& s, const char* key,
                                               const std::string& path,
                                               std::set<std::string>& used) {
    if (!s.contains(key)) return std::optional<uint64_t>();
    used.insert(key);
    const json& v = s[key];
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
      return error(path + "/" + key, std::string(key) + " must be a non-negative integer");
    }
    return std::optional<uint64_t>(v.get<uint64_t>());
  }

  Result<std::string> string_schema(const json& s, const std::string& path,
                                    std::set<std::string>& used) {
    HEARTH_ASSIGN_OR_RETURN(auto min_len, count(s, "minLength", path, used));
    HEARTH_ASSIGN_OR_RETURN(auto max_len, count(s, "maxLength", path, used));
    const bool lengths = min_len || max_len;
    if (s.contains("pattern")) {
      used.insert("pattern");
      if (lengths) return error(path, "pattern together with minLength/maxLength is not supported");
      if (!s["pattern"].is_string()) return error(path + "/pattern", "pattern must be a string");
      auto body = regex_to_gbnf(s["pattern"].get<std::string>());
      if (!body.ok()) return error(path + "/pattern", body.status().message());
      return "\"\\\"\" " + body.value() + " \"\\\"\"";
    }
    if (s.contains("format")) {
      used.insert("format");
      if (lengths) return error(path, "format together with minLength/maxLength is not supported");
      const std::string f = s["format"].is_string() ? s["format"].get<std::string>() : "";
      const std::string date =
          "[0-9]{4} \"-\" (\"0\" [1-9] | \"1\" [0-2]) \"-\" (\"0\" [1-9] | [12] [0-9] | \"3\" "
          "[01])";
      const std::string time =
          "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{1,6})? "
          "(\"Z\" | [+-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])";
      std::string body;
      if (f == "date")
        body = date;
      else if (f == "time")
        body = time;
      else if (f == "date-time")
        body = date + " \"T\" " + time;
      else if (f == "uuid")
        body =
            "json-hex{8} \"-\" json-hex{4} \"-\" json-hex{4} \"-\" json-hex{4} \"-\" json-hex{12}";
      else
        return error(path + "/format", "unsupported format '" + s["format"].dump() + "'");
      return "\"\\\"\" " + body + " \"\\\"\"";
    }
    if (min_len && max_len && *max_len < *min_len) return error(path, "maxLength < minLength");
    if (!lengths) return std::string("json-string");
    return "\"\\\"\" json-char" + repeat_suffix(min_len.value_or(0), max_len) + " \"\\\"\"";
  }

  Result<std::string> number_schema(const json& s, const std::string& path, bool integer,
                                    std::set<std::string>& used) {
    std::optional<double> lo, hi;
    bool lo_excl = false, hi_excl = false;
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (!s.contains(k)) continue;
      used.insert(k);
      if (!s[k].is_number()) return error(path + "/" + k, std::string(k) + " must be a number");
      const double v = s[k].get<double>();
      const std::string key = k;
      if (key == "minimum" || key == "exclusiveMinimum") {
        if (!lo || v >= *lo) {
          lo = v;
          lo_excl = key == "exclusiveMinimum";
        }
      } else {
        if (!hi || v <= *hi) {
          hi = v;
          hi_excl = key == "exclusiveMaximum";
        }
      }
    }
    if (!lo && !hi) return std::string(integer ? "json-integer" : "json-number");
    if (!integer) {
      // Non-negative numbers only: other real bounds need digit-level comparison.
      if (hi || !(*lo == 0 && !lo_excl)) {
        return error(path, "number bounds other than minimum 0 are not supported (use integer)");
      }
      return std::string(
          "(\"0\" | [1-9] [0-9]{0,15}) (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?");
    }
    constexpr double kLimit = 9.0e15;
    std::optional<int64_t> ilo, ihi;
    if (lo) {
      if (std::fabs(*lo) > kLimit) return error(path, "minimum out of range");
      ilo = static_cast<int64_t>(lo_excl ? std::floor(*lo) + 1 : std::ceil(*lo));
    }
    if (hi) {
      if (std::fabs(*hi) > kLimit) return error(path, "maximum out of range");
      ihi = static_cast<int64_t>(hi_excl ? std::ceil(*hi) - 1 : std::floor(*hi));
    }
    if (ilo && ihi && *ilo > *ihi) return error(path, "minimum is above maximum");
    std::vector<std::string> alts;
    if (!ilo || *ilo < 0) {  // negatives: magnitudes in [max(1, -hi), -lo]
      const uint64_t mlo = ihi && *ihi < 0 ? static_cast<uint64_t>(-*ihi) : 1;
      std::optional<uint64_t> mhi;
      if (ilo) mhi = static_cast<uint64_t>(-*ilo);
      alts.push_back("\"-\" " + uint_range(mlo, mhi));
    }
    if (!ihi || *ihi >= 0) {
      const uint64_t plo = ilo && *ilo > 0 ? static_cast<uint64_t>(*ilo) : 0;
      std::optional<uint64_t> phi;
      if (ihi) phi = static_cast<uint64_t>(*ihi);
      alts.push_back(uint_range(plo, phi));
    }
    return alternatives(alts);
  }

  Result<std::string> object_schema(const json& s, const std::string& path, const std::string& hint,
                                    std::set<std::string>& used) {
    const json empty = json::object();
    const json* props = &empty;
    if (s.contains("properties")) {
      used.insert("properties");
      props = &s["properties"];
      if (!props->is_object()) return error(path + "/properties", "properties must be an object");
    }
    std::vector<std::string> required;
    if (s.contains("required")) {
      used.insert("required");
      const json& r = s["required"];
      if (!r.is_array()) return error(path + "/required", "required must be an array");
      for (const json& n : r) {
        if (!n.is_string()) return error(path + "/required", "required entries must be strings");
        const std::string name = n.get<std::string>();
        if (!props->contains(name)) {
          return error(path + "/required", "required property '" + name + "' is not in properties");
        }
        if (std::find(required.begin(), required.end(), name) == required.end())
          required.push_back(name);
      }
    }
    // Extra keys: allowed by additionalProperties true or a schema; absent means none
    // when properties are listed (a subset of the valid instances), any otherwise.
    std::optional<std::string> extra_value;
    if (s.contains("additionalProperties")) {
      used.insert("additionalProperties");
      const json& a = s["additionalProperties"];
      if (a.is_boolean()) {
        if (a.get<bool>()) extra_value = "json-value";
      } else {
        HEARTH_ASSIGN_OR_RETURN(std::string v,
                                visit(a, path + "/additionalProperties", hint + "-additional"));
        extra_value = v;
      }
    } else if (props->empty()) {
      extra_value = "json-value";
    }
    auto kv = [&](const std::string& name) -> Result<std::string> {
      HEARTH_ASSIGN_OR_RETURN(
          std::string v,
          visit((*props)[name], path + "/properties/" + pointer_escape(name), hint + "-" + name));
      return gbnf_literal(json(name).dump()) + " ws \":\" ws " + v + " ws";
    };
    std::vector<std::string> req, opt;
    for (const std::string& name : required) {
      HEARTH_ASSIGN_OR_RETURN(std::string e, kv(name));
      req.push_back(e);
    }
    for (const auto& [name, sub] : props->items()) {
      (void)sub;
      if (std::find(required.begin(), required.end(), name) != required.end()) continue;
      HEARTH_ASSIGN_OR_RETURN(std::string e, kv(name));
      opt.push_back(e);
    }
    std::string extra;
    if (extra_value) extra = "json-string ws \":\" ws " + *extra_value + " ws";
    std::string body = "\"{\" ws ";
    if (!req.empty()) {
      for (size_t k = 0; k < req.size(); ++k) body += (k ? "\",\" ws " : "") + req[k] + " ";
      for (const std::string& o : opt) body += "(\",\" ws " + o + ")? ";
      if (!extra.empty()) body += "(\",\" ws " + extra + ")* ";
    } else {
      // The first present member has no comma before it.
      std::vector<std::string> starts;
      for (size_t k = 0; k < opt.size(); ++k) {
        std::string a = opt[k];
        for (size_t j = k + 1; j < opt.size(); ++j) a += " (\",\" ws " + opt[j] + ")?";
        if (!extra.empty()) a += " (\",\" ws " + extra + ")*";
        starts.push_back(a);
      }
      if (!extra.empty()) starts.push_back(extra + " (\",\" ws " + extra + ")*");
      if (!starts.empty()) body += alternatives(starts) + "? ";
    }
    body += "\"}\"";
    const std::string name = new_rule(hint);
    rules_[name] = body;
    return name;
  }

  Result<std::string> array_schema(const json& s, const std::string& path, const std::string& hint,
                                   std::set<std::string>& used) {
    HEARTH_ASSIGN_OR_RETURN(auto min_items, count(s, "minItems", path, used));
    HEARTH_ASSIGN_OR_RETURN(auto max_items, count(s, "maxItems", path, used));
    if (min_items && max_items && *max_items < *min_items)
      return error(path, "maxItems < minItems");
    std::string body = "\"[\" ws ";
    if (s.contains("prefixItems")) {
      used.insert("prefixItems");
      const json& p = s["prefixItems"];
      if (!p.is_array()) return error(path + "/prefixItems", "prefixItems must be an array");
      if (min_items || max_items)
        return error(path, "prefixItems with minItems/maxItems is not supported");
      if (s.contains("items")) {
        used.insert("items");
        if (s["items"] != json(false))
          return error(path + "/items", "items next to prefixItems must be false");
      }
      for (size_t k = 0; k < p.size(); ++k) {
        HEARTH_ASSIGN_OR_RETURN(std::string v,
                                visit(p[k], path + "/prefixItems/" + std::to_string(k),
                                      hint + "-" + std::to_string(k)));
        body += (k ? "\",\" ws " : "") + v + " ws ";
      }
    } else {
      std::string item = "json-value";
      if (s.contains("items")) {
        used.insert("items");
        HEARTH_ASSIGN_OR_RETURN(item, visit(s["items"], path + "/items", hint + "-item"));
      }
      const uint64_t lo = min_items.value_or(0);
      if (max_items && *max_items == 0) {
        // only []
      } else {
        std::optional<uint64_t> rest_max;
        if (max_items) rest_max = *max_items - 1;
        std::string seq = item + " ws";
        const uint64_t rest_min = lo > 0 ? lo - 1 : 0;
        if (!rest_max || *rest_max > 0)
          seq += " (\",\" ws " + item + " ws)" + repeat_suffix(rest_min, rest_max);
        body += lo > 0 ? seq + " " : "(" + seq + ")? ";
      }
    }
    body += "\"]\"";
    const std::string name = new_rule(hint);
    rules_[name] = body;
    return name;
  }

  const json& root_;
  const std::string name_;  // the start rule; every other rule is named "<name_>-..."
  std::map<std::string, std::string> rules_;
  std::map<std::string, std::string> refs_;
  int depth_ = 0;
};

}  // namespace

Result<std::string> json_schema_to_gbnf(const nlohmann::json& schema) {
  HEARTH_ASSIGN_OR_RETURN(std::string rules, json_schema_rules(schema, "root"));
  return rules + kPrimitives;
}

Result<std::string> json_schema_rules(const nlohmann::json& schema, const std::string& name) {
  const bool ok = !name.empty() && name != "ws" && name.rfind("json-", 0) != 0 &&
                  std::all_of(name.begin(), name.end(), [](char c) {
                    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '-' || c == '_';
                  });
  if (!ok) {
    return InvalidArgument("rule name '" + name +
                           "' must be letters, digits, '-' or '_', and not 'ws' or 'json-...'");
  }
  return Converter(schema, name).run();
}

std::string json_schema_primitives() {
  return kPrimitives;
}

std::string json_object_gbnf() {
  return std::string("root ::= json-object\n") + kPrimitives;
}

}  // namespace hearth::grammar
