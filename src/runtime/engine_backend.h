// Backend over hearth::Engine (the native CPU transformer). The engine is thread-
// compatible, and the runtime's worker thread is its only caller for forward/KV/embed;
// tokenization uses a copy of the engine's immutable Tokenizer, so it is safe from any
// thread while a step runs.
#pragma once

#include <map>
#include <memory>

#include "hearth/engine/engine.h"
#include "hearth/engine/tokenizer.h"
#include "hearth/runtime/backend.h"
#include "hearth/runtime/runtime.h"
#include "runtime/token_sampler.h"

namespace hearth::runtime {

class EngineBackend : public Backend {
 public:
  explicit EngineBackend(std::unique_ptr<Engine> engine);

  BackendInfo info() const override { return info_; }
  KvIdentity kv_identity() const override { return identity_; }
  Result<std::vector<TokenId>> tokenize(std::string_view text, bool add_special,
                                        std::span<const TextRange> special_ranges) const override;
  Result<std::string> detokenize(std::span<const TokenId> tokens) const override;
  std::unique_ptr<TextStream> text_stream() const override;
  Result<std::string> token_bytes(TokenId token) const override;
  Result<std::unique_ptr<TokenSampler>> make_sampler(
      const SamplingOptions& options, std::span<const TokenId> history) const override;

  Status step(std::span<const StepRow> rows, std::vector<std::vector<float>>* logits_out) override;
  Result<std::vector<uint8_t>> kv_pack(int32_t seq, int32_t n_pos) override;
  Status kv_unpack(int32_t seq, std::span<const uint8_t> bytes, int32_t n_pos) override;
  Status kv_copy(int32_t src, int32_t dst, int32_t n_pos) override;
  Result<std::vector<std::span<uint8_t>>> kv_import_spans(int32_t seq, int32_t n_pos) override;
  Status kv_import_commit(int32_t seq, int32_t n_pos) override;
  Status seq_truncate(int32_t seq, int32_t n_pos) override;
  Result<std::vector<float>> embed(std::span<const TokenId> tokens) override;
  Result<std::vector<std::vector<float>>> embed_batch(std::span<const std::vector<TokenId>> inputs,
                                                      Pooling pooling) override;
  Status load_adapter(int32_t id, const std::string& path) override;
  Status unload_adapter(int32_t id) override;

 private:
  // Sets the engine's adapters of seq to `uses` when they differ from its current ones.
  Status use_adapters(int32_t seq, std::span<const AdapterUse> uses);

  std::unique_ptr<Engine> engine_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  BackendInfo info_;
  KvIdentity identity_;
  std::vector<BatchToken> batch_;  // reused between steps
  std::vector<float> logits_;
  LazyTokenVocab grammar_vocab_;  // token bytes for grammar sampling
  std::map<int32_t, std::shared_ptr<const LoraAdapter>> adapters_;  // by the runtime's id
  std::vector<std::vector<AdapterUse>> seq_adapters_;  // what the engine applies per seq
};

// The grammar view of a tokenizer's vocabulary: each token's text bytes (none for
// control tokens) and its end-of-generation ids.
std::shared_ptr<const grammar::TokenVocab> token_vocab_of(const Tokenizer& tokenizer);

// Loads `config.model_path` with the config's context, sequence and batch sizes.
BackendFactory engine_factory(const ModelConfig& config);

}  // namespace hearth::runtime
