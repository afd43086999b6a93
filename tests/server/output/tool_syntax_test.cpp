// Family detection from the real templates in ../shared/templates, and the grammar spec
// for tool_choice.
#include "server/output/tool_syntax.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "server/output/tool_grammar.h"

namespace hearth::server {
namespace {

std::string read_template(const std::string& name) {
  std::ifstream f(std::string(HEARTH_SHARED_DIR) + "/templates/" + name + ".jinja",
                  std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(ToolSyntax, DetectsEachFamilyFromItsTemplate) {
  const std::vector<std::pair<std::string, ToolSyntax>> expected = {
      {"vllm-hermes", ToolSyntax::kHermes},
      {"llamacpp-qwen2.5-instruct", ToolSyntax::kHermes},
      {"llamacpp-qwen3", ToolSyntax::kHermes},
      {"llamacpp-llama-3.1-instruct", ToolSyntax::kLlama3Json},
      {"vllm-llama3.1-json", ToolSyntax::kLlama3Json},
      {"llamacpp-mistral-small-3.1", ToolSyntax::kMistral},
      {"llamacpp-deepseek-r1-distill-qwen", ToolSyntax::kDeepSeek},
      {"vllm-phi4-mini", ToolSyntax::kPhi4},
      {"vllm-gemma3-pythonic", ToolSyntax::kPythonic},
      {"llamacpp-lfm2", ToolSyntax::kPythonic},
      {"llamacpp-glm-4.6", ToolSyntax::kGlm},
      {"vllm-chatml", ToolSyntax::kNone},
  };
  for (const auto& [name, syntax] : expected) {
    const std::string t = read_template(name);
    if (t.empty()) GTEST_SKIP() << "SKIPPED: ../shared/templates is absent";
    EXPECT_EQ(detect_tool_syntax(t), syntax) << name;
  }
}

TEST(ToolSyntax, NamesRoundTrip) {
  for (ToolSyntax s :
       {ToolSyntax::kNone, ToolSyntax::kHermes, ToolSyntax::kLlama3Json, ToolSyntax::kMistral,
        ToolSyntax::kDeepSeek, ToolSyntax::kPhi4, ToolSyntax::kPythonic, ToolSyntax::kGlm}) {
    EXPECT_EQ(tool_syntax_from_name(tool_syntax_name(s)), s);
  }
  EXPECT_FALSE(tool_syntax_from_name("bogus"));
}

const std::vector<ToolSpec> kTools = {
    {"get_weather", "", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}},
    {"get_time", "", {{"type", "object"}}},
};

TEST(ToolGrammar, AutoIsLazyOnTheFamilyTrigger) {
  auto g = tool_call_grammar(ToolSyntax::kHermes, kTools, {}, true);
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->lazy);
  EXPECT_EQ(g->trigger, "<tool_call>");
  EXPECT_TRUE(g->prefix.starts_with(g->trigger));
  ASSERT_TRUE(g->schema.contains("anyOf"));
  EXPECT_EQ(g->schema["anyOf"].size(), 2u);
  EXPECT_EQ(g->schema["anyOf"][0]["properties"]["arguments"], kTools[0].parameters);
}

TEST(ToolGrammar, NamedAllowsOnlyThatFunction) {
  ToolChoice named{ToolChoice::Mode::kNamed, "get_time"};
  auto g = tool_call_grammar(ToolSyntax::kLlama3Json, kTools, named, true);
  ASSERT_TRUE(g);
  EXPECT_FALSE(g->lazy);
  EXPECT_EQ(g->schema["properties"]["name"]["const"], "get_time");
  EXPECT_TRUE(g->schema["properties"].contains("parameters"));  // Llama 3's key
  ToolChoice unknown{ToolChoice::Mode::kNamed, "nope"};
  EXPECT_FALSE(tool_call_grammar(ToolSyntax::kHermes, kTools, unknown, true));
}

TEST(ToolGrammar, ListFamiliesAndParallel) {
  ToolChoice required{ToolChoice::Mode::kRequired, ""};
  auto g = tool_call_grammar(ToolSyntax::kMistral, kTools, required, false);
  ASSERT_TRUE(g);
  EXPECT_FALSE(g->lazy);
  EXPECT_EQ(g->prefix, "[TOOL_CALLS]");
  EXPECT_EQ(g->schema["type"], "array");
  EXPECT_EQ(g->schema["maxItems"], 1);
  auto p = tool_call_grammar(ToolSyntax::kPhi4, kTools, required, true);
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->schema.contains("maxItems"));
}

TEST(ToolGrammar, NoneOrTextOnlyFamiliesHaveNoGrammar) {
  EXPECT_FALSE(tool_call_grammar(ToolSyntax::kHermes, kTools, {ToolChoice::Mode::kNone, ""}, true));
  EXPECT_FALSE(tool_call_grammar(ToolSyntax::kHermes, {}, {}, true));
  EXPECT_FALSE(tool_call_grammar(ToolSyntax::kPythonic, kTools, {}, true));
  EXPECT_FALSE(tool_call_grammar(ToolSyntax::kGlm, kTools, {}, true));
}

}  // namespace
}  // namespace hearth::server
