#include "server/connection_guard.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "server/api_error.h"

namespace hearth::server {
namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Set by Pool::enqueue around a connection it runs inline to refuse it.
thread_local bool t_shed = false;

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Writes a complete error response without blocking: the socket's send buffer holds
// far more than these few hundred bytes, and a peer that does not read loses nothing
// it asked for.
void send_canned(int sock, int status, const char* reason, const std::string& code,
                 const std::string& message, const std::string& extra_headers = "") {
  ApiError e;
  e.http_status = status;
  e.type = status >= 500 ? "server_error" : "invalid_request_error";
  e.code = code;
  e.message = message;
  const std::string body = openai_error_body(e);
  const std::string text =
      "HTTP/1.1 " + std::to_string(status) + " " + reason +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\nConnection: close\r\n" + extra_headers + "\r\n" + body;
  (void)::send(sock, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

const char* reason_for(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 413:
      return "Payload Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    default:
      return "Error";
  }
}

// Closes after a response without a reset: unread request bytes (a body the server
// refused, pipelined requests) would make close() send RST, which can destroy the
// response in the client's receive buffer. Reads what is queued, bounded in time and
// bytes, then closes.
void linger_close(int sock) {
  ::shutdown(sock, SHUT_WR);
  const int64_t end = now_ms() + 200;
  size_t drained = 0;
  char buf[16384];
  while (drained < (64u << 20)) {
    const int64_t left = end - now_ms();
    if (left <= 0) break;
    pollfd p{sock, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 50))) <= 0) break;
    const ssize_t n = ::recv(sock, buf, sizeof(buf), MSG_DONTWAIT);
    if (n <= 0) break;
    drained += static_cast<size_t>(n);
  }
  ::close(sock);
}

}  // namespace

namespace {

std::optional<HeadRejection> inspect_head(std::string_view head, int64_t max_body_bytes,
                                          bool& has_body) {
  auto reject = [](int status, std::string code, std::string message) {
    return std::optional<HeadRejection>(HeadRejection{status, std::move(code), std::move(message)});
  };
  size_t eol = head.find("\r\n");
  const std::string_view request_line = head.substr(0, eol);
  const std::string_view method = request_line.substr(0, request_line.find(' '));
  bool has_length = false;
  bool chunked = false;
  bool has_encoding = false;
  uint64_t length = 0;
  while (eol != std::string_view::npos) {
    const size_t start = eol + 2;
    eol = head.find("\r\n", start);
    const std::string_view line =
        head.substr(start, eol == std::string_view::npos ? head.npos : eol - start);
    if (line.empty()) continue;
    if (line.front() == ' ' || line.front() == '\t') {
      return reject(400, "malformed_request", "obsolete header line folding is not accepted");
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return reject(400, "malformed_request", "a header line has no ':'");
    }
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = trim(line.substr(colon + 1));
    if (iequals(name, "Content-Length")) {
      // One length, digits only: a sign, a second header (equal or not) or a list are
      // the shapes request smuggling uses, and strtoull would wrap "-1" and overflow.
      if (has_length) return reject(400, "invalid_content_length", "duplicate Content-Length");
      has_length = true;
      if (value.empty() || value.size() > 19 ||
          !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return reject(400, "invalid_content_length",
                      "Content-Length must be a decimal byte count below 10^19");
      }
      for (char c : value) length = length * 10 + static_cast<uint64_t>(c - '0');
    } else if (iequals(name, "Transfer-Encoding")) {
      if (has_encoding || !iequals(value, "chunked")) {
        return reject(501, "unsupported_transfer_encoding",
                      "Transfer-Encoding must be a single 'chunked'");
      }
      has_encoding = true;
      chunked = true;
    }
  }
  if (has_length && chunked) {
    return reject(400, "invalid_content_length",
                  "Content-Length and Transfer-Encoding must not both be sent");
  }
  if ((method == "GET" || method == "HEAD") && (chunked || length > 0)) {
    return reject(400, "malformed_request", "a GET or HEAD request must not carry a body");
  }
  if (length > static_cast<uint64_t>(max_body_bytes)) {
    return reject(413, "request_too_large",
                  "request body exceeds limits.max_body_bytes (" + std::to_string(max_body_bytes) +
                      " bytes)");
  }
  has_body = chunked || length > 0;
  return std::nullopt;
}

}  // namespace

