// `hearth bench grammar`: decode speed with and without a grammar, through the runtime's
// real sampler path. Unconstrained and constrained runs alternate (a loaded machine
// drifts), each reports generated tokens / generation time, and the medians are compared.
// The default grammar is a JSON array of objects that never closes, so every constrained
// run decodes the full --gen tokens.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/bench_util.h"
#include "cli/device_flags.h"
#include "cli/registry.h"
#include "hearth/gguf/gguf.h"
#include "hearth/grammar/grammar.h"
#include "hearth/grammar/json_schema.h"
#include "hearth/runtime/runtime.h"
#include "runtime/engine_backend.h"

namespace hearth::cli {
namespace {

using runtime::ModelConfig;
using runtime::RequestParams;
using runtime::Runtime;
using runtime::RuntimeOptions;

struct Args {
  std::string model;
  std::string grammar_file;
  std::string schema_file;
  int gen = 128;
  int reps = 5;
  int threads = 0;
  bool json = false;
  DeviceFlags device;  // ModelConfig::device, n_gpu_layers
};

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<std::string> bench_grammar(const Args& a) {
  if (!a.grammar_file.empty()) return read_file(a.grammar_file);
  nlohmann::json schema;
  if (!a.schema_file.empty()) {
    HEARTH_ASSIGN_OR_RETURN(std::string text, read_file(a.schema_file));
    schema = nlohmann::json::parse(text, nullptr, false);
    if (schema.is_discarded()) return InvalidArgument(a.schema_file + ": not JSON");
    return grammar::json_schema_to_gbnf(schema);
  }
  schema = nlohmann::json::parse(R"({"type": "object", "properties": {
      "name": {"type": "string"}, "n": {"type": "integer"}, "ok": {"type": "boolean"}},
      "required": ["name", "n", "ok"]})");
  HEARTH_ASSIGN_OR_RETURN(std::string item, grammar::json_schema_to_gbnf(schema));
  item.replace(0, 4, "item");  // "root ::= ..." -> "item ::= ..."
  return "root ::= \"[\" ws item (\",\" ws item)*\n" + item;
}

// The grammar's own cost, apart from the forward pass: the constrained runs' tokens
// replayed through a fresh matcher, timing each step's full token mask (no mask cache
// shared between runs; greedy's argmax shortcut not taken). Milliseconds per token.
Result<std::vector<double>> mask_ms_per_token(const std::string& model, const std::string& gbnf,
                                              const std::vector<std::vector<int32_t>>& runs) {
  HEARTH_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::open(model));
  HEARTH_ASSIGN_OR_RETURN(Vocab v, vocab_from_gguf(file));
  HEARTH_ASSIGN_OR_RETURN(Tokenizer tok, Tokenizer::create(std::move(v)));
  const auto vocab = runtime::token_vocab_of(tok);
  HEARTH_ASSIGN_OR_RETURN(grammar::Grammar g, grammar::parse_gbnf(gbnf));
  std::vector<double> out;
  std::vector<uint8_t> mask;
  for (const auto& tokens : runs) {
    grammar::Matcher m(g);
    const auto t0 = std::chrono::steady_clock::now();
    for (int32_t t : tokens) {
      m.allowed_tokens(*vocab, mask);
      if (!vocab->is_eog(t)) (void)m.accept_bytes(vocab->bytes(t));
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    out.push_back(tokens.empty() ? 0 : ms / static_cast<double>(tokens.size()));
  }
  return out;
}

