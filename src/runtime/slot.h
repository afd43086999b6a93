// One sequence of a model's context and the request it is serving (worker thread only).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/draft_length.h"
#include "runtime/request.h"
#include "runtime/speculative.h"
#include "runtime/stop_matcher.h"

namespace hearth::runtime {

struct Slot {
  int32_t seq = 0;
  // Tokens whose KV cells the sequence holds, in order (backend seq length == size()).
  // Kept after a request ends so the next one can reuse a common prefix (slot affinity).
  std::vector<TokenId> resident;
  std::vector<float> last_logits;  // logits at position resident.size() - 1, when known
  // The resident cells came from a cache_prompt = false request: never saved (an evict
  // or shutdown save skips them) until another request takes the slot.
  bool uncached_cells = false;
  // The cache namespace of the resident cells (the base model's, or an adapter set's):
  // they are reused and saved only under it.
  RowNamespace resident_ns;

  RequestPtr request;  // null when free
  uint64_t admit_order = 0;
  int32_t cursor = 0;  // next prompt index to prefill; == prompt.size() when done
  bool has_pending = false;
  TokenId pending = 0;  // sampled, not yet fed back
  std::unique_ptr<TokenSampler> sampler;
  std::unique_ptr<TextStream> text;
  StopMatcher stop;
  std::vector<TokenId> generated;
  std::string reply;
  std::vector<std::vector<float>> token_logits;
  std::vector<TokenLogprobs> logprobs;
  // A fork (Runtime::infer_n) waiting for the sequence fork_parent to finish prefilling
  // the shared prompt; it takes no part in batches until then.
  bool awaiting_fork = false;
  int32_t fork_parent = -1;
  int32_t cold_boundary = 0;  // cold save length, 0 = none
  size_t last_continued_at = 0;
  CacheHitKind hit = CacheHitKind::kCold;
  CacheDelta delta;
  bool finishing = false;
  FinishReason reason = FinishReason::kStop;
  std::optional<std::string> finish_key;
  std::chrono::steady_clock::time_point admitted_at;
  std::chrono::steady_clock::time_point first_token_at;
  bool has_first_token = false;
  double restore_ms = -1;  // RequestStats::restore_ms / restore_tier
  std::optional<Tier> restore_tier;
  // Thinking budget (RequestParams::thinking): where the generation is relative to the
  // think block, tokens generated inside it, and closing tokens still to force.
  enum class Think { kBefore, kInside, kDone };
  Think think = Think::kBefore;
  int32_t think_tokens = 0;
  std::vector<TokenId> forced;
  // Speculative decoding (runtime/speculative.h): the request's settings, this tick's
  // verify row ([pending, draft...]), and the tokens drafted / accepted so far.
  SpecSettings spec;
  DraftLength draft_length;  // the adaptive draft length (spec.adaptive)
  std::vector<TokenId> spec_row;
  int64_t draft_tokens = 0;
  int64_t draft_accepted = 0;
  int64_t decode_steps = 0;  // RequestStats::decode_steps / draft_steps
  int64_t draft_steps = 0;

  bool busy() const { return request != nullptr; }

  // Takes `r`: every per-request field back to its default (a fresh Slot's), so nothing
  // of the previous request leaks into this one, however many fields are added later.
  // The sequence id, its resident cells and their logits stay: admission decides
  // whether to reuse them.
  void begin(RequestPtr r, uint64_t order, std::chrono::steady_clock::time_point now) {
    Slot fresh;
    fresh.seq = seq;
    fresh.resident = std::move(resident);
    fresh.last_logits = std::move(last_logits);
    fresh.uncached_cells = uncached_cells;
    fresh.resident_ns = resident_ns;
    fresh.request = std::move(r);
    fresh.admit_order = order;
    fresh.admitted_at = now;
    *this = std::move(fresh);
  }
  // Frees the slot once its request is answered; the resident cells stay for reuse.
  void release() { begin(nullptr, 0, {}); }
  bool prefilling() const {
    return busy() && cursor < static_cast<int32_t>(request->prompt.size());
  }
};

}  // namespace hearth::runtime
