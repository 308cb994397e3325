// Helpers for the PB combining tests: temporary pools on /dev/shm and the
// test scale (FERRITE_TEST_SCALE, 0.1 under sanitizers).
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>

#include "ferrite/pmem/pool.h"

namespace ferrite::combining::test {

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

inline std::string pool_path(const std::string& tag) {
  static std::atomic<int> n{0};
  return "/dev/shm/ferrite-pbtest-" + std::to_string(::getpid()) + "-" + tag + "-" +
         std::to_string(n.fetch_add(1)) + ".pool";
}

// A pool file removed at scope exit.
struct TempPool {
  std::string path;
  std::unique_ptr<pmem::Pool> pool;
  explicit TempPool(const std::string& tag, std::size_t size = 64u << 20) : path(pool_path(tag)) {
    pool = pmem::Pool::create(path, size);
  }
  void reopen() {
    pool.reset();
    pool = pmem::Pool::open(path);
  }
  pmem::Pool& operator*() { return *pool; }
  ~TempPool() {
    pool.reset();
    ::unlink(path.c_str());
  }
};

}  // namespace ferrite::combining::test
