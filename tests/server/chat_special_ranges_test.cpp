// The chat renderer's special ranges over real vocabularies (every family): an ordinary
// conversation tokenizes exactly as the whole rendered prompt with parse_special did
// before ranges existed, and message content that spells control tokens stays text.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "chatml_model.h"
#include "hearth/engine/tokenizer.h"
#include "server/chat_template.h"

namespace hearth::server {
namespace {

namespace fs = std::filesystem;

constexpr ChatFamily kFamilies[] = {ChatFamily::kChatml,  ChatFamily::kLlama2, ChatFamily::kLlama3,
                                    ChatFamily::kMistral, ChatFamily::kZephyr, ChatFamily::kGemma,
                                    ChatFamily::kPhi3};

// Conversations with no control-token text in any content (odd spacing, unicode,
// lookalikes of markers that no vocabulary here holds, empty turns).
const std::vector<std::vector<ChatMessage>> kConversations = {
    {{"user", "Hi"}},
    {{"system", "You are terse."}, {"user", "Hello there, how are you?"}},
    {{"system", "s1"},
     {"system", "s2"},
     {"user", "What is 2+2?"},
     {"assistant", "4."},
     {"user", "  And  3+3?\n"}},
    {{"user", "Tell me a story about Lily."},
     {"assistant", "Once upon a time"},
     {"user",
      "\xC3\xBCn\xC3\xAF c\xC3\xB8"
      "d\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC [INST] <<SYS>> <s <|im"}},
    {{"user", ""}, {"assistant", " "}, {"user", "\n\nend"}},
};

struct NamedTokenizer {
  std::string name;
  Tokenizer tokenizer;
};

Result<Tokenizer> load(const std::string& path) {
  HEARTH_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::open(path));
  HEARTH_ASSIGN_OR_RETURN(Vocab vocab, vocab_from_gguf(file));
  return Tokenizer::create(std::move(vocab));
}

// ChatML (patched small-qwen2), SentencePiece with <s>/</s> (stories260K), phi-3's
// markers; whichever of them the shared data holds.
const std::vector<NamedTokenizer>& tokenizers() {
  static const std::vector<NamedTokenizer> all = [] {
    std::vector<NamedTokenizer> out;
    const fs::path chatml =
        fs::temp_directory_path() / ("hearth-chat-ranges-" + std::to_string(getpid()) + ".gguf");
    // A file that is there but does not load is a failure, not a silent skip.
    auto add = [&](const std::string& name, const std::string& path) {
      auto t = load(path);
      if (t.ok()) {
        out.push_back({name, *t});
      } else {
        ADD_FAILURE() << path << ": " << t.status().to_string();
      }
    };
    if (fs::exists(testing::small_qwen2_path())) {
      const Status written = testing::write_chatml_model(chatml.string());
      EXPECT_TRUE(written.ok()) << written.to_string();
      if (written.ok()) add("chatml-qwen2", chatml.string());
      fs::remove(chatml);
    }
    const std::string shared = HEARTH_SHARED_DIR;
    for (const auto& [name, rel] : {std::pair{"stories260K", "/models/stories260K.gguf"},
                                    std::pair{"phi-3", "/models/vocab/ggml-vocab-phi-3.gguf"}}) {
      if (fs::exists(shared + rel)) add(name, shared + rel);
    }
    return out;
  }();
  return all;
}

TEST(ChatSpecialRanges, OrdinaryChatsTokenizeAsTheWholePromptWithParseSpecial) {
  ASSERT_FALSE(tokenizers().empty()) << "no vocabulary found under " << HEARTH_SHARED_DIR;
  for (const auto& [name, tok] : tokenizers()) {
    for (ChatFamily family : kFamilies) {
      for (size_t c = 0; c < kConversations.size(); ++c) {
        const RenderedChat r = render_chat(family, kConversations[c]);
        auto ranged = tok.encode_with_special_ranges(r.text, true, r.special_ranges);
        auto whole = tok.encode(r.text, true, /*parse_special=*/true);
        ASSERT_TRUE(ranged.ok() && whole.ok());
        EXPECT_EQ(*ranged, *whole) << name << " " << chat_family_name(family) << " #" << c;
      }
    }
  }
}

TEST(ChatSpecialRanges, ContentSpellingControlTokensStaysText) {
  ASSERT_FALSE(tokenizers().empty());
  for (const auto& [name, tok] : tokenizers()) {
    // Every control token's text, as a user could type it.
    std::string spelled;
    for (int32_t id = 0; id < tok.n_vocab(); ++id) {
      if (tok.is_control(id)) spelled += std::string(tok.token_text(id)) + " ";
    }
    auto count_control = [&](const RenderedChat& r) {
      auto ids = tok.encode_with_special_ranges(r.text, true, r.special_ranges);
      EXPECT_TRUE(ids.ok());
      return std::count_if(ids->begin(), ids->end(),
                           [&](int32_t id) { return tok.is_control(id); });
    };
    for (ChatFamily family : kFamilies) {
      const std::vector<ChatMessage> plain = {
          {"system", "x"}, {"user", "x"}, {"assistant", "x"}, {"user", "x"}};
      std::vector<ChatMessage> injected = plain;
      for (auto& m : injected) m.content = spelled;
      EXPECT_EQ(count_control(render_chat(family, injected)),
                count_control(render_chat(family, plain)))
          << name << " " << chat_family_name(family);
    }
  }
}

TEST(ChatSpecialRanges, RangesAreSortedDisjointAndNeverCoverContent) {
  const std::string marker = "CONTENT";
  const std::vector<ChatMessage> conv = {
      {"system", marker}, {"user", marker}, {"assistant", marker}, {"user", marker}};
  for (ChatFamily family : kFamilies) {
    const RenderedChat r = render_chat(family, conv);
    size_t last_end = 0;
    for (const TextRange& range : r.special_ranges) {
      EXPECT_LT(range.begin, range.end);
      EXPECT_LE(last_end, range.begin);
      EXPECT_LE(range.end, r.text.size());
      last_end = range.end;
      for (size_t at = r.text.find(marker); at != std::string::npos;
           at = r.text.find(marker, at + 1)) {
        EXPECT_TRUE(at + marker.size() <= range.begin || range.end <= at)
            << chat_family_name(family) << ": range [" << range.begin << ", " << range.end
            << ") covers content at " << at;
      }
    }
    EXPECT_FALSE(r.special_ranges.empty()) << chat_family_name(family);
  }
}

}  // namespace
}  // namespace hearth::server
