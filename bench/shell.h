// bench/shell.h — running a shell command and quoting for it: what the
// machine description (git) and the plots (python3) need. Internal to the
// harness (bench/harness.h).
//
// Thread safety: stateless; popen is safe to call from any thread.
#pragma once

#include <optional>
#include <string>

namespace ferrite::bench::shell {

// `s` without leading and trailing whitespace.
std::string trim(std::string s);
// Standard output of `cmd` run by /bin/sh, or nullopt when it cannot be
// started or exits non-zero.
std::optional<std::string> output(const std::string& cmd);
// `s` in single quotes, safe as one shell word.
std::string quote(const std::string& s);

}  // namespace ferrite::bench::shell
