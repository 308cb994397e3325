// src/pmem/pool.cc — pool files: create/open/close, header validation, the
// double-buffered header, named roots, backends, the volatile replica and
// check_pool.
//
// Validation happens on pread() copies of the header slots and the chunk map
// BEFORE anything is mapped at the recorded base, so a damaged file can
// neither make us read past a mapping nor map over something else.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>

#include "internal.h"

namespace ferrite::pmem {

namespace L = layout;

// ----------------------------------------------------------------- names

std::string_view errc_name(Errc e) {
  switch (e) {
    case Errc::kNotFound: return "not-found";
    case Errc::kUnreadable: return "unreadable";
    case Errc::kExists: return "exists";
    case Errc::kBadMagic: return "bad-magic";
    case Errc::kBadVersion: return "bad-version";
    case Errc::kTruncated: return "truncated";
    case Errc::kChecksum: return "checksum";
    case Errc::kCorrupt: return "corrupt";
    case Errc::kUnknownRoot: return "unknown-root";
    case Errc::kRootType: return "root-type";
    case Errc::kRootTableFull: return "root-table-full";
    case Errc::kBaseUnavailable: return "base-unavailable";
    case Errc::kLocked: return "locked";
    case Errc::kFull: return "full";
    case Errc::kInvalidArgument: return "invalid-argument";
    case Errc::kBackendConflict: return "backend-conflict";
  }
  return "?";
}

std::string_view media_name(Media m) {
  switch (m) {
    case Media::kDax: return "dax";
    case Media::kTmpfs: return "tmpfs";
    case Media::kFile: return "file";
  }
  return "?";
}

namespace detail {

void fail(Errc code, const std::string& path, const std::string& why) {
  throw PoolError(code, "pool " + path + ": " + why + " [" + std::string(errc_name(code)) + "]");
}

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

namespace {

std::string errno_text(int e) { return std::strerror(e); }

std::uint64_t slot_checksum(const L::HeaderSlot& h) {
  return L::fnv1a64(reinterpret_cast<const unsigned char*>(&h), offsetof(L::HeaderSlot, checksum));
}

// Reads exactly n bytes at off; returns false on a short read (EOF).
bool pread_all(int fd, void* buf, std::size_t n, std::uint64_t off, const std::string& path) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, static_cast<off_t>(off));
    if (r < 0) {
      if (errno == EINTR) continue;
      fail(Errc::kUnreadable, path, "read failed: " + errno_text(errno));
    }
    if (r == 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
    off += static_cast<std::uint64_t>(r);
  }
  return true;
}

enum class SlotState { kOk, kBadMagic, kBadVersion, kBadChecksum };

SlotState classify(const L::HeaderSlot& h) {
  if (std::memcmp(h.magic, L::kMagic.data(), L::kMagic.size()) != 0) return SlotState::kBadMagic;
  if (h.format_version != L::kFormatVersion) return SlotState::kBadVersion;
  if (h.header_size != sizeof(L::HeaderSlot)) return SlotState::kBadChecksum;
  if (h.checksum != slot_checksum(h)) return SlotState::kBadChecksum;
  return SlotState::kOk;
}

bool nul_terminated(const char* s, std::size_t n) { return std::memchr(s, '\0', n) != nullptr; }

bool all_zero(const void* p, std::size_t n) {
  const auto* c = static_cast<const unsigned char*>(p);
  return std::all_of(c, c + n, [](unsigned char x) { return x == 0; });
}

// Field consistency of a checksum-valid slot (the file size is checked by
// the caller). Returns "" when sound.
std::string header_problem(const L::HeaderSlot& h) {
  if (h.pool_size % L::kPage != 0) return "pool size " + std::to_string(h.pool_size) + " is not a multiple of 4 KiB";
  if (h.pool_size < L::kMinPoolSize) return "pool size " + std::to_string(h.pool_size) + " is below the 1 MiB minimum";
  if (h.pool_size > kMaxPoolSize) return "pool size " + std::to_string(h.pool_size) + " exceeds the maximum";
  if (h.base == 0 || h.base % L::kBaseAlign != 0)
    return "base address " + hex(h.base) + " is not 2 MiB aligned";
  if (h.base >= L::kUserSpaceEnd || h.pool_size > L::kUserSpaceEnd - h.base)
    return "base address " + hex(h.base) + " + size is not a user-space address range";
  if (h.chunk_size != L::kChunkSize) return "chunk size " + std::to_string(h.chunk_size) + " is not 65536";
  if (h.chunk_map_offset != L::kChunkMapOffset) return "chunk map offset " + hex(h.chunk_map_offset) + " is not 0x4000";
  if (h.chunk_count != L::heap_chunk_count(h.pool_size))
    return "chunk count " + std::to_string(h.chunk_count) + " does not match the pool size (expected " +
           std::to_string(L::heap_chunk_count(h.pool_size)) + ")";
  if (h.heap_offset != L::heap_offset_for(h.chunk_count)) return "heap offset " + hex(h.heap_offset) + " is wrong";
  if (h.root_capacity != L::kMaxRoots) return "root capacity " + std::to_string(h.root_capacity) + " is not 32";
  const std::uint64_t heap_end = h.heap_offset + h.chunk_count * L::kChunkSize;
  std::set<std::string> names;
  for (std::size_t i = 0; i < L::kMaxRoots; ++i) {
    const L::RootEntry& r = h.roots[i];
    const std::string at = "root entry " + std::to_string(i);
    if (r.in_use == 0) {
      if (!all_zero(&r, sizeof r)) return at + " is free but not zeroed";
      continue;
    }
    if (r.in_use != 1) return at + " has in_use=" + std::to_string(r.in_use);
    if (!nul_terminated(r.name, sizeof r.name)) return at + ": name is not NUL-terminated";
    if (r.name[0] == '\0') return at + ": empty name";
    if (!nul_terminated(r.type_name, sizeof r.type_name)) return at + ": type name is not NUL-terminated";
    if (r.reserved != 0) return at + ": reserved field is not zero";
    if (!names.insert(r.name).second) return at + ": duplicate name '" + std::string(r.name) + "'";
    if (r.size == 0 || r.offset < h.heap_offset || r.offset >= heap_end || r.size > heap_end - r.offset)
      return "root '" + std::string(r.name) + "' (offset " + hex(r.offset) + ", size " +
             std::to_string(r.size) + ") lies outside the heap";
  }
  return "";
}

// Chunk map validity, then that each root is an allocated block.
std::string map_problem(const L::HeaderSlot& h, const std::vector<std::uint32_t>& map) {
  const std::size_t n = map.size();
  for (std::size_t i = 0; i < n;) {
    const std::uint32_t e = map[i];
    if (e == L::kChunkFree || L::is_small(e) || e == L::kLargeTail) {
      ++i;  // a tail not covered by a head is an orphan (read as free)
      continue;
    }
    if (L::chunk_kind(e) == L::kLargeHead) {
      const std::uint32_t run = L::chunk_arg(e);
      if (run == 0 || run > n - i)
        return "chunk map entry " + std::to_string(i) + " starts a run of " + std::to_string(run) +
               " chunks that does not fit the heap";
      for (std::size_t t = i + 1; t < i + run; ++t)
        if (map[t] != L::kLargeTail)
          return "chunk map entry " + std::to_string(t) + " (" + hex(map[t]) +
                 ") should continue the run starting at chunk " + std::to_string(i);
      i += run;
      continue;
    }
    return "chunk map entry " + std::to_string(i) + " = " + hex(e) +
           " is neither free, a size class nor a run";
  }
  const auto orphan = orphan_tails(map);
  for (const L::RootEntry& r : h.roots) {
    if (r.in_use == 0) continue;
    const std::uint64_t rel = r.offset - h.heap_offset;
    std::uint64_t c = rel / L::kChunkSize;
    const std::string bad = "root '" + std::string(r.name) + "' at offset " + hex(r.offset);
    while (c > 0 && map[c] == L::kLargeTail && !orphan[c]) --c;
    const std::uint32_t e = map[c];
    const std::uint64_t in_chunk = rel - c * L::kChunkSize;
    if (L::is_small(e)) {
      const int cls = static_cast<int>(L::chunk_kind(e)) - 1;
      const std::uint32_t bs = class_size(cls);
      if (in_chunk % bs != 0 || in_chunk / bs >= blocks_per_chunk(cls) || r.size > bs)
        return bad + " is not an allocated block of its chunk's size class";
    } else if (L::chunk_kind(e) == L::kLargeHead && !orphan[c]) {
      if (in_chunk != 0 || r.size > L::chunk_arg(e) * L::kChunkSize)
        return bad + " does not match the chunk run holding it";
    } else {
      return bad + " lies in a free chunk";
    }
  }
  return "";
}

}  // namespace

