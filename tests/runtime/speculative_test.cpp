// Speculative decoding and verify (issue #23 item 2): prompt lookup and draft-model
// speculation give the plain decode's tokens and logprobs bit for bit, on the stub and on
// gen-model F16 / Q4_0 models (a target and a same-seed draft of another precision), also
// from a warm cache after a speculative run; a verify row's logits and KV cells are those
// of one-token decodes; Runtime::verify's accepted count, next token and busy refusal.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <future>

#include "cli/gguf_cli_util.h"
#include "runtime/engine_backend.h"
#include "runtime/ngram_draft.h"
#include "stub_fixture.h"

namespace hearth::runtime {
namespace {
using namespace testing;

// ---------------------------------------------------------------- prompt lookup

TEST(NgramDraft, ProposesWhatFollowedTheLatestEarlierOccurrence) {
  // ... 5 6 7 | 8 9 ... 5 6 7 | 1 2 ... 5 6 7: the latest earlier "5 6 7" is followed by 1 2.
  const std::vector<TokenId> ctx = {5, 6, 7, 8, 9, 4, 5, 6, 7, 1, 2, 3, 5, 6, 7};
  EXPECT_EQ(ngram_draft(ctx, 3, 4), (std::vector<TokenId>{1, 2, 3, 5}));
  EXPECT_EQ(ngram_draft(ctx, 3, 2), (std::vector<TokenId>{1, 2}));
  EXPECT_TRUE(ngram_draft(ctx, 3, 0).empty());
}

TEST(NgramDraft, FallsBackToShorterSuffixesAndToNothing) {
  // "9 3" never occurred before, "3" did (followed by 4 4 9 3, then as a repetition of
  // period 4: 4 4 9 3 ...).
  EXPECT_EQ(ngram_draft(std::vector<TokenId>{3, 4, 4, 9, 3}, 3, 4),
            (std::vector<TokenId>{4, 4, 9, 3}));
  EXPECT_EQ(ngram_draft(std::vector<TokenId>{3, 4, 4, 9, 3}, 3, 7),
            (std::vector<TokenId>{4, 4, 9, 3, 4, 4, 9}));
  // A token repeated: its own continuation, as long as asked.
  EXPECT_EQ(ngram_draft(std::vector<TokenId>{1, 2, 7, 7, 7, 7}, 3, 5),
            (std::vector<TokenId>{7, 7, 7, 7, 7}));
  EXPECT_TRUE(ngram_draft(std::vector<TokenId>{1, 2, 3, 4}, 3, 8).empty());
  EXPECT_TRUE(ngram_draft(std::vector<TokenId>{7}, 3, 8).empty());
}

// ---------------------------------------------------------------- stub backend

// A draft that disagrees with the model where wrong_at(position) says so (by default every
// third position): the wrapped stub's logits, with the favourite pushed below another token.
class SometimesWrong : public Backend {
 public:
  explicit SometimesWrong(
      std::unique_ptr<Backend> inner,
      std::function<bool(int32_t)> wrong_at = [](int32_t pos) { return pos % 3 == 0; })
      : inner_(std::move(inner)), wrong_at_(std::move(wrong_at)) {}
  BackendInfo info() const override { return inner_->info(); }
  KvIdentity kv_identity() const override { return inner_->kv_identity(); }
  Result<std::vector<TokenId>> tokenize(std::string_view t, bool a,
                                        std::span<const TextRange> r) const override {
    return inner_->tokenize(t, a, r);
  }
  Result<std::string> detokenize(std::span<const TokenId> t) const override {
    return inner_->detokenize(t);
  }
  std::unique_ptr<TextStream> text_stream() const override { return inner_->text_stream(); }
  Result<std::unique_ptr<TokenSampler>> make_sampler(const SamplingOptions& o,
                                                     std::span<const TokenId> h) const override {
    return inner_->make_sampler(o, h);
  }
  Status step(std::span<const StepRow> rows, std::vector<std::vector<float>>* out) override {
    const size_t before = out->size();
    HEARTH_RETURN_IF_ERROR(inner_->step(rows, out));
    size_t li = before;
    for (const StepRow& r : rows) {
      if (!r.want_logits) continue;
      const int32_t pos = r.pos + static_cast<int32_t>(r.tokens.size()) - 1;
      auto& l = (*out)[li++];
      if (!wrong_at_(pos)) continue;
      const auto best = std::max_element(l.begin(), l.end()) - l.begin();
      l[static_cast<size_t>((best + 7) % static_cast<long>(l.size()))] = l[best] + 1.0f;
    }
    return OkStatus();
  }
  Result<std::vector<uint8_t>> kv_pack(int32_t s, int32_t n) override {
    return inner_->kv_pack(s, n);
  }
  Status kv_unpack(int32_t s, std::span<const uint8_t> b, int32_t n) override {
    return inner_->kv_unpack(s, b, n);
  }
  Status seq_truncate(int32_t s, int32_t n) override { return inner_->seq_truncate(s, n); }
  Result<std::vector<float>> embed(std::span<const TokenId> t) override { return inner_->embed(t); }

