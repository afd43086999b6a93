// TOML configuration for `hearth serve`. Strict: every key is known, every value
// has the right type, and errors name the key path so a bad file fails at start.
#include <toml++/toml.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "hearth/cache/config.h"
#include "hearth/server/server.h"
#include "server/chat_template.h"
#include "server/model_settings.h"

namespace hearth::server {
namespace {

// Parses a size: an integer byte count or a string like "512MiB", "2GB", "64k".
bool parse_size(const toml::node& node, int64_t& out) {
  if (auto v = node.value<int64_t>(); v && node.is_integer()) {
    if (*v < 0) return false;
    out = *v;
    return true;
  }
  auto s = node.value<std::string>();
  if (!s) return false;
  const std::optional<int64_t> bytes = parse_size_text(*s);
  if (!bytes) return false;
  out = *bytes;
  return true;
}

// Reads one table, checking each key against the handlers it was given.
class TableReader {
 public:
  TableReader(const toml::table& table, std::string prefix)
      : table_(table), prefix_(std::move(prefix)) {}

  std::string key_path(std::string_view key) const {
    return prefix_.empty() ? std::string(key) : prefix_ + "." + std::string(key);
  }

  Status check_unknown() const {
    for (const auto& [key, node] : table_) {
      if (!seen_.count(std::string(key.str()))) {
        return InvalidArgument("config: unknown key '" + key_path(key.str()) + "'");
      }
    }
    return OkStatus();
  }

  const toml::node* get(std::string_view key) {
    seen_.insert(std::string(key));
    return table_.get(key);
  }

  Status string(std::string_view key, std::string& out) {
    if (auto* n = get(key)) {
      auto v = n->value<std::string>();
      if (!n->is_string() || !v) return type_error(key, "a string");
      out = *v;
    }
    return OkStatus();
  }
  Status integer(std::string_view key, int64_t& out, int64_t min_value = 0) {
    if (auto* n = get(key)) {
      if (!n->is_integer()) return type_error(key, "an integer");
      int64_t v = *n->value<int64_t>();
      if (v < min_value) {
        return InvalidArgument("config: " + key_path(key) +
                               ": must be >= " + std::to_string(min_value));
      }
      out = v;
    }
    return OkStatus();
  }
  Status number(std::string_view key, double& out) {
    if (auto* n = get(key)) {
      if (!n->is_number()) return type_error(key, "a number");
      out = *n->value<double>();
    }
    return OkStatus();
  }
  Status boolean(std::string_view key, bool& out) {
    if (auto* n = get(key)) {
      if (!n->is_boolean()) return type_error(key, "true or false");
      out = *n->value<bool>();
    }
    return OkStatus();
  }
  Status size(std::string_view key, int64_t& out) {
    if (auto* n = get(key)) {
      if (!parse_size(*n, out)) {
        return type_error(key, "a size (bytes as an integer, or a string like \"512MiB\")");
      }
    }
    return OkStatus();
  }
  // A sub-table; nullptr result with ok status when absent.
  Status table(std::string_view key, const toml::table*& out) {
    out = nullptr;
    if (auto* n = get(key)) {
      if (!n->is_table()) return type_error(key, "a table");
      out = n->as_table();
    }
    return OkStatus();
  }

  Status type_error(std::string_view key, std::string_view expected) const {
    return InvalidArgument("config: " + key_path(key) + ": expected " + std::string(expected));
  }

