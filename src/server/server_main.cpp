// run_server: process-level wiring of `hearth serve`. Owns the service, the HTTP
// server and the signal thread; SIGTERM/SIGINT stop accepting, let in-flight
// generations finish within the grace period, then shut the runtime down (which
// writes the shutdown saves) and return 0.
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "hearth/log.h"
#include "hearth/server/server.h"
#include "server/http_server.h"
#include "server/runtime_service.h"

namespace hearth::server {

int run_server(const ServerConfig& input) {
  ServerConfig config = input;
  if (!config.cache_dir.empty() && config.disk.dir.empty()) {
    config.disk.enabled = true;
    config.disk.dir = config.cache_dir;
  }
  if (Status s = validate_config(config); !s.ok()) {
    std::fprintf(stderr, "hearth serve: %s\n", s.message().c_str());
    return 2;
  }
  // Everything the server and cache create is private to this user: dirs 0700, files
  // 0600. The cache creates a missing tier directory and claims it with a marker and a
  // lock; it never changes the mode of a directory it did not create.
  ::umask(077);

  // Block the stop signals in every thread; one thread waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGUSR1);  // internal wake-up at exit
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a vanished client must not kill the server

  auto service = make_runtime_service(config);
  if (!service.ok()) {
    std::fprintf(stderr, "hearth serve: %s\n", service.status().message().c_str());
    return 1;
  }
  ServiceApi& api = *service.value();
  HttpServer server(api, config);
  if (Status s = server.bind(); !s.ok()) {
    std::fprintf(stderr, "hearth serve: %s\n", s.message().c_str());
    api.shutdown();
    return 1;
  }

  std::thread signal_thread([&] {
    bool stopping = false;
    for (;;) {
      int sig = 0;
      if (sigwait(&stop_signals, &sig) != 0) continue;
      if (sig == SIGUSR1) return;
      if (!stopping) {
        log::info(std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
                  ": stopping (in-flight requests get " + std::to_string(config.shutdown_grace_ms) +
                  " ms)");
        stopping = true;
        server.stop();
      } else {
        log::warn("second stop signal: cancelling in-flight requests now");
        server.context().shutdown_deadline_ms.store(0);
      }
    }
  });

  const std::string url = "http://" + config.host + ":" + std::to_string(server.port());
  std::printf("hearth serve: listening on %s (models: %zu%s)\n", url.c_str(),
              api.list_models().size(), config.api_key.empty() ? "" : ", API key required");
  std::fflush(stdout);
  server.run();

  log::info("listener closed; shutting the runtime down");
  api.shutdown();
  pthread_kill(signal_thread.native_handle(), SIGUSR1);
  signal_thread.join();
  log::info("bye");
  return 0;
}

}  // namespace hearth::server
