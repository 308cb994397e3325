// Helpers for the pmem tests: unique pool files on /dev/shm, the test scale,
// and a child-process entry point (the test binary re-executes itself with
// FERRITE_PMEM_CHILD set; see child_main in restart_test.cc).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ferrite/pmem/layout.h"
#include "ferrite/pmem/pool.h"

namespace ferrite::pmem::test {

inline double scale() {
  const char* s = std::getenv("FERRITE_TEST_SCALE");
  if (s == nullptr) return 1.0;
  const double v = std::atof(s);
  return v > 0 ? v : 1.0;
}
inline int scaled(int n, int min = 1) {
  const int v = static_cast<int>(n * scale());
  return v < min ? min : v;
}

inline std::string unique_path(const std::string& tag = "t") {
  static std::atomic<int> n{0};
  return "/dev/shm/ferrite-test-" + std::to_string(::getpid()) + "-" + tag + "-" +
         std::to_string(n.fetch_add(1)) + ".pool";
}

// Deletes the file when it goes out of scope.
struct TempPath {
  std::string path;
  explicit TempPath(const std::string& tag = "t") : path(unique_path(tag)) {}
  ~TempPath() { ::unlink(path.c_str()); }
  operator const std::string&() const { return path; }
};

inline std::vector<char> read_file(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}
inline void write_file(const std::string& p, const std::vector<char>& d) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(d.data(), static_cast<std::streamsize>(d.size()));
}

// Header slot s of a file image, with its checksum recomputed.
inline layout::HeaderSlot* slot_of(std::vector<char>& img, int s) {
  return reinterpret_cast<layout::HeaderSlot*>(img.data() + layout::kSlotOffset[s]);
}
inline void reseal(layout::HeaderSlot* h) {
  h->checksum = layout::fnv1a64(reinterpret_cast<const unsigned char*>(h),
                                offsetof(layout::HeaderSlot, checksum));
}

// A pipe whose ends are close-on-exec except `child_end` (0 read, 1 write),
// which a spawned child inherits.
inline bool child_pipe(int fds[2], int child_end) {
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  return ::fcntl(fds[child_end], F_SETFD, 0) == 0;
}

// Runs this test binary again (fork + exec of /proc/self/exe) as a child
// running only the test PmemChild.Entry, with FERRITE_PMEM_CHILD=role and the
// given extra environment; returns its pid. The child's stdout goes to
// /dev/null (gtest chatter); stderr is inherited.
inline pid_t spawn_self(const std::string& role, const std::vector<std::string>& env) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("FERRITE_PMEM_CHILD", role.c_str(), 1);
    for (const auto& kv : env) ::putenv(const_cast<char*>(kv.c_str()));
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, 1);
    char* argv[] = {const_cast<char*>("/proc/self/exe"), const_cast<char*>("--gtest_filter=PmemChild.Entry"),
                    nullptr};
    ::execv("/proc/self/exe", argv);
    ::_exit(127);
  }
  return pid;
}

}  // namespace ferrite::pmem::test
