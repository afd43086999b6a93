#include "runtime/engine_backend.h"

#include <algorithm>
#include <cctype>
#include <thread>

#include "common/buffer_pool.h"
#include "hearth/cache/types.h"
#include "runtime/token_sampler.h"

namespace hearth::runtime {
namespace {

class EngineTextStream : public TextStream {
 public:
  explicit EngineTextStream(std::shared_ptr<const Tokenizer> tok)
      : tok_(std::move(tok)), decoder_(*tok_, /*render_special=*/false) {}
  std::string push(TokenId token) override {
    auto r = decoder_.push(token);
    return r.ok() ? std::move(r).value() : std::string();
  }
  std::string flush() override { return decoder_.flush(); }

 private:
  std::shared_ptr<const Tokenizer> tok_;  // keeps the tokenizer alive for the decoder
  StreamDecoder decoder_;
};

uint8_t quant_byte_for(const std::string& quant_name) {
  std::string lower;
  for (char c : quant_name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (auto q = cache::quant_type_from_name(lower)) return static_cast<uint8_t>(*q);
  return static_cast<uint8_t>(cache::QuantType::kF16);
}

}  // namespace

std::shared_ptr<const grammar::TokenVocab> token_vocab_of(const Tokenizer& tok) {
  // The bytes each token stands for in generated text (control tokens: none).
  std::vector<std::string> bytes(static_cast<size_t>(tok.n_vocab()));
  std::vector<int32_t> eog;
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    bytes[static_cast<size_t>(id)] = tok.token_to_piece(id, /*render_special=*/false);
    if (tok.is_eog(id)) eog.push_back(id);
  }
  return grammar::TokenVocab::build(std::move(bytes), std::move(eog));
}

EngineBackend::EngineBackend(std::unique_ptr<Engine> engine)
    : engine_(std::move(engine)),
      tokenizer_(std::make_shared<const Tokenizer>(engine_->tokenizer())),
      grammar_vocab_([tok = tokenizer_] { return token_vocab_of(*tok); }) {
  const ModelInfo& m = engine_->info();
  info_.backend_name = "engine";
  info_.architecture = m.arch;
  info_.vocab_size = m.n_vocab;
  info_.n_ctx = m.n_ctx;
  info_.n_ctx_train = m.n_ctx_train;
  info_.n_seq_max = m.n_seq_max;
  info_.n_embd = m.n_embd;
  info_.quant_type = m.quant_name;
  info_.quant_bits = static_cast<int32_t>(m.bits_per_weight + 0.5);
  info_.device = m.device;
  info_.n_gpu_layers = m.n_gpu_layers;
  // The KV the engine committed at load (n_seq_max + its embedding sequence).
  info_.memory_estimate_bytes = m.weight_bytes + m.kv_bytes;
  // Every layer keeps every position (no sliding-window ring): kv_pack is 2 * n_layer
  // position-major runs, so a row can be saved as a delta of a shorter one.
  if (m.n_ctx > 0 && engine_->kv_pack_bytes(m.n_ctx) ==
                         static_cast<size_t>(m.n_ctx) * engine_->kv_bytes_per_position())
    info_.kv_pack_groups = 2 * m.n_layer;
  for (int32_t id = 0; id < tokenizer_->n_vocab(); ++id) {
    if (tokenizer_->is_eog(id)) info_.eog_tokens.push_back(id);
    info_.max_token_bytes =
        std::max(info_.max_token_bytes, static_cast<int32_t>(tokenizer_->token_text(id).size()));
  }
  info_.chat_template = m.chat_template;
  if (tokenizer_->bos_id() >= 0) info_.bos_text = tokenizer_->token_text(tokenizer_->bos_id());
  if (tokenizer_->eos_id() >= 0) info_.eos_text = tokenizer_->token_text(tokenizer_->eos_id());
  info_.add_bos = tokenizer_->add_bos();
  info_.pooling = m.pooling;
  info_.embedding_only = m.encoder;
  identity_.model_path = m.path;
  identity_.quant_byte = quant_byte_for(m.quant_name);
  // Everything that shapes the KV bytes beyond the file itself (the KV type is in
  // numerics_id(): "kv=f16", "kv=q8_0" or "kv=q4_0").
  identity_.kv_layout = "engine-kv;numerics=" + engine_->numerics_id() +
                        ";kv_bytes_per_pos=" + std::to_string(engine_->kv_bytes_per_position()) +
                        ";rope_base=" + std::to_string(m.rope_base) +
                        ";rope_scaling=" + m.rope_scaling_type + ":" +
                        std::to_string(m.rope_scaling_factor);
}

Result<std::vector<TokenId>> EngineBackend::tokenize(
    std::string_view text, bool add_special, std::span<const TextRange> special_ranges) const {
  return tokenizer_->encode_with_special_ranges(text, add_special, special_ranges);
}

Result<std::string> EngineBackend::detokenize(std::span<const TokenId> tokens) const {
  return tokenizer_->decode(tokens, /*render_special=*/false);
}

Result<std::string> EngineBackend::token_bytes(TokenId token) const {
  if (token < 0 || token >= info_.vocab_size)
    return OutOfRange("token id " + std::to_string(token) + " is outside the vocabulary");
  return tokenizer_->token_to_piece(token, /*render_special=*/false);
}

std::unique_ptr<TextStream> EngineBackend::text_stream() const {
  return std::make_unique<EngineTextStream>(tokenizer_);
}

Result<std::unique_ptr<TokenSampler>> EngineBackend::make_sampler(
    const SamplingOptions& o, std::span<const TokenId> history) const {
  return make_token_sampler(o, history, o.grammar.empty() ? nullptr : grammar_vocab_.get());
}

Status EngineBackend::step(std::span<const StepRow> rows,
                           std::vector<std::vector<float>>* logits_out) {
  batch_.clear();
  for (const StepRow& r : rows) HEARTH_RETURN_IF_ERROR(use_adapters(r.seq, r.adapters));
  for (const StepRow& r : rows) {
    const size_t first_logits = r.tokens.size() - r.n_logits();
    for (size_t i = 0; i < r.tokens.size(); ++i)
      batch_.push_back(
          BatchToken{r.tokens[i], r.pos + static_cast<int32_t>(i), r.seq, i >= first_logits});
  }
  HEARTH_RETURN_IF_ERROR(engine_->forward(batch_, logits_));
  const size_t n_vocab = static_cast<size_t>(info_.vocab_size);
  for (size_t off = 0; off + n_vocab <= logits_.size(); off += n_vocab)
    logits_out->emplace_back(logits_.begin() + static_cast<std::ptrdiff_t>(off),
                             logits_.begin() + static_cast<std::ptrdiff_t>(off + n_vocab));
  return OkStatus();
}

Status EngineBackend::load_adapter(int32_t id, const std::string& path) {
  if (adapters_.count(id))
    return AlreadyExists("LoRA adapter " + std::to_string(id) + " is loaded");
  HEARTH_ASSIGN_OR_RETURN(std::shared_ptr<const LoraAdapter> a, engine_->load_lora(path));
  adapters_[id] = std::move(a);
  return OkStatus();
}

Status EngineBackend::unload_adapter(int32_t id) {
  if (adapters_.erase(id) == 0)
    return NotFound("no LoRA adapter " + std::to_string(id) + " is loaded");
  // A sequence holding it keeps it alive (shared) until its next step sets another set.
  return OkStatus();
}

Status EngineBackend::use_adapters(int32_t seq, std::span<const AdapterUse> uses) {
  if (seq < 0) return InvalidArgument("step: seq " + std::to_string(seq));
  if (static_cast<size_t>(seq) >= seq_adapters_.size()) seq_adapters_.resize(seq + 1);
  std::vector<AdapterUse>& current = seq_adapters_[static_cast<size_t>(seq)];
  if (std::equal(current.begin(), current.end(), uses.begin(), uses.end())) return OkStatus();
  std::vector<LoraUse> engine_uses;
  for (const AdapterUse& u : uses) {
    auto it = adapters_.find(u.id);
    if (it == adapters_.end())
      return NotFound("step: no LoRA adapter " + std::to_string(u.id) + " is loaded");
    engine_uses.push_back(LoraUse{it->second, u.scale});
  }
  HEARTH_RETURN_IF_ERROR(engine_->set_lora(seq, std::move(engine_uses)));
  current.assign(uses.begin(), uses.end());
  return OkStatus();
}

Result<std::vector<uint8_t>> EngineBackend::kv_pack(int32_t seq, int32_t n_pos) {
  // Into a recycled buffer where one is idle (common/buffer_pool.h): fresh memory's
  // page faults would stall the worker, and every stream with it.
  std::vector<uint8_t> out = payload_buffers().take(engine_->kv_pack_bytes(n_pos));
  HEARTH_RETURN_IF_ERROR(engine_->kv_pack(seq, n_pos, out));
  return out;
}

Status EngineBackend::kv_unpack(int32_t seq, std::span<const uint8_t> bytes, int32_t n_pos) {
  return engine_->kv_unpack(seq, bytes, n_pos);
}

Status EngineBackend::kv_copy(int32_t src, int32_t dst, int32_t n_pos) {
  return engine_->kv_copy(src, dst, n_pos);
}

Result<std::vector<std::span<uint8_t>>> EngineBackend::kv_import_spans(int32_t seq, int32_t n_pos) {
  return engine_->kv_import_spans(seq, n_pos);
}

Status EngineBackend::kv_import_commit(int32_t seq, int32_t n_pos) {
  return engine_->kv_import_commit(seq, n_pos);
}

Status EngineBackend::seq_truncate(int32_t seq, int32_t n_pos) {
  const int32_t len = engine_->seq_len(seq);
  if (len < 0) return InvalidArgument("unknown sequence " + std::to_string(seq));
  if (n_pos >= len) return OkStatus();
  return engine_->seq_truncate(seq, n_pos);
}

Result<std::vector<float>> EngineBackend::embed(std::span<const TokenId> tokens) {
  return engine_->embed(tokens);
}

Result<std::vector<std::vector<float>>> EngineBackend::embed_batch(
    std::span<const std::vector<TokenId>> inputs, Pooling pooling) {
  return engine_->embed_batch(inputs, pooling);
}

BackendFactory engine_factory(const ModelConfig& config) {
  EngineOptions o;
  o.n_threads = config.n_threads > 0 ? config.n_threads : default_thread_count(1);
  o.n_ctx = config.n_ctx;
  o.kv_budget_bytes = config.kv_budget_bytes;
  o.n_seq_max = config.n_seq_max;
  o.n_batch = config.n_batch;
  o.kv_type = config.kv_type;
  o.on_load_progress = config.on_load_progress;
  o.swa_full = config.swa_full;
  o.weights_in_place = config.weights_in_place;
  o.device = config.device;
  o.n_gpu_layers = config.n_gpu_layers;
  const std::string path = config.model_path;
  return [path, o]() -> Result<std::unique_ptr<Backend>> {
    HEARTH_ASSIGN_OR_RETURN(auto engine, Engine::load(path, o));
    return std::unique_ptr<Backend>(std::make_unique<EngineBackend>(std::move(engine)));
  };
}

}  // namespace hearth::runtime
