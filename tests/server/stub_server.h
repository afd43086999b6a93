// An in-process HttpServer over the real runtime: RuntimeService over
// hearth::runtime::Runtime, every model on the deterministic stub backend
// (tests/testing/stub_backend.h) injected through RuntimeServiceOptions::backend_for,
// the production extension point. A bug anywhere between the HTTP routes and the
// runtime's scheduler and cache shows up here; only the forward pass is simulated.
#pragma once

#include <httplib.h>

#include <memory>
#include <thread>

#include "server/http_server.h"
#include "server/runtime_service.h"
#include "testing/stub_backend.h"

namespace hearth::server::testing {

class StubServer {
 public:
  StubServer() = default;
  StubServer(const StubServer&) = delete;
  StubServer& operator=(const StubServer&) = delete;
  ~StubServer() { stop(); }

  // Loads config.models on the stub and serves on a free loopback port.
  Status start(ServerConfig config) {
    RuntimeServiceOptions options;
    options.backend_for = [control = control_](const runtime::ModelConfig& c) {
      return runtime::stub_factory_for(c, control);
    };
    return start_with(std::move(config), std::move(options));
  }
  // The same with config.models on the real engine backend (hearth serve's own path),
  // for tests that need a real model's tokenizer or forward pass.
  Status start_engine(ServerConfig config) { return start_with(std::move(config), {}); }

 private:
  Status start_with(ServerConfig config, RuntimeServiceOptions options) {
    config.port = 0;
    HEARTH_ASSIGN_OR_RETURN(service_, make_runtime_service(config, std::move(options)));
    server_ = std::make_unique<HttpServer>(*service_, config);
    HEARTH_RETURN_IF_ERROR(server_->bind());
    thread_ = std::thread([this] { server_->run(); });
    return OkStatus();
  }

 public:
  // What `hearth serve` does on SIGTERM, then at exit: stop the listener (in-flight
  // requests get shutdown_grace_ms), wait for it, shut the runtime down.
  void stop() {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
    if (service_) service_->shutdown();
    server_.reset();
    service_.reset();
  }

  // Shared by every stub backend the runtime builds (and rebuilds on restart).
  runtime::StubControl& control() { return *control_; }
  ServiceApi& service() { return *service_; }
  HttpServer& http() { return *server_; }
  int port() const { return server_->port(); }
  // Requests of `model` holding a sequence now (the runtime's own count).
  int64_t active(const std::string& model) {
    auto info = service_->model_info(model);
    return info.ok() ? info->active_requests : -1;
  }

 private:
  std::shared_ptr<runtime::StubControl> control_ = std::make_shared<runtime::StubControl>();
  std::unique_ptr<ServiceApi> service_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

}  // namespace hearth::server::testing
