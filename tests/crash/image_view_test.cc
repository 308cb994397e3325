// A farm worker's reusable image view (src/crash/sim.cc, "Reusable image
// views"): a small pool's restarts share one private mapping at the pool's
// base, synced to each image before it opens; likewise Mirror's volatile
// replica ("Reusable volatile replicas"). These tests run the worker's
// sequence in a forked child (the simulator's child mode is per process) and
// check what recovery must be able to rely on: it sees exactly the image —
// never what the previous restart wrote — its writes never reach the image
// file, and a pool of another size still opens.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/temp_pool.h"
#include "ferrite/crash/sim.h"
#include "ferrite/pmem/pool.h"

namespace image_view_test {  // this file's names, apart in a unity build

namespace fc = ferrite::crash;
namespace fp = ferrite::pmem;

namespace {

// The image file a worker restarts from: a memfd holding a copy of the pool
// file, mapped shared (as the worker's scratch is).
struct Image {
  int fd = -1;
  std::uint8_t* map = nullptr;
  std::size_t size = 0;
  explicit Image(const std::string& pool_file) {
    const int src = ::open(pool_file.c_str(), O_RDONLY | O_CLOEXEC);
    if (src < 0) return;
    size = static_cast<std::size_t>(::lseek(src, 0, SEEK_END));
    fd = ::memfd_create("ferrite-test-image", MFD_CLOEXEC);
    if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(size)) != 0) return;
    map = static_cast<std::uint8_t*>(::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    if (map == MAP_FAILED) map = nullptr;
    if (map != nullptr && ::pread(src, map, size, 0) != static_cast<ssize_t>(size)) map = nullptr;
    ::close(src);
  }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd); }
};

fp::PoolOptions sim_options() {
  fp::PoolOptions o;
  o.backend.kind = ferrite::persist::BackendConfig::Kind::kSim;
  o.recover = true;
  return o;
}

bool mapped(const void* p) {
  unsigned char v = 0;
  return ::mincore(const_cast<void*>(p), 4096, &v) == 0;
}

// Runs `body` in a forked child in the simulator's child mode; the child's
// exit code is the number of the first failed check (0: all passed).
int in_worker(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    fc::enable_sim();
    fc::sim::enter_child();
    int rc = 99;
    try {
      rc = body();
    } catch (...) {
      rc = 98;
    }
    ::_exit(rc);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -2;
  return WEXITSTATUS(status);
}

TEST(ImageView, RecoverySeesOnlyTheImageAndNeverWritesIt) {
  ferrite::test::TempPath file("view");
  const std::size_t size = std::size_t{1} << 20;  // small enough for a reusable view
  fp::Pool::create(file.path, size).reset();
  Image img(file.path);
  ASSERT_NE(img.map, nullptr);
  const std::vector<std::uint8_t> original(img.map, img.map + img.size);
  const std::size_t mark = size - 4096, fresh = size - 3 * 4096;

  const int rc = in_worker([&]() -> int {
    fc::sim::set_child_backing_fd(img.fd);
    fc::sim::sync_child_view(img.map, img.size);
    void* base = nullptr;
    {
      auto pool = fp::Pool::open(img.path(), sim_options());
      base = pool->base();
      auto* p = static_cast<std::uint8_t*>(base);
      if (p[mark] != original[mark]) return 1;
      std::memset(p + mark, 0xA5, 64);  // "recovery" writes the pool
    }
    if (std::memcmp(img.map, original.data(), img.size) != 0) return 2;  // never the image file
    if (!mapped(base)) return 3;  // the view outlives the pool: the next restart adopts it
    // The next image differs from the last one in another page.
    img.map[fresh] ^= 0xFF;
    fc::sim::sync_child_view(img.map, img.size);
    {
      auto pool = fp::Pool::open(img.path(), sim_options());
      if (pool->base() != base) return 4;
      auto* p = static_cast<std::uint8_t*>(pool->base());
      if (std::memcmp(p + mark, original.data() + mark, 64) != 0) return 5;  // the last restart's write is gone
      if (p[fresh] != static_cast<std::uint8_t>(original[fresh] ^ 0xFF)) return 6;  // the new image is seen
      if (std::memcmp(p, img.map, img.size) != 0) return 7;  // byte for byte
    }
    img.map[fresh] ^= 0xFF;
    // Leaving the worker's restarts gives the range back.
    fc::sim::set_child_backing_fd(-1);
    if (mapped(base)) return 8;
    return 0;
  });
  EXPECT_EQ(rc, 0) << "check " << rc << " failed in the worker";
  EXPECT_EQ(std::memcmp(img.map, original.data(), img.size), 0);
}

