// The context rule (hearth/engine/context.h): the pure choice, and what a model loaded
// through the runtime gets from its context / kv_budget_bytes.
#include <gmock/gmock.h>

#include <filesystem>

#include "hearth/engine/context.h"
#include "stub_fixture.h"

namespace hearth::runtime {
namespace {
using namespace testing;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr uint64_t kMiB = 1ull << 20;

ContextRequest request(int32_t own, int32_t requested, uint64_t per_pos, int32_t n_seq,
                       uint64_t budget) {
  return {.n_ctx_train = own,
          .requested = requested,
          .bytes_per_position = per_pos,
          .n_seq = n_seq,
          .budget_bytes = budget};
}

TEST(ContextRule, TheModelsOwnWhenItFits) {
  // 32k positions x 2 sequences x 16 KiB = 1 GiB, within the default 4 GiB.
  auto c = choose_context(request(32768, 0, 16 * 1024, 2, 0));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->n_ctx, 32768);
  EXPECT_FALSE(c->capped);
  EXPECT_EQ(c->budget_bytes, kDefaultKvBudgetBytes);
  EXPECT_EQ(c->kv_bytes, 32768ull * 2 * 16 * 1024);
  // Exactly the budget still fits.
  auto exact = choose_context(request(32768, 0, 16 * 1024, 2, 1ull << 30));
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->n_ctx, 32768);
}

TEST(ContextRule, TheLargestMultipleOf256ThatFitsOtherwise) {
  // Qwen3-0.6B: 112 KiB per position, 40960 positions, 5 sequences, 4 GiB default:
  // 4 GiB / 560 KiB = 7489.8 positions, rounded down to 7424.
  auto c = choose_context(request(40960, 0, 112 * 1024, 5, 0));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->n_ctx, 7424);
  EXPECT_TRUE(c->capped);
  EXPECT_LE(c->kv_bytes, kDefaultKvBudgetBytes);
  EXPECT_GT(c->kv_bytes + 256ull * 5 * 112 * 1024, kDefaultKvBudgetBytes);
  // An explicit budget: 100 MiB / (2 x 1 KiB) = 51200 -> the model's own 40960.
  auto roomy = choose_context(request(40960, 0, 1024, 2, 100 * kMiB));
  ASSERT_TRUE(roomy.ok());
  EXPECT_EQ(roomy->n_ctx, 40960);
  EXPECT_EQ(roomy->budget_bytes, 100 * kMiB);
}

TEST(ContextRule, AnExplicitContextIsKeptOrRefusedNamingBoth) {
  auto c = choose_context(request(2048, 8192, 1024, 2, 16 * kMiB));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->n_ctx, 8192);  // above the model's own: the caller's choice
  EXPECT_EQ(c->kv_bytes, 16 * kMiB);
  auto over = choose_context(request(2048, 8193, 1024, 2, 16 * kMiB));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(over.status().message(),
              AllOf(HasSubstr("context 8193"), HasSubstr("kv_budget 16 MiB"), HasSubstr("2 seq")));
  auto over_default = choose_context(request(40960, 40960, 112 * 1024, 5, 0));
  ASSERT_FALSE(over_default.ok());
  EXPECT_THAT(over_default.status().message(),
              AllOf(HasSubstr("context 40960"), HasSubstr("kv_budget 4 GiB (the default)")));
}

TEST(ContextRule, ABudgetTooSmallForAnyUsefulContextIsAnError) {
  // 255 positions fit; the floor is 256.
  auto c = choose_context(request(2048, 0, 1024, 1, 255 * 1024));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), AllOf(HasSubstr("kv_budget"), HasSubstr("255 positions")));
  // A model whose own context is shorter than 256 needs only that.
  auto small = choose_context(request(100, 0, 1024, 1, 100 * 1024));
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->n_ctx, 100);
  EXPECT_FALSE(choose_context(request(0, 0, 1024, 1, 0)).ok());
  EXPECT_FALSE(choose_context(request(2048, -1, 1024, 1, 0)).ok());
  EXPECT_FALSE(choose_context(request(2048, 0, 0, 1, 0)).ok());
}

