// hearth serve: an OpenAI- and Anthropic-compatible HTTP server over the runtime.
// This header holds the server's configuration (flags + TOML file) and the entry
// point the CLI calls. The HTTP API itself is documented in docs/api.md.
#pragma once

#include "hearth/cache/config.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "hearth/runtime/runtime.h"
#include "hearth/status.h"

namespace hearth::server {

struct TierConfig {
  bool enabled = false;
  std::string dir;          // ram_file and disk only
  int64_t quota_bytes = 0;  // 0 = unlimited
};

struct PressureConfig {
  bool enabled = false;
  std::string source = "noop";  // noop | system
  int64_t interval_ms = 5000;
  double high_watermark = 0.85;
  double low_watermark = 0.75;
  int64_t min_evict_bytes = 1 << 20;
  std::vector<std::string> evict_tiers = {"ram", "ram_file"};
};

struct LimitsConfig {
  int64_t max_body_bytes = 8 << 20;  // larger bodies get 413
  int64_t max_tokens = 4096;         // cap on max_tokens per request
  // Requests waiting per model beyond the n_seq_max it runs at once; more get 429.
  int64_t max_queued_requests = 64;
  int64_t retry_after_s = 1;  // Retry-After on 429
  // Connection-level bounds (docs/api.md "Limits"); see src/server/connection_guard.h.
  int64_t max_header_bytes = 16 << 10;  // request line + headers; larger get 431
  int64_t max_connections = 512;        // open connections, one thread each; more get 503
  int64_t idle_timeout_ms = 5000;       // a new connection's first byte must come by then
  int64_t header_timeout_ms = 10000;    // ... and its whole request head by then
  int64_t body_timeout_ms = 30000;      // the body, once the head is in; then 400
  int64_t write_timeout_ms = 10000;     // one response write (an SSE event); then cut
};

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8080;
  // This node's name in the X-Hearth-Node header of every reply (scale-out: which node
  // behind a load balancer answered; docs/scale-out.md). Empty = "HOSTNAME:PORT".
  std::string node_id;
  std::string api_key;  // empty = no auth
  // Host header values accepted besides the loopback names when bound to loopback
  // ("name" matches any port, "name:port" only that one); DNS-rebinding defence.
  std::vector<std::string> allowed_hosts;
  // Browser origins ("https://app.example", or "*") whose pages may call the /v1 API
  // (CORS: preflights answered, Access-Control-Allow-Origin on replies). Empty = off.
  // Admin endpoints (/hearth/...) stay same-origin only whatever this says.
  std::vector<std::string> cors_origins;
  std::string models_dir;            // POST /hearth/models loads only from here; empty = refused
  std::string chat_template;         // force a family ("chatml", "llama-3", ...); empty = detect
  std::string cache_dir;             // --cache-dir: shorthand for an enabled disk tier in DIR
  int64_t shutdown_grace_ms = 5000;  // in-flight generations get this long on SIGTERM
  // Models to load at start (`-m`, [[models]]), in the runtime's own type; the keys
  // users write are parsed by src/server/model_settings.h.
  std::vector<runtime::ModelConfig> models;
  TierConfig ram{true, "", 0};
  TierConfig ram_file;
  TierConfig disk;
  // [tiers.remote] / --redis: the shared Redis tier (off while url is empty).
  cache::RemoteTierConfig remote;
  int64_t writer_threads = 2;
  int64_t max_delta_depth = 8;  // [delta_rows] max_depth / --max-delta-depth; 0 = off
  PressureConfig pressure;
  LimitsConfig limits;
};

// Merges a TOML document over `config`. Unknown keys and wrong types fail with a
// message naming the key (e.g. "models[1].context: expected an integer").
Status apply_config_toml(std::string_view toml_text, ServerConfig& config);
Status apply_config_file(const std::string& path, ServerConfig& config);

// Parses "-m" values: "PATH" (id = file stem) or "ID=PATH".
Result<runtime::ModelConfig> model_config_from_flag(const std::string& flag_value);

// Checks cross-field rules (port range, duplicate ids, tier dirs present, ...).
Status validate_config(const ServerConfig& config);

// Runs until SIGTERM/SIGINT; returns the process exit code.
int run_server(const ServerConfig& config);

}  // namespace hearth::server
