// The model output parser on canned model outputs of every family's tool-call syntax,
// whole and one byte at a time (every chunk boundary), plus reasoning and malformed calls.
#include "server/output/output_parser.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace hearth::server {
namespace {

using Kind = OutputDelta::Kind;

struct Expect {
  std::string content;
  std::string reasoning;
  std::vector<std::pair<std::string, nlohmann::json>> calls;  // name, arguments
};

struct Case {
  std::string name;
  ToolSyntax syntax;
  std::string text;
  Expect expect;
  bool starts_in_reasoning = false;
};

std::function<std::string()> counter_ids() {
  auto n = std::make_shared<int>(0);
  return [n] { return "call_" + std::to_string((*n)++); };
}

// Feeds `text` in chunks of `chunk` bytes (0 = all at once).
ParsedOutput run(const Case& c, size_t chunk) {
  OutputParser p({c.syntax, c.starts_in_reasoning, true}, counter_ids());
  ParsedOutput out;
  if (chunk == 0) {
    collect(p.push(c.text), out);
  } else {
    for (size_t i = 0; i < c.text.size(); i += chunk) collect(p.push(c.text.substr(i, chunk)), out);
  }
  collect(p.finish(), out);
  return out;
}

void check(const Case& c, const ParsedOutput& got, const std::string& how) {
  SCOPED_TRACE(c.name + " " + how);
  EXPECT_EQ(got.content, c.expect.content);
  EXPECT_EQ(got.reasoning, c.expect.reasoning);
  ASSERT_EQ(got.calls.size(), c.expect.calls.size());
  for (size_t i = 0; i < got.calls.size(); ++i) {
    EXPECT_EQ(got.calls[i].name, c.expect.calls[i].first);
    EXPECT_EQ(nlohmann::json::parse(got.calls[i].arguments), c.expect.calls[i].second);
    EXPECT_FALSE(got.calls[i].id.empty());
  }
}

const nlohmann::json kParis = {{"city", "Paris"}};
const nlohmann::json kTokyo = {{"timezone", "Asia/Tokyo"}};

std::vector<Case> cases() {
  using S = ToolSyntax;
  return {
      {"hermes_one",
       S::kHermes,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
       "\"Paris\"}}\n</tool_call>",
       {"", "", {{"get_weather", kParis}}}},
      {"hermes_text_then_two",
       S::kHermes,
       "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
       "\"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": "
       "{\"timezone\": \"Asia/Tokyo\"}}\n</tool_call>",
       {"Let me check.", "", {{"get_weather", kParis}, {"get_time", kTokyo}}}},
      {"hermes_string_arguments",
       S::kHermes,
       "<tool_call>{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": "
       "\\\"Paris\\\"}\"}</tool_call>",
       {"", "", {{"get_weather", kParis}}}},
      {"hermes_unclosed_at_end",
       S::kHermes,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
       {"", "", {{"get_weather", kParis}}}},
      {"hermes_malformed_is_content",
       S::kHermes,
       "Sure <tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": </tool_call> done",
       {"Sure <tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": </tool_call> done",
        "",
        {}}},
      {"hermes_lookalike_text",
       S::kHermes,
       "a <tool_ca b < c <tool",
       {"a <tool_ca b < c <tool", "", {}}},
      {"qwen3_think_then_call",
       S::kHermes,
       "<think>\nThe user wants weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", "
       "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
       {"", "\nThe user wants weather.\n", {{"get_weather", kParis}}}},
      {"llama3_bare_json",
       S::kLlama3Json,
       "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
       {"", "", {{"get_weather", kParis}}}},
      {"llama3_python_tag",
       S::kLlama3Json,
       "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
       {"", "", {{"get_weather", kParis}}}},
      {"llama3_json_answer_is_not_a_call",
       S::kLlama3Json,
       "{\"name\": \"Bob\"} is a name",
       {"{\"name\": \"Bob\"} is a name", "", {}}},
      {"llama3_plain_text",
       S::kLlama3Json,
       "Paris is sunny {today}.",
       {"Paris is sunny {today}.", "", {}}},
      {"mistral_array",
       S::kMistral,
       "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, "
       "{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"Asia/Tokyo\"}}]",
       {"", "", {{"get_weather", kParis}, {"get_time", kTokyo}}}},
      {"mistral_args_form",
       S::kMistral,
       "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}",
       {"", "", {{"get_weather", kParis}}}},
      {"mistral_malformed",
       S::kMistral,
       "[TOOL_CALLS][{\"name\": 3}]",
       {"[TOOL_CALLS][{\"name\": 3}]", "", {}}},
      {"deepseek_r1",
       S::kDeepSeek,
       "<think>\nweather\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁"
       "sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁"
       "begin｜>function<｜tool▁sep｜>get_time\n```json\n{\"timezone\": \"Asia/Tokyo\"}\n```<｜"
       "tool▁call▁end｜><｜tool▁calls▁end｜>",
       {"", "\nweather\n", {{"get_weather", kParis}, {"get_time", kTokyo}}}},
      {"deepseek_opened_by_prompt",
       S::kDeepSeek,
       "pondering\n</think>\n\nThe answer is 4.",
       {"The answer is 4.", "pondering\n", {}},
       true},
      {"phi4_functools",
       S::kPhi4,
       "functools[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]",
       {"", "", {{"get_weather", kParis}}}},
      {"phi4_tool_call_tags",
       S::kPhi4,
       "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": "
       "\"Paris\"}}]<|/tool_call|>",
       {"", "", {{"get_weather", kParis}}}},
      {"pythonic_two",
       S::kPythonic,
       "[get_weather(city=\"Paris\"), get_time(timezone='Asia/Tokyo')]",
       {"", "", {{"get_weather", kParis}, {"get_time", kTokyo}}}},
      {"pythonic_literals",
       S::kPythonic,
       "[f(a=1, b=-2.5, c=True, d=None, e=[1, 'x'], g={'k': 2})]",
       {"",
        "",
        {{"f",
          {{"a", 1},
           {"b", -2.5},
           {"c", true},
           {"d", nullptr},
           {"e", {1, "x"}},
           {"g", {{"k", 2}}}}}}}},
      {"pythonic_lfm2_tags",
       S::kPythonic,
       "<|tool_call_start|>[get_weather(city=\"Paris\")]<|tool_call_end|>Checking.",
       {"Checking.", "", {{"get_weather", kParis}}}},
      {"pythonic_list_answer",
       S::kPythonic,
       "[1, 2, 3] are numbers",
       {"[1, 2, 3] are numbers", "", {}}},
      {"glm_xml",
       S::kGlm,
       "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_"
       "key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>",
       {"", "", {{"get_weather", {{"city", "Paris"}, {"days", 3}}}}}},
      {"glm_malformed",
       S::kGlm,
       "<tool_call>get_weather\n<arg_key>city</tool_call>",
       {"<tool_call>get_weather\n<arg_key>city</tool_call>", "", {}}},
      {"none_keeps_markers",
       S::kNone,
       "<tool_call>{\"name\": \"x\", \"arguments\": {}}</tool_call>",
       {"<tool_call>{\"name\": \"x\", \"arguments\": {}}</tool_call>", "", {}}},
      {"unclosed_think_is_reasoning", S::kNone, "<think>still going", {"", "still going", {}}},
      {"think_later_is_text",
       S::kNone,
       "Answer: <think> is a tag",
       {"Answer: <think> is a tag", "", {}}},
      {"leading_blank_kept", S::kNone, "  hi\n", {"  hi\n", "", {}}},
      // A reply cut by max_tokens inside its second call (the Vercel AI SDK showed the
      // streamed content starting with the blank after the first call, the whole one not).
      {"blank_after_call_then_cut_call",
       S::kHermes,
       "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call> "
       "\n<tool_call>{\"name\": \"get_w",
       {"<tool_call>{\"name\": \"get_w", "", {{"get_weather", kParis}}}},
  };
}

TEST(OutputParser, CannedOutputsWhole) {
  for (const Case& c : cases()) check(c, run(c, 0), "whole");
}

TEST(OutputParser, CannedOutputsOneByteAtATime) {
  for (const Case& c : cases()) check(c, run(c, 1), "bytewise");
}

TEST(OutputParser, CannedOutputsEveryChunkSize) {
  for (const Case& c : cases())
    for (size_t chunk : {2, 3, 5, 7, 13}) check(c, run(c, chunk), "chunk " + std::to_string(chunk));
}

// Content streams before the reply ends; a call comes out as soon as it closes.
TEST(OutputParser, StreamsContentEarlyAndCallsWhenClosed) {
  OutputParser p({ToolSyntax::kHermes, false, true}, counter_ids());
  auto d = p.push("Hello <tool");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, Kind::kContent);
  EXPECT_EQ(d[0].text, "Hello");  // "<tool" held back: it may open a call (the blank too)
  EXPECT_TRUE(p.push("_call>{\"name\": \"f\", \"arguments\": {}}").empty());
  d = p.push("</tool_call> more");
  ASSERT_GE(d.size(), 1u);
  EXPECT_EQ(d[0].kind, Kind::kToolCall);
  EXPECT_EQ(d[0].call.name, "f");
  EXPECT_EQ(d[0].call.id, "call_0");
  EXPECT_EQ(d[0].index, 0);
}

