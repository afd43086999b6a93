#include "server/model_settings.h"

#include <fstream>
#include <sstream>

#include "hearth/engine/device_spec.h"
#include "hearth/jinja/template.h"

#include <cctype>
#include <climits>
#include <cmath>
#include <filesystem>
#include <optional>
#include <utility>

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

Status check_layers_fit_device(const runtime::ModelConfig& config) {
  auto check = [](std::string_view layers_key, int32_t n, const std::string& device) {
    auto spec = parse_device(device);
    Status s = spec.ok() ? check_n_gpu_layers(n, *spec) : spec.status();
    return s.ok() ? s : InvalidArgument(std::string(layers_key) + ": " + s.message());
  };
  HEARTH_RETURN_IF_ERROR(check("n_gpu_layers", config.n_gpu_layers, config.device));
  const runtime::SpeculativeConfig& sc = config.speculative;
  if (sc.draft_n_gpu_layers)
    HEARTH_RETURN_IF_ERROR(check("draft_n_gpu_layers", *sc.draft_n_gpu_layers,
                                 sc.draft_device.value_or(config.device)));
  return OkStatus();
}

std::optional<int64_t> parse_size_text(std::string_view text) {
  const std::string s(text);
  size_t pos = 0;
  double number = 0;
  try {
    number = std::stod(s, &pos);
  } catch (...) {
    return std::nullopt;
  }
  std::string unit = s.substr(pos);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"", 1.0},
      {"b", 1.0},
      {"k", 1e3},
      {"kb", 1e3},
      {"kib", 1024.0},
      {"m", 1e6},
      {"mb", 1e6},
      {"mib", 1024.0 * 1024},
      {"g", 1e9},
      {"gb", 1e9},
      {"gib", 1024.0 * 1024 * 1024},
      {"t", 1e12},
      {"tb", 1e12},
      {"tib", 1024.0 * 1024 * 1024 * 1024},
  };
  for (const auto& [name, mult] : kUnits) {
    if (unit != name) continue;
    // "nan", "inf" and "1e30GiB" parse as doubles: refuse what no int64 byte count holds
    // (the cast of such a value is undefined behaviour; the config fuzzer found it).
    const double bytes = number * mult;
    if (!std::isfinite(bytes) || bytes < 0 || bytes >= 9.2e18) return std::nullopt;
    return static_cast<int64_t>(bytes);
  }
  return std::nullopt;
}

bool names_a_template_file(std::string_view value) {
  return value.find('/') != std::string_view::npos || value.ends_with(".jinja");
}

