// Issue #19 ("Under attack"), HTTP hardening: slow and idle clients, connection caps,
// request framing, body limits on every framing, and the browser rules, each driven
// with raw bytes against an in-process server on loopback. Every test ends by checking
// that an ordinary request is still served.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "compress_bomb.h"
#include "server/connection_guard.h"
#include "server/http_server.h"
#include "server/model_settings.h"
#include "server/runtime_service.h"
#include "stub_server.h"
#include "testing/sanitizers.h"

namespace hearth::server {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

int64_t ms_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

// One raw loopback connection (for bytes an HTTP client would never send).
class RawConn {
 public:
  explicit RawConn(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawConn() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawConn(const RawConn&) = delete;
  RawConn& operator=(const RawConn&) = delete;

  bool ok() const { return fd_ >= 0; }
  bool send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // Reads until the server closes (true) or `timeout_ms` passes (false).
  bool read_to_close(std::string& out, int timeout_ms) {
    const auto start = Clock::now();
    char buf[65536];
    for (;;) {
      const int64_t left = timeout_ms - ms_since(start);
      if (left <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) return false;
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return true;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  // True once the server has closed the connection (reading and discarding any reply).
  bool closed_by_server(int timeout_ms) {
    std::string ignored;
    return read_to_close(ignored, timeout_ms);
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

int status_of(const std::string& reply) {
  if (reply.rfind("HTTP/1.1 ", 0) != 0 || reply.size() < 12) return 0;
  return std::atoi(reply.c_str() + 9);
}

int count_responses(const std::string& reply) {
  int n = 0;
  for (size_t at = reply.find("HTTP/1.1 "); at != std::string::npos;
       at = reply.find("HTTP/1.1 ", at + 1)) {
    ++n;
  }
  return n;
}

int64_t rss_bytes() {
  std::ifstream in("/proc/self/statm");
  int64_t pages = 0;
  int64_t resident = 0;
  in >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// Samples this process's RSS every 5 ms between construction and stop(): how far the
// peak rose above the RSS at construction.
class PeakRss {
 public:
  PeakRss() : before_(rss_bytes()), peak_(before_) {
    thread_ = std::thread([this] {
      while (sampling_.load()) {
        peak_.store(std::max(peak_.load(), rss_bytes()));
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  }
  ~PeakRss() { stop(); }
  PeakRss(const PeakRss&) = delete;
  PeakRss& operator=(const PeakRss&) = delete;

  // The peak growth, in bytes (sampling ends at the first call).
  int64_t stop() {
    if (thread_.joinable()) {
      sampling_.store(false);
      thread_.join();
      peak_.store(std::max(peak_.load(), rss_bytes()));
    }
    return peak_.load() - before_;
  }

 private:
  const int64_t before_;
  std::atomic<int64_t> peak_;
  std::atomic<bool> sampling_{true};
  std::thread thread_;
};

const std::string kChatJson =
    R"({"model":"fake","messages":[{"role":"user","content":"hi"}],"max_tokens":2})";

class HttpHardeningTest : public ::testing::Test {
 protected:
  // One model, "fake", on the stub backend under the real runtime (stub_server.h).
  void start(ServerConfig config = {}, int64_t context = 1024) {
    runtime::ModelConfig m = default_model_config();
    m.id = "fake";
    m.model_path = "fake.gguf";
    m.n_ctx = static_cast<int32_t>(context);
    config.models.push_back(m);
    Status s = server_.start(config);
    ASSERT_TRUE(s.ok()) << s.to_string();
    port_ = server_.port();
  }
  void TearDown() override { server_.stop(); }
  int64_t active() { return server_.active("fake"); }

  std::string host() const { return "127.0.0.1:" + std::to_string(port_); }

  // Sends `bytes` on a fresh connection; the reply once the server closed it ("" when
  // it did not close within timeout_ms).
  std::string exchange(const std::string& bytes, int timeout_ms = 3000) {
    RawConn c(port_);
    EXPECT_TRUE(c.ok());
    c.send(bytes);
    std::string reply;
    if (!c.read_to_close(reply, timeout_ms)) return "";
    return reply;
  }

  std::string post_head(const std::string& path, const std::string& extra) const {
    return "POST " + path + " HTTP/1.1\r\nHost: " + host() +
           "\r\nContent-Type: application/json\r\n" + extra;
  }

  // Sends `head` (ending in its blank line), then `body` in 64 KiB pieces, framed as
  // chunks when `chunked`; stops sending once the server answers or stops reading.
  // The reply once the server closed the connection ("" if not within timeout_ms).
  std::string send_body(const std::string& head, const std::string& body, bool chunked,
                        int timeout_ms = 10000) {
    RawConn c(port_);
    EXPECT_TRUE(c.ok());
    if (!c.send(head)) return "";
    const size_t piece = 64 << 10;
    for (size_t at = 0; at < body.size(); at += piece) {
      pollfd p{c.fd(), POLLIN, 0};
      if (::poll(&p, 1, 0) > 0) break;
      const std::string data = body.substr(at, piece);
      char size_line[32];
      std::snprintf(size_line, sizeof(size_line), "%zx\r\n", data.size());
      if (!c.send(chunked ? std::string(size_line).append(data).append("\r\n") : data)) break;
    }
    if (chunked) c.send("0\r\n\r\n");
    std::string reply;
    if (!c.read_to_close(reply, timeout_ms)) return "";
    return reply;
  }

  // An ordinary request still works.
  void expect_served() {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(5, 0);
    auto r = c.Post("/v1/chat/completions", kChatJson, "application/json");
    ASSERT_TRUE(r) << "no response";
    EXPECT_EQ(r->status, 200) << r->body;
  }

  testing::StubServer server_;
  int port_ = 0;
};

TEST(HardeningConfig, LimitsAndAllowedHostsParse) {
  ServerConfig c;
  ASSERT_TRUE(apply_config_toml(R"(
[server]
allowed_hosts = ["hearth.internal", "box:9000"]
[limits]
max_header_bytes = "32KiB"
max_connections = 64
idle_timeout_ms = 2000
header_timeout_ms = 3000
body_timeout_ms = 4000
write_timeout_ms = 5000
)",
                                c)
                  .ok());
  EXPECT_EQ(c.allowed_hosts, (std::vector<std::string>{"hearth.internal", "box:9000"}));
  EXPECT_EQ(c.limits.max_header_bytes, 32 << 10);
  EXPECT_EQ(c.limits.max_connections, 64);
  EXPECT_EQ(c.limits.idle_timeout_ms, 2000);
  EXPECT_EQ(c.limits.header_timeout_ms, 3000);
  EXPECT_EQ(c.limits.body_timeout_ms, 4000);
  EXPECT_EQ(c.limits.write_timeout_ms, 5000);
  ServerConfig bad;
  EXPECT_FALSE(apply_config_toml("[limits]\nmax_connections = 0\n", bad).ok());
  EXPECT_FALSE(apply_config_toml("[server]\nallowed_hosts = [1]\n", bad).ok());
  bad.limits.max_header_bytes = 100;
  EXPECT_FALSE(validate_config(bad).ok());
}

TEST(RequestHeadCheck, FramingRules) {
  const int64_t max = 1000;
  auto status = [&](const std::string& headers) {
    auto r = check_request_head("POST /x HTTP/1.1\r\nHost: a" + headers, max);
    return r ? r->status : 0;
  };
  EXPECT_EQ(status("\r\nContent-Length: 10"), 0);
  EXPECT_EQ(status("\r\ncontent-length:  10 "), 0);
  EXPECT_EQ(status("\r\nTransfer-Encoding: chunked"), 0);
  EXPECT_EQ(status("\r\nContent-Length: -1"), 400);
  EXPECT_EQ(status("\r\nContent-Length: +5"), 400);
  EXPECT_EQ(status("\r\nContent-Length: 1e20"), 400);
  EXPECT_EQ(status("\r\nContent-Length: 100000000000000000000"), 400);
  EXPECT_EQ(status("\r\nContent-Length: abc"), 400);
  EXPECT_EQ(status("\r\nContent-Length: "), 400);
  EXPECT_EQ(status("\r\nContent-Length: 5, 5"), 400);
  EXPECT_EQ(status("\r\nContent-Length: 5\r\nContent-Length: 5"), 400);
  EXPECT_EQ(status("\r\nContent-Length: 5\r\nContent-Length: 6"), 400);
  EXPECT_EQ(status("\r\nContent-Length: 5\r\nTransfer-Encoding: chunked"), 400);
  EXPECT_EQ(status("\r\nTransfer-Encoding: gzip, chunked"), 501);
  EXPECT_EQ(status("\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked"), 501);
  EXPECT_EQ(status("\r\nContent-Length: 1001"), 413);
  EXPECT_EQ(status("\r\nX-A: b\r\n folded"), 400);
  EXPECT_EQ(status("\r\nno colon here"), 400);
  auto get = check_request_head("GET / HTTP/1.1\r\nContent-Length: 3", max);
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 400);
  EXPECT_FALSE(check_request_head("GET / HTTP/1.1\r\nContent-Length: 0", max));
}

TEST_F(HttpHardeningTest, ContentLengthCasesGet400Or413AndClose) {
  ServerConfig config;
  config.limits.body_timeout_ms = 1000;
  start(config);
  const std::string body = kChatJson;
  struct Case {
    std::string headers;
    int status;
  };
  const std::vector<Case> cases = {
      {"Content-Length: -1\r\n\r\n" + body, 400},
      {"Content-Length: 1e20\r\n\r\n" + body, 400},
      {"Content-Length: 100000000000000000000\r\n\r\n" + body, 400},
      {"Content-Length: abc\r\n\r\n" + body, 400},
      {"Content-Length: 5\r\nContent-Length: 6\r\n\r\n" + body, 400},
      {"Content-Length: " + std::to_string(body.size()) +
           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body,
       400},
      {"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n" + body, 400},
      {"Content-Length: 9000000000\r\n\r\n" + body, 413},
      // Larger than what is sent: the body deadline (1 s here) ends the wait.
      {"Content-Length: " + std::to_string(body.size() + 100) + "\r\n\r\n" + body, 400},
  };
  for (const auto& c : cases) {
    const auto t0 = Clock::now();
    const std::string reply = exchange(post_head("/v1/chat/completions", c.headers), 4000);
    EXPECT_EQ(status_of(reply), c.status) << c.headers.substr(0, 60) << "\n" << reply;
    EXPECT_LT(ms_since(t0), 3000) << c.headers.substr(0, 60);
    expect_served();
  }
}

TEST_F(HttpHardeningTest, HeaderTooLargeGets431) {
  ServerConfig config;
  config.limits.max_header_bytes = 4096;
  start(config);
  const std::string reply = exchange("GET /health HTTP/1.1\r\nHost: " + host() +
                                     "\r\nX-Big: " + std::string(8000, 'a') + "\r\n\r\n");
  EXPECT_EQ(status_of(reply), 431) << reply;
  expect_served();
}

// A client that shuts its sending side (FIN) before its request head is complete can
// never complete it: the connection is closed at once, not held to the header timeout.
TEST_F(HttpHardeningTest, HeadCutShortByTheClientsFinIsClosedAtOnce) {
  ServerConfig config;
  config.limits.idle_timeout_ms = 10000;
  config.limits.header_timeout_ms = 10000;
  start(config);
  for (const std::string& partial :
       {std::string(), std::string("GET /health HTTP/1.1\r\nHost: ").append(host()),
        post_head("/v1/chat/completions", "Content-Length: 10\r\n")}) {
    RawConn c(port_);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(partial.empty() || c.send(partial));
    const auto t0 = Clock::now();
    ASSERT_EQ(::shutdown(c.fd(), SHUT_WR), 0);
    EXPECT_TRUE(c.closed_by_server(5000)) << partial;
    EXPECT_LT(ms_since(t0), 1000) << partial;
  }
  EXPECT_EQ(server_.http().guard_counters().header_timeouts.load(), 0);
  expect_served();
}

TEST_F(HttpHardeningTest, ChunkedBodyOverLimitGets413WithBoundedMemory) {
  ServerConfig config;
  config.limits.max_body_bytes = 8 << 20;
  start(config);
  std::atomic<bool> sampling{true};
  std::atomic<int64_t> peak{0};
  const int64_t before = rss_bytes();
  std::thread sampler([&] {
    while (sampling.load()) {
      peak.store(std::max(peak.load(), rss_bytes()));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  RawConn c(port_);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.send(post_head("/v1/chat/completions", "Transfer-Encoding: chunked\r\n\r\n")));
  // 48 MiB in 64 KiB chunks, stopping as soon as the server answers or stops reading.
  const std::string chunk(64 << 10, 'a');
  char size_line[32];
  std::snprintf(size_line, sizeof(size_line), "%zx\r\n", chunk.size());
  const std::string framed = size_line + chunk + "\r\n";
  const auto t0 = Clock::now();
  for (int i = 0; i < 768 && ms_since(t0) < 10000; ++i) {
    pollfd p{c.fd(), POLLIN, 0};
    if (::poll(&p, 1, 0) > 0) break;
    if (!c.send(framed)) break;
  }
  std::string reply;
  c.read_to_close(reply, 5000);
  sampling.store(false);
  sampler.join();
  EXPECT_EQ(status_of(reply), 413) << reply.substr(0, 200);
  // The server keeps at most max_body_bytes (8 MiB) of it; buffering all 48 MiB would
  // show here.
  if (!hearth::testing::under_sanitizer()) {
    EXPECT_LT(peak.load() - before, 24 << 20) << "RSS grew by " << (peak.load() - before);
  }
  expect_served();
}

// Content-Encoding bombs: 256 MiB of prompt as a few hundred KB of gzip / zlib (a few
// KB of brotli), sent with a Content-Length and chunked. httplib inflates a coded body
// before the bounded reader sees it, in 16 KiB pieces; the reader's refusal of the
// piece past limits.max_body_bytes stops the inflation, so at most 8 MiB is ever
// held (the issue's 306 KB gzip took the server past 12.5 GB before it was killed).
// A brotli stream also costs its decoder's window, which the stream declares: at most
// 16 MiB (lgwin 24; httplib does not enable brotli's large windows), so br is allowed
// 16 MiB more (measured: 16.1 MiB for the decoder alone on this bomb).
TEST_F(HttpHardeningTest, CompressedBodyBombsGet413WithBoundedMemory) {
  using testing::Coding;
  ServerConfig config;
  config.limits.max_body_bytes = 8 << 20;
  start(config);
  for (Coding coding : {Coding::kGzip, Coding::kDeflate, Coding::kBrotli}) {
    const std::string bomb = testing::compressed_chat(coding, size_t{256} << 20);
    ASSERT_FALSE(bomb.empty());
    // Small enough on the wire to pass every check made before inflating.
    ASSERT_LT(bomb.size(), size_t{1} << 20) << testing::coding_name(coding);
    for (bool chunked : {false, true}) {
      const std::string what = std::string(testing::coding_name(coding))
                                   .append(chunked ? ", chunked" : ", Content-Length ")
                                   .append(chunked ? "" : std::to_string(bomb.size()));
      const std::string framing =
          chunked
              ? std::string("Transfer-Encoding: chunked\r\n")
              : std::string("Content-Length: ").append(std::to_string(bomb.size())).append("\r\n");
      PeakRss rss;
      const std::string reply =
          send_body(post_head("/v1/chat/completions", std::string("Content-Encoding: ")
                                                          .append(testing::coding_name(coding))
                                                          .append("\r\n")
                                                          .append(framing)
                                                          .append("\r\n")),
                    bomb, chunked);
      const int64_t growth = rss.stop();
      EXPECT_EQ(status_of(reply), 413) << what << "\n" << reply.substr(0, 300);
      EXPECT_NE(reply.find("request_too_large"), std::string::npos) << what;
      std::printf("[ INFO ] %s bomb (%zu bytes on the wire): RSS +%.1f MiB\n", what.c_str(),
                  bomb.size(), growth / 1048576.0);
      // At most max_body_bytes (8 MiB) of it is held; inflating it all would be 256 MiB.
      const int64_t bound = coding == Coding::kBrotli ? 40 << 20 : 24 << 20;
      if (!hearth::testing::under_sanitizer()) {
        EXPECT_LT(growth, bound) << what << ": RSS grew by " << growth;
      }
      expect_served();
    }
  }
}

// The codings the server decodes, when the body fits: each reaches the handler.
TEST_F(HttpHardeningTest, CompressedBodiesWithinTheLimitAreServed) {
  using testing::Coding;
  start();
  for (Coding coding : {Coding::kGzip, Coding::kDeflate, Coding::kBrotli}) {
    const std::string body = testing::compressed_chat(coding, 100);
    ASSERT_FALSE(body.empty());
    const std::string reply = exchange(
        post_head("/v1/chat/completions", std::string("Content-Encoding: ")
                                              .append(testing::coding_name(coding))
                                              .append("\r\nConnection: close\r\nContent-Length: ")
                                              .append(std::to_string(body.size()))
                                              .append("\r\n\r\n")) +
        body);
    EXPECT_EQ(status_of(reply), 200) << testing::coding_name(coding) << "\n" << reply;
    EXPECT_NE(reply.find("chat.completion"), std::string::npos) << testing::coding_name(coding);
  }
  expect_served();
}

// A coding the server does not decode would reach the JSON parser still encoded (httplib
// passes unknown codings through); it is refused, unread, with the codings it takes.
TEST_F(HttpHardeningTest, UnknownContentEncodingGets415) {
  start();
  const std::string gzip = testing::compressed_chat(testing::Coding::kGzip, 100);
  for (const std::string& encoding :
       {std::string("Content-Encoding: compress\r\n"), std::string("Content-Encoding: x-gzip\r\n"),
        std::string("Content-Encoding: GZIP\r\n"), std::string("Content-Encoding: gzip, br\r\n"),
        std::string("Content-Encoding: zstd\r\n"),
        std::string("Content-Encoding: gzip\r\nContent-Encoding: gzip\r\n")}) {
    const std::string reply =
        exchange(post_head("/v1/chat/completions", std::string(encoding)
                                                       .append("Content-Length: ")
                                                       .append(std::to_string(gzip.size()))
                                                       .append("\r\n\r\n")) +
                 gzip);
    EXPECT_EQ(status_of(reply), 415) << encoding << reply;
    EXPECT_NE(reply.find("unsupported_content_encoding"), std::string::npos) << encoding;
    EXPECT_NE(reply.find("Accept-Encoding: gzip, deflate, br"), std::string::npos) << reply;
    expect_served();
  }
  // "identity" is no coding at all.
  const std::string identity =
      exchange(post_head("/v1/chat/completions",
                         std::string("Content-Encoding: identity\r\nConnection: close\r\n")
                             .append("Content-Length: ")
                             .append(std::to_string(kChatJson.size()))
                             .append("\r\n\r\n")) +
               kChatJson);
  EXPECT_EQ(status_of(identity), 200) << identity;
  expect_served();
}

TEST_F(HttpHardeningTest, BodyWithoutLengthIsEmptyNotReadToClose) {
  start();
  // No Content-Length, no Transfer-Encoding: the body is empty (RFC 9112 6.3), so the
  // server answers at once instead of reading until the client closes.
  RawConn c(port_);
  ASSERT_TRUE(c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: " + host() +
                     "\r\nContent-Type: application/json\r\n\r\n" + kChatJson));
  std::string reply;
  const auto t0 = Clock::now();
  char buf[4096];
  pollfd p{c.fd(), POLLIN, 0};
  if (::poll(&p, 1, 3000) > 0) {
    const ssize_t n = ::recv(c.fd(), buf, sizeof(buf), 0);
    if (n > 0) reply.assign(buf, static_cast<size_t>(n));
  }
  EXPECT_LT(ms_since(t0), 2000);
  EXPECT_EQ(status_of(reply), 400) << reply;
  expect_served();
}

TEST_F(HttpHardeningTest, PipelinedRequestsAreServedInOrder) {
  start();
  const std::string reply = exchange(
      "GET /health HTTP/1.1\r\nHost: " + host() + "\r\n\r\n" +
      post_head("/v1/chat/completions",
                "Content-Length: " + std::to_string(kChatJson.size()) + "\r\n\r\n") +
      kChatJson + "GET /v1/models HTTP/1.1\r\nHost: " + host() + "\r\nConnection: close\r\n\r\n");
  ASSERT_EQ(count_responses(reply), 3) << reply;
  const size_t health = reply.find("\"status\"");
  const size_t chat = reply.find("chat.completion");
  const size_t models = reply.find("\"object\":\"list\"");
  ASSERT_NE(health, std::string::npos);
  ASSERT_NE(chat, std::string::npos);
  ASSERT_NE(models, std::string::npos);
  EXPECT_LT(health, chat);
  EXPECT_LT(chat, models);
  expect_served();
}

TEST_F(HttpHardeningTest, HostMustBeLoopbackOrAllowed) {
  ServerConfig config;
  config.allowed_hosts = {"hearth.internal", "box:9000"};
  start(config);
  auto get_health = [&](const std::string& host_header) {
    return status_of(
        exchange("GET /health HTTP/1.1\r\nHost: " + host_header + "\r\nConnection: close\r\n\r\n"));
  };
  EXPECT_EQ(get_health("evil.example"), 403);
  EXPECT_EQ(get_health("evil.example:" + std::to_string(port_)), 403);
  EXPECT_EQ(get_health("box:9001"), 403);
  EXPECT_EQ(get_health("localhost"), 200);
  EXPECT_EQ(get_health("LOCALHOST:8080"), 200);
  EXPECT_EQ(get_health("127.0.0.1:" + std::to_string(port_)), 200);
  EXPECT_EQ(get_health("[::1]:8080"), 200);
  EXPECT_EQ(get_health("hearth.internal:1234"), 200);
  EXPECT_EQ(get_health("box:9000"), 200);
  expect_served();
}

TEST_F(HttpHardeningTest, AdminRefusesCrossOriginAndJsonNeedsJsonContentType) {
  start();
  auto status = [&](const std::string& request) { return status_of(exchange(request)); };
  const std::string close = "Connection: close\r\n";
  // A page on another origin posting to an admin endpoint.
  EXPECT_EQ(status("POST /hearth/cache/gc HTTP/1.1\r\nHost: " + host() +
                   "\r\nOrigin: http://evil.example\r\nContent-Length: 0\r\n" + close + "\r\n"),
            403);
  EXPECT_EQ(status("GET /hearth/models HTTP/1.1\r\nHost: " + host() + "\r\nOrigin: null\r\n" +
                   close + "\r\n"),
            403);
  // Same origin, or no Origin (not a browser), is fine.
  EXPECT_EQ(status("POST /hearth/cache/gc HTTP/1.1\r\nHost: " + host() + "\r\nOrigin: http://" +
                   host() + "\r\nContent-Length: 0\r\n" + close + "\r\n"),
            200);
  EXPECT_EQ(status("GET /hearth/models HTTP/1.1\r\nHost: " + host() + "\r\n" + close + "\r\n"),
            200);
  // A text/plain body (what a page can send without a preflight) is refused unread.
  const std::string len = "Content-Length: " + std::to_string(kChatJson.size()) + "\r\n";
  EXPECT_EQ(status("POST /v1/chat/completions HTTP/1.1\r\nHost: " + host() +
                   "\r\nContent-Type: text/plain\r\n" + len + close + "\r\n" + kChatJson),
            415);
  EXPECT_EQ(status("POST /v1/chat/completions HTTP/1.1\r\nHost: " + host() + "\r\n" + len + close +
                   "\r\n" + kChatJson),
            415);
  EXPECT_EQ(status("POST /v1/chat/completions HTTP/1.1\r\nHost: " + host() +
                   "\r\nContent-Type: Application/JSON; charset=utf-8\r\n" + len + close + "\r\n" +
                   kChatJson),
            200);
  expect_served();
}

TEST_F(HttpHardeningTest, ConnectionsBeyondTheCapGet503) {
  ServerConfig config;
  config.limits.max_connections = 8;
  start(config);
  std::vector<std::unique_ptr<RawConn>> held;
  for (int i = 0; i < 8; ++i) held.push_back(std::make_unique<RawConn>(port_));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // all accepted
  const auto t0 = Clock::now();
  const std::string reply = exchange("GET /health HTTP/1.1\r\nHost: " + host() + "\r\n\r\n", 2000);
  EXPECT_EQ(status_of(reply), 503) << reply;
  EXPECT_LT(ms_since(t0), 1000);
  EXPECT_EQ(server_.http().guard_counters().shed.load(), 1);
  held.clear();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // their threads are free
  const std::string metrics =
      exchange("GET /metrics HTTP/1.1\r\nHost: " + host() + "\r\nConnection: close\r\n\r\n");
  EXPECT_NE(metrics.find("hearth_connections_shed_total 1"), std::string::npos) << metrics;
  expect_served();
}

// A streaming client that stops reading must not hold its generation: once the socket
// buffers are full, the next event write waits at most limits.write_timeout_ms, then
// the connection is cut and the generation cancelled (its sequence freed).
TEST_F(HttpHardeningTest, StalledStreamReaderIsCutAndItsGenerationCancelled) {
  ServerConfig config;
  config.limits.max_tokens = 900000;
  config.limits.write_timeout_ms = 500;
  start(config, 1000000);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  const int small = 4096;  // a small receive window fills sooner
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port_));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const std::string body =
      R"({"model":"fake","stream":true,"max_tokens":900000,"messages":[{"role":"user","content":"go"}]})";
  const std::string request =
      post_head("/v1/chat/completions",
                "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n") +
      body;
  ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  // The client reads nothing from here on.
  const auto t0 = Clock::now();
  for (int i = 0; i < 200 && active() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(active(), 1);
  // A few hundred ms normally; TSan runs the same path many times slower.
  const int64_t budget_ms = hearth::testing::under_sanitizer() ? 30000 : 5000;
  while (active() > 0 && ms_since(t0) < budget_ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(active(), 0) << "generation still held by a stalled reader";
  const std::string metrics =
      exchange("GET /metrics HTTP/1.1\r\nHost: " + host() + "\r\nConnection: close\r\n\r\n");
  EXPECT_NE(metrics.find("hearth_cancelled_generations_total 1"), std::string::npos) << metrics;
  EXPECT_GE(server_.http().guard_counters().deadline_cuts.load(), 1);
  ::close(fd);
  expect_served();
}

// A bounded version of the issue's measure: 100 slowloris clients (headers trickled a
// byte at a time) and 150 idle ones held open while /health is asked 50 times; then
// both kinds are cut off by their timeouts.
TEST_F(HttpHardeningTest, SlowlorisAndIdleConnectionsDoNotBlockHealth) {
  ServerConfig config;
  config.limits.idle_timeout_ms = 3000;
  config.limits.header_timeout_ms = 4000;
  start(config);
  std::vector<std::unique_ptr<RawConn>> slow;
  std::vector<std::unique_ptr<RawConn>> idle;
  for (int i = 0; i < 100; ++i) {
    slow.push_back(std::make_unique<RawConn>(port_));
    ASSERT_TRUE(slow.back()->ok());
    slow.back()->send("GET /health HTTP/1.1\r\n");
  }
  for (int i = 0; i < 150; ++i) {
    idle.push_back(std::make_unique<RawConn>(port_));
    ASSERT_TRUE(idle.back()->ok());
  }
  std::atomic<bool> trickling{true};
  std::thread trickler([&] {
    // One header byte per connection every 200 ms, for at most 10 s.
    const auto t0 = Clock::now();
    while (trickling.load() && ms_since(t0) < 10000) {
      for (auto& c : slow) c->send("x");
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  const auto t_open = Clock::now();
  std::vector<int64_t> us;
  for (int i = 0; i < 50; ++i) {
    const auto t0 = Clock::now();
    httplib::Client c("127.0.0.1", port_);
    c.set_connection_timeout(2, 0);
    c.set_read_timeout(2, 0);
    auto r = c.Get("/health");
    us.push_back(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count());
    ASSERT_TRUE(r) << "request " << i;
    EXPECT_EQ(r->status, 200);
  }
  // All 250 were held during the measure (it is much shorter than the 3 s idle timeout).
  std::sort(us.begin(), us.end());
  const int64_t p99 = us[us.size() * 99 / 100];
  if (!hearth::testing::under_sanitizer()) {
    EXPECT_LT(ms_since(t_open), 2500);
    // Blocked, /health took seconds (or no answer in 2 s); the 100 ms figure the issue
    // asks for is measured by scripts/attack-test.sh. A test on a shared CI machine only
    // checks it is not blocked: a loaded 2-core runner has shown 107-145 ms here.
    EXPECT_LT(p99, 500000) << "health p99 " << p99 << " us";
  }
  // Past the header timeout every slowloris client has been cut off, and past the idle
  // timeout every idle one (all waits end 3 s after the longer timeout).
  auto left_ms = [&] { return static_cast<int>(std::max<int64_t>(0, 7000 - ms_since(t_open))); };
  int slow_open = 0;
  for (auto& c : slow) slow_open += c->closed_by_server(left_ms()) ? 0 : 1;
  trickling.store(false);
  trickler.join();
  int idle_open = 0;
  for (auto& c : idle) idle_open += c->closed_by_server(left_ms()) ? 0 : 1;
  EXPECT_EQ(slow_open, 0);
  EXPECT_EQ(idle_open, 0);
  EXPECT_GE(server_.http().guard_counters().header_timeouts.load(), 100);
  EXPECT_GE(server_.http().guard_counters().idle_closed.load(), 150);
  expect_served();
}

// Item 2 of the issue: an 8 MiB prompt (within the body limit) is refused from its byte
// length, without being tokenized in full, on the real runtime and tokenizer.
TEST(PromptBound, OversizedPromptIsRefusedBeforeTokenizing) {
  const std::string path = std::string(HEARTH_SHARED_DIR) + "/models/stories260K.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SKIPPED: " << path << " absent";
  ServerConfig config;
  config.port = 0;
  runtime::ModelConfig m = default_model_config();
  m.id = "stories";
  m.model_path = path;
  m.n_ctx = 256;
  m.n_seq_max = 1;
  config.models.push_back(m);
  auto service = make_runtime_service(config);
  ASSERT_TRUE(service.ok()) << service.status().to_string();
  HttpServer server(*service.value(), config);
  ASSERT_TRUE(server.bind().ok());
  std::thread thread([&] { server.run(); });
  httplib::Client c("127.0.0.1", server.port());
  c.set_read_timeout(60, 0);
  auto complete = [&](const std::string& prompt) {
    json body = {{"model", "stories"}, {"prompt", prompt}, {"max_tokens", 2}};
    return c.Post("/v1/completions", body.dump(), "application/json");
  };
  const auto t0 = Clock::now();
  auto big = complete(std::string((8 << 20) - 4096, 'a'));
  const int64_t big_ms = ms_since(t0);
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 400) << big->body;
  EXPECT_NE(big->body.find("context_length_exceeded"), std::string::npos) << big->body;
  // The byte bound answered (its message counts bytes), not the token count after a
  // full tokenization (which counts tokens).
  EXPECT_NE(big->body.find("bytes, more than the context"), std::string::npos) << big->body;
  if (!hearth::testing::under_sanitizer()) {
    EXPECT_LT(big_ms, 2000);
  }
  // Short enough in bytes to be tokenized, too long in tokens: still refused, exactly.
  auto tokens = complete(std::string(2000, 'a') + " " + std::string(2000, 'b'));
  ASSERT_TRUE(tokens);
  EXPECT_EQ(tokens->status, 400) << tokens->body;
  EXPECT_NE(tokens->body.find("context_length_exceeded"), std::string::npos) << tokens->body;
  auto ok = complete("Once upon a time");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  server.stop();
  thread.join();
  service.value()->shutdown();
}

}  // namespace
}  // namespace hearth::server
