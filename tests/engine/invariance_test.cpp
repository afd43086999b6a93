// Batch invariance: the logits and KV bytes of a position are bit-identical whatever
// the batching (one batch, chunks of 1/7/64, internal n_batch splits), the thread
// count (1, 2), and whatever other sequences share the batch. Also: kv_pack/kv_unpack
// into another sequence continues bit-identically.
//
// The full matrix (chunk sizes 1, 7, 64, 300, each at 1 and 2 threads and each alone and
// with three other sequences in the batch, plus an internal n_batch split) runs on every
// small-llama reference model (13 types, tied, rope500k), both small-qwen2 files, stories260K,
// llama-2-tiny-random, every model of the architecture set (reference/architectures/) and a
// gen-model `small` model in every gen-model type (made once in build/test-models/). One cold
// baseline per model (one batch, one thread, alone); every other configuration is compared against
// it with memcmp.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "gen_model_test_util.h"
#include "hearth/engine/engine.h"
#include "test_tokens.h"

namespace hearth {
namespace {

namespace fs = std::filesystem;

constexpr int32_t kPromptLen = 300;

std::string model_path(const std::string& file) {
  const fs::path ref = fs::path(HEARTH_SHARED_DIR) / "reference";
  for (const fs::path& p : {ref / "models" / file, ref / "architectures" / "models" / file,
                            fs::path(HEARTH_SHARED_DIR) / "models" / file}) {
    std::error_code ec;
    if (fs::exists(p, ec)) return p.string();
  }
  return "";
}

std::vector<int32_t> random_tokens(int32_t n, int32_t n_vocab, uint32_t seed) {
  return testing::lcg_tokens(n, n_vocab, seed);
}

struct RunResult {
  std::vector<float> logits;  // every position of seq 0, in order
  std::vector<uint8_t> kv;    // kv_pack of seq 0
};

std::unique_ptr<Engine> load(const std::string& path, int threads, int32_t n_batch = 512,
                             KvType kv_type = KvType::kF16) {
  EngineOptions o;
  o.kv_type = kv_type;
  o.n_threads = threads;
  o.n_ctx = 512;
  o.n_seq_max = 4;
  o.n_batch = n_batch;
  auto e = Engine::load(path, o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(e).value() : nullptr;
}

// Feeds `prompt` to seq 0 in chunks of `chunk`; when `others` is set, seqs 1..3 get
// their own prompts interleaved into the same batches.
RunResult run(Engine& engine, const std::vector<int32_t>& prompt, size_t chunk, bool others) {
  RunResult r;
  const int32_t V = engine.info().n_vocab;
  for (int32_t s = 0; s < 4; ++s) EXPECT_TRUE(engine.seq_clear(s).ok());
  std::vector<std::vector<int32_t>> other(4);
  for (int32_t s = 1; s < 4; ++s) other[s] = random_tokens(kPromptLen, V, 100u + s);
  std::vector<int32_t> other_len(4, 0);
  std::vector<BatchToken> batch;
  std::vector<float> logits;
  for (size_t b = 0; b < prompt.size(); b += chunk) {
    batch.clear();
    const size_t e = std::min(prompt.size(), b + chunk);
    for (size_t i = b; i < e; ++i) {
      batch.push_back({prompt[i], static_cast<int32_t>(i), 0, true});
      if (others && i % 3 == 0) {  // neighbours on every third position keep it cheap
        for (int32_t s = 1; s < 4; ++s) {
          const int32_t p = other_len[s]++;
          batch.push_back({other[s][p], p, s, (p % 2) == 0});
        }
      }
    }
    Status st = engine.forward(batch, logits);
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (!st.ok()) return r;
    // Pick seq 0's rows out of the batch's logits rows.
    size_t row = 0;
    for (const BatchToken& t : batch) {
      if (!t.logits) continue;
      if (t.seq == 0) {
        r.logits.insert(r.logits.end(), logits.begin() + row * V, logits.begin() + (row + 1) * V);
      }
      ++row;
    }
  }
  EXPECT_TRUE(engine.kv_pack(0, static_cast<int32_t>(prompt.size()), r.kv).ok());
  return r;
}

void expect_same(const RunResult& a, const RunResult& b, const std::string& what) {
  ASSERT_EQ(a.logits.size(), b.logits.size()) << what;
  ASSERT_EQ(a.kv.size(), b.kv.size()) << what;
  EXPECT_EQ(std::memcmp(a.logits.data(), b.logits.data(), a.logits.size() * sizeof(float)), 0)
      << what << ": logits differ";
  EXPECT_EQ(std::memcmp(a.kv.data(), b.kv.data(), a.kv.size()), 0) << what << ": KV differs";
}

struct Config {
  size_t chunk;
  int threads;
  bool others;
};

// The full product the engine issue names: chunk sizes 1, 7, 64 and the whole prompt,
// 1 and 2 threads, alone and with three other sequences in the same batches.
std::vector<Config> full_matrix() {
  std::vector<Config> out;
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{64}, static_cast<size_t>(kPromptLen)}) {
    for (int threads : {1, 2}) {
      for (bool others : {false, true}) out.push_back({chunk, threads, others});
    }
  }
  return out;
}

void check_full_matrix(const std::string& path, KvType kv_type = KvType::kF16) {
  auto e1 = load(path, 1, 512, kv_type);
  auto e2 = load(path, 2, 512, kv_type);
  ASSERT_TRUE(e1 && e2);
  const auto prompt = random_tokens(kPromptLen, e1->info().n_vocab, 7);
  const RunResult base = run(*e1, prompt, kPromptLen, false);
  for (const Config& c : full_matrix()) {
    const std::string what = "chunk " + std::to_string(c.chunk) + ", " + std::to_string(c.threads) +
                             " thread(s)" + (c.others ? ", three other sequences" : ", alone");
    expect_same(base, run(c.threads == 1 ? *e1 : *e2, prompt, c.chunk, c.others), what);
  }
  auto small_batch = load(path, 1, 13, kv_type);
  ASSERT_TRUE(small_batch);
  expect_same(base, run(*small_batch, prompt, kPromptLen, true), "n_batch 13 internal split");
}

std::string test_name(const std::string& stem) {
  std::string n = stem;
  for (char& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

class InvarianceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(InvarianceTest, BitIdenticalAcrossBatchingThreadsAndNeighbours) {
  const std::string& file = GetParam();
  const std::string path = model_path(file);
  if (path.empty()) GTEST_SKIP() << "SKIPPED: " << file << " not found under " HEARTH_SHARED_DIR;
  check_full_matrix(path);
}

INSTANTIATE_TEST_SUITE_P(
    Models, InvarianceTest,
    ::testing::Values("small-llama-f32.gguf", "small-llama-f16.gguf", "small-llama-bf16.gguf",
                      "small-llama-q8_0.gguf", "small-llama-q6_k.gguf", "small-llama-q5_k_m.gguf",
                      "small-llama-q5_1.gguf", "small-llama-q5_0.gguf", "small-llama-q4_k_m.gguf",
                      "small-llama-q4_1.gguf", "small-llama-q4_0.gguf", "small-llama-q3_k_m.gguf",
                      "small-llama-q2_k.gguf", "small-llama-tied-f16.gguf",
                      "small-llama-rope500k-q8_0.gguf", "small-qwen2-f32.gguf",
                      "small-qwen2-q4_k_m.gguf", "stories260K.gguf", "llama-2-tiny-random.gguf"),
    [](const auto& info) { return test_name(fs::path(info.param).stem().string()); });

// The architecture set: explicit head size, qwen3, MoE (grouping tokens by expert must
// not change a token's bits), phi3's fused tensors, gemma's sliding windows (the
// 300-token prompt is longer than their 64-position window) and soft-caps.
INSTANTIATE_TEST_SUITE_P(
    Architectures, InvarianceTest,
    ::testing::Values("small-llama-hd48-f16.gguf", "small-llama-hd48-q8_0.gguf",
                      "small-qwen3-f16.gguf", "small-qwen3-q4_k_m.gguf", "small-qwen3moe-f16.gguf",
                      "small-qwen3moe-q8_0.gguf", "small-mixtral-f16.gguf",
                      "small-mixtral-q8_0.gguf", "small-phi3-f16.gguf", "small-phi3-q8_0.gguf",
                      "small-phi3-gqa-q8_0.gguf", "small-gemma2-f16.gguf", "small-gemma2-q8_0.gguf",
                      "small-gemma3-f16.gguf", "small-gemma3-q8_0.gguf"),
    [](const auto& info) { return test_name(fs::path(info.param).stem().string()); });

// The quantized KV types: the full matrix again, Q8_0 on a dense llama and gemma2 (window
// and soft-caps), Q4_0 on qwen3 (q/k norms) and MoE (all four pass with both types; two
// each keep the suite's time).
class KvTypeInvarianceTest : public ::testing::TestWithParam<std::tuple<std::string, KvType>> {};

TEST_P(KvTypeInvarianceTest, BitIdenticalAcrossBatchingThreadsAndNeighbours) {
  const auto& [file, kv_type] = GetParam();
  const std::string path = model_path(file);
  if (path.empty()) GTEST_SKIP() << "SKIPPED: " << file << " not found under " HEARTH_SHARED_DIR;
  check_full_matrix(path, kv_type);
}

INSTANTIATE_TEST_SUITE_P(KvTypes, KvTypeInvarianceTest,
                         ::testing::Values(std::tuple{"small-llama-q4_0.gguf", KvType::kQ8_0},
                                           std::tuple{"small-gemma2-q8_0.gguf", KvType::kQ8_0},
                                           std::tuple{"small-qwen3-q4_k_m.gguf", KvType::kQ4_0},
                                           std::tuple{"small-qwen3moe-q8_0.gguf", KvType::kQ4_0}),
                         [](const auto& info) {
                           return test_name(fs::path(std::get<0>(info.param)).stem().string() +
                                            "_" + kv_type_name(std::get<1>(info.param)));
                         });

// gen-model `small` in each type gen-model writes, produced by the hearth binary.
class GenModelInvarianceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GenModelInvarianceTest, BitIdenticalAcrossBatchingThreadsAndNeighbours) {
  std::string why;
  const std::string path = testing::generated_model("small", GetParam(), &why);
  ASSERT_FALSE(path.empty()) << "gen-model small " << GetParam() << ": " << why;
  check_full_matrix(path);
}

INSTANTIATE_TEST_SUITE_P(Types, GenModelInvarianceTest,
                         ::testing::Values("f32", "f16", "bf16", "q8_0", "q4_0", "q4_k_m"),
                         [](const auto& info) { return test_name(info.param); });

// A decode token at 2,048 positions or more, alone in its batch, takes the split
// attention (the score pass over every KV head, the positions split across threads;
// forward.cpp); beside another sequence's token it does not. Both, on 2 threads and on
// 1, give the same logits. gen-model qwen3 `small` (4 KV heads of 128, 40,960 positions).
TEST(SplitDecodeTest, LongContextDecodeGivesTheUnsplitBits) {
  std::string why;
  const std::string path = testing::generated_model("small", "q8_0", &why, "qwen3");
  ASSERT_FALSE(path.empty()) << "gen-model qwen3 small: " << why;
  constexpr int32_t kPrefill = 2060, kDecode = 4;
  auto decode = [&](int threads, bool neighbour) {
    EngineOptions o;
    o.n_threads = threads;
    o.n_ctx = 2112;
    o.n_seq_max = 2;
    o.n_batch = 512;
    auto e = Engine::load(path, o);
    EXPECT_TRUE(e.ok()) << e.status().to_string();
    std::vector<float> got;
    if (!e.ok()) return got;
    Engine& engine = **e;
    const int32_t V = engine.info().n_vocab;
    const std::vector<int32_t> prompt = random_tokens(kPrefill + kDecode, V, 7u);
    std::vector<BatchToken> batch;
    std::vector<float> logits;
    for (int32_t b = 0; b < kPrefill; b += 512) {
      batch.clear();
      for (int32_t i = b; i < std::min(kPrefill, b + 512); ++i)
        batch.push_back({prompt[i], i, 0, i + 1 == kPrefill});
      EXPECT_TRUE(engine.forward(batch, logits).ok());
    }
    for (int32_t i = kPrefill; i < kPrefill + kDecode; ++i) {
      batch.clear();
      batch.push_back({prompt[i], i, 0, true});
      if (neighbour) batch.push_back({prompt[i - kPrefill], i - kPrefill, 1, false});
      EXPECT_TRUE(engine.forward(batch, logits).ok());
      got.insert(got.end(), logits.begin(), logits.begin() + V);
    }
    return got;
  };
  const std::vector<float> split2 = decode(2, false), split1 = decode(1, false);
  const std::vector<float> unsplit = decode(2, true);
  ASSERT_FALSE(unsplit.empty());
  ASSERT_EQ(split2.size(), unsplit.size());
  ASSERT_EQ(split1.size(), unsplit.size());
  EXPECT_EQ(std::memcmp(split2.data(), unsplit.data(), unsplit.size() * sizeof(float)), 0)
      << "2 threads, split vs unsplit";
  EXPECT_EQ(std::memcmp(split1.data(), unsplit.data(), unsplit.size() * sizeof(float)), 0)
      << "1 thread, split vs unsplit";
}

// The matrices copied into huge-page memory (the default) or read in place from the
// mapping: the same bytes, so the same bits. Tied output (the copy must serve as both
// embedding table and output head) and Q4_0 (decode row groups) included.
class WeightPlacementTest : public ::testing::TestWithParam<std::string> {};

TEST_P(WeightPlacementTest, CopyAndInPlaceGiveTheSameBits) {
  const std::string path = model_path(GetParam());
  if (path.empty()) GTEST_SKIP() << "SKIPPED: " << GetParam() << " not found";
  std::unique_ptr<Engine> engines[2];
  for (bool in_place : {false, true}) {
    EngineOptions o;
    o.n_threads = 2;
    o.n_ctx = 512;
    o.n_seq_max = 4;
    o.weights_in_place = in_place;
    auto e = Engine::load(path, o);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    const std::string& placement = e.value()->info().weights_placement;
    if (in_place) {
      EXPECT_EQ(placement, "file mapping");
    } else {
      EXPECT_EQ(placement.rfind("huge-page copy", 0), 0u) << placement;
    }
    engines[in_place ? 1 : 0] = std::move(e).value();
  }
  const auto prompt = random_tokens(80, engines[0]->info().n_vocab, 5);
  // Prefill in one batch, then token by token (the decode paths).
  const RunResult copied = run(*engines[0], prompt, 1, false);
  expect_same(copied, run(*engines[1], prompt, 1, false), "one token at a time");
  expect_same(copied, run(*engines[1], prompt, prompt.size(), false), "one batch, in place");
}

INSTANTIATE_TEST_SUITE_P(Models, WeightPlacementTest,
                         ::testing::Values("small-llama-tied-f16.gguf", "small-llama-q4_0.gguf",
                                           "small-llama-q4_k_m.gguf"),
                         [](const auto& info) {
                           return test_name(fs::path(info.param).stem().string());
                         });

TEST(KvTransferTest, PackUnpackIntoAnotherSeqContinuesIdentically) {
  const std::string path = model_path("small-llama-f32.gguf");
  if (path.empty()) GTEST_SKIP() << "SKIPPED: small-llama-f32.gguf not found";
  auto e = load(path, 2);
  ASSERT_TRUE(e);
  const auto prompt = random_tokens(120, e->info().n_vocab, 11);
  std::vector<BatchToken> batch;
  for (int32_t i = 0; i < 100; ++i) batch.push_back({prompt[i], i, 0, false});
  std::vector<float> logits;
  ASSERT_TRUE(e->forward(batch, logits).ok());
  std::vector<uint8_t> kv;
  ASSERT_TRUE(e->kv_pack(0, 100, kv).ok());
  ASSERT_EQ(kv.size(), 100 * e->kv_bytes_per_position());
  ASSERT_TRUE(e->kv_unpack(2, kv, 100).ok());
  EXPECT_EQ(e->seq_len(2), 100);
  std::vector<uint8_t> again;
  ASSERT_TRUE(e->kv_pack(2, 100, again).ok());
  EXPECT_EQ(kv, again);
  // The in-place import into seq 1: the spans, filled in order with the packed bytes,
  // hold exactly kv_pack's layout; the sequence is empty until the commit.
  auto spans = e->kv_import_spans(1, 100);
  ASSERT_TRUE(spans.ok());
  EXPECT_EQ(e->seq_len(1), 0);
  size_t at = 0;
  for (const auto& sp : *spans) {
    ASSERT_LE(at + sp.size(), kv.size());
    std::memcpy(sp.data(), kv.data() + at, sp.size());
    at += sp.size();
  }
  EXPECT_EQ(at, kv.size());
  ASSERT_TRUE(e->kv_import_commit(1, 100).ok());
  EXPECT_EQ(e->seq_len(1), 100);
  ASSERT_TRUE(e->kv_pack(1, 100, again).ok());
  EXPECT_EQ(kv, again);
  EXPECT_FALSE(e->kv_import_spans(1, 1 << 30).ok());
  // Continue the three sequences with the same 20 tokens in one batch.
  batch.clear();
  for (int32_t i = 100; i < 120; ++i) {
    batch.push_back({prompt[i], i, 0, true});
    batch.push_back({prompt[i], i, 2, true});
    batch.push_back({prompt[i], i, 1, true});
  }
  ASSERT_TRUE(e->forward(batch, logits).ok());
  const size_t V = static_cast<size_t>(e->info().n_vocab);
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(std::memcmp(&logits[3 * i * V], &logits[(3 * i + 1) * V], V * sizeof(float)), 0)
        << "position " << 100 + i;
    EXPECT_EQ(std::memcmp(&logits[3 * i * V], &logits[(3 * i + 2) * V], V * sizeof(float)), 0)
        << "imported, position " << 100 + i;
  }
  // Truncate and recompute: same bytes as before.
  ASSERT_TRUE(e->seq_truncate(2, 50).ok());
  EXPECT_EQ(e->seq_len(2), 50);
  batch.clear();
  for (int32_t i = 50; i < 100; ++i) batch.push_back({prompt[i], i, 2, false});
  ASSERT_TRUE(e->forward(batch, logits).ok());
  ASSERT_TRUE(e->kv_pack(2, 100, again).ok());
  EXPECT_EQ(kv, again);
}

}  // namespace
}  // namespace hearth
