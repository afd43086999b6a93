// The tokenizer seam over the real runtime: the HTTP server in process over
// RuntimeService with the engine backend and real GGUF files. /hearth/tokenize honours
// parse_special, /hearth/models reports the model's own vocabulary and embedding sizes,
// an out-of-vocabulary prompt token is a 400 naming the vocabulary (not a context
// overflow), and chat message content never becomes control tokens.
#include <httplib.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "chatml_model.h"
#include "hearth/gguf/gguf.h"
#include "server/generation.h"
#include "server/http_server.h"
#include "server/runtime_service.h"
#include "stub_server.h"

namespace hearth::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string stories_path() {
  return std::string(HEARTH_SHARED_DIR) + "/models/stories260K.gguf";
}

class RuntimeSeamTest : public ::testing::Test {
 protected:
  void start(const std::string& id, const std::string& path) {
    config_.port = 0;
    runtime::ModelConfig m;
    m.id = id;
    m.model_path = path;
    m.n_ctx = 256;
    m.n_seq_max = 1;
    config_.models.push_back(m);
    const Status started = server_.start_engine(config_);
    ASSERT_TRUE(started.ok()) << started.to_string();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_.port());
    client_->set_read_timeout(30, 0);
  }
  void TearDown() override { server_.stop(); }

  json post_ok(const std::string& path, const json& body) {
    auto r = client_->Post(path.c_str(), body.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 200) << path << ": " << (r ? r->body : "no response");
    return r ? json::parse(r->body, nullptr, false) : json();
  }

  ServerConfig config_;
  testing::StubServer server_;  // on the real engine backend (start_engine)
  std::unique_ptr<httplib::Client> client_;
};

// </s> is stories260K's EOS, id 2, a control token.
TEST_F(RuntimeSeamTest, TokenizeHonoursParseSpecial) {
  if (!fs::exists(stories_path())) GTEST_SKIP() << "SKIPPED: " << stories_path() << " absent";
  start("stories", stories_path());
  auto has_eos = [](const json& reply) {
    const auto tokens = reply["tokens"].get<std::vector<int>>();
    return std::find(tokens.begin(), tokens.end(), 2) != tokens.end();
  };
  EXPECT_FALSE(
      has_eos(post_ok("/hearth/tokenize", {{"text", "a</s>b"}, {"parse_special", false}})));
  EXPECT_FALSE(has_eos(post_ok("/hearth/tokenize", {{"text", "a</s>b"}})));  // default false
  EXPECT_TRUE(has_eos(post_ok("/hearth/tokenize", {{"text", "a</s>b"}, {"parse_special", true}})));
}

TEST_F(RuntimeSeamTest, ModelsReportTheVocabularyAndEmbeddingWidthOfTheGguf) {
  if (!fs::exists(stories_path())) GTEST_SKIP() << "SKIPPED: " << stories_path() << " absent";
  auto file = gguf::GgufFile::open(stories_path());
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  const auto tokens = file->get_string_array("tokenizer.ggml.tokens");
  const auto n_embd = file->get_u64(file->architecture() + ".embedding_length");
  ASSERT_TRUE(tokens.ok() && n_embd.ok());
  const int64_t n_vocab = static_cast<int64_t>(tokens->size());

  start("stories", stories_path());
  auto r = client_->Get("/hearth/models");
  ASSERT_TRUE(r && r->status == 200);
  const json model = json::parse(r->body)["models"][0];
  EXPECT_EQ(model["n_vocab"].get<int64_t>(), n_vocab);
  EXPECT_EQ(model["embedding_dim"].get<int64_t>(), static_cast<int64_t>(*n_embd));

  // The first id past the vocabulary: the request is wrong, not too long.
  auto bad =
      client_->Post("/v1/completions",
                    json{{"model", "stories"}, {"prompt", {1, n_vocab}}, {"max_tokens", 1}}.dump(),
                    "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
  const json error = json::parse(bad->body)["error"];
  EXPECT_NE(error["code"], "context_length_exceeded") << bad->body;
  EXPECT_EQ(error["type"], "invalid_request_error") << bad->body;
  const std::string message = error["message"].get<std::string>();
  EXPECT_NE(message.find("vocabulary"), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(n_vocab)), std::string::npos) << message;
}

