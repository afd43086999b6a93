// Grammar-constrained sampling in the runtime's one sampler: the choice is exactly the
// unconstrained chain's choice over the logits with the disallowed tokens removed, lazy
// grammars start at their trigger, and requests through the runtime follow the grammar.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <random>

#include "hearth/engine/sampler.h"
#include "hearth/grammar/grammar.h"
#include "runtime/token_sampler.h"
#include "stub_fixture.h"

namespace hearth::runtime {
namespace {
using namespace testing;

std::shared_ptr<const grammar::TokenVocab> small_vocab() {
  return grammar::TokenVocab::build(
      {"</s>", "a",      "b",   "[",   "]",       ",",       "1", "2", "12",   "[1",  "1]",
       "x",    "<call>", "<ca", "ll>", "</call>", "<call>x", " ", "é", "\xC3", "\xA9"},
      {0});
}

const char* kListGrammar = "root ::= \"[\" (num (\",\" num)*)? \"]\"\nnum ::= [12]+";

// Reference: the plain engine sampler over logits where every token the grammar refuses
// (asked token by token, not through the mask) is -inf.
TEST(GrammarSampler, ChoosesWhatTheChainChoosesAmongAllowedTokens) {
  auto vocab = small_vocab();
  auto g = grammar::parse_gbnf(kListGrammar);
  ASSERT_TRUE(g.ok());
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  struct Knobs {
    float temperature;
    int32_t top_k;
    float top_p;
    float min_p;
  };
  for (Knobs k : {Knobs{0, 0, 1, 0}, Knobs{1, 0, 1, 0}, Knobs{0.7f, 3, 1, 0},
                  Knobs{1.3f, 0, 0.8f, 0}, Knobs{1, 0, 1, 0.2f}}) {
    for (uint64_t seed = 0; seed < 20; ++seed) {
      SamplingOptions o;
      o.temperature = k.temperature;
      o.top_k = k.top_k;
      o.top_p = k.top_p;
      o.min_p = k.min_p;
      o.seed = seed;
      o.grammar = kListGrammar;
      auto s = make_token_sampler(o, {}, vocab);
      ASSERT_TRUE(s.ok()) << s.status().message();
      SamplingParams p;
      p.temperature = o.temperature;
      p.top_k = o.top_k;
      p.top_p = o.top_p;
      p.min_p = o.min_p;
      p.seed = seed;
      Sampler reference(p);
      grammar::Matcher m(g.value());
      std::vector<int32_t> history;
      for (int step = 0; step < 40; ++step) {
        std::vector<float> logits(static_cast<size_t>(vocab->size()));
        for (float& l : logits) l = normal(rng);
        std::vector<float> masked = logits;
        for (int32_t id = 0; id < vocab->size(); ++id) {
          if (!m.token_allowed(*vocab, id)) {
            masked[static_cast<size_t>(id)] = -std::numeric_limits<float>::infinity();
          }
        }
        const TokenId got = s.value()->sample(logits);
        const int32_t want = reference.sample(masked, history);
        ASSERT_EQ(got, want) << "seed " << seed << " step " << step;
        s.value()->accept(got);
        history.push_back(got);
        if (got == 0) break;
        ASSERT_TRUE(m.accept_bytes(vocab->bytes(got)));
      }
    }
  }
}

TEST(GrammarSampler, LazyGrammarStartsAtTheTrigger) {
  auto vocab = small_vocab();
  SamplingOptions o;
  o.temperature = 0;
  o.grammar = "root ::= \"<call>\" [12]+ \"</call>\"";
  o.grammar_triggers = {"<call>"};
  auto s = make_token_sampler(o, {}, vocab).value();
  auto id = [&](const std::string& text) {
    if (text == "</s>") return 0;  // EOG: no text in the vocabulary
    for (int32_t i = 0; i < vocab->size(); ++i) {
      if (vocab->bytes(i) == text) return i;
    }
    return -1;
  };
  auto favour = [&](std::initializer_list<std::pair<std::string, float>> prefs) {
    std::vector<float> logits(static_cast<size_t>(vocab->size()), 0.0f);
    for (const auto& [text, v] : prefs) logits[static_cast<size_t>(id(text))] = v;
    return logits;
  };
  // Before the trigger: free text ("x" is not in the grammar).
  EXPECT_EQ(s->sample(favour({{"x", 5}})), id("x"));
  s->accept(id("x"));
  // "<call>x" would complete the trigger with text the grammar refuses: the next best.
  EXPECT_EQ(s->sample(favour({{"<call>x", 9}, {"<ca", 5}})), id("<ca"));
  s->accept(id("<ca"));
  // The trigger completes across tokens; from its start the grammar applies.
  EXPECT_EQ(s->sample(favour({{"ll>", 5}})), id("ll>"));
  s->accept(id("ll>"));
  EXPECT_EQ(s->sample(favour({{"x", 9}, {"</call>", 8}, {"2", 1}})), id("2"));
  s->accept(id("2"));
  EXPECT_EQ(s->sample(favour({{"x", 9}, {"</s>", 8}, {"</call>", 1}})), id("</call>"));
  s->accept(id("</call>"));
  EXPECT_EQ(s->sample(favour({{"x", 9}, {"1", 8}})), 0);  // only the end is left
}

TEST(GrammarSampler, CheckSamplingNamesTheGrammarError) {
  SamplingOptions o;
  o.grammar = "root ::= [a-";
  Status st = check_sampling(o);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(st.message().rfind("sampling.grammar: line 1, column", 0), 0u) << st.message();
  o.grammar = "";
  o.grammar_triggers = {"<x>"};
  EXPECT_EQ(check_sampling(o).message(), "sampling.grammar_triggers needs sampling.grammar");
  o.grammar = "root ::= \"a\"";
  o.grammar_triggers = {""};
  EXPECT_EQ(check_sampling(o).message(), "sampling.grammar_triggers[0] is empty");
}

TEST(GrammarSampler, RuntimeRequestsFollowTheGrammar) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 2)).ok());
  int ended = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    RequestParams p;
    p.response_tokens = 64;
    p.sampling.temperature = 1.0f;
    p.sampling.seed = seed;
    p.sampling.grammar = "root ::= (\"yes\" | \"no\" | [0-9]{1,3}) \"!\"";
    auto r = rt->complete("m", "Question?", p);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    auto g = grammar::parse_gbnf(p.sampling.grammar);
    grammar::Matcher m(g.value());
    EXPECT_TRUE(m.accept_bytes(r->reply) && m.can_end()) << r->reply;
    ended += r->finish_reason == FinishReason::kStop;
  }
  EXPECT_EQ(ended, 20);  // the grammar ends within 4 tokens, then only EOS is allowed
  RequestParams bad;
  bad.sampling.grammar = "root ::= (";
  auto r = rt->complete("m", "Question?", bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("sampling.grammar"), std::string::npos);
}

}  // namespace
}  // namespace hearth::runtime

