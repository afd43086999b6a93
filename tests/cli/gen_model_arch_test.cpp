// `hearth gen-model --arch`: every family's tiny preset loads in the engine as that
// architecture, with the tensors and keys the family needs, and runs a forward pass
// with finite logits; --ctx sets the context length the engine then uses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "gguf_cli_util.h"
#include "hearth/engine/engine.h"
#include "hearth/gguf/gguf.h"

namespace hearth::cli {
namespace {

using ::testing::HasSubstr;
using testing::run_cli;
using testing::temp_path;

class GenModelArch : public testing::GenModelTest {};

struct ArchCase {
  const char* family;                // --arch
  const char* gguf_arch;             // general.architecture
  std::vector<std::string> keys;     // <gguf_arch>.<key> the file must carry
  std::vector<std::string> tensors;  // blk.0.<tensor> the file must carry
  bool tied;
};

const ArchCase kCases[] = {
    {"llama", "llama", {}, {"attn_q.weight", "ffn_gate.weight"}, false},
    {"qwen3",
     "qwen3",
     {"attention.key_length", "attention.value_length"},
     {"attn_q_norm.weight", "attn_k_norm.weight"},
     true},
    {"qwen3moe",
     "qwen3moe",
     {"expert_count", "expert_used_count", "expert_feed_forward_length", "attention.key_length"},
     {"ffn_gate_inp.weight", "ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight",
      "attn_q_norm.weight"},
     true},
    {"gemma2",
     "gemma2",
     {"attention.sliding_window", "attn_logit_softcapping", "final_logit_softcapping"},
     {"post_attention_norm.weight", "post_ffw_norm.weight"},
     true},
    {"gemma3",
     "gemma3",
     {"attention.sliding_window", "attention.key_length"},
     {"post_attention_norm.weight", "post_ffw_norm.weight", "attn_q_norm.weight"},
     true},
    {"phi3", "phi3", {"rope.dimension_count"}, {"attn_qkv.weight", "ffn_up.weight"}, false},
    {"mixtral",
     "llama",
     {"expert_count", "expert_used_count"},
     {"ffn_gate_inp.weight", "ffn_gate_exps.weight", "ffn_down_exps.weight"},
     false},
};

// Each family's tiny file: the keys and tensors it needs, the engine loads it as that
// architecture (MoE and sliding window included), and a 5-token prompt gives finite
// logits of n_vocab values.
TEST_F(GenModelArch, TinyOfEveryFamilyLoadsAndRuns) {
  for (const ArchCase& c : kCases) {
    SCOPED_TRACE(c.family);
    const auto path = gen(std::string("--arch ") + c.family + " --type f16 --seed 1",
                          std::string("arch_") + c.family + ".gguf");
    auto f = gguf::GgufFile::open(path);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_EQ(f->architecture(), c.gguf_arch);
    const std::string a = std::string(c.gguf_arch) + ".";
    for (const auto& k : c.keys) EXPECT_TRUE(f->has(a + k)) << a + k;
    for (const auto& t : c.tensors) EXPECT_NE(f->tensor("blk.0." + t), nullptr) << t;
    EXPECT_EQ(f->tensor("output.weight") == nullptr, c.tied);

    EngineOptions o;
    o.n_seq_max = 1;
    o.n_threads = 2;
    auto e = Engine::load(path, o);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    const ModelInfo& info = (*e)->info();
    EXPECT_EQ(info.arch, c.gguf_arch);
    EXPECT_EQ(info.n_ctx, 512);
    EXPECT_EQ(info.n_vocab, 512);
    EXPECT_EQ(info.tied_embeddings, c.tied);
    const std::string family = c.family;
    EXPECT_EQ(info.n_expert > 0, family == "qwen3moe" || family == "mixtral");
    EXPECT_EQ(info.n_swa > 0, family == "gemma2" || family == "gemma3");
    if (family == "qwen3" || family == "qwen3moe" || family == "gemma2" || family == "gemma3") {
      EXPECT_EQ(info.head_dim, 32);  // explicit: n_embd / n_head is 16
    }
    std::vector<BatchToken> batch;
    for (int32_t i = 0; i < 5; ++i) batch.push_back({300 + i, i, 0, i == 4});
    std::vector<float> logits;
    ASSERT_TRUE((*e)->forward(batch, logits).ok());
    ASSERT_EQ(logits.size(), 512u);
    for (float v : logits) ASSERT_TRUE(std::isfinite(v));
    EXPECT_NE(logits[0], logits[1]);
  }
}

TEST_F(GenModelArch, ShapeOfTheQwen3MoeTiny) {
  const auto path = gen("--arch qwen3moe --type f32 --seed 1", "moe_shape.gguf");
  auto f = gguf::GgufFile::open(path);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*f->get_u32("qwen3moe.expert_count"), 8u);
  EXPECT_EQ(*f->get_u32("qwen3moe.expert_used_count"), 2u);
  EXPECT_EQ(*f->get_u32("qwen3moe.expert_feed_forward_length"), 64u);
  EXPECT_EQ(*f->get_u32("qwen3moe.feed_forward_length"), 128u);
  EXPECT_EQ(f->tensor("blk.1.ffn_gate_exps.weight")->dims, (std::vector<uint64_t>{64, 64, 8}));
  EXPECT_EQ(f->tensor("blk.1.ffn_down_exps.weight")->dims, (std::vector<uint64_t>{64, 64, 8}));
  EXPECT_EQ(f->tensor("blk.1.ffn_gate_inp.weight")->dims, (std::vector<uint64_t>{64, 8}));
  EXPECT_EQ(f->tensor("blk.1.attn_q.weight")->dims, (std::vector<uint64_t>{64, 128}));
  EXPECT_EQ(f->tensor("blk.1.attn_output.weight")->dims, (std::vector<uint64_t>{128, 64}));
  EXPECT_EQ(f->tensor("blk.1.attn_k_norm.weight")->dims, (std::vector<uint64_t>{32}));
}

// --ctx writes any preset's context_length; the engine then holds that many positions
// by default (its KV fits the default budget).
TEST_F(GenModelArch, CtxSetsTheContextLength) {
  const auto path = gen("--arch qwen3 --ctx 32768 --type f16 --seed 1", "ctx32k.gguf");
  auto f = gguf::GgufFile::open(path);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*f->get_u32("qwen3.context_length"), 32768u);
  EngineOptions o;
  o.n_seq_max = 1;
  auto e = Engine::load(path, o);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  EXPECT_EQ((*e)->info().n_ctx, 32768);
  EXPECT_EQ((*e)->info().n_ctx_train, 32768);
  EXPECT_EQ((*e)->info().kv_bytes, 32768ull * 2 * (*e)->kv_bytes_per_position());
}

TEST_F(GenModelArch, PresetNamesResolvePerFamily) {
  // A llama preset with --arch llama, a name only one family has without --arch.
  auto r = run_cli("gen-model --preset gemma3-1b --arch qwen3 --out " + temp_path("x.gguf"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("'gemma3-1b' for --arch qwen3"));
  EXPECT_THAT(r.err, HasSubstr("qwen3-0.6b"));
  auto r2 = run_cli("gen-model --arch falcon --out " + temp_path("x.gguf"));
  EXPECT_NE(r2.exit_code, 0);
  auto r3 = run_cli("gen-model --arch llama --ctx 0 --out " + temp_path("x.gguf"));
  EXPECT_NE(r3.exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(temp_path("x.gguf")));
  // --help lists every family's presets.
  auto h = run_cli("gen-model --help");
  for (const char* p : {"qwen3/qwen3-0.6b", "qwen3moe/qwen3moe-2.4b", "gemma3/gemma3-1b",
                        "gemma2/gemma2-2b", "phi3/phi-3-mini", "mixtral/mixtral-1.5b"}) {
    EXPECT_THAT(h.out, HasSubstr(p));
  }
}

}  // namespace
}  // namespace hearth::cli
