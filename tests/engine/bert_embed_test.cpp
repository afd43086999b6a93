// The bert encoder and Engine::embed_batch on a gen-model bert (random F32 weights):
// agreement with a plain double-precision evaluation of the same graph written here
// from llama.cpp's LLM_ARCH_BERT definition (no F16 roundings, no kernels), batch
// invariance bit for bit, pooling kinds, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gen_model_test_util.h"
#include "hearth/engine/embedding.h"
#include "hearth/engine/engine.h"
#include "hearth/engine/tokenizer.h"
#include "hearth/gguf/gguf.h"

namespace hearth {
namespace {

using Vec = std::vector<double>;
using Inputs = std::vector<std::vector<int32_t>>;

Inputs one(const std::vector<int32_t>& in) {
  return Inputs{in};
}

// The reference: every tensor read as F32 from the file, every sum in double.
class BertReference {
 public:
  explicit BertReference(const gguf::GgufFile& f) : f_(f) {
    e_ = static_cast<int>(*f.get_u64("bert.embedding_length"));
    heads_ = static_cast<int>(*f.get_u64("bert.attention.head_count"));
    layers_ = static_cast<int>(*f.get_u64("bert.block_count"));
    eps_ = *f.get_f32("bert.attention.layer_norm_epsilon");
  }

  // The last layer's hidden state of every token (n x e).
  std::vector<Vec> hidden(const std::vector<int32_t>& tokens) const {
    const size_t n = tokens.size();
    std::vector<Vec> x(n, Vec(e_));
    for (size_t t = 0; t < n; ++t) {
      for (int i = 0; i < e_; ++i) {
        x[t][i] = at("token_embd.weight", tokens[t] * e_ + i) + at("token_types.weight", i) +
                  at("position_embd.weight", static_cast<int64_t>(t) * e_ + i);
      }
      x[t] = norm(x[t], "token_embd_norm");
    }
    const int hd = e_ / heads_;
    for (int l = 0; l < layers_; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      std::vector<Vec> q(n), k(n), v(n), h(n);
      for (size_t t = 0; t < n; ++t) {
        q[t] = linear(p + "attn_q", x[t]);
        k[t] = linear(p + "attn_k", x[t]);
        v[t] = linear(p + "attn_v", x[t]);
      }
      for (size_t t = 0; t < n; ++t) {
        Vec att(e_, 0.0);
        for (int hh = 0; hh < heads_; ++hh) {
          Vec s(n);
          double mx = -1e300, sum = 0;
          for (size_t j = 0; j < n; ++j) {  // every position: non-causal
            double d = 0;
            for (int c = 0; c < hd; ++c) d += q[t][hh * hd + c] * k[j][hh * hd + c];
            s[j] = d / std::sqrt(static_cast<double>(hd));
            mx = std::max(mx, s[j]);
          }
          for (size_t j = 0; j < n; ++j) sum += (s[j] = std::exp(s[j] - mx));
          for (size_t j = 0; j < n; ++j)
            for (int c = 0; c < hd; ++c) att[hh * hd + c] += s[j] / sum * v[j][hh * hd + c];
        }
        Vec o = linear(p + "attn_output", att);
        for (int i = 0; i < e_; ++i) o[i] += x[t][i];
        h[t] = norm(o, p + "attn_output_norm");
        Vec u = linear(p + "ffn_up", h[t]);
        for (double& z : u) {  // tanh GELU, as ggml
          z = 0.5 * z * (1 + std::tanh(0.7978845608028654 * z * (1 + 0.044715 * z * z)));
        }
        Vec d = linear(p + "ffn_down", u);
        for (int i = 0; i < e_; ++i) d[i] += h[t][i];
        x[t] = norm(d, p + "layer_output_norm");
      }
    }
    return x;
  }

 private:
  double at(const std::string& name, int64_t i) const {
    const gguf::TensorInfo* t = f_.tensor(name);
    float v;
    std::memcpy(&v, t->data + i * 4, 4);
    return v;
  }
  Vec linear(const std::string& name, const Vec& x) const {
    const gguf::TensorInfo* w = f_.tensor(name + ".weight");
    const int64_t cols = static_cast<int64_t>(w->dims[0]), rows = static_cast<int64_t>(w->dims[1]);
    Vec y(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      double s = at(name + ".bias", r);
      for (int64_t c = 0; c < cols; ++c) s += at(name + ".weight", r * cols + c) * x[c];
      y[r] = s;
    }
    return y;
  }
  Vec norm(const Vec& x, const std::string& name) const {
    double mean = 0, var = 0;
    for (double z : x) mean += z;
    mean /= e_;
    for (double z : x) var += (z - mean) * (z - mean);
    var /= e_;
    Vec y(e_);
    for (int i = 0; i < e_; ++i) {
      y[i] =
          (x[i] - mean) / std::sqrt(var + eps_) * at(name + ".weight", i) + at(name + ".bias", i);
    }
    return y;
  }

