// Loading the architecture set (reference/architectures/models): the hyperparameters
// each family reads, and the metadata the engine does not implement refused with an
// error naming the key (never silently ignored).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "hearth/engine/engine.h"
#include "hearth/gguf/gguf.h"

namespace hearth {
namespace {

namespace fs = std::filesystem;

std::string arch_model(const std::string& file) {
  const fs::path p = fs::path(HEARTH_SHARED_DIR) / "reference" / "architectures" / "models" / file;
  std::error_code ec;
  return fs::exists(p, ec) ? p.string() : "";
}

class ArchLoadTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const auto& p : cleanup_) fs::remove(p);
  }
  // A copy of `source` with `meta_edit` applied to the metadata, the key `drop_key`
  // left out, and tensors for which `keep` is false left out.
  std::string variant(
      const std::string& source, const std::function<void(gguf::GgufWriter&)>& meta_edit,
      const std::string& drop_key = "",
      const std::function<bool(const gguf::TensorInfo&)>& keep = [](const gguf::TensorInfo&) {
        return true;
      }) {
    auto src = gguf::GgufFile::open(arch_model(source));
    EXPECT_TRUE(src.ok());
    gguf::GgufWriter w;
    for (const auto& [k, v] : src->metadata()) {
      if (k != drop_key) w.set(k, v);
    }
    meta_edit(w);
    for (const gguf::TensorInfo& t : src->tensors()) {
      if (!keep(t)) continue;
      const std::vector<uint8_t> data(t.data, t.data + t.n_bytes);
      EXPECT_TRUE(w.add_tensor(t.name, t.dims, t.type, data).ok());
    }
    const std::string path =
        (fs::temp_directory_path() / ("hearth_arch_test_" + std::to_string(getpid()) + "_" +
                                      std::to_string(cleanup_.size()) + ".gguf"))
            .string();
    EXPECT_TRUE(w.write_file(path).ok());
    cleanup_.push_back(path);
    return path;
  }
  // Loading the variant fails as Unsupported or InvalidArgument, naming `what`.
  void expect_refused(const std::string& path, const std::string& what) {
    auto e = Engine::load(path, {});
    ASSERT_FALSE(e.ok()) << "loaded although " << what << " should be refused";
    EXPECT_TRUE(e.status().code() == ErrorCode::kUnsupported ||
                e.status().code() == ErrorCode::kInvalidArgument)
        << e.status().to_string();
    EXPECT_NE(e.status().message().find(what), std::string::npos) << e.status().to_string();
  }
  std::vector<std::string> cleanup_;
};

#define REQUIRE_ARCH_MODELS()                     \
  if (arch_model("small-qwen3-f16.gguf").empty()) \
  GTEST_SKIP() << "SKIPPED: reference/architectures/models not found under " HEARTH_SHARED_DIR

Result<std::unique_ptr<Engine>> load(const std::string& file) {
  EngineOptions o;
  o.n_ctx = 256;
  return Engine::load(arch_model(file), o);
}

