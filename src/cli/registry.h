// Subcommand registration. Each cmd_*.cpp defines a static Registrar whose setup
// function adds a CLI11 subcommand and its callback; main() builds the app from
// every registered command, so adding a command touches no shared file.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace hearth::cli {

// A command's callback stores its exit code here (0 = success).
int& exit_code();

struct CommandSpec {
  std::string name;  // for ordering in --help
  std::function<void(CLI::App& root)> setup;
};

std::vector<CommandSpec>& registry();

// The `bench` parent command, shared by every subsystem's benchmark: created by the
// first caller, reused by the others (CLI11 refuses a second subcommand of one name).
CLI::App* bench_command(CLI::App& root);

struct Registrar {
  Registrar(std::string name, std::function<void(CLI::App& root)> setup) {
    registry().push_back({std::move(name), std::move(setup)});
  }
};

}  // namespace hearth::cli
