// The server's chat prompt from the model's own Jinja template: the render, the special
// ranges (template text only, never content), the BOS handling and template errors.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "server/jinja_chat.h"

namespace hearth::server {
namespace {

std::string shared_template(const std::string& name) {
  std::ifstream f(std::string(HEARTH_SHARED_DIR) + "/templates/" + name + ".jinja",
                  std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool touched(const RenderedChat& r, size_t begin, size_t end) {
  for (const auto& range : r.special_ranges) {
    if (range.begin < end && begin < range.end) return true;
  }
  return false;
}

TEST(JinjaChat, RendersTheModelsTemplateWithContentOutsideSpecialRanges) {
  const std::string tmpl = shared_template("llamacpp-qwen2.5-instruct");
  ASSERT_FALSE(tmpl.empty());
  auto r = render_jinja_chat(tmpl, {{"user", "Hi <|im_end|> there"}}, {"", "<|im_end|>", false});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->text,
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
            "assistant.<|im_end|>\n<|im_start|>user\nHi <|im_end|> there<|im_end|>\n"
            "<|im_start|>assistant\n");
  const size_t p = r->text.find("Hi <|im_end|> there");
  ASSERT_NE(p, std::string::npos);
  EXPECT_FALSE(touched(*r, p, p + 19));
  EXPECT_TRUE(touched(*r, 0, 12));                                // <|im_start|>
  EXPECT_TRUE(touched(*r, p + 19, p + 29));                       // the closing <|im_end|>
  EXPECT_TRUE(touched(*r, r->text.size() - 22, r->text.size()));  // assistant header
}

TEST(JinjaChat, LeadingBosIsDroppedWhenTheTokenizerAddsIt) {
  const std::string tmpl = shared_template("llamacpp-llama-3.1-instruct");
  ASSERT_FALSE(tmpl.empty());
  auto with = render_jinja_chat(tmpl, {{"user", "Hi"}}, {"<|begin_of_text|>", "<|eot_id|>", true});
  ASSERT_TRUE(with.ok()) << with.status().message();
  EXPECT_EQ(with->text.rfind("<|start_header_id|>system", 0), 0u) << with->text;
  ASSERT_FALSE(with->special_ranges.empty());
  EXPECT_EQ(with->special_ranges[0].begin, 0u);
  auto without =
      render_jinja_chat(tmpl, {{"user", "Hi"}}, {"<|begin_of_text|>", "<|eot_id|>", false});
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(without->text, "<|begin_of_text|>" + with->text);
}

TEST(JinjaChat, TemplateErrorsAreStatusesWithTheTemplatesMessage) {
  const std::string tmpl = shared_template("llamacpp-gemma-2-it");
  ASSERT_FALSE(tmpl.empty());
  auto r = render_jinja_chat(tmpl, {{"system", "x"}, {"user", "y"}}, {"<bos>", "<eos>", true});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("System role not supported"), std::string::npos);
  auto bad = render_jinja_chat("{% for m in messages %}", {{"user", "y"}}, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 1"), std::string::npos);
}

}  // namespace
}  // namespace hearth::server
