// One structured log line per request (issue #22 item 6): id (also the X-Request-Id
// header), route, status, and for a generation its model, tokens, cache hit kind,
// finish reason, TTFT and total time; --log-format json makes it one JSON object.
#include <httplib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "hearth/log.h"
#include "server/model_settings.h"
#include "stub_server.h"

namespace hearth::server {
namespace {

using nlohmann::json;

// Sends this process's stderr to a file while alive; text() reads what was written.
class StderrCapture {
 public:
  StderrCapture() : path_("/tmp/hearth-log-test-" + std::to_string(::getpid())) {
    std::fflush(stderr);
    saved_ = ::dup(STDERR_FILENO);
    std::FILE* f = std::fopen(path_.c_str(), "w");
    ::dup2(::fileno(f), STDERR_FILENO);
    std::fclose(f);
  }
  ~StderrCapture() {
    restore();
    std::remove(path_.c_str());
  }
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    saved_ = -1;
  }
  std::string text() {
    std::fflush(stderr);
    std::ifstream in(path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  std::string path_;
  int saved_ = -1;
};

// The JSON request records in `text`, in order.
std::vector<json> request_records(const std::string& text) {
  std::vector<json> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    json j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.value("msg", "") == "request") out.push_back(std::move(j));
  }
  return out;
}

TEST(RequestLog, OneJsonLinePerRequestWithTheGenerationsFields) {
  log::set_format(log::Format::kJson);
  testing::StubServer server;
  ServerConfig config;
  runtime::ModelConfig m = default_model_config();
  m.id = "tiny";
  m.model_path = "tiny.gguf";
  m.policy.min_tokens = 8;
  m.policy.cold_min_tokens = 8;
  m.policy.boundary_trim_tokens = 0;
  m.policy.boundary_align_tokens = 8;
  config.models.push_back(m);
  ASSERT_TRUE(server.start(config).ok());
  httplib::Client c("127.0.0.1", server.port());
  const std::string body =
      R"({"messages":[{"role":"user","content":"a prompt long enough to be saved"}],)"
      R"("max_tokens":4,"temperature":0})";
  std::string ids[2];
  std::string text;
  {
    StderrCapture capture;
    for (std::string& id : ids) {
      auto r = c.Post("/v1/chat/completions", body, "application/json");
      ASSERT_TRUE(r);
      ASSERT_EQ(r->status, 200) << r->body;
      id = r->get_header_value("X-Request-Id");
    }
    auto missing = c.Get("/v1/models/nope");
    ASSERT_TRUE(missing);
    text = capture.text();
  }
  server.stop();
  log::set_format(log::Format::kText);
  const std::vector<json> records = request_records(text);
  ASSERT_EQ(records.size(), 3u) << text;
  for (int i = 0; i < 2; ++i) {
    const json& r = records[i];
    EXPECT_FALSE(ids[i].empty());
    EXPECT_EQ(r["id"], ids[i]) << r.dump();
    EXPECT_EQ(r["route"], "/v1/chat/completions");
    EXPECT_EQ(r["status"], 200);
    EXPECT_EQ(r["model"], "tiny");
    EXPECT_GT(r["prompt_tokens"].get<int64_t>(), 8);
    EXPECT_EQ(r["completion_tokens"], 4);
    EXPECT_EQ(r["finish"], "length");
    EXPECT_GE(r["ttft_ms"].get<double>(), 0.0);
    EXPECT_GE(r["total_ms"].get<double>(), r["ttft_ms"].get<double>() - 1.0);
  }
  EXPECT_NE(ids[0], ids[1]);
  // The second, identical request is served from the first one's cache row.
  EXPECT_EQ(records[0]["cache_hit"], "cold") << records[0].dump();
  EXPECT_NE(records[1]["cache_hit"], "cold") << records[1].dump();
  EXPECT_GT(records[1]["cached_tokens"].get<int64_t>(), 0);
  // Not a generation: route and status only.
  EXPECT_EQ(records[2]["status"], 404);
  EXPECT_FALSE(records[2].contains("model"));
}

TEST(RequestLog, TextFormatQuotesWhatNeedsQuoting) {
  StderrCapture capture;
  log::write_fields(log::Level::kInfo, "request",
                    {{"id", std::string("req-1")},
                     {"model", std::string("a model")},
                     {"status", int64_t{200}},
                     {"ttft_ms", 1.5}});
  const std::string text = capture.text();
  EXPECT_NE(text.find("request id=req-1 model=\"a model\" status=200 ttft_ms=1.500"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace hearth::server
