// Engine loading: hyperparameters from metadata, and errors that name the problem
// (unsupported architecture, missing tensor, shape mismatch).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "hearth/engine/engine.h"
#include "hearth/gguf/gguf.h"

namespace hearth {
namespace {

namespace fs = std::filesystem;

std::string shared_model(const std::string& file) {
  for (const fs::path& p : {fs::path(HEARTH_SHARED_DIR) / "models" / file,
                            fs::path(HEARTH_SHARED_DIR) / "reference" / "models" / file}) {
    std::error_code ec;
    if (fs::exists(p, ec)) return p.string();
  }
  return "";
}

// Copies `source` (stories260K unless told) with edits: `tensor_filter` may drop,
// retype or reshape tensors, `meta_edit` may change metadata or add tensors, and the
// metadata key `drop_key` is left out. Returns the new file's path.
std::string write_variant(const std::string& name,
                          const std::function<bool(gguf::TensorInfo&)>& tensor_filter,
                          const std::function<void(gguf::GgufWriter&)>& meta_edit,
                          const std::string& source = "stories260K.gguf",
                          const std::string& drop_key = "") {
  auto src = gguf::GgufFile::open(shared_model(source));
  EXPECT_TRUE(src.ok());
  gguf::GgufWriter w;
  for (const auto& [k, v] : src->metadata()) {
    if (k == drop_key) continue;
    w.set(k, v);
  }
  meta_edit(w);
  for (gguf::TensorInfo t : src->tensors()) {
    const std::vector<uint8_t> data(t.data, t.data + t.n_bytes);
    if (!tensor_filter(t)) continue;
    EXPECT_TRUE(w.add_tensor(t.name, t.dims, t.type, data).ok());
  }
  const std::string path =
      (fs::temp_directory_path() /
       ("hearth_model_test_" + std::to_string(getpid()) + "_" + name + ".gguf"))
          .string();
  EXPECT_TRUE(w.write_file(path).ok());
  return path;
}

class ModelLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (shared_model("stories260K.gguf").empty()) {
      GTEST_SKIP() << "SKIPPED: stories260K.gguf not found under " HEARTH_SHARED_DIR;
    }
  }
  void TearDown() override {
    for (const auto& p : cleanup_) fs::remove(p);
  }
  std::string variant(const std::string& name,
                      const std::function<bool(gguf::TensorInfo&)>& tensor_filter,
                      const std::function<void(gguf::GgufWriter&)>& meta_edit,
                      const std::string& source = "stories260K.gguf",
                      const std::string& drop_key = "") {
    cleanup_.push_back(write_variant(name, tensor_filter, meta_edit, source, drop_key));
    return cleanup_.back();
  }
  std::vector<std::string> cleanup_;
};

TEST_F(ModelLoadTest, ReadsHyperparameters) {
  auto e = Engine::load(shared_model("stories260K.gguf"), {});
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  const ModelInfo& i = (*e)->info();
  EXPECT_EQ(i.arch, "llama");
  EXPECT_EQ(i.n_vocab, 512);
  EXPECT_EQ(i.n_embd, 64);
  EXPECT_EQ(i.n_layer, 5);
  EXPECT_EQ(i.n_head, 8);
  EXPECT_EQ(i.n_head_kv, 4);
  EXPECT_EQ(i.head_dim, 8);
  EXPECT_EQ(i.n_rot, 8);
  EXPECT_EQ(i.n_ff, 172);
  EXPECT_EQ(i.n_ctx_train, 2048);
  EXPECT_EQ(i.n_ctx, 2048);
  EXPECT_FLOAT_EQ(i.rope_base, 10000.0f);
  EXPECT_FLOAT_EQ(i.rms_eps, 1e-5f);
  EXPECT_FALSE(i.rope_neox);
  EXPECT_FALSE(i.tied_embeddings);
  EXPECT_EQ(i.quant_name, "F32");
  EXPECT_NEAR(i.bits_per_weight, 32.0, 1e-9);
  EXPECT_GT(i.weight_bytes, 1000000u);
  // K and V of 5 layers, 4 KV heads of 8 dims, F16.
  EXPECT_EQ((*e)->kv_bytes_per_position(), 5u * 2 * 32 * 2);
  EXPECT_FALSE((*e)->numerics_id().empty());
}

