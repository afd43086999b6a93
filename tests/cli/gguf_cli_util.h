// Runs the hearth CLI (HEARTH_CLI_PATH) for the inspect / gen-model tests.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace hearth::cli::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("hearth_cli_" + std::to_string(getpid()) + "_" + name))
      .string();
}

// Runs a shell command; stdout is captured through popen, stderr through a file.
inline CliResult run_cli_command(const std::string& command) {
  CliResult r;
  const std::string err_path = temp_path("stderr.txt");
  const std::string cmd = command + " 2>" + err_path;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_path);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  std::filesystem::remove(err_path);
  return r;
}

// Runs `hearth <args>`; stdout is captured through popen, stderr through a file.
inline CliResult run_cli(const std::string& args) {
  return run_cli_command(std::string(HEARTH_CLI_PATH) + " " + args);
}

// Runs `hearth <args>` on a pseudo-terminal (script(1)): `out` holds what the command
// wrote to its terminal, stdout and stderr together (with \r\n line ends).
inline CliResult run_cli_in_terminal(const std::string& args) {
  return run_cli_command("script -qec '" + std::string(HEARTH_CLI_PATH) + " " + args +
                         "' /dev/null");
}

inline bool cli_available() {
  return std::filesystem::exists(HEARTH_CLI_PATH);
}

// A test that runs `hearth gen-model`: skipped when the CLI is not built; the models
// it generates are removed after the test.
class GenModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cli_available()) GTEST_SKIP() << "SKIPPED: CLI not built at " << HEARTH_CLI_PATH;
  }
  void TearDown() override {
    for (const auto& p : created_) std::filesystem::remove(p);
  }
  // Generates a model and returns its path.
  std::string gen(const std::string& args, const std::string& name) {
    const std::string path = temp_path(name);
    created_.push_back(path);
    auto r = run_cli("gen-model " + args + " --out " + path);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return path;
  }
  std::vector<std::string> created_;
};

}  // namespace hearth::cli::testing
