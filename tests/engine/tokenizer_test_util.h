// Shared helpers for the tokenizer tests: test-vector files and vocab loading.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "hearth/gguf/gguf.h"
#include "hearth/engine/tokenizer.h"

namespace hearth::testing {

inline std::string shared_path(const std::string& rel) {
  return std::string(HEARTH_SHARED_DIR) + "/" + rel;
}

inline bool file_exists(const std::string& path) {
  return std::filesystem::exists(path);
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The 46 inputs of a llama.cpp .inp file (strings separated by "\n__ggml_vocab_test__\n").
inline std::vector<std::string> read_vocab_inputs(const std::string& path) {
  const std::string text = slurp(path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t found = text.find(sep); found != std::string::npos; found = text.find(sep, start)) {
    out.push_back(text.substr(start, found - start));
    start = found + sep.size();
  }
  return out;
}

// The expected ids of a .out file, one line per input.
inline std::vector<std::vector<int32_t>> read_vocab_outputs(const std::string& path) {
  std::istringstream lines(slurp(path));
  std::vector<std::vector<int32_t>> out;
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream ids(line);
    std::vector<int32_t> row;
    int32_t id;
    while (ids >> id) row.push_back(id);
    out.push_back(std::move(row));
  }
  return out;
}

inline Result<Tokenizer> tokenizer_from_gguf(const std::string& path) {
  HEARTH_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::open(path));
  HEARTH_ASSIGN_OR_RETURN(Vocab vocab, vocab_from_gguf(file));
  return Tokenizer::create(std::move(vocab));
}

}  // namespace hearth::testing
