#include "hearth/jinja/template.h"

#include <algorithm>

#include "jinja/interpreter.h"
#include "jinja/json.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"

namespace hearth::jinja {

struct Program {
  Body body;
};

Result<Template> Template::parse(std::string_view source) {
  HEARTH_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(source));
  HEARTH_ASSIGN_OR_RETURN(Body body, jinja::parse(std::move(tokens)));
  auto program = std::make_shared<Program>();
  program->body = std::move(body);
  Template t;
  t.program_ = std::move(program);
  return t;
}

Result<RenderOutput> Template::render(const nlohmann::ordered_json& context,
                                      const std::vector<std::string>& trusted,
                                      const RenderOptions& options) const {
  if (!program_) return InvalidArgument("render of an unparsed template");
  if (!context.is_object() && !context.is_null()) {
    return InvalidArgument("the template context must be a JSON object");
  }
  std::vector<std::pair<std::string, Value>> globals;
  if (context.is_object()) {
    for (auto it = context.begin(); it != context.end(); ++it) {
      const bool literal = std::find(trusted.begin(), trusted.end(), it.key()) != trusted.end();
      globals.emplace_back(it.key(), from_ordered_json(it.value(), literal));
    }
  }
  Interpreter in(options);
  return in.render(program_->body, std::move(globals));
}

}  // namespace hearth::jinja
