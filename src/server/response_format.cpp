#include "server/response_format.h"

#include <string>

#include "hearth/grammar/grammar.h"
#include "hearth/grammar/json_schema.h"

namespace hearth::server {
namespace {

using nlohmann::json;

std::optional<ApiError> bad(const std::string& field, const std::string& why) {
  return invalid_request("'" + field + "' " + why, field, "invalid_value");
}

std::optional<ApiError> schema_grammar(const json& schema, const std::string& field,
                                       std::string& out) {
  if (!schema.is_object() && !schema.is_boolean())
    return bad(field, "must be a JSON Schema object");
  auto gbnf = grammar::json_schema_to_gbnf(schema);
  if (!gbnf.ok()) return bad(field, "is not supported: " + gbnf.status().message());
  out = std::move(gbnf).value();
  return std::nullopt;
}

std::optional<ApiError> response_format(const json& rf, std::string& out) {
  if (!rf.is_object() || !rf.contains("type") || !rf["type"].is_string()) {
    return bad("response_format",
               "must be an object with a 'type' of text, json_object or json_schema");
  }
  const std::string type = rf["type"].get<std::string>();
  for (const auto& [key, v] : rf.items()) {
    (void)v;
    if (key != "type" && !(type == "json_schema" && key == "json_schema")) {
      return bad("response_format." + key, "is not a field of a " + type + " response_format");
    }
  }
  if (type == "text") return std::nullopt;
  if (type == "json_object") {
    out = grammar::json_object_gbnf();
    return std::nullopt;
  }
  if (type != "json_schema") {
    return bad("response_format.type",
               "must be text, json_object or json_schema, got '" + type + "'");
  }
  if (!rf.contains("json_schema") || !rf["json_schema"].is_object()) {
    return bad("response_format.json_schema", "must be an object holding 'schema'");
  }
  const json& js = rf["json_schema"];
  for (const auto& [key, v] : js.items()) {
    const std::string field = "response_format.json_schema." + key;
    if (key == "name" || key == "description") {
      if (!v.is_string()) return bad(field, "must be a string");
    } else if (key == "strict") {
      // Output always follows the schema, strict or not.
      if (!v.is_boolean() && !v.is_null()) return bad(field, "must be a boolean");
    } else if (key != "schema") {
      return bad(field, "is not a field of json_schema (name, description, schema, strict)");
    }
  }
  if (!js.contains("schema")) {
    return invalid_request("'response_format.json_schema.schema' is required",
                           "response_format.json_schema.schema", "missing_field");
  }
  return schema_grammar(js["schema"], "response_format.json_schema.schema", out);
}

}  // namespace

std::optional<ApiError> parse_grammar_fields(const json& body, SamplingOptions& out) {
  auto present = [&](const char* key) { return body.contains(key) && !body[key].is_null(); };
  std::string gbnf;
  if (present("response_format")) {
    if (auto e = response_format(body["response_format"], gbnf)) return e;
  }
  // response_format text constrains nothing, so it combines with a grammar.
  if (int{!gbnf.empty()} + int{present("grammar")} + int{present("json_schema")} > 1) {
    return invalid_request(
        "only one of 'grammar', 'json_schema' and a JSON 'response_format' may be given",
        present("grammar") ? "grammar" : "json_schema", "invalid_value");
  }
  if (present("grammar")) {
    if (!body["grammar"].is_string()) return bad("grammar", "must be a string (GBNF)");
    gbnf = body["grammar"].get<std::string>();
    auto g = grammar::parse_gbnf(gbnf);
    if (!g.ok()) return bad("grammar", "is not a valid GBNF grammar: " + g.status().message());
  }
  if (present("json_schema")) {
    if (auto e = schema_grammar(body["json_schema"], "json_schema", gbnf)) return e;
  }
  out.grammar = std::move(gbnf);
  return std::nullopt;
}

}  // namespace hearth::server