std::optional<HeadRejection> check_request_head(std::string_view head, int64_t max_body_bytes) {
  bool has_body = false;
  return inspect_head(head, max_body_bytes, has_body);
}

// httplib::Server::process_request (parse one request, route it, write the response)
// is private. An explicit instantiation may name a private member ([temp.spec.general]
// p6): this is the standard way to reach it without patching the library, and the
// pointer's type is checked against the header's declaration.
using ProcessRequestFn = bool (httplib::Server::*)(httplib::Stream&, bool, bool&,
                                                   const std::function<void(httplib::Request&)>&);
ProcessRequestFn process_request_fn();
template <ProcessRequestFn Fn>
struct ProcessRequestAccess {
  friend ProcessRequestFn process_request_fn() { return Fn; }
};
template struct ProcessRequestAccess<&httplib::Server::process_request>;

namespace {

// The request being served on this thread (see mark_request_body_consumed).
struct RequestState {
  bool body_consumed = false;
  bool close_requested = false;   // the response said "Connection: close"
  int64_t write_deadline_ms = 0;  // 0 = none
};
thread_local RequestState* t_request = nullptr;

std::string numeric_host(const sockaddr_storage& ss, socklen_t len, int& port) {
  char host[NI_MAXHOST];
  char serv[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&ss), len, host, sizeof(host), serv,
                  sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    port = -1;
    return {};
  }
  port = std::atoi(serv);
  return host;
}

}  // namespace

void mark_request_body_consumed() {
  if (t_request != nullptr) t_request->body_consumed = true;
}

void arm_write_deadline(int64_t ms) {
  if (t_request != nullptr) t_request->write_deadline_ms = ms > 0 ? now_ms() + ms : 0;
}

// One request's view of the connection. The head, already peeked whole, is taken in
// one recv; after it, reads go straight to the socket for no more than httplib asks,
// so bytes of a pipelined next request stay queued for the next round. Reads fail past
// the body deadline or once the body has taken its wire budget (chunk framing and a
// compressed body can exceed max_body_bytes a little, a chunk-size line without end
// cannot); writes fail past the write deadline.
class GuardedServer::ConnectionStream : public httplib::Stream {
 public:
  ConnectionStream(int sock, const GuardLimits& limits, GuardCounters& counters,
                   RequestState& state)
      : sock_(sock), limits_(limits), counters_(counters), state_(state) {
    read_deadline_ms_ = now_ms() + limits_.body_timeout_ms;
    wire_budget_ = 2 * static_cast<uint64_t>(limits_.max_body_bytes) + (1u << 20);
  }

  // Takes the `length` head bytes that await_head saw; false when they are not there.
  bool take_head(size_t length) {
    head_.resize(length);
    const ssize_t n = ::recv(sock_, head_.data(), length, MSG_WAITALL);
    return n == static_cast<ssize_t>(length);
  }

  bool is_readable() const override { return wait_for(POLLIN, read_deadline_ms_); }

