#include "testing/stub_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <utility>

#include "runtime/token_sampler.h"

namespace hearth::runtime {
namespace {

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class ByteTextStream : public TextStream {
 public:
  std::string push(TokenId token) override {
    if (token < 3 || token >= StubBackend::kVocab) return {};
    held_ += static_cast<char>(token - 3);
    // Emit the longest prefix that ends on a complete UTF-8 character.
    size_t cut = held_.size();
    size_t i = held_.size();
    size_t back = 0;
    while (i > 0 && back < 4) {
      --i;
      ++back;
      unsigned char c = static_cast<unsigned char>(held_[i]);
      if ((c & 0xC0) == 0x80) continue;  // continuation byte
      size_t need = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
      if (back < need) cut = i;
      break;
    }
    std::string out = held_.substr(0, cut);
    held_.erase(0, cut);
    return out;
  }
  std::string flush() override { return std::exchange(held_, {}); }

 private:
  std::string held_;
};

// The byte of `script` that continues `history` (EOS when it is complete): the longest
// prefix of the script that the history ends with decides.
TokenId scripted_next(const std::vector<TokenId>& history, const std::string& script) {
  const size_t max = std::min(history.size(), script.size());
  for (size_t k = max + 1; k-- > 0;) {
    bool match = true;
    for (size_t i = 0; i < k && match; ++i) {
      match = history[history.size() - k + i] ==
              static_cast<TokenId>(static_cast<unsigned char>(script[i])) + 3;
    }
    if (!match) continue;
    if (k == script.size()) return StubBackend::kEos;
    return static_cast<TokenId>(static_cast<unsigned char>(script[k])) + 3;
  }
  return StubBackend::kEos;
}

}  // namespace

StubBackend::StubBackend(StubOptions options)
    : options_(std::move(options)),
      cells_(static_cast<size_t>(options_.n_seq_max)),
      tokens_(static_cast<size_t>(options_.n_seq_max)) {}

BackendInfo StubBackend::info() const {
  BackendInfo i;
  i.backend_name = "stub";
  i.architecture = "stub";
  i.vocab_size = kVocab;
  i.n_ctx = options_.n_ctx;
  i.n_ctx_train = options_.n_ctx;
  i.n_seq_max = options_.n_seq_max;
  i.n_embd = 16;
  i.quant_type = "f32";
  i.quant_bits = 32;
  i.memory_estimate_bytes = static_cast<uint64_t>(options_.n_ctx) * options_.n_seq_max * 8;
  i.eog_tokens = {kEos};
  i.max_token_bytes = 1;  // every token with text is one byte
  return i;
}

KvIdentity StubBackend::kv_identity() const {
  return KvIdentity{options_.model_path, 0, options_.kv_layout};
}

Result<std::vector<TokenId>> StubBackend::tokenize(
    std::string_view text, bool /*add_special*/, std::span<const TextRange> special_ranges) const {
  for (const TextRange& r : special_ranges) {
    if (r.begin > r.end || r.end > text.size()) {
      return InvalidArgument("stub: special range [" + std::to_string(r.begin) + ", " +
                             std::to_string(r.end) + ") is not inside the text of " +
                             std::to_string(text.size()) + " bytes");
    }
  }
  std::vector<TokenId> out;
  out.reserve(text.size());
  for (unsigned char c : text) out.push_back(static_cast<TokenId>(c) + 3);
  return out;
}

Result<std::string> StubBackend::detokenize(std::span<const TokenId> tokens) const {
  std::string out;
  for (TokenId t : tokens) {
    if (t < 0 || t >= kVocab) return OutOfRange("token id " + std::to_string(t) + " out of range");
    if (t >= 3) out += static_cast<char>(t - 3);
  }
  return out;
}

std::unique_ptr<TextStream> StubBackend::text_stream() const {
  return std::make_unique<ByteTextStream>();
}

Result<std::unique_ptr<TokenSampler>> StubBackend::make_sampler(
    const SamplingOptions& options, std::span<const TokenId> history) const {
  if (options.grammar.empty()) return make_token_sampler(options, history);
  // Token b + 3 is byte b; 0, 1 (EOS) and 2 are not text.
  static const std::shared_ptr<const grammar::TokenVocab> vocab = [] {
    std::vector<std::string> bytes(kVocab);
    for (int32_t id = 3; id < kVocab; ++id)
      bytes[static_cast<size_t>(id)] = std::string(1, static_cast<char>(id - 3));
    return grammar::TokenVocab::build(std::move(bytes), {kEos});
  }();
  return make_token_sampler(options, history, vocab);
}

uint64_t StubBackend::next_cell(uint64_t prev, TokenId token, int32_t pos) {
  return splitmix(prev ^ (static_cast<uint64_t>(static_cast<uint32_t>(token)) << 20) ^
                  static_cast<uint64_t>(pos) * 0x100000001b3ull);
}

std::vector<float> StubBackend::logits_for_cell(uint64_t cell, float eos_bias) {
  std::vector<float> l(kVocab);
  for (int32_t i = 0; i < kVocab; ++i) {
    uint64_t h = splitmix(cell ^ (static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ull));
    float v =
        static_cast<float>(static_cast<double>(h >> 40) / static_cast<double>(1 << 24)) * 8.0f;
    const int32_t byte = i - 3;
    const bool printable = byte >= 32 && byte < 127;
    l[static_cast<size_t>(i)] = printable ? v : v - 40.0f;
  }
  l[kEos] += eos_bias + 40.0f;  // EOS starts from the unprintable floor's opposite
  return l;
}

Status StubBackend::step(std::span<const StepRow> rows,
                         std::vector<std::vector<float>>* logits_out) {
  StubControl& ctl = *options_.control;
  const int64_t n = ctl.steps.fetch_add(1) + 1;
  if (ctl.throw_at_step.load() == n) throw std::runtime_error("stub: injected throw in step");
  if (ctl.fail_at_step.load() == n) return Internal("stub: injected failure in step");
  int32_t total = 0;
  for (const StepRow& r : rows) total += static_cast<int32_t>(r.tokens.size());
  if (int64_t d = ctl.step_delay_us.load() + int64_t{ctl.token_delay_us.load()} * total; d > 0)
    std::this_thread::sleep_for(std::chrono::microseconds(d));
  for (int32_t prev = ctl.max_rows_seen.load();
       static_cast<int32_t>(rows.size()) > prev &&
       !ctl.max_rows_seen.compare_exchange_weak(prev, static_cast<int32_t>(rows.size()));) {
  }
  for (int32_t prev = ctl.max_tokens_seen.load();
       total > prev && !ctl.max_tokens_seen.compare_exchange_weak(prev, total);) {
  }
  ctl.tokens_forwarded += total;
  for (const StepRow& r : rows) {
    if (r.seq < 0 || r.seq >= options_.n_seq_max) return InvalidArgument("stub: bad seq id");
    auto& cells = cells_[static_cast<size_t>(r.seq)];
    if (r.pos != static_cast<int32_t>(cells.size()))
      return Internal("stub: row for seq " + std::to_string(r.seq) + " starts at pos " +
                      std::to_string(r.pos) + " but the sequence holds " +
                      std::to_string(cells.size()));
    if (r.tokens.empty()) return InvalidArgument("stub: empty row");
    if (cells.size() + r.tokens.size() > static_cast<size_t>(options_.n_ctx))
      return OutOfRange("stub: context full");
    auto& tokens = tokens_[static_cast<size_t>(r.seq)];
    for (TokenId t : r.tokens) {
      if (t < 0 || t >= kVocab) return OutOfRange("stub: token out of range");
      uint64_t prev = cells.empty() ? 0x5eed : cells.back();
      cells.push_back(next_cell(prev, t, static_cast<int32_t>(cells.size())));
      tokens.push_back(t);
    }
    // Logits of the row's last n_logits() positions, each read as if that position
    // ended the sequence (a speculative row's verify logits).
    const size_t n_logits = r.n_logits();
    for (size_t j = n_logits; j-- > 0;) {
      const size_t end = cells.size() - j;  // cells [0, end) are visible at this position
      // Like attention, the logits read every cell, so a restore that got any position
      // wrong shows up.
      uint64_t acc = 0;
      for (size_t c = 0; c < end; ++c) acc = splitmix(acc ^ cells[c]);
      logits_out->push_back(logits_for_cell(acc, options_.eos_bias));
      if (auto script = ctl.script(); script && !script->empty()) {
        const std::vector<TokenId> seen(tokens.begin(),
                                        tokens.end() - static_cast<std::ptrdiff_t>(j));
        logits_out->back()[static_cast<size_t>(scripted_next(seen, *script))] = 100.0f;
      }
    }
  }
  return OkStatus();
}

Result<std::vector<uint8_t>> StubBackend::kv_pack(int32_t seq, int32_t n_pos) {
  if (seq < 0 || seq >= options_.n_seq_max) return InvalidArgument("stub: bad seq id");
  const auto& cells = cells_[static_cast<size_t>(seq)];
  if (n_pos < 0 || static_cast<size_t>(n_pos) > cells.size())
    return OutOfRange("stub: kv_pack past the sequence end");
  if (options_.control) options_.control->kv_packs++;
  std::vector<uint8_t> out(static_cast<size_t>(n_pos) * 8);
  if (n_pos > 0) std::memcpy(out.data(), cells.data(), out.size());
  return out;
}

Status StubBackend::kv_unpack(int32_t seq, std::span<const uint8_t> bytes, int32_t n_pos) {
  if (seq < 0 || seq >= options_.n_seq_max) return InvalidArgument("stub: bad seq id");
  if (n_pos < 0 || bytes.size() != static_cast<size_t>(n_pos) * 8)
    return DataLoss("stub: kv bytes do not match n_pos");
  auto& cells = cells_[static_cast<size_t>(seq)];
  tokens_[static_cast<size_t>(seq)].assign(static_cast<size_t>(n_pos), -1);
  cells.assign(static_cast<size_t>(n_pos), 0);
  if (n_pos > 0) std::memcpy(cells.data(), bytes.data(), bytes.size());
  return OkStatus();
}

Status StubBackend::seq_truncate(int32_t seq, int32_t n_pos) {
  if (seq < 0 || seq >= options_.n_seq_max) return InvalidArgument("stub: bad seq id");
  auto& cells = cells_[static_cast<size_t>(seq)];
  if (n_pos < 0) return InvalidArgument("stub: negative n_pos");
  if (static_cast<size_t>(n_pos) < cells.size()) {
    cells.resize(static_cast<size_t>(n_pos));
    tokens_[static_cast<size_t>(seq)].resize(static_cast<size_t>(n_pos));
  }
  return OkStatus();
}

Result<std::vector<float>> StubBackend::embed(std::span<const TokenId> tokens) {
  std::vector<float> v(16, 0.0f);
  uint64_t cell = 0x5eed;
  for (size_t i = 0; i < tokens.size(); ++i) {
    cell = next_cell(cell, tokens[i], static_cast<int32_t>(i));
    for (size_t d = 0; d < v.size(); ++d)
      v[d] += static_cast<float>(static_cast<int64_t>(splitmix(cell + d) >> 44) - (1 << 19)) /
              static_cast<float>(1 << 19);
  }
  double norm = 0;
  for (float x : v) norm += static_cast<double>(x) * x;
  if (norm > 0)
    for (float& x : v) x = static_cast<float>(x / std::sqrt(norm));
  return v;
}

BackendFactory stub_factory(StubOptions options) {
  return [options]() -> Result<std::unique_ptr<Backend>> {
    return std::unique_ptr<Backend>(std::make_unique<StubBackend>(options));
  };
}

BackendFactory stub_factory_for(const ModelConfig& config, std::shared_ptr<StubControl> control) {
  StubOptions o;
  if (config.n_ctx > 0) o.n_ctx = config.n_ctx;
  o.n_seq_max = config.n_seq_max;
  if (!config.model_path.empty()) o.model_path = config.model_path;
  if (control) o.control = std::move(control);
  return stub_factory(std::move(o));
}

}  // namespace hearth::runtime
