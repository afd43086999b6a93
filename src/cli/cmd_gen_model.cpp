// `hearth gen-model`: a GGUF of one of the engine's families with seeded random
// weights (see gen_model.h; the presets are listed in docs/gguf.md).
#include <cstdio>

#include "cli/gen_model.h"
#include "cli/progress.h"
#include "cli/registry.h"

namespace hearth::cli {
namespace {

Registrar reg("gen-model", [](CLI::App& root) {
  auto opts = std::make_shared<GenModelOptions>();
  auto* cmd = root.add_subcommand(
      "gen-model", "Write a GGUF of one architecture family with seeded random N(0, 0.02) weights");
  cmd->add_option("--arch", opts->arch,
                  "Architecture family (default: llama, or the family of a preset only it has)")
      ->check(CLI::IsMember(arch_names()));
  std::string presets;
  for (const auto& n : preset_names()) presets += (presets.empty() ? "" : ", ") + n;
  cmd->add_option("--preset", opts->preset,
                  "Model shape within the family (default tiny); family/name: " + presets);
  cmd->add_option("--ctx", opts->ctx, "Context length to write (default: the preset's)")
      ->check(CLI::Range(1u, 1u << 30));
  cmd->add_option("--type", opts->type, "Weight type")
      ->check(CLI::IsMember(weight_type_names()))
      ->capture_default_str();
  cmd->add_option("--seed", opts->seed, "RNG seed")->capture_default_str();
  cmd->add_option("--out", opts->out, "Output .gguf path")->required();
  cmd->add_option("--vocab-from", opts->vocab_from,
                  "Copy every tokenizer.* key from this GGUF (vocab size follows it)");
  cmd->add_option("--threads", opts->threads,
                  "Worker threads (0: one per core); the output bytes do not depend on it")
      ->check(CLI::Range(0u, 1024u))
      ->capture_default_str();
  auto quiet = std::make_shared<bool>(false);
  cmd->add_flag("-q,--quiet", *quiet,
                "No progress bar (there is none when stderr is not a terminal)");
  cmd->callback([opts, quiet] {
    ProgressBar bar("writing " + opts->out, ProgressBar::Unit::kBytes, *quiet);
    opts->progress = bar.callback();
    Status st = generate_model(*opts);
    opts->progress = nullptr;
    bar.finish();
    if (!st.ok()) {
      std::fprintf(stderr, "hearth gen-model: %s\n", st.to_string().c_str());
      exit_code() = 1;
      return;
    }
    exit_code() = 0;
  });
});

}  // namespace
}  // namespace hearth::cli
