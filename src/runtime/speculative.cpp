#include "runtime/speculative.h"

#include <algorithm>
#include <cmath>

#include "hearth/log.h"
#include "runtime/ngram_draft.h"

namespace hearth::runtime {
namespace {

constexpr int32_t kMaxDraft = 256;
constexpr int32_t kMaxNgram = 8;
constexpr int32_t kMaxProbeInterval = 4096;

// The greedy choice (lowest id on ties, as the runtime's greedy sampler) and, when asked,
// its softmax probability.
TokenId argmax(std::span<const float> logits, float* prob) {
  size_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[best]) best = i;
  if (prob) {
    double sum = 0;
    for (float l : logits) sum += std::exp(static_cast<double>(l) - logits[best]);
    *prob = static_cast<float>(1.0 / sum);
  }
  return static_cast<TokenId>(best);
}

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

}  // namespace

const char* speculative_type_name(SpeculativeType type) {
  switch (type) {
    case SpeculativeType::kNone:
      return "none";
    case SpeculativeType::kDraft:
      return "draft";
    case SpeculativeType::kNgram:
      return "ngram";
  }
  return "none";
}

std::optional<SpeculativeType> speculative_type_from_name(std::string_view name) {
  for (SpeculativeType t :
       {SpeculativeType::kNone, SpeculativeType::kDraft, SpeculativeType::kNgram})
    if (name == speculative_type_name(t)) return t;
  return std::nullopt;
}

SpecSettings resolve_speculative(const SpeculativeConfig& model,
                                 const RequestParams::Speculative& request) {
  SpecSettings s;
  s.type = request.type ? *request.type : model.resolved_type();
  s.n_max = request.n_max ? *request.n_max : model.draft_max;
  s.n_min = request.n_min ? *request.n_min : model.draft_min;
  s.p_min = request.p_min ? *request.p_min : model.draft_p_min;
  s.ngram_max = model.ngram_max;
  s.adaptive = request.adaptive ? *request.adaptive : model.adaptive;
  s.probe_interval = model.probe_interval;
  return s;
}

Status check_speculative_config(const SpeculativeConfig& c) {
  if (c.draft_max < 1 || c.draft_max > kMaxDraft)
    return InvalidArgument("draft_max must be in 1.." + std::to_string(kMaxDraft) + ", got " +
                           std::to_string(c.draft_max));
  if (c.draft_min < 0 || c.draft_min > c.draft_max)
    return InvalidArgument("draft_min must be in 0..draft_max (" + std::to_string(c.draft_max) +
                           "), got " + std::to_string(c.draft_min));
  if (!(c.draft_p_min >= 0.0f && c.draft_p_min <= 1.0f))
    return InvalidArgument("draft_p_min must be in [0, 1], got " + std::to_string(c.draft_p_min));
  if (c.ngram_max < 1 || c.ngram_max > kMaxNgram)
    return InvalidArgument("ngram_max must be in 1.." + std::to_string(kMaxNgram) + ", got " +
                           std::to_string(c.ngram_max));
  if (c.probe_interval < 0 || c.probe_interval > kMaxProbeInterval)
    return InvalidArgument("probe_interval must be in 0.." + std::to_string(kMaxProbeInterval) +
                           ", got " + std::to_string(c.probe_interval));
  if (c.type == SpeculativeType::kDraft && c.draft_model.empty())
    return InvalidArgument("speculative type draft needs draft_model");
  return OkStatus();
}

Status check_speculative_params(const RequestParams::Speculative& p, bool has_draft) {
  if (p.n_max && (*p.n_max < 0 || *p.n_max > kMaxDraft))
    return InvalidArgument("speculative.n_max must be in 0.." + std::to_string(kMaxDraft) +
                           ", got " + std::to_string(*p.n_max));
  if (p.n_min && (*p.n_min < 0 || *p.n_min > kMaxDraft))
    return InvalidArgument("speculative.n_min must be in 0.." + std::to_string(kMaxDraft) +
                           ", got " + std::to_string(*p.n_min));
  if (p.p_min && !(*p.p_min >= 0.0f && *p.p_min <= 1.0f))
    return InvalidArgument("speculative.p_min must be in [0, 1], got " + std::to_string(*p.p_min));
  if (p.type && *p.type == SpeculativeType::kDraft && !has_draft)
    return InvalidArgument(
        "speculative.type draft: the model has no draft model (load it with draft_model)");
  return OkStatus();
}

Status check_draft_vocab(const Backend& target, const Backend& draft) {
  const BackendInfo t = target.info(), d = draft.info();
  if (t.vocab_size != d.vocab_size)
    return InvalidArgument("draft_model: tokenizer.ggml.tokens has " +
                           std::to_string(d.vocab_size) + " entries, the target's " +
                           std::to_string(t.vocab_size));
  for (TokenId id = 0; id < t.vocab_size; ++id) {
    auto a = target.token_bytes(id);
    auto b = draft.token_bytes(id);
    if (!a.ok() || !b.ok() || *a != *b)
      return InvalidArgument("draft_model: tokenizer.ggml.tokens[" + std::to_string(id) + "] is " +
                             quoted(b.ok() ? *b : "?") + ", the target's " +
                             quoted(a.ok() ? *a : "?"));
  }
  if (t.eog_tokens != d.eog_tokens || t.eos_text != d.eos_text)
    return InvalidArgument(
        "draft_model: tokenizer.ggml.eos_token_id (end-of-generation tokens) differs from the "
        "target's");
  if (t.bos_text != d.bos_text || t.add_bos != d.add_bos)
    return InvalidArgument("draft_model: tokenizer.ggml.bos_token_id differs from the target's");
  return OkStatus();
}