// Sliding-window layers hold a ring of a fixed size (Gemma-3-1B's shape: 4 global layers
// of 1 KiB per position, 22 sliding ones in a ring of 1024), so the same budget holds a
// longer context than if every layer grew with it.
TEST(ContextRule, SlidingWindowRingsAreCountedAtTheirSize) {
  ContextRequest r = request(32768, 0, 4 * 1024, 2, 1024 * kMiB);
  r.ring_bytes_per_position = 22 * 1024;
  r.ring_positions = 1024;
  auto own = choose_context(r);
  ASSERT_TRUE(own.ok()) << own.status().to_string();
  EXPECT_EQ(own->n_ctx, 32768);
  EXPECT_EQ(own->kv_bytes, 2 * (128 + 22) * kMiB);
  // Every layer growing with the context (26 KiB per position) would fit 19968.
  auto full = choose_context(request(32768, 0, 26 * 1024, 2, 1024 * kMiB));
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->n_ctx, 19968);
  // Capped: (128 MiB - 22 MiB) / 4 KiB = 27136 positions per sequence.
  r.budget_bytes = 256 * kMiB;
  auto capped = choose_context(r);
  ASSERT_TRUE(capped.ok());
  EXPECT_TRUE(capped->capped);
  EXPECT_EQ(capped->n_ctx, 27136);
  EXPECT_LE(capped->kv_bytes, r.budget_bytes);
  // Below the ring's size the ring is the context: 512 positions of 26 KiB.
  r.requested = 512;
  EXPECT_EQ(context_kv_bytes(r, 512), 2 * 512 * 26 * 1024ull);
  auto over = choose_context(request(32768, 40000, 4 * 1024, 2, 256 * kMiB));
  ASSERT_FALSE(over.ok());
  r.requested = 40000;
  auto refused = choose_context(r);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("x 1024 sliding-window positions"));
}

TEST(ContextRule, FormatBytes) {
  EXPECT_EQ(format_bytes(300), "300 B");
  EXPECT_EQ(format_bytes(112 * 1024), "112 KiB");
  EXPECT_EQ(format_bytes(4ull << 30), "4 GiB");
  EXPECT_EQ(format_bytes(1536ull << 20), "1.50 GiB");
}

// Through the runtime on a real model (small-qwen3-f16: 2048 positions of 1 KiB of KV,
// n_seq_max 1 + the engine's embedding sequence = 2 KiB per position).
class ContextBudgetLoad : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(path_)) GTEST_SKIP() << "SKIPPED: " << path_ << " is absent";
  }
  ModelConfig config(int32_t n_ctx, uint64_t budget) const {
    ModelConfig c;
    c.id = "m";
    c.model_path = path_;
    c.n_ctx = n_ctx;
    c.kv_budget_bytes = budget;
    c.n_seq_max = 1;
    c.n_batch = 64;
    c.n_threads = 1;
    return c;
  }
  const std::string path_ =
      std::string(HEARTH_SHARED_DIR) + "/reference/architectures/models/small-qwen3-f16.gguf";
};

TEST_F(ContextBudgetLoad, DefaultIsTheModelsOwnAndABudgetCapsIt) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(config(0, 0)).ok());
  EXPECT_EQ(rt->model_info("m")->context_size, 2048);
  ASSERT_TRUE(rt->unload_model("m").ok());
  ASSERT_TRUE(rt->load_model(config(0, 1 * kMiB)).ok());  // 512 positions of 2 KiB
  EXPECT_EQ(rt->model_info("m")->context_size, 512);
  // The capped context is enforced: a longer prompt is refused, not truncated.
  auto r = rt->complete_tokens("m", std::vector<TokenId>(600, 300), greedy(1));
  EXPECT_EQ(r.status().code(), ErrorCode::kOutOfRange);
}

TEST_F(ContextBudgetLoad, AnExplicitContextOverTheBudgetFailsTheLoad) {
  auto rt = make_runtime();
  auto id = rt->load_model(config(1024, 1 * kMiB));
  ASSERT_FALSE(id.ok());
  EXPECT_THAT(id.status().message(),
              AllOf(HasSubstr("context 1024"), HasSubstr("kv_budget 1 MiB")));
  ASSERT_TRUE(rt->load_model(config(512, 1 * kMiB)).ok());
  EXPECT_EQ(rt->model_info("m")->context_size, 512);
}

TEST(ContextBudgetStub, ACustomBackendRefusesABudgetItWouldNotSee) {
  auto rt = make_runtime();
  auto cfg = stub_config("s", 1);
  cfg.kv_budget_bytes = kMiB;
  auto id = rt->load_model(cfg);
  ASSERT_FALSE(id.ok());
  EXPECT_THAT(id.status().message(), HasSubstr("kv_budget_bytes"));
}

}  // namespace
}  // namespace hearth::runtime
