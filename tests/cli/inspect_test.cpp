// `hearth inspect` against the shared models (tables from PROVENANCE.md and
// reference/README.md), its JSON output, and its errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "gguf_cli_util.h"
#include "hearth/gguf/gguf.h"

namespace hearth::cli {
namespace {

using ::testing::HasSubstr;
using testing::run_cli;

const std::string kShared = HEARTH_SHARED_DIR;

#define REQUIRE_FILE(path)                                                                  \
  do {                                                                                      \
    if (!testing::cli_available()) GTEST_SKIP() << "SKIPPED: CLI not built";                \
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "SKIPPED: " << (path) << " absent"; \
  } while (0)

nlohmann::json inspect_json(const std::string& path, const std::string& extra = "") {
  auto r = run_cli("inspect --json " + extra + " '" + path + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
}

TEST(InspectCli, Stories260KText) {
  const std::string path = kShared + "/models/stories260K.gguf";
  REQUIRE_FILE(path);
  auto r = run_cli("inspect " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("architecture:  llama"));
  EXPECT_THAT(r.out, HasSubstr("gguf version:  3"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("block_count: +5\n"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("embedding_length: +64\n"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("attention.head_count_kv: +4\n"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("layer_norm_rms_epsilon: +1e-05\n"));
  EXPECT_THAT(r.out, HasSubstr("vocab size: 512"));
  EXPECT_THAT(r.out, HasSubstr("tensors:       48"));
}

TEST(InspectCli, Sha256MatchesProvenance) {
  const std::string path = kShared + "/models/stories260K.gguf";
  REQUIRE_FILE(path);
  auto j = inspect_json(path, "--sha256");
  EXPECT_EQ(j["sha256"], "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d");
  auto r = run_cli("inspect --sha256 " + path);
  EXPECT_THAT(r.out, HasSubstr("270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"));
}

// reference/README.md's model table: vocab, n_embd, layers, heads, n_ff, ctx, bytes.
TEST(InspectCli, ReferenceTableShapes) {
  struct Row {
    const char* file;
    const char* arch;
    int vocab, embd, layers, heads, heads_kv, ff, ctx;
    uint64_t bytes;
  };
  const Row rows[] = {
      {"/models/stories260K.gguf", "llama", 512, 64, 5, 8, 4, 172, 2048, 1185376},
      {"/models/llama-2-tiny-random.gguf", "llama", 32000, 8, 1, 2, 2, 32, 4096, 1750560},
      {"/reference/models/small-llama-f16.gguf", "llama", 512, 256, 4, 8, 4, 768, 2048, 6838784},
      {"/reference/models/small-llama-q6_k.gguf", "llama", 512, 256, 4, 8, 4, 768, 2048, 2818560},
      {"/reference/models/small-qwen2-q4_k_m.gguf", "qwen2", 512, 256, 4, 8, 4, 768, 2048, 2100736},
      {"/reference/models/small-llama-rope500k-q8_0.gguf", "llama", 512, 256, 4, 4, 1, 768, 2048,
       3504640},
  };
  int checked = 0;
  for (const Row& row : rows) {
    const std::string path = kShared + row.file;
    if (!std::filesystem::exists(path) || !testing::cli_available()) continue;
    SCOPED_TRACE(path);
    auto j = inspect_json(path);
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["architecture"], row.arch);
    EXPECT_EQ(j["tokenizer"]["vocab_size"], row.vocab);
    const auto& hp = j["hyperparameters"];
    EXPECT_EQ(hp["embedding_length"], row.embd);
    EXPECT_EQ(hp["block_count"], row.layers);
    EXPECT_EQ(hp["attention.head_count"], row.heads);
    EXPECT_EQ(hp["attention.head_count_kv"], row.heads_kv);
    EXPECT_EQ(hp["feed_forward_length"], row.ff);
    EXPECT_EQ(hp["context_length"], row.ctx);
    EXPECT_EQ(j["file_size"], row.bytes);
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "SKIPPED: shared models or CLI absent";
}

TEST(InspectCli, RopeBaseAndTensorTypes) {
  const std::string path = kShared + "/reference/models/small-llama-rope500k-q8_0.gguf";
  REQUIRE_FILE(path);
  auto j = inspect_json(path);
  EXPECT_EQ(j["hyperparameters"]["rope.freq_base"], 500000.0);
  EXPECT_EQ(j["hyperparameters"]["rope.dimension_count"], 64);
  EXPECT_EQ(j["file_type"], 7);
  EXPECT_EQ(j["file_type_name"], "MOSTLY_Q8_0");
  EXPECT_EQ(j["tensor_types"]["q8_0"], 30);  // token_embd + output + 4 layers x 7 weights
  EXPECT_EQ(j["tensor_types"]["f32"], 9);    // 4 x 2 norms + output_norm
}

// Every .gguf in the shared data: inspect agrees with the library on the counts.
TEST(InspectCli, EverySharedFile) {
  if (!testing::cli_available()) GTEST_SKIP() << "SKIPPED: CLI not built";
  int checked = 0;
  for (const char* sub : {"/models", "/models/vocab", "/reference/models"}) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(kShared + sub, ec)) {
      if (e.path().extension() != ".gguf") continue;
      const std::string path = e.path().string();
      SCOPED_TRACE(path);
      auto f = gguf::GgufFile::open(path);
      ASSERT_TRUE(f.ok()) << f.status().to_string();
      auto j = inspect_json(path);
      ASSERT_TRUE(j.is_object());
      EXPECT_EQ(j["gguf_version"], f->version());
      EXPECT_EQ(j["architecture"], f->architecture());
      EXPECT_EQ(j["tensor_count"], f->tensors().size());
      uint64_t bytes = 0;
      for (const auto& t : f->tensors()) bytes += t.n_bytes;
      EXPECT_EQ(j["tensor_bytes"], bytes);
      EXPECT_EQ(j["tokenizer"]["vocab_size"], f->get_string_array("tokenizer.ggml.tokens")->size());
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "SKIPPED: no shared .gguf files";
  EXPECT_GE(checked, 10);
}

TEST(InspectCli, VocabOnlyFile) {
  const std::string path = kShared + "/models/vocab/ggml-vocab-gpt-2.gguf";
  REQUIRE_FILE(path);
  auto j = inspect_json(path);
  EXPECT_EQ(j["tensor_count"], 0);
  EXPECT_EQ(j["tensor_bytes"], 0);
  EXPECT_EQ(j["tokenizer"]["model"], "gpt2");
  EXPECT_EQ(j["tokenizer"]["vocab_size"], 50257);
  EXPECT_EQ(j["tokenizer"]["bos_token_id"], 50256);
}

TEST(InspectCli, Version1FileIsRejectedByName) {
  const std::string path = kShared + "/models/legacy/tinyllamas-stories-260k-f32.gguf";
  REQUIRE_FILE(path);
  auto r = run_cli("inspect " + path);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("GGUF version 1 is not supported"));
  EXPECT_TRUE(r.out.empty());
}

TEST(InspectCli, Errors) {
  if (!testing::cli_available()) GTEST_SKIP() << "SKIPPED: CLI not built";
  auto missing = run_cli("inspect /nonexistent/x.gguf");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("/nonexistent/x.gguf"));
  const std::string junk = testing::temp_path("junk.gguf");
  {
    std::ofstream out(junk, std::ios::binary);
    const char bytes[] = {'G', 'G', 'U', 'F', 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0};
    out.write(bytes, sizeof(bytes));
  }
  auto bad = run_cli("inspect " + junk);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("metadata count"));
  std::filesystem::remove(junk);
}

}  // namespace
}  // namespace hearth::cli
