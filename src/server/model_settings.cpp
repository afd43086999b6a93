#include "server/model_settings.h"

#include <climits>
#include <filesystem>
#include <optional>

namespace hearth::server {
namespace {

Status type_error(std::string_view key, const char* expected) {
  return InvalidArgument(std::string(key) + ": expected " + expected);
}

Result<int32_t> int32_in(std::string_view key, int64_t value, int64_t min, int64_t max) {
  if (value < min || value > max) {
    return InvalidArgument(std::string(key) + ": must be in " + std::to_string(min) + ".." +
                           std::to_string(max) + ", got " + std::to_string(value));
  }
  return static_cast<int32_t>(value);
}

}  // namespace

runtime::ModelConfig default_model_config() {
  runtime::ModelConfig config;
  config.n_seq_max = 4;
  return config;
}

Status apply_model_setting(runtime::ModelConfig& config, std::string_view key,
                           const ModelSettingValue& value) {
  const auto* text = std::get_if<std::string>(&value);
  const auto* number = std::get_if<int64_t>(&value);
  if (key == "kv_type") {
    if (!text) return type_error(key, "a string");
    const std::optional<KvType> t = kv_type_from_name(*text);
    if (!t)
      return InvalidArgument("kv_type: expected \"f16\", \"q8_0\" or \"q4_0\", got \"" + *text +
                             "\"");
    config.kv_type = *t;
    return OkStatus();
  }
  if (key == "id" || key == "path" || key == "tier") {
    if (!text) return type_error(key, "a string");
    if (key == "id") {
      config.id = *text;
      Status valid = runtime::check_model_id(config.id);
      return valid.ok() ? valid : InvalidArgument("id: " + valid.message());
    }
    if (key == "path") {
      config.model_path = *text;
      return OkStatus();
    }
    config.tier = runtime::tier_from_name(*text);
    if (!config.tier) return InvalidArgument("tier: expected \"ram\", \"ram_file\" or \"disk\"");
    return OkStatus();
  }
  if (key == "context" || key == "n_seq_max") {
    if (!number) return type_error(key, "an integer");
    if (key == "context") {
      HEARTH_ASSIGN_OR_RETURN(config.n_ctx, int32_in(key, *number, 0, INT32_MAX));
    } else {
      HEARTH_ASSIGN_OR_RETURN(config.n_seq_max, int32_in(key, *number, 1, 1024));
    }
    return OkStatus();
  }
  if (key.starts_with("policy.")) {
    if (!number) return type_error(key, "an integer");
    return runtime::set_save_policy_field(config.policy, key.substr(7), *number);
  }
  return InvalidArgument(std::string(key) + ": unknown model setting");
}

Status finish_model_config(runtime::ModelConfig& config) {
  if (config.model_path.empty()) return InvalidArgument("path: required");
  if (config.id.empty()) {
    config.id = runtime::model_id_from(std::filesystem::path(config.model_path).stem().string());
  }
  return OkStatus();
}

}  // namespace hearth::server
