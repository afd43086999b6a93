// A deterministic, model-free ServiceApi for tests of the HTTP layer (and
// `hearth serve --backend fake`). Bytes are tokens; the "model" writes words
// picked by a hash of the context, so the same prompt and seed always give the
// same text. It keeps the token sequences it has seen to report cached_tokens
// like a prefix cache would, and counts active generations so tests can check
// that a disconnect cancels.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include "server/service_api.h"

namespace hearth::server {

class FakeService : public ServiceApi {
 public:
  static constexpr TokenId kBos = 1;
  static constexpr TokenId kEos = 2;
  static constexpr TokenId kByteBase = 3;

  FakeService();

  // Test knobs.
  void set_token_delay_ms(int ms) { token_delay_ms_ = ms; }
  void set_context_length(int64_t n) { default_context_ = n; }
  // After this many generated tokens the model emits EOS (0 = never).
  void set_eos_after(int64_t n) { eos_after_ = n; }
  int64_t active_generations() const { return active_.load(); }
  int64_t cancelled_generations() const { return cancelled_.load(); }
  bool shutdown_called() const { return shutdown_called_.load(); }

  std::vector<ModelDescription> list_models() override;
  Result<ModelDescription> model_info(const std::string& id) override;
  Result<ModelDescription> load_model(const ModelLoadOptions& options) override;
  Status unload_model(const std::string& id) override;
  Result<std::vector<TokenId>> tokenize(const std::string& model, const std::string& text,
                                        bool add_special,
                                        std::span<const TextRange> special_ranges) override;
  Result<std::string> detokenize(const std::string& model,
                                 const std::vector<TokenId>& tokens) override;
  Result<GenerateStats> generate(const GenerateRequest& request, GenerateSink& sink) override;
  Result<std::vector<std::vector<float>>> embed(const std::string& model,
                                                const std::vector<std::string>& inputs) override;
  std::map<std::string, int64_t> cache_counters() override;
  std::vector<TierUsage> tier_usage() override;
  Result<std::string> cache_rows_json(int64_t limit) override;
  Result<int64_t> cache_evict_bytes(const std::vector<std::string>& tiers, int64_t bytes) override;
  Result<int64_t> cache_gc() override;
  void shutdown() override;

 private:
  std::mutex mu_;
  std::map<std::string, ModelDescription> models_;
  std::vector<std::vector<TokenId>> seen_;  // the "cache": finished sequences
  std::map<std::string, int64_t> counters_;
  int64_t default_context_ = 2048;
  int64_t eos_after_ = 0;
  std::atomic<int> token_delay_ms_{0};
  std::atomic<int64_t> active_{0};
  std::atomic<int64_t> cancelled_{0};
  std::atomic<bool> shutdown_called_{false};
};

}  // namespace hearth::server