FileState load_and_validate(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(Errc::kUnreadable, path, "fstat failed: " + errno_text(errno));
  if (!S_ISREG(st.st_mode)) fail(Errc::kUnreadable, path, "not a regular file");
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  if (file_size < L::kChunkMapOffset)
    fail(Errc::kTruncated, path,
         "file is " + std::to_string(file_size) + " bytes, too small to hold the two 8 KiB header slots");
  FileState fs;
  L::HeaderSlot slots[2];
  SlotState state[2];
  for (int s = 0; s < 2; ++s) {
    if (!pread_all(fd, &slots[s], sizeof(L::HeaderSlot), L::kSlotOffset[s], path))
      fail(Errc::kTruncated, path, "file ends inside header slot " + std::to_string(s));
    state[s] = classify(slots[s]);
  }
  int best = -1;
  for (int s = 0; s < 2; ++s)
    if (state[s] == SlotState::kOk && (best < 0 || slots[s].generation > slots[best].generation)) best = s;
  if (best < 0) {
    auto any = [&](SlotState x) { return state[0] == x || state[1] == x; };
    if (any(SlotState::kBadChecksum))
      fail(Errc::kChecksum, path, "no header slot verifies (checksum mismatch in both slots)");
    if (any(SlotState::kBadVersion)) {
      const std::uint32_t v = state[0] == SlotState::kBadVersion ? slots[0].format_version : slots[1].format_version;
      fail(Errc::kBadVersion, path,
           "format version " + std::to_string(v) + " is not supported (this build reads version " +
               std::to_string(L::kFormatVersion) + ")");
    }
    fail(Errc::kBadMagic, path, "not a Ferrite pool (bad magic)");
  }
  fs.hdr = slots[best];
  fs.slot = best;
  fs.other_valid = state[1 - best] == SlotState::kOk;
  const L::HeaderSlot& h = fs.hdr;
  if (h.pool_size > file_size)
    fail(Errc::kTruncated, path,
         "file is " + std::to_string(file_size) + " bytes but its header records " + std::to_string(h.pool_size));
  if (h.pool_size < file_size)
    fail(Errc::kCorrupt, path,
         "file is " + std::to_string(file_size) + " bytes but its header records " + std::to_string(h.pool_size));
  if (auto why = header_problem(h); !why.empty()) fail(Errc::kCorrupt, path, why);
  fs.map.resize(h.chunk_count);
  if (!pread_all(fd, fs.map.data(), 4 * h.chunk_count, h.chunk_map_offset, path))
    fail(Errc::kTruncated, path, "file ends inside the chunk map");
  if (auto why = map_problem(h, fs.map); !why.empty()) fail(Errc::kCorrupt, path, why);
  return fs;
}

}  // namespace detail