 private:
  std::unique_ptr<Backend> inner_;
  std::function<bool(int32_t)> wrong_at_;
};

ModelConfig stub_with_draft(bool wrong_draft) {
  ModelConfig c = stub_config("m", 2);
  StubOptions o;
  o.n_seq_max = 2;
  BackendFactory inner = stub_factory(o);
  c.speculative.draft_model = "stub-draft.gguf";
  c.speculative.draft_max = 6;
  c.speculative.draft_p_min = 0;   // draft at every position
  c.speculative.adaptive = false;  // and at every step (adaptive drafting: below)
  c.draft_factory = [inner, wrong_draft]() -> Result<std::unique_ptr<Backend>> {
    HEARTH_ASSIGN_OR_RETURN(std::unique_ptr<Backend> b, inner());
    if (!wrong_draft) return b;
    return std::unique_ptr<Backend>(std::make_unique<SometimesWrong>(std::move(b)));
  };
  return c;
}

RequestParams spec_params(SpeculativeType type, int32_t n) {
  RequestParams p = greedy(n);
  p.logprobs = 3;
  p.speculative.type = type;
  return p;
}

void expect_same_generation(const CompletionResult& a, const CompletionResult& b) {
  EXPECT_EQ(a.generated, b.generated);
  EXPECT_EQ(a.reply, b.reply);
  ASSERT_EQ(a.logprobs.size(), b.logprobs.size());
  for (size_t i = 0; i < a.logprobs.size(); ++i) {
    EXPECT_EQ(a.logprobs[i].token, b.logprobs[i].token) << i;
    EXPECT_EQ(std::memcmp(&a.logprobs[i].logprob, &b.logprobs[i].logprob, sizeof(float)), 0) << i;
    ASSERT_EQ(a.logprobs[i].top.size(), b.logprobs[i].top.size());
    for (size_t k = 0; k < a.logprobs[i].top.size(); ++k) {
      EXPECT_EQ(a.logprobs[i].top[k].token, b.logprobs[i].top[k].token);
      EXPECT_EQ(
          std::memcmp(&a.logprobs[i].top[k].logprob, &b.logprobs[i].top[k].logprob, sizeof(float)),
          0);
    }
  }
}

TEST(Speculative, StubDraftAndLookupEqualPlainDecoding) {
  for (bool wrong : {false, true}) {
    auto rt = make_runtime();
    ASSERT_TRUE(rt->load_model(stub_with_draft(wrong)).ok());
    auto prompt = rt->tokenize("m", "abc abc abc abc abc abc abc");
    ASSERT_TRUE(prompt.ok());
    auto plain = rt->complete_tokens("m", *prompt, spec_params(SpeculativeType::kNone, 60));
    ASSERT_TRUE(plain.ok()) << plain.status().to_string();
    EXPECT_EQ(plain->stats.draft_tokens, 0);
    for (SpeculativeType t : {SpeculativeType::kDraft, SpeculativeType::kNgram}) {
      auto spec = rt->complete_tokens("m", *prompt, spec_params(t, 60));
      ASSERT_TRUE(spec.ok()) << spec.status().to_string();
      SCOPED_TRACE(std::string(speculative_type_name(t)) + (wrong ? " (wrong draft)" : ""));
      expect_same_generation(*plain, *spec);
      EXPECT_LE(spec->stats.draft_accepted, spec->stats.draft_tokens);
      if (t == SpeculativeType::kDraft) {
        EXPECT_GT(spec->stats.draft_tokens, 0);
        if (wrong) {
          EXPECT_LT(spec->stats.draft_accepted, spec->stats.draft_tokens);
        } else {
          // The draft is the model itself: every drafted token is accepted.
          EXPECT_EQ(spec->stats.draft_accepted, spec->stats.draft_tokens);
        }
        EXPECT_GT(spec->stats.draft_accepted, 0);
      }
    }
  }
}

TEST(Speculative, SeededSamplingIsIdenticalToo) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_with_draft(true)).ok());
  auto prompt = rt->tokenize("m", "the cat sat on the mat, the cat sat on the");
  ASSERT_TRUE(prompt.ok());
  RequestParams p = spec_params(SpeculativeType::kNone, 40);
  p.sampling.temperature = 0.8f;
  p.sampling.seed = 42;
  auto plain = rt->complete_tokens("m", *prompt, p);
  ASSERT_TRUE(plain.ok());
  p.speculative.type = SpeculativeType::kDraft;
  auto spec = rt->complete_tokens("m", *prompt, p);
  ASSERT_TRUE(spec.ok());
  expect_same_generation(*plain, *spec);
  EXPECT_GT(spec->stats.draft_tokens, 0);
}

