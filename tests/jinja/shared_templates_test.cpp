// Every shared chat template × every conversation renders to Jinja2's bytes, or raises
// where Jinja2 raised (../shared/templates/expected, made by render.py).
#include <gtest/gtest.h>

#include <filesystem>

#include "jinja/template_cases.h"

namespace hearth::jinja::testing {
namespace {

class SharedTemplate : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedTemplate, MatchesJinja2Renders) {
  const std::string name = GetParam();
  const std::string expected_path = templates_dir() + "/expected/" + name + ".json";
  if (!std::filesystem::exists(expected_path)) GTEST_SKIP() << "no " << expected_path;
  const auto want = outcomes_from_json(nlohmann::ordered_json::parse(read_file(expected_path)));
  const auto got = render_all(name, conversations());
  const auto diffs = differences(want, got);
  for (const auto& d : diffs) ADD_FAILURE() << name << " / " << d;
  EXPECT_EQ(want.size(), got.size());
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n;
  for (char c : info.param) n.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return n;
}

INSTANTIATE_TEST_SUITE_P(Templates, SharedTemplate, ::testing::ValuesIn(template_names()),
                         test_name);

TEST(SharedTemplates, AllTwentyFivePresent) {
  EXPECT_GE(template_names().size(), 25u);
}

}  // namespace
}  // namespace hearth::jinja::testing
