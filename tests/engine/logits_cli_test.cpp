// `hearth logits` end to end on stories260K: the generating mode prints a case in the
// reference format that parse_reference_case reads back, and the checking mode prints
// one line per step with the reference's five ids, a summary in the documented format,
// and an exit status that says whether the case is within the bounds.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/model/reference_check.h"
#include "gen_model_test_util.h"

namespace hearth {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

class LogitsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::cli_built())
      GTEST_SKIP() << "SKIPPED: hearth binary not built at " HEARTH_CLI_PATH;
    case_ = std::string(HEARTH_SHARED_DIR) + "/reference/stories260K.P1.txt";
    model_ = std::string(HEARTH_SHARED_DIR) + "/models/stories260K.gguf";
    if (!fs::exists(case_) || !fs::exists(model_)) {
      GTEST_SKIP() << "SKIPPED: stories260K model or reference case not under " HEARTH_SHARED_DIR;
    }
  }
  void TearDown() override {
    for (const auto& p : cleanup_) fs::remove(p);
  }
  std::string temp_file(const std::string& name) {
    cleanup_.push_back(
        (fs::temp_directory_path() / ("hearth_logits_" + std::to_string(getpid()) + "_" + name))
            .string());
    return cleanup_.back();
  }
  std::string case_, model_;
  std::vector<std::string> cleanup_;
};

TEST_F(LogitsCli, ReferenceModePrintsStepsAndSummaryAndPasses) {
  auto ref = engine::parse_reference_case(case_);
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  int rc = -1;
  const std::string out = testing::run_command(
      std::string(HEARTH_CLI_PATH) + " logits --reference '" + case_ + "' -t 1", &rc);
  EXPECT_EQ(rc, 0) << out;
  const auto lines = lines_of(out);
  ASSERT_EQ(lines.size(), ref->steps.size() + 1) << out;
  for (size_t i = 0; i < ref->steps.size(); ++i) {
    std::istringstream ls(lines[i]);
    std::string step, token, top5;
    size_t idx = 0;
    int32_t argmax = -1;
    ls >> step >> idx >> token >> argmax >> top5;
    EXPECT_EQ(step, "step");
    EXPECT_EQ(idx, i);
    EXPECT_EQ(token, "token");
    EXPECT_EQ(top5, "top5");
    for (size_t k = 0; k < 5; ++k) {
      std::string pair;
      ls >> pair;
      const size_t colon = pair.find(':');
      ASSERT_NE(colon, std::string::npos) << lines[i];
      EXPECT_EQ(std::stoi(pair.substr(0, colon)), ref->steps[i].top5[k].first)
          << "step " << i << ": ids must be the reference's, in its order";
      EXPECT_NEAR(std::stod(pair.substr(colon + 1)), ref->steps[i].top5[k].second, 0.1);
    }
  }
  std::istringstream s(lines.back());
  std::string w[10];
  for (auto& x : w) s >> x;
  EXPECT_EQ(w[0], "summary");
  EXPECT_EQ(w[1], "max_abs_diff");
  EXPECT_LE(std::stod(w[2]), 0.1);
  EXPECT_EQ(w[3], "mean_abs_diff");
  EXPECT_EQ(w[5], "top1_violations");
  EXPECT_EQ(w[6], "0");
  EXPECT_EQ(w[7], "steps");
  EXPECT_EQ(std::stoul(w[8]), ref->steps.size());
  EXPECT_EQ(w[9], "tokens_match");
  std::string tm;
  s >> tm;
  EXPECT_EQ(tm, "1") << "our tokenization of prompt_text equals prompt_tokens";
}

// --out with --reference writes the teacher-forced steps' whole rows: n_vocab floats per
// step, whose reference ids hold the logits the step lines print.
TEST_F(LogitsCli, ReferenceModeOutWritesEveryStepsRow) {
  auto ref = engine::parse_reference_case(case_);
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  const std::string file = ::testing::TempDir() + "/logits_cli_rows.bin";
  int rc = -1;
  const std::string out =
      testing::run_command(std::string(HEARTH_CLI_PATH) + " logits --reference '" + case_ +
                               "' -t 1 --out '" + file + "'",
                           &rc);
  EXPECT_EQ(rc, 0) << out;
  std::ifstream g(file, std::ios::binary | std::ios::ate);
  const size_t bytes = static_cast<size_t>(g.tellg());
  ASSERT_EQ(bytes, ref->steps.size() * static_cast<size_t>(ref->n_vocab) * sizeof(float));
  std::vector<float> all(bytes / sizeof(float));
  g.seekg(0);
  g.read(reinterpret_cast<char*>(all.data()), static_cast<std::streamsize>(bytes));
  const auto lines = lines_of(out);
  for (size_t i = 0; i < ref->steps.size(); ++i) {
    std::istringstream ls(lines[i]);
    std::string skip;
    for (int k = 0; k < 5; ++k) ls >> skip;  // step i token id top5
    for (size_t k = 0; k < 5; ++k) {
      std::string pair;
      ls >> pair;
      const size_t colon = pair.find(':');
      const int32_t id = std::stoi(pair.substr(0, colon));
      EXPECT_NEAR(all[i * static_cast<size_t>(ref->n_vocab) + static_cast<size_t>(id)],
                  std::stod(pair.substr(colon + 1)), 1e-5)
          << "step " << i << " id " << id;
    }
  }
  std::remove(file.c_str());
}