// Adaptive drafting (RequestParams::speculative.adaptive over the model's false): the same
// tokens and logprobs as plain decoding, whatever the drafts' acceptance.
TEST(Speculative, AdaptiveDraftingEqualsPlainDecoding) {
  for (bool wrong : {false, true}) {
    auto rt = make_runtime();
    ASSERT_TRUE(rt->load_model(stub_with_draft(wrong)).ok());
    auto prompt = rt->tokenize("m", "abc abc abc abc abc abc abc");
    ASSERT_TRUE(prompt.ok());
    auto plain = rt->complete_tokens("m", *prompt, spec_params(SpeculativeType::kNone, 60));
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(plain->stats.draft_steps, 0);
    for (SpeculativeType t : {SpeculativeType::kDraft, SpeculativeType::kNgram}) {
      SCOPED_TRACE(std::string(speculative_type_name(t)) + (wrong ? " (wrong draft)" : ""));
      RequestParams p = spec_params(t, 60);
      p.speculative.adaptive = true;
      auto spec = rt->complete_tokens("m", *prompt, p);
      ASSERT_TRUE(spec.ok()) << spec.status().to_string();
      expect_same_generation(*plain, *spec);
      EXPECT_LE(spec->stats.draft_steps, spec->stats.decode_steps);
      EXPECT_LE(spec->stats.draft_steps, spec->stats.draft_tokens);
    }
  }
}

// A draft model that is wrong at every position up to `wrong_until` (context positions),
// right after; the target costs 4 ms a pass plus 0.4 ms a token (StubControl), so a
// verify row is cheap next to the passes an accepted draft saves, and the draft model's
// own time (real work, slow under ASan on a loaded machine) stays small beside them.
ModelConfig stub_with_switching_draft(int32_t wrong_until, std::shared_ptr<StubControl> control) {
  ModelConfig c = stub_config("m", 1, control);
  control->step_delay_us = 4000;
  control->token_delay_us = 400;
  BackendFactory inner = stub_factory(StubOptions{});
  c.speculative.draft_model = "stub-draft.gguf";
  c.speculative.draft_max = 6;
  c.speculative.adaptive = true;
  c.draft_factory = [inner, wrong_until]() -> Result<std::unique_ptr<Backend>> {
    HEARTH_ASSIGN_OR_RETURN(std::unique_ptr<Backend> b, inner());
    return std::unique_ptr<Backend>(std::make_unique<SometimesWrong>(
        std::move(b), [wrong_until](int32_t pos) { return pos < wrong_until; }));
  };
  return c;
}

