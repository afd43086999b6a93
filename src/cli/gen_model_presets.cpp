// The shapes `hearth gen-model` writes (docs/gguf.md lists them). Per family: "tiny"
// for tests (a 512-token vocabulary, a few layers) and realistic shapes for benchmarks,
// the published models' hyperparameters where the preset is named after one.
#include <string_view>

#include "cli/gen_model.h"

namespace hearth::cli {
namespace {

//  arch, name, vocab, embd, layers, heads, kv heads, head dim (0: embd / heads), ffn
//  (MoE: per expert), experts, used, ctx, rope base, rms eps, sliding window
constexpr ModelPreset kPresets[] = {
    {"llama", "tiny", 512, 64, 2, 4, 2, 0, 192, 0, 0, 512, 10000.0f, 1e-5f, 0},
    {"llama", "small", 512, 256, 4, 8, 4, 0, 768, 0, 0, 2048, 10000.0f, 1e-5f, 0},
    {"llama", "tinyllama-1.1b", 32000, 2048, 22, 32, 4, 0, 5632, 0, 0, 2048, 10000.0f, 1e-5f, 0},
    // The same shape with a 32k context and the rope base of a real 32k llama-family
    // model, Mistral-7B-v0.2 (rope_theta 1e6, 32,768 positions): long-context benchmarks.
    {"llama", "tinyllama-1.1b-32k", 32000, 2048, 22, 32, 4, 0, 5632, 0, 0, 32768, 1000000.0f, 1e-5f,
     0},
    // Llama-3-8B's shape (grouped-query attention, 8 KV heads of 128, a 128k vocabulary):
    // the 7-8B class people run on one GPU, for the GPU benchmarks (docs/gpu.md).
    {"llama", "llama3-8b", 128256, 4096, 32, 32, 8, 0, 14336, 0, 0, 8192, 500000.0f, 1e-5f, 0},
    // Qwen3: q/k norms, an explicit head size (tiny: 32, not 64 / 4), tied output.
    {"qwen3", "tiny", 512, 64, 2, 4, 2, 32, 192, 0, 0, 512, 1000000.0f, 1e-6f, 0},
    {"qwen3", "small", 32000, 512, 8, 8, 4, 128, 1536, 0, 0, 40960, 1000000.0f, 1e-6f, 0},
    {"qwen3", "qwen3-0.6b", 151936, 1024, 28, 16, 8, 128, 3072, 0, 0, 40960, 1000000.0f, 1e-6f, 0},
    // Qwen3-MoE: Qwen3-30B-A3B's layout (128 experts, 8 used) scaled down to 2.4 B
    // parameters, 64 experts of width 384, 8 used (0.57 B active, 0.16 B of it the
    // embedding).
    {"qwen3moe", "tiny", 512, 64, 2, 4, 2, 32, 64, 8, 2, 512, 1000000.0f, 1e-6f, 0},
    {"qwen3moe", "qwen3moe-2.4b", 151936, 1024, 28, 16, 4, 128, 384, 64, 8, 40960, 1000000.0f,
     1e-6f, 0},
    // Gemma 2: soft-capping, post norms, every other layer slides.
    {"gemma2", "tiny", 512, 64, 2, 4, 2, 32, 192, 0, 0, 512, 10000.0f, 1e-6f, 64},
    {"gemma2", "gemma2-2b", 256000, 2304, 26, 8, 4, 256, 9216, 0, 0, 8192, 10000.0f, 1e-6f, 4096},
    // Gemma 3 (text): q/k norms, 5 sliding layers per global one (tiny: 6 layers).
    {"gemma3", "tiny", 512, 64, 6, 4, 1, 32, 192, 0, 0, 512, 1000000.0f, 1e-6f, 64},
    {"gemma3", "gemma3-1b", 262144, 1152, 26, 4, 1, 256, 6912, 0, 0, 32768, 1000000.0f, 1e-6f, 512},
    // Phi-3: fused attn_qkv and gate/up.
    {"phi3", "tiny", 512, 64, 2, 4, 4, 0, 192, 0, 0, 512, 10000.0f, 1e-5f, 0},
    {"phi3", "phi-3-mini", 32064, 3072, 32, 32, 32, 0, 8192, 0, 0, 4096, 10000.0f, 1e-5f, 0},
    // Mixtral: a llama with expert FFNs; Mixtral-8x7B's layout scaled down to 1.5 B.
    {"mixtral", "tiny", 512, 64, 2, 4, 2, 0, 128, 4, 2, 512, 1000000.0f, 1e-5f, 0},
    {"mixtral", "mixtral-1.5b", 32000, 1024, 16, 16, 4, 0, 3584, 8, 2, 32768, 1000000.0f, 1e-5f, 0},
    // bert: an encoder for embeddings (learned positions, LayerNorm, GELU, non-causal);
    // bge-small-en-v1.5's shape (use --vocab-from ggml-vocab-bert-bge.gguf for its vocabulary).
    {"bert", "tiny", 512, 64, 2, 4, 4, 0, 128, 0, 0, 128, 10000.0f, 1e-12f, 0},
    {"bert", "bge-small", 30522, 384, 12, 12, 12, 0, 1536, 0, 0, 512, 10000.0f, 1e-12f, 0},
};

constexpr std::string_view kArchs[] = {"llama",  "qwen3", "qwen3moe", "gemma2",
                                       "gemma3", "phi3",  "mixtral",  "bert"};

}  // namespace

const char* ModelPreset::gguf_arch() const {
  return std::string_view(arch) == "mixtral" ? "llama" : arch;
}

bool ModelPreset::tied() const {
  const std::string_view a = arch;
  return a == "qwen3" || a == "qwen3moe" || a == "gemma2" || a == "gemma3";
}

std::vector<std::string> arch_names() {
  return std::vector<std::string>(std::begin(kArchs), std::end(kArchs));
}

const ModelPreset* find_preset(const std::optional<std::string>& arch, const std::string& name) {
  const ModelPreset* only = nullptr;
  int matches = 0;
  for (const auto& p : kPresets) {
    if (name != p.name) continue;
    if (arch && *arch == p.arch) return &p;
    if (!arch && std::string_view(p.arch) == "llama") return &p;
    only = &p;
    ++matches;
  }
  return !arch && matches == 1 ? only : nullptr;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> out;
  for (const auto& p : kPresets) out.push_back(std::string(p.arch) + "/" + p.name);
  return out;
}

std::vector<std::string> preset_names(const std::string& arch) {
  std::vector<std::string> out;
  for (const auto& p : kPresets)
    if (arch == p.arch) out.emplace_back(p.name);
  return out;
}

}  // namespace hearth::cli