// ---------------------------------------------------------------- mapping

namespace {

using detail::fail;
using detail::hex;

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

// Process-wide registry of open pools and their backend.
struct Registry {
  std::mutex mu;
  int open = 0;
  persist::BackendConfig cfg{};
  const persist::Backend* saved = nullptr;
};
Registry& registry() {
  static Registry r;
  return r;
}

std::string uuid_text(const std::uint8_t* u) {
  std::string s;
  char b[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    std::snprintf(b, sizeof b, "%02x", u[i]);
    s += b;
  }
  return s;
}

void validate_root_name(std::string_view name, const std::string& path) {
  if (name.empty() || name.size() >= L::kRootNameBytes || name.find('\0') != std::string_view::npos)
    fail(Errc::kInvalidArgument, path,
         "root name '" + std::string(name) + "' must be 1..47 characters without NUL");
}

}  // namespace

struct Pool::Impl {
  std::string path;
  int fd = -1;
  char* base = nullptr;
  std::size_t size = 0;
  Media media = Media::kFile;
  PoolOptions opts;
  bool registered = false;
  void* replica = nullptr;

  mutable std::mutex root_mu;  // guards hdr, slot, pending, the root arena
  L::HeaderSlot hdr{};         // copy of the slot in force
  int slot = 0;
  std::vector<L::RootEntry> pending;  // allocated, not yet published

