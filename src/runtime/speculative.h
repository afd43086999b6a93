// Speculative decoding inside the model worker (docs/runtime.md, "Speculative decoding"):
// the per-request settings, the drafters (a draft model beside the target, or prompt
// lookup), and the vocabulary check of a draft model. The worker's hooks are small: it
// asks propose() for a decode row's draft, puts [pending, draft...] in the row with
// logits for each position, and samples them in order while the draft agrees.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hearth/runtime/runtime.h"

namespace hearth::runtime {

// One request's speculative settings: the request's fields over the model's defaults.
struct SpecSettings {
  SpeculativeType type = SpeculativeType::kNone;
  int32_t n_max = 0;
  int32_t n_min = 0;
  float p_min = 0;
  int32_t ngram_max = 3;
  bool adaptive = true;
  int32_t probe_interval = 16;
  bool enabled() const { return type != SpeculativeType::kNone && n_max > 0; }
};
SpecSettings resolve_speculative(const SpeculativeConfig& model,
                                 const RequestParams::Speculative& request);

// Range checks of a model's config and of a request's fields (InvalidArgument naming the
// field and the value). has_draft: the model has a draft model loaded.
Status check_speculative_config(const SpeculativeConfig& config);
Status check_speculative_params(const RequestParams::Speculative& params, bool has_draft);

// The draft model must share the target's vocabulary: InvalidArgument naming the
// GGUF key that differs (tokenizer.ggml.tokens, its length, eos / bos).
Status check_draft_vocab(const Backend& target, const Backend& draft);

// The draft model's side: one sequence per target sequence, holding the tokens of the
// last context it drafted after (synchronised by longest common prefix, so a sequence
// only feeds what changed since).
class DraftModel {
 public:
  DraftModel(std::unique_ptr<Backend> backend, int32_t n_seq, int32_t n_ctx);
  // Up to max_tokens greedy tokens after `context` (non-empty) on sequence `seq`, stopping
  // after an end-of-generation token or before one whose probability is below p_min.
  Result<std::vector<TokenId>> propose(int32_t seq, std::span<const TokenId> context,
                                       int32_t max_tokens, float p_min);
  // Forgets every sequence's cells (after a failure of either model).
  void reset();

 private:
  Status sync(int32_t seq, std::span<const TokenId> context, std::vector<float>* logits);
  std::unique_ptr<Backend> backend_;
  std::vector<TokenId> eog_;
  int32_t n_ctx_ = 0;
  std::vector<std::vector<TokenId>> resident_;
};

// What the worker calls: the draft for one decode row. `resident` are the tokens whose
// cells the target holds and `pending` the sampled token about to be fed; `limit` bounds
// the draft (tokens left to generate, context, batch budget). Empty = decode plainly.
// Draft-model failures are logged and answered with no draft (the target is unaffected).
std::vector<TokenId> propose_draft(const SpecSettings& settings, DraftModel* draft, int32_t seq,
                                   std::span<const TokenId> resident, TokenId pending,
                                   int32_t limit);

}  // namespace hearth::runtime
