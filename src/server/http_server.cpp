#include "server/http_server.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <openssl/crypto.h>

#include "common/json_text.h"
#include "hearth/log.h"
#include "server/http_util.h"
#include "server/lora_routes.h"
#include "server/web_ui.h"

namespace hearth::server {
namespace {

bool constant_time_equal(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// The API key from "Authorization: Bearer KEY" or Anthropic's "x-api-key: KEY".
std::string presented_key(const httplib::Request& req) {
  const std::string auth = req.get_header_value("Authorization");
  const std::string bearer = "Bearer ";
  if (auth.size() > bearer.size() && auth.compare(0, bearer.size(), bearer) == 0) {
    return auth.substr(bearer.size());
  }
  return req.get_header_value("x-api-key");
}

// Why a request's target or headers cannot be taken as text ("" when they can). Every
// later step (routing, error messages, logs, metrics labels) may copy them into JSON.
std::string malformed_request_text(const httplib::Request& req) {
  auto bad = [](const std::string& s) {
    return s.find('\0') != std::string::npos || !is_valid_utf8(s);
  };
  if (bad(req.path)) return "the request path is not valid UTF-8 or contains NUL";
  for (const auto& [name, value] : req.headers) {
    if (bad(name) || bad(value)) return "a request header is not valid UTF-8 or contains NUL";
  }
  for (const auto& [name, value] : req.params) {
    if (bad(name) || bad(value)) return "a query parameter is not valid UTF-8 or contains NUL";
  }
  return {};
}

std::string lowercase(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// Whether a Host header names this server. A web page can resolve any name it controls
// to 127.0.0.1 (DNS rebinding) and would then be same-origin with a loopback server
// that answers to every Host; so a loopback server answers only to loopback names and
// config.allowed_hosts ("name" for any port, "name:port" for one). Requests without
// Host (HTTP/1.0, raw tools) pass: every browser sends one.
bool host_allowed(const ServerConfig& config, const std::string& host_header) {
  if (host_header.empty()) return true;
  const std::string host = lowercase(host_header);
  std::string name = host;
  if (host.front() == '[') {
    name = host.substr(0, host.find(']') + 1);  // "[::1]:8080" -> "[::1]"
  } else if (const size_t colon = host.rfind(':'); colon != std::string::npos) {
    name = host.substr(0, colon);
  }
  if (name == "localhost" || name == "127.0.0.1" || name == "[::1]") return true;
  for (const auto& allowed : config.allowed_hosts) {
    const std::string a = lowercase(allowed);
    if (a == host || a == name) return true;
  }
  return false;
}

// The Origin a CORS reply may name: one of config.cors_origins ("*" allows any), only
// for the API routes; "" when the request is not a cross-origin call hearth allows.
std::string cors_origin_for(const ServerConfig& config, const httplib::Request& req) {
  if (config.cors_origins.empty() || !req.has_header("Origin")) return "";
  if (req.path.rfind("/v1/", 0) != 0) return "";  // admin endpoints: same-origin only
  const std::string origin = req.get_header_value("Origin");
  for (const auto& allowed : config.cors_origins) {
    if (allowed == "*" || lowercase(allowed) == lowercase(origin)) return origin;
  }
  return "";
}

GuardLimits guard_limits(const LimitsConfig& l) {
  GuardLimits g;
  g.max_connections = l.max_connections;
  g.max_header_bytes = l.max_header_bytes;
  g.max_body_bytes = l.max_body_bytes;
  g.idle_timeout_ms = l.idle_timeout_ms;
  g.header_timeout_ms = l.header_timeout_ms;
  g.body_timeout_ms = l.body_timeout_ms;
  g.write_timeout_ms = l.write_timeout_ms;
  return g;
}

httplib::Server::HandlerResponse refuse(ServerContext& ctx, const httplib::Request& req,
                                        httplib::Response& res, int status, const std::string& code,
                                        const std::string& message, const char* metric) {
  ApiError e;
  e.http_status = status;
  e.type = status == 403 ? "permission_error" : "invalid_request_error";
  e.code = code;
  e.message = message;
  reply_error(res, e, shape_for_path(req.path));
  if (request_has_body(req)) res.set_header("Connection", "close");  // left unread
  ctx.metrics.record_request(metric, status, 0);
  return httplib::Server::HandlerResponse::Handled;
}

void reply_internal_error(httplib::Response& res, const std::string& what) {
  log::error("request handler threw: " + what);
  ApiError e;
  e.http_status = 500;
  e.type = "server_error";
  e.message = "internal error";
  res.headers.erase("Content-Type");
  reply_error(res, e);
}

// The error and pre-routing handlers run outside httplib's exception handler: an
// exception there would end the process, so each is fenced here.
template <typename Fn>
auto fenced(httplib::Response& res, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::exception& e) {
    reply_internal_error(res, e.what());
  } catch (...) {
    reply_internal_error(res, "unknown exception");
  }
  return decltype(fn())();
}

// config.node_id, else "HOSTNAME:PORT" (the port bound).
std::string node_name(const ServerConfig& config, int port) {
  if (!config.node_id.empty()) return config.node_id;
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') std::strcpy(host, "localhost");
  return std::string(host) + ":" + std::to_string(port);
}

}  // namespace

HttpServer::HttpServer(ServiceApi& service, const ServerConfig& config)
    : config_(config),
      ctx_(service, config_),
      http_(std::make_unique<GuardedServer>(guard_limits(config_.limits))) {
  ctx_.guard = &http_->counters();
  install_routes();
}

HttpServer::~HttpServer() = default;

void HttpServer::install_routes() {
  auto& http = *http_;
  // Thread pool, connection cap, timeouts, body and header limits: GuardedServer.
  const bool check_host = is_loopback_host(config_.host) || !config_.allowed_hosts.empty();

  http.set_pre_routing_handler(
      [this, check_host](const httplib::Request& req, httplib::Response& res) {
        return fenced(res, [&] {
          // Which node answered, on every reply (docs/scale-out.md).
          res.set_header("X-Hearth-Node", ctx_.node_id);
          if (std::string why = malformed_request_text(req); !why.empty()) {
            ApiError e = invalid_request(why, "", "malformed_request");
            reply_error(res, e, shape_for_path(req.path));
            res.set_header("Connection", "close");
            ctx_.metrics.record_request("malformed", 400, 0);
            return httplib::Server::HandlerResponse::Handled;
          }
          if (check_host && !host_allowed(config_, req.get_header_value("Host"))) {
            return refuse(ctx_, req, res, 403, "host_not_allowed",
                          "Host '" + req.get_header_value("Host") +
                              "' is not a loopback name or in server.allowed_hosts",
                          "forbidden");
          }
          // CORS (server.cors_origins, off by default): an allowed origin's preflight is
          // answered here, before the key check (browsers send none with it), and its
          // calls get Access-Control-Allow-Origin on whatever reply they get.
          if (const std::string origin = cors_origin_for(config_, req); !origin.empty()) {
            res.set_header("Access-Control-Allow-Origin", origin);
            res.set_header("Vary", "Origin");
            if (req.method == "OPTIONS") {
              res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
              res.set_header("Access-Control-Allow-Headers",
                             "Authorization, Content-Type, x-api-key, anthropic-version, "
                             "anthropic-beta, OpenAI-Organization, OpenAI-Project, "
                             "X-Stainless-Arch, X-Stainless-Lang, X-Stainless-OS, "
                             "X-Stainless-Package-Version, X-Stainless-Runtime, "
                             "X-Stainless-Runtime-Version, X-Stainless-Retry-Count, "
                             "X-Stainless-Timeout");
              res.set_header("Access-Control-Max-Age", "600");
              res.status = 204;
              return httplib::Server::HandlerResponse::Handled;
            }
          }
          // Admin calls change server state; a web page must not make them with the
          // user's network position. Same-origin is the only origin hearth serves.
          if (req.path.rfind("/hearth/", 0) == 0 && req.has_header("Origin") &&
              lowercase(req.get_header_value("Origin")) !=
                  "http://" + lowercase(req.get_header_value("Host"))) {
            return refuse(ctx_, req, res, 403, "cross_origin_refused",
                          "admin endpoints refuse cross-origin requests (Origin '" +
                              req.get_header_value("Origin") + "')",
                          "forbidden");
          }
          // The UI's pages and files are public; the API calls they make need the key.
          if (config_.api_key.empty() || req.path == "/health" ||
              is_web_ui_request(req.method, req.path))
            return httplib::Server::HandlerResponse::Unhandled;
          if (constant_time_equal(presented_key(req), config_.api_key)) {
            return httplib::Server::HandlerResponse::Unhandled;
          }
          ApiError e;
          e.http_status = 401;
          e.type = "authentication_error";
          e.code = "invalid_api_key";
          e.message = req.has_header("Authorization") || req.has_header("x-api-key")
                          ? "invalid API key"
                          : "missing API key: send 'Authorization: Bearer KEY' or 'x-api-key: KEY'";
          res.set_header("WWW-Authenticate", "Bearer");
          reply_error(res, e, shape_for_path(req.path));
          ctx_.metrics.record_request("unauthorized", 401, 0);
          return httplib::Server::HandlerResponse::Handled;
        });
      });

  // Turns httplib's own bare errors (no route, body too large) into API errors.
  http.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    fenced(res, [&] { reply_httplib_error(req, res); });
  });

  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        reply_internal_error(res, what);
      });

  register_openai_routes(http, ctx_);
  register_anthropic_routes(http, ctx_);
  register_responses_routes(http, ctx_);
  register_admin_routes(http, ctx_);
  register_verify_route(http, ctx_);
  register_lora_routes(http, ctx_);
  register_web_routes(http, ctx_);
  // Last, so they match only what no route did: a body sent to an unknown path is
  // refused unread (httplib would otherwise buffer it whole, chunked or not).
  register_body_catch_all(http, ctx_);
}