TEST(Speculative, AdaptiveDraftingStopsWhenDraftsFailAndResumesWhenTheyAgree) {
  constexpr int32_t kGen = 160;
  std::vector<TokenId> prompt;
  CompletionResult plain;
  {
    auto rt = make_runtime();
    ASSERT_TRUE(rt->load_model(stub_config("m", 1)).ok());
    auto p = rt->tokenize("m", "the quick brown fox jumps over the lazy dog");
    ASSERT_TRUE(p.ok());
    prompt = *p;
    auto r = rt->complete_tokens("m", prompt, spec_params(SpeculativeType::kNone, kGen));
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->generated.size(), static_cast<size_t>(kGen));  // no early end of generation
    plain = *r;
  }
  const int32_t n_prompt = static_cast<int32_t>(prompt.size());
  // Always wrong: after a few drafts while the prior wears off, only a one-token probe
  // every probe_interval (16) plain steps; nothing accepted.
  {
    auto rt = make_runtime();
    ASSERT_TRUE(
        rt->load_model(stub_with_switching_draft(1 << 30, std::make_shared<StubControl>())).ok());
    auto r = rt->complete_tokens("m", prompt, spec_params(SpeculativeType::kDraft, kGen));
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    expect_same_generation(plain, *r);
    EXPECT_EQ(r->stats.draft_accepted, 0);
    EXPECT_GT(r->stats.draft_steps, 0);
    EXPECT_GE(r->stats.decode_steps, kGen - 1);
    EXPECT_LT(r->stats.draft_steps * 4, r->stats.decode_steps)
        << r->stats.draft_steps << " of " << r->stats.decode_steps << " steps drafted";
  }
  // Wrong for the first half of the generation, right after: drafting resumes within a
  // probe interval and most of the second half comes from accepted drafts.
  {
    auto rt = make_runtime();
    ASSERT_TRUE(rt->load_model(stub_with_switching_draft(n_prompt + kGen / 2,
                                                         std::make_shared<StubControl>()))
                    .ok());
    auto r = rt->complete_tokens("m", prompt, spec_params(SpeculativeType::kDraft, kGen));
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    expect_same_generation(plain, *r);
    EXPECT_GE(r->stats.draft_accepted, kGen / 4) << r->stats.draft_accepted << " accepted";
    EXPECT_LT(r->stats.decode_steps, kGen - kGen / 4);
  }
}

TEST(Speculative, RequestFieldsAreChecked) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("plain", 1)).ok());
  auto prompt = rt->tokenize("plain", "hello");
  ASSERT_TRUE(prompt.ok());
  auto no_draft = rt->complete_tokens("plain", *prompt, spec_params(SpeculativeType::kDraft, 4));
  ASSERT_FALSE(no_draft.ok());
  EXPECT_NE(no_draft.status().message().find("speculative.type"), std::string::npos);
  RequestParams p = greedy(4);
  p.speculative.n_max = -1;
  auto bad = rt->complete_tokens("plain", *prompt, p);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("speculative.n_max"), std::string::npos);
  ModelConfig c = stub_config("bad", 1);
  c.speculative.draft_max = 0;
  auto refused = rt->load_model(c);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("draft_max"), std::string::npos);
}

TEST(Verify, AcceptsTheAgreeingPrefixAndNamesTheNextToken) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 2)).ok());
  auto prefix = rt->tokenize("m", "The quick brown fox");
  ASSERT_TRUE(prefix.ok());
  auto plain = rt->complete_tokens("m", *prefix, greedy(8));
  ASSERT_TRUE(plain.ok());
  const std::vector<TokenId>& g = plain->generated;
  ASSERT_EQ(g.size(), 8u);

  auto all = rt->verify("m", *prefix, std::span<const TokenId>(g).first(5), 5);
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  EXPECT_EQ(all->accepted, 5);
  EXPECT_EQ(all->next, g[5]);
  EXPECT_FALSE(all->eos);

  std::vector<TokenId> wrong(g.begin(), g.begin() + 5);
  wrong[2] = g[2] == 40 ? 41 : 40;
  auto two = rt->verify("m", *prefix, wrong, 5);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->accepted, 2);
  EXPECT_EQ(two->next, g[2]);

  auto k2 = rt->verify("m", *prefix, g, 2);  // only the first K are scored
  ASSERT_TRUE(k2.ok());
  EXPECT_EQ(k2->accepted, 2);
  EXPECT_EQ(k2->next, g[2]);

  auto none = rt->verify("m", *prefix, {}, 1);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->accepted, 0);
  EXPECT_EQ(none->next, g[0]);

  // Requests after verify still decode the same (its cells were rolled back).
  auto again = rt->complete_tokens("m", *prefix, greedy(8));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->generated, g);

  EXPECT_FALSE(rt->verify("m", *prefix, g, 0).ok());
  const std::vector<TokenId> out_of_vocab = {StubBackend::kVocab};
  auto bad = rt->verify("m", *prefix, out_of_vocab, 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("draft token"), std::string::npos);
}