  std::unique_ptr<Heap::Impl> heap_impl;
  Heap heap{nullptr};

  ~Impl() {
    if (replica != nullptr) ::munmap(replica, size);
    if (registered) unregister_backend();
    if (base != nullptr) {
      // Regular files are only durable through the page cache: flush it.
      if (media == Media::kFile) ::msync(base, size, MS_SYNC);
      ::munmap(base, size);
    }
    if (fd >= 0) ::close(fd);  // drops the flock
  }

  void register_backend() {
    Registry& r = registry();
    std::lock_guard<std::mutex> g(r.mu);
    if (r.open > 0 && !(r.cfg == opts.backend))
      fail(Errc::kBackendConflict, path,
           "asks for backend '" + opts.backend.to_string() + "' but pools already open in this process use '" +
               r.cfg.to_string() + "'");
    const persist::Backend* b = nullptr;
    try {
      b = opts.backend.kind == persist::BackendConfig::Kind::kSim ? persist::sim_attach(base, size)
                                                                  : persist::make_backend(opts.backend);
    } catch (const std::exception& e) {
      fail(Errc::kInvalidArgument, path, std::string("backend: ") + e.what());
    }
    if (r.open == 0) r.saved = persist::installed();
    persist::install(b);
    r.cfg = opts.backend;
    ++r.open;
    registered = true;
  }

  void unregister_backend() {
    Registry& r = registry();
    std::lock_guard<std::mutex> g(r.mu);
    if (opts.backend.kind == persist::BackendConfig::Kind::kSim) persist::sim_detach(base);
    if (--r.open == 0) persist::install(r.saved);
    registered = false;
  }

  void lock_file() {
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno == EWOULDBLOCK)
        fail(Errc::kLocked, path, "already open (flock held by another process or another Pool object in this one)");
      fail(Errc::kUnreadable, path, "flock failed: " + std::string(std::strerror(errno)));
    }
  }

  void start_heap() {
    heap_impl = std::make_unique<Heap::Impl>(path, base, hdr, opts.arenas);
    heap_impl->root_offsets_ = [this] {
      std::lock_guard<std::mutex> g(root_mu);
      std::vector<std::uint64_t> v;
      for (const auto& r : hdr.roots)
        if (r.in_use) v.push_back(r.offset);
      return v;
    };
    heap = Heap(heap_impl.get());
  }

  // Writes `h` (generation already set) to slot s, then makes it current.
  void write_slot(L::HeaderSlot h, int s) {
    h.checksum = detail::slot_checksum(h);
    char* dst = base + L::kSlotOffset[s];
    std::memcpy(dst, &h, sizeof h);
    // PERSIST: layout.h invariant 3 — the slot is durable before the pool
    // treats it as the newest (and before any later update overwrites the
    // other slot).
    persist::pwb(dst, sizeof h);
    persist::psync();
    hdr = h;
    slot = s;
  }
  void update_header(const L::HeaderSlot& h) {
    L::HeaderSlot n = h;
    n.generation = hdr.generation + 1;
    // CRASH: the slot in force is untouched; a torn write of the other one
    // fails its checksum and open keeps using the old slot.
    write_slot(n, 1 - slot);
  }
};

