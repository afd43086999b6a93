// `hearth run`: generate text from a prompt, streaming it to stdout. With --cache-dir the
// run goes through the runtime with a disk cache tier there, so an identical second run
// restores the KV state instead of recomputing it (and reports the hit).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/device_flags.h"
#include "cli/progress.h"
#include "cli/registry.h"
#include "common/json_text.h"
#include "hearth/engine/engine.h"
#include "hearth/engine/sampler.h"
#include "hearth/engine/tokenizer.h"
#include "hearth/runtime/runtime.h"
#include "server/model_settings.h"

namespace hearth::cli {
namespace {

struct RunArgs {
  std::string model, prompt;
  int n = 128;
  float temp = 0.8f;
  int top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  uint64_t seed = 0;
  int threads = 2;
  int ctx = 0;
  std::string kv_budget;  // a size ("6GiB"); empty: the default budget
  uint64_t kv_budget_bytes = 0;
  std::string kv_type = "f16";  // EngineOptions::kv_type, by name
  DeviceFlags device;
  bool json = false;
  std::string cache_dir;  // non-empty: run through the runtime with a disk tier here
  bool quiet = false;     // no load progress bar
};

int fail(const Status& s) {
  std::fprintf(stderr, "hearth run: %s\n", s.to_string().c_str());
  return 1;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The --cache-dir path: one model in a Runtime whose cache has a disk tier at DIR.
int run_cached(const RunArgs& a) {
  namespace rt = hearth::runtime;
  // The cache creates a missing --cache-dir (0700) and refuses a foreign one.
  rt::RuntimeOptions ro;
  ro.cache.disk_dir = a.cache_dir;
  ro.cache.writer_threads = 1;
  const auto t_load = std::chrono::steady_clock::now();
  auto created = rt::Runtime::create(ro);
  if (!created.ok()) return fail(created.status());
  rt::Runtime& runtime = **created;
  rt::ModelConfig mc;
  mc.id = "cli";
  mc.model_path = a.model;
  mc.n_ctx = a.ctx;
  mc.kv_budget_bytes = a.kv_budget_bytes;
  mc.n_threads = a.threads;
  mc.kv_type = *kv_type_from_name(a.kv_type);
  if (Status s = apply_device_flags(a.device, mc); !s.ok()) return fail(s);
  mc.tier = rt::Tier::kDisk;
  mc.slot_affinity = false;
  // A CLI prompt is short: save every finished run, however few tokens it holds.
  mc.policy.min_tokens = 1;
  // Owned by the callback: a restarted worker may call it again after the load.
  auto bar = std::make_shared<ProgressBar>("loading " + a.model, ProgressBar::Unit::kBytes,
                                           a.quiet || a.json);
  mc.on_load_progress = [bar](uint64_t done, uint64_t total) { bar->update(done, total); };
  auto id = runtime.load_model(mc);
  bar->finish();
  if (!id.ok()) return fail(id.status());
  const double load_ms = ms_since(t_load);
  // The operator's own prompt may spell control tokens (a hand-rendered template).
  auto ids = runtime.tokenize(*id, a.prompt, /*add_special=*/true, /*parse_special=*/true);
  if (!ids.ok()) return fail(ids.status());
  if (ids->empty()) return fail(InvalidArgument("the prompt tokenizes to nothing"));

  rt::RequestParams params;
  params.response_tokens = a.n;
  params.sampling.temperature = std::max(0.0f, a.temp);
  params.sampling.top_k = std::max(0, a.top_k);
  params.sampling.top_p = a.top_p >= 1 || a.top_p <= 0 ? 1.0f : a.top_p;
  params.sampling.min_p = std::max(0.0f, a.min_p);
  params.sampling.repetition_penalty = a.repeat_penalty;
  params.sampling.seed = a.seed;

  std::promise<Result<rt::RequestStats>> done;
  std::string text;
  std::vector<int32_t> generated;
  rt::StreamSink sink;
  sink.on_text = [&](std::string_view piece) {  // worker thread; main only waits
    text += piece;
    if (!a.json) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
  };
  sink.on_token = [&](rt::TokenId t) { generated.push_back(t); };
  sink.on_done = [&](const rt::RequestStats& s) { done.set_value(s); };
  sink.on_error = [&](const Status& s) { done.set_value(s); };
  auto future = done.get_future();
  auto started = runtime.infer(*id, *ids, params, std::move(sink));
  if (!started.ok()) return fail(started.status());
  Result<rt::RequestStats> stats = future.get();
  // Publishes the finish save to disk before the process exits.
  runtime.shutdown();
  if (!stats.ok()) return fail(stats.status());
  const rt::RequestStats& st = *stats;
  const double ttft_ms = st.queue_ms + st.prefill_ms;
  const double gen_tps = generated.size() > 1
                             ? (generated.size() - 1) * 1000.0 / std::max(st.generation_ms, 1e-3)
                             : 0.0;
  if (!a.json) {
    std::printf("\n");
    std::fprintf(stderr,
                 "cache: %s (%lld of %zu prompt tokens restored); prefill %.1f ms; generated %zu "
                 "tokens in %.1f ms (%.1f tok/s)\n",
                 rt::cache_hit_kind_name(st.cache_hit_kind),
                 static_cast<long long>(st.cache_delta.read), ids->size(), st.prefill_ms,
                 generated.size(), st.generation_ms, gen_tps);
    return 0;
  }
  nlohmann::json j;
  j["text"] = text;
  j["tokens"] = generated;
  j["prompt_tokens"] = ids->size();
  j["cache_hit_kind"] = rt::cache_hit_kind_name(st.cache_hit_kind);
  j["cached_tokens"] = st.cache_delta.read;
  j["finish_reason"] = rt::finish_reason_name(st.finish_reason);
  j["timings"] = {{"load_ms", load_ms},
                  {"prefill_ms", st.prefill_ms},
                  {"generation_ms", st.generation_ms},
                  {"ttft_ms", ttft_ms},
                  {"generate_tok_per_s", gen_tps}};
  std::printf("%s\n", json_text(j).c_str());
  return 0;
}

int run(const RunArgs& a) {
  if (!a.cache_dir.empty()) return run_cached(a);
  EngineOptions opts;
  opts.n_threads = a.threads;
  opts.n_ctx = a.ctx;
  opts.kv_budget_bytes = a.kv_budget_bytes;
  opts.kv_type = *kv_type_from_name(a.kv_type);
  if (Status s = apply_device_flags(a.device, opts); !s.ok()) return fail(s);
  opts.n_seq_max = 1;
  const auto t_load = std::chrono::steady_clock::now();
  ProgressBar bar("loading " + a.model, ProgressBar::Unit::kBytes, a.quiet || a.json);
  opts.on_load_progress = bar.callback();
  auto loaded = Engine::load(a.model, opts);
  bar.finish();
  if (!loaded.ok()) return fail(loaded.status());
  Engine& engine = **loaded;
  const double load_ms = ms_since(t_load);
  const Tokenizer& tok = engine.tokenizer();
  auto ids = tok.encode(a.prompt, /*add_special=*/true, /*parse_special=*/true);
  if (!ids.ok()) return fail(ids.status());
  if (ids->empty()) return fail(InvalidArgument("the prompt tokenizes to nothing"));
  const int32_t n_ctx = engine.info().n_ctx;
  if (static_cast<int32_t>(ids->size()) >= n_ctx) {
    return fail(OutOfRange("prompt of " + std::to_string(ids->size()) +
                           " tokens does not fit the context of " + std::to_string(n_ctx)));
  }

  SamplingParams sp;
  sp.temperature = a.temp;
  sp.top_k = a.top_k;
  sp.top_p = a.top_p;
  sp.min_p = a.min_p;
  sp.repetition_penalty = a.repeat_penalty;
  sp.seed = a.seed;
  Sampler sampler(sp);
  StreamDecoder stream(tok, /*render_special=*/false);

  std::vector<int32_t> history = *ids;
  std::vector<BatchToken> batch;
  for (size_t i = 0; i < ids->size(); ++i) {
    batch.push_back({(*ids)[i], static_cast<int32_t>(i), 0, i + 1 == ids->size()});
  }
  std::vector<float> logits;
  std::vector<int32_t> generated;
  std::string text;
  double prompt_ms = 0;
  const auto t_gen = std::chrono::steady_clock::now();
  auto t_step = t_gen;
  for (int i = 0; i < a.n; ++i) {
    if (i > 0) {
      if (static_cast<int32_t>(history.size()) >= n_ctx) break;
      batch.assign(1,
                   BatchToken{history.back(), static_cast<int32_t>(history.size()) - 1, 0, true});
    }
    Status st = engine.forward(batch, logits);
    if (!st.ok()) return fail(st);
    if (i == 0) {
      prompt_ms = ms_since(t_step);
      t_step = std::chrono::steady_clock::now();
    }
    const int32_t id = sampler.sample(logits, history);
    if (tok.is_eog(id)) break;
    history.push_back(id);
    generated.push_back(id);
    auto piece = stream.push(id);
    if (!piece.ok()) return fail(piece.status());
    text += *piece;
    if (!a.json) {
      std::fwrite(piece->data(), 1, piece->size(), stdout);
      std::fflush(stdout);
    }
  }
  const std::string tail = stream.flush();
  text += tail;
  const double gen_ms = ms_since(t_step);
  if (!a.json) {
    std::fwrite(tail.data(), 1, tail.size(), stdout);
    std::printf("\n");
    std::fprintf(
        stderr,
        "prompt: %zu tokens in %.1f ms (%.1f tok/s); generated %zu tokens in "
        "%.1f ms (%.1f tok/s)\n",
        ids->size(), prompt_ms, ids->size() * 1000.0 / std::max(prompt_ms, 1e-3), generated.size(),
        gen_ms,
        generated.size() > 1 ? (generated.size() - 1) * 1000.0 / std::max(gen_ms, 1e-3) : 0.0);
    return 0;
  }
  nlohmann::json j;
  j["text"] = text;
  j["tokens"] = generated;
  j["prompt_tokens"] = ids->size();
  j["timings"] = {
      {"load_ms", load_ms},
      {"prompt_ms", prompt_ms},
      {"generate_ms", gen_ms},
      {"prompt_tok_per_s", ids->size() * 1000.0 / std::max(prompt_ms, 1e-3)},
      {"generate_tok_per_s",
       generated.size() > 1 ? (generated.size() - 1) * 1000.0 / std::max(gen_ms, 1e-3) : 0.0}};
  std::printf("%s\n", json_text(j).c_str());
  return 0;
}

Registrar reg("run", [](CLI::App& root) {
  auto a = std::make_shared<RunArgs>();
  auto* cmd = root.add_subcommand("run", "Generate text from a prompt");
  cmd->option_defaults()->always_capture_default();  // --help shows each default
  cmd->add_option("-m,--model", a->model, "GGUF model file")->required();
  cmd->add_option("-p,--prompt", a->prompt, "prompt text")->required();
  cmd->add_option("-n,--n-predict", a->n, "tokens to generate")->check(CLI::Range(0, 1000000));
  cmd->add_option("--temp", a->temp, "temperature (<= 0: greedy)");
  cmd->add_option("--top-k", a->top_k, "top-k (<= 0: off)");
  cmd->add_option("--top-p", a->top_p, "top-p (>= 1: off)");
  cmd->add_option("--min-p", a->min_p, "min-p (<= 0: off)");
  cmd->add_option("--repeat-penalty", a->repeat_penalty, "repetition penalty (1: off)");
  cmd->add_option("--seed", a->seed, "sampling seed");
  cmd->add_option("-t,--threads", a->threads, "threads")->check(CLI::Range(1, 256));
  cmd->add_option("-c,--ctx", a->ctx,
                  "context size (0: the model's own, or the largest whose KV fits --kv-budget)")
      ->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--kv-budget", a->kv_budget,
                  "KV memory the model may commit at load, e.g. 6GiB (default 4 GiB)");
  cmd->add_option("--kv-type", a->kv_type,
                  "element type of the KV cache: f16 (default), q8_0 or q4_0")
      ->check(CLI::IsMember({"f16", "q8_0", "q4_0"}));
  add_device_flags(cmd, &a->device);
  cmd->add_flag("--json", a->json, "print {text, tokens, prompt_tokens, timings} as JSON");
  cmd->add_flag("-q,--quiet", a->quiet,
                "no load progress bar (there is none when stderr is not a terminal, or with "
                "--json)");
  cmd->add_option("--cache-dir", a->cache_dir,
                  "persistent KV cache directory (disk tier, created 0700): an identical "
                  "later run restores the prompt instead of recomputing it");
  cmd->callback([a] {
    if (!a->kv_budget.empty()) {
      const std::optional<int64_t> bytes = server::parse_size_text(a->kv_budget);
      if (!bytes) {
        exit_code() = fail(
            InvalidArgument("--kv-budget: expected a size like 6GiB, got '" + a->kv_budget + "'"));
        return;
      }
      a->kv_budget_bytes = static_cast<uint64_t>(*bytes);
    }
    exit_code() = run(*a);
  });
});

}  // namespace
}  // namespace hearth::cli