TEST(Verify, IsRefusedAsBusyWhileRequestsAreInFlight) {
  auto control = std::make_shared<StubControl>();
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 2, control)).ok());
  auto prefix = rt->tokenize("m", "busy busy");
  ASSERT_TRUE(prefix.ok());
  control->step_delay_us = 2000;
  std::promise<void> first;
  auto first_token = first.get_future();
  bool got = false;
  std::promise<void> finished;
  StreamSink sink;
  sink.on_token = [&](TokenId) {
    if (!got) first.set_value();
    got = true;
  };
  sink.on_done = [&](const RequestStats&) { finished.set_value(); };
  sink.on_error = [&](const Status&) { finished.set_value(); };
  RequestParams p = greedy(2000);
  auto id = rt->infer("m", *prefix, p, sink);
  ASSERT_TRUE(id.ok());
  first_token.wait();
  auto busy = rt->verify("m", *prefix, std::vector<TokenId>{40}, 1);
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(busy.status().message().find("busy"), std::string::npos);
  rt->cancel(*id);
  finished.get_future().wait();
  control->step_delay_us = 0;
  EXPECT_TRUE(rt->verify("m", *prefix, std::vector<TokenId>{40}, 1).ok());
}

// ---------------------------------------------------------------- gen-model models

class SpeculativeEngine : public cli::testing::GenModelTest {
 protected:
  std::string model(const std::string& type, int seed) {
    return gen("--preset tiny --ctx 1024 --seed " + std::to_string(seed) + " --type " + type,
               "spec_" + type + "_" + std::to_string(seed) + ".gguf");
  }
};

// A verify row's logits and the KV cells it writes are those of one-token decodes.
TEST_F(SpeculativeEngine, VerifyRowMatchesOneTokenDecodesBitForBit) {
  for (const char* type : {"f16", "q4_0"}) {
    SCOPED_TRACE(type);
    ModelConfig c = engine_config("m", model(type, 5), 2);
    c.n_ctx = 256;
    auto backend = engine_factory(c)();
    ASSERT_TRUE(backend.ok()) << backend.status().to_string();
    Backend& b = **backend;
    const std::vector<TokenId> prompt = {1, 50, 60, 70, 80, 90, 100};
    const std::vector<TokenId> next = {11, 12, 13, 14, 15, 16};
    std::vector<std::vector<float>> logits_a, logits_b;
    for (int32_t seq : {0, 1}) {
      StepRow row{seq, 0, prompt, false, 0};
      std::vector<std::vector<float>> none;
      ASSERT_TRUE(b.step(std::span<const StepRow>(&row, 1), &none).ok());
    }
    for (size_t i = 0; i < next.size(); ++i) {
      StepRow row{0, static_cast<int32_t>(prompt.size() + i),
                  std::span<const TokenId>(next).subspan(i, 1), true, 0};
      ASSERT_TRUE(b.step(std::span<const StepRow>(&row, 1), &logits_a).ok());
    }
    StepRow row{1, static_cast<int32_t>(prompt.size()), next, false,
                static_cast<int32_t>(next.size())};
    ASSERT_TRUE(b.step(std::span<const StepRow>(&row, 1), &logits_b).ok());
    ASSERT_EQ(logits_a.size(), next.size());
    ASSERT_EQ(logits_b.size(), next.size());
    for (size_t i = 0; i < next.size(); ++i)
      EXPECT_EQ(
          std::memcmp(logits_a[i].data(), logits_b[i].data(), logits_a[i].size() * sizeof(float)),
          0)
          << "position " << i;
    const int32_t n = static_cast<int32_t>(prompt.size() + next.size());
    auto kv_a = b.kv_pack(0, n);
    auto kv_b = b.kv_pack(1, n);
    ASSERT_TRUE(kv_a.ok() && kv_b.ok());
    EXPECT_TRUE(*kv_a == *kv_b);
  }
}