namespace {
void check_options(const PoolOptions& o, const std::string& path) {
  if (o.arenas < 1 || o.arenas > 4096)
    fail(Errc::kInvalidArgument, path, "arenas must be in [1, 4096], got " + std::to_string(o.arenas));
}
}  // namespace

// ------------------------------------------------------------ create/open

std::unique_ptr<Pool> Pool::create(const std::string& path, std::size_t size, const PoolOptions& opts) {
  check_options(opts, path);
  if (size % L::kPage != 0 || size < L::kMinPoolSize || size > kMaxPoolSize)
    fail(Errc::kInvalidArgument, path,
         "size " + std::to_string(size) + " must be a multiple of 4 KiB in [1 MiB, " +
             std::to_string(kMaxPoolSize >> 30) + " GiB]");
  if (opts.base != 0 && (opts.base % L::kBaseAlign != 0 || opts.base >= L::kUserSpaceEnd ||
                         size > L::kUserSpaceEnd - opts.base))
    fail(Errc::kInvalidArgument, path, "base " + hex(opts.base) + " must be 2 MiB aligned user-space");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) fail(Errc::kExists, path, "file already exists");

  // Built under a temporary name and renamed into place once complete, so a
  // crash during create never leaves a half-initialized pool at `path`.
  const std::string tmp = path + ".creating." + std::to_string(::getpid());
  auto im = std::make_unique<Impl>();
  im->path = path;
  im->opts = opts;
  im->size = size;
  im->fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (im->fd < 0) {
    const int e = errno;
    fail(e == ENOENT ? Errc::kNotFound : Errc::kUnreadable, path,
         "cannot create " + tmp + ": " + std::strerror(e));
  }
  struct Unlinker {
    std::string p;
    bool armed = true;
    ~Unlinker() {
      if (armed) ::unlink(p.c_str());
    }
  } unlinker{tmp};
  im->lock_file();
  if (int e = ::posix_fallocate(im->fd, 0, static_cast<off_t>(size)); e != 0) {
    if (e != EOPNOTSUPP && e != EINVAL) fail(Errc::kUnreadable, path, "cannot reserve " + std::to_string(size) + " bytes: " + std::strerror(e));
    if (::ftruncate(im->fd, static_cast<off_t>(size)) != 0)
      fail(Errc::kUnreadable, path, "cannot size the file: " + std::string(std::strerror(errno)));
  }
  std::uintptr_t base = opts.base;
  bool mapped = false;
  if (base != 0) {
    mapped = map_fixed(im->fd, base, size, true, &im->media);
  } else {
    for (int s = 0; s < kBaseSlots && !mapped; ++s) {
      base = kDefaultBaseStart + static_cast<std::uintptr_t>(s) * kBaseStride;
      mapped = map_fixed(im->fd, base, size, true, &im->media);
    }
  }
  if (!mapped)
    fail(Errc::kBaseUnavailable, path,
         opts.base != 0 ? "base " + hex(opts.base) + " is unavailable: " + std::strerror(errno)
                        : "no free base address slot in Ferrite's default range");
  im->base = reinterpret_cast<char*>(base);
  im->register_backend();

  L::HeaderSlot h{};
  std::memcpy(h.magic, L::kMagic.data(), L::kMagic.size());
  h.format_version = L::kFormatVersion;
  h.header_size = sizeof(L::HeaderSlot);
  h.pool_size = size;
  h.base = base;
  {
    std::random_device rd;
    for (int i = 0; i < 16; i += 4) {
      const std::uint32_t r = rd();
      std::memcpy(&h.uuid[i], &r, 4);
    }
    h.uuid[6] = static_cast<std::uint8_t>((h.uuid[6] & 0x0F) | 0x40);  // RFC 4122 v4
    h.uuid[8] = static_cast<std::uint8_t>((h.uuid[8] & 0x3F) | 0x80);
  }
  h.chunk_size = L::kChunkSize;
  h.chunk_count = L::heap_chunk_count(size);
  h.chunk_map_offset = L::kChunkMapOffset;
  h.heap_offset = L::heap_offset_for(h.chunk_count);
  h.root_capacity = L::kMaxRoots;
  // The file is zero-filled, so the chunk map says "all free". Both slots
  // start valid (generations 0 and 1).
  h.generation = 0;
  im->write_slot(h, 1);
  h.generation = 1;
  im->write_slot(h, 0);
  im->start_heap();

  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) != 0) {
    const int e = errno;
    if (e == EEXIST) fail(Errc::kExists, path, "file already exists");
    if (e != EINVAL && e != ENOSYS) fail(Errc::kUnreadable, path, "cannot rename into place: " + std::string(std::strerror(e)));
    if (::link(tmp.c_str(), path.c_str()) != 0) {
      const int e2 = errno;
      fail(e2 == EEXIST ? Errc::kExists : Errc::kUnreadable, path, std::string("cannot link into place: ") + std::strerror(e2));
    }
    ::unlink(tmp.c_str());
  }
  unlinker.armed = false;
  return std::unique_ptr<Pool>(new Pool(std::move(im)));
}

