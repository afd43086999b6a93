// The product's promise under a damaged cache: a restore from a row file with any
// byte flipped, overwritten or cut off gives exactly the cold run's output (the row
// is then a miss, counted as corrupt) or, when the damage hit a field no restore
// reads, a hit that is still bit-identical. Never different output. Random offsets of
// a real row (stories260K: tokens, stored logits, KV payload); every offset of a small
// row is covered in tests/cache/row_damage_test.cpp.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include <unistd.h>

#include "cache/kvc.h"
#include "stub_fixture.h"
#include "testing/file_bytes.h"

namespace hearth::runtime {
namespace {
using namespace testing;
namespace fs = std::filesystem;

const std::string kModel = std::string(HEARTH_SHARED_DIR) + "/models/stories260K.gguf";

using hearth::testing::read_file_bytes;
using hearth::testing::write_file_bytes;

uint64_t u64_at(const std::vector<uint8_t>& b, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | b[at + static_cast<size_t>(i)];
  return v;
}

ModelConfig config(bool caching) {
  ModelConfig c;
  c.id = "m";
  c.model_path = kModel;
  c.n_ctx = 512;
  c.n_seq_max = 1;
  c.n_batch = 64;
  c.n_threads = 1;
  c.slot_affinity = false;  // every turn restores from the cache, never resident cells
  c.tier = Tier::kDisk;
  c.policy = small_policy(1 << 20, 32);  // only the finish row under test is saved...
  c.policy.min_tokens = 8;               // ...(cold saves stay off: no prefix to fall back on)
  if (!caching) c.policy.min_tokens = 1 << 30;
  return c;
}

std::unique_ptr<Runtime> open_runtime(const fs::path& dir, bool caching = true) {
  RuntimeOptions o;
  o.cache.disk_dir = dir.string();
  auto rt = Runtime::create(o);
  EXPECT_TRUE(rt.ok()) << rt.status().to_string();
  if (!rt.ok()) return nullptr;
  auto loaded = (*rt)->load_model(config(caching));
  EXPECT_TRUE(loaded.ok()) << loaded.status().to_string();
  return std::move(rt).value();
}

TEST(RowDamage, DamagedRowGivesTheColdOutputOrAMissNeverOtherOutput) {
  if (!fs::exists(kModel)) GTEST_SKIP() << "SKIPPED: " << kModel << " is absent";
  const fs::path dir = fs::temp_directory_path() / ("hearth-rt-damage-" + std::to_string(getpid()));
  fs::remove_all(dir);
  const RequestParams p = greedy(8);

  std::vector<TokenId> prompt2;
  std::string key;
  {
    auto rt = open_runtime(dir);
    ASSERT_TRUE(rt);
    auto t1 = rt->complete("m", "Once upon a time, there was a little girl named Lily.", p);
    ASSERT_TRUE(t1.ok()) << t1.status().to_string();
    ASSERT_TRUE(t1->finish_key);
    key = *t1->finish_key;
    ASSERT_TRUE(rt->cache_flush());
    // The row's own tokens: an exact hit on them restores the KV and samples the first
    // token from the stored logits, so both are under test.
    prompt2 = t1->context_tokens;
    prompt2.resize(static_cast<size_t>(t1->committed_tokens));
  }
  CompletionResult reference;
  {
    auto cold_rt = open_runtime(dir / "cold", /*caching=*/false);
    ASSERT_TRUE(cold_rt);
    auto r = cold_rt->complete_tokens("m", prompt2, p);
    ASSERT_TRUE(r.ok());
    reference = std::move(r).value();
  }
  const fs::path row = dir / (key + ".kvc");
  const std::vector<uint8_t> original = read_file_bytes(row);
  ASSERT_GT(original.size(), 72u);
  const size_t payload_offset = static_cast<size_t>(u64_at(original, 48));
  ASSERT_LT(payload_offset, original.size());

  // Every offset of the fixed header and trailer, random ones of the prompt, tokens and
  // logits, and of the KV payload, then cuts.
  std::mt19937 rng(20261127);
  std::vector<std::pair<std::string, std::vector<uint8_t>>> cases;
  auto flip_at = [&](size_t at) {
    auto d = original;
    d[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
    cases.push_back({"bit flip at " + std::to_string(at), std::move(d)});
  };
  for (size_t at = 0; at < 72; ++at) flip_at(at);
  for (int i = 0; i < 60; ++i) flip_at(72 + rng() % (payload_offset - 72));
  for (int i = 0; i < 40; ++i) flip_at(payload_offset + rng() % (original.size() - payload_offset));
  for (int i = 0; i < 20; ++i) {
    const size_t at = rng() % (original.size() - 4);
    auto d = original;
    for (size_t k = 0; k < 4; ++k) d[at + k] = 0x7F;
    cases.push_back({"0x7f x4 at " + std::to_string(at), std::move(d)});
  }
  // The attack that once changed the output: one stored logit raised to 1e30, which
  // makes that token the next pick of an exact hit (no forward pass recomputes it).
  auto info = cache::kvc_parse_meta(std::span(original).first(payload_offset), original.size());
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  const cache::KvcTlv* logits = info->find_tlv(cache::kTagLogits);
  ASSERT_NE(logits, nullptr);
  const uint32_t logits_len = static_cast<uint32_t>(logits->value.size());
  const uint8_t tlv_head[5] = {cache::kTagLogits, uint8_t(logits_len), uint8_t(logits_len >> 8),
                               uint8_t(logits_len >> 16), uint8_t(logits_len >> 24)};
  const auto head_at = std::search(original.begin(), original.begin() + payload_offset,
                                   std::begin(tlv_head), std::end(tlv_head));
  ASSERT_NE(head_at, original.begin() + payload_offset);
  const size_t logits_at = static_cast<size_t>(head_at - original.begin()) + 5;
  for (size_t token : {size_t{3}, size_t{100}, size_t{logits_len / 4 - 1}}) {
    auto d = original;
    const float huge = 1e30f;
    std::memcpy(d.data() + logits_at + 4 * token, &huge, 4);
    cases.push_back({"logit of token " + std::to_string(token) + " set to 1e30", std::move(d)});
  }
  for (size_t cut : {size_t{0}, size_t{47}, size_t{72}, payload_offset - 1, payload_offset,
                     original.size() - 1}) {
    cases.push_back(
        {"cut to " + std::to_string(cut),
         std::vector<uint8_t>(original.begin(), original.begin() + static_cast<ptrdiff_t>(cut))});
  }

  RequestParams pk = p;
  pk.parent_key = key;
  std::unique_ptr<Runtime> rt;
  uint64_t misses = 0;
  for (const auto& [what, damaged] : cases) {
    SCOPED_TRACE(what);
    if (!rt) {  // a fresh start scans the directory: the damage is seen at scan time too
      write_file_bytes(row, original);
      rt = open_runtime(dir);
      ASSERT_TRUE(rt);
      auto clean = rt->complete_tokens("m", prompt2, pk);
      ASSERT_TRUE(clean.ok());
      ASSERT_EQ(clean->cache_hit_kind, CacheHitKind::kExact) << "the undamaged row must hit";
      expect_same_output(*clean, reference);
    }
    write_file_bytes(row, damaged);
    const uint64_t corrupt_before = rt->cache_counters()["corrupt_files"];
    auto r = rt->complete_tokens("m", prompt2, pk);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    expect_same_output(*r, reference);
    if (r->cache_hit_kind != CacheHitKind::kExact) {
      // Not restored from the damaged row: it must have been refused and counted.
      EXPECT_GT(rt->cache_counters()["corrupt_files"], corrupt_before);
      ++misses;
      rt.reset();  // the row was dropped: restart on a repaired file
    }
  }
  // Only the in-place fields (hit count, last use) may be damaged without a miss.
  EXPECT_GE(misses, cases.size() - 20) << "of " << cases.size() << " damaged rows";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace hearth::runtime