TEST_F(ModelLoadTest, TiedQwenAndQuantizedVariants) {
  const std::string tied = shared_model("small-llama-tied-f16.gguf");
  const std::string qwen = shared_model("small-qwen2-q4_k_m.gguf");
  if (tied.empty() || qwen.empty()) GTEST_SKIP() << "SKIPPED: reference models not found";
  auto t = Engine::load(tied, {});
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_TRUE((*t)->info().tied_embeddings);
  EXPECT_EQ((*t)->info().quant_name, "F16");
  auto q = Engine::load(qwen, {});
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_EQ((*q)->info().arch, "qwen2");
  EXPECT_TRUE((*q)->info().rope_neox);
  EXPECT_EQ((*q)->info().quant_name, "Q4_K_M");
  EXPECT_EQ((*q)->info().n_rot, 32);  // no rope.dimension_count: head dim
}

TEST_F(ModelLoadTest, MissingTensorIsNamed) {
  const std::string p = variant(
      "missing", [](gguf::TensorInfo& t) { return t.name != "blk.2.ffn_up.weight"; },
      [](gguf::GgufWriter&) {});
  auto e = Engine::load(p, {});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("blk.2.ffn_up.weight"), std::string::npos)
      << e.status().to_string();
}

TEST_F(ModelLoadTest, ShapeMismatchIsNamed) {
  const std::string p = variant(
      "shape",
      [](gguf::TensorInfo& t) {
        if (t.name == "blk.1.attn_q.weight") t.dims = {32, 128};  // same bytes, wrong shape
        return true;
      },
      [](gguf::GgufWriter&) {});
  auto e = Engine::load(p, {});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("blk.1.attn_q.weight"), std::string::npos)
      << e.status().to_string();
}

TEST_F(ModelLoadTest, UnsupportedArchitectureIsNamed) {
  const std::string p = variant(
      "arch", [](gguf::TensorInfo&) { return true; },
      [](gguf::GgufWriter& w) { w.set_string("general.architecture", "mamba"); });
  auto e = Engine::load(p, {});
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(e.status().message().find("mamba"), std::string::npos) << e.status().to_string();
}

TEST_F(ModelLoadTest, RopeScalingAndBaseFromMetadata) {
  const std::string p = variant(
      "rope", [](gguf::TensorInfo&) { return true; },
      [](gguf::GgufWriter& w) {
        w.set_f32("llama.rope.freq_base", 500000.0f);
        w.set_string("llama.rope.scaling.type", "linear");
        w.set_f32("llama.rope.scaling.factor", 4.0f);
      });
  auto e = Engine::load(p, {});
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  EXPECT_FLOAT_EQ((*e)->info().rope_base, 500000.0f);
  EXPECT_EQ((*e)->info().rope_scaling_type, "linear");
  EXPECT_FLOAT_EQ((*e)->info().rope_scaling_factor, 4.0f);
  const std::string bad = variant(
      "yarn", [](gguf::TensorInfo&) { return true; },
      [](gguf::GgufWriter& w) {
        w.set_string("llama.rope.scaling.type", "yarn");
        w.set_f32("llama.rope.scaling.factor", 4.0f);
      });
  auto y = Engine::load(bad, {});
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("yarn"), std::string::npos);
}

TEST_F(ModelLoadTest, UnsupportedTensorTypeIsNamed) {
  // Same dims and bytes (64 x 172 four-byte elements), but I32 is no weight type.
  const std::string p = variant(
      "i32",
      [](gguf::TensorInfo& t) {
        if (t.name == "blk.3.ffn_up.weight") t.type = gguf::TensorType::kI32;
        return true;
      },
      [](gguf::GgufWriter&) {});
  auto e = Engine::load(p, {});
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(e.status().message().find("blk.3.ffn_up.weight"), std::string::npos)
      << e.status().to_string();
  EXPECT_NE(e.status().message().find("i32"), std::string::npos) << e.status().to_string();
}