std::unique_ptr<Pool> Pool::open(const std::string& path, const PoolOptions& opts) {
  check_options(opts, path);
  auto im = std::make_unique<Impl>();
  im->path = path;
  im->opts = opts;
  im->fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (im->fd < 0) {
    const int e = errno;
    if (e == ENOENT) fail(Errc::kNotFound, path, "no such file");
    fail(Errc::kUnreadable, path, std::string("cannot open: ") + std::strerror(e));
  }
  im->lock_file();
  detail::FileState fs = detail::load_and_validate(im->fd, path);
  im->size = fs.hdr.pool_size;
  if (!map_fixed(im->fd, fs.hdr.base, im->size, true, &im->media))
    fail(Errc::kBaseUnavailable, path,
         "its base address " + hex(fs.hdr.base) + " (+" + std::to_string(im->size) +
             " bytes) is taken in this process" +
             (in_app_memory(fs.hdr.base, im->size) ? std::string(": ") + std::strerror(errno)
                                                   : std::string(" (outside ThreadSanitizer's application memory)")));
  im->base = reinterpret_cast<char*>(fs.hdr.base);
  im->hdr = fs.hdr;
  im->slot = fs.slot;
  im->register_backend();
  im->start_heap();
  return std::unique_ptr<Pool>(new Pool(std::move(im)));
}

std::unique_ptr<Pool> Pool::open_or_create(const std::string& path, std::size_t size, const PoolOptions& opts) {
  for (int attempt = 0;; ++attempt) {
    try {
      return open(path, opts);
    } catch (const PoolError& e) {
      if (e.code() != Errc::kNotFound || attempt > 0) throw;
    }
    try {
      return create(path, size, opts);
    } catch (const PoolError& e) {
      if (e.code() != Errc::kExists) throw;  // lost a race: open the winner's pool
    }
  }
}