TEST_F(ArchLoadTest, ReadsEachFamilysHyperparameters) {
  REQUIRE_ARCH_MODELS();
  auto hd48 = load("small-llama-hd48-f16.gguf");
  ASSERT_TRUE(hd48.ok()) << hd48.status().to_string();
  EXPECT_EQ((*hd48)->info().head_dim, 48);  // attention.key_length, not 96 / 8
  EXPECT_EQ((*hd48)->info().n_rot, 48);
  EXPECT_FALSE((*hd48)->info().rope_neox);
  EXPECT_EQ((*hd48)->kv_bytes_per_position(), 4u * 2 * (2 * 48) * 2);

  auto qwen3 = load("small-qwen3-q4_k_m.gguf");
  ASSERT_TRUE(qwen3.ok()) << qwen3.status().to_string();
  EXPECT_EQ((*qwen3)->info().arch, "qwen3");
  EXPECT_EQ((*qwen3)->info().head_dim, 32);
  EXPECT_TRUE((*qwen3)->info().rope_neox);
  EXPECT_TRUE((*qwen3)->info().tied_embeddings);
  EXPECT_EQ((*qwen3)->info().n_expert, 0);

  auto moe = load("small-qwen3moe-q8_0.gguf");
  ASSERT_TRUE(moe.ok()) << moe.status().to_string();
  EXPECT_EQ((*moe)->info().n_expert, 8);
  EXPECT_EQ((*moe)->info().n_expert_used, 2);
  EXPECT_NE((*moe)->numerics_id().find(";arch=qwen3moe;moe=8x2"), std::string::npos)
      << (*moe)->numerics_id();

  auto mixtral = load("small-mixtral-f16.gguf");
  ASSERT_TRUE(mixtral.ok()) << mixtral.status().to_string();
  EXPECT_EQ((*mixtral)->info().arch, "llama");
  EXPECT_EQ((*mixtral)->info().n_expert, 4);
  EXPECT_EQ((*mixtral)->info().n_expert_used, 2);

  auto phi3 = load("small-phi3-gqa-q8_0.gguf");
  ASSERT_TRUE(phi3.ok()) << phi3.status().to_string();
  EXPECT_EQ((*phi3)->info().head_dim, 16);
  EXPECT_EQ((*phi3)->info().n_head_kv, 2);
  EXPECT_EQ((*phi3)->info().n_ff, 192);

  for (const char* f : {"small-gemma2-f16.gguf", "small-gemma3-q8_0.gguf"}) {
    auto g = load(f);
    ASSERT_TRUE(g.ok()) << f << ": " << g.status().to_string();
    EXPECT_EQ((*g)->info().n_swa, 64) << f;
    // The sliding layers' KV layout is part of the KV identity: a ring whose saved rows
    // hold the window (the default), or every position (swa_full).
    const std::string period = std::string(f).find("gemma2") != std::string::npos ? "2" : "6";
    EXPECT_NE((*g)->numerics_id().find(";swa=64/" + period + ":window"), std::string::npos)
        << (*g)->numerics_id();
  }
}

TEST_F(ArchLoadTest, UnsupportedRopeScalingIsNamed) {
  REQUIRE_ARCH_MODELS();
  expect_refused(variant("small-qwen3-f16.gguf",
                         [](gguf::GgufWriter& w) {
                           w.set_string("qwen3.rope.scaling.type", "yarn");
                           w.set_f32("qwen3.rope.scaling.factor", 4.0f);
                           w.set_u32("qwen3.rope.scaling.original_context_length", 32768);
                         }),
                 "qwen3.rope.scaling.type 'yarn'");
  expect_refused(variant("small-phi3-f16.gguf",
                         [](gguf::GgufWriter& w) {
                           w.set_string("phi3.rope.scaling.type", "longrope");
                           w.set_f32("phi3.rope.scaling.factor", 32.0f);
                         }),
                 "phi3.rope.scaling.type 'longrope'");
  expect_refused(
      variant("small-phi3-f16.gguf",
              [](gguf::GgufWriter& w) { w.set_f32("phi3.rope.scaling.attn_factor", 1.19f); }),
      "phi3.rope.scaling.attn_factor");
  // Phi-3 LongRoPE's factor tensors.
  expect_refused(
      variant(
          "small-phi3-f16.gguf",
          [](gguf::GgufWriter& w) {
            const std::vector<uint8_t> bytes(8 * sizeof(float), 0);
            EXPECT_TRUE(
                w.add_tensor("rope_factors_long.weight", {8}, gguf::TensorType::kF32, bytes).ok());
          }),
      "rope_factors_long.weight");
}

TEST_F(ArchLoadTest, UnsupportedExpertMetadataIsNamed) {
  REQUIRE_ARCH_MODELS();
  const std::string moe = "small-qwen3moe-f16.gguf";
  expect_refused(
      variant(moe, [](gguf::GgufWriter& w) { w.set_u32("qwen3moe.expert_gating_func", 2); }),
      "qwen3moe.expert_gating_func");
  expect_refused(
      variant(moe, [](gguf::GgufWriter& w) { w.set_u32("qwen3moe.expert_shared_count", 1); }),
      "qwen3moe.expert_shared_count");
  expect_refused(
      variant(moe, [](gguf::GgufWriter& w) { w.set_f32("qwen3moe.expert_weights_scale", 2.5f); }),
      "qwen3moe.expert_weights_scale");
  expect_refused(
      variant(moe, [](gguf::GgufWriter& w) { w.set_bool("qwen3moe.expert_weights_norm", false); }),
      "qwen3moe.expert_weights_norm");
  expect_refused(variant(
                     moe, [](gguf::GgufWriter&) {}, "qwen3moe.expert_used_count"),
                 "qwen3moe.expert_used_count");
  expect_refused(
      variant(moe, [](gguf::GgufWriter& w) { w.set_u32("qwen3moe.expert_used_count", 9); }),
      "qwen3moe.expert_used_count");
  expect_refused(
      variant(
          moe, [](gguf::GgufWriter&) {}, "",
          [](const gguf::TensorInfo& t) { return t.name != "blk.1.ffn_up_exps.weight"; }),
      "blk.1.ffn_up_exps.weight");
  // Experts on an architecture without them.
  expect_refused(variant("small-qwen3-f16.gguf",
                         [](gguf::GgufWriter& w) { w.set_u32("qwen3.expert_count", 4); }),
                 "qwen3.expert_count");
}

