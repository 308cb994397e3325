// tests/common/temp_pool.h — scratch pool files on /dev/shm, removed at
// scope exit: TempPath (just the name), TempPool (a pool created there).
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "ferrite/pmem/pool.h"

namespace ferrite::test {

// /dev/shm/ferrite-test-<pid>-<tag>-<n>.pool, unique within the process.
inline std::string temp_pool_path(const std::string& tag = "t") {
  static std::atomic<int> n{0};
  return "/dev/shm/ferrite-test-" + std::to_string(::getpid()) + "-" + tag + "-" +
         std::to_string(n.fetch_add(1)) + ".pool";
}

// A unique path; the file (if any) is deleted when this goes out of scope.
struct TempPath {
  std::string path;
  explicit TempPath(const std::string& tag = "t") : path(temp_pool_path(tag)) {}
  ~TempPath() { ::unlink(path.c_str()); }
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  operator const std::string&() const { return path; }
};

// A pool created on a TempPath (64 MiB unless told).
class TempPool {
 public:
  explicit TempPool(const std::string& tag, std::size_t size = std::size_t{64} << 20,
                    const pmem::PoolOptions& opts = {})
      : path_(tag), pool_(pmem::Pool::create(path_.path, size, opts)) {}
  ~TempPool() { pool_.reset(); }  // unmap before TempPath unlinks the file

  pmem::Pool& operator*() { return *pool_; }
  pmem::Pool* operator->() { return pool_.get(); }
  pmem::Pool* get() { return pool_.get(); }
  const std::string& path() const { return path_.path; }
  // A clean restart: unmap and open again (memory = what the file holds).
  void reopen(const pmem::PoolOptions& opts = {}) {
    pool_.reset();
    pool_ = pmem::Pool::open(path_.path, opts);
  }

 private:
  TempPath path_;
  std::unique_ptr<pmem::Pool> pool_;
};

}  // namespace ferrite::test
