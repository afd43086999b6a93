// Whole-file reads and writes for tests that damage or inspect files on disk.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

namespace hearth::testing {

inline std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Replaces the file's content (truncating it) with `bytes`.
inline void write_file_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

}  // namespace hearth::testing
