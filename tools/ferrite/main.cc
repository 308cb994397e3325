// The `ferrite` command-line tool. Subcommands register themselves
// (tools/ferrite/cli.h); this file only assembles them.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

#include "ferrite/cli.h"

int main(int argc, char** argv) {
  CLI::App app{"Ferrite: crash-consistent concurrent data structures on persistent memory"};
  app.set_version_flag("--version", std::string("ferrite ") + FERRITE_VERSION);
  app.require_subcommand(1);
  auto cmds = ferrite::cli::commands();
  std::sort(cmds.begin(), cmds.end(), [](auto& a, auto& b) { return a.name < b.name; });
  for (auto& c : cmds) c.setup(app.add_subcommand(c.name, c.description));
  // An unknown command is named, with the known ones (CLI11 alone says only
  // "A subcommand is required").
  if (argc > 1 && argv[1][0] != '-') {
    const std::string want = argv[1];
    if (std::none_of(cmds.begin(), cmds.end(), [&](const auto& c) { return c.name == want; })) {
      std::string known;
      for (const auto& c : cmds) known += (known.empty() ? "" : ", ") + c.name;
      std::fprintf(stderr, "ferrite: unknown command '%s' (commands: %s; ferrite --help)\n", want.c_str(),
                   known.c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 returns 0 for --help/--version; map every other parse error to 2.
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  } catch (const ferrite::cli::Exit& e) {
    return e.code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ferrite: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