DraftModel::DraftModel(std::unique_ptr<Backend> backend, int32_t n_seq, int32_t n_ctx)
    : backend_(std::move(backend)),
      eog_(backend_->info().eog_tokens),
      n_ctx_(std::min(n_ctx, backend_->info().n_ctx)),
      resident_(static_cast<size_t>(n_seq)) {}

void DraftModel::reset() {
  for (size_t seq = 0; seq < resident_.size(); ++seq) {
    (void)backend_->seq_truncate(static_cast<int32_t>(seq), 0);
    resident_[seq].clear();
  }
}

Status DraftModel::sync(int32_t seq, std::span<const TokenId> context, std::vector<float>* logits) {
  std::vector<TokenId>& res = resident_[static_cast<size_t>(seq)];
  size_t keep = 0;
  while (keep < res.size() && keep < context.size() && res[keep] == context[keep]) ++keep;
  keep = std::min(keep, context.size() - 1);  // the last token is fed for its logits
  if (keep < res.size()) {
    Status cut = backend_->seq_truncate(seq, static_cast<int32_t>(keep));
    if (!cut.ok()) {  // e.g. a sliding window no longer holds `keep`: start over
      keep = 0;
      HEARTH_RETURN_IF_ERROR(backend_->seq_truncate(seq, 0));
    }
    res.resize(keep);
  }
  StepRow row;
  row.seq = seq;
  row.pos = static_cast<int32_t>(keep);
  row.tokens = context.subspan(keep);
  row.want_logits = true;
  std::vector<std::vector<float>> out;
  res.insert(res.end(), row.tokens.begin(), row.tokens.end());
  HEARTH_RETURN_IF_ERROR(backend_->step(std::span<const StepRow>(&row, 1), &out));
  if (out.size() != 1) return Internal("draft model: step returned no logits");
  *logits = std::move(out[0]);
  return OkStatus();
}

Result<std::vector<TokenId>> DraftModel::propose(int32_t seq, std::span<const TokenId> context,
                                                 int32_t max_tokens, float p_min) {
  std::vector<TokenId> out;
  if (seq < 0 || static_cast<size_t>(seq) >= resident_.size() || context.empty()) return out;
  max_tokens = std::min<int64_t>(max_tokens, n_ctx_ - static_cast<int64_t>(context.size()));
  if (max_tokens <= 0) return out;
  std::vector<float> logits;
  Status st = sync(seq, context, &logits);
  std::vector<TokenId>& res = resident_[static_cast<size_t>(seq)];
  while (st.ok()) {
    float prob = 1;
    const TokenId t = argmax(logits, p_min > 0 ? &prob : nullptr);
    if (prob < p_min) break;
    out.push_back(t);
    if (static_cast<int32_t>(out.size()) >= max_tokens ||
        std::find(eog_.begin(), eog_.end(), t) != eog_.end())
      break;
    StepRow row;
    row.seq = seq;
    row.pos = static_cast<int32_t>(res.size());
    row.tokens = std::span<const TokenId>(&out.back(), 1);
    row.want_logits = true;
    std::vector<std::vector<float>> next;
    res.push_back(t);
    st = backend_->step(std::span<const StepRow>(&row, 1), &next);
    if (st.ok() && next.size() != 1) st = Internal("draft model: step returned no logits");
    if (st.ok()) logits = std::move(next[0]);
  }
  if (!st.ok()) {  // the sequence's cells are unspecified now: forget them
    (void)backend_->seq_truncate(seq, 0);
    res.clear();
    return st;
  }
  return out;
}

std::vector<TokenId> propose_draft(const SpecSettings& s, DraftModel* draft, int32_t seq,
                                   std::span<const TokenId> resident, TokenId pending,
                                   int32_t limit) {
  const int32_t max_tokens = std::min(limit, s.n_max);
  if (!s.enabled() || max_tokens < std::max(1, s.n_min)) return {};
  std::vector<TokenId> context(resident.begin(), resident.end());
  context.push_back(pending);
  std::vector<TokenId> out;
  if (s.type == SpeculativeType::kNgram) {
    out = ngram_draft(context, s.ngram_max, max_tokens);
  } else if (s.type == SpeculativeType::kDraft && draft) {
    auto r = draft->propose(seq, context, max_tokens, s.p_min);
    if (!r.ok()) {
      log::warn("runtime: draft model failed, decoding without a draft: " + r.status().to_string());
      return {};
    }
    out = std::move(r).value();
  }
  if (static_cast<int32_t>(out.size()) < s.n_min) return {};
  return out;
}

}  // namespace hearth::runtime