 private:
  const toml::table& table_;
  std::string prefix_;
  std::set<std::string> seen_;
};

// A model's LoRA adapters: an array of tables {path (string), scale (number, default 1)}.
Status read_lora(const toml::node& node, const std::string& prefix, runtime::ModelConfig& m) {
  const auto* arr = node.as_array();
  if (!arr) return InvalidArgument("config: " + prefix + ": expected an array of tables");
  for (size_t i = 0; i < arr->size(); ++i) {
    const std::string field = std::string(prefix).append("[").append(std::to_string(i)).append("]");
    const auto* t = (*arr)[i].as_table();
    if (!t) return InvalidArgument("config: " + field + ": expected a table {path, scale}");
    runtime::AdapterSpec spec;
    for (const auto& [key, value] : *t) {
      const std::string k(key.str());
      if (k == "path" && value.is_string()) {
        spec.path = *value.value<std::string>();
      } else if (k == "scale" && (value.is_floating_point() || value.is_integer())) {
        spec.scale = static_cast<float>(*value.value<double>());
      } else if (k == "path" || k == "scale") {
        return InvalidArgument("config: " + field + "." + k + ": expected " +
                               (k == "path" ? "a string" : "a number"));
      } else {
        return InvalidArgument("config: " + field + "." + k + ": unknown key (path, scale)");
      }
    }
    if (Status s = check_adapter_entry(spec, field); !s.ok())
      return InvalidArgument("config: " + s.message());
    m.adapters.push_back(std::move(spec));
  }
  return OkStatus();
}

Status read_model(const toml::table& t, const std::string& prefix, runtime::ModelConfig& m) {
  m = default_model_config();
  auto setting = [&](const std::string& key, const toml::node& node) -> Status {
    Status s;
    if (node.is_integer()) {
      s = apply_model_setting(m, key, *node.value<int64_t>());
    } else if (node.is_string()) {
      s = apply_model_setting(m, key, *node.value<std::string>());
    } else if (node.is_boolean()) {
      s = apply_model_setting(m, key, *node.value<bool>());
    } else {
      s = apply_model_setting(m, key, std::monostate{});  // a type error naming the key
    }
    return s.ok() ? s : InvalidArgument("config: " + prefix + "." + s.message());
  };
  for (const auto& [key, node] : t) {
    const std::string k(key.str());
    if (k == "policy") {
      const auto* policy = node.as_table();
      if (!policy) return InvalidArgument("config: " + prefix + ".policy: expected a table");
      for (const auto& [gate, value] : *policy) {
        HEARTH_RETURN_IF_ERROR(setting("policy." + std::string(gate.str()), value));
      }
      continue;
    }
    if (k == "lora") {  // lora = [{path = "...", scale = 0.5}, ...]
      HEARTH_RETURN_IF_ERROR(read_lora(node, prefix + ".lora", m));
      continue;
    }
    HEARTH_RETURN_IF_ERROR(setting(k, node));
  }
  Status s = finish_model_config(m);
  return s.ok() ? s : InvalidArgument("config: " + prefix + "." + s.message());
}

Status read_tier(const toml::table& t, const std::string& prefix, bool has_dir, TierConfig& tier) {
  TableReader r(t, prefix);
  tier.enabled = true;
  HEARTH_RETURN_IF_ERROR(r.boolean("enabled", tier.enabled));
  if (has_dir) HEARTH_RETURN_IF_ERROR(r.string("dir", tier.dir));
  HEARTH_RETURN_IF_ERROR(r.size("quota", tier.quota_bytes));
  HEARTH_RETURN_IF_ERROR(r.check_unknown());
  if (has_dir && tier.enabled && tier.dir.empty()) {
    return InvalidArgument("config: " + prefix + ".dir: required when the tier is enabled");
  }
  return OkStatus();
}

Status read_remote_tier(const toml::table& t, cache::RemoteTierConfig& rc) {
  TableReader r(t, "tiers.remote");
  HEARTH_RETURN_IF_ERROR(r.string("url", rc.url));
  HEARTH_RETURN_IF_ERROR(r.string("key_prefix", rc.key_prefix));
  int64_t v = 0;
  struct U32 {
    const char* key;
    uint32_t* out;
    int64_t min;
  };
  for (const U32& f :
       {U32{"ttl_s", &rc.ttl_s, 0}, U32{"timeout_ms", &rc.timeout_ms, 1},
        U32{"pool_size", &rc.pool_size, 1}, U32{"backoff_max_ms", &rc.backoff_max_ms, 100},
        U32{"index_poll_ms", &rc.index_poll_ms, 1}}) {
    v = *f.out;
    HEARTH_RETURN_IF_ERROR(r.integer(f.key, v, f.min));
    if (v > UINT32_MAX) {
      return InvalidArgument(
          std::string("config: tiers.remote.").append(f.key).append(": too large"));
    }
    *f.out = static_cast<uint32_t>(v);
  }
  v = static_cast<int64_t>(rc.chunk_bytes);
  HEARTH_RETURN_IF_ERROR(r.size("chunk_bytes", v));
  rc.chunk_bytes = static_cast<uint64_t>(v);
  HEARTH_RETURN_IF_ERROR(r.check_unknown());
  if (rc.url.empty())
    return InvalidArgument("config: tiers.remote.url: required (redis://HOST:PORT[/DB])");
  Status s = cache::validate_remote_tier_config(rc);
  if (!s.ok()) return InvalidArgument("config: tiers." + s.message());
  return OkStatus();
}

Status read_document(const toml::table& root, ServerConfig& c) {
  TableReader r(root, "");
  const toml::table* t = nullptr;

  HEARTH_RETURN_IF_ERROR(r.table("server", t));
  if (t) {
    TableReader s(*t, "server");
    int64_t port = c.port;
    HEARTH_RETURN_IF_ERROR(s.string("host", c.host));
    HEARTH_RETURN_IF_ERROR(s.integer("port", port));
    if (port > 65535) return InvalidArgument("config: server.port: must be <= 65535");
    c.port = static_cast<int>(port);
    HEARTH_RETURN_IF_ERROR(s.string("node_id", c.node_id));
    HEARTH_RETURN_IF_ERROR(s.string("api_key", c.api_key));
    HEARTH_RETURN_IF_ERROR(s.string("models_dir", c.models_dir));
    HEARTH_RETURN_IF_ERROR(s.string("chat_template", c.chat_template));
    HEARTH_RETURN_IF_ERROR(s.string("cache_dir", c.cache_dir));
    HEARTH_RETURN_IF_ERROR(s.integer("shutdown_grace_ms", c.shutdown_grace_ms));
    for (auto [key, out] : {std::pair{"allowed_hosts", &c.allowed_hosts},
                            std::pair{"cors_origins", &c.cors_origins}}) {
      const auto* n = s.get(key);
      if (!n) continue;
      const auto* arr = n->as_array();
      if (!arr) return s.type_error(key, "an array of strings");
      out->clear();
      for (const auto& e : *arr) {
        auto v = e.value<std::string>();
        if (!e.is_string() || v->empty()) {
          return InvalidArgument(std::string("config: server.") + key +
                                 ": each entry must be a non-empty string");
        }
        out->push_back(*v);
      }
    }
    HEARTH_RETURN_IF_ERROR(s.check_unknown());
  }

  HEARTH_RETURN_IF_ERROR(r.table("limits", t));
  if (t) {
    TableReader s(*t, "limits");
    HEARTH_RETURN_IF_ERROR(s.size("max_body_bytes", c.limits.max_body_bytes));
    HEARTH_RETURN_IF_ERROR(s.integer("max_tokens", c.limits.max_tokens, 1));
    if (s.get("max_concurrent_requests")) {
      // One queue per model now (the runtime's): its n_seq_max requests run, up to
      // max_queued_requests wait. An old file fails with the way forward.
      return InvalidArgument(
          "config: limits.max_concurrent_requests: no longer a setting; a model runs "
          "models[].n_seq_max requests at once (--parallel) and queues up to "
          "limits.max_queued_requests more");
    }
    HEARTH_RETURN_IF_ERROR(s.integer("max_queued_requests", c.limits.max_queued_requests, 0));
    HEARTH_RETURN_IF_ERROR(s.integer("retry_after_s", c.limits.retry_after_s, 0));
    HEARTH_RETURN_IF_ERROR(s.size("max_header_bytes", c.limits.max_header_bytes));
    HEARTH_RETURN_IF_ERROR(s.integer("max_connections", c.limits.max_connections, 1));
    HEARTH_RETURN_IF_ERROR(s.integer("idle_timeout_ms", c.limits.idle_timeout_ms, 1));
    HEARTH_RETURN_IF_ERROR(s.integer("header_timeout_ms", c.limits.header_timeout_ms, 1));
    HEARTH_RETURN_IF_ERROR(s.integer("body_timeout_ms", c.limits.body_timeout_ms, 1));
    HEARTH_RETURN_IF_ERROR(s.integer("write_timeout_ms", c.limits.write_timeout_ms, 1));
    HEARTH_RETURN_IF_ERROR(s.check_unknown());
  }

  if (const auto* n = r.get("models")) {
    const auto* arr = n->as_array();
    if (!arr) return r.type_error("models", "an array of tables ([[models]])");
    for (size_t i = 0; i < arr->size(); ++i) {
      const std::string prefix = "models[" + std::to_string(i) + "]";
      const auto* mt = (*arr)[i].as_table();
      if (!mt) return InvalidArgument("config: " + prefix + ": expected a table");
      runtime::ModelConfig m;
      HEARTH_RETURN_IF_ERROR(read_model(*mt, prefix, m));
      c.models.push_back(std::move(m));
    }
  }

  HEARTH_RETURN_IF_ERROR(r.table("tiers", t));
  if (t) {
    TableReader s(*t, "tiers");
    const toml::table* tier = nullptr;
    HEARTH_RETURN_IF_ERROR(s.table("ram", tier));
    if (tier) HEARTH_RETURN_IF_ERROR(read_tier(*tier, "tiers.ram", false, c.ram));
    HEARTH_RETURN_IF_ERROR(s.table("ram_file", tier));
    if (tier) HEARTH_RETURN_IF_ERROR(read_tier(*tier, "tiers.ram_file", true, c.ram_file));
    HEARTH_RETURN_IF_ERROR(s.table("disk", tier));
    if (tier) HEARTH_RETURN_IF_ERROR(read_tier(*tier, "tiers.disk", true, c.disk));
    HEARTH_RETURN_IF_ERROR(s.table("remote", tier));
    if (tier) HEARTH_RETURN_IF_ERROR(read_remote_tier(*tier, c.remote));
    HEARTH_RETURN_IF_ERROR(s.check_unknown());
  }

  HEARTH_RETURN_IF_ERROR(r.table("writer_pool", t));
  if (t) {
    TableReader s(*t, "writer_pool");
    HEARTH_RETURN_IF_ERROR(s.integer("threads", c.writer_threads, 1));
    HEARTH_RETURN_IF_ERROR(s.check_unknown());
  }

  HEARTH_RETURN_IF_ERROR(r.table("delta_rows", t));
  if (t) {
    TableReader s(*t, "delta_rows");
    HEARTH_RETURN_IF_ERROR(s.integer("max_depth", c.max_delta_depth, 0));
    if (c.max_delta_depth > cache::kMaxDeltaDepth) {
      return InvalidArgument("config: delta_rows.max_depth " + std::to_string(c.max_delta_depth) +
                             " is above " + std::to_string(cache::kMaxDeltaDepth));
    }
    HEARTH_RETURN_IF_ERROR(s.check_unknown());
  }

  HEARTH_RETURN_IF_ERROR(r.table("pressure", t));
  if (t) {
    TableReader s(*t, "pressure");
    auto& p = c.pressure;
    HEARTH_RETURN_IF_ERROR(s.boolean("enabled", p.enabled));
    HEARTH_RETURN_IF_ERROR(s.string("source", p.source));
    HEARTH_RETURN_IF_ERROR(s.integer("interval_ms", p.interval_ms, 1));
    HEARTH_RETURN_IF_ERROR(s.number("high_watermark", p.high_watermark));
    HEARTH_RETURN_IF_ERROR(s.number("low_watermark", p.low_watermark));
    HEARTH_RETURN_IF_ERROR(s.size("min_evict_bytes", p.min_evict_bytes));
    if (const auto* n = s.get("evict_tiers")) {
      const auto* arr = n->as_array();
      if (!arr) return s.type_error("evict_tiers", "an array of tier names");
      p.evict_tiers.clear();
      for (const auto& e : *arr) {
        auto v = e.value<std::string>();
        if (!e.is_string() || (*v != "ram" && *v != "ram_file" && *v != "disk")) {
          return InvalidArgument(
              "config: pressure.evict_tiers: each entry must be \"ram\", \"ram_file\" or \"disk\"");
        }
        p.evict_tiers.push_back(*v);
      }
    }
    HEARTH_RETURN_IF_ERROR(s.check_unknown());
    if (p.source != "noop" && p.source != "system") {
      return InvalidArgument("config: pressure.source: expected \"noop\" or \"system\"");
    }
    // The cache's scheduler needs a positive low watermark (it evicts down to it).
    if (p.high_watermark <= 0 || p.high_watermark > 1 || p.low_watermark <= 0 ||
        p.low_watermark >= p.high_watermark) {
      return InvalidArgument(
          "config: pressure.low_watermark/high_watermark: need 0 < low < high <= 1");
    }
    if (p.evict_tiers.empty()) {
      return InvalidArgument("config: pressure.evict_tiers: must name at least one tier");
    }
  }
  return r.check_unknown();
}

// A node_id (empty = the default) is at most 128 visible ASCII characters.
Status check_node_id(std::string_view id) {
  if (id.size() > 128)
    return InvalidArgument("node_id: at most 128 characters, got " + std::to_string(id.size()));
  for (char c : id) {
    // It travels as a header value: visible ASCII only, no spaces or controls.
    if (c < 0x21 || c > 0x7e)
      return InvalidArgument("node_id '" + std::string(id) +
                             "': only visible ASCII characters (no spaces)");
  }
  return OkStatus();
}

}  // namespace

Status apply_config_toml(std::string_view toml_text, ServerConfig& config) {
  toml::table root;
  try {
    root = toml::parse(toml_text);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << "config: TOML syntax error at line " << e.source().begin.line << ", column "
       << e.source().begin.column << ": " << e.description();
    return InvalidArgument(os.str());
  }
  ServerConfig updated = config;
  HEARTH_RETURN_IF_ERROR(read_document(root, updated));
  config = std::move(updated);
  return OkStatus();
}

Status apply_config_file(const std::string& path, ServerConfig& config) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("config: cannot open '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  Status s = apply_config_toml(ss.str(), config);
  if (!s.ok()) return Status(s.code(), path + ": " + s.message());
  return OkStatus();
}

Result<runtime::ModelConfig> model_config_from_flag(const std::string& flag_value) {
  runtime::ModelConfig m = default_model_config();
  // ID=PATH splits at the first '=' when what precedes it is a valid model id (ids may
  // hold '/': "Org/Model=/models/m.gguf"); otherwise the whole value is a path
  // ("/a=b/c.gguf": "/a" is no id).
  const auto eq = flag_value.find('=');
  if (eq != std::string::npos && runtime::check_model_id(flag_value.substr(0, eq)).ok()) {
    m.id = flag_value.substr(0, eq);
    m.model_path = flag_value.substr(eq + 1);
  } else {
    m.model_path = flag_value;
  }
  Status s = finish_model_config(m);
  if (!s.ok()) return InvalidArgument("-m " + flag_value + ": " + s.message());
  return m;
}

Status validate_config(const ServerConfig& c) {
  if (c.port < 0 || c.port > 65535) return InvalidArgument("port: must be in 0..65535");
  if (c.host.empty()) return InvalidArgument("host: must not be empty");
  if (Status s = check_node_id(c.node_id); !s.ok()) return s;
  std::set<std::string> ids;
  for (size_t i = 0; i < c.models.size(); ++i) {
    const auto& m = c.models[i];
    if (m.id.empty()) return InvalidArgument("models[" + std::to_string(i) + "].id: empty");
    if (!ids.insert(m.id).second) {
      return InvalidArgument("models[" + std::to_string(i) + "].id: duplicate model id '" + m.id +
                             "'");
    }
  }
  if (!c.chat_template.empty() && !chat_family_from_name(c.chat_template)) {
    return InvalidArgument(
        "chat_template: unknown family '" + c.chat_template +
        "' (expected chatml, qwen, llama-2, llama-3, mistral, zephyr, gemma or phi-3)");
  }
  if (c.limits.max_body_bytes < 1024)
    return InvalidArgument("limits.max_body_bytes: must be >= 1024");
  // Below this a browser's ordinary request head (cookies aside) would not fit.
  if (c.limits.max_header_bytes < 1024)
    return InvalidArgument("limits.max_header_bytes: must be >= 1024");
  return OkStatus();
}

}  // namespace hearth::server
