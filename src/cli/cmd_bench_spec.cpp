// `hearth bench spec -m TARGET [--draft DRAFT] --prompt-file F --gen N [--json]`: decode
// speed of one greedy request, plain vs speculative, through the whole runtime.
//   plain             no speculation (one target forward pass per token)
//   ngram             prompt lookup (drafts from the context), draft_max tokens every step
//   ngram-adaptive    prompt lookup with the adaptive draft length (docs/runtime.md)
//   draft, draft-adaptive   the same with the draft model (only with --draft)
// For each: tokens/s over the generation (first token to last), tokens drafted and
// accepted, the acceptance rate, the share of decode steps that verified a draft and the
// mean draft length, the process CPU time per generated token (prefill included, when
// the prompt is not resident from the previous run), and whether the tokens equal the
// plain run's (they must). With
// --rounds R the cases run in turn R times (alternated, so that a noisy machine's drift
// hits every case alike): tokens/s is the median over rounds and the speed-up the median
// of each round's ratio to that round's plain run.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/device_flags.h"
#include "cli/bench_util.h"
#include "cli/registry.h"
#include "common/json_text.h"
#include "hearth/runtime/runtime.h"

namespace hearth::cli {
namespace {

using namespace hearth::runtime;

struct SpecArgs {
  std::string model;
  std::string draft;
  std::string prompt_file;
  std::string prompt = "Once upon a time";
  int gen = 128;
  int draft_max = 16;
  float p_min = -1;  // < 0: the model's default (SpeculativeConfig::draft_p_min)
  int threads = 0;
  int repeat = 1;
  int rounds = 1;
  bool no_fixed = false;  // only the adaptive speculative cases
  bool json = false;
  DeviceFlags device;  // the target's and the draft's ModelConfig::device, n_gpu_layers
};

struct Case {
  std::string name;
  SpeculativeType type;
  bool adaptive;
};

Result<nlohmann::json> run_case(Runtime& rt, const std::string& id,
                                const std::vector<TokenId>& prompt, const Case& c,
                                const SpecArgs& a, const std::vector<TokenId>* plain_tokens,
                                std::vector<TokenId>* tokens_out) {
  RequestParams p;
  p.response_tokens = a.gen;
  p.sampling.temperature = 0;
  p.cache_prompt = false;  // every run prefills cold: the decode phase is what is compared
  p.speculative.type = c.type;
  p.speculative.n_max = a.draft_max;
  p.speculative.adaptive = c.adaptive;
  if (a.p_min >= 0) p.speculative.p_min = a.p_min;
  double best_tps = 0, best_cpu = 0;
  RequestStats stats;
  std::vector<TokenId> generated;
  for (int r = 0; r < std::max(1, a.repeat); ++r) {
    const double cpu0 = process_cpu_ms();
    HEARTH_ASSIGN_OR_RETURN(CompletionResult res, rt.complete_tokens(id, prompt, p));
    const double cpu = (process_cpu_ms() - cpu0) / std::max<double>(1, res.generated.size());
    if (best_cpu == 0 || cpu < best_cpu) best_cpu = cpu;
    // generation_ms runs from the first token to the last: tokens after the first.
    const double tps =
        res.stats.generation_ms > 0
            ? (static_cast<double>(res.generated.size()) - 1) * 1000.0 / res.stats.generation_ms
            : 0;
    if (tps > best_tps) best_tps = tps;
    stats = res.stats;
    generated = res.generated;
  }
  if (tokens_out) *tokens_out = generated;
  const auto ratio = [](int64_t a, int64_t b) {
    return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
  };
  nlohmann::json j = {{"case", c.name},
                      {"type", speculative_type_name(c.type)},
                      {"adaptive", c.adaptive},
                      {"generated", generated.size()},
                      {"tokens_per_s", best_tps},
                      {"cpu_ms_per_token", best_cpu},
                      {"prefill_ms", stats.prefill_ms},
                      {"draft_tokens", stats.draft_tokens},
                      {"draft_accepted", stats.draft_accepted},
                      {"acceptance", ratio(stats.draft_accepted, stats.draft_tokens)},
                      {"decode_steps", stats.decode_steps},
                      {"draft_steps", stats.draft_steps},
                      {"drafted_step_share", ratio(stats.draft_steps, stats.decode_steps)},
                      {"mean_draft_length", ratio(stats.draft_tokens, stats.draft_steps)}};
  if (plain_tokens) j["identical_to_plain"] = generated == *plain_tokens;
  return j;
}

int run_spec_bench(const SpecArgs& a) {
  std::string text = a.prompt;
  if (!a.prompt_file.empty()) {
    std::ifstream in(a.prompt_file);
    if (!in) {
      std::fprintf(stderr, "bench spec: cannot read --prompt-file %s\n", a.prompt_file.c_str());
      return 1;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  auto rt = Runtime::create(RuntimeOptions{});
  if (!rt.ok()) {
    std::fprintf(stderr, "bench spec: %s\n", rt.status().to_string().c_str());
    return 1;
  }
  ModelConfig c;
  c.id = "bench";
  c.model_path = a.model;
  c.n_seq_max = 1;
  c.n_threads = a.threads;
  c.speculative.draft_model = a.draft;
  c.speculative.draft_max = a.draft_max;
  Status placed = apply_device_flags(a.device, c);
  if (auto id = placed.ok() ? (*rt)->load_model(c) : Result<std::string>(placed); !id.ok()) {
    std::fprintf(stderr, "bench spec: %s\n", id.status().to_string().c_str());
    return 1;
  }
  auto prompt = (*rt)->tokenize("bench", text, true, false);
  if (!prompt.ok()) {
    std::fprintf(stderr, "bench spec: %s\n", prompt.status().to_string().c_str());
    return 1;
  }
  nlohmann::json out = {{"model", a.model},
                        {"draft", a.draft},
                        {"prompt_tokens", prompt->size()},
                        {"gen", a.gen},
                        {"draft_max", a.draft_max},
                        {"p_min", a.p_min},
                        {"rounds", std::max(1, a.rounds)},
                        {"runs", nlohmann::json::array()}};
  std::vector<Case> cases = {{"plain", SpeculativeType::kNone, false}};
  std::vector<SpeculativeType> drafters = {SpeculativeType::kNgram};
  if (!a.draft.empty()) drafters.push_back(SpeculativeType::kDraft);
  for (SpeculativeType t : drafters) {
    if (!a.no_fixed) cases.push_back({speculative_type_name(t), t, false});
    cases.push_back({std::string(speculative_type_name(t)).append("-adaptive"), t, true});
  }
  // rounds[r][c]: case c's run in round r (each round runs every case once, in turn).
  std::vector<std::vector<nlohmann::json>> rounds;
  std::vector<TokenId> plain;
  int rc = 0;
  for (int r = 0; r < std::max(1, a.rounds); ++r) {
    rounds.emplace_back();
    for (const Case& c : cases) {
      const bool first = c.type == SpeculativeType::kNone;
      auto j = run_case(**rt, "bench", *prompt, c, a, first ? nullptr : &plain,
                        first ? &plain : nullptr);
      if (!j.ok()) {
        std::fprintf(stderr, "bench spec (%s): %s\n", c.name.c_str(),
                     j.status().to_string().c_str());
        return 1;
      }
      if (!first && !(*j)["identical_to_plain"].get<bool>()) rc = 1;
      rounds.back().push_back(std::move(*j));
    }
  }
  for (size_t c = 0; c < cases.size(); ++c) {
    std::vector<double> tps, speedup, cpu, cpu_speedup;
    for (const auto& round : rounds) {
      const double base = round[0]["tokens_per_s"].get<double>();
      tps.push_back(round[c]["tokens_per_s"].get<double>());
      speedup.push_back(base > 0 ? tps.back() / base : 0.0);
      cpu.push_back(round[c]["cpu_ms_per_token"].get<double>());
      cpu_speedup.push_back(cpu.back() > 0 ? round[0]["cpu_ms_per_token"].get<double>() / cpu.back()
                                           : 0.0);
    }
    nlohmann::json j = rounds.back()[c];  // the counts of the last round
    j["tokens_per_s"] = median(tps);
    j["tokens_per_s_rounds"] = tps;
    j["speedup"] = median(speedup);
    j["speedup_rounds"] = speedup;
    j["cpu_ms_per_token"] = median(cpu);
    j["cpu_speedup"] = median(cpu_speedup);
    j["cpu_speedup_rounds"] = cpu_speedup;
    out["runs"].push_back(j);
  }
  if (a.json) {
    std::printf("%s\n", json_text(out, 2).c_str());
    return rc;
  }
  std::printf("%-15s %9s %12s %8s %8s %10s %10s %9s %8s %10s\n", "case", "generated",
              "tokens_per_s", "drafted", "accepted", "acceptance", "drafted_at", "mean_len",
              "speedup", "identical");
  for (const auto& r : out["runs"])
    std::printf("%-15s %9d %12.2f %8lld %8lld %10.3f %10.3f %9.2f %8.2f %10s\n",
                r["case"].get<std::string>().c_str(), r["generated"].get<int>(),
                r["tokens_per_s"].get<double>(), r["draft_tokens"].get<long long>(),
                r["draft_accepted"].get<long long>(), r["acceptance"].get<double>(),
                r["drafted_step_share"].get<double>(), r["mean_draft_length"].get<double>(),
                r["speedup"].get<double>(),
                r.contains("identical_to_plain")
                    ? (r["identical_to_plain"].get<bool>() ? "yes" : "NO")
                    : "-");
  return rc;
}

Registrar reg("bench_spec", [](CLI::App& root) {
  CLI::App* bench = bench_command(root);
  auto* cmd = bench->add_subcommand(
      "spec", "Decode speed plain vs speculative (prompt lookup, draft model), greedy");
  auto args = std::make_shared<SpecArgs>();
  cmd->add_option("-m,--model", args->model, "Target GGUF model file")->required();
  cmd->add_option("--draft", args->draft, "Draft GGUF model (same vocabulary)");
  cmd->add_option("--prompt-file", args->prompt_file, "File holding the prompt text");
  cmd->add_option("--prompt", args->prompt, "Prompt text (without --prompt-file)");
  cmd->add_option("--gen", args->gen, "Tokens to generate (default 128)");
  cmd->add_option("--draft-max", args->draft_max, "Most tokens drafted per step (default 16)");
  cmd->add_option("--p-min", args->p_min,
                  "Draft model: stop drafting below this probability (default: the model's, "
                  "0)");
  cmd->add_option("--threads", args->threads, "Engine threads (0 = the default)");
  add_device_flags(cmd, &args->device);
  cmd->add_option("--repeat", args->repeat,
                  "Runs per case in a round; the fastest counts (default 1)");
  cmd->add_option("--rounds", args->rounds,
                  "Rounds of all cases in turn; medians over rounds (default 1)");
  cmd->add_flag("--no-fixed", args->no_fixed,
                "Skip the fixed-length speculative cases (only plain and *-adaptive)");
  cmd->add_flag("--json", args->json, "JSON output");
  cmd->callback([args] { exit_code() = run_spec_bench(*args); });
});

}  // namespace
}  // namespace hearth::cli
