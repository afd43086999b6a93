// Bounds what one TCP connection can take from the server: a thread, memory and time.
//
// cpp-httplib 0.11 on its own reads a request head line by line with no bound on the
// total, waits for each next byte with only a per-recv timeout (a client trickling one
// byte a second never trips it), buffers chunked and length-less bodies whole, reads
// ahead into a per-request buffer that drops pipelined requests, holds a pool thread
// per idle keep-alive connection and has no connection cap. GuardedServer keeps
// httplib's request parsing, routing and response writing (Server::process_request)
// but owns everything around it:
//   - a thread per connection, started on demand up to limits.max_connections;
//     beyond that a connection gets a canned 503 and is closed at once;
//   - before each request, a wait (MSG_PEEK, nothing consumed) for the whole request
//     head: first byte within limits.idle_timeout_ms, all of it within
//     limits.header_timeout_ms, at most limits.max_header_bytes (431), its framing
//     checked (Content-Length, Transfer-Encoding: check_request_head) before httplib
//     parses it;
//   - its own Stream, which never reads past the current request (so pipelined
//     requests are served in order), caps the bytes a body may take on the wire and
//     fails reads past limits.body_timeout_ms and writes past a deadline the route
//     code arms (arm_write_deadline);
//   - the keep-alive loop, which closes after a response whose request body was not
//     read to its end (a refused body is never parsed as the next request).
#pragma once

#include <httplib.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hearth::server {

struct GuardLimits {
  int64_t max_connections = 512;
  int64_t max_header_bytes = 16 << 10;
  int64_t max_body_bytes = 8 << 20;
  int64_t idle_timeout_ms = 5000;
  int64_t header_timeout_ms = 10000;
  int64_t body_timeout_ms = 30000;
  int64_t write_timeout_ms = 10000;
};

struct GuardCounters {
  std::atomic<int64_t> shed{0};             // connections refused at max_connections
  std::atomic<int64_t> idle_closed{0};      // no byte within idle_timeout_ms
  std::atomic<int64_t> header_timeouts{0};  // head incomplete at header_timeout_ms
  std::atomic<int64_t> bad_heads{0};        // answered 400/413/431/501 before routing
  std::atomic<int64_t> deadline_cuts{0};    // body read or response write past its deadline
};

// What the head check found wrong: the status and a message for the error body.
struct HeadRejection {
  int status = 400;
  std::string code;
  std::string message;
};

// Checks the framing of a complete request head (request line and header lines, without
// the blank line): at most one Content-Length, of digits only, no larger than
// max_body_bytes; Transfer-Encoding only a single "chunked" and never with
// Content-Length; no body on GET/HEAD; no obsolete line folding.
std::optional<HeadRejection> check_request_head(std::string_view head, int64_t max_body_bytes);

// The request being served on the calling thread: whether its body was read to its end
// (else the connection closes after the response), and a deadline for the response's
// writes (0 clears it), past which a write fails. No-ops off GuardedServer threads.
void mark_request_body_consumed();
void arm_write_deadline(int64_t ms);
inline void clear_write_deadline() {
  arm_write_deadline(0);
}

class GuardedServer : public httplib::Server {
 public:
  explicit GuardedServer(const GuardLimits& limits);

  const GuardLimits& limits() const { return limits_; }
  const GuardCounters& counters() const { return counters_; }
  // Ends waits for request heads promptly; call before httplib::Server::stop().
  void begin_stop() { stopping_.store(true); }
  // Call after bind_to_port/bind_to_any_port: httplib listens with a backlog of 5, so a
  // burst of connections (an attack, or just many clients) overflows the accept queue
  // and the kernel makes the unlucky ones retry their handshake a second or more later.
  void widen_listen_backlog();

 private:
  class Pool;
  class ConnectionStream;
  struct Head {
    size_t length = 0;  // bytes up to and with the blank line
    bool has_body = false;
  };
  enum class HeadWait { kReady, kClosed, kRejected };

  // httplib calls this on a pool thread for each accepted socket. It is a private
  // virtual of httplib::Server; overriding it is how the server sees the socket first.
  bool process_and_close_socket(socket_t sock) override;
  HeadWait await_head(int sock, Head& head);

  const GuardLimits limits_;
  GuardCounters counters_;
  std::atomic<bool> stopping_{false};
  int listen_fd_ = -1;  // the socket httplib bound, seen through its socket options hook
};

}  // namespace hearth::server
