// ferrite/pmem/pool.h — persistent memory pools.
//
// A pool is a file mapped MAP_SHARED at a fixed base address recorded in its
// header (MAP_FIXED_NOREPLACE), so raw pointers stored inside stay valid
// across restarts. On DAX file systems the mapping is MAP_SHARED_VALIDATE |
// MAP_SYNC; elsewhere (e.g. /dev/shm) a plain shared mapping.
//
// Layout (versioned, see pmem/layout.h): two header slots (the valid one is
// the highest generation whose checksum verifies, so a crash while updating
// the root table leaves the other slot intact), the heap's persistent chunk
// map, then the heap's chunks.
//
// Every refusal throws PoolError with a code and a message naming the file
// and the reason — never a crash, a hang or a damaged file.
//
// Thread safety: a Pool may be used from many threads; create_root/root are
// serialized internally. The Heap's alloc/free take the caller's thread id
// (sync::ThreadRegistry) and are safe for distinct ids concurrently.
//
// Locking: open/create take flock(LOCK_EX|LOCK_NB) on the file. flock locks
// belong to the open file description, so a second open of the same file in
// the SAME process is refused with kLocked too (by design: one Pool object
// per file per process).
//
// Backends: a pool installs its persistence backend (PoolOptions::backend)
// process-wide when it opens; the sim backend attaches the pool's range to the
// crash simulator. All pools open at once in a process must use the same
// BackendConfig (else kBackendConflict). When the last pool closes, the
// backend that was installed before the first one opened is restored.
//
// Recovery: open() recovers the pool by itself (PoolOptions::recover): every
// named root whose type registered a recover hook (pmem/root_registry.h)
// repairs and marks its structure, and the heap is rebuilt once from the
// union of the marks. Structures then only re-attach; attaching never frees
// a block. See Pool::recover and docs/pool-format.md "Recovery".
//
// Full on-media description: docs/pool-format.md and pmem/layout.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferrite/persist/persist.h"

namespace ferrite::pmem {

enum class Errc {
  kNotFound,          // file missing
  kUnreadable,        // cannot open/read/map (permissions, I/O)
  kExists,            // create over an existing file
  kBadMagic,          // not a Ferrite pool
  kBadVersion,        // unknown format version
  kTruncated,         // file shorter than the header says
  kChecksum,          // no header slot verifies
  kCorrupt,           // header verifies but its contents are inconsistent
  kUnknownRoot,       // no root of that name
  kRootType,          // root exists with another type tag / version
  kRootTableFull,     // no free root slot
  kBaseUnavailable,   // the recorded base address is taken in this process
  kLocked,            // open in another process (flock)
  kFull,              // heap exhausted
  kInvalidArgument,   // bad size, name too long, ...
  kBackendConflict,   // another open pool uses a different persistence backend
  kNoSpace,           // the file system has no room for the pool file (ENOSPC)
};
std::string_view errc_name(Errc e);

class PoolError : public std::runtime_error {
 public:
  PoolError(Errc code, const std::string& msg) : std::runtime_error(msg), code_(code) {}
  Errc code() const { return code_; }

