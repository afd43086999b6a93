// `hearth tokenize` end to end: runs the CLI binary on the shared Llama 2 model.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "tokenizer_test_util.h"

namespace hearth {
namespace {

// Runs a shell command, returning its stdout and setting *rc to its exit status.
std::string run(const std::string& cmd, int* rc) {
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    *rc = -1;
    return out;
  }
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  const int status = pclose(pipe);
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

class TokenizeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = testing::shared_path("models/llama-2-tiny-random.gguf");
    if (!testing::file_exists(HEARTH_CLI_PATH)) GTEST_SKIP() << "SKIPPED: hearth binary not built";
    if (!testing::file_exists(model_)) GTEST_SKIP() << "SKIPPED: " << model_ << " not present";
  }
  std::string model_;
};

TEST_F(TokenizeCli, JsonOutputMatchesLibrary) {
  int rc = 0;
  const std::string out =
      run(std::string(HEARTH_CLI_PATH) + " tokenize -m " + model_ + " 'Hello world' --json", &rc);
  ASSERT_EQ(rc, 0) << out;
  const auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << out;
  auto tok = testing::tokenizer_from_gguf(model_);
  ASSERT_TRUE(tok.ok());
  auto ids = tok->encode("Hello world", true, false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), *ids);
  EXPECT_EQ(j["tokens"][0], 1);  // BOS
  EXPECT_EQ(j["pieces"][1], " Hello");
}

TEST_F(TokenizeCli, NoBosAndParseSpecial) {
  int rc = 0;
  const std::string out = run(std::string(HEARTH_CLI_PATH) + " tokenize -m " + model_ +
                                  " 'a</s>' --json --no-bos --parse-special",
                              &rc);
  ASSERT_EQ(rc, 0) << out;
  const auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << out;
  const auto tokens = j["tokens"].get<std::vector<int32_t>>();
  ASSERT_FALSE(tokens.empty());
  EXPECT_NE(tokens.front(), 1);
  EXPECT_EQ(tokens.back(), 2);  // </s> recognised
}

// A bert (WordPiece) vocabulary tokenizes: [CLS], the lowercased words, [SEP] (the ids
// of llama.cpp's vector for "Hello world" in between).
TEST_F(TokenizeCli, BertVocabularyTokenizes) {
  const std::string bert = testing::shared_path("models/vocab/ggml-vocab-bert-bge.gguf");
  if (!testing::file_exists(bert)) GTEST_SKIP() << "SKIPPED: " << bert << " not present";
  int rc = 0;
  const std::string out =
      run(std::string(HEARTH_CLI_PATH) + " tokenize -m " + bert + " 'Hello world' --json", &rc);
  ASSERT_EQ(rc, 0) << out;
  const auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << out;
  EXPECT_EQ(j["tokens"], nlohmann::json::array({101, 7592, 2088, 102})) << out;
}

}  // namespace
}  // namespace hearth
