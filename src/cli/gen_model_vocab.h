// The built-in vocabulary of `hearth gen-model`: a byte-level SentencePiece-style
// ("llama") vocabulary of any size >= 260, built deterministically.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hearth::cli {

struct BuiltinVocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> token_types;  // llama.cpp's: 1 normal, 2 unknown, 3 control, 6 byte
};

// <unk>=0, <s>=1, </s>=2, <0x00>..<0xFF> at 3..258, then "▁", printable ASCII,
// "▁"+alphanumeric, and letter n-grams (with and without "▁") until n pieces.
BuiltinVocab builtin_vocab(size_t n);

}  // namespace hearth::cli
