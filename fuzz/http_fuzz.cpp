// libFuzzer target: raw bytes on a TCP connection to the real HTTP server, the whole
// request path below the socket: connection guard (head wait, framing checks, body
// caps), httplib's parser, routing, authentication hook, request validation, the
// runtime on stories260K (context 64, so any generation is short) and every error path.
// Each input is one connection: the bytes are sent, the write side is shut, and the
// reply is read until the server closes. A crash, a sanitizer report or a hang
// (libFuzzer's -timeout) is a bug.
//
// Speed: the shut write side is an EOF the server acts on at once: a head cut short is
// closed without waiting for the rest (connection_guard.cpp, await_head), a body cut
// short fails its read, and a generation sees its client gone. The server's own
// timeouts are short as well (below), and the reply is read with a bound, so no input
// waits long: about 1,900 runs a second on the 2-core VM, where it was 7 while every
// head cut short waited out the header timeout (docs/reliability.md).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "server/http_server.h"
#include "server/model_settings.h"
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
  // Short, so that any wait the EOF does not end (a bug) still ends soon.
  c.limits.idle_timeout_ms = 50;
  c.limits.header_timeout_ms = 100;
  c.limits.body_timeout_ms = 100;
  c.limits.write_timeout_ms = 100;
  c.limits.max_tokens = 16;
  c.shutdown_grace_ms = 100;
  hearth::runtime::ModelConfig m = default_model_config();
  m.id = "stories";
  m.model_path = std::string(HEARTH_SHARED_DIR) + "/models/stories260K.gguf";
  m.n_ctx = 64;
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
    // Until the server closes, at most 1 s in all (its timeouts are 100 ms; a longer
    // exchange is a generation that missed its client's EOF, which the reply bound
    // cuts short: it then ends as a disconnect).
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    char buf[16384];
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            end - std::chrono::steady_clock::now())
                            .count();
      pollfd p{fd, POLLIN, 0};
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) break;
      if (::recv(fd, buf, sizeof(buf), 0) <= 0) break;
    }
  }
  ::close(fd);
  return 0;
}
