// Tokenizer behaviour on small hand-built vocabularies: validation, SPM merging and
// byte fallback, special tokens, byte-level BPE (merge lists and tiktoken ranks),
// pieces and decode errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "hearth/engine/tokenizer.h"

namespace hearth {
namespace {

// <unk> <s> </s> <0x00>..<0xFF> then the given pieces with descending scores.
Vocab tiny_spm(const std::vector<std::string>& pieces) {
  Vocab v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.token_types = {TokenType::kUnknown, TokenType::kControl, TokenType::kControl};
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
    v.tokens.push_back(hex);
    v.token_types.push_back(TokenType::kByte);
  }
  v.scores.assign(v.tokens.size(), 0.0f);
  float score = -1.0f;
  for (const std::string& p : pieces) {
    v.tokens.push_back(p);
    v.token_types.push_back(TokenType::kNormal);
    v.scores.push_back(score);
    score -= 1.0f;
  }
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  v.add_bos = true;
  return v;
}

int32_t id_of(const Tokenizer& t, const std::string& text) {
  auto id = t.find_token(text);
  return id ? *id : -100;
}

TEST(TokenizerCreate, RejectsBadVocabularies) {
  Vocab v = tiny_spm({"a"});
  v.model = "t5";
  auto r = Tokenizer::create(v);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);

  // WordPiece writes [UNK] for a word it cannot cut: a bert vocabulary needs one.
  v = tiny_spm({"a"});
  v.model = "bert";
  v.unk_id = -1;
  r = Tokenizer::create(v);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown_token_id"), std::string::npos);

  v = tiny_spm({"a"});
  v.scores.pop_back();
  EXPECT_EQ(Tokenizer::create(v).status().code(), ErrorCode::kInvalidArgument);

  v = tiny_spm({"a"});
  v.bos_id = 100000;
  r = Tokenizer::create(v);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bos_id"), std::string::npos);

  v = tiny_spm({"a"});
  v.model = "gpt2";
  v.pre = "no-such-pre";
  r = Tokenizer::create(v);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no-such-pre"), std::string::npos);

  v = tiny_spm({"a"});
  v.model = "gpt2";
  v.merges = {"nospace"};
  EXPECT_EQ(Tokenizer::create(v).status().code(), ErrorCode::kInvalidArgument);

  Vocab empty;
  empty.model = "llama";
  EXPECT_FALSE(Tokenizer::create(empty).ok());
}

TEST(SpmTokenizer, MergesByScoreAndAddsDummyPrefix) {
  // "▁ab" outranks "ab"; "bc" outranks "▁ab"? No: scores descend in list order.
  auto t = Tokenizer::create(tiny_spm({"▁a", "b", "▁ab", "a", "c", "bc"}));
  ASSERT_TRUE(t.ok());
  auto ids = t->encode("abc", false, false);
  ASSERT_TRUE(ids.ok());
  // Highest-scoring pair first: "▁a" (-1), then "▁a"+"b" -> "▁ab" (-3), then "c".
  EXPECT_EQ(*ids, (std::vector<int32_t>{id_of(*t, "▁ab"), id_of(*t, "c")}));
  auto with_bos = t->encode("abc", true, false);
  ASSERT_TRUE(with_bos.ok());
  EXPECT_EQ(with_bos->front(), 1);
  EXPECT_EQ(with_bos->size(), 3u);
  auto back = t->decode(*ids);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, "abc");
}

// add_bos / add_eos (tokenizer.ggml.add_{bos,eos}_token) act only with add_special.
TEST(SpmTokenizer, AddBosAndAddEosFlags) {
  const std::vector<std::string> pieces = {"▁a", "b"};
  for (bool bos : {false, true}) {
    for (bool eos : {false, true}) {
      Vocab v = tiny_spm(pieces);
      v.add_bos = bos;
      v.add_eos = eos;
      auto t = Tokenizer::create(std::move(v));
      ASSERT_TRUE(t.ok());
      EXPECT_EQ(t->add_bos(), bos);
      EXPECT_EQ(t->add_eos(), eos);
      auto plain = t->encode("ab", /*add_special=*/false, false);
      auto special = t->encode("ab", /*add_special=*/true, false);
      ASSERT_TRUE(plain.ok() && special.ok());
      std::vector<int32_t> want;
      if (bos) want.push_back(1);
      want.insert(want.end(), plain->begin(), plain->end());
      if (eos) want.push_back(2);
      EXPECT_EQ(*special, want) << "add_bos " << bos << " add_eos " << eos;
      EXPECT_EQ(std::count(plain->begin(), plain->end(), 2), 0);
    }
  }
}

TEST(SpmTokenizer, ByteFallbackForUnknownCharacters) {
  auto t = Tokenizer::create(tiny_spm({"▁", "x"}));
  ASSERT_TRUE(t.ok());
  auto ids = t->encode("x€", false, false);  // € = E2 82 AC, not a piece
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids,
            (std::vector<int32_t>{id_of(*t, "▁"), id_of(*t, "x"), 3 + 0xE2, 3 + 0x82, 3 + 0xAC}));
  EXPECT_EQ(t->token_to_piece(3 + 0xE2), "\xE2");
  auto back = t->decode(*ids);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, "x€");
}

