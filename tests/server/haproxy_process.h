// Runs a real HAProxy (Debian's haproxy, scripts/install-deps.sh) for the scale-out
// tests: the repository's deploy/haproxy.cfg with its ports rewritten to free ones, in
// the foreground (-db), its log in a file, SIGTERM (or SIGKILL) on teardown; and reads
// its stats page (CSV) to see which nodes it holds UP.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "testing/free_port.h"

namespace hearth::server::testing {

using ::hearth::testing::free_port;

// The haproxy binary ("" when not installed): /usr/sbin is not on every user's PATH.
inline std::string haproxy_path() {
  for (const char* p : {"/usr/sbin/haproxy", "/usr/bin/haproxy", "/usr/local/sbin/haproxy"}) {
    if (::access(p, X_OK) == 0) return p;
  }
  return "";
}

// Rewrites every "127.0.0.1:PORT" of `cfg` by `ports` (deploy/haproxy.cfg's own port ->
// the test's); a `server` line whose port is not in `ports` is dropped (a node the test
// does not start). Other lines are kept as they are.
inline std::string rewrite_haproxy_ports(const std::string& cfg, const std::map<int, int>& ports) {
  std::istringstream in(cfg);
  std::string out, line;
  const std::string host = "127.0.0.1:";
  while (std::getline(in, line)) {
    const size_t at = line.find(host);
    if (at != std::string::npos) {
      const size_t digits = at + host.size();
      size_t end = digits;
      while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end]))) ++end;
      const int port = std::atoi(line.substr(digits, end - digits).c_str());
      const auto it = ports.find(port);
      const bool server_line = line.find_first_not_of(' ') != std::string::npos &&
                               line.compare(line.find_first_not_of(' '), 7, "server ") == 0;
      if (it == ports.end() && server_line) continue;
      if (it != ports.end())
        line = line.substr(0, digits) + std::to_string(it->second) + line.substr(end);
    }
    out += line + "\n";
  }
  return out;
}

class HaproxyProcess {
 public:
  HaproxyProcess() = default;
  HaproxyProcess(const HaproxyProcess&) = delete;
  HaproxyProcess& operator=(const HaproxyProcess&) = delete;
  ~HaproxyProcess() { stop(); }

  // Writes `cfg` to DIR/haproxy.cfg and runs haproxy on it; true once `stats_port`
  // answers (bounded wait).
  bool start(const std::string& binary, const std::filesystem::path& dir, const std::string& cfg,
             int stats_port, int timeout_ms = 15000) {
    const std::filesystem::path cfg_path = dir / "haproxy.cfg";
    std::ofstream(cfg_path) << cfg;
    log_path_ = (dir / "haproxy.log").string();
    stats_port_ = stats_port;
    pid_ = fork();
    if (pid_ == 0) {
      const int log = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (log >= 0) {
        dup2(log, 1);
        dup2(log, 2);
      }
      std::string b = binary, db = "-db", f = "-f", p = cfg_path.string();
      char* argv[] = {b.data(), db.data(), f.data(), p.data(), nullptr};
      execv(argv[0], argv);
      _exit(127);
    }
    return wait_for([&] { return !stats_csv().empty(); }, timeout_ms);
  }

  // SIGTERM and wait (bounded), then SIGKILL.
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  // The stats page as CSV ("" when it does not answer).
  std::string stats_csv() const {
    httplib::Client c("127.0.0.1", stats_port_);
    c.set_connection_timeout(1, 0);
    c.set_read_timeout(2, 0);
    c.set_url_encode(false);  // ";csv" is HAProxy's, not a path character to escape
    auto r = c.Get("/stats;csv");
    return r && r->status == 200 ? r->body : "";
  }

  // A server's check status in a backend ("UP", "DOWN", "MAINT", "no check", ... or ""
  // when the stats page does not list it).
  std::string server_status(const std::string& backend, const std::string& server) const {
    return server_field(backend, server, "status");
  }

  // One column of a server's row of the stats CSV ("scur": its open connections), or "".
  std::string server_field(const std::string& backend, const std::string& server,
                           const std::string& field) const {
    std::istringstream in(stats_csv());
    std::string line;
    int col = -1;
    while (std::getline(in, line)) {
      std::vector<std::string> cols;
      std::stringstream cells(line.rfind("# ", 0) == 0 ? line.substr(2) : line);
      for (std::string cell; std::getline(cells, cell, ',');) cols.push_back(cell);
      if (col < 0) {
        for (size_t i = 0; i < cols.size(); ++i)
          if (cols[i] == field) col = static_cast<int>(i);
        continue;
      }
      if (cols.size() > static_cast<size_t>(col) && cols[0] == backend && cols[1] == server)
        return cols[static_cast<size_t>(col)];
    }
    return "";
  }

  // Polls `ready` every 20 ms until it holds or `timeout_ms` passed.
  static bool wait_for(const std::function<bool()>& ready, int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      if (ready()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return ready();
  }

  std::string log() const {
    std::ifstream in(log_path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  pid_t pid_ = -1;
  int stats_port_ = 0;
  std::string log_path_;
};

}  // namespace hearth::server::testing
