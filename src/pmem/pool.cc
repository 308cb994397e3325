// src/pmem/pool.cc — the Pool's lifecycle (create, open, close) and its
// named roots (the double-buffered header updates that publish them).
// Header encoding/validation: header.cc; mapping: mapping.cc; backends:
// backend.cc; recovery: recover.cc; check_pool: check.cc.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ferrite/pmem/root_scope.h"
#include "internal.h"

namespace ferrite::pmem {

namespace L = layout;
using detail::fail;
using detail::hex;

// ------------------------------------------------------------- Pool::Impl

Pool::Impl::~Impl() {
  // A crash worker's simulator keeps the replica for the next restart
  // (persist::sim_keep_replica); anywhere else it is unmapped.
  if (replica != nullptr && !(opts.backend.kind == persist::BackendConfig::Kind::kSim &&
                              persist::sim_keep_replica(replica, size)))
    ::munmap(replica, size);
  if (registered) unregister_backend();
  if (base != nullptr && !borrowed) {
    // Regular files are only durable through the page cache: flush it.
    if (media == Media::kFile && !opts.check_only) ::msync(base, size, MS_SYNC);
    ::munmap(base, size);
  }
  if (fd >= 0) ::close(fd);  // drops the flock
}

// Whether the crash simulator holds a view of this pool's image at
// [base, base+size) (src/crash/sim.cc, reusable views): the pool then uses
// that mapping and must not unmap it.
static bool sim_holds_view(const persist::BackendConfig& backend, void* base, std::size_t size) {
  return backend.kind == persist::BackendConfig::Kind::kSim && persist::sim_maps(base, size);
}

void Pool::Impl::register_backend() {
  detail::register_backend(opts.backend, base, size, path);
  registered = true;
  // A crash worker's first restart of an image: attaching replaced the
  // pool's mapping by the simulator's reusable view, which outlives the pool.
  if (sim_holds_view(opts.backend, base, size)) borrowed = true;
}

void Pool::Impl::unregister_backend() {
  detail::unregister_backend(opts.backend, base);
  registered = false;
}

void Pool::Impl::start_heap() {
  heap_impl = std::make_unique<Heap::Impl>(path, base, hdr, opts.arenas);
  heap_impl->root_offsets_ = [this] {
    std::lock_guard<std::mutex> g(root_mu);
    std::vector<std::uint64_t> v;
    for (const auto& r : hdr.roots)
      if (r.in_use) v.push_back(r.offset);
    return v;
  };
  heap.impl_ = heap_impl.get();
}

void Pool::Impl::write_slot(L::HeaderSlot h, int s) {
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

void Pool::Impl::update_header(const L::HeaderSlot& h) {
  L::HeaderSlot n = h;
  n.generation = hdr.generation + 1;
  const int old = slot;
  // CRASH: the slot in force is untouched; a torn write of the other one
  // fails its checksum, its generation field reads newer, and open falls
  // back to the old generation and says so (HeaderState::kFellBack) — the
  // update never returned to its caller.
  write_slot(n, 1 - old);
  // The commit point: slot 1 - old is durable and the newest. Bring the
  // other up to date, so at rest both slots hold one generation and damage
  // to either one is repaired from its twin instead of rolling the pool
  // back (docs/pool-format.md "The double header").
  // CRASH: before this copy is durable, open finds the old slot one
  // generation older (kCompleted) or torn with a generation field not newer
  // (kRepaired), and rewrites it: nothing the update published is lost.
  write_slot(n, old);
}

void Pool::Impl::heal_header() {
  if (health.state == HeaderState::kInSync) return;
  // PERSIST: write_slot makes the repaired slot durable before anything else
  // writes the pool (open calls this before recovery).
  // CRASH: the slot in force is untouched; a crash during the rewrite leaves
  // the same state as before (or the healed one): idempotent.
  write_slot(hdr, 1 - slot);
}

namespace {
void check_options(const PoolOptions& o, const std::string& path) {
  if (o.arenas < 1 || o.arenas > 4096)
    fail(Errc::kInvalidArgument, path, "arenas must be in [1, 4096], got " + std::to_string(o.arenas));
}

std::string& scope_storage() {
  static std::string s;
  return s;
}

void validate_root_name(std::string_view name, const std::string& path) {
  if (name.empty() || name.size() >= L::kRootNameBytes || name.find('\0') != std::string_view::npos)
    fail(Errc::kInvalidArgument, path,
         "root name '" + std::string(name) + "' must be 1..47 characters without NUL");
}
}  // namespace

void set_root_scope(std::string prefix) { scope_storage() = std::move(prefix); }
const std::string& root_scope() { return scope_storage(); }

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
  detail::lock_file(im->fd, path);
  if (int e = opts.reserve ? ::posix_fallocate(im->fd, 0, static_cast<off_t>(size)) : EOPNOTSUPP; e != 0) {
    if (e == ENOSPC)
      fail(Errc::kNoSpace, path, "no space left on the file system for a " + std::to_string(size) + "-byte pool");
    if (e != EOPNOTSUPP && e != EINVAL) fail(Errc::kUnreadable, path, "cannot reserve " + std::to_string(size) + " bytes: " + std::strerror(e));
    if (::ftruncate(im->fd, static_cast<off_t>(size)) != 0)
      fail(errno == ENOSPC || errno == EFBIG ? Errc::kNoSpace : Errc::kUnreadable, path,
           "cannot size the file: " + std::string(std::strerror(errno)));
  }
  std::uintptr_t base = opts.base;
  bool mapped = false;
  if (base != 0) {
    mapped = detail::map_fixed(im->fd, base, size, true, &im->media);
  } else {
    for (const std::uintptr_t b : detail::base_candidates(size, opts.placement)) {
      // A base whose replica range is taken would make Mirror's
      // map_volatile_replica fail later: skip it now.
      if (!detail::range_free(b + kReplicaOffset, size)) continue;
      if ((mapped = detail::map_fixed(im->fd, b, size, true, &im->media))) {
        base = b;
        break;
      }
    }
  }
  if (!mapped)
    fail(Errc::kBaseUnavailable, path,
         opts.base != 0 ? "base " + hex(opts.base) + " is unavailable: " + std::strerror(errno)
                        : "no free base address for " + std::to_string(size) +
                              " bytes in Ferrite's address-space plan (" + hex(kDefaultBaseStart) + " + " +
                              std::to_string(kBaseSlots) + " x " + hex(kBaseStride) +
                              "): close a pool or pass PoolOptions::base");
  im->base = reinterpret_cast<char*>(base);
  im->register_backend();

  L::HeaderSlot h = detail::make_header(size, base);
  // The file is zero-filled, so the chunk map says "all free". Both slots
  // start valid and in sync (generation 1; the file is renamed into place
  // only after both are durable).
  h.generation = 1;
  im->write_slot(h, 1);
  im->write_slot(h, 0);
  im->start_heap();
  // Nothing to recover in a pool this process created.
  im->report = std::make_unique<RecoveryReport>();

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

std::unique_ptr<Pool> Pool::open(const std::string& path, const PoolOptions& opts_in) {
  check_options(opts_in, path);
  PoolOptions opts = opts_in;
  if (opts.check_only) opts.backend = persist::BackendConfig{persist::BackendConfig::Kind::kOff};
  auto im = std::make_unique<Impl>();
  im->path = path;
  im->opts = opts;
  im->fd = ::open(path.c_str(), (opts.check_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
  if (im->fd < 0) {
    const int e = errno;
    if (e == ENOENT) fail(Errc::kNotFound, path, "no such file");
    fail(Errc::kUnreadable, path, std::string("cannot open: ") + std::strerror(e));
  }
  if (opts.check_only) detail::lock_file_shared(im->fd, path);
  else detail::lock_file(im->fd, path);
  detail::FileState fs = detail::load_and_validate(im->fd, path);
  im->size = fs.hdr.pool_size;
  // A crash worker's restarted machine: the simulator holds a view of this
  // very image at the base (src/crash/sim.cc, reusable views).
  im->borrowed = sim_holds_view(opts.backend, reinterpret_cast<void*>(fs.hdr.base), im->size);
  if (im->borrowed)
    im->media = Media::kTmpfs;
  else if (opts.check_only ? !detail::map_private(im->fd, fs.hdr.base, im->size)
                           : !detail::map_fixed(im->fd, fs.hdr.base, im->size, true, &im->media))
    fail(Errc::kBaseUnavailable, path,
         "its base address " + hex(fs.hdr.base) + " (+" + std::to_string(im->size) +
             " bytes) is taken in this process" +
             (detail::in_app_memory(fs.hdr.base, im->size) ? std::string(": ") + std::strerror(errno)
                                                   : std::string(" (outside ThreadSanitizer's application memory)")));
  im->base = reinterpret_cast<char*>(fs.hdr.base);
  im->hdr = fs.hdr;
  im->slot = fs.slot;
  im->health = fs.health;
  im->register_backend();
  if (!opts.check_only) im->heal_header();  // (a private mapping: nothing to heal on the file)
  im->start_heap();
  std::unique_ptr<Pool> pool(new Pool(std::move(im)));
  if (opts.recover) {
    const RecoveryReport& rep = pool->recover();
    if (opts.damaged_roots == PoolOptions::DamagedRoots::kRefuseOpen && !rep.failed_roots.empty())
      fail(Errc::kCorrupt, path, "a structure is damaged: " + rep.failed_roots.front() +
                                     (rep.failed_roots.size() > 1
                                          ? " (and " + std::to_string(rep.failed_roots.size() - 1) + " more)"
                                          : std::string()));
  }
  return pool;
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
  return detail::uuid_text(impl_->hdr.uuid);
}
std::uint32_t Pool::format_version() const { return L::kFormatVersion; }
const persist::BackendConfig& Pool::backend() const { return impl_->opts.backend; }
bool Pool::contains(const void* p, std::size_t n) const {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const auto b = reinterpret_cast<std::uintptr_t>(impl_->base);
  return a >= b && n <= impl_->size && a - b <= impl_->size - n;
}
Heap& Pool::heap() { return impl_->heap; }
const Heap& Pool::heap() const { return impl_->heap; }
const HeaderHealth& Pool::header_health() const { return impl_->health; }
std::uint64_t Pool::generation() const {
  std::lock_guard<std::mutex> g(impl_->root_mu);
  return impl_->hdr.generation;
}


void* Pool::map_volatile_replica() {
  std::lock_guard<std::mutex> g(impl_->root_mu);
  if (impl_->replica != nullptr) return impl_->replica;
  const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(impl_->base) + kReplicaOffset;
  void* p = nullptr;
  if (impl_->opts.backend.kind == persist::BackendConfig::Kind::kSim)
    p = persist::sim_replica(reinterpret_cast<void*>(at), impl_->size);  // a crash worker's kept one, zeroed
  if (p == nullptr) p = detail::map_replica(at, impl_->size);
  if (p == nullptr)
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
  const std::string scoped_name = root_scope() + std::string(name);
  name = scoped_name;
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
  const std::string scoped_name = root_scope() + std::string(name);
  name = scoped_name;
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
  const std::string scoped_name = root_scope() + std::string(name);
  name = scoped_name;
  Impl& im = *impl_;
  std::lock_guard<std::mutex> g(im.root_mu);
  auto it = std::find_if(im.pending.begin(), im.pending.end(), [&](const L::RootEntry& r) { return name == r.name; });
  if (it == im.pending.end()) return;
  im.heap_impl->free(im.base + it->offset, im.opts.arenas);
  im.pending.erase(it);
}

void* Pool::find_root(std::string_view name, std::uint32_t tag, std::uint32_t ver, std::size_t size,
                      const char* type_name) {
  const std::string scoped_name = root_scope() + std::string(name);
  name = scoped_name;
  Impl& im = *impl_;
  std::lock_guard<std::mutex> g(im.root_mu);
  for (const auto& r : im.hdr.roots) {
    if (!r.in_use || name != r.name) continue;
    // A structure whose recovery found it damaged stays closed: its blocks
    // were kept, and following its pointers could read anywhere.
    if (im.report)
      for (const auto& f : im.report->failed_roots)
        if (f.size() > name.size() + 1 && f.compare(0, name.size(), name) == 0 && f[name.size()] == ':')
          fail(Errc::kCorrupt, im.path,
               "root '" + std::string(name) + "' was left closed: its recovery found it damaged (" +
                   f.substr(name.size() + 2) + "); every block of the pool was kept");
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
  const std::string scoped_name = root_scope() + std::string(name);
  name = scoped_name;
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

}  // namespace ferrite::pmem
