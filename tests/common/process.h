// tests/common/process.h — other processes: the test binary re-executed as a
// child, pipes for coordinating with it, and the `ferrite` tool run from the
// outside.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace ferrite::test {

// A pipe whose ends are close-on-exec except `child_end` (0 read, 1 write),
// which a spawned child inherits.
inline bool child_pipe(int fds[2], int child_end) {
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  return ::fcntl(fds[child_end], F_SETFD, 0) == 0;
}

// Runs this test binary again (fork + exec of /proc/self/exe) running only
// the tests matching `gtest_filter`, with `env` ("NAME=value") added to its
// environment; returns its pid (-1 if fork failed). The child's stdout goes
// to /dev/null (gtest chatter); stderr is inherited.
inline pid_t spawn_self(const std::string& gtest_filter, const std::vector<std::string>& env) {
  const std::string filter = "--gtest_filter=" + gtest_filter;
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (const auto& kv : env) ::putenv(const_cast<char*>(kv.c_str()));
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, 1);
    char* argv[] = {const_cast<char*>("/proc/self/exe"), const_cast<char*>(filter.c_str()), nullptr};
    ::execv("/proc/self/exe", argv);
    ::_exit(127);
  }
  return pid;
}

struct CliResult {
  int code;            // exit status, -1 if killed by a signal or not run
  std::string output;  // stdout, and stderr unless discarded
};

// Runs `program args` through the shell and collects its output. stderr is
// merged into the output, or discarded with keep_stderr = false.
inline CliResult run_command(const std::string& program, const std::string& args, bool keep_stderr = true) {
  const std::string cmd = program + " " + args + (keep_stderr ? " 2>&1" : " 2>/dev/null");
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const int status = ::pclose(f);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

#ifdef FERRITE_CLI_PATH
// `ferrite args` (the tool this build made).
inline CliResult run_cli(const std::string& args, bool keep_stderr = true) {
  return run_command(FERRITE_CLI_PATH, args, keep_stderr);
}
#endif

}  // namespace ferrite::test