Pool::Pool(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Pool::~Pool() = default;

void* Pool::base() const { return impl_->base; }
std::size_t Pool::size() const { return impl_->size; }
Media Pool::media() const { return impl_->media; }
const std::string& Pool::path() const { return impl_->path; }
std::string Pool::uuid() const {
  std::lock_guard<std::mutex> g(impl_->root_mu);
  return uuid_text(impl_->hdr.uuid);
}
std::uint32_t Pool::format_version() const { return L::kFormatVersion; }
const persist::BackendConfig& Pool::backend() const { return impl_->opts.backend; }
bool Pool::contains(const void* p, std::size_t n) const {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const auto b = reinterpret_cast<std::uintptr_t>(impl_->base);
  return a >= b && n <= impl_->size && a - b <= impl_->size - n;
}
Heap& Pool::heap() { return impl_->heap; }
std::uint64_t Pool::generation() const {
  std::lock_guard<std::mutex> g(impl_->root_mu);
  return impl_->hdr.generation;
}

void* Pool::map_volatile_replica() {
  std::lock_guard<std::mutex> g(impl_->root_mu);
  if (impl_->replica != nullptr) return impl_->replica;
  const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(impl_->base) + kReplicaOffset;
  void* want = reinterpret_cast<void*>(at);
  void* p = MAP_FAILED;
  if (in_app_memory(at, impl_->size))
    p = ::mmap(want, impl_->size, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (p != MAP_FAILED && p != want) {
    ::munmap(p, impl_->size);
    p = MAP_FAILED;
  }
  if (p == MAP_FAILED)
    fail(Errc::kBaseUnavailable, impl_->path, "volatile replica range at " + hex(at) + " is taken");
  impl_->replica = p;
  return p;
}
void* Pool::replica() const {
  std::lock_guard<std::mutex> g(impl_->root_mu);
  return impl_->replica;
}

// ------------------------------------------------------------------ roots

void* Pool::alloc_root(std::string_view name, std::uint32_t tag, std::uint32_t ver, std::size_t size,
                       std::size_t align, const char* type_name) {
  Impl& im = *impl_;
  validate_root_name(name, im.path);
  std::lock_guard<std::mutex> g(im.root_mu);
  std::size_t used = im.pending.size();
  for (const auto& r : im.hdr.roots) {
    if (r.in_use && name == r.name)
      fail(Errc::kInvalidArgument, im.path, "root '" + std::string(name) + "' already exists");
    used += r.in_use ? 1 : 0;
  }
  for (const auto& r : im.pending)
    if (name == r.name) fail(Errc::kInvalidArgument, im.path, "root '" + std::string(name) + "' is being created");
  if (used >= L::kMaxRoots)
    fail(Errc::kRootTableFull, im.path, "all " + std::to_string(L::kMaxRoots) + " root entries are in use");
  // The root arena (index arenas) is only used under root_mu.
  void* mem = im.heap_impl->alloc(size, align, im.opts.arenas);
  L::RootEntry e{};
  std::memcpy(e.name, name.data(), name.size());
  e.offset = offset_of(mem);
  e.size = size;
  e.type_tag = tag;
  e.type_version = ver;
  e.in_use = 1;
  std::strncpy(e.type_name, type_name, sizeof e.type_name - 1);
  im.pending.push_back(e);
  return mem;
}

void Pool::publish_root(std::string_view name) {
  Impl& im = *impl_;
  std::lock_guard<std::mutex> g(im.root_mu);
  auto it = std::find_if(im.pending.begin(), im.pending.end(), [&](const L::RootEntry& r) { return name == r.name; });
  if (it == im.pending.end()) fail(Errc::kUnknownRoot, im.path, "publish of unknown root '" + std::string(name) + "'");
  L::HeaderSlot h = im.hdr;
  for (auto& r : h.roots) {
    if (!r.in_use) {
      r = *it;
      break;
    }
  }
  im.pending.erase(it);
  // PERSIST: the object was written back by create_root (pwb + pfence); the
  // header slot naming it follows, and update_header psyncs both.
  im.update_header(h);
}

void Pool::abandon_root(std::string_view name) {
  Impl& im = *impl_;
  std::lock_guard<std::mutex> g(im.root_mu);
  auto it = std::find_if(im.pending.begin(), im.pending.end(), [&](const L::RootEntry& r) { return name == r.name; });
  if (it == im.pending.end()) return;
  im.heap_impl->free(im.base + it->offset, im.opts.arenas);
  im.pending.erase(it);
}

void* Pool::find_root(std::string_view name, std::uint32_t tag, std::uint32_t ver, std::size_t size,
                      const char* type_name) {
  Impl& im = *impl_;
  std::lock_guard<std::mutex> g(im.root_mu);
  for (const auto& r : im.hdr.roots) {
    if (!r.in_use || name != r.name) continue;
    if (r.type_tag != tag || r.type_version != ver || r.size != size) {
      auto describe = [](const char* tn, std::uint32_t t, std::uint32_t v, std::uint64_t s) {
        return std::string(*tn ? tn : "(unnamed type)") + " (tag " + hex(t) + ", version " + std::to_string(v) +
               ", " + std::to_string(s) + " bytes)";
      };
      fail(Errc::kRootType, im.path,
           "root '" + std::string(name) + "' holds " + describe(r.type_name, r.type_tag, r.type_version, r.size) +
               ", not the requested " + describe(type_name, tag, ver, size));
    }
    return im.base + r.offset;
  }
  fail(Errc::kUnknownRoot, im.path, "no root named '" + std::string(name) + "'");
}

bool Pool::has_root(std::string_view name) const {
  std::lock_guard<std::mutex> g(impl_->root_mu);
  for (const auto& r : impl_->hdr.roots)
    if (r.in_use && name == r.name) return true;
  return false;
}

std::vector<RootInfo> Pool::roots() const {
  std::lock_guard<std::mutex> g(impl_->root_mu);
  std::vector<RootInfo> v;
  for (const auto& r : impl_->hdr.roots)
    if (r.in_use) v.push_back(RootInfo{r.name, r.offset, r.type_tag, r.type_version, r.size});
  return v;
}

// ------------------------------------------------------------------ check

CheckReport check_pool(const std::string& path) {
  CheckReport rep;
  int fd = -1;
  try {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int e = errno;
      if (e == ENOENT) fail(Errc::kNotFound, path, "no such file");
      fail(Errc::kUnreadable, path, std::string("cannot open: ") + std::strerror(e));
    }
    detail::FileState fs = detail::load_and_validate(fd, path);
    const L::HeaderSlot& h = fs.hdr;
    rep.format_version = h.format_version;
    rep.size = h.pool_size;
    rep.base = h.base;
    rep.generation = h.generation;
    rep.uuid = uuid_text(h.uuid);
    rep.header_slot = fs.slot;
    rep.other_slot_valid = fs.other_valid;
    if (is_tmpfs(fd)) {
      rep.media = Media::kTmpfs;
    } else {
      // Probe MAP_SYNC with a throw-away read-only mapping anywhere.
      void* p = ::mmap(nullptr, L::kPage, PROT_READ, MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
      rep.media = p != MAP_FAILED ? Media::kDax : Media::kFile;
      if (p != MAP_FAILED) ::munmap(p, L::kPage);
    }
    for (const auto& r : h.roots) {
      if (!r.in_use) continue;
      rep.roots.push_back(RootInfo{r.name, r.offset, r.type_tag, r.type_version, r.size});
      rep.root_type_names.emplace_back(r.type_name);
    }
    const auto orphan = detail::orphan_tails(fs.map);
    rep.chunks_total = h.chunk_count;
    for (std::size_t i = 0; i < fs.map.size(); ++i)
      rep.chunks_used += (fs.map[i] != L::kChunkFree && !orphan[i]) ? 1 : 0;
    rep.ok = true;
  } catch (const PoolError& e) {
    rep.ok = false;
    rep.error = e.code();
    rep.message = e.what();
  } catch (const std::exception& e) {
    rep.ok = false;
    rep.error = Errc::kUnreadable;
    rep.message = "pool " + path + ": " + e.what();
  }
  if (fd >= 0) ::close(fd);
  return rep;
}

}  // namespace ferrite::pmem
