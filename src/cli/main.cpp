// hearth: one binary, many subcommands (see registry.h).
#include <algorithm>
#include <cstdio>
#include <exception>

#include "cli/device_flags.h"
#include "cli/registry.h"

namespace hearth::cli {

int& exit_code() {
  static int code = 0;
  return code;
}

std::vector<CommandSpec>& registry() {
  static std::vector<CommandSpec> r;
  return r;
}

CLI::App* bench_command(CLI::App& root) {
  for (CLI::App* s : root.get_subcommands([](CLI::App*) { return true; })) {
    if (s->get_name() == "bench") return s;
  }
  CLI::App* bench = root.add_subcommand("bench", "Benchmarks");
  bench->require_subcommand(1);
  return bench;
}

}  // namespace hearth::cli

int main(int argc, char** argv) {
  using namespace hearth::cli;
  CLI::App app{"hearth: LLM inference with a persistent, token-exact KV cache"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "hearth 0.1.0");
  auto& cmds = registry();
  std::sort(cmds.begin(), cmds.end(),
            [](const CommandSpec& a, const CommandSpec& b) { return a.name < b.name; });
  for (auto& c : cmds) c.setup(app);
  // llama.cpp's spellings CLI11 cannot declare (-ngl) become their long names first.
  std::vector<std::string> args = expand_cli_aliases(argc, argv);
  std::vector<char*> arg_ptrs;
  for (std::string& a : args) arg_ptrs.push_back(a.data());
  try {
    app.parse(static_cast<int>(arg_ptrs.size()), arg_ptrs.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hearth: error: %s\n", e.what());
    return 1;
  }
  return exit_code();
}
