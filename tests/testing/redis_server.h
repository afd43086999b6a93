// A private redis-server for tests: a free loopback port, a temporary directory,
// no persistence (no RDB, no AOF). Stopped (SIGTERM) at destruction.
//
//   hearth::testing::RedisServer redis;
//   if (!redis.available()) GTEST_SKIP() << redis.why();
//   cfg.url = redis.url();   // redis://127.0.0.1:PORT/0
//   redis.kill();            // SIGKILL, the port stays reserved for restart()
//   redis.restart();         // same port, empty data
//   redis.pause(); redis.resume();  // SIGSTOP / SIGCONT: a hung, then healthy, Redis
//
// Shared by the cache, server and deployment (HAProxy) tests: keep the API stable.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace hearth::testing {

class RedisServer {
 public:
  // Starts at once; extra_args are appended to the command line (e.g.
  // {"--maxmemory", "1mb"}).
  explicit RedisServer(std::vector<std::string> extra_args = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // false when redis-server is not installed or did not come up; why() says which.
  bool available() const { return pid_ > 0; }
  const std::string& why() const { return why_; }
  std::string url() const;
  int port() const { return port_; }
  const std::string& dir() const { return dir_; }

  void stop();     // SIGTERM, waits
  void kill();     // SIGKILL, waits
  void pause();    // SIGSTOP: a hung Redis (connections accepted, no replies)
  void resume();   // SIGCONT
  bool restart();  // starts again on the same port; true once it accepts connections

 private:
  bool start();
  std::vector<std::string> extra_;
  std::string dir_;
  std::string why_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace hearth::testing
