// libFuzzer target: raw bytes on a TCP connection to the real HTTP server, the whole
// request path below the socket: connection guard (head wait, framing checks, body
// caps), httplib's parser, routing, authentication hook, request validation, the
// runtime on stories260K (context 64, so any generation is short) and every error path.
// Each input is one connection: the bytes are sent, the write side is shut, and the
// reply is read until the server closes. A crash, a sanitizer report or a hang
// (libFuzzer's -timeout) is a bug.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "server/http_server.h"
#include "server/runtime_service.h"

namespace {

using namespace hearth::server;

struct Live {
  ServerConfig config;
  std::unique_ptr<ServiceApi> service;
  std::unique_ptr<HttpServer> server;
  std::thread thread;
};

Live* live = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  live = new Live;  // lives until exit: the server thread serves every input
  ServerConfig& c = live->config;
  c.port = 0;
  c.api_key = "fuzz-key";  // half the corpus carries it: both sides of the hook run
  c.limits.idle_timeout_ms = 200;
  c.limits.header_timeout_ms = 300;
  c.limits.body_timeout_ms = 300;
  c.limits.write_timeout_ms = 500;
  c.limits.max_tokens = 16;
  c.shutdown_grace_ms = 100;
  ModelConfig m;
  m.id = "stories";
  m.path = std::string(HEARTH_SHARED_DIR) + "/models/stories260K.gguf";
  m.context = 64;
  c.models.push_back(m);
  auto service = make_runtime_service(c);
  if (!service.ok()) {
    std::fprintf(stderr, "http_fuzz: %s\n", service.status().to_string().c_str());
    std::abort();
  }
  live->service = std::move(service).value();
  live->server = std::make_unique<HttpServer>(*live->service, live->config);
  if (!live->server->bind().ok()) std::abort();
  live->thread = std::thread([] { live->server->run(); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(live->server->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    (void)::send(fd, data, size, MSG_NOSIGNAL);
    ::shutdown(fd, SHUT_WR);
    pollfd p{fd, POLLIN, 0};
    char buf[4096];
    // Bounded: the server's own timeouts (a few hundred ms here) end every exchange.
    while (::poll(&p, 1, 3000) > 0 && ::recv(fd, buf, sizeof(buf), 0) > 0) {
    }
  }
  ::close(fd);
  return 0;
}
