// bench/shell.cc — see shell.h.
#include "shell.h"

#include <sys/wait.h>

#include <cstdio>

namespace ferrite::bench::shell {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::optional<std::string> output(const std::string& cmd) {
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) return std::nullopt;
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, f) != nullptr) out += buf;
  const int status = ::pclose(f);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

}  // namespace ferrite::bench::shell
