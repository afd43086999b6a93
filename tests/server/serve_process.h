// Runs a real `hearth serve` child process for acceptance tests: any free port on
// loopback, stdout parsed for the bound URL, SIGTERM (or SIGKILL) on teardown.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace hearth::server::testing {

// Sends `bytes` as they are over a fresh loopback connection and returns what came back
// before the server closed it or `timeout_ms` of silence passed. For requests an HTTP
// client library would refuse to send (raw %FF, NUL, bad framing).
inline std::string raw_exchange(int port, const std::string& bytes, int timeout_ms = 5000) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {};
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size())) {
    pollfd p{fd, POLLIN, 0};
    while (::poll(&p, 1, timeout_ms) > 0) {
      char buf[4096];
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      reply.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return reply;
}

// The status code of the first response in `reply` ("HTTP/1.1 400 ..."), or 0.
inline int raw_status(const std::string& reply) {
  if (reply.rfind("HTTP/1.", 0) != 0 || reply.size() < 12) return 0;
  return std::atoi(reply.c_str() + 9);
}

class ServeProcess {
 public:
  ServeProcess() = default;
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;
  ~ServeProcess() { kill_hard(); }

  // Starts `hearth serve --port 0 ARGS...`; true once it printed its URL (bounded wait).
  bool start(const std::vector<std::string>& args, int timeout_ms = 15000) {
    int out_pipe[2];
    if (pipe(out_pipe) != 0) return false;
    log_path_ = "/tmp/hearth-serve-test-" + std::to_string(getpid()) + "-" +
                std::to_string(++counter()) + ".log";
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out_pipe[1], 1);
      int log = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (log >= 0) dup2(log, 2);
      close(out_pipe[0]);
      std::vector<std::string> argv_s = {HEARTH_CLI_PATH, "serve", "--port", "0"};
      argv_s.insert(argv_s.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : argv_s) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(out_pipe[1]);
    out_fd_ = out_pipe[0];
    fcntl(out_fd_, F_SETFL, O_NONBLOCK);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      char buf[512];
      const ssize_t n = read(out_fd_, buf, sizeof(buf));
      if (n > 0) stdout_.append(buf, static_cast<size_t>(n));
      const auto at = stdout_.find("listening on http://127.0.0.1:");
      if (at != std::string::npos && stdout_.find(' ', at + 30) != std::string::npos) {
        port_ = std::atoi(stdout_.c_str() + at + 30);
        return port_ > 0;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // SIGTERM and wait (bounded); returns the exit code, or -1 on timeout (then SIGKILL).
  int stop(int timeout_ms = 20000) {
    if (pid_ <= 0) return exit_status_;
    signal(SIGTERM);
    return wait(timeout_ms);
  }

  // Sends `sig` without waiting (a test that keeps talking to the stopping server).
  void signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }

  // Waits (bounded) for the process to exit; returns the exit code, or -1 on timeout
  // (then SIGKILL).
  int wait(int timeout_ms = 20000) {
    if (pid_ <= 0) return exit_status_;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return exit_status_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill_hard();
    return -1;
  }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int exit_status() const { return exit_status_; }
  std::string log() const {
    std::string s;
    if (FILE* f = std::fopen(log_path_.c_str(), "r")) {
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) s.append(buf, n);
      std::fclose(f);
    }
    return s;
  }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  void kill_hard() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    if (out_fd_ >= 0) {
      close(out_fd_);
      out_fd_ = -1;
    }
  }

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int port_ = 0;
  int exit_status_ = -1;
  std::string stdout_;
  std::string log_path_;
};

}  // namespace hearth::server::testing
