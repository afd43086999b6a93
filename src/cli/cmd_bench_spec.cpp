// `hearth bench spec -m TARGET [--draft DRAFT] --prompt-file F --gen N [--json]`: decode
// speed of one greedy request, plain vs speculative, through the whole runtime.
//   plain        no speculation (one target forward pass per token)
//   ngram        prompt lookup (drafts from the context)
//   draft        the draft model (only with --draft)
// For each: tokens/s over the generation (first token to last), tokens drafted and
// accepted, the acceptance rate, and whether the tokens equal the plain run's (they must).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/device_flags.h"
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
  bool json = false;
  DeviceFlags device;  // the target's and the draft's ModelConfig::device, n_gpu_layers
};

Result<nlohmann::json> run_case(Runtime& rt, const std::string& id,
                                const std::vector<TokenId>& prompt, SpeculativeType type,
                                const SpecArgs& a, const std::vector<TokenId>* plain_tokens,
                                std::vector<TokenId>* tokens_out) {
  RequestParams p;
  p.response_tokens = a.gen;
  p.sampling.temperature = 0;
  p.cache_prompt = false;  // every run prefills cold: the decode phase is what is compared
  p.speculative.type = type;
  p.speculative.n_max = a.draft_max;
  if (a.p_min >= 0) p.speculative.p_min = a.p_min;
  double best_tps = 0;
  RequestStats stats;
  std::vector<TokenId> generated;
  for (int r = 0; r < std::max(1, a.repeat); ++r) {
    HEARTH_ASSIGN_OR_RETURN(CompletionResult res, rt.complete_tokens(id, prompt, p));
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
  nlohmann::json j = {
      {"type", speculative_type_name(type)},
      {"generated", generated.size()},
      {"tokens_per_s", best_tps},
      {"draft_tokens", stats.draft_tokens},
      {"draft_accepted", stats.draft_accepted},
      {"acceptance", stats.draft_tokens > 0 ? static_cast<double>(stats.draft_accepted) /
                                                  static_cast<double>(stats.draft_tokens)
                                            : 0.0}};
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
                        {"runs", nlohmann::json::array()}};
  std::vector<TokenId> plain;
  std::vector<SpeculativeType> types = {SpeculativeType::kNone, SpeculativeType::kNgram};
  if (!a.draft.empty()) types.push_back(SpeculativeType::kDraft);
  int rc = 0;
  for (SpeculativeType t : types) {
    const bool first = t == SpeculativeType::kNone;
    auto j =
        run_case(**rt, "bench", *prompt, t, a, first ? nullptr : &plain, first ? &plain : nullptr);
    if (!j.ok()) {
      std::fprintf(stderr, "bench spec (%s): %s\n", speculative_type_name(t),
                   j.status().to_string().c_str());
      return 1;
    }
    if (!first && !(*j)["identical_to_plain"].get<bool>()) rc = 1;
    out["runs"].push_back(*j);
  }
  const double base = out["runs"][0]["tokens_per_s"].get<double>();
  for (auto& r : out["runs"])
    r["speedup"] = base > 0 ? r["tokens_per_s"].get<double>() / base : 0.0;
  if (a.json) {
    std::printf("%s\n", json_text(out, 2).c_str());
    return rc;
  }
  std::printf("%-6s %9s %12s %9s %9s %11s %8s %10s\n", "type", "generated", "tokens_per_s",
              "drafted", "accepted", "acceptance", "speedup", "identical");
  for (const auto& r : out["runs"])
    std::printf(
        "%-6s %9d %12.2f %9lld %9lld %11.3f %8.2f %10s\n", r["type"].get<std::string>().c_str(),
        r["generated"].get<int>(), r["tokens_per_s"].get<double>(),
        r["draft_tokens"].get<long long>(), r["draft_accepted"].get<long long>(),
        r["acceptance"].get<double>(), r["speedup"].get<double>(),
        r.contains("identical_to_plain") ? (r["identical_to_plain"].get<bool>() ? "yes" : "NO")
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
  cmd->add_option("--repeat", args->repeat, "Runs per case; the fastest counts (default 1)");
  cmd->add_flag("--json", args->json, "JSON output");
  cmd->callback([args] { exit_code() = run_spec_bench(*args); });
});

}  // namespace
}  // namespace hearth::cli