 private:
  Errc code_;
};

enum class Media { kDax, kTmpfs, kFile };
std::string_view media_name(Media m);

// Address-space plan (not on media). The plan is kBaseSlots strides of
// kBaseStride bytes from kDefaultBaseStart. A stride's lower half holds
// pools, its upper half their Mirror volatile replicas: a pool at B has its
// replica at B + kReplicaOffset (Pool::map_volatile_replica), in the same
// stride, so no pool ever overlaps another pool's replica.
//
// Placement at create (PoolOptions::placement). kRandom (the default): a
// random position of the plan, aligned to max(kPlacementAlign, the pool's
// size rounded up to a power of two), whose pool and replica ranges are
// free in this process — so pools created by different processes can be
// open in one process together (docs/pool-format.md "Several pools in one
// process": two pools of at most 1 GiB share a base with probability 1 in
// 32,768; the second one then opens with kBaseUnavailable naming the
// address, never a wrong mapping). kFirstFree: the first free stride start
// (deterministic; the crash simulator's campaigns use it). Under
// ThreadSanitizer only the low 512 GiB of the address space is application
// memory, so the plan is smaller there.
#if defined(__SANITIZE_THREAD__)
inline constexpr std::uintptr_t kDefaultBaseStart = std::uintptr_t{0x10} << 32;   // 64 GiB
inline constexpr std::uintptr_t kBaseStride = std::uintptr_t{16} << 30;           // 16 GiB
inline constexpr int kBaseSlots = 12;
inline constexpr std::uintptr_t kReplicaOffset = std::uintptr_t{256} << 30;       // 256 GiB
#else
inline constexpr std::uintptr_t kDefaultBaseStart = std::uintptr_t{0x2000} << 32;  // 32 TiB
inline constexpr std::uintptr_t kBaseStride = std::uintptr_t{2} << 40;             // 2 TiB
inline constexpr int kBaseSlots = 32;
inline constexpr std::uintptr_t kReplicaOffset = std::uintptr_t{1} << 40;          // 1 TiB
#endif
// Largest pool: half a stride, so a pool and its replica never overlap the
// next slot's pool.
inline constexpr std::size_t kMaxPoolSize = kBaseStride / 2;
// Random placement aligns bases to at least 1 GiB (the crash simulator keeps
// a 1 GiB-aligned pool's page tables between images; huge pages align too).
inline constexpr std::uintptr_t kPlacementAlign = std::uintptr_t{1} << 30;

enum class BasePlacement {
  kRandom,     // a random free position of the plan (default)
  kFirstFree,  // the first free stride start (deterministic)
};

struct PoolOptions {
  persist::BackendConfig backend{};  // hardware by default
  // Base address for create (0: chosen by `placement` from Ferrite's plan).
  // It is recorded in the header: the pool maps there at every open.
  std::uintptr_t base = 0;
  BasePlacement placement = BasePlacement::kRandom;
  // Number of per-thread heap arenas (thread ids in [0, arenas)), 1..4096.
  int arenas = 64;
  // open() (and open_or_create when it opens) runs recover() after
  // validation. false: the heap stays as open leaves it (every block of an
  // assigned chunk allocated) until recover() or a heap().recover_* call.
  bool recover = true;
  // create() reserves the whole file (posix_fallocate), so that a full file
  // system fails create with a message instead of a later store with
  // SIGBUS. false: the file is sized but sparse (tmpfs pages are allocated
  // when first touched) — for a short-lived pool much larger than what it
  // will hold, where reserving a tmpfs file's every page (allocated and
  // zeroed by the kernel) costs more than the run (`ferrite trace`/`sim`:
  // 512 MiB, ~0.7 s of system time per recording).
  bool reserve = true;
  // A root whose recovery hook failed (a damaged structure: its hook
  // validates what it traces and throws naming the offset). kLeaveClosed
  // (default): the pool opens, every block is kept (nothing is freed), the
  // report names the root, and attaching it (root<T>) throws
  // PoolError(kCorrupt) with the hook's reason — the other roots open as
  // usual. kRefuseOpen: open itself throws PoolError(kCorrupt) naming it.
  enum class DamagedRoots { kLeaveClosed, kRefuseOpen };
  DamagedRoots damaged_roots = DamagedRoots::kLeaveClosed;
  // open() for validation only (check_pool's deep check): the file is
  // opened read-only under a shared lock and mapped privately (copy on
  // write) at its base, with persistence off, so recovery's hooks run —
  // validating what they trace — and their repairs never reach the file.
  bool check_only = false;
};

struct RootInfo {
  std::string name;
  std::uint64_t offset;        // from the pool base
  std::uint32_t type_tag;
  std::uint32_t type_version;
  std::uint64_t size;
};

// A type stored as a root declares:
//   static constexpr std::uint32_t kTypeTag = ...;     // unique per type
//   static constexpr std::uint32_t kTypeVersion = ...; // its layout version
//   static constexpr const char* kTypeName = "...";    // for `ferrite info`
template <class T>
concept RootType = requires {
  { T::kTypeTag } -> std::convertible_to<std::uint32_t>;
  { T::kTypeVersion } -> std::convertible_to<std::uint32_t>;
};

class Pool;

// The state of the two header slots, as open (or check_pool) found them
// (docs/pool-format.md "The double header"). At rest both slots hold the
// same generation; anything else is named here, and open repairs it (the
// slot not in force is rewritten from the slot in force) before anything
// else writes the pool.
enum class HeaderState {
  kInSync,     // both slots verify and hold the same generation
  kCompleted,  // the other slot verifies but is older: a crash came after an
               // update's commit point, before its second copy; nothing lost
  kRepaired,   // the other slot does not verify and claims no newer
               // generation: damaged at rest (or torn while being brought up
               // to date); nothing lost
  kFellBack,   // the other slot does not verify and claims a newer
               // generation: an update torn by a crash before its commit
               // point (that update never returned), or damage to the newer
               // slot; the pool is at the older generation and the roots
               // that differ are named
};
std::string_view header_state_name(HeaderState s);

struct HeaderHealth {
  HeaderState state = HeaderState::kInSync;
  int slot = -1;                      // the slot in force (0 or 1)
  std::uint64_t generation = 0;       // of the slot in force
  std::uint64_t other_generation = 0; // the other slot's field, as it reads (maybe damaged)
  std::string other_problem;          // why the other slot does not verify; "" if it does
  // kFellBack: root names in the unverified newer slot but not in force,
  // and the reverse (read from a slot that does not verify: best effort).
  std::vector<std::string> roots_only_in_other, roots_only_in_force;
  std::string message;                // one sentence; "" for kInSync
};

// What Pool::recover did. roots: named roots in the pool; roots_traced:
// roots whose type's recover hook ran to completion; unknown_roots: roots
// whose (type tag, type version) no hook is registered for in this program,
// as "name (type name, tag 0x..., version v)"; failed_roots: roots whose
// hook threw or whose stored size is not the registered type's, as
// "name: why". heap_rebuilt: this recovery rebuilt the heap's free lists
// (false when a root was unknown or failed — every block then stays
// allocated: a leak, never a loss —, when there was nothing to recover
// (a pool created by this process), or when the heap had been recovered
// by hand before).
struct RecoveryReport {
  HeaderHealth header;  // the header slots as open found them (and repaired)
  std::size_t roots = 0;
  std::size_t roots_traced = 0;
  std::vector<std::string> unknown_roots;
  std::vector<std::string> failed_roots;
  bool heap_rebuilt = false;
  // What each root's hook marked, for the roots traced without an error
  // (root-table order): distinct heap blocks and their usable bytes, the
  // root object's own block not included (`ferrite info`'s per-root use).
  struct RootUse {
    std::string name;
    std::uint64_t blocks = 0, bytes = 0;
  };
  std::vector<RootUse> root_use;
};

// Per-thread arenas of size-classed blocks. A thread allocates in consecutive
// addresses of its current chunk (persistence principle 3). Free lists and
// bump pointers are volatile: the allocation path issues no write-back. Only
// assigning a fresh chunk to a size class writes (and persists) one entry of
// the chunk map, so blocks can be found again by scanning after a restart.
//
// After open() every block in an assigned chunk counts as allocated (nothing
// is handed out twice, at worst memory leaks) until recovery — normally
// Pool::recover, which open() runs — rebuilds the free lists from the set of
// live blocks the structures' recover hooks report. The recover_* entry
// points below are what Pool::recover uses; call them directly only on a
// pool opened with PoolOptions::recover = false (tests, tools).
//
// Sizes: size classes 16 B .. 64 KiB (layout::kSizeClasses); n > 64 KiB gets
// a run of whole consecutive chunks (chunk aligned). Runs are rare: taking or
// returning one writes + psyncs the chunk map.
//
// Recovery contract. After open (with recover = false), call exactly one
// recover_* (before any other thread allocates; recovery itself is
// single-threaded). It only
// concerns chunks that were assigned when the pool was opened; chunks taken
// after open are tracked already. Root objects are always kept. A block
// found neither by mark nor by is_live goes back to a free list (chunks with
// no live block at all become free chunks). On a freshly created pool
// recovery is a no-op, so techniques can call it unconditionally.
class Heap {
 public:
  static constexpr std::size_t kMinBlock = 16;
  // Largest size-class block (one chunk). Larger requests get chunk runs.
  std::size_t max_block() const;
  // Number of arenas: valid thread ids are [0, arenas()).
  int arenas() const;

