// llama.cpp's tokenizer test vectors (46 strings per vocabulary) must be reproduced
// exactly, for every SPM and byte-level BPE vocabulary in /work/shared/models/vocab.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "engine/tokenizer/vocab_files.h"
#include "hearth/gguf/gguf.h"
#include "tokenizer_test_util.h"

namespace hearth {
namespace {

using testing::file_exists;
using testing::read_vocab_inputs;
using testing::read_vocab_outputs;
using testing::shared_path;

std::string ids_to_string(const std::vector<int32_t>& ids) {
  std::ostringstream ss;
  for (int32_t id : ids) ss << ' ' << id;
  return ss.str();
}

// Encodes every input and compares with the expected line. Returns the number of
// mismatching lines; the first mismatch is described in *first_diff.
int count_mismatches(const Tokenizer& tok, const std::string& vector_base,
                     std::string* first_diff) {
  const auto inputs = read_vocab_inputs(vector_base + ".inp");
  const auto outputs = read_vocab_outputs(vector_base + ".out");
  if (inputs.size() != 46 || outputs.size() != inputs.size()) {
    *first_diff = "expected 46 inputs and outputs, got " + std::to_string(inputs.size()) + " and " +
                  std::to_string(outputs.size());
    return 46;
  }
  int mismatches = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto ids = tok.encode(inputs[i], /*add_special=*/false, /*parse_special=*/false);
    const std::string got = ids.ok() ? ids_to_string(*ids) : ids.status().to_string();
    const std::string want = ids_to_string(outputs[i]);
    if (got == want) continue;
    if (mismatches++ == 0) {
      *first_diff = "input " + std::to_string(i) + " '" + inputs[i] + "': got [" + got +
                    " ] want [" + want + " ]";
    }
  }
  return mismatches;
}

// Every models/vocab/ggml-vocab-*.gguf with test vectors, found when the tests are listed
// (ctest lists them at run time), so a new vocabulary file is checked without a code change.
std::vector<std::string> vocab_files_with_vectors() {
  std::vector<std::string> out;
  const std::filesystem::path dir = shared_path("models/vocab");
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("ggml-vocab-", 0) == 0 && e.path().extension() == ".gguf" &&
        file_exists(e.path().string() + ".inp")) {
      out.push_back(name.substr(11, name.size() - 11 - 5));
    }
  }
  std::sort(out.begin(), out.end());
  if (out.empty()) out.push_back("");  // a placeholder that skips loudly
  return out;
}

class GgufVocabVectors : public ::testing::TestWithParam<std::string> {};

// SPM ("llama"), byte-level BPE ("gpt2") and WordPiece ("bert") vocabularies reproduce
// all 46 lines; other
// tokenizer models must be refused as unsupported (never tokenized wrongly).
TEST_P(GgufVocabVectors, AllLinesMatch) {
  if (GetParam().empty()) GTEST_SKIP() << "SKIPPED: no vocab files under models/vocab";
  const std::string base = shared_path("models/vocab/ggml-vocab-" + GetParam() + ".gguf");
  auto file = gguf::GgufFile::open(base);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto model = file->get_string("tokenizer.ggml.model");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto tok = testing::tokenizer_from_gguf(base);
  if (*model != "llama" && *model != "gpt2" && *model != "bert") {
    ASSERT_FALSE(tok.ok()) << base << ": tokenizer model " << *model << " should be refused";
    EXPECT_EQ(tok.status().code(), ErrorCode::kUnsupported) << tok.status().to_string();
    return;
  }
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  std::string diff;
  EXPECT_EQ(count_mismatches(*tok, base, &diff), 0) << diff;
}

