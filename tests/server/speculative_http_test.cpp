// Speculative decoding and verify through a real `hearth serve` (issue #23 item 2): a
// gen-model F16 target served with a same-seed Q4_0 --draft-model answers greedy
// completions with the same text and logprobs whether the request drafts with the draft
// model, with prompt lookup, or not at all; usage.hearth and /metrics count the drafted and
// accepted tokens; POST /hearth/verify scores a draft; bad speculative fields are 400s.
#include <httplib.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "serve_process.h"

namespace hearth::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ServeProcess;

class SpeculativeServe : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() /
                        std::string("hearth-spec-").append(std::to_string(getpid())));
    fs::remove_all(*dir_);
    fs::create_directories(*dir_);
    for (const char* type : {"f16", "q4_0"}) {
      const std::string cmd = std::string(HEARTH_CLI_PATH)
                                  .append(" gen-model --preset tiny --ctx 1024 --seed 9 --type ")
                                  .append(type)
                                  .append(" --out ")
                                  .append((*dir_ / (std::string(type) + ".gguf")).string())
                                  .append(" > /dev/null 2>&1");
      ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    }
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string path(const char* type) {
    return (*dir_ / (std::string(type) + ".gguf")).string();
  }
  static fs::path* dir_;
};
fs::path* SpeculativeServe::dir_ = nullptr;

json post(httplib::Client& c, const std::string& route, const json& body, int* status) {
  auto r = c.Post(route, body.dump(), "application/json");
  *status = r ? r->status : 0;
  return r ? json::parse(r->body, nullptr, false) : json();
}

TEST_F(SpeculativeServe, DraftAndLookupRepliesEqualPlainRepliesAndAreCounted) {
  ServeProcess p;
  ASSERT_TRUE(p.start({"-m", "t=" + path("f16"), "--draft-model", path("q4_0"), "--ctx-size", "512",
                       "--draft-max", "6"},
                      60000))
      << p.log();
  httplib::Client c("127.0.0.1", p.port());
  c.set_read_timeout(120, 0);
  const json base = {
      {"model", "t"},     {"prompt", "Once upon a time there was a little robot who"},
      {"max_tokens", 40}, {"temperature", 0},
      {"logprobs", 2},    {"speculative.p_min", 0}};  // a random model's draft is never confident
  auto completion = [&](const char* type) {
    json body = base;
    body["speculative.type"] = type;
    int status = 0;
    json r = post(c, "/v1/completions", body, &status);
    EXPECT_EQ(status, 200) << r;
    return r;
  };
  const json plain = completion("none");
  {  // the fixed draft length (speculative.adaptive false): the same reply
    json body = base;
    body["speculative.type"] = "ngram";
    body["speculative.adaptive"] = false;
    int status = 0;
    const json fixed = post(c, "/v1/completions", body, &status);
    EXPECT_EQ(status, 200) << fixed;
    EXPECT_EQ(fixed["choices"], plain["choices"]);
  }
  ASSERT_TRUE(plain.contains("choices")) << plain;
  EXPECT_FALSE(plain["usage"]["hearth"].contains("draft_n"));
  int64_t drafted = 0;
  for (const char* type : {"draft", "ngram"}) {
    SCOPED_TRACE(type);
    const json spec = completion(type);
    ASSERT_TRUE(spec.contains("choices")) << spec;
    EXPECT_EQ(spec["choices"], plain["choices"]);  // text and logprobs, bit for bit
    if (std::string(type) == "draft") {
      drafted = spec["usage"]["hearth"].value("draft_n", int64_t{0});
      EXPECT_GT(drafted, 0) << spec["usage"];
      EXPECT_LE(spec["usage"]["hearth"]["draft_n_accepted"].get<int64_t>(), drafted);
    }
  }
  // The server's default for this model is the draft model (--draft-model given).
  json dflt = base;
  int status = 0;
  const json by_default = post(c, "/v1/completions", dflt, &status);
  ASSERT_EQ(status, 200);
  EXPECT_EQ(by_default["choices"], plain["choices"]);
  EXPECT_GT(by_default["usage"]["hearth"].value("draft_n", int64_t{0}), 0);

  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics && metrics->status == 200);
  EXPECT_NE(metrics->body.find("hearth_draft_tokens_total{model=\"t\"}"), std::string::npos);
  EXPECT_EQ(metrics->body.find("hearth_draft_tokens_total{model=\"t\"} 0\n"), std::string::npos);
  EXPECT_NE(metrics->body.find("hearth_draft_accepted_tokens_total{model=\"t\"}"),
            std::string::npos);

  // Bad fields are refused by name.
  for (const auto& [field, value] : {std::pair<std::string, json>{"speculative.n_max", -1},
                                     {"speculative.type", "medusa"},
                                     {"speculative.p_min", 2},
                                     {"speculative.adaptive", "yes"}}) {
    json body = base;
    body[field] = value;
    const json err = post(c, "/v1/completions", body, &status);
    EXPECT_EQ(status, 400) << field;
    EXPECT_EQ(err["error"]["param"], field) << err;
  }

  // Verify: the greedy first token after the prompt, then a draft of it twice.
  json v0 = post(c, "/hearth/verify",
                 {{"model", "t"}, {"prompt", base["prompt"]}, {"draft", json::array()}}, &status);
  ASSERT_EQ(status, 200) << v0;
  EXPECT_EQ(v0["accepted"], 0);
  const int next = v0["next"].get<int>();
  json v1 =
      post(c, "/hearth/verify",
           {{"model", "t"}, {"prompt", base["prompt"]}, {"draft", {next, next, next}}, {"k", 2}},
           &status);
  ASSERT_EQ(status, 200) << v1;
  EXPECT_GE(v1["accepted"].get<int>(), 1);
  EXPECT_EQ(v1["draft_tokens"], 2);
  const json bad = post(c, "/hearth/verify",
                        {{"model", "t"}, {"prompt", "x"}, {"draft", {1}}, {"n", 1}}, &status);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(bad["error"]["param"], "n");
  EXPECT_EQ(p.stop(), 0);
}

TEST_F(SpeculativeServe, DraftWithAnotherVocabularyFailsTheStart) {
  // The stories260K vocabulary (512 tokens) is not the tiny preset's.
  const fs::path stories = fs::path(HEARTH_SHARED_DIR) / "models" / "stories260K.gguf";
  if (!fs::exists(stories)) GTEST_SKIP() << "no " << stories;
  ServeProcess p;
  EXPECT_FALSE(p.start({"-m", "t=" + path("f16"), "--draft-model", stories.string()}, 30000));
  EXPECT_NE(p.log().find("tokenizer.ggml.tokens"), std::string::npos) << p.log();
}

}  // namespace
}  // namespace hearth::server