  // Allocates n bytes (aligned to min(block size, 64); runs to 64 KiB) from
  // arena `tid`. Throws PoolError(kFull) when the pool has no room left,
  // kInvalidArgument for a tid outside [0, arenas()).
  void* alloc(std::size_t n, int tid);
  // Returns p (a pointer alloc returned) to arena `tid`'s free list; any
  // tid may free any block. Freed memory is not written. Before recovery, a
  // free of a block from a chunk assigned at open is deferred to recovery
  // (the block is free afterwards unless it is marked live).
  void free(void* p, int tid);
  // Usable size of the block holding p (p may point inside the block).
  std::size_t block_size(const void* p) const;
  // Never throws: the start of the block of an assigned chunk that holds p
  // (p may point inside it; a run's tail chunks belong to its head), its
  // usable size in *size; nullptr (and 0) when p is in no assigned chunk.
  const void* block_containing(const void* p, std::size_t* size) const noexcept;
  // Validation, never throws: the size of the block that STARTS at p in a
  // chunk the chunk map assigns (a size-class block or a run), or 0 when p
  // is no block start (outside the heap, a free chunk, inside a block, or
  // a run tail). It does not say whether the block is allocated (the
  // free lists are volatile): recovery's traces and `ferrite check` judge
  // that from what is reachable.
  std::size_t block_at(const void* p) const noexcept;

