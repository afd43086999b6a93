// LoRA adapters in the engine (llama.cpp's GGUF adapter format): load errors name the
// key or tensor; an adapter changes the logits; scale 0 is the base model bit for bit;
// the delta follows llama.cpp's scale rule (user_scale * alpha / rank) and is linear in
// the scale on the output matrix; and batch invariance holds with sequences under
// different adapter sets in one batch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "gen_model_test_util.h"
#include "hearth/engine/engine.h"
#include "hearth/gguf/gguf.h"

namespace hearth {
namespace {

const std::string kBase = std::string(HEARTH_SHARED_DIR) + "/models/stories260K.gguf";

std::string tmp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("hearth_lora_" + std::to_string(getpid()) + "_" + name))
      .string();
}

// `hearth gen-model --lora-for` output (attn_q, attn_v and the ffn matrices).
std::string gen_adapter(uint64_t seed, int rank, float alpha, std::string* why) {
  const std::string out = tmp_path("gen" + std::to_string(seed) + ".gguf");
  int rc = 0;
  const std::string log = testing::run_command(
      std::string(HEARTH_CLI_PATH) + " gen-model --lora-for " + kBase + " --rank " +
          std::to_string(rank) + " --alpha " + std::to_string(alpha) + " --seed " +
          std::to_string(seed) + " --out " + out,
      &rc, true);
  if (rc != 0) *why = log;
  return rc == 0 ? out : "";
}

