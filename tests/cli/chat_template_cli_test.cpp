// `hearth chat-template`: every shared template × conversation printed through the CLI
// is Jinja2's render (../shared/templates/expected); a template that raises exits 1 with
// the message on stderr.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "gguf_cli_util.h"
#include "jinja/template_cases.h"

namespace hearth::cli {
namespace {

using ::testing::HasSubstr;
using testing::run_cli;
using testing::temp_path;

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

TEST(ChatTemplateCli, RendersEverySharedTemplateLikeJinja2) {
  if (!testing::cli_available()) GTEST_SKIP() << "SKIPPED: CLI not built";
  namespace jt = hearth::jinja::testing;
  const auto cases = jt::conversations();
  int compared = 0;
  for (const auto& name : jt::template_names()) {
    const std::string expected_path = jt::templates_dir() + "/expected/" + name + ".json";
    const auto expected = nlohmann::ordered_json::parse(jt::read_file(expected_path));
    const auto [bos, eos] = jt::special_tokens(name);
    for (const auto& c : cases) {
      const std::string case_name = c["name"];
      const std::string case_path = temp_path("case.json");
      std::ofstream(case_path) << c.dump();
      auto r = run_cli("chat-template " + quote(jt::templates_dir() + "/" + name + ".jinja") +
                       " --conversation " + quote(case_path) + " --bos " + quote(bos) + " --eos " +
                       quote(eos) + " --date 2024-07-26");
      std::filesystem::remove(case_path);
      const auto& want = expected[case_name];
      if (want.is_string()) {
        EXPECT_EQ(r.exit_code, 0) << name << " / " << case_name << ": " << r.err;
        EXPECT_EQ(r.out, want.get<std::string>()) << name << " / " << case_name;
      } else {
        EXPECT_EQ(r.exit_code, 1) << name << " / " << case_name;
        EXPECT_THAT(r.err, HasSubstr("hearth chat-template: ")) << name << " / " << case_name;
        EXPECT_EQ(r.out, "") << name << " / " << case_name;
      }
      ++compared;
    }
  }
  EXPECT_GE(compared, 375);
}

TEST(ChatTemplateCli, RaiseExceptionMessageAndExitCode) {
  if (!testing::cli_available()) GTEST_SKIP() << "SKIPPED: CLI not built";
  const std::string tmpl = temp_path("t.jinja");
  const std::string conv = temp_path("c.json");
  std::ofstream(tmpl) << "{% if messages[0].role == 'system' %}"
                         "{{ raise_exception('System role not supported') }}{% endif %}ok";
  std::ofstream(conv) << R"({"messages": [{"role": "system", "content": "x"}]})";
  auto r = run_cli("chat-template " + tmpl + " --conversation " + conv);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("System role not supported"));
  EXPECT_THAT(r.err, HasSubstr("line 1"));
  std::ofstream(conv) << R"({"messages": [{"role": "user", "content": "x"}]})";
  r = run_cli("chat-template " + tmpl + " --conversation " + conv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ok");
  std::ofstream(tmpl) << "{% for %}";
  r = run_cli("chat-template " + tmpl + " --conversation " + conv);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("line 1, column"));
  std::ofstream(conv) << "[1, 2]";
  r = run_cli("chat-template " + tmpl + " --conversation " + conv);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("messages"));
  std::filesystem::remove(tmpl);
  std::filesystem::remove(conv);
}

}  // namespace
}  // namespace hearth::cli
