// src/pmem/internal.h — pieces shared by the src/pmem files:
//   errors.cc    errc_name, media_name, fail, hex
//   header.cc    header slot encoding, checksum, load_and_validate (pread)
//   mapping.cc   map at base (MAP_SYNC), media detection, flock, replica
//   backend.cc   the process-wide persistence backend of open pools
//   pool.cc      Pool lifecycle (create/open/close) and named roots
//   recover.cc   Pool::recover (pool-level recovery through the registry)
//   root_registry.cc  the root-type registry
//   heap.cc      the heap
//   check.cc     check_pool
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ferrite/persist/persist.h"
#include "ferrite/pmem/layout.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/sync/cache_padded.h"

namespace ferrite::pmem::detail {

[[noreturn]] void fail(Errc code, const std::string& path, const std::string& why);
std::string hex(std::uint64_t v);

// A pool file whose header slots and chunk map were read with pread and
// validated (nothing mapped). Throws PoolError (kTruncated, kBadMagic,
// kBadVersion, kChecksum, kCorrupt, kUnreadable) naming `path`.
struct FileState {
  layout::HeaderSlot hdr;  // the slot in force
  int slot = -1;
  bool other_valid = false;
  HeaderHealth health;     // the two slots' state (pool.h HeaderState)
  std::vector<std::uint32_t> map;  // the chunk map, entry per chunk
};
FileState load_and_validate(int fd, const std::string& path);

// header.cc: FNV-1a over a slot's bytes before its checksum field; a fresh
// header (generation 0, no roots, random uuid) for a pool of `size` at
// `base`; the uuid's text form.
std::uint64_t slot_checksum(const layout::HeaderSlot& h);
layout::HeaderSlot make_header(std::size_t size, std::uintptr_t base);
std::string uuid_text(const std::uint8_t* u);

// mapping.cc.
bool is_tmpfs(int fd);
// Whether [base, base+size) may be mapped at all (ThreadSanitizer only
// allows its application ranges).
bool in_app_memory(std::uintptr_t base, std::size_t size);
// Maps [base, base+size) of fd shared at exactly base (MAP_SYNC first on
// non-tmpfs). Returns false (errno set) when the range is taken or the
// kernel would not place it there.
bool map_fixed(int fd, std::uintptr_t base, std::size_t size, bool writable, Media* media);
// A private (copy-on-write) mapping of fd at exactly base, for validation.
bool map_private(int fd, std::uintptr_t base, std::size_t size);
// flock(LOCK_SH | LOCK_NB): refuses while another process has the pool open.
void lock_file_shared(int fd, const std::string& path);
// The bases create tries for a pool of `size` bytes, in order
// (pool.h "Placement at create"): kFirstFree the stride starts in order;
// kRandom every aligned position of the plan, in a random order.
std::vector<std::uintptr_t> base_candidates(std::size_t size, BasePlacement placement);
// Whether [at, at+size) is unmapped in this process (and application memory).
bool range_free(std::uintptr_t at, std::size_t size);
// Media of an open pool file without mapping it at its base.
Media probe_media(int fd);
// flock(LOCK_EX | LOCK_NB); kLocked when held elsewhere.
void lock_file(int fd, const std::string& path);
// Anonymous private zeroed memory at exactly `at`, or nullptr.
void* map_replica(std::uintptr_t at, std::size_t size);

// backend.cc.
void register_backend(const persist::BackendConfig& cfg, char* base, std::size_t size, const std::string& path);
void unregister_backend(const persist::BackendConfig& cfg, char* base);

// Blocks per chunk and block size of a small-class entry.
inline std::uint32_t class_size(int cls) { return layout::kSizeClasses[static_cast<std::size_t>(cls)]; }
inline std::uint32_t blocks_per_chunk(int cls) {
  return static_cast<std::uint32_t>(layout::kChunkSize / class_size(cls));
}
// Smallest class holding n bytes (n <= kChunkSize).
int class_for(std::size_t n);
// Whether `chunk_map[i]` is a tail not covered by a head (a leftover of a run
// allocation or free interrupted by a crash: treated as free).
std::vector<bool> orphan_tails(const std::vector<std::uint32_t>& map);

}  // namespace ferrite::pmem::detail

namespace ferrite::pmem {

// The heap's volatile state. The persistent part is only the chunk map
// (layout.h), accessed through std::atomic_ref (relaxed: entries of distinct
// chunks are written by distinct threads; a reader of a block's entry got
// the block through synchronization that ordered the entry's store first).
struct Heap::Impl {
  Impl(const std::string& path, char* base, const layout::HeaderSlot& h, int arenas);

  void* alloc(std::size_t n, std::size_t align, int arena);
  void free(void* p, int arena);
  std::size_t block_size(const void* p) const;
  std::size_t block_at(const void* p) const noexcept;
  const void* block_containing(const void* p, std::size_t* size) const noexcept;
  void recover(const std::function<void(const std::function<void(void*)>&)>* trace,
               const std::function<bool(void*, std::size_t)>* scan);
  Stats stats() const;