TEST(OutputParser, ParallelOffKeepsTheFirstCall) {
  const std::string text =
      "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"b\", "
      "\"arguments\": {}}</tool_call>";
  auto all = parse_output({ToolSyntax::kHermes, false, true}, text, counter_ids());
  auto one = parse_output({ToolSyntax::kHermes, false, false}, text, counter_ids());
  ASSERT_EQ(all.calls.size(), 2u);
  ASSERT_EQ(one.calls.size(), 1u);
  EXPECT_EQ(one.calls[0].name, "a");
}

// Whatever the text, every byte comes back as content, reasoning or a call's source:
// random mixes of markers and text never lose content when no call parses.
TEST(OutputParser, NothingLostOnMarkerSoup) {
  const std::vector<std::string> pieces = {
      "<tool_call>", "</tool_call>", "{",      "}", "[",  "]", "x",
      " ",           "\n",           "<think", ">", "\"", "(", ")"};
  uint64_t state = 12345;
  for (int iter = 0; iter < 300; ++iter) {
    std::string text = "a";  // not at the start: no start-only trigger, no think block
    for (int i = 0; i < 20; ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      text += pieces[(state >> 33) % pieces.size()];
    }
    for (ToolSyntax s : {ToolSyntax::kHermes, ToolSyntax::kPythonic, ToolSyntax::kGlm}) {
      auto out = parse_output({s, false, true}, text, counter_ids());
      if (out.calls.empty()) {
        EXPECT_EQ(out.content, text) << text;
      }
    }
  }
}

}  // namespace
}  // namespace hearth::server