void HttpServer::reply_httplib_error(const httplib::Request& req, httplib::Response& res) {
  if (!res.body.empty()) return;
  ApiError e;
  e.http_status = res.status;
  if (res.status == 404) {
    e.type = "not_found_error";
    e.code = "unknown_endpoint";
    e.message = "no endpoint " + req.method + " " + req.path;
  } else if (res.status == 413) {
    e.code = "request_too_large";
    e.message = "request body exceeds limits.max_body_bytes (" +
                std::to_string(config_.limits.max_body_bytes) + " bytes)";
  } else if (res.status == 405) {
    e.message = "method " + req.method + " is not allowed on " + req.path;
  } else {
    e.message = "HTTP error " + std::to_string(res.status);
    if (res.status >= 500) e.type = "server_error";
  }
  reply_error(res, e, shape_for_path(req.path));
  res.status = e.http_status;
}

Status HttpServer::bind() {
  if (config_.port == 0) {
    port_ = http_->bind_to_any_port(config_.host);
    if (port_ <= 0) return IoError("cannot bind " + config_.host + " on any port");
    http_->widen_listen_backlog();
    ctx_.node_id = node_name(config_, port_);
    return OkStatus();
  }
  errno = 0;
  if (!http_->bind_to_port(config_.host, config_.port)) {
    const std::string where = config_.host + ":" + std::to_string(config_.port);
    if (errno == EADDRINUSE) {
      return IoError("cannot bind " + where +
                     ": the port is in use (another hearth serve or another program listens "
                     "on it); pick another with --port");
    }
    return IoError("cannot bind " + where + " (address not available: " + std::strerror(errno) +
                   ")");
  }
  port_ = config_.port;
  http_->widen_listen_backlog();
  ctx_.node_id = node_name(config_, port_);
  return OkStatus();
}

void HttpServer::run() {
  http_->listen_after_bind();
}

void HttpServer::stop() {
  ctx_.shutdown_deadline_ms.store(steady_now_ms() + config_.shutdown_grace_ms);
  ctx_.shutting_down.store(true);
  http_->begin_stop();
  http_->stop();
}

}  // namespace hearth::server
