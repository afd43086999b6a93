// LoRA adapters in llama.cpp's GGUF adapter format (general.type = "adapter",
// adapter.type = "lora"): for a base matrix W named N, the tensors N.lora_a and
// N.lora_b add scale * B (A x) to W x, with scale = user_scale * alpha / rank when
// adapter.lora.alpha is set and non-zero, else user_scale. token_embd.weight's pair is
// stored flipped (A has a row of `rank` values per token; the delta is B A[token]).
//
// The forward pass applies the adapters of each token's own sequence (Engine::set_lora),
// in the order that sequence lists them, through the same batch-invariant matmul as the
// base weights: a token's values never depend on what else is in the batch.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/hparams.h"
#include "engine/model/kernels_bridge.h"
#include "hearth/gguf/gguf.h"
#include "hearth/status.h"

namespace hearth {

namespace engine {

// The per-layer matrices an adapter may target (others are refused at load).
enum class LoraTarget : int { kQ, kK, kV, kO, kGate, kUp, kDown };
constexpr int kLoraTargets = 7;

// One adapted matrix. Both factors are held as F32 (dequantized at load).
// Regular: a is rank x n_in, b is n_out x rank. token_embd: a is n_vocab x rank.
struct LoraPair {
  kb::WeightView a, b;
  std::vector<float> a_data, b_data;
  int64_t rank = 0;
  // llama.cpp's rule: the user's scale times alpha / rank when alpha != 0.
  float scale(float user_scale, float alpha) const {
    return alpha != 0.0f ? user_scale * alpha / static_cast<float>(rank) : user_scale;
  }
};

}  // namespace engine

class LoraAdapter {
 public:
  // Reads and validates `path` against the base model: architecture, every tensor a
  // .lora_a / .lora_b of a base matrix the engine can adapt, shapes, types. Errors name
  // the key or tensor. `owner` identifies the engine it may be used with.
  static Result<std::shared_ptr<const LoraAdapter>> load(const std::string& path,
                                                         const gguf::GgufFile& base,
                                                         const engine::Hparams& hp,
                                                         const void* owner);

  const engine::LoraPair* layer(int32_t l, engine::LoraTarget t) const {
    return layers_[static_cast<size_t>(l)][static_cast<size_t>(t)].get();
  }
  const engine::LoraPair* token_embd() const { return token_embd_.get(); }
  const engine::LoraPair* output() const { return output_.get(); }
  float alpha() const { return alpha_; }
  const void* owner() const { return owner_; }
  size_t n_pairs() const { return n_pairs_; }

 private:
  using LayerPairs = std::array<std::unique_ptr<engine::LoraPair>, engine::kLoraTargets>;
  std::vector<LayerPairs> layers_;
  std::unique_ptr<engine::LoraPair> token_embd_, output_;
  float alpha_ = 0.0f;
  const void* owner_ = nullptr;
  size_t n_pairs_ = 0;
};

}  // namespace hearth