namespace hearth::runtime {
namespace {
using namespace testing;

// The grammar is sampling only: a seeded constrained request gives the same tokens
// whether its prompt was computed (cold) or restored from the cache (warm).
TEST(GrammarSampler, WarmEqualsColdUnderAGrammar) {
  const std::string model = std::string(HEARTH_SHARED_DIR) + "/models/stories260K.gguf";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << "SKIPPED: " << model << " is absent";
  const char* prompt =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
      "sun. One day, she saw a big red ball in the park. She ran to get it, but a dog took it.";
  RequestParams p;
  p.response_tokens = 40;
  p.sampling.temperature = 0.9f;
  p.sampling.seed = 5;
  p.sampling.grammar = "root ::= \" \" [A-Z] [a-z]{1,8} (\" \" [a-z]{1,8}){2,5} \".\"";
  auto cold_rt = make_runtime();
  ASSERT_TRUE(cold_rt->load_model(engine_config("m", model, 1, /*caching=*/false)).ok());
  auto cold = cold_rt->complete("m", prompt, p);
  ASSERT_TRUE(cold.ok()) << cold.status().to_string();
  EXPECT_EQ(cold->finish_reason, FinishReason::kStop);

  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(engine_config("m", model, 1)).ok());
  RequestParams unconstrained = p;
  unconstrained.sampling.grammar.clear();
  ASSERT_TRUE(rt->complete("m", prompt, unconstrained).ok());  // saves the prompt's KV
  ASSERT_TRUE(rt->cache_flush());
  ASSERT_TRUE(rt->complete("m", "A cat sat on a mat.", unconstrained).ok());  // evicts the slot
  auto warm = rt->complete("m", prompt, p);
  ASSERT_TRUE(warm.ok()) << warm.status().to_string();
  EXPECT_NE(warm->cache_hit_kind, CacheHitKind::kCold);
  EXPECT_EQ(warm->generated, cold->generated);
  EXPECT_EQ(warm->reply, cold->reply);
}

}  // namespace
}  // namespace hearth::runtime
