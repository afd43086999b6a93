// hearth's Jinja engine: renders Hugging Face chat templates (a GGUF's
// tokenizer.chat_template) the way transformers does with Jinja2: an immutable sandbox
// with trim_blocks and lstrip_blocks, loop controls, raise_exception, strftime_now and
// transformers' tojson. Templates come from untrusted files, so parsing and rendering
// are bounded (nesting depth, loop iterations, output size) and every failure is a
// Status naming the line and column.
//
// A render also says which bytes of its text are the template's own (its text, its
// string literals and the variables the caller marks trusted, such as bos_token): only
// those may become control tokens; message content never does.
#pragma once

#include <cstddef>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hearth/status.h"
#include "hearth/text_range.h"

namespace hearth::jinja {

struct RenderOptions {
  // strftime_now's instant; when unset the render uses the local time at render.
  bool fixed_now = false;
  std::tm now{};
  size_t max_output_bytes = size_t{16} << 20;  // the render and any string it builds
  size_t max_list_items = size_t{1} << 20;     // any list the template builds
  size_t max_steps = 5'000'000;                // loop iterations and macro calls
  int max_depth = 400;                         // nested statements, expressions and calls
  // Wall-clock budget of one render: bounds what the step count cannot (a loop of large
  // string operations). Generous: real chat templates render in microseconds.
  int max_milliseconds = 10'000;
};

struct RenderOutput {
  std::string text;
  std::vector<TextRange> literal_ranges;  // sorted, disjoint: the template's own bytes
};

struct Program;  // the parsed template (internal)

class Template {
 public:
  // Syntax errors, unknown filters / tests / tags: an invalid_argument naming the line.
  static Result<Template> parse(std::string_view source);

  // `context` is a JSON object (ordered: tojson keeps key order) of template variables (messages,
  // tools, add_generation_prompt, bos_token, ...). String variables named in `trusted` render as
  // template text (their bytes are in literal_ranges). An error is an invalid_argument: a
  // raise_exception message or what went wrong, with line and column.
  Result<RenderOutput> render(const nlohmann::ordered_json& context,
                              const std::vector<std::string>& trusted = {},
                              const RenderOptions& options = {}) const;

 private:
  std::shared_ptr<const Program> program_;
};

}  // namespace hearth::jinja