TEST_F(ArchLoadTest, FeaturesOfOtherFamiliesAreNamed) {
  REQUIRE_ARCH_MODELS();
  expect_refused(
      variant("small-qwen3-f16.gguf",
              [](gguf::GgufWriter& w) { w.set_u32("qwen3.attention.sliding_window", 4096); }),
      "qwen3.attention.sliding_window");
  expect_refused(
      variant("small-llama-hd48-f16.gguf",
              [](gguf::GgufWriter& w) { w.set_f32("llama.attn_logit_softcapping", 50.0f); }),
      "llama.attn_logit_softcapping");
  expect_refused(
      variant("small-gemma3-f16.gguf",
              [](gguf::GgufWriter& w) { w.set_f32("gemma3.final_logit_softcapping", 30.0f); }),
      "gemma3.final_logit_softcapping");
  expect_refused(
      variant("small-gemma3-f16.gguf",
              [](gguf::GgufWriter& w) { w.set_u32("gemma3.attention.sliding_window_pattern", 4); }),
      "gemma3.attention.sliding_window_pattern");
  expect_refused(
      variant(
          "small-gemma2-f16.gguf", [](gguf::GgufWriter&) {}, "gemma2.attention.sliding_window"),
      "gemma2.attention.sliding_window");
  expect_refused(
      variant("small-llama-hd48-f16.gguf",
              [](gguf::GgufWriter& w) { w.set_u32("llama.attention.value_length", 32); }),
      "llama.attention.value_length");
}

// llama.cpp disables Phi-3's sliding window (its converters do not fill it in
// reliably), so the key is accepted and the model is the same.
TEST_F(ArchLoadTest, Phi3SlidingWindowIsAcceptedAsLlamaCppDoes) {
  REQUIRE_ARCH_MODELS();
  auto e = Engine::load(
      variant("small-phi3-f16.gguf",
              [](gguf::GgufWriter& w) { w.set_u32("phi3.attention.sliding_window", 2047); }),
      {});
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  EXPECT_EQ((*e)->info().n_swa, 0);
}

// The MoE routing diagnostics the reference check uses: a margin per layer for the
// batch's last token, and a one-forward override to the runner-up expert.
TEST_F(ArchLoadTest, RouterMarginsAndRunnerUpOverride) {
  REQUIRE_ARCH_MODELS();
  auto dense = load("small-qwen3-f16.gguf");
  ASSERT_TRUE(dense.ok());
  EXPECT_TRUE((*dense)->router_margins().empty());
  auto e = load("small-qwen3moe-f16.gguf");
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  Engine& moe = **e;
  const std::vector<BatchToken> prompt = {{1, 0, 0, false}, {450, 1, 0, false}, {3290, 2, 0, true}};
  std::vector<float> plain, again, other;
  ASSERT_TRUE(moe.forward(prompt, plain).ok());
  const std::vector<float> margins(moe.router_margins().begin(), moe.router_margins().end());
  ASSERT_EQ(margins.size(), 3u);
  for (float m : margins) EXPECT_GE(m, 0.0f);
  // The override changes the last token's logits, for one forward only.
  ASSERT_TRUE(moe.seq_truncate(0, 2).ok());
  moe.route_runner_up(1);
  ASSERT_TRUE(moe.forward(std::span(prompt).subspan(2), other).ok());
  EXPECT_NE(other, plain);
  ASSERT_TRUE(moe.seq_truncate(0, 2).ok());
  ASSERT_TRUE(moe.forward(std::span(prompt).subspan(2), again).ok());
  EXPECT_EQ(again, plain);
  EXPECT_EQ(std::vector<float>(moe.router_margins().begin(), moe.router_margins().end()), margins);
}

}  // namespace
}  // namespace hearth
