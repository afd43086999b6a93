// What a request says about tools, in one neutral form for the OpenAI and Anthropic
// APIs: the declared functions and the caller's tool_choice.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hearth::server {

struct ToolSpec {
  std::string name;
  std::string description;
  nlohmann::ordered_json parameters = nlohmann::ordered_json::object();  // JSON Schema
};

struct ToolChoice {
  enum class Mode { kAuto, kNone, kRequired, kNamed };
  Mode mode = Mode::kAuto;
  std::string name;  // kNamed
};

}  // namespace hearth::server
