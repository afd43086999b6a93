// Helpers of the tests that run a real `hearth serve` on stories260K: shell commands,
// scratch directories, and the config whose save policy caches short test prompts.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace hearth::server::testing {

// Runs `cmd` in sh with stderr folded into stdout; returns its exit status (-1: none).
inline int run_shell(const std::string& cmd, std::string* output = nullptr) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  std::string out;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  if (output) *output = out;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// An empty directory under $TMPDIR named after the test and this process.
inline std::filesystem::path scratch_dir(const std::string& name) {
  std::filesystem::path d = std::filesystem::temp_directory_path() /
                            ("hearth-serve-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// Writes a config whose save policy lets short test prompts be cached; `extra` is
// more TOML (tables other than [[models]]).
inline std::string write_config(const std::filesystem::path& dir, const std::string& model_line,
                                const std::string& extra = "", int context = 1024) {
  const std::filesystem::path p = dir / "serve.toml";
  std::ofstream(p) << extra << "\n[[models]]\n"
                   << model_line << "\n"
                   << "context = " << context << "\nn_seq_max = 4\n"
                   << "policy = { min_tokens = 8, cold_min_tokens = 8, boundary_trim_tokens = 0, "
                      "boundary_align_tokens = 8, continued_interval = 64 }\n";
  return p.string();
}

}  // namespace hearth::server::testing
