// The `ferrite` command-line tool. Subcommands register themselves
// (tools/ferrite/cli.h); this file only assembles them.
#include <algorithm>
#include <cstdio>
#include <exception>

#include "ferrite/cli.h"

int main(int argc, char** argv) {
  CLI::App app{"Ferrite: crash-consistent concurrent data structures on persistent memory"};
  app.set_version_flag("--version", std::string("ferrite ") + FERRITE_VERSION);
  app.require_subcommand(1);
  auto cmds = ferrite::cli::commands();
  std::sort(cmds.begin(), cmds.end(), [](auto& a, auto& b) { return a.name < b.name; });
  for (auto& c : cmds) c.setup(app.add_subcommand(c.name, c.description));
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
