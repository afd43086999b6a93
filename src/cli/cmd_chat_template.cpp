// `hearth chat-template TEMPLATE.jinja --conversation CASE.json [--bos S] [--eos S]
// [--date YYYY-MM-DD]`: renders a chat template over one conversation the way Hugging
// Face transformers' apply_chat_template does (CASE.json: one object shaped like an entry
// of ../shared/templates/conversations.json: messages, optional tools,
// add_generation_prompt and extra variables) and prints the prompt. A template that
// raises exits 1 with the message.
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/registry.h"
#include "hearth/jinja/template.h"

namespace hearth::cli {
namespace {

struct Options {
  std::string template_path;
  std::string conversation_path;
  std::string bos;
  std::string eos;
  std::string date;  // strftime_now's day; empty: now
};

bool read_file(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::stringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return true;
}

int fail(const std::string& what) {
  std::fprintf(stderr, "hearth chat-template: %s\n", what.c_str());
  return 1;
}

int run(const Options& o) {
  std::string source, conversation_text;
  if (!read_file(o.template_path, &source)) return fail("cannot read " + o.template_path);
  if (!read_file(o.conversation_path, &conversation_text)) {
    return fail("cannot read " + o.conversation_path);
  }
  const auto c = nlohmann::ordered_json::parse(conversation_text, nullptr, false);
  if (!c.is_object() || !c.contains("messages") || !c["messages"].is_array()) {
    return fail(o.conversation_path + ": expected a JSON object with a \"messages\" array");
  }
  jinja::RenderOptions opts;
  if (!o.date.empty()) {
    std::tm tm{};
    if (!strptime(o.date.c_str(), "%Y-%m-%d", &tm)) return fail("--date: expected YYYY-MM-DD");
    // Normalise (day of week and of year) through timegm.
    const std::time_t t = timegm(&tm);
    gmtime_r(&t, &tm);
    opts.fixed_now = true;
    opts.now = tm;
  }
  auto tmpl = jinja::Template::parse(source);
  if (!tmpl.ok()) return fail(o.template_path + ": " + tmpl.status().message());
  // The variables transformers passes: messages, tools (None without tools), documents,
  // add_generation_prompt, the special tokens, then the case's extra variables.
  nlohmann::ordered_json ctx;
  ctx["messages"] = c["messages"];
  ctx["tools"] = c.contains("tools") ? c["tools"] : nlohmann::ordered_json();
  ctx["documents"] = nullptr;
  ctx["add_generation_prompt"] = c.value("add_generation_prompt", false);
  ctx["bos_token"] = o.bos;
  ctx["eos_token"] = o.eos;
  if (c.contains("extra") && c["extra"].is_object()) {
    for (auto it = c["extra"].begin(); it != c["extra"].end(); ++it) ctx[it.key()] = it.value();
  }
  auto r = tmpl->render(ctx, {"bos_token", "eos_token"}, opts);
  if (!r.ok()) return fail(o.template_path + ": " + r.status().message());
  std::fwrite(r->text.data(), 1, r->text.size(), stdout);
  return 0;
}

Registrar reg("chat-template", [](CLI::App& root) {
  auto opts = std::make_shared<Options>();
  auto* cmd = root.add_subcommand(
      "chat-template", "Render a Jinja chat template over a conversation (as transformers does)");
  cmd->add_option("template", opts->template_path, "Jinja chat template file")->required();
  cmd->add_option("--conversation", opts->conversation_path,
                  "JSON object: messages, optional tools, add_generation_prompt, extra")
      ->required();
  cmd->add_option("--bos", opts->bos, "bos_token (default empty)");
  cmd->add_option("--eos", opts->eos, "eos_token (default empty)");
  cmd->add_option("--date", opts->date, "strftime_now's date, YYYY-MM-DD (default: now)");
  cmd->callback([opts] { exit_code() = run(*opts); });
});

}  // namespace
}  // namespace hearth::cli
