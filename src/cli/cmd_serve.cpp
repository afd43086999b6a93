// `hearth serve`: the OpenAI/Anthropic-compatible HTTP server (docs/api.md).
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "cli/device_flags.h"
#include "cli/progress.h"
#include "cli/registry.h"
#include "hearth/cache/config.h"
#include "hearth/log.h"
#include "hearth/server/server.h"
#include "server/model_settings.h"

namespace hearth::cli {
namespace {

struct ServeFlags {
  std::vector<std::string> models;
  std::string host;
  int port = -1;
  std::string node_id;
  std::string api_key;
  std::string cache_dir;
  std::string redis;
  std::string models_dir;
  std::string config_file;
  std::string chat_template;
  int64_t parallel = 0;
  int64_t max_tokens = 0;
  std::vector<std::string> cors_origins;
  std::string log_format = "text";
  std::optional<int64_t> ctx_size;
  std::optional<std::string> kv_budget;
  // Model knobs for the -m models, under their [[models]] key names.
  std::optional<int64_t> threads, batch_size, prefill_chunk;
  std::optional<std::string> batch_strategy, fingerprint_mode;
  std::optional<int64_t> session_idle_ms;
  bool swa_full = false;
  std::optional<std::string> weights;
  std::optional<std::string> draft_model, speculative;
  std::optional<int64_t> draft_max, draft_min;
  DeviceFlags device;  // --device, --n-gpu-layers: the [[models]] keys device, n_gpu_layers
  std::optional<std::string> device_draft;
  std::optional<int64_t> n_gpu_layers_draft;
  std::vector<std::string> lora;  // --lora FILE[:SCALE], for the one -m model
  std::optional<int64_t> max_delta_depth;
  bool any_model_knob() const {
    return ctx_size || kv_budget || threads || batch_size || prefill_chunk || batch_strategy ||
           fingerprint_mode || session_idle_ms || swa_full || weights || draft_model ||
           speculative || draft_max || draft_min || !lora.empty() || device.device_given() ||
           device.layers_given() || device_draft || n_gpu_layers_draft;
  }
  bool quiet = false;
};

// --parallel, --ctx-size and --kv-budget on one -m model, through the [[models]] keys'
// own parser (so the ranges and messages are the same).
Status apply_model_flags(const ServeFlags& flags, runtime::ModelConfig& m) {
  if (flags.parallel > 0) {
    if (flags.parallel > 1024) return InvalidArgument("--parallel must be in 1..1024");
    m.n_seq_max = static_cast<int32_t>(flags.parallel);
  }
  if (flags.ctx_size) {
    if (Status s = server::apply_model_setting(m, "context", *flags.ctx_size); !s.ok())
      return InvalidArgument("--ctx-size: " + s.message());
  }
  if (flags.kv_budget) {
    if (Status s = server::apply_model_setting(m, "kv_budget", *flags.kv_budget); !s.ok())
      return InvalidArgument("--kv-budget: " + s.message());
  }
  const std::tuple<const char*, const char*, std::optional<server::ModelSettingValue>> knobs[] = {
      {"--threads", "threads", flags.threads},
      {"--batch-size", "n_batch", flags.batch_size},
      {"--prefill-chunk", "prefill_chunk", flags.prefill_chunk},
      {"--batch-strategy", "batch_strategy", flags.batch_strategy},
      {"--fingerprint-mode", "fingerprint_mode", flags.fingerprint_mode},
      {"--session-idle-ms", "session_idle_ms", flags.session_idle_ms},
      {"--swa-full", "swa_full",
       flags.swa_full ? std::optional<server::ModelSettingValue>(true) : std::nullopt},
      {"--weights", "weights", flags.weights},
      {"--draft-model", "draft_model", flags.draft_model},
      {"--speculative", "speculative", flags.speculative},
      {"--draft-max", "draft_max", flags.draft_max},
      {"--draft-min", "draft_min", flags.draft_min},
      {"--device", "device",
       flags.device.device_given() ? std::optional<server::ModelSettingValue>(flags.device.device)
                                   : std::nullopt},
      {"--n-gpu-layers", "n_gpu_layers",
       flags.device.layers_given()
           ? std::optional<server::ModelSettingValue>(int64_t{flags.device.n_gpu_layers})
           : std::nullopt},
      {"--device-draft", "draft_device", flags.device_draft},
      {"--n-gpu-layers-draft", "draft_n_gpu_layers", flags.n_gpu_layers_draft},
  };
  for (const auto& [flag, key, value] : knobs) {
    if (!value) continue;
    if (Status s = server::apply_model_setting(m, key, *value); !s.ok())
      return InvalidArgument(std::string(flag) + ": " + s.message());
  }
  for (const std::string& arg : flags.lora) {
    auto spec = server::parse_adapter_arg(arg);
    if (!spec.ok()) return InvalidArgument("--lora: " + spec.status().message());
    m.adapters.push_back(std::move(spec).value());
  }
  if (m.n_batch < m.n_seq_max)
    return InvalidArgument("--batch-size: must be >= --parallel (" + std::to_string(m.n_seq_max) +
                           "), got " + std::to_string(m.n_batch));
  if (Status s = server::check_layers_fit_device(m); !s.ok())
    return InvalidArgument(std::string(s.message().starts_with("draft_") ? "--n-gpu-layers-draft: "
                                                                         : "--n-gpu-layers: ")
                               .append(s.message()));
  return OkStatus();
}

Registrar reg("serve", [](CLI::App& root) {
  auto flags = std::make_shared<ServeFlags>();
  auto* cmd = root.add_subcommand("serve",
                                  "Serve models over an OpenAI- and Anthropic-compatible HTTP API");
  cmd->add_option("-m,--model", flags->models,
                  "Model to load: PATH (id = file stem) or ID=PATH; repeatable");
  cmd->add_option("--host", flags->host, "Address to listen on (default 127.0.0.1)");
  cmd->add_option("--port", flags->port, "Port to listen on (default 8080; 0 = any free port)");
  cmd->add_option("--node-id", flags->node_id,
                  "This node's name in the X-Hearth-Node header of every reply (default "
                  "HOSTNAME:PORT; server.node_id; docs/scale-out.md)");
  cmd->add_option("--api-key", flags->api_key,
                  "Require this key (Bearer or x-api-key); also HEARTH_API_KEY");
  cmd->add_option("--cache-dir", flags->cache_dir, "Directory of the disk cache tier (enables it)");
  cmd->add_option("--max-delta-depth", flags->max_delta_depth,
                  "Delta rows: links a chain may have above its full row ([delta_rows] "
                  "max_depth; default 8; 0 = save every row whole)")
      ->check(CLI::Range(0, static_cast<int>(cache::kMaxDeltaDepth)));
  cmd->add_option(
      "--redis", flags->redis,
      "Shared remote cache tier: redis://HOST:PORT[/DB] (overrides [tiers.remote].url)");
  cmd->add_option("--models-dir", flags->models_dir, "Directory POST /hearth/models may load from");
  cmd->add_option("--config", flags->config_file, "TOML configuration file (flags override it)");
  cmd->add_option("--chat-template", flags->chat_template,
                  "A Jinja chat template FILE (a path with '/' or ending in .jinja) replacing "
                  "every model's own, or a built-in family forced on all: chatml, qwen, "
                  "llama-2, llama-3, mistral, zephyr, gemma, phi-3");
  cmd->add_option("--parallel", flags->parallel,
                  "Requests each -m model runs at once, batched together (its n_seq_max; "
                  "default 4); more wait in its queue (limits.max_queued_requests)");
  cmd->add_option("--ctx-size", flags->ctx_size,
                  "Context per sequence of each -m model (context; default 0: the model's own, "
                  "or the largest whose KV fits --kv-budget)");
  cmd->add_option("--kv-budget", flags->kv_budget,
                  "KV memory each -m model may commit at load, e.g. 6GiB (kv_budget; default "
                  "4 GiB)");
  cmd->add_option("--threads", flags->threads,
                  "Engine threads of each -m model (threads; default 0: the cores divided among "
                  "the models loaded at start)");
  cmd->add_option("--batch-size", flags->batch_size,
                  "Tokens per forward pass of each -m model (n_batch; default 512)");
  cmd->add_option("--prefill-chunk", flags->prefill_chunk,
                  "Prefill tokens per sequence per forward pass (prefill_chunk; default 0: "
                  "max(64, n_batch/4); -1: unlimited)");
  cmd->add_option("--batch-strategy", flags->batch_strategy,
                  "decode_first (default), prefill_first or balanced (batch_strategy)");
  cmd->add_option("--fingerprint-mode", flags->fingerprint_mode,
                  "How a model file is identified for the cache: gguf_chunked (default), safe "
                  "(SHA-256 of the whole file) or fast_unsafe (needs fingerprint in TOML)");
  cmd->add_option("--session-idle-ms", flags->session_idle_ms,
                  "A sticky session idle this long is released, its cells saved to the cache "
                  "(session_idle_ms; default 300000; 0 = never on idleness)");
  cmd->add_flag("--swa-full", flags->swa_full,
                "Keep every position in the sliding-window layers of each -m model (gemma2/3) "
                "instead of a ring of the window (swa_full; more KV memory, same bits)");
  cmd->add_option("--weights", flags->weights,
                  "Where each -m model's weight matrices live: copy (into huge pages at load, "
                  "row groups interleaved; default) or mapped (read in place from the file "
                  "mapping: no copy, pages shared with the page cache; weights)");
  cmd->add_option("--draft-model", flags->draft_model,
                  "Speculative decoding: a draft GGUF sharing the -m model's vocabulary, loaded "
                  "beside it (draft_model); its requests then draft with it by default");
  cmd->add_option("--speculative", flags->speculative,
                  "Default speculative decoding of the -m model's requests: none, draft (needs "
                  "--draft-model) or ngram (prompt lookup) (speculative)");
  cmd->add_option("--draft-max", flags->draft_max,
                  "Most tokens drafted per forward pass (draft_max; default 16)");
  cmd->add_option("--draft-min", flags->draft_min,
                  "Shortest draft worth verifying (draft_min; default 0)");
  add_device_flags(cmd, &flags->device);
  cmd->add_option("--device-draft", flags->device_draft,
                  "Where the --draft-model runs: cpu, cuda or cuda:N (draft_device; default: the "
                  "-m model's --device and --n-gpu-layers)");
  cmd->add_option("--n-gpu-layers-draft", flags->n_gpu_layers_draft,
                  "Draft model layers on its GPU (draft_n_gpu_layers; default -1 = all with "
                  "--device-draft, else the -m model's; also -ngld)");
  cmd->add_option("--lora", flags->lora,
                  "LoRA adapter FILE[:SCALE] for the -m model (llama.cpp's GGUF adapter format; "
                  "repeatable; ids 0, 1, ... in order; several models: lora in [[models]])");
  cmd->add_option("--max-tokens", flags->max_tokens,
                  "Largest max_tokens a request may ask for (limits.max_tokens)");
  cmd->add_option("--cors-origin", flags->cors_origins,
                  "Let pages of this origin call the /v1 API from a browser (CORS; '*' = any; "
                  "repeatable; server.cors_origins); off by default");
  cmd->add_option("--log-format", flags->log_format,
                  "Log lines as 'text' (default) or 'json' (one object per line; a line per "
                  "request with its id, route, status, tokens, cache hit, TTFT and total time)")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("-q,--quiet", flags->quiet,
                "No model-load progress bars (there are none when stderr is not a terminal)");
  cmd->callback([flags] {
    log::set_format(flags->log_format == "json" ? log::Format::kJson : log::Format::kText);
    server::ServerConfig config;
    if (!flags->config_file.empty()) {
      if (Status s = server::apply_config_file(flags->config_file, config); !s.ok()) {
        std::fprintf(stderr, "hearth serve: %s\n", s.message().c_str());
        exit_code() = 2;
        return;
      }
    }
    if (flags->models.empty() && flags->any_model_knob()) {
      std::fprintf(stderr,
                   "hearth serve: --ctx-size, --kv-budget, --threads, --batch-size, "
                   "--prefill-chunk, --batch-strategy, --fingerprint-mode, --session-idle-ms, "
                   "--swa-full, --weights, --lora, --device, --n-gpu-layers and the speculative "
                   "flags apply to -m models; "
                   "set them "
                   "in the config's [[models]] tables\n");
      exit_code() = 2;
      return;
    }
    if (!flags->lora.empty() && flags->models.size() > 1) {
      std::fprintf(stderr,
                   "hearth serve: --lora applies to one -m model (an adapter fits one base); "
                   "with several models set lora = [{path, scale}] in their [[models]] tables\n");
      exit_code() = 2;
      return;
    }
    for (const auto& flag : flags->models) {
      auto m = server::model_config_from_flag(flag);
      Status st = m.ok() ? apply_model_flags(*flags, *m) : m.status();
      if (!st.ok()) {
        std::fprintf(stderr, "hearth serve: %s\n", st.message().c_str());
        exit_code() = 2;
        return;
      }
      config.models.push_back(std::move(m).value());
    }
    if (!flags->host.empty()) config.host = flags->host;
    if (flags->port >= 0) config.port = flags->port;
    if (!flags->node_id.empty()) config.node_id = flags->node_id;
    if (const char* env = std::getenv("HEARTH_API_KEY"); env && *env && config.api_key.empty()) {
      config.api_key = env;
    }
    if (!flags->api_key.empty()) config.api_key = flags->api_key;
    if (!flags->cache_dir.empty()) config.cache_dir = flags->cache_dir;
    if (flags->max_delta_depth) config.max_delta_depth = *flags->max_delta_depth;
    if (!flags->redis.empty()) {
      config.remote.url = flags->redis;
      if (auto s = cache::validate_remote_tier_config(config.remote); !s.ok()) {
        std::fprintf(stderr, "hearth serve: --redis: %s\n", s.message().c_str());
        exit_code() = 2;
        return;
      }
    }
    if (!flags->models_dir.empty()) config.models_dir = flags->models_dir;
    if (server::names_a_template_file(flags->chat_template)) {
      // A Jinja file: every model without its own chat_template_file renders with it.
      for (auto& m : config.models) {
        if (!m.chat_template.empty()) continue;
        Status st = server::apply_model_setting(m, "chat_template_file", flags->chat_template);
        if (!st.ok()) {
          std::fprintf(stderr, "hearth serve: --chat-template: %s\n", st.message().c_str());
          exit_code() = 2;
          return;
        }
      }
    } else if (!flags->chat_template.empty()) {
      config.chat_template = flags->chat_template;
    }
    if (flags->max_tokens > 0) config.limits.max_tokens = flags->max_tokens;
    if (!flags->cors_origins.empty()) config.cors_origins = flags->cors_origins;
    // One bar per model as it loads (stderr, terminals only); a bar ignores updates once
    // finished, so a worker restart that reloads the model draws nothing.
    for (runtime::ModelConfig& m : config.models) {
      auto bar = std::make_shared<ProgressBar>("loading " + (m.id.empty() ? m.model_path : m.id),
                                               ProgressBar::Unit::kBytes, flags->quiet);
      m.on_load_progress = [bar](uint64_t done, uint64_t total) {
        bar->update(done, total);
        if (done >= total) bar->finish();
      };
    }
    exit_code() = server::run_server(config);
  });
});

}  // namespace
}  // namespace hearth::cli
