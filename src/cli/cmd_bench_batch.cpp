// `hearth bench batch -m MODEL`: many concurrent streams.
//
// decode runs: S sequences, each holding P positions, decoded together, one token per
// sequence per forward (the engine's multi-sequence step); aggregate and per-stream
// tokens/s for every (S, P) asked. One sequence is prefilled with P tokens once per P
// and copied to the others (Engine::kv_copy), so 16 x 4,096 positions cost one 4,096
// prefill, not sixteen; each stream then starts from its own token, so the streams'
// tokens differ from the first step on.
//
// mix runs: the runtime's real scheduler and batch planner (the strategy of --strategy):
// S streams decode, then a new prompt is admitted; the streams' aggregate tokens/s
// before and while the prompt is prefilled, and its time to first token.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli/bench_util.h"
#include "cli/device_flags.h"
#include "cli/plot_rows.h"
#include "cli/progress.h"
#include "cli/registry.h"
#include "common/json_text.h"
#include "engine/cpu_features.h"
#include "hearth/engine/context.h"
#include "hearth/engine/engine.h"
#include "hearth/engine/sampler.h"
#include "hearth/runtime/runtime.h"

namespace hearth::cli {
namespace {

using Clock = std::chrono::steady_clock;
using runtime::TokenId;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct BatchArgs {
  std::string model;
  int threads = 2;
  bool json = false;
  std::string plot;  // --plot FILE.svg
  std::vector<int32_t> streams = {1, 2, 4, 8, 16};
  std::vector<int32_t> positions = {512, 4096};
  int32_t gen = 32;  // decode steps timed per run
  int reps = 3;      // median of
  std::string kv_type = "f16";
  bool quiet = false;
  // mix runs (0 streams: none)
  std::vector<int32_t> mix_streams = {4};
  int32_t mix_positions = 512;  // each stream's prompt
  int32_t mix_prompt = 256;     // the admitted prompt
  std::string strategy = "decode_first";
  int32_t mix_chunk = 0;  // ModelConfig::prefill_chunk_size (0: the runtime's default)
  DeviceFlags device;     // EngineOptions / ModelConfig::device, n_gpu_layers
};

// ---------------------------------------------------------------- decode runs

struct DecodeRun {
  int32_t streams = 0;
  int32_t positions = 0;
  double aggregate = 0;  // tokens/s, all streams
  double step_ms = 0;    // one forward of `streams` tokens
};

// Seqs 0..S-1 hold the first P positions of seq 0 (which holds P or more).
Status fan_out(Engine& e, int32_t streams, int32_t positions) {
  HEARTH_RETURN_IF_ERROR(e.seq_truncate(0, positions));
  for (int32_t s = 1; s < streams; ++s) HEARTH_RETURN_IF_ERROR(e.kv_copy(0, s, positions));
  return OkStatus();
}

Result<DecodeRun> time_streams(Engine& e, const std::vector<int32_t>& toks, int32_t streams,
                               int32_t positions, const BatchArgs& a) {
  std::vector<double> rates;
  std::vector<float> logits;
  std::vector<BatchToken> batch(static_cast<size_t>(streams));
  const auto n_vocab = static_cast<size_t>(e.info().n_vocab);
  for (int rep = 0; rep < a.reps; ++rep) {
    HEARTH_RETURN_IF_ERROR(fan_out(e, streams, positions));
    std::vector<int32_t> next(static_cast<size_t>(streams));
    for (int32_t s = 0; s < streams; ++s)
      next[static_cast<size_t>(s)] = toks[static_cast<size_t>(positions + s) % toks.size()];
    const auto t0 = Clock::now();
    for (int32_t i = 0; i < a.gen; ++i) {
      for (int32_t s = 0; s < streams; ++s)
        batch[static_cast<size_t>(s)] = {next[static_cast<size_t>(s)], positions + i, s, true};
      HEARTH_RETURN_IF_ERROR(e.forward(batch, logits));
      for (int32_t s = 0; s < streams; ++s) {
        next[static_cast<size_t>(s)] = Sampler::greedy(
            std::span<const float>(logits.data() + static_cast<size_t>(s) * n_vocab, n_vocab));
      }
    }
    rates.push_back(static_cast<double>(a.gen) * streams / seconds_since(t0));
  }
  DecodeRun r;
  r.streams = streams;
  r.positions = positions;
  r.aggregate = median(rates);
  r.step_ms = 1000.0 * streams / r.aggregate;
  return r;
}

// ---------------------------------------------------------------- mix runs

// Token timestamps of every stream, written on the model's worker thread.
struct StreamLog {
  std::mutex mu;
  std::vector<std::vector<Clock::time_point>> at;  // per stream
  int done = 0;

