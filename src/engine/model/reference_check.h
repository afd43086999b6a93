// llama.cpp reference cases (/work/shared/reference/*.txt, format in its README):
// parsing, and the teacher-forced comparison used by `hearth logits --reference` and
// tests/engine/reference_test.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "hearth/engine/engine.h"
#include "hearth/status.h"

namespace hearth::engine {

struct ReferenceStep {
  int32_t token = 0;
  std::array<std::pair<int32_t, float>, 5> top5{};
};

struct ReferenceCase {
  std::string path;
  std::string model_file;
  std::string arch;
  int32_t n_vocab = 0;
  bool add_bos = true;
  std::string prompt_text;
  std::vector<int32_t> prompt_tokens;
  std::vector<ReferenceStep> steps;
  double batch_variance = 0;
  std::string text_hex;
};

Result<ReferenceCase> parse_reference_case(const std::string& path);

// The case's model: <case dir>/models/<file>, then <case dir>/../models/<file>.
// Empty when neither exists.
std::string resolve_reference_model(const ReferenceCase& c);

struct ReferenceBounds {
  double max_abs;
  double mean_abs;
};
// F32/F16/BF16 models: 0.1 / 0.01; quantized weights or a quantized KV type (the
// references ran with F16 KV): 0.25 / 0.06.
ReferenceBounds reference_bounds(const ModelInfo& info);

struct ReferenceReport {
  std::vector<int32_t> argmax;               // ours, per step
  std::vector<std::array<float, 5>> logits;  // ours, for the reference's five ids
  // Ours, every step's whole row (n_vocab floats each), when run_reference_case was asked
  // to keep them (`hearth logits --reference CASE --out F`).
  std::vector<float> rows;
  double max_abs_diff = 0;
  double mean_abs_diff = 0;
  int32_t top1_violations = 0;       // steps with a clear llama.cpp top-1 that we miss
  bool argmax_matches = true;        // our argmax equals the reference token at every step
  bool prompt_tokens_match = false;  // our tokenization of prompt_text equals prompt_tokens
  // MoE: steps compared with the runner-up expert on a layer where our router nearly tied
  // (see run_reference_case).
  int32_t rerouted_steps = 0;
  ReferenceBounds bounds{};
  bool pass = false;
};

// A router decision closer than this (probability of the last chosen expert minus the
// best unchosen one's) is one that rounding-level noise can flip.
inline constexpr float kRouterTieMargin = 0.01f;

// Teacher-forced run on seq 0 of the engine (cleared first): the prompt in one batch,
// then each reference token one at a time.
//
// MoE models: an expert choice is discrete, and where the engine's router nearly ties
// (margin below kRouterTieMargin) llama.cpp may have chosen the runner-up (the
// reference README's MoE note). When such a step is outside the max bound, its last
// token is run again with the runner-up on each nearly tied layer
// (Engine::route_runner_up); the closest alternative is kept (logits and KV) when it
// is within the bound, and counted in rerouted_steps.
Result<ReferenceReport> run_reference_case(Engine& engine, const ReferenceCase& c,
                                           bool keep_rows = false);

}  // namespace hearth::engine