  const gguf::GgufFile& f_;
  int e_ = 0, heads_ = 0, layers_ = 0;
  double eps_ = 0;
};

class BertEmbedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    path_ = testing::generated_model("tiny", "f32", &why, "bert");
    if (path_.empty()) GTEST_SKIP() << "SKIPPED: " << why;
    EngineOptions o;
    o.n_threads = 2;
    o.n_batch = 64;
    auto e = Engine::load(path_, o);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    engine_ = std::move(*e);
  }
  std::vector<int32_t> tokens(const std::string& text) {
    auto t = engine_->tokenizer().encode(text, true, false);
    EXPECT_TRUE(t.ok());
    return *t;
  }
  std::string path_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(BertEmbedTest, LoadsAsAnEncoderWithItsPooling) {
  const ModelInfo& mi = engine_->info();
  EXPECT_EQ(mi.arch, "bert");
  EXPECT_TRUE(mi.encoder);
  EXPECT_FALSE(mi.causal);
  EXPECT_EQ(mi.pooling, Pooling::kCls);  // gen-model writes bert.pooling_type 2
  std::vector<float> logits;
  const BatchToken t{2, 0, 0, true};
  EXPECT_EQ(engine_->forward(std::span(&t, 1), logits).code(), ErrorCode::kUnsupported);
}

TEST_F(BertEmbedTest, AgreesWithAPlainDoubleEvaluation) {
  auto file = gguf::GgufFile::open(path_);
  ASSERT_TRUE(file.ok());
  const BertReference ref(*file);
  const std::vector<int32_t> in = tokens("the quick brown fox jumps over the lazy dog");
  ASSERT_GT(in.size(), 4u);
  const std::vector<Vec> want = ref.hidden(in);
  auto got = engine_->embed_batch(one(in), Pooling::kNone);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  const size_t e = static_cast<size_t>(engine_->info().n_embd);
  ASSERT_EQ((*got)[0].size(), in.size() * e);
  double max_diff = 0, dot = 0, na = 0, nb = 0;
  for (size_t t = 0; t < in.size(); ++t) {
    for (size_t i = 0; i < e; ++i) {
      const double a = (*got)[0][t * e + i], b = want[t][i];
      max_diff = std::max(max_diff, std::abs(a - b));
      dot += a * b;
      na += a * a;
      nb += b * b;
    }
  }
  // hearth rounds Q, K, V and the attention probabilities to F16 (as llama.cpp's KV
  // cache does); the values are LayerNorm outputs of size ~1.
  EXPECT_LT(max_diff, 2e-2);
  EXPECT_GT(dot / std::sqrt(na * nb), 0.9999);
}

TEST_F(BertEmbedTest, AnInputsVectorDoesNotDependOnItsBatch) {
  const std::vector<std::vector<int32_t>> ins = {
      tokens("hello world"), tokens("a much longer sentence about nothing in particular at all"),
      tokens("x"), tokens("hello world again")};
  for (Pooling p : {Pooling::kMean, Pooling::kCls, Pooling::kLast, Pooling::kNone}) {
    auto together = engine_->embed_batch(ins, p);
    ASSERT_TRUE(together.ok()) << together.status().to_string();
    for (size_t i = 0; i < ins.size(); ++i) {
      auto alone = engine_->embed_batch(one(ins[i]), p);
      ASSERT_TRUE(alone.ok());
      EXPECT_EQ((*alone)[0], (*together)[i]) << pooling_name(p) << " input " << i;
    }
    // Reversed order: other neighbours, other sequences, same bits.
    std::vector<std::vector<int32_t>> rev(ins.rbegin(), ins.rend());
    auto reversed = engine_->embed_batch(rev, p);
    ASSERT_TRUE(reversed.ok());
    for (size_t i = 0; i < ins.size(); ++i)
      EXPECT_EQ((*reversed)[ins.size() - 1 - i], (*together)[i]) << pooling_name(p);
  }
}

TEST_F(BertEmbedTest, PoolingKindsPickTheirRows) {
  const std::vector<int32_t> in = tokens("pooling picks rows");
  auto none = engine_->embed_batch(one(in), Pooling::kNone);
  auto cls = engine_->embed_batch(one(in), Pooling::kCls);
  auto last = engine_->embed_batch(one(in), Pooling::kLast);
  auto mean = engine_->embed_batch(one(in), Pooling::kMean);
  ASSERT_TRUE(none.ok() && cls.ok() && last.ok() && mean.ok());
  const size_t e = static_cast<size_t>(engine_->info().n_embd), n = in.size();
  const std::vector<float>& rows = (*none)[0];
  EXPECT_EQ((*cls)[0], std::vector<float>(rows.begin(), rows.begin() + e));
  EXPECT_EQ((*last)[0], std::vector<float>(rows.end() - e, rows.end()));
  EXPECT_NE((*mean)[0], (*cls)[0]);
  for (size_t i = 0; i < e; ++i) {
    double s = 0;
    for (size_t t = 0; t < n; ++t) s += rows[t * e + i];
    EXPECT_NEAR((*mean)[0][i], s / n, 1e-6);
  }
}

TEST_F(BertEmbedTest, ErrorsNameTheInput) {
  const std::vector<std::vector<int32_t>> empty = {{2, 3}, {}};
  auto r = engine_->embed_batch(empty, Pooling::kMean);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("input 1"), std::string::npos) << r.status().message();
  // Non-causal attention needs a whole input in one pass: longer than n_batch (64) fails.
  const std::vector<std::vector<int32_t>> longer = {std::vector<int32_t>(65, 7)};
  r = engine_->embed_batch(longer, Pooling::kMean);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("n_batch"), std::string::npos) << r.status().message();
  const std::vector<std::vector<int32_t>> bad = {{2, 1 << 20}};
  r = engine_->embed_batch(bad, Pooling::kMean);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("vocabulary"), std::string::npos);
}

