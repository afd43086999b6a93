// Payload buffers (common/buffer_pool.h) on the engine's save path: a pack into a
// recycled buffer writes every byte (nothing of the buffer's last row survives), and
// every tier hands a finished save's buffer back, so the worker's next pack takes
// memory already touched instead of faulting in fresh pages.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cache/test_util.h"
#include "common/buffer_pool.h"
#include "engine_warm_cold.h"
#include "runtime/engine_backend.h"

namespace hearth::runtime {
namespace {
using namespace testing;

// small-llama: 4 layers, 4 KV heads of 32, F16 KV: 2 KiB per position, so a row of
// 700 positions (1.4 MB) is large enough for the pool.
constexpr int32_t kPositions = 700;

ModelConfig pack_config(const std::string& path) {
  ModelConfig c = engine_config("m", path, /*n_seq_max=*/1);
  c.n_ctx = 1024;
  return c;
}

std::vector<TokenId> filler(int32_t n, int32_t salt) {
  std::vector<TokenId> t;
  for (int32_t i = 0; i < n; ++i) t.push_back(3 + (i * 37 + salt * 11) % 500);
  return t;
}

TEST(PackBuffer, PackIntoARecycledBufferWritesEveryByte) {
  const std::string path = reference_model("small-llama-q4_0.gguf");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SKIPPED: " << path << " is absent";
  auto backend = engine_factory(pack_config(path))();
  ASSERT_TRUE(backend.ok()) << backend.status().to_string();
  const std::vector<TokenId> tokens = filler(kPositions, 1);
  std::vector<std::vector<float>> logits;
  const StepRow row{0, 0, tokens, true};
  ASSERT_TRUE((*backend)->step({&row, 1}, &logits).ok());
  auto first = (*backend)->kv_pack(0, kPositions);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  const std::vector<uint8_t> reference(first->begin(), first->end());
  ASSERT_GE(reference.size(), BufferPool::kMinPooledBytes);
  // A buffer of exactly the row's size (the best fit of all idle ones), full of junk.
  std::vector<uint8_t> junk(reference.size(), 0xA5);
  const uint8_t* junk_memory = junk.data();
  payload_buffers().give(std::move(junk));
  auto again = (*backend)->kv_pack(0, kPositions);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->data(), junk_memory);  // served from the pool
  EXPECT_TRUE(*again == reference) << "a byte of the recycled buffer was not overwritten";
}

// Two finish saves one after the other: the second pack reuses a buffer a save handed
// back. The RAM tier copies the bytes into a slab of its own rather than keeping the
// buffer; file tiers give it back once written. Each row still restores bit-identically.
TEST(PackBuffer, EveryTierHandsItsSaveBufferBackForTheNextPack) {
  const std::string path = reference_model("small-llama-q4_0.gguf");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SKIPPED: " << path << " is absent";
  for (Tier tier : {Tier::kRam, Tier::kRamFile, Tier::kDisk}) {
    SCOPED_TRACE(tier_name(tier));
    cache::testing::TempDir dir;
    RuntimeOptions o;
    if (tier == Tier::kRamFile) o.cache.ram_file_dir = dir.sub("shm");
    if (tier == Tier::kDisk) o.cache.disk_dir = dir.sub("disk");
    auto rt = make_runtime(std::move(o));
    ModelConfig c = pack_config(path);
    c.tier = tier;
    c.policy.cold_min_tokens = 1 << 30;  // finish rows only: one pack per request
    ASSERT_TRUE(rt->load_model(c).ok());
    RequestParams p = greedy(1);
    auto a = rt->complete_tokens("m", filler(kPositions, 2), p);
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    ASSERT_TRUE(a->finish_key);
    ASSERT_TRUE(rt->cache_flush());
    const uint64_t reused = payload_buffers().reused();
    auto b = rt->complete_tokens("m", filler(kPositions, 3), p);
    ASSERT_TRUE(b.ok());
    ASSERT_TRUE(rt->cache_flush());
    EXPECT_GT(payload_buffers().reused(), reused);
    EXPECT_EQ(rt->cache_counters()["runtime_save_packs"], 2u);
    EXPECT_GT(rt->cache_counters()["runtime_save_pack_ns"], 0u);
    // The first row, whose buffer went on to hold the second: restored intact.
    RequestParams pk = p;
    pk.parent_key = a->finish_key;
    auto hit = rt->complete_tokens("m", filler(kPositions, 2), pk);
    ASSERT_TRUE(hit.ok());
    EXPECT_EQ(hit->cache_hit_kind, CacheHitKind::kExact);
    expect_same_output(*hit, *a);
    rt->shutdown();
  }
}

}  // namespace
}  // namespace hearth::runtime