  // Recovery by tracing: `trace(mark)` must call mark(p) for every live block
  // (p = the pointer alloc returned, or any address inside the block; null
  // and addresses outside recoverable blocks are ignored).
  void recover_by_trace(const std::function<void(const std::function<void(void*)>& mark)>& trace);
  // Recovery by scanning: is_live(block, block_size) is asked about every
  // block of every chunk assigned at open (except root objects: kept).
  void recover_by_scan(const std::function<bool(void* block, std::size_t size)>& is_live);
  // True once recover_* ran (or for a pool created in this process).
  bool recovered() const;

  // blocks_live/bytes_live count blocks not on a free list (before recovery:
  // every block of every chunk assigned at open).
  struct Stats {
    std::size_t chunks_total, chunks_used, blocks_live, bytes_live;
  };
  Stats stats() const;

 private:
  friend class Pool;  // constructs the heap of each pool (src/pmem)
  struct Impl;
  explicit Heap(Impl* impl) : impl_(impl) {}
  Impl* impl_;
};

class Pool {
 public:
  // Creates a new pool file of `size` bytes (fails with kExists if present).
  static std::unique_ptr<Pool> create(const std::string& path, std::size_t size,
                                      const PoolOptions& opts = {});
  // Opens an existing pool, validating everything; then recover() unless
  // opts.recover is false.
  static std::unique_ptr<Pool> open(const std::string& path, const PoolOptions& opts = {});
  // open() if the file exists, else create().
  static std::unique_ptr<Pool> open_or_create(const std::string& path, std::size_t size,
                                              const PoolOptions& opts = {});

  // Pool-level recovery (docs/pool-format.md "Recovery"). Visits every named
  // root: a root whose (type tag, type version) is registered
  // (pmem/root_registry.h) gets its type's hook called, which may first
  // repair the structure's persistent state (idempotently) and marks every
  // live block of it. Then the heap is rebuilt ONCE from the union of the
  // marks (plus the root objects, always kept). If any root's type is not
  // registered in this program, or a hook fails, the heap is not rebuilt:
  // every block stays allocated (a leak, never a loss) and the report says
  // which roots. Relies only on the pool's contents. Runs once per Pool: a
  // second call returns the same report. Single-threaded: call it (open
  // does) before other threads use the pool. On a pool created by this
  // process there is nothing to recover (empty report).
  const RecoveryReport& recover();
  // The report of the recovery that ran, or nullptr if none did yet.
  const RecoveryReport* recovery_report() const;

  // Re-attaches the structure T stored under root `name`, or creates it
  // when the pool has no such root:
  //   has_root(name) ? T::attach(*this, name, args...) : T::create(*this, name, args...)
  // (T::attach and T::create must both accept `args` and return the same
  // type, e.g. std::unique_ptr<T>). Attaching never frees blocks: the pool
  // recovered itself when it opened.
  template <class T, class... A>
  auto open_or_create(std::string_view name, A&&... args)
      -> decltype(T::attach(std::declval<Pool&>(), name, args...)) {
    static_assert(std::is_same_v<decltype(T::attach(*this, name, args...)),
                                 decltype(T::create(*this, name, args...))>,
                  "Pool::open_or_create<T>: T::attach and T::create must return the same type");
    if (has_root(name)) return T::attach(*this, name, args...);
    return T::create(*this, name, args...);
  }

  ~Pool();  // unmaps, drops the lock, detaches the backend
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  void* base() const;
  std::size_t size() const;
  Media media() const;
  const std::string& path() const;
  std::string uuid() const;             // text form
  std::uint32_t format_version() const;
  const persist::BackendConfig& backend() const;
  bool contains(const void* p, std::size_t n = 1) const;
  Heap& heap();
  const Heap& heap() const;
  std::uint64_t generation() const;  // of the header slot in force
  // The header slots as open found them; open already repaired what it
  // names (a pool this process created: kInSync).
  const HeaderHealth& header_health() const;

