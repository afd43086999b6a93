// A deterministic Backend for tests: no weights, no maths, but the same contracts as the
// engine, so scheduler and cache bugs show up as wrong outputs. It lives in hearth_testing,
// which only test binaries link; tests hand it to the runtime through ModelConfig::factory.
//   tokens   = bytes + 3 (0 = BOS, 1 = EOS, 2 = unused); tokenize adds no BOS
//   KV cell  = chain hash: cell[p] = mix(cell[p-1], token[p], p); cells live per sequence
//   logits   = a pure function of all cells of the sequence (so of its token history), with
//              printable ASCII favoured and EOS suppressed unless eos_bias is raised
// A restore that put the wrong cells back changes every later logit, so "warm equals cold"
// checks are meaningful. step() rejects rows that do not start at the sequence's current
// length (a scheduler bug) with Internal.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hearth/runtime/backend.h"
#include "hearth/runtime/runtime.h"

namespace hearth::runtime {

// Shared with tests so they can steer a backend the runtime owns (and re-creates on
// restart). All fields are atomics: set them from any thread.
struct StubControl {
  std::atomic<int64_t> steps{0};  // forward passes run so far
  std::atomic<int64_t> tokens_forwarded{0};
  std::atomic<int64_t> throw_at_step{-1};   // throw std::runtime_error when steps reaches it
  std::atomic<int64_t> fail_at_step{-1};    // return Internal when steps reaches it
  std::atomic<int32_t> step_delay_us{0};    // sleep per step (to widen race windows)
  std::atomic<int32_t> token_delay_us{0};   // and per token of the step (a pass's cost)
  std::atomic<int32_t> max_rows_seen{0};    // largest number of rows in one step
  std::atomic<int32_t> max_tokens_seen{0};  // largest token count in one step
  std::atomic<int64_t> kv_packs{0};         // kv_pack calls (each a save's payload)

  // A canned reply (empty = off): a sequence whose text ends with a prefix of it
  // continues it (its next byte gets a logit of +100), then ends with EOS, so tests can
  // drive the real runtime and server with a known model output (tool calls, think
  // blocks). The longest such prefix counts: start the script with a byte the prompt
  // does not end with.
  void set_script(std::string script) {
    std::lock_guard<std::mutex> lock(script_mu_);
    script_ = std::make_shared<const std::string>(std::move(script));
  }
  std::shared_ptr<const std::string> script() const {
    std::lock_guard<std::mutex> lock(script_mu_);
    return script_;
  }

 private:
  mutable std::mutex script_mu_;
  std::shared_ptr<const std::string> script_;
};

struct StubOptions {
  int32_t n_ctx = 4096;
  int32_t n_seq_max = 4;
  float eos_bias = -50.0f;  // added to the EOS logit
  std::string model_path = "stub.gguf";
  std::string kv_layout = "stub-kv-v1";
  std::shared_ptr<StubControl> control = std::make_shared<StubControl>();
};

class StubBackend : public Backend {
 public:
  static constexpr int32_t kVocab = 259;
  static constexpr TokenId kBos = 0;
  static constexpr TokenId kEos = 1;

  explicit StubBackend(StubOptions options);

  BackendInfo info() const override;
  KvIdentity kv_identity() const override;
  // Never adds BOS. The stub's vocabulary has no token with text (BOS and EOS are
  // bytes-free ids), so no text can become a control token: special_ranges are only
  // checked against the text, as the engine does, and otherwise change nothing.
  Result<std::vector<TokenId>> tokenize(std::string_view text, bool add_special,
                                        std::span<const TextRange> special_ranges) const override;
  Result<std::string> detokenize(std::span<const TokenId> tokens) const override;
  std::unique_ptr<TextStream> text_stream() const override;
  Result<std::unique_ptr<TokenSampler>> make_sampler(
      const SamplingOptions& options, std::span<const TokenId> history) const override;

  Status step(std::span<const StepRow> rows, std::vector<std::vector<float>>* logits_out) override;
  Result<std::vector<uint8_t>> kv_pack(int32_t seq, int32_t n_pos) override;
  Status kv_unpack(int32_t seq, std::span<const uint8_t> bytes, int32_t n_pos) override;
  Status seq_truncate(int32_t seq, int32_t n_pos) override;
  Result<std::vector<float>> embed(std::span<const TokenId> tokens) override;

  // The logits the stub produces after a history whose last cell is `cell`.
  static std::vector<float> logits_for_cell(uint64_t cell, float eos_bias);
  static uint64_t next_cell(uint64_t prev, TokenId token, int32_t pos);

 private:
  StubOptions options_;
  std::vector<std::vector<uint64_t>> cells_;  // per sequence
  // Per sequence, the token of each cell (-1 where a restore put the cell back): what a
  // canned reply continues.
  std::vector<std::vector<TokenId>> tokens_;
};

// Factory for ModelConfig::factory.
BackendFactory stub_factory(StubOptions options);
// A stub shaped by a model's config (n_ctx, n_seq_max, model_path), as the runtime
// would load it; `control` (optional) steers every backend the factory builds.
BackendFactory stub_factory_for(const ModelConfig& config,
                                std::shared_ptr<StubControl> control = nullptr);

}  // namespace hearth::runtime
