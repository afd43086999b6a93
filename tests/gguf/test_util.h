// Helpers shared by the gguf tests: shared-data discovery and file bytes.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace hearth::gguf::testing {

inline std::string shared_dir() { return HEARTH_SHARED_DIR; }

// Every *.gguf under the shared model folders except the legacy v1 one, sorted.
inline std::vector<std::string> shared_gguf_files() {
  std::vector<std::string> out;
  for (const char* sub : {"/models", "/models/vocab", "/reference/models"}) {
    const std::filesystem::path dir = shared_dir() + sub;
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) continue;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      if (e.is_regular_file() && e.path().extension() == ".gguf") out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

}  // namespace hearth::gguf::testing