INSTANTIATE_TEST_SUITE_P(Vocabs, GgufVocabVectors, ::testing::ValuesIn(vocab_files_with_vectors()),
                         [](const auto& info) {
                           std::string name = info.param.empty() ? "none" : info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// The nine SPM/BPE vocabularies the engine issue names are all among them.
TEST(TokenizerVectors, GlobFindsTheKnownVocabularies) {
  if (!file_exists(shared_path("models/vocab/ggml-vocab-gpt-2.gguf"))) {
    GTEST_SKIP() << "SKIPPED: vocab files not present";
  }
  const auto found = vocab_files_with_vectors();
  for (const char* v : {"llama-spm", "phi-3", "gpt-2", "deepseek-coder", "deepseek-llm", "falcon",
                        "mpt", "refact", "starcoder"}) {
    EXPECT_NE(std::find(found.begin(), found.end(), v), found.end()) << v;
  }
}

// WordPiece adds [CLS] before and [SEP] after the text with add_special, as llama.cpp
// does; the ids come from the file's keys, not from constants in the tokenizer.
TEST(TokenizerVectors, BertWordPieceAddsClsAndSep) {
  const std::string path = shared_path("models/vocab/ggml-vocab-bert-bge.gguf");
  if (!file_exists(path)) GTEST_SKIP() << "SKIPPED: " << path << " not present";
  auto tok = testing::tokenizer_from_gguf(path);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ(tok->token_text(tok->bos_id()), "[CLS]");
  EXPECT_EQ(tok->token_text(tok->sep_id()), "[SEP]");
  auto plain = tok->encode("Hello world", false, false);
  auto full = tok->encode("Hello world", true, false);
  ASSERT_TRUE(plain.ok() && full.ok());
  ASSERT_EQ(full->size(), plain->size() + 2);
  EXPECT_EQ(full->front(), tok->bos_id());
  EXPECT_EQ(full->back(), tok->sep_id());
  EXPECT_TRUE(std::equal(plain->begin(), plain->end(), full->begin() + 1));
  // A word with a part no token matches is one [UNK], whatever its length.
  auto unk = tok->encode("\xE2\x9C\x80\xE2\x9C\x80x", false, false);
  ASSERT_TRUE(unk.ok());
  EXPECT_EQ(*unk, std::vector<int32_t>{tok->unk_id()});
  auto text = tok->decode(*plain);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "hello world");
}

TEST(TokenizerVectors, Llama3BpeFromGpt2Files) {
  const std::string dir = shared_path("models/llama3.2-bpe");
  const std::string base = shared_path("models/vocab/ggml-vocab-llama-bpe.gguf");
  if (!file_exists(dir + "/encoder.json") || !file_exists(base + ".inp")) {
    GTEST_SKIP() << "SKIPPED: llama3.2-bpe files or vectors not present";
  }
  auto vocab =
      tokenizer::vocab_from_gpt2_files(dir + "/encoder.json", dir + "/vocab.bpe", "llama3");
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->tokens.size(), 128000u);
  auto tok = Tokenizer::create(std::move(vocab).value());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  std::string diff;
  EXPECT_EQ(count_mismatches(*tok, base, &diff), 0) << diff;
}

TEST(TokenizerVectors, Qwen2FromTiktoken) {
  const std::string path = shared_path("models/qwen-tiktoken/qwen.tiktoken");
  const std::string base = shared_path("models/vocab/ggml-vocab-qwen2.gguf");
  if (!file_exists(path) || !file_exists(base + ".inp")) {
    GTEST_SKIP() << "SKIPPED: qwen.tiktoken or vectors not present";
  }
  auto vocab = tokenizer::vocab_from_tiktoken(path, "qwen2");
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->tokens.size(), 151643u);
  auto tok = Tokenizer::create(std::move(vocab).value());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  std::string diff;
  EXPECT_EQ(count_mismatches(*tok, base, &diff), 0) << diff;
}

// The vectors discriminate: the wrong pre-tokenizer must produce mismatches.
TEST(TokenizerVectors, WrongPreTokenizerIsDetected) {
  const std::string base = shared_path("models/vocab/ggml-vocab-deepseek-llm.gguf");
  if (!file_exists(base) || !file_exists(base + ".inp")) {
    GTEST_SKIP() << "SKIPPED: " << base << " not present";
  }
  auto file = gguf::GgufFile::open(base);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto vocab = vocab_from_gguf(*file);
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->pre, "deepseek-llm");
  vocab->pre = "gpt-2";
  auto tok = Tokenizer::create(std::move(vocab).value());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  std::string diff;
  EXPECT_GT(count_mismatches(*tok, base, &diff), 0);
}

}  // namespace
}  // namespace hearth
