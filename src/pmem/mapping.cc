// src/pmem/mapping.cc — mapping a pool file: at exactly its base address
// (MAP_FIXED_NOREPLACE), with MAP_SYNC on DAX, media detection (tmpfs / DAX
// / page-cache file), the per-file flock, and Mirror's volatile replica.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <random>

#include "internal.h"

namespace ferrite::pmem::detail {

namespace L = layout;

bool is_tmpfs(int fd) {
  struct statfs sf {};
  return ::fstatfs(fd, &sf) == 0 && static_cast<unsigned long>(sf.f_type) == TMPFS_MAGIC;
}

bool in_app_memory(std::uintptr_t base, std::size_t size) {
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer aborts the process on mappings outside its application
  // ranges; its low range ends at 512 GiB.
  constexpr std::uintptr_t kTsanLowEnd = std::uintptr_t{0x80} << 32;
  return base + size <= kTsanLowEnd;
#else
  (void)base;
  (void)size;
  return true;
#endif
}

// Maps [base, base+size) of fd shared at exactly base. Returns false (errno
// set) when the range is taken or the kernel would not place it there.
bool map_fixed(int fd, std::uintptr_t base, std::size_t size, bool writable, Media* media) {
  if (!in_app_memory(base, size)) {
    errno = EEXIST;
    return false;
  }
  void* want = reinterpret_cast<void*>(base);
  const int prot = PROT_READ | (writable ? PROT_WRITE : 0);
  void* p = MAP_FAILED;
  Media m = Media::kFile;
  if (is_tmpfs(fd)) {
    m = Media::kTmpfs;
  } else {
    p = ::mmap(want, size, prot, MAP_SHARED_VALIDATE | MAP_SYNC | MAP_FIXED_NOREPLACE, fd, 0);
    if (p != MAP_FAILED) m = Media::kDax;
    else if (errno != EOPNOTSUPP && errno != EINVAL) return false;
  }
  if (p == MAP_FAILED) p = ::mmap(want, size, prot, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
  if (p == MAP_FAILED) return false;
  if (p != want) {  // kernels before 4.17 treat the flag as a hint
    ::munmap(p, size);
    errno = EEXIST;
    return false;
  }
  *media = m;
  return true;
}


std::vector<std::uintptr_t> base_candidates(std::size_t size, BasePlacement placement) {
  std::vector<std::uintptr_t> v;
  if (placement == BasePlacement::kFirstFree) {
    for (int s = 0; s < kBaseSlots; ++s) v.push_back(kDefaultBaseStart + static_cast<std::uintptr_t>(s) * kBaseStride);
    return v;
  }
  // Aligned to the pool's size rounded up to a power of two (at least
  // kPlacementAlign): two pools then either share a base or are disjoint,
  // and each stride's lower half (a power of two) holds a whole number of
  // positions.
  const std::uintptr_t align = std::max<std::uintptr_t>(kPlacementAlign, std::bit_ceil(size));
  const std::uintptr_t per_stride = std::max<std::uintptr_t>(1, (kBaseStride / 2) / align);
  for (int s = 0; s < kBaseSlots; ++s)
    for (std::uintptr_t i = 0; i < per_stride; ++i)
      v.push_back(kDefaultBaseStart + static_cast<std::uintptr_t>(s) * kBaseStride + i * align);
  // Seeded from the kernel, not from time or pid: processes started together
  // (a service's workers) must not pick the same order.
  std::random_device rd;
  std::mt19937_64 rng((std::uint64_t{rd()} << 32) ^ rd());
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

bool range_free(std::uintptr_t at, std::size_t size) {
  if (!in_app_memory(at, size)) return false;
  void* want = reinterpret_cast<void*>(at);
  void* p = ::mmap(want, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (p == MAP_FAILED) return false;
  ::munmap(p, size);
  return p == want;
}


Media probe_media(int fd) {
  if (is_tmpfs(fd)) return Media::kTmpfs;
  // Probe MAP_SYNC with a throw-away read-only mapping anywhere.
  void* p = ::mmap(nullptr, L::kPage, PROT_READ, MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
  if (p == MAP_FAILED) return Media::kFile;
  ::munmap(p, L::kPage);
  return Media::kDax;
}

bool map_private(int fd, std::uintptr_t base, std::size_t size) {
  if (!in_app_memory(base, size)) {
    errno = EEXIST;
    return false;
  }
  void* want = reinterpret_cast<void*>(base);
  void* p = ::mmap(want, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0);
  if (p == MAP_FAILED) return false;
  if (p != want) {
    ::munmap(p, size);
    errno = EEXIST;
    return false;
  }
  return true;
}

void lock_file_shared(int fd, const std::string& path) {
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) fail(Errc::kLocked, path, "in use: open in another process (flock held)");
    fail(Errc::kUnreadable, path, "flock failed: " + std::string(std::strerror(errno)));
  }
}

void lock_file(int fd, const std::string& path) {
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK)
      fail(Errc::kLocked, path, "already open (flock held by another process or another Pool object in this one)");
    fail(Errc::kUnreadable, path, "flock failed: " + std::string(std::strerror(errno)));
  }
}

void* map_replica(std::uintptr_t at, std::size_t size) {
  void* want = reinterpret_cast<void*>(at);
  void* p = MAP_FAILED;
  if (in_app_memory(at, size))
    p = ::mmap(want, size, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (p != MAP_FAILED && p != want) {
    ::munmap(p, size);
    p = MAP_FAILED;
  }
  return p == MAP_FAILED ? nullptr : p;
}

}  // namespace ferrite::pmem::detail
