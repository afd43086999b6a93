// /v1/embeddings through the real server, runtime and engine on a gen-model bert
// (WordPiece vocabulary, non-causal encoder): several inputs, pooling, normalisation,
// dimensions, base64, token arrays, and the 400s.
#include <httplib.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine/gen_model_test_util.h"
#include "server/http_server.h"
#include "server/runtime_service.h"
#include "stub_server.h"

namespace hearth::server {
namespace {

using nlohmann::json;

double norm2(const json& v) {
  double s = 0;
  for (const json& x : v) s += x.get<double>() * x.get<double>();
  return std::sqrt(s);
}

class EmbeddingsHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    const std::string path = ::hearth::testing::generated_model("tiny", "f32", &why, "bert");
    if (path.empty()) GTEST_SKIP() << "SKIPPED: " << why;
    config_.port = 0;
    runtime::ModelConfig m;
    m.id = "bert";
    m.model_path = path;
    m.n_batch = 64;
    config_.models.push_back(m);
    const Status started = server_.start_engine(config_);
    ASSERT_TRUE(started.ok()) << started.to_string();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_.port());
    client_->set_read_timeout(30, 0);
  }
  void TearDown() override {
    client_.reset();
    server_.stop();
  }
  // The reply of a request that must succeed.
  json ok(json body) {
    body["model"] = "bert";
    auto r = client_->Post("/v1/embeddings", body.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no response");
    return r && r->status == 200 ? json::parse(r->body) : json::object();
  }
  // A 400 whose error names `field`.
  void rejected(json body, const std::string& field) {
    body["model"] = "bert";
    auto r = client_->Post("/v1/embeddings", body.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_NE(r->body.find(field), std::string::npos) << r->body;
  }

  ServerConfig config_;
  testing::StubServer server_;  // on the real engine backend (start_engine)
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(EmbeddingsHttpTest, SeveralInputsAreEachTheirOwn) {
  const json batch = ok({{"input", {"hello world", "a second, longer sentence", "x"}}});
  ASSERT_EQ(batch["data"].size(), 3u);
  // Each item equals the same text sent alone, bit for bit (the JSON floats round-trip).
  const char* texts[] = {"hello world", "a second, longer sentence", "x"};
  for (size_t i = 0; i < 3; ++i) {
    const json alone = ok({{"input", texts[i]}});
    EXPECT_EQ(alone["data"][0]["embedding"], batch["data"][i]["embedding"]) << texts[i];
    EXPECT_NEAR(norm2(batch["data"][i]["embedding"]), 1.0, 1e-5);
  }
  EXPECT_NE(batch["data"][0]["embedding"], batch["data"][2]["embedding"]);
  // [CLS] hello world [SEP]: usage counts the specials.
  const json one = ok({{"input", "hello world"}});
  EXPECT_GE(one["usage"]["prompt_tokens"].get<int>(), 4);
}

TEST_F(EmbeddingsHttpTest, PoolingNormalisationAndDimensions) {
  const json cls = ok({{"input", "pool me"}, {"pooling", "cls"}});
  const json mean = ok({{"input", "pool me"}, {"pooling", "mean"}});
  const json dflt = ok({{"input", "pool me"}});
  EXPECT_EQ(dflt["data"][0]["embedding"], cls["data"][0]["embedding"]);  // the file says cls
  EXPECT_NE(mean["data"][0]["embedding"], cls["data"][0]["embedding"]);
  const json none = ok({{"input", "pool me"}, {"pooling", "none"}});
  const json& rows = none["data"][0]["embedding"];
  ASSERT_EQ(rows.size(), none["usage"]["prompt_tokens"].get<size_t>());
  EXPECT_EQ(rows[0], cls["data"][0]["embedding"]);  // token 0 is [CLS]
  // Unnormalised vs max-abs vs taxicab.
  const json raw = ok({{"input", "pool me"}, {"embd_normalize", -1}});
  const json l1 = ok({{"input", "pool me"}, {"embd_normalize", 1}});
  const json mx = ok({{"input", "pool me"}, {"embd_normalize", 0}});
  double s1 = 0, top = 0;
  for (const json& x : l1["data"][0]["embedding"]) s1 += std::abs(x.get<double>());
  for (const json& x : mx["data"][0]["embedding"]) top = std::max(top, std::abs(x.get<double>()));
  EXPECT_NEAR(s1, 1.0, 1e-4);
  EXPECT_NEAR(top, 32760.0, 0.5);
  EXPECT_GT(std::abs(norm2(raw["data"][0]["embedding"]) - 1.0), 1e-3);
  // dimensions: the first N values, renormalised.
  const json d16 = ok({{"input", "pool me"}, {"dimensions", 16}});
  const json& v16 = d16["data"][0]["embedding"];
  ASSERT_EQ(v16.size(), 16u);
  EXPECT_NEAR(norm2(v16), 1.0, 1e-5);
  const json& full = raw["data"][0]["embedding"];
  double n = 0;
  for (size_t i = 0; i < 16; ++i) n += full[i].get<double>() * full[i].get<double>();
  EXPECT_NEAR(v16[3].get<double>(), full[3].get<double>() / std::sqrt(n), 1e-5);
}

TEST_F(EmbeddingsHttpTest, Base64AndTokenArrays) {
  const json f = ok({{"input", "bytes"}});
  const json b = ok({{"input", "bytes"}, {"encoding_format", "base64"}});
  const std::string s = b["data"][0]["embedding"];
  // 4 bytes per float, in base64.
  EXPECT_EQ(s.size(), (f["data"][0]["embedding"].size() * 4 + 2) / 3 * 4);
  // Token arrays are used as given (no specials added).
  const json ids = {2, 100, 3};  // [CLS] a-piece [SEP] of the built-in vocabulary
  const json t = ok({{"input", json::array({ids})}});
  EXPECT_EQ(t["usage"]["prompt_tokens"], 3);
  const json t2 = ok({{"input", json::array({2, 100, 3})}});
  EXPECT_EQ(t2["data"][0]["embedding"], t["data"][0]["embedding"]);
}

TEST_F(EmbeddingsHttpTest, BadRequestsNameTheirField) {
  rejected({{"input", "x"}, {"pooling", "max"}}, "pooling");
  rejected({{"input", "x"}, {"embd_normalize", -2}}, "embd_normalize");
  rejected({{"input", "x"}, {"dimensions", 0}}, "dimensions");
  rejected({{"input", "x"}, {"dimensions", 65}}, "dimensions");
  rejected({{"input", json::array({json::array({1, 1 << 20})})}}, "input");
  rejected({{"input", json::array({json::array()})}}, "input");
  // Longer than n_batch (64): bert's non-causal attention needs one pass.
  std::string long_text;
  for (int i = 0; i < 80; ++i) long_text += "a ";
  rejected({{"input", long_text}}, "input");
  // An embedding model serves no generation.
  auto r = client_->Post("/v1/completions",
                         json{{"model", "bert"}, {"prompt", "hi"}, {"max_tokens", 2}}.dump(),
                         "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find("embedding model"), std::string::npos) << r->body;
}

}  // namespace
}  // namespace hearth::server
