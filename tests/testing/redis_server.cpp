#include "testing/redis_server.h"

#include "testing/free_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace hearth::testing {

namespace {

const char* find_redis_server() {
  for (const char* p : {"/usr/bin/redis-server", "/usr/local/bin/redis-server"}) {
    if (::access(p, X_OK) == 0) return p;
  }
  return nullptr;
}

bool accepts(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

RedisServer::RedisServer(std::vector<std::string> extra_args) : extra_(std::move(extra_args)) {
  if (find_redis_server() == nullptr) {
    why_ = "redis-server is not installed (scripts/install-deps.sh installs it)";
    return;
  }
  std::string tmpl = (std::filesystem::temp_directory_path() / "hearth-redis-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    why_ = "mkdtemp failed";
    return;
  }
  dir_ = tmpl;
  port_ = free_port();
  if (port_ == 0) {
    why_ = "no free port";
    return;
  }
  start();
}

RedisServer::~RedisServer() {
  stop();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string RedisServer::url() const {
  return "redis://127.0.0.1:" + std::to_string(port_) + "/0";
}

bool RedisServer::start() {
  const char* bin = find_redis_server();
  std::vector<std::string> args = {bin,
                                   "--port",
                                   std::to_string(port_),
                                   "--bind",
                                   "127.0.0.1",
                                   "--dir",
                                   dir_,
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "no",
                                   "--daemonize",
                                   "no",
                                   "--logfile",
                                   dir_ + "/redis.log"};
  args.insert(args.end(), extra_.begin(), extra_.end());
  pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin, argv.data());
    ::_exit(127);
  }
  if (pid < 0) {
    why_ = "fork failed";
    return false;
  }
  pid_ = pid;
  for (int i = 0; i < 500; ++i) {  // up to 5 s
    if (accepts(port_)) return true;
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      why_ = "redis-server exited at start (see " + dir_ + "/redis.log)";
      pid_ = -1;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  why_ = "redis-server did not accept connections on port " + std::to_string(port_) + " (see " +
         dir_ + "/redis.log)";
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
  return false;
}

void RedisServer::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGCONT);  // a paused server must run to handle SIGTERM
  ::kill(pid_, SIGTERM);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void RedisServer::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void RedisServer::pause() {
  if (pid_ > 0) ::kill(pid_, SIGSTOP);
}

void RedisServer::resume() {
  if (pid_ > 0) ::kill(pid_, SIGCONT);
}

bool RedisServer::restart() {
  stop();
  return port_ != 0 && start();
}

}  // namespace hearth::testing
