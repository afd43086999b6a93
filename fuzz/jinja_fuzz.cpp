// libFuzzer target: arbitrary text as a chat template (templates come from untrusted
// GGUF files). Parsing and rendering over a fixed conversation must end in a render or
// an error with a message: no crash, no hang (the limits bound nesting, loops, recursion
// and output), and a render's literal ranges are sorted, disjoint and inside the text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "hearth/jinja/template.h"

namespace {

const nlohmann::ordered_json& context() {
  static const nlohmann::ordered_json ctx = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": "What is the weather in Paris? <|im_end|>"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris", "n": 2.5}}}]},
      {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"t\": 21}"},
      {"role": "assistant", "content": "<think>hm</think>It is 21C.", "reasoning_content": "hm"}
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                     "required": ["city"]}}}],
    "documents": null, "add_generation_prompt": true, "enable_thinking": false,
    "bos_token": "<s>", "eos_token": "</s>"
  })");
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hearth::jinja;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto tmpl = Template::parse(text);
  if (!tmpl.ok()) {
    if (tmpl.status().message().empty()) std::abort();
    return 0;
  }
  RenderOptions opts;
  opts.fixed_now = true;
  opts.max_output_bytes = size_t{1} << 20;
  opts.max_list_items = size_t{1} << 16;
  opts.max_steps = 200'000;
  opts.max_milliseconds = 2'000;
  auto r = tmpl->render(context(), {"bos_token", "eos_token"}, opts);
  if (!r.ok()) {
    if (r.status().message().empty()) std::abort();
    return 0;
  }
  size_t prev_end = 0;
  for (const auto& range : r->literal_ranges) {
    if (range.begin >= range.end || range.begin < prev_end || range.end > r->text.size()) {
      std::abort();
    }
    prev_end = range.end;
  }
  return 0;
}