  int64_t count_in(Clock::time_point from, Clock::time_point to) {
    std::lock_guard<std::mutex> lock(mu);
    int64_t n = 0;
    for (const auto& v : at)
      for (const auto& t : v) n += t >= from && t < to ? 1 : 0;
    return n;
  }
  int64_t total() {
    std::lock_guard<std::mutex> lock(mu);
    int64_t n = 0;
    for (const auto& v : at) n += static_cast<int64_t>(v.size());
    return n;
  }
  bool all_started() {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& v : at)
      if (v.empty()) return false;
    return true;
  }
};

// Tokens each mix-run stream may generate: enough to outlast both measured windows
// (the streams are cancelled after them).
int32_t mix_stream_tokens(const BatchArgs& a) {
  return 8 * a.gen + 4 * a.mix_prompt + 64;
}

// Polls `ready` every millisecond for up to `limit_s` seconds.
template <typename F>
bool wait_for(F ready, double limit_s) {
  const auto t0 = Clock::now();
  while (!ready()) {
    if (seconds_since(t0) > limit_s) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

Result<nlohmann::json> mix_run(runtime::Runtime& rt, const std::string& id,
                               const std::vector<int32_t>& toks, int32_t streams,
                               const BatchArgs& a) {
  using runtime::RequestParams;
  using runtime::RequestStats;
  using runtime::StreamSink;
  auto log = std::make_shared<StreamLog>();
  log->at.resize(static_cast<size_t>(streams));
  RequestParams p;
  p.cache_prompt = false;  // every stream prefills its own prompt; nothing is saved
  p.sampling.temperature = 0;
  p.response_tokens = mix_stream_tokens(a);
  std::vector<runtime::RequestId> ids;
  const size_t n = toks.size();
  auto prompt_of = [&](int32_t s, int32_t len) {
    std::vector<TokenId> out(static_cast<size_t>(len));
    for (int32_t i = 0; i < len; ++i)
      out[static_cast<size_t>(i)] = toks[(static_cast<size_t>(s) * 7919 + i) % n];
    return out;
  };
  for (int32_t s = 0; s < streams; ++s) {
    StreamSink sink;
    sink.on_token = [log, s](TokenId) {
      std::lock_guard<std::mutex> lock(log->mu);
      log->at[static_cast<size_t>(s)].push_back(Clock::now());
    };
    sink.on_done = [log](const RequestStats&) {
      std::lock_guard<std::mutex> lock(log->mu);
      ++log->done;
    };
    sink.on_error = [log](const Status&) {
      std::lock_guard<std::mutex> lock(log->mu);
      ++log->done;
    };
    HEARTH_ASSIGN_OR_RETURN(auto rid, rt.infer(id, prompt_of(s, a.mix_positions), p, sink));
    ids.push_back(rid);
  }
  auto cancel_all = [&] {
    for (auto rid : ids) rt.cancel(rid);
    wait_for(
        [&] {
          std::lock_guard<std::mutex> lock(log->mu);
          return log->done == streams;
        },
        60);
  };
  if (!wait_for([&] { return log->all_started(); }, 600)) {
    cancel_all();
    return Internal("bench batch: the streams did not start decoding within 600 s");
  }
  // Window A: decode only, `gen` steps' worth of tokens.
  const auto a0 = Clock::now();
  const int64_t base = log->total();
  wait_for([&] { return log->total() >= base + static_cast<int64_t>(a.gen) * streams; }, 600);
  const auto a1 = Clock::now();
  // Window B: a new prompt admitted, until its first token.
  auto first = std::make_shared<std::atomic<bool>>(false);
  auto first_at = std::make_shared<Clock::time_point>();
  StreamSink sink;
  sink.on_token = [first, first_at](TokenId) {
    if (!first->load()) {
      *first_at = Clock::now();
      first->store(true);
    }
  };
  auto admitted_done = std::make_shared<std::atomic<bool>>(false);
  sink.on_done = [admitted_done](const RequestStats&) { admitted_done->store(true); };
  sink.on_error = [admitted_done](const Status&) { admitted_done->store(true); };
  RequestParams q = p;
  q.response_tokens = 1;
  const auto b0 = Clock::now();
  auto admitted = rt.infer(id, prompt_of(streams, a.mix_prompt), q, sink);
  if (!admitted.ok()) {
    cancel_all();
    return admitted.status();
  }
  wait_for([&] { return admitted_done->load(); }, 600);
  if (!first->load()) {
    cancel_all();
    return Internal("bench batch: the admitted prompt produced no token");
  }
  const auto b1 = *first_at;
  cancel_all();
  const double wa = std::chrono::duration<double>(a1 - a0).count();
  const double wb = std::chrono::duration<double>(b1 - b0).count();
  const double agg_a = static_cast<double>(log->count_in(a0, a1)) / wa;
  const double agg_b = static_cast<double>(log->count_in(b0, b1)) / wb;
  nlohmann::json r;
  r["mode"] = "mix";
  r["strategy"] = a.strategy;
  r["streams"] = streams;
  r["positions"] = a.mix_positions;
  r["admitted_prompt"] = a.mix_prompt;
  r["prefill_chunk"] = a.mix_chunk;
  r["aggregate_tok_s"] = agg_a;  // decode only, before the admission
  r["per_stream_tok_s"] = agg_a / streams;
  r["aggregate_tok_s_during_prefill"] = agg_b;
  r["per_stream_tok_s_during_prefill"] = agg_b / streams;
  r["admitted_ttft_ms"] = 1000.0 * wb;
  r["admitted_prefill_tok_s"] = a.mix_prompt / wb;
  return r;
}

Result<nlohmann::json> mix_runs(const BatchArgs& a, int32_t n_vocab) {
  nlohmann::json runs = nlohmann::json::array();
  int32_t most = 0;
  for (int32_t s : a.mix_streams) most = std::max(most, s);
  if (most == 0) return runs;
  const auto strategy = runtime::batch_strategy_from_name(a.strategy);
  if (!strategy) return InvalidArgument("--strategy: unknown strategy " + a.strategy);
  HEARTH_ASSIGN_OR_RETURN(auto rt, runtime::Runtime::create(runtime::RuntimeOptions{}));
  runtime::ModelConfig c;
  c.id = "bench";
  c.model_path = a.model;
  c.n_threads = a.threads;
  c.n_seq_max = most + 1;
  c.n_batch = std::max(512, most + 1);
  c.n_ctx = std::max(a.mix_positions, a.mix_prompt) + mix_stream_tokens(a) + 1;
  c.kv_type = *kv_type_from_name(a.kv_type);
  HEARTH_RETURN_IF_ERROR(apply_device_flags(a.device, c));
  c.batch_planner = runtime::builtin_batch_planner(*strategy);
  c.slot_affinity = false;
  c.prefill_chunk_size = a.mix_chunk;
  HEARTH_ASSIGN_OR_RETURN(std::string id, rt->load_model(c));
  const auto toks = bench_tokens(std::max(4096, a.mix_positions + a.mix_prompt), n_vocab);
  for (int32_t s : a.mix_streams) {
    if (s < 1) continue;
    HEARTH_ASSIGN_OR_RETURN(nlohmann::json r, mix_run(*rt, id, toks, s, a));
    runs.push_back(std::move(r));
  }
  return runs;
}

// ---------------------------------------------------------------- the command

// Aggregate tokens/s by streams (log axis), one line per positions, of the decode runs.
Status plot_runs(const std::string& path, const nlohmann::json& runs, const nlohmann::json& out) {
  HEARTH_ASSIGN_OR_RETURN(auto rows, plot_rows_of(runs, "runs"));
  HEARTH_ASSIGN_OR_RETURN(
      auto series,
      plot_series_of(rows, {"streams", "aggregate_tok_s", "positions", {{"mode", "decode"}}}));
  PlotOptions o;
  o.title = "Aggregate decode, " + out["model"].get<std::string>() + " " +
            out["quant"].get<std::string>() + ", " + std::to_string(out["threads"].get<int>()) +
            " threads";
  o.x_label = "concurrent streams";
  o.y_label = "aggregate tokens/s";
  o.log_x = true;
  return write_svg_plot(path, o, series);
}

int fail(const Status& s) {
  std::fprintf(stderr, "hearth bench batch: %s\n", s.to_string().c_str());
  return 1;
}

int run_bench(const BatchArgs& a) {
  int32_t most_streams = 1, most_positions = 1;
  for (int32_t s : a.streams) most_streams = std::max(most_streams, s);
  for (int32_t p : a.positions) most_positions = std::max(most_positions, p);
  EngineOptions o;
  o.n_threads = a.threads;
  o.n_seq_max = most_streams;
  o.n_ctx = most_positions + a.gen;
  o.n_batch = std::max(512, most_streams);
  o.kv_type = *kv_type_from_name(a.kv_type);
  if (Status s = apply_device_flags(a.device, o); !s.ok()) return fail(s);
  ProgressBar bar("loading " + a.model, ProgressBar::Unit::kBytes, a.quiet);
  o.on_load_progress = bar.callback();
  auto loaded = Engine::load(a.model, o);
  bar.finish();
  if (!loaded.ok()) return fail(loaded.status());
  Engine& e = **loaded;
  const ModelInfo& info = e.info();
  const auto toks = bench_tokens(most_positions + most_streams + a.gen, info.n_vocab);

  nlohmann::json out;
  out["model"] = info.name;
  out["quant"] = info.quant_name;
  out["threads"] = a.threads;
  out["device"] = info.device;  // "cpu" or the GPU ("cuda:0 NVIDIA H200, sm_90")
  out["n_gpu_layers"] = info.n_gpu_layers;
  out["kernels"] = engine::kernel_isa();
  out["numerics_id"] = e.numerics_id();
  out["kv_type"] = kv_type_name(info.kv_type);
  out["n_ctx"] = info.n_ctx;
  out["n_seq_max"] = info.n_seq_max;
  out["kv_bytes"] = info.kv_bytes;  // committed at load: n_seq_max + 1 sequences
  out["kv_bytes_per_position"] = e.kv_bytes_per_position();
  out["gen"] = a.gen;
  out["reps"] = a.reps;
  nlohmann::json runs = nlohmann::json::array();
  std::vector<DecodeRun> done;
  for (int32_t p : a.positions) {
    // Seq 0 holds the first p tokens; every run copies them to its other streams.
    if (Status s = e.seq_clear(0); !s.ok()) return fail(s);
    std::vector<BatchToken> prompt;
    for (int32_t i = 0; i < p; ++i)
      prompt.push_back({toks[static_cast<size_t>(i)], i, 0, i + 1 == p});
    std::vector<float> logits;
    const auto t0 = Clock::now();
    if (Status s = e.forward(prompt, logits); !s.ok()) return fail(s);
    const double prefill_s = seconds_since(t0);
    double single = 0;
    for (int32_t s : a.streams) {
      auto r = time_streams(e, toks, s, p, a);
      if (!r.ok()) return fail(r.status());
      if (s == 1) single = r->aggregate;
      nlohmann::json j;
      j["mode"] = "decode";
      j["streams"] = s;
      j["positions"] = p;
      j["aggregate_tok_s"] = r->aggregate;
      j["per_stream_tok_s"] = r->aggregate / s;
      j["step_ms"] = r->step_ms;
      if (single > 0) j["per_stream_vs_single"] = r->aggregate / s / single;
      j["kv_bytes_read_per_step"] =
          static_cast<double>(e.kv_bytes_per_position()) * s * (p + a.gen / 2.0);
      j["prefill_tok_s"] = p / prefill_s;  // the one prefill of seq 0 these runs share
      runs.push_back(j);
      done.push_back(*r);
      if (!a.json) {
        std::printf(
            "decode  streams %2d  positions %5d  aggregate %8.1f tok/s  per stream %7.1f"
            " tok/s  step %7.2f ms%s\n",
            s, p, r->aggregate, r->aggregate / s, r->step_ms,
            single > 0 && s > 1
                ? ("  (" + std::to_string(static_cast<int>(100 * r->aggregate / s / single)) +
                   "% of 1 stream)")
                      .c_str()
                : "");
        std::fflush(stdout);
      }
    }
  }
  const int32_t n_vocab = info.n_vocab;
  loaded->reset();  // the mix runs load the model again, inside a runtime
  auto mix = mix_runs(a, n_vocab);
  if (!mix.ok()) return fail(mix.status());
  for (auto& r : *mix) {
    if (!a.json) {
      std::printf(
          "mix     streams %2d  positions %5d  aggregate %8.1f tok/s, %8.1f tok/s while a "
          "%d-token prompt is admitted (%s, chunk %d; its first token after %.0f ms)\n",
          r["streams"].get<int>(), r["positions"].get<int>(), r["aggregate_tok_s"].get<double>(),
          r["aggregate_tok_s_during_prefill"].get<double>(), r["admitted_prompt"].get<int>(),
          a.strategy.c_str(), a.mix_chunk, r["admitted_ttft_ms"].get<double>());
    }
    runs.push_back(r);
  }
  out["runs"] = runs;
  if (!a.plot.empty()) {
    if (Status s = plot_runs(a.plot, runs, out); !s.ok())
      return fail(Status(s.code(), "--plot: " + s.message()));
  }
  if (a.json) {
    std::printf("%s\n", json_text(out, 2).c_str());
  } else {
    std::printf(
        "model %s (%s), device %s (%d GPU layers), %d threads, kernels %s, KV %s: %s committed "
        "for %d sequences of %d positions, numerics %s\n",
        out["model"].get<std::string>().c_str(), out["quant"].get<std::string>().c_str(),
        out["device"].get<std::string>().c_str(), out["n_gpu_layers"].get<int>(), a.threads,
        engine::kernel_isa(), out["kv_type"].get<std::string>().c_str(),
        format_bytes(out["kv_bytes"].get<uint64_t>()).c_str(), most_streams + 1,
        out["n_ctx"].get<int>(), out["numerics_id"].get<std::string>().c_str());
  }
  return 0;
}

Registrar reg("bench_batch", [](CLI::App& root) {
  CLI::App* bench = bench_command(root);
  auto a = std::make_shared<BatchArgs>();
  auto* cmd = bench->add_subcommand("batch", "Aggregate decode speed of many concurrent streams");
  cmd->add_option("-m,--model", a->model, "GGUF model file")->required();
  cmd->add_option("-t,--threads", a->threads, "threads")->check(CLI::Range(1, 256));
  add_device_flags(cmd, &a->device);
  cmd->add_flag("--json", a->json, "JSON output");
  cmd->add_option("--plot", a->plot,
                  "SVG chart of the decode runs: aggregate tokens/s by streams, a line per "
                  "--positions value");
  cmd->add_option("--streams", a->streams, "concurrent sequences of the decode runs")
      ->delimiter(',')
      ->check(CLI::Range(1, 256));
  cmd->add_option("--positions", a->positions, "positions each stream holds before decoding")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--gen", a->gen, "decode steps timed per run")->check(CLI::Range(1, 4096));
  cmd->add_option("--reps", a->reps, "repetitions; the median is reported")
      ->check(CLI::Range(1, 99));
  cmd->add_option("--kv-type", a->kv_type, "element type of the KV cache: f16, q8_0 or q4_0")
      ->check(CLI::IsMember({"f16", "q8_0", "q4_0"}));
  cmd->add_option("--mix-streams", a->mix_streams,
                  "streams of the mix runs (the runtime's scheduler; 0 = no mix run)")
      ->delimiter(',')
      ->check(CLI::Range(0, 255));
  cmd->add_option("--mix-positions", a->mix_positions, "prompt of each mix-run stream")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--mix-prompt", a->mix_prompt, "prompt admitted while the streams decode")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--strategy", a->strategy, "batch strategy of the mix runs")
      ->check(CLI::IsMember({"decode_first", "prefill_first", "balanced"}));
  cmd->add_option("--mix-chunk", a->mix_chunk,
                  "per-row prefill slice cap of the mix runs (ModelConfig::prefill_chunk_size: "
                  "0 = the runtime's default, -1 = none)")
      ->check(CLI::Range(-1, 1 << 20));
  cmd->add_flag("-q,--quiet", a->quiet, "No load progress bar");
  cmd->callback([a] { exit_code() = run_bench(*a); });
});

}  // namespace
}  // namespace hearth::cli