TEST_F(ModelLoadTest, QuantNameFromDominantTypeWithoutFileType) {
  if (shared_model("small-llama-q8_0.gguf").empty()) {
    GTEST_SKIP() << "SKIPPED: small-llama-q8_0.gguf not found under " HEARTH_SHARED_DIR;
  }
  const std::string p = variant(
      "no_file_type", [](gguf::TensorInfo&) { return true; }, [](gguf::GgufWriter&) {},
      "small-llama-q8_0.gguf", "general.file_type");
  auto e = Engine::load(p, {});
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  EXPECT_EQ((*e)->info().quant_name, "Q8_0");
}

// Greedy logits of a 12-token prompt at positions 0..11.
std::vector<float> prompt_logits(const std::string& model) {
  auto e = Engine::load(model, {});
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  if (!e.ok()) return {};
  std::vector<BatchToken> batch;
  for (int32_t i = 0; i < 12; ++i) batch.push_back({(i * 37 + 5) % 512, i, 0, true});
  std::vector<float> logits;
  EXPECT_TRUE((*e)->forward(batch, logits).ok());
  return logits;
}

void add_rope_freqs(gguf::GgufWriter& w, float factor) {
  const std::vector<float> f(4, factor);  // stories260K: n_rot 8
  std::vector<uint8_t> bytes(f.size() * sizeof(float));
  std::memcpy(bytes.data(), f.data(), bytes.size());
  EXPECT_TRUE(w.add_tensor("rope_freqs.weight", {4}, gguf::TensorType::kF32, bytes).ok());
}

// Linear scaling by 4 and rope_freqs of 4 both divide every angle by 4 (exactly: a power
// of two), so they must give the same bits, and both must differ from no scaling.
TEST_F(ModelLoadTest, RopeScalingAndFrequencyFactorsReachTheForwardPass) {
  const auto keep = [](gguf::TensorInfo&) { return true; };
  const std::vector<float> plain = prompt_logits(shared_model("stories260K.gguf"));
  const std::vector<float> linear = prompt_logits(variant("linear4", keep, [](gguf::GgufWriter& w) {
    w.set_string("llama.rope.scaling.type", "linear");
    w.set_f32("llama.rope.scaling.factor", 4.0f);
  }));
  const std::vector<float> freqs =
      prompt_logits(variant("freqs4", keep, [](gguf::GgufWriter& w) { add_rope_freqs(w, 4.0f); }));
  const std::vector<float> ones =
      prompt_logits(variant("freqs1", keep, [](gguf::GgufWriter& w) { add_rope_freqs(w, 1.0f); }));
  ASSERT_EQ(plain.size(), 12u * 512u);
  ASSERT_EQ(linear.size(), plain.size());
  EXPECT_NE(linear, plain) << "linear rope scaling did not change the logits";
  EXPECT_EQ(freqs, linear) << "rope_freqs of 4 should equal linear scaling by 4";
  EXPECT_EQ(ones, plain) << "rope_freqs of 1 should change nothing";
}

TEST_F(ModelLoadTest, RopeFreqsOfTheWrongLengthIsNamed) {
  const std::string p = variant(
      "freqs_bad", [](gguf::TensorInfo&) { return true; },
      [](gguf::GgufWriter& w) {
        const std::vector<uint8_t> bytes(3 * sizeof(float), 0);
        EXPECT_TRUE(w.add_tensor("rope_freqs.weight", {3}, gguf::TensorType::kF32, bytes).ok());
      });
  auto e = Engine::load(p, {});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("rope_freqs.weight"), std::string::npos)
      << e.status().to_string();
}

TEST_F(ModelLoadTest, NonexistentFileFails) {
  auto e = Engine::load("/nonexistent/model.gguf", {});
  EXPECT_FALSE(e.ok());
}

}  // namespace
}  // namespace hearth
