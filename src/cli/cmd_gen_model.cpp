// `hearth gen-model`: a GGUF of one of the engine's families with seeded random
// weights (see gen_model.h; the presets are listed in docs/gguf.md).
#include <cstdio>

#include "cli/gen_lora.h"
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
  // --lora-for: a random LoRA adapter for an existing base model instead of a model.
  auto lora = std::make_shared<GenLoraOptions>();
  cmd->add_option("--lora-for", lora->base,
                  "Write a random LoRA adapter (llama.cpp's GGUF adapter format) for this base "
                  "model instead: attn_q, attn_v and ffn matrices; --type f32 or f16");
  cmd->add_option("--rank", lora->rank, "LoRA rank (with --lora-for)")
      ->check(CLI::Range(1u, 4096u))
      ->capture_default_str();
  cmd->add_option("--alpha", lora->alpha, "LoRA alpha (with --lora-for; 0: scale = user scale)")
      ->capture_default_str();
  auto quiet = std::make_shared<bool>(false);
  cmd->add_flag("-q,--quiet", *quiet,
                "No progress bar (there is none when stderr is not a terminal)");
  cmd->callback([opts, quiet, lora, cmd] {
    if (!lora->base.empty()) {
      for (const char* only : {"--arch", "--preset", "--ctx", "--vocab-from"}) {
        if (cmd->count(only) > 0) {
          std::fprintf(stderr, "hearth gen-model: %s does not apply to --lora-for\n", only);
          exit_code() = 1;
          return;
        }
      }
      lora->out = opts->out;
      lora->seed = opts->seed;
      lora->type = opts->type;
      if (Status st = generate_lora(*lora); !st.ok()) {
        std::fprintf(stderr, "hearth gen-model: %s\n", st.to_string().c_str());
        exit_code() = 1;
        return;
      }
      exit_code() = 0;
      return;
    }
    for (const char* only : {"--rank", "--alpha"}) {
      if (cmd->count(only) > 0) {
        std::fprintf(stderr, "hearth gen-model: %s needs --lora-for\n", only);
        exit_code() = 1;
        return;
      }
    }
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
