// Test helpers that drive the `hearth` binary (HEARTH_CLI_PATH): running a command and
// producing gen-model files once per build tree (build/test-models/), reused afterwards.
#pragma once

#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

namespace hearth::testing {

// Runs a shell command; returns its stdout (stderr too when `merge_stderr`) and sets *rc to
// its exit status (-1 when it did not exit normally).
inline std::string run_command(const std::string& cmd, int* rc, bool merge_stderr = false) {
  std::string out;
  FILE* pipe = popen((merge_stderr ? cmd + " 2>&1" : cmd).c_str(), "r");
  if (pipe == nullptr) {
    *rc = -1;
    return out;
  }
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  const int status = pclose(pipe);
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

inline bool cli_built() {
  return std::filesystem::exists(HEARTH_CLI_PATH);
}

// Free bytes on the file system holding `path` (0 when it cannot be read).
inline uint64_t free_bytes(const std::string& path) {
  struct statvfs s {};
  if (statvfs(path.c_str(), &s) != 0) return 0;
  return static_cast<uint64_t>(s.f_bavail) * s.f_frsize;
}

// <build>/test-models, next to the hearth binary; created on demand.
inline std::string test_models_dir() {
  const std::filesystem::path dir =
      std::filesystem::path(HEARTH_CLI_PATH).parent_path() / "test-models";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return dir.string();
}

// The path of `hearth gen-model [--arch A] --preset P --type T --seed 1`, generating it
// when absent. Written under a temporary name and renamed, so parallel test processes
// never see a half-written file. Returns "" and fills *why on failure.
inline std::string generated_model(const std::string& preset, const std::string& type,
                                   std::string* why, const std::string& arch = "") {
  if (!cli_built()) {
    *why = "hearth binary not built at " HEARTH_CLI_PATH;
    return "";
  }
  const std::string dir = test_models_dir();
  const std::string path =
      dir + "/" + (arch.empty() ? "" : arch + "-") + preset + "-" + type + "-s1.gguf";
  if (std::filesystem::exists(path)) return path;
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  int rc = 0;
  const std::string out = run_command(
      std::string(HEARTH_CLI_PATH) + " gen-model " + (arch.empty() ? "" : "--arch " + arch + " ") +
          "--preset " + preset + " --type " + type + " --seed 1 --out " + tmp,
      &rc, true);
  std::error_code ec;
  if (rc != 0) {
    std::filesystem::remove(tmp, ec);
    *why = "hearth gen-model failed (rc " + std::to_string(rc) + "): " + out;
    return "";
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    *why = "rename " + tmp + ": " + ec.message();
    return "";
  }
  return path;
}

}  // namespace hearth::testing