// Mirror's volatile replica (pmem::Pool::map_volatile_replica) in a
// worker: a closing pool's replica is kept, not unmapped, and the next pool
// at the same place gets it back zero-filled — never what the last restart
// wrote there; a child forked to crash recovery does not inherit it.
TEST(ImageView, TheVolatileReplicaIsReusedZeroFilled) {
  ferrite::test::TempPath file("replica");
  const std::size_t size = std::size_t{1} << 20;
  fp::Pool::create(file.path, size).reset();
  Image img(file.path);
  ASSERT_NE(img.map, nullptr);
  const int rc = in_worker([&]() -> int {
    fc::sim::set_child_backing_fd(img.fd);
    fc::sim::sync_child_view(img.map, img.size);
    std::uint8_t* r1 = nullptr;
    {
      auto pool = fp::Pool::open(img.path(), sim_options());
      r1 = static_cast<std::uint8_t*>(pool->map_volatile_replica());
      if (r1 != static_cast<std::uint8_t*>(pool->base()) + fp::kReplicaOffset) return 1;
      for (std::size_t off : {std::size_t{0}, size / 2 + 100, size - 1}) r1[off] = 0x5A;  // "recovery" fills it
    }
    if (!mapped(r1)) return 2;  // kept for the next restart
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(mapped(r1) ? 1 : 0);  // MADV_DONTFORK: a probe maps its own
    int status = 0;
    if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 3;
    fc::sim::sync_child_view(img.map, img.size);
    {
      auto pool = fp::Pool::open(img.path(), sim_options());
      auto* r2 = static_cast<std::uint8_t*>(pool->map_volatile_replica());
      if (r2 != r1) return 4;  // the kept one
      for (std::size_t i = 0; i < size; ++i)
        if (r2[i] != 0) return 5;  // zero-filled, as a fresh mapping
    }
    return 0;
  });
  EXPECT_EQ(rc, 0) << "check " << rc << " failed in the worker";
}

// A pool of another size (an image whose header changed, or the next
// campaign's pool): the view is dropped and the pool opens on its image.
TEST(ImageView, APoolOfAnotherSizeStillOpens) {
  ferrite::test::TempPath small_file("view-s"), big_file("view-b");
  fp::PoolOptions o;
  fp::Pool::create(small_file.path, std::size_t{1} << 20, o).reset();
  fp::Pool::create(big_file.path, std::size_t{2} << 20, o).reset();
  Image small(small_file.path), big(big_file.path);
  ASSERT_NE(small.map, nullptr);
  ASSERT_NE(big.map, nullptr);
  const int rc = in_worker([&]() -> int {
    fc::sim::set_child_backing_fd(small.fd);
    fc::sim::sync_child_view(small.map, small.size);
    void* a = nullptr;
    { a = fp::Pool::open(small.path(), sim_options())->base(); }
    fc::sim::set_child_backing_fd(big.fd);
    fc::sim::sync_child_view(big.map, big.size);  // another size: dropped
    {
      auto pool = fp::Pool::open(big.path(), sim_options());
      if (std::memcmp(pool->base(), big.map, big.size) != 0) return 1;
    }
    fc::sim::set_child_backing_fd(small.fd);
    fc::sim::sync_child_view(small.map, small.size);
    {
      auto pool = fp::Pool::open(small.path(), sim_options());
      if (std::memcmp(pool->base(), small.map, small.size) != 0) return 2;
    }
    (void)a;
    return 0;
  });
  EXPECT_EQ(rc, 0) << "check " << rc << " failed in the worker";
}

}  // namespace

}  // namespace image_view_test