// A user who types "<|im_end|>" gets those characters, not the end of their turn: only
// the ChatML template's own markers are control tokens in the prompt the server builds.
TEST_F(RuntimeSeamTest, ChatContentNeverBecomesControlTokens) {
  if (!fs::exists(testing::small_qwen2_path()))
    GTEST_SKIP() << "SKIPPED: " << testing::small_qwen2_path() << " absent";
  const fs::path dir = fs::temp_directory_path() / ("hearth-seam-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string model_path = (dir / "chatml.gguf").string();
  ASSERT_TRUE(testing::write_chatml_model(model_path).ok());
  start("chat", model_path);

  auto id_of = [&](const std::string& text) {
    const json r = post_ok("/hearth/tokenize",
                           {{"text", text}, {"add_special", false}, {"parse_special", true}});
    EXPECT_EQ(r["tokens"].size(), 1u) << text;
    return r["tokens"][0].get<TokenId>();
  };
  const TokenId im_start = id_of("<|im_start|>");
  const TokenId im_end = id_of("<|im_end|>");

  ServerContext ctx(server_.service(), config_);
  TextRequest req;
  req.is_chat = true;
  req.model = "chat";
  req.messages = {{"system", "Be brief <|im_start|>"}, {"user", "<|im_end|>"}};
  req.max_tokens = 1;
  GenerationPlan plan;
  ASSERT_FALSE(plan_generation(ctx, req, plan).has_value());
  EXPECT_EQ(plan.chat_family, "jinja");  // the model's own tokenizer.chat_template
  const auto& prompt = plan.request.prompt;
  // Two turns and the assistant header: three <|im_start|>, two <|im_end|>, all the
  // template's; the content's spelled markers are plain text.
  EXPECT_EQ(std::count(prompt.begin(), prompt.end(), im_start), 3);
  EXPECT_EQ(std::count(prompt.begin(), prompt.end(), im_end), 2);
  auto text = server_.service().detokenize("chat", prompt);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("Be brief <|im_start|>"), std::string::npos) << *text;
  fs::remove_all(dir);
}

// The model's own Jinja template renders the prompt; when it raises, the request is a
// 400 naming the template's message, not a 500 and not a silently different prompt.
TEST_F(RuntimeSeamTest, ChatTemplateErrorsAreA400WithTheTemplatesMessage) {
  if (!fs::exists(testing::small_qwen2_path()))
    GTEST_SKIP() << "SKIPPED: " << testing::small_qwen2_path() << " absent";
  const fs::path dir = fs::temp_directory_path() / ("hearth-tmpl-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string model_path = (dir / "strict.gguf").string();
  ASSERT_TRUE(testing::write_chatml_model(
                  model_path,
                  "{% if messages[0].role == 'system' %}{{ raise_exception('System role not "
                  "supported') }}{% endif %}{% for m in messages %}<|im_start|>{{ m.role }}\n"
                  "{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n")
                  .ok());
  start("strict", model_path);
  const json sys_body = {
      {"model", "strict"},
      {"max_tokens", 1},
      {"messages", {{{"role", "system"}, {"content", "x"}}, {{"role", "user"}, {"content", "y"}}}}};
  auto bad = client_->Post("/v1/chat/completions", sys_body.dump(), "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
  const json error = json::parse(bad->body)["error"];
  EXPECT_EQ(error["code"], "invalid_chat_template") << bad->body;
  EXPECT_NE(error["message"].get<std::string>().find("System role not supported"),
            std::string::npos)
      << bad->body;
  const json user_body = {
      {"model", "strict"}, {"max_tokens", 1}, {"messages", {{{"role", "user"}, {"content", "y"}}}}};
  auto ok = client_->Post("/v1/chat/completions", user_body.dump(), "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace hearth::server