std::vector<uint8_t> f32_bytes(size_t n, float step) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = step * static_cast<float>(static_cast<int>(i % 7) - 3);
  std::vector<uint8_t> b(n * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

struct Pair {
  std::string base;
  std::vector<uint64_t> a_dims, b_dims;
  gguf::TensorType type = gguf::TensorType::kF32;
  bool drop_b = false;
};

// An adapter file written by hand: metadata as given, one pair per entry.
std::string write_adapter(const std::string& name, const std::vector<Pair>& pairs,
                          float alpha = 0.0f, const std::string& arch = "llama",
                          const std::string& type = "adapter") {
  gguf::GgufWriter w;
  w.set_string("general.architecture", arch);
  if (!type.empty()) w.set_string("general.type", type);
  w.set_string("adapter.type", "lora");
  w.set_f32("adapter.lora.alpha", alpha);
  for (const Pair& p : pairs) {
    auto data = [&](const std::vector<uint64_t>& d) {
      const size_t n = d[0] * d[1];
      if (p.type == gguf::TensorType::kF32) return f32_bytes(n, 0.01f);
      return std::vector<uint8_t>(gguf::row_bytes(p.type, d[0]) * d[1], 0);
    };
    EXPECT_TRUE(w.add_tensor(p.base + ".lora_a", p.a_dims, p.type, data(p.a_dims)).ok());
    if (!p.drop_b) {
      EXPECT_TRUE(w.add_tensor(p.base + ".lora_b", p.b_dims, p.type, data(p.b_dims)).ok());
    }
  }
  const std::string path = tmp_path(name);
  EXPECT_TRUE(w.write_file(path).ok());
  return path;
}

std::unique_ptr<Engine> load_base(int32_t n_seq = 4) {
  EngineOptions o;
  o.n_threads = 2;
  o.n_seq_max = n_seq;
  o.n_ctx = 256;
  auto e = Engine::load(kBase, o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(e).value() : nullptr;
}

const std::vector<int32_t> kPrompt = {1, 403, 407, 261, 378, 309, 365, 395, 268, 299, 303, 315};

// Logits of every prompt position of `seq`, which must be empty.
std::vector<float> run(Engine& e, int32_t seq, const std::vector<int32_t>& prompt = kPrompt) {
  std::vector<BatchToken> batch;
  for (size_t i = 0; i < prompt.size(); ++i)
    batch.push_back({prompt[i], static_cast<int32_t>(i), seq, true});
  std::vector<float> logits;
  EXPECT_TRUE(e.forward(batch, logits).ok());
  return logits;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

TEST(Lora, LoadErrorsNameTheKeyOrTensor) {
  if (!std::filesystem::exists(kBase)) GTEST_SKIP() << "no " << kBase;
  auto e = load_base();
  ASSERT_TRUE(e);
  // stories260K: n_embd 64, attn_q 64 x 64, 512 vocab.
  const Pair q{"blk.0.attn_q.weight", {64, 4}, {4, 64}};
  struct Case {
    std::string path, needle;
  } cases[] = {
      {write_adapter("arch.gguf", {q}, 0, "qwen2"), "general.architecture"},
      {write_adapter("type.gguf", {q}, 0, "llama", ""), "general.type"},
      {write_adapter("missing_b.gguf",
                     {{"blk.0.attn_q.weight", {64, 4}, {4, 64}, gguf::TensorType::kF32, true}}),
       "blk.0.attn_q.weight.lora_b"},
      {write_adapter("shape.gguf", {{"blk.1.attn_v.weight", {64, 4}, {4, 63}}}),
       "blk.1.attn_v.weight.lora_b"},
      {write_adapter("rank.gguf", {{"blk.1.attn_k.weight", {64, 4}, {5, 64}}}),
       "blk.1.attn_k.weight.lora_a"},
      {write_adapter("nobase.gguf", {{"blk.99.attn_q.weight", {64, 4}, {4, 64}}}),
       "blk.99.attn_q.weight"},
      {write_adapter("norm.gguf", {{"blk.0.attn_norm.weight", {64, 4}, {4, 1}}}),
       "blk.0.attn_norm.weight"},
      {write_adapter("q4.gguf",
                     {{"blk.0.attn_q.weight", {64, 32}, {32, 64}, gguf::TensorType::kQ4_0}}),
       "blk.0.attn_q.weight.lora_a"},
  };
  for (const Case& c : cases) {
    auto a = e->load_lora(c.path);
    ASSERT_FALSE(a.ok()) << c.path;
    EXPECT_NE(a.status().message().find(c.needle), std::string::npos)
        << c.path << ": " << a.status().message();
    std::filesystem::remove(c.path);
  }
  // The well-formed one loads, in F32 and in Q8_0.
  const std::string ok = write_adapter("ok.gguf", {q});
  EXPECT_TRUE(e->load_lora(ok).ok());
  const std::string q8 = write_adapter(
      "q8.gguf", {{"blk.0.attn_q.weight", {64, 32}, {32, 64}, gguf::TensorType::kQ8_0}});
  EXPECT_TRUE(e->load_lora(q8).ok());
  std::filesystem::remove(ok);
  std::filesystem::remove(q8);
}

TEST(Lora, ChangesLogitsAndScaleZeroIsBaseBitForBit) {
  if (!std::filesystem::exists(kBase)) GTEST_SKIP() << "no " << kBase;
  std::string why;
  const std::string path = gen_adapter(3, 4, 8.0f, &why);
  ASSERT_FALSE(path.empty()) << why;
  auto e = load_base();
  ASSERT_TRUE(e);
  auto a = e->load_lora(path);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  const std::vector<float> base = run(*e, 0);
  ASSERT_TRUE(e->set_lora(1, {LoraUse{*a, 1.0f}}).ok());
  const std::vector<float> adapted = run(*e, 1);
  EXPECT_GT(max_abs_diff(base, adapted), 1e-3);
  ASSERT_TRUE(e->set_lora(2, {LoraUse{*a, 0.0f}}).ok());
  const std::vector<float> zero = run(*e, 2);
  ASSERT_EQ(zero.size(), base.size());
  EXPECT_EQ(std::memcmp(zero.data(), base.data(), base.size() * 4), 0);
  // An adapter of another engine is refused.
  auto other = load_base(1);
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->set_lora(0, {LoraUse{*a, 1.0f}}).ok());
  std::filesystem::remove(path);
}

// An adapter on output.weight only: logits(s) - logits(0) = s * scale_rule * B A h, so the
// delta at scale 2 is twice the delta at scale 1, and alpha = 2 * rank at scale 1 equals
// alpha 0 at scale 2.
TEST(Lora, OutputDeltaFollowsTheScaleRule) {
  if (!std::filesystem::exists(kBase)) GTEST_SKIP() << "no " << kBase;
  auto e = load_base();
  ASSERT_TRUE(e);
  if (e->info().tied_embeddings) GTEST_SKIP() << "tied output";
  const int64_t V = e->info().n_vocab;
  const Pair out{"output.weight", {64, 4}, {4, static_cast<uint64_t>(V)}};
  const std::string plain = write_adapter("out0.gguf", {out}, 0.0f);
  const std::string alpha8 = write_adapter("out8.gguf", {out}, 8.0f);  // 8 / rank 4 = 2
  auto a0 = e->load_lora(plain);
  auto a8 = e->load_lora(alpha8);
  ASSERT_TRUE(a0.ok() && a8.ok());
  const std::vector<float> base = run(*e, 0);
  ASSERT_TRUE(e->set_lora(1, {LoraUse{*a0, 1.0f}}).ok());
  ASSERT_TRUE(e->set_lora(2, {LoraUse{*a0, 2.0f}}).ok());
  ASSERT_TRUE(e->set_lora(3, {LoraUse{*a8, 1.0f}}).ok());
  const std::vector<float> s1 = run(*e, 1), s2 = run(*e, 2), al = run(*e, 3);
  double delta = 0, off = 0;
  for (size_t i = 0; i < base.size(); ++i) {
    const double d1 = double(s1[i]) - base[i], d2 = double(s2[i]) - base[i];
    delta = std::max(delta, std::fabs(d1));
    off = std::max(off, std::fabs(d2 - 2 * d1));
  }
  EXPECT_GT(delta, 1e-3);
  EXPECT_LT(off, 1e-4 * std::max(1.0, delta));
  EXPECT_LT(max_abs_diff(s2, al), 1e-5);  // the same product, scaled the same
  std::filesystem::remove(plain);
  std::filesystem::remove(alpha8);
}

// A sequence's logits and KV under its adapters are the same bits alone, token by token
// and batched with sequences under other adapter sets (and none).
TEST(Lora, BatchInvariantAcrossAdapterSets) {
  if (!std::filesystem::exists(kBase)) GTEST_SKIP() << "no " << kBase;
  std::string why;
  const std::string p1 = gen_adapter(5, 4, 8.0f, &why);
  const std::string p2 = gen_adapter(6, 8, 0.0f, &why);
  ASSERT_FALSE(p1.empty() || p2.empty()) << why;
  auto e = load_base();
  ASSERT_TRUE(e);
  auto a = e->load_lora(p1);
  auto b = e->load_lora(p2);
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<std::vector<LoraUse>> sets = {
      {LoraUse{*a, 1.0f}}, {}, {LoraUse{*a, 0.5f}, LoraUse{*b, 1.0f}}, {LoraUse{*b, 2.0f}}};
  // Alone, in one batch.
  std::vector<std::vector<float>> alone;
  std::vector<std::vector<uint8_t>> alone_kv;
  for (int32_t q = 0; q < 4; ++q) {
    ASSERT_TRUE(e->set_lora(q, sets[static_cast<size_t>(q)]).ok());
    alone.push_back(run(*e, q));
    alone_kv.emplace_back();
    ASSERT_TRUE(e->kv_pack(q, static_cast<int32_t>(kPrompt.size()), alone_kv.back()).ok());
    ASSERT_TRUE(e->seq_clear(q).ok());
  }
  EXPECT_GT(max_abs_diff(alone[0], alone[1]), 1e-3);
  EXPECT_GT(max_abs_diff(alone[2], alone[3]), 1e-3);
  // All four interleaved, token by token across sequences, in one batch.
  std::vector<BatchToken> batch;
  for (size_t i = 0; i < kPrompt.size(); ++i)
    for (int32_t q = 0; q < 4; ++q) batch.push_back({kPrompt[i], static_cast<int32_t>(i), q, true});
  std::vector<float> mixed;
  ASSERT_TRUE(e->forward(batch, mixed).ok());
  const size_t V = static_cast<size_t>(e->info().n_vocab);
  for (int32_t q = 0; q < 4; ++q) {
    for (size_t i = 0; i < kPrompt.size(); ++i) {
      const float* got = mixed.data() + (i * 4 + static_cast<size_t>(q)) * V;
      const float* want = alone[static_cast<size_t>(q)].data() + i * V;
      ASSERT_EQ(std::memcmp(got, want, V * 4), 0) << "seq " << q << " position " << i;
    }
    std::vector<uint8_t> kv;
    ASSERT_TRUE(e->kv_pack(q, static_cast<int32_t>(kPrompt.size()), kv).ok());
    EXPECT_EQ(kv, alone_kv[static_cast<size_t>(q)]) << "seq " << q;
  }
  std::filesystem::remove(p1);
  std::filesystem::remove(p2);
}

}  // namespace
}  // namespace hearth
