// The reader against every real GGUF in the shared test data.
#include <gtest/gtest.h>

#include "hearth/gguf/gguf.h"
#include "test_util.h"

namespace hearth::gguf {
namespace {

using testing::shared_dir;
using testing::shared_gguf_files;

TEST(SharedModels, EveryFileLoads) {
  const auto files = shared_gguf_files();
  if (files.empty()) GTEST_SKIP() << "SKIPPED: no .gguf files under " << shared_dir();
  for (const auto& path : files) {
    auto f = GgufFile::open(path);
    ASSERT_TRUE(f.ok()) << path << ": " << f.status().to_string();
    EXPECT_GE(f->version(), 2u) << path;
    EXPECT_FALSE(f->architecture().empty()) << path;
    for (const auto& t : f->tensors()) {
      ASSERT_NE(t.data, nullptr) << path << " " << t.name;
      EXPECT_LE(t.data + t.n_bytes, f->bytes().data() + f->file_size());
    }
  }
}

TEST(SharedModels, LegacyV1IsRejectedByName) {
  const std::string path = shared_dir() + "/models/legacy/tinyllamas-stories-260k-f32.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SKIPPED: " << path << " absent";
  auto f = GgufFile::open(path);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(f.status().message().find("GGUF version 1 is not supported"), std::string::npos)
      << f.status().message();
}

TEST(SharedModels, Stories260KShape) {
  const std::string path = shared_dir() + "/models/stories260K.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SKIPPED: " << path << " absent";
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->architecture(), "llama");
  EXPECT_EQ(f->tensors().size(), 48u);
  EXPECT_EQ(*f->get_u32("llama.block_count"), 5u);
  EXPECT_EQ(*f->get_u32("llama.embedding_length"), 64u);
  EXPECT_EQ(*f->get_u32("llama.feed_forward_length"), 172u);
  EXPECT_EQ(*f->get_u32("llama.attention.head_count"), 8u);
  EXPECT_EQ(*f->get_u32("llama.attention.head_count_kv"), 4u);
  auto tokens = f->get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 512u);
  EXPECT_EQ((*tokens)[0], "<unk>");
  EXPECT_EQ((*tokens)[3], "<0x00>");
  EXPECT_EQ(f->get_f32_array("tokenizer.ggml.scores")->size(), 512u);
  EXPECT_EQ(f->get_i32_array("tokenizer.ggml.token_type")->size(), 512u);
  const TensorInfo* emb = f->tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->dims, (std::vector<uint64_t>{64, 512}));
  EXPECT_EQ(emb->type, TensorType::kF32);
  EXPECT_EQ(emb->n_bytes, 64u * 512 * 4);
  EXPECT_EQ(f->get_u32("general.alignment").status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(f->alignment(), 32u);
}

TEST(SharedModels, LlamaTinyRandomMixedTypes) {
  const std::string path = shared_dir() + "/models/llama-2-tiny-random.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SKIPPED: " << path << " absent";
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(*f->get_string("general.name"), "LLaMA v2");
  EXPECT_EQ(*f->get_u32("general.file_type"), 1u);
  int f16 = 0, f32 = 0;
  for (const auto& t : f->tensors()) {
    f16 += t.type == TensorType::kF16;
    f32 += t.type == TensorType::kF32;
  }
  EXPECT_EQ(f16, 9);
  EXPECT_EQ(f32, 3);
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens")->size(), 32000u);
}

TEST(SharedModels, QuantizedSmallLlamaTypes) {
  const std::string path = shared_dir() + "/reference/models/small-llama-q4_k_m.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SKIPPED: " << path << " absent";
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->tensor("output.weight")->type, TensorType::kQ6_K);
  EXPECT_EQ(f->tensor("blk.0.attn_v.weight")->type, TensorType::kQ4_K);
  EXPECT_EQ(f->tensor("blk.2.attn_v.weight")->type, TensorType::kQ6_K);
  EXPECT_EQ(f->tensor("blk.3.ffn_down.weight")->type, TensorType::kQ6_K);
  EXPECT_EQ(f->tensor("blk.1.ffn_down.weight")->type, TensorType::kQ4_K);
  EXPECT_EQ(*f->get_u32("general.file_type"), 15u);
  EXPECT_EQ(*f->get_u32("general.alignment"), 32u);
}

}  // namespace
}  // namespace hearth::gguf
