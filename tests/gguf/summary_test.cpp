// summarize() against the model tables in the shared data's PROVENANCE.md and
// reference/README.md (values copied from those tables, checked here).
#include <gtest/gtest.h>

#include <filesystem>

#include "gguf/summary.h"
#include "test_util.h"

namespace hearth::gguf {
namespace {

struct Expected {
  const char* path;  // relative to the shared dir
  const char* arch;
  uint64_t n_layer, n_embd, n_head, n_head_kv;  // 0: key absent
  uint64_t vocab;
  uint64_t n_ff;  // 0: not checked
  uint64_t file_size;
  const char* tokenizer;
  int64_t bos, eos;  // -1: not checked
};

// From reference/README.md "Models" and models/PROVENANCE.md's vocab table.
const Expected kTable[] = {
    {"/models/stories260K.gguf", "llama", 5, 64, 8, 4, 512, 172, 1185376, "llama", 1, 2},
    {"/models/llama-2-tiny-random.gguf", "llama", 1, 8, 2, 2, 32000, 32, 1750560, "llama", 1, 2},
    {"/reference/models/small-llama-f32.gguf", "llama", 4, 256, 8, 4, 512, 768, 13654496, "llama",
     1, 2},
    {"/reference/models/small-llama-q4_k_m.gguf", "llama", 4, 256, 8, 4, 512, 768, 2092032, "llama",
     1, 2},
    {"/reference/models/small-llama-rope500k-q8_0.gguf", "llama", 4, 256, 4, 1, 512, 768, 3504640,
     "llama", 1, 2},
    {"/reference/models/small-qwen2-f32.gguf", "qwen2", 4, 256, 8, 4, 512, 768, 13663200, "llama",
     1, 2},
    {"/models/vocab/ggml-vocab-llama-spm.gguf", "llama", 32, 4096, 32, 32, 32000, 0, 723869,
     "llama", 1, 2},
    {"/models/vocab/ggml-vocab-phi-3.gguf", "phi3", 32, 3072, 32, 32, 32064, 0, 726019, "llama", 1,
     32000},
    {"/models/vocab/ggml-vocab-gpt-2.gguf", "gpt2", 12, 768, 12, 0, 50257, 0, 1766807, "gpt2",
     50256, 50256},
    {"/models/vocab/ggml-vocab-deepseek-llm.gguf", "llama", 30, 4096, 32, 32, 102400, 0, 3970167,
     "gpt2", 100000, 100001},
    {"/models/vocab/ggml-vocab-deepseek-coder.gguf", "llama", 32, 4096, 32, 32, 32256, 0, 1156067,
     "gpt2", 32013, 32014},
    {"/models/vocab/ggml-vocab-mpt.gguf", "mpt", 32, 4096, 32, 0, 50432, 0, 1771393, "gpt2", 0, 0},
    {"/models/vocab/ggml-vocab-refact.gguf", "refact", 32, 2048, 32, 1, 49216, 0, 1720710, "gpt2",
     0, 0},
    {"/models/vocab/ggml-vocab-falcon.gguf", "falcon", 32, 4544, 71, 1, 65024, 0, 2287728, "gpt2",
     11, 11},
    {"/models/vocab/ggml-vocab-starcoder.gguf", "starcoder2", 30, 3072, 24, 2, 49152, 0, 1719346,
     "gpt2", 0, 0},
    {"/models/vocab/ggml-vocab-bert-bge.gguf", "bert", 12, 384, 12, 0, 30522, 0, 627549, "bert", -1,
     -1},
};

std::optional<uint64_t> hp(const ModelSummary& s, const std::string& suffix) {
  for (const auto& [k, v] : s.hyperparameters) {
    if (k == suffix) {
      auto u = v.as_u64();
      if (u.ok()) return *u;
    }
  }
  return std::nullopt;
}

TEST(Summary, MatchesPublishedTables) {
  int checked = 0;
  for (const Expected& e : kTable) {
    const std::string path = testing::shared_dir() + e.path;
    if (!std::filesystem::exists(path)) continue;
    auto f = GgufFile::open(path);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    const ModelSummary s = summarize(*f);
    SCOPED_TRACE(path);
    EXPECT_EQ(s.architecture, e.arch);
    EXPECT_EQ(hp(s, "block_count"), e.n_layer);
    EXPECT_EQ(hp(s, "embedding_length"), e.n_embd);
    EXPECT_EQ(hp(s, "attention.head_count"), e.n_head);
    if (e.n_head_kv == 0) {
      EXPECT_FALSE(hp(s, "attention.head_count_kv").has_value());
    } else {
      EXPECT_EQ(hp(s, "attention.head_count_kv"), e.n_head_kv);
    }
    if (e.n_ff != 0) {
      EXPECT_EQ(hp(s, "feed_forward_length"), e.n_ff);
    }
    EXPECT_EQ(s.vocab_size, e.vocab);
    EXPECT_EQ(s.file_size, e.file_size);
    EXPECT_EQ(s.tokenizer_model, std::string(e.tokenizer));
    if (e.bos >= 0) {
      EXPECT_EQ(s.bos_id, static_cast<uint64_t>(e.bos));
    }
    if (e.eos >= 0) {
      EXPECT_EQ(s.eos_id, static_cast<uint64_t>(e.eos));
    }
    if (std::string(e.path).find("/vocab/") != std::string::npos) {
      EXPECT_EQ(s.tensor_count, 0u);
      EXPECT_EQ(s.tensor_bytes, 0u);
    } else {
      EXPECT_GT(s.tensor_count, 0u);
      EXPECT_LE(s.tensor_bytes, s.file_size);
    }
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "SKIPPED: shared models absent under " << testing::shared_dir();
}

// tokenizer.ggml.pre and the merge count of every vocab file, per PROVENANCE.md's table
// (0 merges: the key is absent).
TEST(Summary, VocabPreTokenizersAndMerges) {
  struct Row {
    const char* file;
    const char* pre;
    uint64_t merges;
  };
  const Row kRows[] = {
      {"llama-spm", "default", 0},
      {"phi-3", "default", 0},
      {"gpt-2", "gpt-2", 50000},
      {"deepseek-llm", "deepseek-llm", 99757},
      {"deepseek-coder", "deepseek-coder", 31757},
      {"falcon", "falcon", 64784},
      {"mpt", "mpt", 50009},
      {"refact", "refact", 48891},
      {"starcoder", "starcoder", 48872},
      {"bert-bge", "bert-bge", 0},
  };
  int checked = 0;
  for (const Row& r : kRows) {
    const std::string path = testing::shared_dir() + "/models/vocab/ggml-vocab-" + r.file + ".gguf";
    if (!std::filesystem::exists(path)) continue;
    SCOPED_TRACE(path);
    auto f = GgufFile::open(path);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_EQ(summarize(*f).tokenizer_pre, std::string(r.pre));
    const Value* merges = f->find("tokenizer.ggml.merges");
    if (r.merges == 0) {
      EXPECT_EQ(merges, nullptr);
    } else {
      ASSERT_NE(merges, nullptr);
      const std::vector<Value>* arr = merges->as_array();
      ASSERT_NE(arr, nullptr);
      EXPECT_EQ(arr->size(), r.merges);
    }
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "SKIPPED: vocab files absent under " << testing::shared_dir();
}

TEST(Summary, FileTypesOfReferenceModels) {
  // general.file_type per reference/README.md.
  const std::pair<const char*, uint32_t> kTypes[] = {
      {"small-llama-f16", 1},  {"small-llama-bf16", 32},   {"small-llama-q8_0", 7},
      {"small-llama-q4_0", 2}, {"small-llama-q4_k_m", 15}, {"small-llama-q6_k", 18},
  };
  int checked = 0;
  for (const auto& [name, ftype] : kTypes) {
    const std::string path = testing::shared_dir() + "/reference/models/" + name + ".gguf";
    if (!std::filesystem::exists(path)) continue;
    auto f = GgufFile::open(path);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    const ModelSummary s = summarize(*f);
    EXPECT_EQ(s.file_type, ftype) << name;
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "SKIPPED: reference models absent";
  EXPECT_STREQ(file_type_name(15), "MOSTLY_Q4_K_M");
  EXPECT_STREQ(file_type_name(999), "unknown");
}

TEST(Summary, CountsTensorsByType) {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.block_count", 3);
  ASSERT_TRUE(w.add_tensor("a", {4}, TensorType::kF32, std::vector<uint8_t>(16)).ok());
  ASSERT_TRUE(w.add_tensor("b", {4}, TensorType::kF32, std::vector<uint8_t>(16)).ok());
  ASSERT_TRUE(w.add_tensor("c", {32}, TensorType::kQ8_0, std::vector<uint8_t>(34)).ok());
  auto bytes = w.serialize();
  ASSERT_TRUE(bytes.ok());
  auto f = GgufFile::parse(*bytes);
  ASSERT_TRUE(f.ok());
  const ModelSummary s = summarize(*f);
  EXPECT_EQ(s.tensor_count, 3u);
  EXPECT_EQ(s.tensor_bytes, 66u);
  EXPECT_EQ(s.tensors_by_type.at("f32"), 2u);
  EXPECT_EQ(s.tensors_by_type.at("q8_0"), 1u);
  EXPECT_EQ(hp(s, "block_count"), 3u);
  EXPECT_FALSE(s.vocab_size.has_value());
}

}  // namespace
}  // namespace hearth::gguf