  // Mirror's volatile replica: maps size() bytes of anonymous, zeroed,
  // private memory at base() + kReplicaOffset (MAP_FIXED_NOREPLACE) and
  // returns it; unmapped when the pool closes (a crash worker's simulator
  // keeps it for the next restart instead and hands it back zero-filled:
  // persist::SimHooks::keep_replica). Idempotent. Throws
  // kBaseUnavailable if that range is taken. The replica of p is
  // replica_of(p) == p + kReplicaOffset.
  void* map_volatile_replica();
  void* replica() const;  // nullptr until mapped
  template <class T>
  static T* replica_of(T* p) {
    return reinterpret_cast<T*>(reinterpret_cast<std::uintptr_t>(p) + kReplicaOffset);
  }

  // ------------------------------------------------------------- roots
  // Allocates sizeof(T) from arena 0, constructs T(args...), persists the
  // object and then the root table entry. Throws kExists-style PoolError
  // (kInvalidArgument) if the name is taken.
  // Names: 1..47 characters, no NUL.
  template <RootType T, class... A>
  T* create_root(std::string_view name, A&&... args) {
    void* mem = alloc_root(name, T::kTypeTag, T::kTypeVersion, sizeof(T), alignof(T), type_name<T>());
    T* obj;
    try {
      obj = new (mem) T(std::forward<A>(args)...);
    } catch (...) {
      abandon_root(name);
      throw;
    }
    // PERSIST: the object is written back before the header slot naming it
    // (layout.h invariant 2); publish_root psyncs both.
    persist::pwb(obj, sizeof(T));
    persist::pfence();
    publish_root(name);
    return obj;
  }
  // Re-attaches by name; throws kUnknownRoot, or kRootType when the stored
  // tag, version or size differs from T's (the message names both types),
  // or kCorrupt when the root's recovery hook failed at open (the report's
  // failed_roots; PoolOptions::damaged_roots).
  template <RootType T>
  T* root(std::string_view name) {
    return static_cast<T*>(find_root(name, T::kTypeTag, T::kTypeVersion, sizeof(T), type_name<T>()));
  }
  bool has_root(std::string_view name) const;
  std::vector<RootInfo> roots() const;

  // Offsets, for structures that prefer them to raw pointers.
  std::uint64_t offset_of(const void* p) const {
    return static_cast<std::uint64_t>(static_cast<const char*>(p) - static_cast<const char*>(base()));
  }
  template <class T>
  T* at(std::uint64_t off) const {
    return reinterpret_cast<T*>(static_cast<char*>(base()) + off);
  }

 private:
  struct Impl;
  template <class T>
  static const char* type_name() {
    if constexpr (requires { T::kTypeName; }) return T::kTypeName;
    else return "";
  }
  void* alloc_root(std::string_view name, std::uint32_t tag, std::uint32_t ver, std::size_t size,
                   std::size_t align, const char* type_name);
  void publish_root(std::string_view name);
  void abandon_root(std::string_view name);
  void* find_root(std::string_view name, std::uint32_t tag, std::uint32_t ver, std::size_t size,
                  const char* type_name);
  explicit Pool(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// What check_pool found (for `ferrite check` and `ferrite info`). Never
// throws for a bad file: `ok` says whether the file is sound.
using RootUse = RecoveryReport::RootUse;
struct CheckReport {
  bool ok = false;
  Errc error = Errc::kCorrupt;  // meaningful when !ok
  std::string message;          // why it is not sound
  std::uint32_t format_version = 0;
  std::uint64_t size = 0, base = 0, generation = 0;
  std::string uuid;
  Media media = Media::kFile;
  std::vector<RootInfo> roots;
  std::vector<std::string> root_type_names;
  std::uint64_t chunks_total = 0, chunks_used = 0;
  int header_slot = -1;          // slot in force (0 or 1)
  bool other_slot_valid = false;  // the second slot verifies too
  HeaderHealth header;            // what open would find (and repair)
  // The deep check (deep = true): the pool opened privately at its base
  // (PoolOptions::check_only) and every root's recovery hook run in this
  // program, each validating what it traces. deep_ran: it ran (false with
  // deep_skipped saying why, e.g. the base is taken in this process).
  bool deep_ran = false;
  std::string deep_skipped;
  std::vector<std::string> damaged_roots;  // "name: why" (RecoveryReport::failed_roots)
  std::vector<std::string> unknown_roots;  // types this program does not know: not checked
  std::size_t roots_checked = 0;
  // Per sound root: the blocks its hook marked and their bytes (the deep
  // check's RecoveryReport::root_use; `ferrite info` prints them).
  std::vector<RootUse> root_use;
};
// Validates without writing: header slots, checksum, version, size, root
// table, chunk map; with `deep`, also every root's structure (above). `ok`
// covers the file itself; a damaged structure is in damaged_roots.
CheckReport check_pool(const std::string& path, bool deep = false);

}  // namespace ferrite::pmem
