// `hearth gen-model`: determinism, shapes, tokenizer, weight statistics, and the
// per-tensor type mix compared with llama.cpp's own quantizations in the shared data.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/quant/quant.h"
#include "gguf_cli_util.h"
#include "hearth/engine/fp16.h"
#include "hearth/gguf/gguf.h"

namespace hearth::cli {
namespace {

using ::testing::HasSubstr;
using testing::run_cli;
using testing::temp_path;

const std::string kShared = HEARTH_SHARED_DIR;

class GenModelCli : public testing::GenModelTest {};

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

std::vector<float> tensor_floats(const gguf::TensorInfo& t) {
  std::vector<float> out(t.n_elements);
  engine::dequantize_row(t.type, t.data, out.data(), static_cast<int64_t>(t.n_elements));
  return out;
}

TEST_F(GenModelCli, SameArgumentsGiveIdenticalBytes) {
  const auto a = gen("--preset tiny --type f16 --seed 5", "a.gguf");
  const auto b = gen("--preset tiny --type f16 --seed 5", "b.gguf");
  const auto c = gen("--preset tiny --type f16 --seed 6", "c.gguf");
  const auto bytes_a = file_bytes(a);
  ASSERT_FALSE(bytes_a.empty());
  EXPECT_EQ(bytes_a, file_bytes(b));
  EXPECT_NE(bytes_a, file_bytes(c));
}

// A quantized mix (Q4_K + Q6_K + F32 norms) is as deterministic, and the bytes do not
// depend on how many threads fill the tensors.
TEST_F(GenModelCli, QuantizedBytesDoNotDependOnThreads) {
  const auto one = gen("--preset small --type q4_k_m --seed 3 --threads 1", "q1.gguf");
  const auto three = gen("--preset small --type q4_k_m --seed 3 --threads 3", "q3.gguf");
  const auto all = gen("--preset small --type q4_k_m --seed 3", "qn.gguf");
  const auto bytes = file_bytes(one);
  ASSERT_FALSE(bytes.empty());
  EXPECT_EQ(bytes, file_bytes(three));
  EXPECT_EQ(bytes, file_bytes(all));
}

TEST_F(GenModelCli, TinyShapeAsInspected) {
  const auto path = gen("--preset tiny --type f32 --seed 1", "tiny.gguf");
  auto r = run_cli("inspect --json " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_EQ(j["file_type"], 0);
  const auto& hp = j["hyperparameters"];
  EXPECT_EQ(hp["embedding_length"], 64);
  EXPECT_EQ(hp["block_count"], 2);
  EXPECT_EQ(hp["attention.head_count"], 4);
  EXPECT_EQ(hp["attention.head_count_kv"], 2);
  EXPECT_EQ(hp["feed_forward_length"], 192);
  EXPECT_EQ(hp["context_length"], 512);
  EXPECT_EQ(hp["rope.dimension_count"], 16);
  EXPECT_EQ(hp["rope.freq_base"], 10000.0);
  EXPECT_EQ(hp["attention.layer_norm_rms_epsilon"], 1e-5);
  EXPECT_EQ(j["tokenizer"]["vocab_size"], 512);
  EXPECT_EQ(j["tokenizer"]["model"], "llama");
  EXPECT_EQ(j["tensor_count"], 2 * 9 + 3);
}

TEST_F(GenModelCli, TensorsNamedAndShapedLikeLlamaCpp) {
  const auto path = gen("--preset tiny --type f32 --seed 1", "names.gguf");
  auto f = gguf::GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->tensor("token_embd.weight")->dims, (std::vector<uint64_t>{64, 512}));
  EXPECT_EQ(f->tensor("output.weight")->dims, (std::vector<uint64_t>{64, 512}));
  EXPECT_EQ(f->tensor("output_norm.weight")->dims, (std::vector<uint64_t>{64}));
  for (int i = 0; i < 2; ++i) {
    const std::string blk = "blk." + std::to_string(i) + ".";
    EXPECT_EQ(f->tensor(blk + "attn_q.weight")->dims, (std::vector<uint64_t>{64, 64}));
    EXPECT_EQ(f->tensor(blk + "attn_k.weight")->dims, (std::vector<uint64_t>{64, 32}));
    EXPECT_EQ(f->tensor(blk + "attn_v.weight")->dims, (std::vector<uint64_t>{64, 32}));
    EXPECT_EQ(f->tensor(blk + "attn_output.weight")->dims, (std::vector<uint64_t>{64, 64}));
    EXPECT_EQ(f->tensor(blk + "ffn_gate.weight")->dims, (std::vector<uint64_t>{64, 192}));
    EXPECT_EQ(f->tensor(blk + "ffn_up.weight")->dims, (std::vector<uint64_t>{64, 192}));
    EXPECT_EQ(f->tensor(blk + "ffn_down.weight")->dims, (std::vector<uint64_t>{192, 64}));
    EXPECT_NE(f->tensor(blk + "attn_norm.weight"), nullptr);
    EXPECT_NE(f->tensor(blk + "ffn_norm.weight"), nullptr);
  }
}

TEST_F(GenModelCli, WeightsAreNormalAndNormsAreOne) {
  const auto path = gen("--preset small --type f32 --seed 3", "stats.gguf");
  auto f = gguf::GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const auto w = tensor_floats(*f->tensor("blk.0.ffn_up.weight"));  // 196608 values
  double sum = 0, sq = 0;
  size_t within_1sd = 0;
  for (float v : w) {
    sum += v;
    sq += static_cast<double>(v) * v;
    within_1sd += std::fabs(v) < 0.02f;
  }
  const double mean = sum / w.size();
  const double sd = std::sqrt(sq / w.size() - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.0005);
  EXPECT_NEAR(sd, 0.02, 0.0005);
  EXPECT_NEAR(static_cast<double>(within_1sd) / w.size(), 0.6827, 0.01);
  for (float v : tensor_floats(*f->tensor("blk.3.ffn_norm.weight"))) ASSERT_EQ(v, 1.0f);
  for (float v : tensor_floats(*f->tensor("output_norm.weight"))) ASSERT_EQ(v, 1.0f);
  // Different tensors draw from different streams.
  const auto q = tensor_floats(*f->tensor("blk.0.attn_q.weight"));
  EXPECT_NE(std::vector<float>(w.begin(), w.begin() + 64),
            std::vector<float>(q.begin(), q.begin() + 64));
}

TEST_F(GenModelCli, HalfTypesHoldTheRoundedF32Weights) {
  const auto p32 = gen("--preset tiny --type f32 --seed 9", "w32.gguf");
  const auto p16 = gen("--preset tiny --type f16 --seed 9", "w16.gguf");
  const auto pbf = gen("--preset tiny --type bf16 --seed 9", "wbf.gguf");
  auto f32 = gguf::GgufFile::open(p32);
  auto f16 = gguf::GgufFile::open(p16);
  auto fbf = gguf::GgufFile::open(pbf);
  ASSERT_TRUE(f32.ok() && f16.ok() && fbf.ok());
  const auto& t32 = *f32->tensor("blk.1.attn_v.weight");
  const auto& t16 = *f16->tensor("blk.1.attn_v.weight");
  const auto& tbf = *fbf->tensor("blk.1.attn_v.weight");
  EXPECT_EQ(t16.type, gguf::TensorType::kF16);
  EXPECT_EQ(tbf.type, gguf::TensorType::kBF16);
  EXPECT_EQ(*f16->get_u32("general.file_type"), 1u);
  EXPECT_EQ(*fbf->get_u32("general.file_type"), 32u);
  for (uint64_t i = 0; i < t32.n_elements; ++i) {
    float v;
    uint16_t h, b;
    std::memcpy(&v, t32.data + 4 * i, 4);
    std::memcpy(&h, t16.data + 2 * i, 2);
    std::memcpy(&b, tbf.data + 2 * i, 2);
    ASSERT_EQ(h, fp32_to_fp16(v)) << i;
    ASSERT_EQ(b, fp32_to_bf16(v)) << i;
  }
}

TEST_F(GenModelCli, QuantizedTypesApproximateTheF32Weights) {
  const auto p32 = gen("--preset small --type f32 --seed 4", "q32.gguf");
  auto f32 = gguf::GgufFile::open(p32);
  ASSERT_TRUE(f32.ok());
  const auto ref = tensor_floats(*f32->tensor("blk.1.attn_q.weight"));
  const std::pair<const char*, double> kTypes[] = {
      {"q8_0", 0.0005}, {"q4_0", 0.01}, {"q4_k_m", 0.01}};
  for (const auto& [type, tol] : kTypes) {
    SCOPED_TRACE(type);
    const auto p =
        gen(std::string("--preset small --seed 4 --type ") + type, std::string(type) + ".gguf");
    auto f = gguf::GgufFile::open(p);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    const auto got = tensor_floats(*f->tensor("blk.1.attn_q.weight"));
    ASSERT_EQ(got.size(), ref.size());
    double max_err = 0;
    for (size_t i = 0; i < got.size(); ++i)
      max_err = std::max(max_err, std::fabs(double(got[i]) - ref[i]));
    EXPECT_LT(max_err, tol);
    EXPECT_GT(max_err, 0.0);
  }
}

// The small preset has the shape of reference/models/small-llama-*: our type mix
// must pick, tensor by tensor, what llama.cpp's quantizer picked there.
TEST_F(GenModelCli, TypeMixMatchesLlamaCpp) {
  for (const char* type : {"q4_k_m", "q4_0", "q8_0", "f16", "bf16"}) {
    const std::string ref_path = kShared + "/reference/models/small-llama-" + type + ".gguf";
    if (!std::filesystem::exists(ref_path)) continue;
    SCOPED_TRACE(type);
    const auto p =
        gen(std::string("--preset small --seed 1 --type ") + type, std::string("mix_") + type);
    auto ours = gguf::GgufFile::open(p);
    auto ref = gguf::GgufFile::open(ref_path);
    ASSERT_TRUE(ours.ok() && ref.ok());
    EXPECT_EQ(*ours->get_u32("general.file_type"), *ref->get_u32("general.file_type"));
    ASSERT_EQ(ours->tensors().size(), ref->tensors().size());
    for (const auto& t : ref->tensors()) {
      const gguf::TensorInfo* mine = ours->tensor(t.name);
      ASSERT_NE(mine, nullptr) << t.name;
      EXPECT_EQ(mine->dims, t.dims) << t.name;
      EXPECT_EQ(gguf::tensor_type_name(mine->type), gguf::tensor_type_name(t.type)) << t.name;
    }
  }
}

TEST_F(GenModelCli, VocabFromCopiesTokenizerKeys) {
  const std::string src = kShared + "/models/llama-2-tiny-random.gguf";
  if (!std::filesystem::exists(src)) GTEST_SKIP() << "SKIPPED: " << src << " absent";
  const auto p = gen("--preset tiny --type f16 --seed 2 --vocab-from " + src, "vocab.gguf");
  auto ours = gguf::GgufFile::open(p);
  auto ref = gguf::GgufFile::open(src);
  ASSERT_TRUE(ours.ok() && ref.ok());
  int copied = 0;
  for (const auto& [key, value] : ref->metadata()) {
    if (key.rfind("tokenizer.", 0) != 0) continue;
    const gguf::Value* v = ours->find(key);
    ASSERT_NE(v, nullptr) << key;
    EXPECT_TRUE(*v == value) << key;
    ++copied;
  }
  EXPECT_GE(copied, 4);
  EXPECT_EQ(*ours->get_u32("llama.vocab_size"), 32000u);
  EXPECT_EQ(ours->tensor("token_embd.weight")->dims, (std::vector<uint64_t>{64, 32000}));
  EXPECT_EQ(ours->tensor("output.weight")->dims, (std::vector<uint64_t>{64, 32000}));
}

TEST_F(GenModelCli, BuiltinVocabLayout) {
  const auto p = gen("--preset tiny --seed 1", "builtin.gguf");
  auto f = gguf::GgufFile::open(p);
  ASSERT_TRUE(f.ok());
  const auto tokens = *f->get_string_array("tokenizer.ggml.tokens");
  const auto types = *f->get_i32_array("tokenizer.ggml.token_type");
  const auto scores = *f->get_f32_array("tokenizer.ggml.scores");
  ASSERT_EQ(tokens.size(), 512u);
  ASSERT_EQ(types.size(), 512u);
  ASSERT_EQ(scores.size(), 512u);
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[2], "</s>");
  EXPECT_EQ(tokens[3], "<0x00>");
  EXPECT_EQ(tokens[258], "<0xFF>");
  EXPECT_EQ(tokens[259], "\xE2\x96\x81");
  for (int i = 3; i <= 258; ++i) EXPECT_EQ(types[i], 6) << i;
  EXPECT_EQ(types[0], 2);
  EXPECT_EQ(types[1], 3);
  EXPECT_EQ(types[300], 1);
  std::set<std::string> unique(tokens.begin(), tokens.end());
  EXPECT_EQ(unique.size(), tokens.size());
  EXPECT_EQ(*f->get_u32("tokenizer.ggml.bos_token_id"), 1u);
  EXPECT_EQ(*f->get_u32("tokenizer.ggml.eos_token_id"), 2u);
}

TEST_F(GenModelCli, BadArguments) {
  auto r = run_cli("gen-model --preset huge --out " + temp_path("x.gguf"));
  EXPECT_NE(r.exit_code, 0);
  auto r2 = run_cli("gen-model --preset tiny --type q3_k --out " + temp_path("x.gguf"));
  EXPECT_NE(r2.exit_code, 0);
  auto r3 = run_cli("gen-model --preset tiny --vocab-from /nonexistent.gguf --out " +
                    temp_path("x.gguf"));
  EXPECT_EQ(r3.exit_code, 1);
  EXPECT_THAT(r3.err, HasSubstr("/nonexistent.gguf"));
  EXPECT_FALSE(std::filesystem::exists(temp_path("x.gguf")));
}

}  // namespace
}  // namespace hearth::cli
