// The harshest grammar test (issue #21): a gen-model with random weights, sampling at
// temperature 1, 1,000 times under a JSON Schema. Every generation that the grammar
// ended must parse and pass an independent validator; the schema is bounded (string
// lengths, item counts, digits, white space), so every one of them should end.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "cli/gguf_cli_util.h"
#include "hearth/grammar/json_schema.h"
#include "stub_fixture.h"
#include "testing/json_schema_check.h"

namespace hearth::runtime {
namespace {
using namespace testing;
using nlohmann::json;

class GrammarGenerations : public cli::testing::GenModelTest {};

const char* kSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 10},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "member": {"type": "boolean"},
    "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3},
    "code": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{2}$"},
    "nick": {"type": ["string", "null"], "maxLength": 5}
  },
  "required": ["name", "age", "member", "tags"],
  "additionalProperties": false
})";

TEST_F(GrammarGenerations, ThousandRandomWeightGenerationsAllValidate) {
  const std::string model = gen("--preset tiny --ctx 2048 --seed 11", "grammar_tiny.gguf");
  const json schema = json::parse(kSchema);
  auto gbnf = grammar::json_schema_to_gbnf(schema);
  ASSERT_TRUE(gbnf.ok()) << gbnf.status().message();

  auto rt = make_runtime();
  ModelConfig cfg = engine_config("m", model, 8, /*caching=*/false);
  cfg.n_ctx = 2048;
  ASSERT_TRUE(rt->load_model(cfg).ok());

  constexpr int kRuns = 1000;
  std::atomic<int> next{0}, ended{0}, valid{0}, length{0};
  std::mutex mu;
  std::vector<std::string> failures;
  auto worker = [&] {
    for (int i = next++; i < kRuns; i = next++) {
      RequestParams p;
      p.response_tokens = 1500;
      p.sampling.temperature = 1.0f;
      p.sampling.seed = static_cast<uint64_t>(i);
      p.sampling.grammar = gbnf.value();
      auto r = rt->complete("m", "Profile:", p);
      if (!r.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        failures.push_back("request " + std::to_string(i) + ": " + r.status().to_string());
        continue;
      }
      if (r->finish_reason != FinishReason::kStop) {
        ++length;
        continue;
      }
      ++ended;
      const json parsed = json::parse(r->reply, nullptr, /*allow_exceptions=*/false);
      std::string why = parsed.is_discarded()
                            ? "not JSON"
                            : hearth::testing::validate_json_schema(parsed, schema, schema);
      if (why.empty()) {
        ++valid;
      } else {
        std::lock_guard<std::mutex> lock(mu);
        failures.push_back("seed " + std::to_string(i) + ": " + why + ": " + r->reply);
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  for (size_t k = 0; k < failures.size() && k < 5; ++k) ADD_FAILURE() << failures[k];
  EXPECT_EQ(valid.load(), ended.load());
  EXPECT_EQ(ended.load(), kRuns) << length.load() << " hit max_tokens";
  std::printf("grammar generations: %d ended by the grammar, %d valid, %d hit max_tokens\n",
              ended.load(), valid.load(), length.load());
}

}  // namespace
}  // namespace hearth::runtime
