#include "server/http_util.h"

#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdlib>
#include <random>

#include "server/connection_guard.h"

namespace hearth::server {

ErrorShape shape_for_path(const std::string& path) {
  return path.rfind("/v1/messages", 0) == 0 ? ErrorShape::kAnthropic : ErrorShape::kOpenAi;
}

void reply_json(httplib::Response& res, const nlohmann::json& body, int status) {
  res.status = status;
  res.set_content(json_text(body), "application/json");
}

void reply_error(httplib::Response& res, const ApiError& error, ErrorShape shape) {
  res.status = error.http_status;
  res.set_content(
      shape == ErrorShape::kAnthropic ? anthropic_error_body(error) : openai_error_body(error),
      "application/json");
}

std::string sse_event(const nlohmann::json& data, const std::string& event) {
  std::string out;
  if (!event.empty()) out += "event: " + event + "\n";
  out += "data: " + json_text(data) + "\n\n";
  return out;
}

void add_session_id(nlohmann::json& body, const GenerateRequest& request) {
  if (request.session_id) body["session_id"] = *request.session_id;
}

nlohmann::json finish_key_json(const GenerateStats& stats) {
  return stats.finish_key.empty() ? nlohmann::json(nullptr) : nlohmann::json(stats.finish_key);
}

std::string make_id(const std::string& prefix) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  static const char* hex = "0123456789abcdef";
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += hex[rng() % 16];
  return id;
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

RouteHandler with_metrics(ServerContext& ctx, std::string endpoint, RouteHandler handler) {
  return [&ctx, endpoint = std::move(endpoint), handler = std::move(handler)](
             const httplib::Request& req, httplib::Response& res) {
    const int64_t start = steady_now_ms();
    res.set_header("X-Request-Id", begin_request_log(make_id("req-")).id);
    handler(req, res);
    // A streaming reply is recorded by its content provider when the stream ends.
    if (!res.is_chunked_content_provider_) {
      ctx.metrics.record_request(endpoint, res.status, (steady_now_ms() - start) / 1000.0);
      log_request(endpoint, res.status);
    }
  };
}

bool request_has_body(const httplib::Request& req) {
  if (req.has_header("Transfer-Encoding")) return true;  // only "chunked" gets this far
  const std::string length = req.get_header_value("Content-Length");
  return length.find_first_not_of('0') != std::string::npos;
}

namespace {

// "application/json", any parameters (charset) aside, in any letter case.
bool is_json_media_type(const std::string& value) {
  std::string type = value.substr(0, value.find(';'));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.pop_back();
  for (auto& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return type == "application/json";
}

// The Content-Encoding values httplib decodes before the body reaches the reader, as
// httplib matches them (exact, lower case), or none. Anything else would reach the JSON
// parser still encoded: httplib passes an unknown coding through, takes any value that
// contains "br" for brotli, and decodes one coding of a list.
bool supported_content_encoding(const httplib::Request& req) {
  const size_t n = req.get_header_value_count("Content-Encoding");
  if (n == 0) return true;
  const std::string coding = req.get_header_value("Content-Encoding");
  return n == 1 &&
         (coding == "gzip" || coding == "deflate" || coding == "br" || coding == "identity");
}

// Reads the request body into `body`; on failure replies and returns false.
bool read_bounded_body(ServerContext& ctx, const httplib::Request& req, httplib::Response& res,
                       const httplib::ContentReader& reader, std::string& body) {
  ApiError e;
  const bool has_body = request_has_body(req);
  if ((req.has_header("Content-Type") || has_body) &&
      !is_json_media_type(req.get_header_value("Content-Type"))) {
    e.http_status = 415;
    e.code = "unsupported_media_type";
    e.message = "the request body must be sent as 'Content-Type: application/json'";
  } else if (!has_body) {
    return true;
  } else if (!supported_content_encoding(req)) {
    e.http_status = 415;
    e.code = "unsupported_content_encoding";
    e.message = "Content-Encoding must be one of gzip, deflate, br (lower case, one coding)";
  } else {
    const auto limit = static_cast<size_t>(ctx.config.limits.max_body_bytes);
    bool too_large = false;
    const bool read = reader([&](const char* data, size_t n) {
      if (n > limit - body.size()) {
        too_large = true;
        return false;  // stops httplib reading: the rest is never buffered
      }
      body.append(data, n);
      return true;
    });
    if (read) {
      mark_request_body_consumed();
      return true;
    }
    if (too_large) {
      e.http_status = 413;
      e.code = "request_too_large";
      e.message = "request body exceeds limits.max_body_bytes (" +
                  std::to_string(ctx.config.limits.max_body_bytes) + " bytes)";
    } else if (res.status == 415) {  // a coding this build of httplib cannot decode
      e.http_status = 415;
      e.code = "unsupported_content_encoding";
      e.message = "Content-Encoding must be one of gzip, deflate, br (lower case, one coding)";
    } else {
      e.http_status = 400;
      e.code = "incomplete_body";
      e.message =
          "the request body is malformed or shorter than its Content-Length (or did not "
          "arrive within limits.body_timeout_ms)";
    }
  }
  body.clear();
  reply_error(res, e, shape_for_path(req.path));
  // RFC 9110 15.5.16: a 415 for a content coding names the codings accepted.
  if (e.code == "unsupported_content_encoding")
    res.set_header("Accept-Encoding", "gzip, deflate, br");
  if (has_body) res.set_header("Connection", "close");  // the body was not read to its end
  ctx.metrics.record_request("malformed", e.http_status, 0);
  return false;
}

httplib::Server::HandlerWithContentReader with_bounded_body(ServerContext& ctx,
                                                            RouteHandler handler) {
  return [&ctx, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res,
                                              const httplib::ContentReader& reader) {
    std::string body;
    if (!read_bounded_body(ctx, req, res, reader, body)) return;
    // A copy, since httplib hands content-reader handlers a const request; its
    // `matches` still point into req.path, which outlives the call.
    httplib::Request full = req;
    full.body = std::move(body);
    handler(full, res);
  };
}

}  // namespace

void post_json(httplib::Server& http, ServerContext& ctx, const std::string& pattern,
               RouteHandler handler) {
  http.Post(pattern, with_bounded_body(ctx, std::move(handler)));
}

void delete_json(httplib::Server& http, ServerContext& ctx, const std::string& pattern,
                 RouteHandler handler) {
  http.Delete(pattern, with_bounded_body(ctx, std::move(handler)));
}

void register_body_catch_all(httplib::Server& http, ServerContext& ctx) {
  auto unknown = [&ctx](const httplib::Request& req, httplib::Response& res,
                        const httplib::ContentReader&) {
    ApiError e;
    e.http_status = 404;
    e.type = "not_found_error";
    e.code = "unknown_endpoint";
    e.message = "no endpoint " + req.method + " " + req.path;
    reply_error(res, e, shape_for_path(req.path));
    if (request_has_body(req)) res.set_header("Connection", "close");  // left unread
    ctx.metrics.record_request("unknown", 404, 0);
  };
  http.Post(".*", unknown);
  http.Put(".*", unknown);
  http.Patch(".*", unknown);
  http.Delete(".*", unknown);
}

}  // namespace hearth::server

namespace hearth::server {

std::shared_ptr<Generation> submit_generation(ServerContext& ctx, const GenerationPlan& plan,
                                              httplib::Response& res, ErrorShape shape) {
  Result<std::unique_ptr<Generation>> started =
      ctx.shutting_down.load()
          ? Result<std::unique_ptr<Generation>>(Unavailable("the server is shutting down"))
          : ctx.service.start_generation(plan.request);
  if (started.ok()) {
    if (plan.request.session_id) res.set_header("X-Session-Id", *plan.request.session_id);
    return std::shared_ptr<Generation>(std::move(started).value());
  }
  const Status& s = started.status();
  ApiError e = from_status(s);
  if (s.code() == ErrorCode::kResourceExhausted) {
    ctx.metrics.rejected_busy.fetch_add(1);
    e.message =
        "model '" + plan.model.id + "' is busy: " + s.message() +
        " (limits.max_queued_requests=" + std::to_string(ctx.config.limits.max_queued_requests) +
        "); retry later";
    res.set_header("Retry-After", std::to_string(ctx.config.limits.retry_after_s));
  } else if (s.code() == ErrorCode::kUnavailable && ctx.shutting_down.load()) {
    e.code = "shutting_down";
  }
  reply_error(res, e, shape);
  return nullptr;
}

void start_sse(httplib::Response& res, ServerContext& ctx, std::string endpoint,
               SseProducer produce) {
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  const int64_t start = steady_now_ms();
  auto done = std::make_shared<bool>(false);
  res.set_chunked_content_provider(
      "text/event-stream", [&ctx, endpoint = std::move(endpoint), produce = std::move(produce),
                            done, start](size_t /*offset*/, httplib::DataSink& sink) mutable {
        if (*done) return false;
        *done = true;
        bool alive = true;
        // A reader too slow to take one event within limits.write_timeout_ms is cut
        // (a per-send() timeout alone never trips on a reader that trickles); the write
        // then fails and the generation is cancelled, freeing its sequence.
        auto write = [&](const std::string& text) {
          if (!alive) return false;
          arm_write_deadline(ctx.config.limits.write_timeout_ms);
          alive = sink.write(text.data(), text.size());
          clear_write_deadline();
          return alive;
        };
        produce(write);
        log_request(endpoint, alive ? 200 : kClientClosedRequest);
        ctx.metrics.record_request(endpoint, alive ? 200 : kClientClosedRequest,
                                   (steady_now_ms() - start) / 1000.0);
        if (!alive) return false;
        sink.done();
        return true;
      });
}

}  // namespace hearth::server

namespace hearth::server {
namespace {

// Formats an address the way httplib fills Request::remote_addr / local_addr.
bool same_endpoint(const sockaddr_storage& ss, socklen_t len, const std::string& addr, int port) {
  char host[NI_MAXHOST];
  char serv[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&ss), len, host, sizeof(host), serv,
                  sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return false;
  }
  return std::atoi(serv) == port && addr == host;
}

// This process's socket whose peer is req.remote_* and whose own end is req.local_*.
// The address pair names one TCP connection, and the handler's thread keeps that
// connection (so its descriptor) open while it runs: the answer cannot go stale.
int connection_socket(const httplib::Request& req) {
  if (req.remote_port <= 0 || req.local_port <= 0) return -1;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int found = -1;
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    sockaddr_storage peer{};
    sockaddr_storage local{};
    socklen_t peer_len = sizeof(peer);
    socklen_t local_len = sizeof(local);
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0 ||
        getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &local_len) != 0) {
      continue;  // not a connected socket
    }
    if (same_endpoint(peer, peer_len, req.remote_addr, req.remote_port) &&
        same_endpoint(local, local_len, req.local_addr, req.local_port)) {
      found = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
  return found;
}

// A client that closed (FIN: POLLRDHUP) or reset the connection. HTTP/1.1 clients do
// not half-close while waiting for a reply, so a FIN means the reply has no reader.
bool peer_gone(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace

std::function<bool(const std::string&)> watch_connection(const httplib::Request& req) {
  const int fd = connection_socket(req);
  if (fd < 0) return [](const std::string&) { return true; };
  return [fd](const std::string&) { return !peer_gone(fd); };
}

}  // namespace hearth::server
