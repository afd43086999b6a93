// LoRA adapters over HTTP, on the real server, runtime and engine (stories260K and random
// adapters from `hearth gen-model --lora-for`): llama-server's GET / POST /lora-adapters
// and `lora` request field, hearth's /hearth/models/{id}/lora load / list / unload, and
// the 400s that name a bad field. Also the TOML `lora = [{path, scale}]` and --lora's
// FILE[:SCALE] parser.
#include <httplib.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "server/http_server.h"
#include "server/model_settings.h"
#include "server/runtime_service.h"
#include "stub_server.h"

namespace hearth::server {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string kModel = std::string(HEARTH_SHARED_DIR) + "/models/stories260K.gguf";

class LoraHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kModel)) GTEST_SKIP() << "SKIPPED: stories260K absent";
    if (!fs::exists(HEARTH_CLI_PATH)) GTEST_SKIP() << "no hearth binary";
    dir_ = fs::temp_directory_path() / ("hearth_lora_http_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    for (int seed : {11, 12}) {
      const std::string cmd = std::string(HEARTH_CLI_PATH) + " gen-model --lora-for " + kModel +
                              " --rank 4 --alpha 8 --seed " + std::to_string(seed) + " --out " +
                              (dir_ / ("a" + std::to_string(seed) + ".gguf")).string() +
                              " > /dev/null 2>&1";
      ASSERT_EQ(std::system(cmd.c_str()), 0);
    }
    config_.port = 0;
    config_.models_dir = dir_.string();
    runtime::ModelConfig m = default_model_config();
    m.id = "stories";
    m.model_path = kModel;
    m.n_ctx = 512;
    m.n_seq_max = 2;
    m.adapters = {runtime::AdapterSpec{(dir_ / "a11.gguf").string(), 1.0f}};
    config_.models.push_back(m);
    const Status started = server_.start_engine(config_);
    ASSERT_TRUE(started.ok()) << started.to_string();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_.port());
    client_->set_read_timeout(60, 0);
  }
  void TearDown() override {
    server_.stop();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::pair<int, json> post(const std::string& path, const json& body) {
    auto r = client_->Post(path.c_str(), body.dump(), "application/json");
    if (!r) return {0, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  std::pair<int, json> get(const std::string& path) {
    auto r = client_->Get(path.c_str());
    if (!r) return {0, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  // The greedy completion's per-token logprobs (what an adapter changes).
  json logprobs(const json& extra = json::object()) {
    json body = {{"model", "stories"},
                 {"prompt", "Once upon a time, there was a little girl"},
                 {"max_tokens", 6},
                 {"temperature", 0},
                 {"logprobs", 1}};
    body.update(extra);
    auto [status, reply] = post("/v1/completions", body);
    EXPECT_EQ(status, 200) << reply.dump();
    return reply["choices"][0]["logprobs"]["token_logprobs"];
  }
  void expect_400_naming(const json& body, const std::string& needle) {
    json b = {{"model", "stories"}, {"prompt", "Hi"}, {"max_tokens", 2}};
    b.update(body);
    auto [status, reply] = post("/v1/completions", b);
    EXPECT_EQ(status, 400) << reply.dump();
    EXPECT_NE(reply.dump().find(needle), std::string::npos) << reply.dump();
  }

  fs::path dir_;
  ServerConfig config_;
  testing::StubServer server_;  // on the real engine backend (start_engine)
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(LoraHttpTest, LlamaServerRoutesAndRequestField) {
  auto [status, list] = get("/lora-adapters");
  ASSERT_EQ(status, 200) << list.dump();
  ASSERT_TRUE(list.is_array());
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["id"], 0);
  EXPECT_EQ(list[0]["scale"], 1.0);
  EXPECT_EQ(list[0]["path"], (dir_ / "a11.gguf").string());

  const json by_model = logprobs();
  const json base = logprobs({{"lora", json::array()}});
  const json explicit_one = logprobs({{"lora", {{{"id", 0}, {"scale", 1.0}}}}});
  EXPECT_NE(by_model, base);
  EXPECT_EQ(by_model, explicit_one);
  // The same on chat.
  json chat = {{"model", "stories"},
               {"messages", {{{"role", "user"}, {"content", "Hi"}}}},
               {"max_tokens", 2},
               {"lora", {{{"id", 0}, {"scale", 0.5}}}}};
  EXPECT_EQ(post("/v1/chat/completions", chat).first, 200);

  // POST /lora-adapters: listed adapters get their scale, the others 0.
  auto [set_status, set_reply] = post("/lora-adapters", json::array());
  ASSERT_EQ(set_status, 200) << set_reply.dump();
  EXPECT_EQ(set_reply["success"], true);
  EXPECT_EQ(get("/lora-adapters").second[0]["scale"], 0.0);
  EXPECT_EQ(logprobs(), base);
  ASSERT_EQ(post("/lora-adapters", {{{"id", 0}, {"scale", 1.0}}}).first, 200);
  EXPECT_EQ(logprobs(), by_model);
  // Bad ids and shapes are 400s naming the field.
  EXPECT_EQ(post("/lora-adapters", {{{"id", 7}, {"scale", 1.0}}}).first, 400);
  expect_400_naming({{"lora", {{{"id", 7}, {"scale", 1.0}}}}}, "lora[0].id");
  expect_400_naming({{"lora", "adapter.gguf"}}, "lora");
  expect_400_naming({{"lora", {{{"id", 0}, {"weight", 1.0}}}}}, "lora[0].weight");
  expect_400_naming({{"lora", {{{"id", 0}, {"scale", "high"}}}}}, "lora[0].scale");
}

TEST_F(LoraHttpTest, HearthRoutesLoadListUnload) {
  auto [status, loaded] =
      post("/hearth/models/stories/lora", {{"path", "a12.gguf"}, {"scale", 0.5}});
  ASSERT_EQ(status, 201) << loaded.dump();
  EXPECT_EQ(loaded["id"], 1);
  EXPECT_EQ(loaded["scale"], 0.5);
  EXPECT_EQ(loaded["sha256"].get<std::string>().size(), 64u);
  auto [list_status, list] = get("/hearth/models/stories/lora");
  ASSERT_EQ(list_status, 200);
  ASSERT_EQ(list["adapters"].size(), 2u);
  // Both at their model scales differ from adapter 0 alone.
  const json both = logprobs();
  const json first = logprobs({{"lora", {{{"id", 0}, {"scale", 1.0}}}}});
  EXPECT_NE(both, first);
  ASSERT_EQ(post("/hearth/models/stories/lora/scales", {{{"id", 0}, {"scale", 1.0}}}).first, 200);
  EXPECT_EQ(logprobs(), first);
  // A file that is not an adapter, one outside --models-dir, an unknown key.
  {
    std::ofstream(dir_ / "junk.gguf") << "not a gguf";
    auto [s, e] = post("/hearth/models/stories/lora", {{"path", "junk.gguf"}});
    EXPECT_EQ(s, 400) << e.dump();
  }
  EXPECT_EQ(post("/hearth/models/stories/lora", {{"path", kModel}}).first, 400);
  auto [s_key, e_key] = post("/hearth/models/stories/lora", {{"path", "a12.gguf"}, {"rank", 4}});
  EXPECT_EQ(s_key, 400);
  EXPECT_EQ(e_key["error"]["param"], "rank");
  // Unload.
  auto del = client_->Delete("/hearth/models/stories/lora/1");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 200) << del->body;
  auto del2 = client_->Delete("/hearth/models/stories/lora/1");
  ASSERT_TRUE(del2);
  EXPECT_EQ(del2->status, 404);
  EXPECT_EQ(get("/hearth/models/stories/lora").second["adapters"].size(), 1u);
  EXPECT_EQ(get("/hearth/models/nope/lora").first, 404);
}

TEST(LoraSettings, TomlListAndFlagSyntax) {
  ServerConfig c;
  Status s = apply_config_toml(
      "[[models]]\nid = \"m\"\npath = \"m.gguf\"\n"
      "lora = [{path = \"a.gguf\"}, {path = \"b.gguf\", scale = 0.25}]\n",
      c);
  ASSERT_TRUE(s.ok()) << s.to_string();
  ASSERT_EQ(c.models.size(), 1u);
  ASSERT_EQ(c.models[0].adapters.size(), 2u);
  EXPECT_EQ(c.models[0].adapters[0].path, "a.gguf");
  EXPECT_EQ(c.models[0].adapters[0].scale, 1.0f);
  EXPECT_EQ(c.models[0].adapters[1].scale, 0.25f);
  ServerConfig bad;
  Status e = apply_config_toml(
      "[[models]]\nid = \"m\"\npath = \"m.gguf\"\nlora = [{path = \"a.gguf\", alpha = 2}]\n", bad);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.message().find("lora[0].alpha"), std::string::npos) << e.message();

  auto plain = parse_adapter_arg("/x/a.gguf");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->path, "/x/a.gguf");
  EXPECT_EQ(plain->scale, 1.0f);
  auto scaled = parse_adapter_arg("/x/a.gguf:0.5");
  ASSERT_TRUE(scaled.ok());
  EXPECT_EQ(scaled->path, "/x/a.gguf");
  EXPECT_EQ(scaled->scale, 0.5f);
  auto colon = parse_adapter_arg("c:/x/a.gguf");  // not a number after the colon
  ASSERT_TRUE(colon.ok());
  EXPECT_EQ(colon->path, "c:/x/a.gguf");
  EXPECT_FALSE(parse_adapter_arg("a.gguf:nan").ok());
}

}  // namespace
}  // namespace hearth::server
