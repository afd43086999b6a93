// `make run`: it builds only the hearth binary, and scripts/run-default.sh prints its
// banner once the server answers, with a curl example that works as printed when an
// API key is set (double quotes, so the shell expands $HEARTH_API_KEY).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "gguf_cli_util.h"
#include "testing/free_port.h"

namespace hearth::cli::testing {

using ::hearth::testing::free_port;
namespace {

namespace fs = std::filesystem;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(MakeRun, BuildsOnlyTheHearthTarget) {
  const std::string build = temp_path("make-run-build");
  CliResult run =
      run_cli_command("make -s -C " + std::string(HEARTH_SOURCE_DIR) + " -n run BUILD=" + build);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  bool builds_hearth = false;
  for (const std::string& line : lines_of(run.out)) {
    if (line.find("cmake --build") == std::string::npos) continue;
    EXPECT_NE(line.find("--target hearth"), std::string::npos)
        << "builds more than hearth: " << line;
    EXPECT_NE(line.find(">>"), std::string::npos) << "not quiet: " << line;
    builds_hearth = builds_hearth || line.find("--target hearth") != std::string::npos;
  }
  EXPECT_TRUE(builds_hearth) << run.out;
  // `make test` still builds everything (the tests included).
  CliResult test =
      run_cli_command("make -s -C " + std::string(HEARTH_SOURCE_DIR) + " -n test BUILD=" + build);
  ASSERT_EQ(test.exit_code, 0) << test.err;
  bool builds_all = false;
  for (const std::string& line : lines_of(test.out))
    builds_all = builds_all || (line.find("cmake --build " + build) != std::string::npos &&
                                line.find("--target") == std::string::npos);
  EXPECT_TRUE(builds_all) << test.out;
}

// run-default.sh as a child with its stdout on a pipe; SIGTERM stops it.
class RunDefault {
 public:
  RunDefault(const std::vector<std::pair<std::string, std::string>>& env) {
    int out[2];
    if (::pipe(out) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      const int devnull = ::open("/dev/null", O_WRONLY);
      ::dup2(devnull, 2);
      ::close(out[0]);
      for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
      const std::string script = std::string(HEARTH_SOURCE_DIR) + "/scripts/run-default.sh";
      ::execl("/bin/bash", "bash", script.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    fd_ = out[0];
    ::fcntl(fd_, F_SETFL, O_NONBLOCK);
  }
  ~RunDefault() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) ::close(fd_);
  }
  // Reads stdout until it holds `marker` (bounded); returns all of it so far.
  std::string read_until(const std::string& marker, int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (stdout_.find(marker) == std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
      char buf[1024];
      const ssize_t n = ::read(fd_, buf, sizeof(buf));
      if (n > 0) {
        stdout_.append(buf, static_cast<size_t>(n));
        continue;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return stdout_;
  }
  // SIGTERM, then the exit code (bounded wait; -1 on timeout).
  int stop(int timeout_ms) {
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string stdout_;
};

TEST(MakeRun, BannerCurlWorksWithAnApiKey) {
  if (!cli_available()) GTEST_SKIP() << "SKIPPED: CLI not built at " << HEARTH_CLI_PATH;
  const fs::path model = fs::path(HEARTH_SHARED_DIR) / "models" / "stories260K.gguf";
  ASSERT_TRUE(fs::exists(model)) << model;
  const fs::path data = temp_path("run-default-data");
  fs::remove_all(data);
  const int port = free_port();
  RunDefault run({{"HEARTH_BIN", HEARTH_CLI_PATH},
                  {"HEARTH_MODEL", model.string()},
                  {"HEARTH_PORT", std::to_string(port)},
                  {"HEARTH_DATA_DIR", data.string()},
                  {"HEARTH_API_KEY", "s3cret"}});
  const std::string out = run.read_until("Stop with Ctrl-C", 60000);
  ASSERT_NE(out.find("Stop with Ctrl-C"), std::string::npos) << out;
  // The server's own line comes before the banner: it was listening with the model loaded.
  const size_t listening = out.find("listening on http://127.0.0.1:" + std::to_string(port));
  ASSERT_NE(listening, std::string::npos) << out;
  EXPECT_LT(listening, out.find("Try it:")) << out;

  // The example as printed: from "curl" to the line with the body.
  const size_t from = out.find("curl http");
  ASSERT_NE(from, std::string::npos) << out;
  const size_t to = out.find('\n', out.find(" -d '", from));
  const std::string example = out.substr(from, to - from);
  EXPECT_NE(example.find("\"Authorization: Bearer $HEARTH_API_KEY\""), std::string::npos)
      << example;
  const std::string file = temp_path("banner-curl.sh");
  std::ofstream(file) << example << " -s -w '\\nHTTP %{http_code}\\n'\n";
  // Run at once, no retry: the banner promises a server that answers.
  CliResult ok = run_cli_command("HEARTH_API_KEY=s3cret bash " + file);
  EXPECT_NE(ok.out.find("HTTP 200"), std::string::npos) << example << "\n" << ok.out;
  EXPECT_NE(ok.out.find("\"choices\""), std::string::npos) << ok.out;
  CliResult wrong = run_cli_command("HEARTH_API_KEY=wrong bash " + file);
  EXPECT_NE(wrong.out.find("HTTP 401"), std::string::npos) << wrong.out;
  fs::remove(file);

  EXPECT_EQ(run.stop(20000), 0);
  fs::remove_all(data);
}

}  // namespace
}  // namespace hearth::cli::testing
