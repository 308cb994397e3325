#include "ferrite/cli.h"

namespace ferrite::cli {
std::vector<Command>& commands() {
  static std::vector<Command> all;
  return all;
}
}  // namespace ferrite::cli