TEST(SpmTokenizer, UnknownWithoutByteTokens) {
  Vocab v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>", "▁", "a"};
  v.scores = {0, 0, 0, -1, -2};
  v.token_types = {TokenType::kUnknown, TokenType::kControl, TokenType::kControl,
                   TokenType::kNormal, TokenType::kNormal};
  v.unk_id = 0;
  auto t = Tokenizer::create(v);
  ASSERT_TRUE(t.ok());
  auto ids = t->encode("aé", false, false);  // é is two bytes -> two unk
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{3, 4, 0, 0}));
}

TEST(SpmTokenizer, SpecialTokensOnlyWhenParsed) {
  Vocab v = tiny_spm({"▁", "a", "<", ">", "s", "/"});
  v.tokens.push_back("<|user|>");
  v.token_types.push_back(TokenType::kUserDefined);
  v.scores.push_back(0);
  auto t = Tokenizer::create(v);
  ASSERT_TRUE(t.ok());
  auto plain = t->encode("a</s>", false, false);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(std::count(plain->begin(), plain->end(), 2), 0);
  auto parsed = t->encode("a</s>a", false, true);
  ASSERT_TRUE(parsed.ok());
  // "▁a" text, then </s>, then "a" again with a fresh dummy prefix.
  EXPECT_EQ(*parsed, (std::vector<int32_t>{id_of(*t, "▁"), id_of(*t, "a"), 2, id_of(*t, "▁"),
                                           id_of(*t, "a")}));
  // User-defined tokens are recognised even without parse_special.
  auto user = t->encode("<|user|>a", false, false);
  ASSERT_TRUE(user.ok());
  EXPECT_EQ(user->front(), id_of(*t, "<|user|>"));
}

TEST(TokenizerPieces, ControlRenderingAndRanges) {
  auto t = Tokenizer::create(tiny_spm({"▁hi"}));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->token_to_piece(1), "<s>");
  EXPECT_EQ(t->token_to_piece(1, /*render_special=*/false), "");
  EXPECT_EQ(t->token_to_piece(id_of(*t, "▁hi")), " hi");
  EXPECT_EQ(t->token_to_piece(-1), "");
  EXPECT_EQ(t->token_to_piece(t->n_vocab()), "");
  const std::vector<int32_t> bad = {1, t->n_vocab()};
  auto d = t->decode(bad);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), ErrorCode::kOutOfRange);
  EXPECT_TRUE(t->is_control(1));
  EXPECT_FALSE(t->is_control(id_of(*t, "▁hi")));
  EXPECT_FALSE(t->is_control(-5));
  EXPECT_TRUE(t->is_eog(2));
  EXPECT_FALSE(t->is_eog(1));
  EXPECT_FALSE(t->is_eog(1 << 30));
  EXPECT_EQ(t->token_type(1 << 30), TokenType::kUndefined);
  EXPECT_EQ(t->token_text(-3), "");
}

TEST(TokenizerPieces, EndOfTurnMarkersAreEog) {
  Vocab v = tiny_spm({"a"});
  v.tokens.push_back("<|im_end|>");
  v.token_types.push_back(TokenType::kControl);
  v.scores.push_back(0);
  auto t = Tokenizer::create(v);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->is_eog(t->n_vocab() - 1));
}

TEST(BpeTokenizer, MergeListOrderDecides) {
  Vocab v;
  v.model = "gpt2";
  v.pre = "gpt-2";
  v.add_space_prefix = false;
  v.tokens = {"a", "b", "c", "Ġ", "ab", "bc", "Ġa", "Ġab"};
  v.merges = {"b c", "Ġ a", "a b", "Ġa b"};
  auto t = Tokenizer::create(v);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  auto ids = t->encode("abc", false, false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{0, 5}));  // "b c" first -> a, bc
  ids = t->encode("ab ab", false, false);         // words "ab", " ab"
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{4, 7}));
  auto text = t->decode(*ids);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "ab ab");
  EXPECT_EQ(t->token_to_piece(3), " ");
}

TEST(BpeTokenizer, TiktokenRanksWithoutMerges) {
  Vocab v;
  v.model = "gpt2";
  v.pre = "qwen2";
  v.add_space_prefix = false;
  // Lower id merges first: "bc" (4) before "ab" (5).
  v.tokens = {"a", "b", "c", "Ġ", "bc", "ab"};
  auto t = Tokenizer::create(v);
  ASSERT_TRUE(t.ok());
  auto ids = t->encode("abc", false, false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{0, 4}));  // a + bc
  // Any pair whose concatenation is a token merges, whichever split built it.
  v.tokens.push_back("abc");
  t = Tokenizer::create(v);
  ASSERT_TRUE(t.ok());
  ids = t->encode("abc", false, false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{6}));
}

TEST(BpeTokenizer, InvalidUtf8BecomesReplacementCharacter) {
  Vocab v;
  v.model = "gpt2";
  v.pre = "gpt-2";
  v.add_space_prefix = false;
  // U+FFFD is EF BF BD -> byte-level "ï¿½".
  v.tokens = {"a", "ï", "¿", "½", "ï¿", "ï¿½"};
  auto t = Tokenizer::create(v);
  ASSERT_TRUE(t.ok());
  auto ids = t->encode("a\xFF", false, false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{0, 5}));
}

}  // namespace
}  // namespace hearth