  std::uint32_t entry(std::uint64_t i) const {
    return std::atomic_ref<std::uint32_t>(map_[i]).load(std::memory_order_relaxed);
  }
  void set_entry(std::uint64_t i, std::uint32_t v) {
    std::atomic_ref<std::uint32_t>(map_[i]).store(v, std::memory_order_relaxed);
    // An annotated store (persist.h store_bytes's hook, without its second,
    // non-atomic copy of the bytes): under the store models (hops, hops+,
    // strand) the chunk map then persists with the pfence/psync that follow
    // each set_entry, as the pwbs make it persist under the write-back models.
    // relaxed: as in persist.h, the backend table is installed before the
    // pool is opened and never changes while it is.
    const persist::Backend* b = persist::detail::g_backend.load(std::memory_order_relaxed);
    if (b->stored != nullptr) [[unlikely]]
      b->stored(&map_[i], sizeof v);
  }
  char* chunk_addr(std::uint64_t i) const { return heap_ + i * layout::kChunkSize; }
  // Chunk index of p, or -1 when p is outside the heap.
  std::int64_t chunk_of(const void* p) const;
  // Head chunk of the block holding chunk i (i itself unless a run tail).
  std::uint64_t head_of(std::uint64_t i) const;
  char* take_chunks(std::uint32_t n, std::uint32_t entry, std::size_t request);
  void release_chunks(std::uint64_t first, std::uint32_t n);

  struct ClassState {
    char* next = nullptr;  // bump pointer in the current chunk
    char* end = nullptr;
    std::vector<void*> free;  // LIFO; recovery pushes so that pops ascend
  };
  struct Arena {
    ClassState cls[layout::kNumClasses];
    // Single writer (the thread owning this arena id, per the Heap
    // contract); stats() reads them concurrently, so relaxed atomics.
    std::atomic<std::int64_t> blocks{0}, bytes{0};
  };

  bool refill_from_recovered(int cls, ClassState& cs);

  std::string path_;
  char* base_;
  char* heap_;
  std::uint64_t count_;
  std::uint32_t* map_;
  int arenas_;  // user arenas; index arenas_ is the pool's root arena
  std::unique_ptr<sync::CachePadded<Arena>[]> arena_;

  mutable std::mutex chunk_mu_;
  std::vector<std::uint8_t> used_;  // guarded by chunk_mu_: chunk not free
  std::uint64_t hint_ = 0;          // guarded by chunk_mu_: no free chunk below
  std::atomic<std::uint64_t> chunks_used_{0};

  // Free blocks found by recovery, one vector per chunk (each in descending
  // address order, so pops ascend), shared by all arenas: an arena whose
  // free list and bump chunk are empty takes one chunk's worth.
  std::mutex recovered_mu_;
  std::vector<std::vector<void*>> recovered_free_[layout::kNumClasses];

  std::vector<std::uint8_t> pending_;  // chunk assigned at open, not yet recovered
  std::atomic<std::int64_t> base_blocks_{0}, base_bytes_{0};
  std::atomic<bool> recovered_{false};
  // Offsets of the root objects (set by the pool): always live.
  std::function<std::vector<std::uint64_t>()> root_offsets_;
};

// The pool's state (pool.cc; recover.cc reads the roots and the heap).
struct Pool::Impl {
  std::string path;
  int fd = -1;
  char* base = nullptr;
  std::size_t size = 0;
  Media media = Media::kFile;
  PoolOptions opts;
  bool registered = false;
  bool borrowed = false;  // the crash simulator owns the mapping (persist::sim_maps)
  void* replica = nullptr;

  mutable std::mutex root_mu;  // guards hdr, slot, pending, the root arena, replica
  layout::HeaderSlot hdr{};    // copy of the slot in force
  int slot = 0;
  std::vector<layout::RootEntry> pending;  // allocated, not yet published
  HeaderHealth health;                     // as open found the slots

  std::unique_ptr<Heap::Impl> heap_impl;
  Heap heap{nullptr};

  std::mutex recover_mu;                    // Pool::recover runs once
  std::unique_ptr<RecoveryReport> report;   // set once recovery ran

  ~Impl();
  void register_backend();
  void unregister_backend();
  void start_heap();
  // Writes `h` (generation already set) to slot s, then makes it current.
  void write_slot(layout::HeaderSlot h, int s);
  // Publishes `h` as the next generation: the other slot first (the
  // commit point), then the slot that was in force (layout.h "Double header").
  void update_header(const layout::HeaderSlot& h);
  // open: rewrites the slot not in force from the slot in force unless
  // `health` says both already agree.
  void heal_header();
};

}  // namespace ferrite::pmem
