// `hearth gen-model --lora-for BASE.gguf`: a LoRA adapter in llama.cpp's GGUF adapter
// format with seeded random factors for a base model, so tests and agreement checks
// need no download.
#pragma once

#include <cstdint>
#include <string>

#include "hearth/status.h"

namespace hearth::cli {

struct GenLoraOptions {
  std::string base;  // the base model's GGUF
  std::string out;
  uint32_t rank = 8;
  float alpha = 16.0f;
  uint64_t seed = 0;
  std::string type = "f32";  // f32 or f16
  double stddev = 0.02;
};

// Writes `out`: general.type "adapter", adapter.type "lora", adapter.lora.alpha, and
// for every blk.N.{attn_q, attn_v, ffn_gate, ffn_up, ffn_down}.weight of the base, a
// .lora_a (rank rows of n_in) and a .lora_b (n_out rows of rank) of N(0, stddev^2).
Status generate_lora(const GenLoraOptions& opts);

}  // namespace hearth::cli
