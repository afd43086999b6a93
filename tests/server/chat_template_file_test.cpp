// --chat-template FILE / the chat_template_file model setting: the file's template
// replaces the GGUF's; a file that does not parse is an error naming it and the position.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "server/model_settings.h"

namespace hearth::server {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("hearth_tmpl_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

TEST(ChatTemplateFile, SettingReadsAndChecksTheTemplate) {
  const std::string good =
      write_temp("good.jinja", "{% for m in messages %}{{ m.content }}{% endfor %}");
  runtime::ModelConfig m = default_model_config();
  ASSERT_TRUE(apply_model_setting(m, "chat_template_file", good).ok());
  EXPECT_EQ(m.chat_template, "{% for m in messages %}{{ m.content }}{% endfor %}");

  const std::string bad =
      write_temp("bad.jinja", "line one\n{% for m in messages %}{{ m.content }");
  runtime::ModelConfig b = default_model_config();
  Status s = apply_model_setting(b, "chat_template_file", bad);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("chat_template_file"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(bad), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("line 2"), std::string::npos) << s.message();
  EXPECT_TRUE(b.chat_template.empty());

  Status missing =
      apply_model_setting(b, "chat_template_file", std::string("/nonexistent/t.jinja"));
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("/nonexistent/t.jinja"), std::string::npos);
  EXPECT_FALSE(apply_model_setting(b, "chat_template_file", int64_t{3}).ok());
  std::filesystem::remove(good);
  std::filesystem::remove(bad);
}

TEST(ChatTemplateFile, FlagValueNamesAFileOrAFamily) {
  EXPECT_TRUE(names_a_template_file("./t.jinja"));
  EXPECT_TRUE(names_a_template_file("qwen.jinja"));
  EXPECT_TRUE(names_a_template_file("/etc/templates/x"));
  EXPECT_FALSE(names_a_template_file("chatml"));
  EXPECT_FALSE(names_a_template_file("llama-3"));
}

}  // namespace
}  // namespace hearth::server