// Decoder embeddings (llama): packed into several private sequences per pass, an input's
// mean and last-token vectors are the bits it gets alone; a causal input longer than
// n_batch is split into chunks and still works.
TEST(DecoderEmbedBatch, PackingDoesNotChangeTheBits) {
  std::string why;
  const std::string path = testing::generated_model("tiny", "f32", &why, "llama");
  if (path.empty()) GTEST_SKIP() << "SKIPPED: " << why;
  EngineOptions o;
  o.n_threads = 2;
  o.n_batch = 32;
  o.n_embed_seq = 4;
  auto e = Engine::load(path, o);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  EXPECT_TRUE((*e)->info().causal);
  EXPECT_EQ((*e)->info().n_embed_seq, 4);
  Inputs ins;
  for (int i = 0; i < 6; ++i) {
    std::vector<int32_t> t;
    for (int k = 0; k < 3 + 5 * i; ++k) t.push_back(10 + (k * 7 + i) % 300);
    ins.push_back(t);
  }
  for (Pooling p : {Pooling::kMean, Pooling::kLast}) {
    auto together = (*e)->embed_batch(ins, p);
    ASSERT_TRUE(together.ok()) << together.status().to_string();
    for (size_t i = 0; i < ins.size(); ++i) {
      auto alone = (*e)->embed_batch(one(ins[i]), p);
      ASSERT_TRUE(alone.ok());
      EXPECT_EQ((*alone)[0], (*together)[i]) << pooling_name(p) << " input " << i;
    }
  }
  auto last = (*e)->embed_batch(ins, Pooling::kLast);
  auto mean = (*e)->embed_batch(ins, Pooling::kMean);
  EXPECT_NE((*last)[1], (*mean)[1]);
  const Inputs longer = {std::vector<int32_t>(40, 11)};  // > n_batch: chunks, causal
  EXPECT_TRUE((*e)->embed_batch(longer, Pooling::kMean).ok());
}

TEST(EmbeddingNormalize, MatchesLlamaServersNorms) {
  const std::vector<float> v = {3.0f, -4.0f, 0.0f, 12.0f};
  auto norm_of = [&](int32_t p) {
    std::vector<float> w = v;
    EXPECT_TRUE(normalize_embedding(w, p).ok());
    return w;
  };
  const auto l2 = norm_of(2);
  EXPECT_NEAR(l2[3], 12.0 / 13.0, 1e-7);
  const auto l1 = norm_of(1);
  EXPECT_NEAR(std::abs(l1[0]) + std::abs(l1[1]) + std::abs(l1[3]), 1.0, 1e-6);
  const auto mx = norm_of(0);  // int16 range: the largest magnitude becomes 32760
  EXPECT_NEAR(mx[3], 32760.0, 1e-2);
  const auto p3 = norm_of(3);
  EXPECT_NEAR(
      std::pow(27.0 / 27 * std::pow(p3[0], 3) + std::pow(std::abs(p3[1]), 3) + std::pow(p3[3], 3),
               1.0 / 3),
      1.0, 1e-6);
  EXPECT_EQ(norm_of(-1), v);
  std::vector<float> zero(4, 0.0f);
  EXPECT_TRUE(normalize_embedding(zero, 2).ok());
  EXPECT_EQ(zero, std::vector<float>(4, 0.0f));
  std::vector<float> w = v;
  const Status s = normalize_embedding(w, -2);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("embd_normalize"), std::string::npos);
}

}  // namespace
}  // namespace hearth
