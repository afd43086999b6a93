#include "server/fake_service.h"

#include <chrono>
#include <cmath>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/json_text.h"

namespace hearth::server {
namespace {

const char* const kWords[] = {" the",    " cat",     " sat",    " on",     " a",     " warm",
                              " hearth", " and",     " purred", " softly", " while", " rain",
                              " fell",   " outside", ".",       " It"};

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

}  // namespace

FakeService::FakeService() = default;

std::vector<ModelDescription> FakeService::list_models() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ModelDescription> out;
  for (const auto& [id, m] : models_) out.push_back(m);
  return out;
}

Result<ModelDescription> FakeService::model_info(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(id);
  if (it == models_.end()) return NotFound("model '" + id + "' is not loaded");
  return it->second;
}

Result<ModelDescription> FakeService::load_model(const ModelLoadOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  if (models_.count(options.id))
    return AlreadyExists("model '" + options.id + "' is already loaded");
  ModelDescription m;
  m.id = options.id;
  m.path = options.path;
  m.context_length = options.context > 0 ? options.context : default_context_;
  m.n_vocab = 256 + kByteBase;
  m.embedding_dim = 8;
  m.chat_template = "{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}";
  m.created_unix = 1700000000;
  models_[m.id] = m;
  return m;
}

Status FakeService::unload_model(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!models_.erase(id)) return NotFound("model '" + id + "' is not loaded");
  return OkStatus();
}

Result<std::vector<TokenId>> FakeService::tokenize(const std::string& model,
                                                   const std::string& text, bool add_special,
                                                   std::span<const TextRange> /*special_ranges*/) {
  // The fake's vocabulary is bytes plus BOS/EOS, none with text: no range changes a token.
  HEARTH_RETURN_IF_ERROR(model_info(model).status());
  std::vector<TokenId> out;
  if (add_special) out.push_back(kBos);
  for (unsigned char c : text) out.push_back(kByteBase + c);
  return out;
}

Result<std::string> FakeService::detokenize(const std::string& model,
                                            const std::vector<TokenId>& tokens) {
  HEARTH_RETURN_IF_ERROR(model_info(model).status());
  std::string out;
  for (TokenId t : tokens) {
    if (t < 0 || t >= 256 + kByteBase)
      return InvalidArgument("tokens: id " + std::to_string(t) + " out of range");
    if (t >= kByteBase) out += static_cast<char>(t - kByteBase);
  }
  return out;
}

Result<GenerateStats> FakeService::generate(const GenerateRequest& request, GenerateSink& sink) {
  HEARTH_ASSIGN_OR_RETURN(auto model, model_info(request.model));
  GenerateStats stats;
  stats.prompt_tokens = static_cast<int64_t>(request.prompt.size());
  {
    // Longest prefix shared with any finished sequence, leaving at least one token
    // to prefill (as a real prefix cache must, to get logits).
    std::lock_guard<std::mutex> lock(mu_);
    size_t best = 0;
    for (const auto& seq : seen_) {
      size_t n = 0;
      while (n < seq.size() && n < request.prompt.size() && seq[n] == request.prompt[n]) ++n;
      best = std::max(best, n);
    }
    if (best >= request.prompt.size()) best = request.prompt.size() - 1;
    stats.cached_tokens = static_cast<int64_t>(best);
    ++counters_[best > 0 ? "hits_longest_prefix" : "misses"];
  }
  active_.fetch_add(1);
  uint64_t h = 1469598103934665603ULL;
  for (TokenId t : request.prompt) h = mix(h, static_cast<uint64_t>(t));
  if (request.sampling.temperature > 0)
    h = mix(h, request.sampling.has_seed ? request.sampling.seed : 42);
  std::vector<TokenId> sequence = request.prompt;
  stats.finish_reason = "length";
  bool cancelled = false;
  for (int64_t i = 0; i < request.max_tokens; ++i) {
    if (token_delay_ms_ > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(token_delay_ms_.load()));
    if (eos_after_ > 0 && i >= eos_after_) {
      stats.finish_reason = "stop";
      break;
    }
    h = mix(h, static_cast<uint64_t>(i));
    const int word = static_cast<int>(h % (sizeof(kWords) / sizeof(kWords[0])));
    const TokenId token = static_cast<TokenId>(1000 + word);
    sequence.push_back(token);
    ++stats.completion_tokens;
    if (!sink.on_token(kWords[word], token)) {
      cancelled = true;
      stats.finish_reason = "cancelled";
      break;
    }
  }
  active_.fetch_sub(1);
  if (cancelled) cancelled_.fetch_add(1);
  std::lock_guard<std::mutex> lock(mu_);
  seen_.push_back(std::move(sequence));
  ++counters_["saves"];
  return stats;
}

Result<std::vector<std::vector<float>>> FakeService::embed(const std::string& model,
                                                           const std::vector<std::string>& inputs) {
  HEARTH_RETURN_IF_ERROR(model_info(model).status());
  std::vector<std::vector<float>> out;
  for (const auto& text : inputs) {
    std::vector<float> v(8, 0.0f);
    for (size_t i = 0; i < text.size(); ++i)
      v[(static_cast<unsigned char>(text[i]) + i) % 8] += 1.0f;
    double norm = 0;
    for (float x : v) norm += x * x;
    norm = std::sqrt(norm);
    if (norm > 0) {
      for (float& x : v) x = static_cast<float>(x / norm);
    }
    out.push_back(std::move(v));
  }
  return out;
}

std::map<std::string, int64_t> FakeService::cache_counters() {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

std::vector<TierUsage> FakeService::tier_usage() {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t bytes = 0;
  for (const auto& s : seen_) bytes += static_cast<int64_t>(s.size() * sizeof(TokenId));
  return {TierUsage{"ram", bytes, static_cast<int64_t>(seen_.size()), 0}};
}

Result<std::string> FakeService::cache_rows_json(int64_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < seen_.size() && (limit <= 0 || static_cast<int64_t>(i) < limit); ++i) {
    rows.push_back({{"key", std::to_string(i)},
                    {"tier", "ram"},
                    {"tokens", seen_[i].size()},
                    {"bytes", seen_[i].size() * sizeof(TokenId)}});
  }
  return json_text(rows);
}

Result<int64_t> FakeService::cache_evict_bytes(const std::vector<std::string>& /*tiers*/,
                                               int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t freed = 0;
  while (!seen_.empty() && freed < bytes) {
    freed += static_cast<int64_t>(seen_.back().size() * sizeof(TokenId));
    seen_.pop_back();
  }
  counters_["evictions"] += freed > 0 ? 1 : 0;
  return freed;
}

Result<int64_t> FakeService::cache_gc() {
  return int64_t{0};
}

void FakeService::shutdown() {
  shutdown_called_.store(true);
}

}  // namespace hearth::server
