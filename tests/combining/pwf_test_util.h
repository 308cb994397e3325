// Helpers for the PWF combining tests: temporary pools on /dev/shm and the
// test scale (FERRITE_TEST_SCALE, 0.1 under sanitizers).
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>

#include "ferrite/pmem/pool.h"

namespace ferrite::combining::pwftest {

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

// A pool file on /dev/shm, removed at scope exit.
struct Pool {
  std::string path;
  std::unique_ptr<pmem::Pool> pool;
  explicit Pool(const std::string& tag, std::size_t size = 64u << 20) {
    static std::atomic<int> k{0};
    path = "/dev/shm/ferrite-pwftest-" + std::to_string(::getpid()) + "-" + tag + "-" +
           std::to_string(k.fetch_add(1)) + ".pool";
    pool = pmem::Pool::create(path, size);
  }
  // Simulates a restart: unmap and open again (memory = what the file holds).
  void reopen() {
    pool.reset();
    pool = pmem::Pool::open(path);
  }
  pmem::Pool& operator*() { return *pool; }
  ~Pool() {
    pool.reset();
    ::unlink(path.c_str());
  }
};

}  // namespace ferrite::combining::pwftest
