// Delta rows through the runtime on the real engine (stories260K): a 20-turn chat replay,
// each turn restored from the cache (no slot affinity), gives the same tokens and logits
// with delta rows on and off, and stores fewer bytes with them on.
#include <filesystem>

#include "cache/test_util.h"
#include "stub_fixture.h"

namespace hearth::runtime {
namespace {
using namespace testing;

const std::string kModel = std::string(HEARTH_SHARED_DIR) + "/models/stories260K.gguf";

struct Replay {
  std::vector<CompletionResult> turns;
  uint64_t stored_bytes = 0;  // the tier's rows, summed
  std::map<std::string, uint64_t> counters;
  uint64_t counter(const std::string& name) const {
    auto it = counters.find(name);  // a runtime counter exists once counted
    return it == counters.end() ? 0 : it->second;
  }
};

Replay replay(Tier tier, uint32_t max_delta_depth) {
  cache::testing::TempDir dir;
  RuntimeOptions o;
  o.cache.disk_dir = dir.sub("disk");
  o.cache.max_delta_depth = max_delta_depth;
  auto rt = make_runtime(std::move(o));
  ModelConfig cfg = engine_config("m", kModel, /*n_seq_max=*/1);
  cfg.tier = tier;
  cfg.policy = small_policy(8, 8);
  EXPECT_TRUE(rt->load_model(cfg).ok());
  const char* lines[] = {" Lily saw a cat.", " The dog ran.", " They played.", " It was fun.",
                         " Tom came home."};
  Replay out;
  std::vector<TokenId> context = *rt->tokenize("m", "Once upon a time, Lily had a ball.", true);
  for (int turn = 0; turn < 20; ++turn) {
    auto user = *rt->tokenize("m", lines[turn % 5], false);
    context.insert(context.end(), user.begin(), user.end());
    auto r = rt->complete_tokens("m", context, greedy(6));
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    if (!r.ok()) break;
    context = r->context_tokens;
    out.turns.push_back(std::move(r).value());
    EXPECT_TRUE(rt->cache_flush());
  }
  for (const CacheRowSummary& row : rt->cache_rows()) {
    if (row.tier == tier && !row.in_flight) out.stored_bytes += row.size_bytes;
  }
  out.counters = rt->cache_counters();
  return out;
}

class DeltaReplay : public ::testing::TestWithParam<Tier> {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kModel)) GTEST_SKIP() << "SKIPPED: " << kModel << " is absent";
  }
};

TEST_P(DeltaReplay, TwentyTurnsSameOutputFewerBytes) {
  const Replay full = replay(GetParam(), 0);
  const Replay delta = replay(GetParam(), 8);
  ASSERT_EQ(full.turns.size(), 20u);
  ASSERT_EQ(delta.turns.size(), 20u);
  for (size_t i = 0; i < 20; ++i) {
    SCOPED_TRACE("turn " + std::to_string(i));
    expect_same_output(delta.turns[i], full.turns[i]);
    EXPECT_EQ(delta.turns[i].cache_hit_kind, full.turns[i].cache_hit_kind);
  }
  // The turns after the first restored from rows, and with deltas on those rows were
  // chains: every restore went through one.
  EXPECT_NE(delta.turns[19].cache_hit_kind, CacheHitKind::kCold);
  EXPECT_GT(delta.counter("delta_saves"), 10u);
  EXPECT_EQ(full.counter("delta_saves"), 0u);
  EXPECT_EQ(delta.counter("delta_broken_chains"), 0u);
  EXPECT_EQ(delta.counter("runtime_restore_failures"), 0u);
  // Fewer bytes stored for the same conversation (the bench measures the ratio).
  EXPECT_LT(delta.stored_bytes * 2, full.stored_bytes)
      << "delta " << delta.stored_bytes << " full " << full.stored_bytes;
}

INSTANTIATE_TEST_SUITE_P(RamAndDisk, DeltaReplay, ::testing::Values(Tier::kRam, Tier::kDisk),
                         [](const auto& info) { return std::string(tier_name(info.param)); });

}  // namespace
}  // namespace hearth::runtime
