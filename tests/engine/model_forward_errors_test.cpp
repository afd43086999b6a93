// forward() and the sequence API reject bad input with errors that name the problem,
// and leave the engine unchanged when they do.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "hearth/engine/engine.h"

namespace hearth {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<Engine> stories(int32_t n_ctx) {
  const fs::path p = fs::path(HEARTH_SHARED_DIR) / "models" / "stories260K.gguf";
  std::error_code ec;
  if (!fs::exists(p, ec)) return nullptr;
  EngineOptions o;
  o.n_threads = 1;
  o.n_ctx = n_ctx;
  o.n_seq_max = 2;
  auto e = Engine::load(p.string(), o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(e).value() : nullptr;
}

#define SKIP_WITHOUT(e) \
  if (!(e)) GTEST_SKIP() << "SKIPPED: stories260K.gguf not found under " HEARTH_SHARED_DIR

TEST(ForwardErrorsTest, BadTokenId) {
  auto e = stories(64);
  SKIP_WITHOUT(e);
  std::vector<float> logits;
  std::vector<BatchToken> b = {{1, 0, 0, false}, {512, 1, 0, true}};
  Status s = e->forward(b, logits);
  EXPECT_EQ(s.code(), ErrorCode::kOutOfRange);
  EXPECT_NE(s.message().find("token id 512"), std::string::npos) << s.to_string();
  EXPECT_EQ(e->seq_len(0), 0) << "a failed batch must not append anything";
  b = {{-3, 0, 0, true}};
  EXPECT_FALSE(e->forward(b, logits).ok());
}

TEST(ForwardErrorsTest, PositionsMustBeContiguousAndSeqKnown) {
  auto e = stories(64);
  SKIP_WITHOUT(e);
  std::vector<float> logits;
  std::vector<BatchToken> b = {{1, 1, 0, true}};
  Status s = e->forward(b, logits);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("pos 1"), std::string::npos) << s.to_string();
  b = {{1, 0, 2, true}};
  s = e->forward(b, logits);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("seq 2"), std::string::npos) << s.to_string();
  b = {{1, 0, 0, false}, {5, 0, 0, true}};  // the same position twice
  EXPECT_FALSE(e->forward(b, logits).ok());
  EXPECT_FALSE(e->forward({}, logits).ok());
  EXPECT_EQ(e->seq_len(0), 0);
  EXPECT_EQ(e->seq_len(7), -1);
}

TEST(ForwardErrorsTest, ContextOverflow) {
  auto e = stories(8);
  SKIP_WITHOUT(e);
  std::vector<float> logits;
  std::vector<BatchToken> b;
  for (int32_t i = 0; i < 8; ++i) b.push_back({1 + i, i, 0, i == 7});
  ASSERT_TRUE(e->forward(b, logits).ok());
  ASSERT_EQ(logits.size(), 512u);
  b = {{9, 8, 0, true}};
  Status s = e->forward(b, logits);
  EXPECT_EQ(s.code(), ErrorCode::kOutOfRange);
  EXPECT_NE(s.message().find("context overflow"), std::string::npos) << s.to_string();
  EXPECT_EQ(e->seq_len(0), 8);
}

TEST(ForwardErrorsTest, KvTransferAndTruncateErrors) {
  auto e = stories(64);
  SKIP_WITHOUT(e);
  std::vector<float> logits;
  std::vector<BatchToken> b = {{1, 0, 0, false}, {2, 1, 0, true}};
  ASSERT_TRUE(e->forward(b, logits).ok());
  std::vector<uint8_t> kv;
  EXPECT_FALSE(e->kv_pack(0, 3, kv).ok());  // only 2 positions
  EXPECT_FALSE(e->kv_pack(5, 1, kv).ok());
  ASSERT_TRUE(e->kv_pack(0, 2, kv).ok());
  EXPECT_FALSE(e->kv_unpack(1, std::span<const uint8_t>(kv.data(), kv.size() - 1), 2).ok());
  EXPECT_EQ(e->seq_len(1), 0);
  EXPECT_FALSE(e->seq_truncate(0, 3).ok());
  EXPECT_FALSE(e->seq_truncate(0, -1).ok());
  EXPECT_TRUE(e->seq_truncate(0, 1).ok());
  EXPECT_EQ(e->seq_len(0), 1);
  EXPECT_TRUE(e->seq_clear(0).ok());
  EXPECT_EQ(e->seq_len(0), 0);
  EXPECT_FALSE(e->seq_clear(-1).ok());
}

TEST(EmbedTest, UnitNormDeterministicAndLeavesSequencesAlone) {
  auto e = stories(64);
  SKIP_WITHOUT(e);
  std::vector<float> logits;
  std::vector<BatchToken> b = {{1, 0, 0, true}};
  ASSERT_TRUE(e->forward(b, logits).ok());
  const std::vector<int32_t> toks = {1, 403, 407, 261, 378};
  auto v1 = e->embed(toks);
  ASSERT_TRUE(v1.ok()) << v1.status().to_string();
  ASSERT_EQ(v1->size(), 64u);
  double n = 0;
  for (float f : *v1) n += static_cast<double>(f) * f;
  EXPECT_NEAR(std::sqrt(n), 1.0, 1e-5);
  auto v2 = e->embed(toks);
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(std::memcmp(v1->data(), v2->data(), 64 * sizeof(float)), 0);
  EXPECT_EQ(e->seq_len(0), 1);
  EXPECT_FALSE(e->embed(std::vector<int32_t>{}).ok());
  EXPECT_FALSE(e->embed(std::vector<int32_t>{1, 9999}).ok());
}

}  // namespace
}  // namespace hearth