Result<std::string> read_chat_template_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound(path + ": cannot be read");
  std::stringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  if (text.empty()) return InvalidArgument(path + ": the chat template is empty");
  auto parsed = jinja::Template::parse(text);
  if (!parsed.ok()) return InvalidArgument(path + ": " + parsed.status().message());
  return text;
}

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
  if (key == "swa_full") {
    const auto* flag = std::get_if<bool>(&value);
    if (!flag) return type_error(key, "a boolean");
    config.swa_full = *flag;
    return OkStatus();
  }
  if (key == "weights") {
    if (!text || (*text != "copy" && *text != "mapped"))
      return InvalidArgument("weights: expected \"copy\" or \"mapped\"" +
                             (text ? ", got \"" + *text + "\"" : std::string()));
    config.weights_in_place = *text == "mapped";
    return OkStatus();
  }
  if (key == "pooling") {
    if (!text) return type_error(key, "a string");
    const std::optional<Pooling> p = pooling_from_name(*text);
    if (!p)
      return InvalidArgument("pooling: expected \"mean\", \"cls\", \"last\" or \"none\", got \"" +
                             *text + "\"");
    config.pooling = *p;
    return OkStatus();
  }
  if (key == "chat_template_file") {
    if (!text) return type_error(key, "a string");
    auto tmpl = read_chat_template_file(*text);
    if (!tmpl.ok()) return InvalidArgument("chat_template_file: " + tmpl.status().message());
    config.chat_template = std::move(tmpl).value();
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
  if (key == "kv_budget") {
    std::optional<int64_t> bytes;
    if (number) bytes = *number >= 0 ? std::optional<int64_t>(*number) : std::nullopt;
    if (text) bytes = parse_size_text(*text);
    if (!bytes) {
      return type_error(key, "a size (bytes as an integer >= 0, or a string like \"6GiB\")");
    }
    config.kv_budget_bytes = static_cast<uint64_t>(*bytes);
    return OkStatus();
  }
  // Scheduler and engine knobs (docs/api.md "Model settings").
  static constexpr struct {
    std::string_view key;
    int32_t runtime::ModelConfig::*field;
    int64_t min, max;
  } kInts[] = {
      {"threads", &runtime::ModelConfig::n_threads, 0, 256},
      {"n_batch", &runtime::ModelConfig::n_batch, 1, 1 << 20},
      {"prefill_chunk", &runtime::ModelConfig::prefill_chunk_size, -1, INT32_MAX},
      {"max_restarts", &runtime::ModelConfig::max_restarts, 0, 1000},
      {"restart_backoff_ms", &runtime::ModelConfig::restart_backoff_ms, 0, 60000},
      {"session_idle_ms", &runtime::ModelConfig::session_idle_ms, 0, INT32_MAX},
  };
  for (const auto& k : kInts) {
    if (key != k.key) continue;
    if (!number) return type_error(key, "an integer");
    HEARTH_ASSIGN_OR_RETURN(config.*k.field, int32_in(key, *number, k.min, k.max));
    return OkStatus();
  }
  if (key == "batch_strategy") {
    if (!text) return type_error(key, "a string");
    const std::optional<runtime::BatchStrategy> s = runtime::batch_strategy_from_name(*text);
    if (!s) {
      return InvalidArgument(
          "batch_strategy: expected \"decode_first\", \"prefill_first\" or \"balanced\", got \"" +
          *text + "\"");
    }
    config.batch_planner = runtime::builtin_batch_planner(*s);
    return OkStatus();
  }
  // Where the layers run (docs/gpu.md "Configuration"): hearth::parse_device's forms,
  // kept in their canonical spelling; the layer count is checked against the device in
  // finish_model_config (the keys may come in any order).
  if (key == "device" || key == "draft_device") {
    if (!text) return type_error(key, "a string (\"cpu\", \"cuda\" or \"cuda:N\")");
    auto spec = parse_device(*text);
    if (!spec.ok()) return InvalidArgument(std::string(key) + ": " + spec.status().message());
    if (key == "device") {
      config.device = spec->name();
    } else {
      config.speculative.draft_device = spec->name();
    }
    return OkStatus();
  }
  if (key == "n_gpu_layers" || key == "draft_n_gpu_layers") {
    if (!number) return type_error(key, "an integer (-1: every layer)");
    int32_t n = 0;
    HEARTH_ASSIGN_OR_RETURN(n, int32_in(key, *number, -1, INT32_MAX));
    if (key == "n_gpu_layers") {
      config.n_gpu_layers = n;
    } else {
      config.speculative.draft_n_gpu_layers = n;
    }
    return OkStatus();
  }
  // Speculative decoding (docs/api.md "Speculative decoding").
  if (key == "draft_model") {
    if (!text) return type_error(key, "a string (a GGUF path)");
    config.speculative.draft_model = *text;
    return OkStatus();
  }
  if (key == "speculative") {
    if (!text) return type_error(key, "a string");
    const auto t = runtime::speculative_type_from_name(*text);
    if (!t)
      return InvalidArgument("speculative: expected \"none\", \"draft\" or \"ngram\", got \"" +
                             *text + "\"");
    config.speculative.type = *t;
    return OkStatus();
  }
  if (key == "draft_adaptive") {
    const auto* flag = std::get_if<bool>(&value);
    if (!flag) return type_error(key, "a boolean");
    config.speculative.adaptive = *flag;
    return OkStatus();
  }
  static constexpr struct {
    std::string_view key;
    int32_t runtime::SpeculativeConfig::*field;
    int64_t min, max;
  } kSpecInts[] = {
      {"draft_max", &runtime::SpeculativeConfig::draft_max, 1, 256},
      {"draft_min", &runtime::SpeculativeConfig::draft_min, 0, 256},
      {"ngram_max", &runtime::SpeculativeConfig::ngram_max, 1, 8},
      {"draft_probe_interval", &runtime::SpeculativeConfig::probe_interval, 0, 4096},
  };
  for (const auto& k : kSpecInts) {
    if (key != k.key) continue;
    if (!number) return type_error(key, "an integer");
    HEARTH_ASSIGN_OR_RETURN(config.speculative.*k.field, int32_in(key, *number, k.min, k.max));
    return OkStatus();
  }
  if (key == "fingerprint_mode") {
    if (!text) return type_error(key, "a string");
    for (auto m : {runtime::FingerprintMode::kSafe, runtime::FingerprintMode::kGgufChunked,
                   runtime::FingerprintMode::kFastUnsafe}) {
      if (*text != cache::fingerprint_mode_name(m)) continue;
      config.fingerprint_mode = m;
      return OkStatus();
    }
    return InvalidArgument(
        "fingerprint_mode: expected \"safe\", \"gguf_chunked\" or \"fast_unsafe\", got \"" + *text +
        "\"");
  }
  if (key == "fingerprint") {
    if (!text) return type_error(key, "a string");
    const bool hex = text->size() == 64 &&
                     text->find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
    if (!hex) return InvalidArgument("fingerprint: expected 64 hex digits (a SHA-256)");
    config.fingerprint_hex = *text;
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
  if (config.fingerprint_mode == runtime::FingerprintMode::kFastUnsafe &&
      config.fingerprint_hex.empty())
    return InvalidArgument("fingerprint: required when fingerprint_mode is \"fast_unsafe\"");
  if (config.n_batch < config.n_seq_max)
    return InvalidArgument("n_batch: must be >= n_seq_max (" + std::to_string(config.n_seq_max) +
                           "), got " + std::to_string(config.n_batch));
  HEARTH_RETURN_IF_ERROR(check_layers_fit_device(config));
  if (config.id.empty()) {
    config.id = runtime::model_id_from(std::filesystem::path(config.model_path).stem().string());
  }
  return OkStatus();
}

Result<runtime::AdapterSpec> parse_adapter_arg(std::string_view text) {
  runtime::AdapterSpec spec;
  spec.path = std::string(text);
  if (const size_t colon = text.rfind(':'); colon != std::string_view::npos) {
    const std::string tail(text.substr(colon + 1));
    size_t used = 0;
    double scale = 0;
    bool parsed = false;
    try {
      scale = std::stod(tail, &used);
      parsed = used == tail.size() && !tail.empty();
    } catch (...) {
    }
    if (parsed) {
      if (!std::isfinite(scale))
        return InvalidArgument("lora: scale of " + std::string(text) + " must be finite");
      spec.path = std::string(text.substr(0, colon));
      spec.scale = static_cast<float>(scale);
    }
  }
  if (spec.path.empty())
    return InvalidArgument("lora: no adapter path in \"" + std::string(text) + "\"");
  return spec;
}

Status check_adapter_entry(const runtime::AdapterSpec& spec, const std::string& field) {
  if (spec.path.empty()) return InvalidArgument(field + ".path: required");
  if (!std::isfinite(spec.scale)) return InvalidArgument(field + ".scale: must be finite");
  return OkStatus();
}

}  // namespace hearth::server