// A case whose logits are moved by 1.0 is outside the F32 bound: exit 1. A case whose
// prompt_tokens differ from our tokenization of prompt_text reports tokens_match 0.
TEST_F(LogitsCli, ReferenceModeFailsOutsideTheBounds) {
  std::ifstream in(case_);
  std::ostringstream shifted, retokenized;
  for (std::string line; std::getline(in, line);) {
    std::string s = line, r = line;
    if (line.rfind("step ", 0) == 0) {
      // Every logit +1.0: rewrite each "id:value" pair.
      std::istringstream ls(line);
      std::ostringstream os;
      std::string tok;
      for (int i = 0; ls >> tok; ++i) {
        const size_t colon = tok.find(':');
        if (i >= 5 && colon != std::string::npos) {
          const double v = std::stod(tok.substr(colon + 1)) + 1.0;
          char buf[64];
          std::snprintf(buf, sizeof buf, "%s:%.6f", tok.substr(0, colon).c_str(), v);
          tok = buf;
        }
        os << (i ? " " : "") << tok;
      }
      s = os.str();
    }
    if (line.rfind("prompt_text ", 0) == 0) r = "prompt_text \"Once upon a tree\"";
    shifted << s << "\n";
    retokenized << r << "\n";
  }
  const std::string bad_logits = temp_file("shifted.txt");
  const std::string bad_prompt = temp_file("retokenized.txt");
  std::ofstream(bad_logits) << shifted.str();
  std::ofstream(bad_prompt) << retokenized.str();

  int rc = -1;
  std::string out = testing::run_command(std::string(HEARTH_CLI_PATH) + " logits --reference '" +
                                             bad_logits + "' -m '" + model_ + "' -t 1",
                                         &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("tokens_match 1"), std::string::npos) << out;

  out = testing::run_command(std::string(HEARTH_CLI_PATH) + " logits --reference '" + bad_prompt +
                                 "' -m '" + model_ + "' -t 1",
                             &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("tokens_match 0"), std::string::npos) << out;
}

// The generating mode writes a case that the parser reads back, whose greedy tokens are
// the reference's (same model, prompt and bits within the bound), and which the checking
// mode then passes.
TEST_F(LogitsCli, GeneratedCaseReadsBackAndChecks) {
  auto ref = engine::parse_reference_case(case_);
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  int rc = -1;
  const std::string out = testing::run_command(
      std::string(HEARTH_CLI_PATH) + " logits -m '" + model_ + "' -p 'Once upon a time' -n 8 -t 1",
      &rc);
  ASSERT_EQ(rc, 0) << out;
  const std::string path = temp_file("generated.txt");
  std::ofstream(path) << out;
  auto mine = engine::parse_reference_case(path);
  ASSERT_TRUE(mine.ok()) << mine.status().to_string() << "\n" << out;
  EXPECT_EQ(mine->model_file, "stories260K.gguf");
  EXPECT_EQ(mine->prompt_tokens, ref->prompt_tokens);
  ASSERT_EQ(mine->steps.size(), 8u);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(mine->steps[i].token, ref->steps[i].token) << i;
  EXPECT_EQ(mine->batch_variance, 0.0) << "hearth is batch-invariant";
  testing::run_command(
      std::string(HEARTH_CLI_PATH) + " logits --reference '" + path + "' -m '" + model_ + "' -t 1",
      &rc);
  EXPECT_EQ(rc, 0);
}

TEST_F(LogitsCli, MissingModelIsAnError) {
  int rc = -1;
  const std::string out =
      testing::run_command(std::string(HEARTH_CLI_PATH) + " logits -p hi", &rc, true);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("-m MODEL"), std::string::npos) << out;
}

}  // namespace
}  // namespace hearth
