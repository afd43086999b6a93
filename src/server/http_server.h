// The HTTP front: binds the socket, authenticates, routes to the API families and
// stops cleanly. One HttpServer serves one ServiceApi.
#pragma once

#include <httplib.h>

#include <memory>
#include <string>

#include "hearth/server/server.h"
#include "server/connection_guard.h"
#include "server/generation.h"
#include "server/service_api.h"

namespace hearth::server {

class HttpServer {
 public:
  HttpServer(ServiceApi& service, const ServerConfig& config);
  ~HttpServer();

  // Binds host:port (port 0 = any free port). Fails with a message naming the address.
  Status bind();
  int port() const { return port_; }
  // Serves until stop(); returns when the listener and worker threads are done.
  void run();
  // Stops accepting; in-flight generations get config.shutdown_grace_ms to finish.
  void stop();

  ServerContext& context() { return ctx_; }
  const GuardCounters& guard_counters() const { return http_->counters(); }

 private:
  void install_routes();
  // Turns httplib's own bare errors (no route, body too large) into API errors.
  void reply_httplib_error(const httplib::Request& req, httplib::Response& res);

  const ServerConfig config_;
  ServerContext ctx_;
  std::unique_ptr<GuardedServer> http_;
  int port_ = 0;
};

}  // namespace hearth::server