  bool is_writable() const override {
    if (!wait_for(POLLOUT, state_.write_deadline_ms)) return false;
    // A peer that closed its end has no reader for the reply (httplib's own check).
    pollfd p{sock_, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return true;
    char byte;
    return ::recv(sock_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
  }

  ssize_t read(char* ptr, size_t size) override {
    if (head_off_ < head_.size()) {
      const size_t n = std::min(size, head_.size() - head_off_);
      std::memcpy(ptr, head_.data() + head_off_, n);
      head_off_ += n;
      return static_cast<ssize_t>(n);
    }
    if (wire_read_ >= wire_budget_ || !is_readable()) return -1;
    const ssize_t n = ::recv(sock_, ptr, std::min<uint64_t>(size, wire_budget_ - wire_read_), 0);
    if (n > 0) wire_read_ += static_cast<uint64_t>(n);
    return n;
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    return ::send(sock_, ptr, size, MSG_NOSIGNAL);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    if (::getpeername(sock_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
      ip = numeric_host(ss, len, port);
    }
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    if (::getsockname(sock_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
      ip = numeric_host(ss, len, port);
    }
  }
  socket_t socket() const override { return sock_; }

 private:
  // Waits for `events` in slices no longer than the per-call timeout and never past
  // `deadline_ms` (0 = none). False on timeout, deadline or error.
  bool wait_for(short events, int64_t deadline_ms) const {
    const int64_t per_call = events == POLLIN ? limits_.body_timeout_ms : limits_.write_timeout_ms;
    int64_t end = now_ms() + per_call;
    if (deadline_ms > 0 && deadline_ms < end) end = deadline_ms;
    for (;;) {
      const int64_t left = end - now_ms();
      if (left <= 0) {
        if (deadline_ms > 0 && now_ms() >= deadline_ms) counters_.deadline_cuts.fetch_add(1);
        return false;
      }
      pollfd p{sock_, events, 0};
      const int r = ::poll(&p, 1, static_cast<int>(left));
      if (r > 0) return (p.revents & (POLLERR | POLLNVAL)) == 0 || (p.revents & events);
      if (r < 0 && errno != EINTR) return false;
    }
  }

  const int sock_;
  const GuardLimits& limits_;
  GuardCounters& counters_;
  RequestState& state_;
  std::string head_;
  size_t head_off_ = 0;
  int64_t read_deadline_ms_ = 0;
  uint64_t wire_budget_ = 0;
  uint64_t wire_read_ = 0;
};

// A thread per connection, started on demand up to max_connections and then kept: an
// idle or slow client holds only its own thread, never one that /health needs.
// Connections beyond the cap are run inline on the accept thread in "shed" mode,
// which answers 503 without blocking and closes.
class GuardedServer::Pool : public httplib::TaskQueue {
 public:
  explicit Pool(size_t max_threads) : max_(max_threads) {}

  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard lock(mu_);
      if (!stop_ && in_flight_ < max_) {
        ++in_flight_;
        jobs_.push_back(std::move(fn));
        if (jobs_.size() > idle_ && threads_.size() < max_) {
          threads_.emplace_back([this] { work(); });
        }
        cv_.notify_one();
        return;
      }
    }
    t_shed = true;
    fn();
    t_shed = false;
  }

  void shutdown() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  void work() {
    std::unique_lock lock(mu_);
    for (;;) {
      ++idle_;
      cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
      --idle_;
      if (jobs_.empty()) return;  // stopping and nothing left to serve
      std::function<void()> fn = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
      --in_flight_;
    }
  }

  const size_t max_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  size_t in_flight_ = 0;  // queued or running
  bool stop_ = false;
};

namespace {
// Requests served on one connection before it is closed (the "max" httplib announces
// in its Keep-Alive header).
constexpr int64_t kMaxRequestsPerConnection = 100;
}  // namespace

GuardedServer::GuardedServer(const GuardLimits& limits) : limits_(limits) {
  const auto cap = static_cast<size_t>(std::max<int64_t>(1, limits_.max_connections));
  // httplib owns the queue it is handed and deletes it (its API takes a raw pointer).
  new_task_queue = [cap] { return new Pool(cap); };
  // Only what httplib announces in its Keep-Alive header and its payload check; the
  // loop below and ConnectionStream enforce the limits.
  set_keep_alive_max_count(kMaxRequestsPerConnection);
  set_keep_alive_timeout(std::max<int64_t>(1, limits_.idle_timeout_ms / 1000));
  set_payload_max_length(static_cast<size_t>(limits_.max_body_bytes));
  // SO_REUSEADDR only: a restart binds while old connections sit in TIME_WAIT, but a
  // second live server on the port fails to bind (httplib's default, SO_REUSEPORT, lets
  // the kernel split the traffic between two servers without a word).
  set_socket_options([this](socket_t sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_fd_ = sock;
  });
  set_logger([](const httplib::Request&, const httplib::Response& res) {
    if (t_request != nullptr && res.get_header_value("Connection") == "close") {
      t_request->close_requested = true;
    }
  });
}

void GuardedServer::widen_listen_backlog() {
  // The kernel caps this at net.core.somaxconn.
  if (listen_fd_ >= 0)
    ::listen(listen_fd_, static_cast<int>(std::min<int64_t>(limits_.max_connections, 4096)));
}

GuardedServer::HeadWait GuardedServer::await_head(int sock, Head& head) {
  const auto cap = static_cast<size_t>(limits_.max_header_bytes);
  std::string buf(cap, '\0');
  const int64_t start = now_ms();
  size_t have = 0;
  HeadWait result = HeadWait::kClosed;
  for (;;) {
    const int64_t now = now_ms();
    const int64_t deadline =
        have == 0 ? start + std::min(limits_.idle_timeout_ms, limits_.header_timeout_ms)
                  : start + limits_.header_timeout_ms;
    if (now >= deadline) {
      (have == 0 ? counters_.idle_closed : counters_.header_timeouts).fetch_add(1);
      break;
    }
    if (stopping_.load()) break;
    // Wake only when a byte beyond those already peeked has arrived.
    const int lowat = static_cast<int>(std::min<size_t>(have + 1, INT_MAX));
    ::setsockopt(sock, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat));
    pollfd p{sock, POLLIN | POLLRDHUP, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(deadline - now, 100)));
    if (ready == 0 || (ready < 0 && errno == EINTR)) continue;
    if (ready < 0) break;
    const ssize_t n = ::recv(sock, buf.data(), cap, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) break;  // closed by the client
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
      break;
    }
    if (static_cast<size_t>(n) == have) {
      // No new byte although poll said so. A client that shut its sending side (FIN:
      // POLLRDHUP) or hung up can never complete this head: close now rather than hold
      // the thread until the header timeout. Otherwise do not spin.
      if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    have = static_cast<size_t>(n);
    const std::string_view peeked(buf.data(), have);
    const size_t end = peeked.find("\r\n\r\n");
    if (end != std::string_view::npos) {
      head.length = end + 4;
      if (auto bad = inspect_head(peeked.substr(0, end), limits_.max_body_bytes, head.has_body)) {
        counters_.bad_heads.fetch_add(1);
        send_canned(sock, bad->status, reason_for(bad->status), bad->code, bad->message);
        result = HeadWait::kRejected;
      } else {
        result = HeadWait::kReady;
      }
      break;
    }
    if (have >= cap) {
      counters_.bad_heads.fetch_add(1);
      send_canned(sock, 431, reason_for(431), "request_header_too_large",
                  "request line and headers exceed limits.max_header_bytes (" +
                      std::to_string(cap) + " bytes)");
      result = HeadWait::kRejected;
      break;
    }
  }
  const int one = 1;
  ::setsockopt(sock, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof(one));
  return result;
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
  // Replies are written as they are ready (a head, then a body; one SSE event after
  // another): with Nagle's algorithm on, the second write of a keep-alive reply waits
  // for the client's delayed ACK, some 40 ms per request.
  const int nodelay = 1;
  ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &nodelay, sizeof(nodelay));
  if (t_shed) {
    counters_.shed.fetch_add(1);
    send_canned(sock, 503, "Service Unavailable", "too_many_connections",
                "the server holds limits.max_connections (" +
                    std::to_string(limits_.max_connections) + ") connections; retry later",
                "Retry-After: 1\r\n");
    ::close(sock);
    return false;
  }
  bool ok = false;
  for (int64_t served = 0; served < kMaxRequestsPerConnection; ++served) {
    Head head;
    const HeadWait wait = await_head(sock, head);
    if (wait != HeadWait::kReady) break;
    RequestState state;
    ConnectionStream strm(sock, limits_, counters_, state);
    if (!strm.take_head(head.length)) break;
    const bool last = stopping_.load() || served + 1 == kMaxRequestsPerConnection;
    bool connection_closed = false;
    t_request = &state;
    ok = (this->*process_request_fn())(strm, last, connection_closed, nullptr);
    t_request = nullptr;
    // A body left (partly) unread would be parsed as the next request.
    if (!ok || last || connection_closed || state.close_requested ||
        (head.has_body && !state.body_consumed)) {
      break;
    }
  }
  linger_close(sock);
  return ok;
}

}  // namespace hearth::server
