// tools/ferrite/cli.h — how subcommands join the `ferrite` tool.
//
// Each subcommand lives in its own tools/ferrite/<name>.cc and registers
// itself with one line:
//
//   FERRITE_REGISTER_COMMAND(info, "Describe a pool file", setup_info);
//
// where setup(CLI::App* sub) adds options and a callback. The callback
// throws ferrite::cli::Exit{code} to finish with a given exit code.
// Exit codes: 0 success, 1 a finding (unsound pool, violation), 2 usage.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace ferrite::cli {

struct Exit {
  int code;
};

struct Command {
  std::string name;
  std::string description;
  std::function<void(CLI::App*)> setup;
};

std::vector<Command>& commands();
inline bool register_command(Command c) {
  commands().push_back(std::move(c));
  return true;
}

}  // namespace ferrite::cli

#define FERRITE_CLI_CAT2(a, b) a##b
#define FERRITE_CLI_CAT(a, b) FERRITE_CLI_CAT2(a, b)
#define FERRITE_REGISTER_COMMAND(name, desc, setup_fn)                   \
  static const bool FERRITE_CLI_CAT(ferrite_cmd_reg_, __COUNTER__) = \
      ::ferrite::cli::register_command({#name, desc, setup_fn})
