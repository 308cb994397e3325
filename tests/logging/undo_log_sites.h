// tests/logging/undo_log_sites.h — the mutation sites (crash/sites.h) of
// logging/undo_log.h by their `[site: NAME]` markers, for the tests that
// suppress one (the mutation guard, the batched-commit campaigns). Apart
// from campaign_checks.h: it needs FERRITE_SOURCE_DIR, which CMake defines
// only for the test files that name it (a unity batch may include this
// header's users after others).
#pragma once

#include <fstream>
#include <stdexcept>
#include <string>

#include "ferrite/crash/sites.h"

namespace ferrite::test::logging {

// "include/ferrite/logging/undo_log.h:LINE:VERB" of the line marked
// `[site: marker]` (a mutation site, crash/sites.h), found by its marker
// rather than a line number. Needs FERRITE_SOURCE_DIR.
inline std::string site_of(const std::string& marker, const char* verb) {
  const std::string file = "include/ferrite/logging/undo_log.h";
  std::ifstream in(std::string(FERRITE_SOURCE_DIR) + "/" + file);
  std::string line, found;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find("[site: " + marker + "]") != std::string::npos) {
      if (!found.empty()) throw std::runtime_error("marker " + marker + " twice");
      found = file + ":" + std::to_string(n) + ":" + verb;
    }
  if (found.empty()) throw std::runtime_error("marker " + marker + " not found");
  return found;
}

// Clears the suppressed sites however the test returns (an ASSERT), so
// that no later test of the process runs mutated.
struct Unsuppress {
  Unsuppress() = default;
  Unsuppress(const Unsuppress&) = delete;
  Unsuppress& operator=(const Unsuppress&) = delete;
  ~Unsuppress() { crash::sites::set_suppressed({}); }
};

}  // namespace ferrite::test::logging
