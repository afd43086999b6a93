// The agent clients' matrix (issue #21 item 8), each against a real `hearth serve`: the
// official OpenAI and Anthropic SDKs' tool-calling and structured-output flows, the
// Vercel AI SDK (`ai` + `@ai-sdk/openai-compatible`) and LangChain JS
// (`@langchain/openai`), at the versions tests/server/node/package-lock.json pins. The
// model is a gen-model qwen3 `tiny` (random weights) rendered with the Qwen2.5 (Hermes
// `<tool_call>`) template from ../shared/templates: every call and object comes from the
// grammar hearth derives from the request's schemas, and the scripts validate them.
// ai_sdk_responses_check.mjs (the Responses API through @ai-sdk/openai) has no test
// here yet: it is registered once POST /v1/responses exists.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "node_tests.h"
#include "serve_fixture.h"
#include "serve_process.h"

namespace hearth::server {
namespace {

namespace fs = std::filesystem;
using testing::run_shell;
using testing::ServeProcess;

const fs::path kTemplate =
    fs::path(HEARTH_SHARED_DIR) / "templates" / "llamacpp-qwen2.5-instruct.jinja";

class AgentClients : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kTemplate)) GTEST_SKIP() << "SKIPPED: " << kTemplate << " is absent";
    dir_ = testing::scratch_dir(
        "clients-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    model_ = dir_ / "qwen3-tiny.gguf";
    // The tools' system prompt is ~600 bytes: a context above the preset's 512.
    std::string out;
    ASSERT_EQ(run_shell(std::string(HEARTH_CLI_PATH) +
                            " gen-model --arch qwen3 --preset tiny --ctx 4096 --seed 3 -q --out '" +
                            model_.string() + "'",
                        &out),
              0)
        << out;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Serves the model as "tiny" with the tool template and runs `script` against it.
  void run_script(const std::string& script) {
    ASSERT_TRUE(proc_.start({"-m", "tiny=" + model_.string(), "--chat-template", kTemplate.string(),
                             "--ctx-size", "4096", "--parallel", "2", "--api-key", "clients-key",
                             "--quiet"}))
        << proc_.log();
    std::string out;
    const int rc =
        run_shell("cd '" + testing::node_tests_dir().string() + "' && timeout 120 node " + script +
                      " " + proc_.url() + " clients-key tiny",
                  &out);
    EXPECT_EQ(rc, 0) << out << "\nserver log:\n" << proc_.log();
    EXPECT_NE(out.find("ALL OK"), std::string::npos) << out;
    EXPECT_EQ(proc_.stop(), 0) << proc_.log();
  }

  fs::path dir_, model_;
  ServeProcess proc_;
};

// openai: tools + tool_choice required / a named zodFunction, a tool-result round trip,
// response_format json_schema (zodResponseFormat), streamed tool_calls; anthropic:
// tool_choice any, tool_result round trip, streamed input_json_delta.
TEST_F(AgentClients, OfficialSdksToolsAndStructuredOutput) {
  HEARTH_REQUIRE_NODE_TESTS("official SDK tools test");
  run_script("sdk_tools_check.mjs");
}

// generateText with an executed tool over two steps, generateObject (zod), streamText.
TEST_F(AgentClients, VercelAiSdkOpenAiCompatible) {
  HEARTH_REQUIRE_NODE_TESTS("Vercel AI SDK test");
  run_script("ai_sdk_check.mjs");
}

// ChatOpenAI: bindTools + invoke, a ToolMessage round trip, withStructuredOutput, stream.
TEST_F(AgentClients, LangChainChatOpenAi) {
  HEARTH_REQUIRE_NODE_TESTS("LangChain JS test");
  run_script("langchain_check.mjs");
}

TEST_F(AgentClients, VercelAiSdkOpenAiResponses) {
  HEARTH_REQUIRE_NODE_TESTS("AI SDK Responses test");
  run_script("ai_sdk_responses_check.mjs");
}

}  // namespace
}  // namespace hearth::server
