// The listening and connected sockets (issue #22 items 1 and 2): every accepted
// connection has TCP_NODELAY (no ~40 ms delayed-ACK stall per keep-alive reply), and a
// second server cannot bind a port a live one holds (httplib's SO_REUSEPORT default
// would let the kernel split the traffic between the two).
#include <arpa/inet.h>
#include <dirent.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "server/http_server.h"
#include "server/model_settings.h"
#include "stub_server.h"

namespace hearth::server {
namespace {

class SocketOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerConfig config;
    runtime::ModelConfig m = default_model_config();
    m.id = "tiny";
    m.model_path = "tiny.gguf";
    config.models.push_back(m);
    Status s = server_.start(config);
    ASSERT_TRUE(s.ok()) << s.to_string();
  }
  void TearDown() override { server_.stop(); }

  testing::StubServer server_;
};

// This process's socket whose peer is 127.0.0.1:`peer_port` (the server end of a
// client connection made by the test), or -1.
int server_end_of(int peer_port) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int found = -1;
  while (dirent* e = readdir(dir)) {
    const int fd = std::atoi(e->d_name);
    if (fd <= 2) continue;
    sockaddr_in peer{};
    socklen_t len = sizeof(peer);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) continue;
    if (peer.sin_family == AF_INET && ntohs(peer.sin_port) == peer_port) {
      found = fd;
      break;
    }
  }
  closedir(dir);
  return found;
}

TEST_F(SocketOptionsTest, EveryAcceptedConnectionHasNoDelay) {
  const int client = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(client, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server_.port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  // One request answered: the server's thread has taken the socket by then.
  const std::string request = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  ASSERT_EQ(::send(client, request.data(), request.size(), 0),
            static_cast<ssize_t>(request.size()));
  char buf[512];
  ASSERT_GT(::recv(client, buf, sizeof(buf), 0), 0);
  sockaddr_in local{};
  socklen_t len = sizeof(local);
  ASSERT_EQ(getsockname(client, reinterpret_cast<sockaddr*>(&local), &len), 0);
  const int server_side = server_end_of(ntohs(local.sin_port));
  ASSERT_GE(server_side, 0) << "the server's end of the connection was not found";
  int nodelay = 0;
  socklen_t size = sizeof(nodelay);
  ASSERT_EQ(getsockopt(server_side, IPPROTO_TCP, TCP_NODELAY, &nodelay, &size), 0);
  EXPECT_NE(nodelay, 0);
  ::close(client);
}

TEST_F(SocketOptionsTest, ASecondServerCannotBindALivePort) {
  ServerConfig config;
  config.port = server_.port();
  HttpServer second(server_.service(), config);
  Status bound = second.bind();
  ASSERT_FALSE(bound.ok()) << "two servers listen on port " << server_.port();
  EXPECT_NE(bound.message().find("in use"), std::string::npos) << bound.message();
  // The first server still answers.
  httplib::Client c("127.0.0.1", server_.port());
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

}  // namespace
}  // namespace hearth::server