int run(const Args& a) {
  auto gbnf = bench_grammar(a);
  if (!gbnf.ok()) {
    std::fprintf(stderr, "bench grammar: %s\n", gbnf.status().to_string().c_str());
    return 1;
  }
  auto rt = Runtime::create(RuntimeOptions{});
  if (!rt.ok()) {
    std::fprintf(stderr, "bench grammar: %s\n", rt.status().to_string().c_str());
    return 1;
  }
  ModelConfig c;
  c.id = "bench";
  c.model_path = a.model;
  c.n_threads = a.threads;
  c.n_ctx = a.gen + 64;
  c.n_seq_max = 1;
  c.policy.min_tokens = 1 << 30;  // no cache saves: only decode is timed
  c.policy.cold_min_tokens = 1 << 30;
  Status placed = apply_device_flags(a.device, c);
  if (auto l = placed.ok() ? rt.value()->load_model(c) : Result<std::string>(placed); !l.ok()) {
    std::fprintf(stderr, "bench grammar: %s\n", l.status().to_string().c_str());
    return 1;
  }
  std::vector<double> plain, constrained;
  std::vector<int64_t> constrained_tokens;
  std::vector<std::vector<int32_t>> constrained_ids;
  for (int rep = 0; rep < a.reps; ++rep) {
    for (bool with_grammar : {false, true}) {
      RequestParams p;
      p.response_tokens = a.gen;
      p.sampling.temperature = 1.0f;
      p.sampling.seed = static_cast<uint64_t>(rep);
      if (with_grammar) p.sampling.grammar = gbnf.value();
      auto r = rt.value()->complete("bench", "Once upon a time", p);
      if (!r.ok()) {
        std::fprintf(stderr, "bench grammar: %s\n", r.status().to_string().c_str());
        return 1;
      }
      const double tps = r->stats.generation_ms > 0
                             ? static_cast<double>(r->stats.completion_tokens - 1) * 1000.0 /
                                   r->stats.generation_ms
                             : 0;
      (with_grammar ? constrained : plain).push_back(tps);
      if (with_grammar) {
        constrained_tokens.push_back(r->stats.completion_tokens);
        constrained_ids.push_back(r->generated);
      }
    }
  }
  const double mp = median(plain), mc = median(constrained);
  auto mask = mask_ms_per_token(a.model, gbnf.value(), constrained_ids);
  if (!mask.ok()) {
    std::fprintf(stderr, "bench grammar: %s\n", mask.status().to_string().c_str());
    return 1;
  }
  const double mask_ms = median(mask.value());
  // The ratio the mask cost alone allows: token time / (token time + mask time).
  const double token_ms = mp > 0 ? 1000.0 / mp : 0;
  const double mask_ratio = token_ms > 0 ? token_ms / (token_ms + mask_ms) : 0;
  if (a.json) {
    nlohmann::json out = {{"model", a.model},
                          {"gen", a.gen},
                          {"reps", a.reps},
                          {"unconstrained_tok_s", plain},
                          {"constrained_tok_s", constrained},
                          {"constrained_tokens", constrained_tokens},
                          {"median_unconstrained_tok_s", mp},
                          {"median_constrained_tok_s", mc},
                          {"ratio", mp > 0 ? mc / mp : 0},
                          {"mask_ms_per_token", mask.value()},
                          {"median_mask_ms_per_token", mask_ms},
                          {"ratio_from_mask_cost", mask_ratio}};
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf(
        "decode tok/s (median of %d, %d tokens): unconstrained %.2f  constrained %.2f  "
        "ratio %.3f\n",
        a.reps, a.gen, mp, mc, mp > 0 ? mc / mp : 0);
  }
  return 0;
}

Registrar reg("bench_grammar", [](CLI::App& root) {
  CLI::App* bench = bench_command(root);
  auto* cmd = bench->add_subcommand("grammar", "Decode speed with vs without a grammar");
  auto a = std::make_shared<Args>();
  cmd->add_option("-m,--model", a->model, "GGUF model file")->required();
  auto* g = cmd->add_option("--grammar", a->grammar_file, "GBNF grammar file");
  cmd->add_option("--schema", a->schema_file, "JSON Schema file (converted to GBNF)")->excludes(g);
  cmd->add_option("--gen", a->gen, "tokens to decode per run")->check(CLI::Range(2, 100000));
  cmd->add_option("--reps", a->reps, "runs of each kind (alternating); medians are reported")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("-t,--threads", a->threads, "engine threads (0 = all cores)");
  add_device_flags(cmd, &a->device);
  cmd->add_flag("--json", a->json, "JSON output");
  cmd->callback([a] { exit_code() = run(*a); });
});

}  // namespace
}  // namespace hearth::cli
