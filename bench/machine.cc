// bench/machine.cc — what the numbers were measured on: CPU, compiler and
// flags, build type, git commit, host; and the build properties that make
// numbers unrepresentative. See harness.h.
#include <sys/utsname.h>

#include <ctime>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "shell.h"

namespace ferrite::bench {

Machine machine_info() {
  Machine m;
  {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("model name", 0) == 0) {
        const auto colon = line.find(':');
        if (colon != std::string::npos) m.cpu_model = shell::trim(line.substr(colon + 1));
        break;
      }
    if (m.cpu_model.empty()) m.cpu_model = "unknown";
  }
  m.cores = static_cast<int>(std::thread::hardware_concurrency());
  m.flush = std::string(persist::flush_name(persist::active_flush()));
#if defined(__clang__)
  m.compiler = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  m.compiler = std::string("g++ ") + __VERSION__;
#else
  m.compiler = "unknown";
#endif
#ifdef FERRITE_CXX_FLAGS
  m.cxx_flags = shell::trim(FERRITE_CXX_FLAGS);
#endif
#ifdef FERRITE_BUILD_TYPE
  m.build_type = FERRITE_BUILD_TYPE;
#endif
#ifdef FERRITE_VERSION
  m.ferrite_version = FERRITE_VERSION;
#endif
#ifdef FERRITE_SANITIZED
  m.sanitized = true;
#endif
#ifndef NDEBUG
  m.assertions = true;
#endif
#ifdef __OPTIMIZE__
  m.optimized = true;
#endif
  m.git_commit = "unknown";
#ifdef FERRITE_SOURCE_DIR
  const std::string git = "git -C " + shell::quote(FERRITE_SOURCE_DIR);
  if (auto rev = shell::output(git + " rev-parse HEAD 2>/dev/null")) {
    m.git_commit = shell::trim(*rev);
    if (auto st = shell::output(git + " status --porcelain --untracked-files=no 2>/dev/null");
        st && !shell::trim(*st).empty())
      m.git_commit += "-dirty";
  }
#endif
  struct utsname u{};
  if (::uname(&u) == 0) {
    m.hostname = u.nodename;
    m.kernel = std::string(u.sysname) + " " + u.release;
  }
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  m.timestamp_utc = buf;
  return m;
}

std::vector<std::string> build_warnings() {
  std::vector<std::string> w;
#ifndef __OPTIMIZE__
  w.push_back("built without optimisation: numbers are not representative (use the release preset)");
#endif
#ifdef FERRITE_SANITIZED
  w.push_back("built with sanitizers (FERRITE_SANITIZED): numbers are not representative");
#endif
#ifndef NDEBUG
  w.push_back("built with assertions enabled (NDEBUG not defined): numbers may be pessimistic");
#endif
  return w;
}

}  // namespace ferrite::bench