// F16 target with a Q4_0 draft of the same seed, and Q4_0 target with an F16 draft:
// draft-model and prompt-lookup speculation give the plain tokens and logprobs, also
// when the prompt is restored from the rows a speculative run saved.
TEST_F(SpeculativeEngine, DraftAndLookupEqualPlainGreedyColdAndWarm) {
  const std::string f16 = model("f16", 9), q4 = model("q4_0", 9);
  for (const auto& [target, draft] : {std::pair{f16, q4}, std::pair{q4, f16}}) {
    SCOPED_TRACE(target);
    auto rt = make_runtime();
    ModelConfig c = engine_config("t", target, 1);
    c.speculative.draft_model = draft;
    c.speculative.draft_max = 6;
    c.speculative.draft_p_min = 0;   // a random model's draft is never confident
    c.speculative.adaptive = false;  // draft at every step, however little it pays
    ASSERT_TRUE(rt->load_model(c).ok());
    auto prompt = rt->tokenize("t", "Once upon a time there was a little robot who", true);
    ASSERT_TRUE(prompt.ok());
    RequestParams plain_p = spec_params(SpeculativeType::kNone, 48);
    plain_p.cache_prompt = false;
    auto plain = rt->complete_tokens("t", *prompt, plain_p);
    ASSERT_TRUE(plain.ok()) << plain.status().to_string();
    ASSERT_GT(plain->generated.size(), 8u);
    int64_t accepted = 0;
    for (SpeculativeType t : {SpeculativeType::kDraft, SpeculativeType::kNgram}) {
      SCOPED_TRACE(speculative_type_name(t));
      RequestParams p = spec_params(t, 48);
      p.cache_prompt = false;
      auto spec = rt->complete_tokens("t", *prompt, p);
      ASSERT_TRUE(spec.ok()) << spec.status().to_string();
      expect_same_generation(*plain, *spec);
      if (t == SpeculativeType::kDraft) {
        EXPECT_GT(spec->stats.draft_tokens, 0);
        accepted += spec->stats.draft_accepted;
      }
    }
    EXPECT_GT(accepted, 0) << "a same-seed draft of another precision never agreed";

    // Warm: a speculative run saves its rows; the next turn restores them and continues
    // exactly as a cold plain run of the same tokens.
    auto saved = rt->complete_tokens("t", *prompt, spec_params(SpeculativeType::kDraft, 48));
    ASSERT_TRUE(saved.ok());
    ASSERT_TRUE(saved->finish_key.has_value());
    ASSERT_TRUE(rt->cache_flush());
    std::vector<TokenId> next_turn = saved->context_tokens;
    next_turn.pop_back();  // the finish row: prompt + generated but the last (never fed)
    for (TokenId t : {40, 41, 42, 43}) next_turn.push_back(t);
    RequestParams warm_p = spec_params(SpeculativeType::kNone, 16);
    warm_p.parent_key = saved->finish_key;
    auto warm = rt->complete_tokens("t", next_turn, warm_p);
    ASSERT_TRUE(warm.ok());
    EXPECT_EQ(warm->cache_hit_kind, CacheHitKind::kExact);
    RequestParams cold_p = spec_params(SpeculativeType::kNone, 16);
    cold_p.cache_prompt = false;
    auto cold = rt->complete_tokens("t", next_turn, cold_p);
    ASSERT_TRUE(cold.ok());
    expect_same_generation(*cold, *warm);
  }
}

TEST_F(SpeculativeEngine, DraftWithAnotherVocabularyIsRefusedNamingTheKey) {
  auto rt = make_runtime();
  ModelConfig c = engine_config("t", model("q4_0", 3), 1);
  c.speculative.draft_model = "stub-draft.gguf";
  c.draft_factory = stub_factory(StubOptions{});
  auto r = rt->load_model(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("tokenizer.ggml.tokens"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace hearth::runtime
