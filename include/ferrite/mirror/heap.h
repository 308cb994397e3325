// ferrite/mirror/heap.h — Mirror's allocator, reclamation and recovery
// (PLDI 2021 §4.3, §4.3.2, §4.3.3), its chain of regions, and the pool root
// of a Mirror structure.
//
// What it is. A Mirror structure owns a CHAIN of regions of its pool, all of
// one size S (the root's replica_bytes): each region is S bytes of
// persistent replica rep_p (a block of the pool heap) and S bytes of
// volatile replica rep_v at rep_p + delta (mirror/placement.h: in DRAM at
// pool base + kReplicaOffset, or the second half of a 2·S block of the
// pool). Heap hands out objects in those regions: each object is allocated
// on both replicas at the same offset ("the persistent replica behaves
// exactly the same, with just an offset", §4.3), returned as its rep_v
// address.
//
//   make<T>(tid, args...)   constructs T on rep_v, copies it to rep_p
//                           (§4.3.2: "copy the variable with its sequence
//                           number to its matching persistent memory
//                           location"), writes rep_p back and psyncs: the
//                           object is durable before any CAS can publish it.
//   retire(ebr, tid, p)     frees both copies once no pinned thread can
//                           reach p (sync/ebr.h; the paper uses ssmem's
//                           epochs, §4.3).
//   recover(trace)          §4.3.3, after a restart: see Recovery.
//
// Growth (issue 39: no capacity a user must guess). The paper's allocator
// (ssmem) takes more memory when it runs out; so does this one: when every
// region is used up, a thread allocates one more region of S bytes from the
// pool heap and links it durably at the end of the chain. The chain is
// recorded in the pool, in each region's first 64-byte unit (rep_p), its
// RegionHeader {magic, bytes = S, index k, next}: the root names region 0
// (Root::region, immutable) and region k's `next` names region k + 1 (0 at
// the end). Every region has the same size S, not doubling sizes: with both
// replicas in the pool, delta = S is one process-wide value (placement.h),
// so regions of another size would have no rep_v at rep_p + delta; and in
// DRAM any block of the pool has its rep_v at + kReplicaOffset (the replica
// mapping covers the whole pool). The cost of equal sizes is one region
// descriptor (64 B) and one pool allocation per S bytes, and a chain of
// data/S regions to walk at open (one header read per region).
//
// Unit ids. A unit is named by g = k · U + l (U = S/64 units per region,
// region k, unit l of it; l = 0 is the region's header, never allocated).
// The free lists hold 64-bit ids; unit_of finds an address's region through
// a table of S-byte windows of the pool (a window meets at most two regions
// of S bytes, so two slots per window) — lock-free, no search.
//
// Allocator metadata is volatile, all of it (§4.3: "all allocator metadata
// may reside on the volatile replica"): one bump index over the chain (it
// moves through region k, then to region k + 1) and free lists of 64-byte
// units in DRAM; the allocation path writes nothing to the pool and issues
// no verb except make's write-back of the new object itself — and, once per
// S bytes, the growth below. Objects are 64-byte aligned and a multiple of
// 64 bytes (a node is a line: its write-back is one pwb and it shares no
// line with another object); one object fits one region (at most S - 64 B).
//
// Thread safety: alloc/free/make/retire are safe concurrently for distinct
// tids in [0, threads) (growth is serialized by a mutex of the heap; the
// other threads keep allocating from the free lists meanwhile); recover is
// single-threaded (before other threads).
//
// Invariants.
//   H1 Every region of the chain is linked (reachable from Root::region
//      through durable `next` words) before any unit of it is handed out:
//      no object that a CAS can publish lives in an unlinked region.
//   H2 A region's header is durable before the `next` word that links it:
//      a linked region always has a valid header.
//   H3 All regions have S bytes (the root's) and the header of region k
//      says k: a chain that revisits a region fails the index check.
//
// Persistence. Region 0 is written by the constructor (its header's pwb; the
// structure's first make psyncs it before the root is published — every
// Mirror structure makes its anchor before create_root). Growth: the pool
// heap's alloc persists its own chunk map; the new header is written and
// written back, pfence (H2), then the previous region's `next` is stored,
// written back and psynced (H1) before the bump index can reach the new
// region. A crash anywhere in between leaves an allocated block that no
// linked region names: Root's hook does not mark it and pool recovery frees
// it (a leak of one region at most, never a loss).
//
// Recovery (§4.3.3). The restarted process has no rep_v (DRAM is gone, or the
// pool's rep_v half holds whatever a crash left) and no allocator metadata.
// The attach constructor walks the chain (validating every link: a pointer
// outside the pool or misaligned, a header with a bad magic, size or index,
// a loop, overlapping regions — each a pmem::PoolError(kCorrupt) naming the
// pool offset). The structure's trace function is called with visit(p,
// bytes) for every reachable object, reading the objects' persistent copies
// to find the next ones (field.persistent()->load()). visit copies the
// object's rep_p bytes to rep_v (rep_v := rep_p, values and sequence
// numbers) and marks its units live. Then every unit not live, in every
// region, becomes free (the free lists are rebuilt from the live set; the
// bump index starts after the last live unit of the chain). It writes
// nothing to rep_p and issues no verb, so it is idempotent: a crash during
// recovery leaves the pool exactly as before it. The pool itself recovers
// first (pmem::Pool::recover): Root's hook walks the same chain (validated
// the same way) and marks every linked region live, so the pool heap never
// frees one and frees a region a crash left unlinked.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferrite/mirror/internal/faults.h"
#include "ferrite/mirror/placement.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::mirror {

// Unit 0 of every region's persistent replica (H2, H3).
struct RegionHeader {
  static constexpr std::uint64_t kMagic = 0x314E'4752'5252'494DULL;  // "MIRRGRN1" little-endian
  std::uint64_t magic = 0;
  std::uint64_t bytes = 0;  // S
  std::uint64_t index = 0;  // k: this region's place in the chain
  std::uint64_t next = 0;   // pool address of region k + 1's rep_p; 0 = the last region
  std::uint64_t reserved[4] = {};
};
static_assert(sizeof(RegionHeader) == 64);

namespace internal {

inline std::string hex(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// The chain of regions that starts at `first` (rep_p of region 0), each of
// `bytes` per replica, as the pool records it — validated (H3; header
// essay, Recovery). Reads only the pool. Used by attach (Heap) and by the
// roots' pool recovery hooks.
inline std::vector<std::uint64_t> region_chain(const pmem::Pool& pool, std::uint64_t first, std::uint64_t bytes,
                                               std::uint32_t placement) {
  const auto base = reinterpret_cast<std::uint64_t>(pool.base());
  auto off = [&](std::uint64_t a) { return hex(a - base); };
  auto corrupt = [](const std::string& what) {
    return pmem::PoolError(pmem::Errc::kCorrupt, "mirror: region chain: " + what);
  };
  if (placement != static_cast<std::uint32_t>(PlacementKind::kDram) &&
      placement != static_cast<std::uint32_t>(PlacementKind::kPool))
    throw corrupt("unknown replica placement " + std::to_string(placement));
  if (bytes < 2 * 64 || bytes % 64 != 0 || bytes > pool.size())
    throw corrupt("a region size of " + std::to_string(bytes) + " bytes per replica");
  const std::uint64_t block = placement == static_cast<std::uint32_t>(PlacementKind::kPool) ? 2 * bytes : bytes;
  const std::uint64_t most = pool.size() / block;  // disjoint blocks of the pool: a longer chain loops
  std::vector<std::uint64_t> out;
  std::uint64_t from = 0;  // the region whose `next` named a (0: the root)
  for (std::uint64_t a = first; a != 0;) {
    const std::string who = from == 0 ? "the root's region pointer" : "the next pointer of the region at pool offset " + off(from);
    if (out.size() >= most) throw corrupt(who + " " + hex(a) + " makes a chain longer than the pool holds (a loop)");
    if (!pool.contains(reinterpret_cast<const void*>(a), block) || (a - base) % 64 != 0)
      throw corrupt(who + " " + hex(a) + " is outside the pool or misaligned");
    const auto* h = reinterpret_cast<const RegionHeader*>(a);
    if (h->magic != RegionHeader::kMagic)
      throw corrupt("the region at pool offset " + off(a) + " has a bad header magic " + hex(h->magic));
    if (h->bytes != bytes)
      throw corrupt("the region at pool offset " + off(a) + " says " + std::to_string(h->bytes) +
                    " bytes per replica, the chain " + std::to_string(bytes));
    if (h->index != out.size())
      throw corrupt("the region at pool offset " + off(a) + " says it is region " + std::to_string(h->index) +
                    " but is reached as region " + std::to_string(out.size()) + " (a loop or a misplaced link)");
    out.push_back(a);
    from = a;
    a = h->next;
  }
  std::vector<std::uint64_t> sorted = out;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i] - sorted[i - 1] < block)
      throw corrupt("the regions at pool offsets " + off(sorted[i - 1]) + " and " + off(sorted[i]) + " overlap");
  return out;
}

// A test Config's hooks may set the smallest region (default 64 KiB, the
// pool's chunk): `static constexpr std::size_t kMinRegionBytes = 256;` lets
// a crash campaign of a few dozen operations grow its chain many times
// (tests/mirror/mirror_growth_crash_test.cc). Users never set it.
template <class H>
constexpr std::size_t min_region_bytes() {
  if constexpr (requires { H::kMinRegionBytes; }) return H::kMinRegionBytes;
  else return std::size_t{64} << 10;
}

// An array that grows by power-of-two segments: get is lock-free, set is
// single-writer (the heap's growth lock, or the single-threaded attach).
template <class T>
class SegArray {
 public:
  SegArray() = default;
  SegArray(const SegArray&) = delete;
  SegArray& operator=(const SegArray&) = delete;
  ~SegArray() {
    for (auto& s : seg_) delete[] s.load(std::memory_order_relaxed);
  }
  T get(std::uint64_t i) const {
    const auto [s, o] = where(i);
    // ORDER: acquire pairs with set's release: a segment's zeroed entries
    // and the entry are visible before the pointer.
    const auto* p = seg_[s].load(std::memory_order_acquire);
    return p == nullptr ? T{} : p[o].load(std::memory_order_acquire);
  }
  void set(std::uint64_t i, T v) {
    const auto [s, o] = where(i);
    auto* p = seg_[s].load(std::memory_order_relaxed);
    if (p == nullptr) {
      p = new std::atomic<T>[std::size_t{1} << s]();
      seg_[s].store(p, std::memory_order_release);
    }
    p[o].store(v, std::memory_order_release);
  }

 private:
  static std::pair<unsigned, std::uint64_t> where(std::uint64_t i) {
    const std::uint64_t j = i + 1;
    const auto s = static_cast<unsigned>(std::bit_width(j) - 1);
    return {s, j - (std::uint64_t{1} << s)};
  }
  std::atomic<std::atomic<T>*> seg_[64] = {};
};

}  // namespace internal

// The pool root of every Mirror structure: immutable after creation (written
// by create_root, which persists it before publishing its name). Version 2:
// region 0 starts with its RegionHeader (a version-1 root, from before
// regions chained, is refused as another type).
struct Root {
  static constexpr std::uint32_t kTypeTag = 0x4D19'0001;
  static constexpr std::uint32_t kTypeVersion = 2;
  static constexpr const char* kTypeName = "mirror::Root";
  std::uint64_t region = 0;         // pool address of region 0 (rep_p first), the head of the chain
  std::uint64_t replica_bytes = 0;  // S: bytes per replica of every region
  std::uint32_t placement = 0;      // PlacementKind
  std::uint32_t structure = 0;      // the structure's own tag (a list, a hash table)
  std::uint64_t anchor = 0;         // rep_v address of the structure's first object
  std::uint64_t anchor_bytes = 0;
  std::uint64_t param = 0;          // the structure's parameter (buckets)

  // The pool's recover hook (pmem/root_registry.h): every linked region is
  // live (the chain validated: a damaged link throws kCorrupt, and the pool
  // then keeps every block and names this root). Then the structure's own
  // validation of its persistent replica, where its header registered one
  // (internal::register_root_validator: the list's and the hash table's
  // walk, harris_table.h), so that `ferrite check` and Pool::open refuse a
  // root attach would refuse. The rest of what is inside is Mirror's
  // business (Heap::recover, run by attach). A region a crash left
  // allocated but unlinked is not marked: pool recovery frees it.
  static void recover_root(pmem::Pool& pool, Root* r, const std::function<void(void*)>& mark);
  // first_only: the broken variant recover-no-mark-grown (RootFirstRegionOnly).
  static void mark_regions(pmem::Pool& pool, const Root* r, const std::function<void(void*)>& mark, bool first_only) {
    if (r->region == 0) return;
    const auto chain = internal::region_chain(pool, r->region, r->replica_bytes, r->placement);
    for (std::size_t k = 0; k < chain.size() && (!first_only || k == 0); ++k)
      mark(reinterpret_cast<void*>(chain[k]));
  }
};

namespace internal {
// What Root's recover hook runs after marking the regions, per structure
// tag (Root::structure): a walk of the persistent replica that throws
// PoolError(kCorrupt) naming what is damaged. A structure header registers
// its own at static initialization (an inline variable), so a program that
// can attach the structure validates it; a tag with none registered is
// checked by attach only.
using RootValidator = void (*)(const pmem::Pool&, const Root&);
inline constexpr std::uint32_t kMaxStructureTag = 15;
inline std::atomic<RootValidator>* root_validators() {
  static std::atomic<RootValidator> table[kMaxStructureTag + 1] = {};
  return table;
}
inline bool register_root_validator(std::uint32_t structure, RootValidator f) {
  root_validators()[structure].store(f, std::memory_order_release);
  return true;
}
}  // namespace internal

inline void Root::recover_root(pmem::Pool& pool, Root* r, const std::function<void(void*)>& mark) {
  mark_regions(pool, r, mark, false);
  // The int64 structures' tags (1 list, 2 hash table, 3 BST, 4 skip list);
  // the byte maps have root types of their own.
  if (r->structure < 1 || r->structure > 4)
    throw pmem::PoolError(pmem::Errc::kCorrupt, "mirror: root names an unknown structure tag " + std::to_string(r->structure));
  if (r->region == 0) return;
  if (const auto f = internal::root_validators()[r->structure].load(std::memory_order_acquire)) f(pool, *r);
}
inline const bool kMirrorRootRegistered = pmem::register_root_type<Root>(&Root::recover_root);

// Broken (internal::kRecoverNoMarkGrown): a root whose hook marks region 0
// only, so pool recovery frees every grown region while the chain still
// names it — the next pool allocation reuses a live region. Its own type
// tag: a correct structure never attaches to it.
struct RootFirstRegionOnly : Root {
  static constexpr std::uint32_t kTypeTag = 0x4D19'0F01;
  static constexpr const char* kTypeName = "mirror::Root (broken: grown regions unmarked)";
  static void recover_root(pmem::Pool& pool, RootFirstRegionOnly* r, const std::function<void(void*)>& mark) {
    mark_regions(pool, r, mark, true);
  }
};
inline const bool kMirrorBrokenRootRegistered =
    pmem::register_root_type<RootFirstRegionOnly>(&RootFirstRegionOnly::recover_root);

template <class C = Default>
class Heap {
 public:
  static constexpr std::size_t kUnit = 64;
  static constexpr std::uint32_t kMaxClass = 8;  // units; larger objects come from the bump index only
  static constexpr std::size_t kMinRegionBytes = internal::min_region_bytes<typename C::hooks>();

  // S for a request of b bytes per replica: at least the smallest region
  // (64 KiB), a multiple of it.
  static std::size_t round_bytes(std::size_t b) {
    const std::size_t c = kMinRegionBytes;
    return (std::max(b, c) + c - 1) / c * c;
  }
  // A fresh chain: region 0 of `replica_bytes` (rounded) per replica from
  // `pool`'s heap; every later region has the same size.
  Heap(pmem::Pool& pool, std::size_t replica_bytes, int threads)
      : pool_(pool), threads_(check_threads(threads)), bytes_(round_bytes(replica_bytes)), units_(bytes_ / kUnit),
        lists_(static_cast<std::size_t>(threads)) {
    init_windows();
    map_replica();
    char* r = static_cast<char*>(pool.heap().alloc(block_bytes(), 0));
    auto* h = new (r) RegionHeader();
    h->magic = RegionHeader::kMagic;
    h->bytes = bytes_;
    // PERSIST: H2 for region 0: its header written back, no fence here —
    // the structure's first make (publishable's psync) completes it, and
    // every Mirror structure makes its anchor before create_root publishes
    // the root that names this region.
    persist::pwb(h, sizeof(RegionHeader));
    publish_region(0, r);
    bump_.store(0, std::memory_order_relaxed);
  }
  // An existing chain (attach after a restart): validated, mapped; call
  // recover() next.
  Heap(pmem::Pool& pool, std::uint64_t region, std::size_t replica_bytes, int threads)
      : pool_(pool), threads_(check_threads(threads)), bytes_(replica_bytes), units_(bytes_ / kUnit),
        lists_(static_cast<std::size_t>(threads)) {
    const auto chain = internal::region_chain(pool, region, replica_bytes, static_cast<std::uint32_t>(C::placement::kKind));
    if (chain.empty()) throw pmem::PoolError(pmem::Errc::kCorrupt, "mirror: the root names no region");
    init_windows();
    map_replica();
    for (std::size_t k = 0; k < chain.size(); ++k) publish_region(k, reinterpret_cast<char*>(chain[k]));
    bump_.store(chain.size() * units_, std::memory_order_relaxed);  // nothing is free before recover()
  }
  ~Heap() {
    if constexpr (C::placement::kKind == PlacementKind::kPool) internal::release_pool_delta();
  }
  Heap(const Heap&) = delete;
  Heap& operator=(const Heap&) = delete;

  // Region 0 (the head of the chain, what the root records).
  std::uint64_t region() const { return reinterpret_cast<std::uint64_t>(region_at(0)); }
  std::size_t replica_bytes() const { return bytes_; }
  int threads() const { return threads_; }
  // Regions in the chain now.
  std::uint64_t regions() const { return nregions_.load(std::memory_order_acquire); }

  // n bytes on both replicas, uninitialized; the rep_v address. Grows the
  // chain when every region is used up; throws pmem::PoolError(kFull) only
  // when the POOL has no room for another region (the message names the
  // pool's free space), and kInvalidArgument for an object larger than a
  // region (S - 64 bytes).
  void* alloc(std::size_t n, int tid) {
    const auto u = units_for(n);
    if (u == 0 || u > units_ - 1)
      throw pmem::PoolError(pmem::Errc::kInvalidArgument,
                            "mirror: an object of " + std::to_string(n) + " bytes does not fit a region of " +
                                std::to_string(bytes_) + " bytes per replica (at most " +
                                std::to_string((units_ - 1) * kUnit) +
                                " bytes: create the structure with a larger replica_bytes)");
    return rep_v_of<C>(address(take(u, tid)));
  }
  void free(void* v, std::size_t n, int tid) { give(unit_of(v), units_for(n), tid); }

  template <class T, class... A>
  T* make(int tid, A&&... args) {
    void* v = alloc(sizeof(T), tid);
    T* obj = new (v) T(std::forward<A>(args)...);
    publishable(obj, sizeof(T));
    return obj;
  }
  // A variable-length object of `bytes` (a skip-list node): init(rep_v
  // address) constructs it and returns it; then it is made publishable as
  // by make. Free it with free(p, bytes, tid).
  template <class T, class Init>
  T* make_sized(int tid, std::size_t bytes, Init&& init) {
    void* v = alloc(bytes, tid);
    T* obj = init(v);
    publishable(v, bytes);
    return obj;
  }
  // n default-constructed E (an array of bucket heads).
  template <class E>
  E* make_array(int tid, std::size_t n) {
    void* v = alloc(n * sizeof(E), tid);
    E* a = static_cast<E*>(v);
    for (std::size_t i = 0; i < n; ++i) new (a + i) E();
    publishable(a, n * sizeof(E));
    return a;
  }
  // Frees both copies of p once no thread pinned in `ebr` can reach it.
  template <class T>
  void retire(sync::Ebr& ebr, int tid, T* v) {
    ebr.retire(tid, v, &free_cb<units_for(sizeof(T))>, this);
  }

  // §4.3.3. trace(visit): visit(const void* rep_v_address, std::size_t bytes)
  // returns false when the object was visited already (a cycle or a shared
  // object: do not follow it again). See the header essay.
  template <class Trace>
  void recover(Trace&& trace) {
    const std::uint64_t nr = regions();
    // Broken (kRecoverNoTrace): rep_v := rep_p for every region, and only
    // the roots (the first object visited) are known to be live.
    if constexpr (C::has(internal::kRecoverNoTrace))
      for (std::uint64_t k = 0; k < nr; ++k) std::memcpy(rep_v_of<C>(region_at(k)), region_at(k), bytes_);
    bool roots_only = false;
    std::vector<std::uint8_t> live(nr * units_, 0);
    auto visit = [&](const void* v, std::size_t n) -> bool {
      if (roots_only) return false;
      if constexpr (C::has(internal::kRecoverNoTrace)) roots_only = true;
      const std::uint64_t g0 = unit_of(v);
      const std::uint64_t un = units_for(n);
      if (un == 0 || g0 % units_ + un > units_)
        throw pmem::PoolError(pmem::Errc::kCorrupt, "mirror: an object of " + std::to_string(n) +
                                                        " bytes at pool offset " + pool_offset(rep_p_of<C>(v)) +
                                                        " runs past the end of its region");
      if (live[g0] != 0) return false;
      std::fill(live.begin() + static_cast<std::ptrdiff_t>(g0), live.begin() + static_cast<std::ptrdiff_t>(g0 + un), 1);
      // rep_v := rep_p, value and sequence number of every field (§4.3.3).
      if constexpr (!C::has(internal::kRecoverNoCopy))
        std::memcpy(const_cast<void*>(v), rep_p_of<C>(v), un * kUnit);
      return true;
    };
    trace(visit);
    for (auto& l : lists_)
      for (auto& c : l.by_class) c.clear();
    for (auto& c : shared_) c.clear();
    std::uint64_t end = 0;
    for (std::uint64_t g = 0; g < nr * units_; ++g)
      if (live[g] != 0) end = g + 1;
    bump_.store(end, std::memory_order_relaxed);
    // Every unit before the bump index that is not live is free (headers,
    // unit 0 of each region, excepted); runs never cross a region's end.
    for (std::uint64_t k = 0; k * units_ < end; ++k) {
      const std::uint64_t lo = k * units_ + 1, hi = std::min(end, (k + 1) * units_);
      std::uint64_t g = lo;
      while (g < hi) {
        if (live[g] != 0) {
          ++g;
          continue;
        }
        std::uint64_t e = g;
        while (e < hi && live[e] == 0) ++e;
        give_range_shared(g, e - g);
        g = e;
      }
    }
  }

  // Free units (not allocated, or freed) in the regions the chain has now;
  // units() counts every allocatable unit of them (headers excluded), so
  // units() - free_units() is the live units (tests, recovery timing).
  std::uint64_t free_units() const {
    const std::uint64_t nr = regions();
    const std::uint64_t b = bump_.load(std::memory_order_relaxed);
    std::uint64_t n = 0;
    const std::uint64_t k = b / units_, l = b % units_;
    if (k < nr) n = (l == 0 ? units_ - 1 : units_ - l) + (nr - k - 1) * (units_ - 1);
    for (const auto& ls : lists_)
      for (std::uint32_t c = 1; c <= kMaxClass; ++c) n += ls.by_class[c].size() * c;
    std::lock_guard g(mu_);
    for (std::uint32_t c = 1; c <= kMaxClass; ++c) n += shared_[c].size() * c;
    return n;
  }
  std::uint64_t units() const { return regions() * (units_ - 1); }

 private:
  struct alignas(64) Lists {
    std::vector<std::uint64_t> by_class[kMaxClass + 1];
  };
  // A thread's list beyond kSpill units of one class gives half to the
  // shared list: at most threads x kSpill free units per class sit where
  // other threads cannot take them (a larger bound made a 4-thread map
  // stress run grow — then "region full" — with most of the region free).
  static constexpr std::size_t kSpill = 128;
  static constexpr std::uint64_t kWindowSeg = 4096;  // windows per segment of the window table

  static int check_threads(int t) {
    if (t <= 0) throw std::invalid_argument("mirror::Heap: threads must be > 0");
    return t;
  }
  static constexpr std::uint32_t units_for(std::size_t n) {
    return static_cast<std::uint32_t>((n + kUnit - 1) / kUnit);
  }
  std::size_t block_bytes() const { return C::placement::kKind == PlacementKind::kPool ? 2 * bytes_ : bytes_; }
  std::string pool_offset(const void* p) const {
    return internal::hex(reinterpret_cast<std::uint64_t>(p) - reinterpret_cast<std::uint64_t>(pool_.base()));
  }
  void map_replica() {
    if constexpr (C::placement::kKind == PlacementKind::kDram) {
      pool_.map_volatile_replica();  // idempotent; zeroed in a fresh process; covers every block of the pool
    } else {
      internal::set_pool_delta(bytes_);  // one S for every region: delta = S holds for each
    }
  }

  // ---- the region directory and the window table (volatile)
  char* region_at(std::uint64_t k) const { return dir_.get(k); }
  char* address(std::uint64_t g) const { return region_at(g / units_) + (g % units_) * kUnit; }
  void init_windows() {
    if (bytes_ < 2 * kUnit || bytes_ % kUnit != 0)
      throw pmem::PoolError(pmem::Errc::kCorrupt, "mirror: a region of " + std::to_string(bytes_) + " bytes");
    base_ = reinterpret_cast<std::uintptr_t>(pool_.base());
    const std::uint64_t windows = pool_.size() / bytes_ + 2;
    nseg_ = (windows + kWindowSeg - 1) / kWindowSeg;
    wtab_ = std::make_unique<std::atomic<std::atomic<std::uint32_t>*>[]>(nseg_);
    for (std::uint64_t s = 0; s < nseg_; ++s) wtab_[s].store(nullptr, std::memory_order_relaxed);
  }
  // Called with the growth lock held (or single-threaded): region k at r is
  // named by the directory and the windows, then counted (release).
  void publish_region(std::uint64_t k, char* r) {
    dir_.set(k, r);
    const std::uint64_t o = reinterpret_cast<std::uintptr_t>(r) - base_;
    for (std::uint64_t w = o / bytes_; w <= (o + bytes_ - 1) / bytes_; ++w) {
      auto* seg_hint = wtab_[w / kWindowSeg].load(std::memory_order_relaxed);
      if (seg_hint == nullptr) {
        seg_hint = new std::atomic<std::uint32_t>[2 * kWindowSeg]();
        owned_.emplace_back(seg_hint);
        wtab_[w / kWindowSeg].store(seg_hint, std::memory_order_release);
      }
      auto* slot = seg_hint + 2 * (w % kWindowSeg);
      // ORDER: release pairs with unit_of's acquire (the directory entry
      // first).
      if (slot[0].load(std::memory_order_relaxed) == 0) slot[0].store(static_cast<std::uint32_t>(k + 1), std::memory_order_release);
      else slot[1].store(static_cast<std::uint32_t>(k + 1), std::memory_order_release);
    }
    // ORDER: release: a thread that sees k + 1 regions sees region k's
    // directory entry and windows (take's acquire load).
    nregions_.store(k + 1, std::memory_order_release);
  }
  // g of the object at rep_v address v; kCorrupt for an address in no
  // region of this chain, misaligned, or a region's header.
  std::uint64_t unit_of(const void* v) const {
    const auto p = reinterpret_cast<std::uintptr_t>(rep_p_of<C>(v));
    if (p >= base_ && p < base_ + pool_.size()) {
      const std::uint64_t w = (p - base_) / bytes_;
      const auto* seg = w / kWindowSeg < nseg_ ? wtab_[w / kWindowSeg].load(std::memory_order_acquire) : nullptr;
      if (seg != nullptr)
        for (int i = 0; i < 2; ++i) {
          const std::uint32_t k1 = seg[2 * (w % kWindowSeg) + static_cast<std::uint64_t>(i)].load(std::memory_order_acquire);
          if (k1 == 0) continue;
          const auto r = reinterpret_cast<std::uintptr_t>(region_at(k1 - 1));
          if (p < r || p >= r + bytes_) continue;
          if ((p - r) % kUnit != 0 || p == r) break;
          return (k1 - 1) * units_ + (p - r) / kUnit;
        }
    }
    throw pmem::PoolError(pmem::Errc::kCorrupt, "mirror: pointer " + internal::hex(p) +
                                                    " is not an object in the structure's regions (pool offset " +
                                                    internal::hex(p - base_) + ")");
  }
  Lists& mine(int tid) {
    if (tid < 0 || tid >= threads_)
      throw std::out_of_range("mirror::Heap: tid " + std::to_string(tid) + " outside [0, " + std::to_string(threads_) + ")");
    return lists_[static_cast<std::size_t>(tid)];
  }

  // u units: the thread's free list, the shared one, the bump index, a
  // larger free block split, and else a new region (growth).
  std::uint64_t take(std::uint32_t u, int tid) {
    if (u <= kMaxClass) {
      auto& own = mine(tid).by_class[u];
      if (!own.empty()) {
        const std::uint64_t g = own.back();
        own.pop_back();
        return g;
      }
      {
        std::lock_guard g(mu_);
        if (!shared_[u].empty()) {
          const std::uint64_t x = shared_[u].back();
          shared_[u].pop_back();
          return x;
        }
      }
    } else {
      mine(tid);  // the tid is checked on every path
    }
    std::uint64_t g, seen;
    if (bump_take(u, &g, &seen)) return g;
    if (u <= kMaxClass && split(u, tid, &g)) return g;
    for (;;) {
      grow(seen, tid);
      if (bump_take(u, &g, &seen)) return g;
    }
  }
  // From the bump index; false when every region of the chain (`*seen`
  // regions) is used up.
  bool bump_take(std::uint32_t u, std::uint64_t* out, std::uint64_t* seen) {
    // ORDER: relaxed: the index only partitions units between threads; the
    // object's contents are published by the structure's CAS. nregions_ is
    // acquired: region k's directory entry is visible when k < n.
    std::uint64_t b = bump_.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint64_t n = nregions_.load(std::memory_order_acquire);
      const std::uint64_t k = b / units_;
      if (k >= n) {
        *seen = n;
        return false;
      }
      const std::uint64_t start = b % units_ == 0 ? b + 1 : b;  // unit 0 is the header
      const std::uint64_t end = (k + 1) * units_;
      if (start + u <= end) {
        if (bump_.compare_exchange_weak(b, start + u, std::memory_order_relaxed)) {
          *out = start;
          return true;
        }
        continue;
      }
      // The rest of region k is too small: the index moves to region k + 1
      // and the thread that moved it frees the rest.
      if (bump_.compare_exchange_weak(b, end, std::memory_order_relaxed) && start < end)
        give_range_shared(start, end - start);
    }
  }
  bool split(std::uint32_t u, int tid, std::uint64_t* out) {
    for (std::uint32_t c = u + 1; c <= kMaxClass; ++c) {
      std::uint64_t big;
      auto& own = mine(tid).by_class[c];
      if (!own.empty()) {
        big = own.back();
        own.pop_back();
      } else {
        std::lock_guard g(mu_);
        if (shared_[c].empty()) continue;
        big = shared_[c].back();
        shared_[c].pop_back();
      }
      give(big + u, c - u, tid);
      *out = big;
      return true;
    }
    return false;
  }
  // Growth: one region more, unless another thread added one since this one
  // saw `seen` regions. See the header essay, Persistence.
  void grow(std::uint64_t seen, int tid) {
    std::lock_guard g(grow_mu_);
    const std::uint64_t k = nregions_.load(std::memory_order_relaxed);
    if (k != seen) return;
    char* r;
    try {
      r = static_cast<char*>(pool_.heap().alloc(block_bytes(), tid));
    } catch (const pmem::PoolError& e) {
      if (e.code() != pmem::Errc::kFull) throw;
      const auto st = pool_.heap().stats();
      throw pmem::PoolError(
          pmem::Errc::kFull,
          "mirror: the pool is full: the structure's " + std::to_string(k) + " region(s) of " + std::to_string(bytes_) +
              " bytes per replica are used up and the pool has no room for another (" +
              std::to_string(block_bytes()) + " bytes; " +
              std::to_string((st.chunks_total - st.chunks_used) * (std::size_t{64} << 10)) + " bytes in " +
              std::to_string(st.chunks_total - st.chunks_used) + " free chunk(s) of 64 KiB left of " +
              std::to_string(pool_.size()) + "); nothing stored was lost: free some entries or use a larger pool (" +
              e.what() + ")");
    }
    if ((reinterpret_cast<std::uintptr_t>(r) - base_) % kUnit != 0)
      throw std::logic_error("mirror: the pool heap returned a misaligned region");
    auto* h = new (r) RegionHeader();
    h->magic = RegionHeader::kMagic;
    h->bytes = bytes_;
    h->index = k;
    auto* prev = reinterpret_cast<RegionHeader*>(region_at(k - 1));
    if constexpr (!C::has(internal::kGrowLinkFirst)) {
      // PERSIST: H2: the new header is durable before the link that makes
      // it reachable can be: its pwb, then pfence orders it before the
      // store of prev->next below (one thread issues both).
      persist::pwb(h, sizeof(RegionHeader));
      persist::pfence();
    }
    // CRASH: before this store persists the block is allocated (the pool
    // persisted its chunk map) but unlinked: Root's hook marks only linked
    // regions, so pool recovery frees it.
    prev->next = reinterpret_cast<std::uint64_t>(r);
    // PERSIST: H1: the link is durable (psync, not pfence: another thread
    // publishes objects of the new region, and only completing the link
    // here orders it before their CASes) before the region is counted and
    // the bump index can hand out a unit of it. Single-threaded it is
    // redundant — the grower's own next make psyncs before its object can
    // be linked — so a one-thread --mutate cannot catch its removal
    // (tests/mirror/mirror_growth_crash_test.cc says so); with several
    // threads, thread B's make psyncs only B's write-backs, and B's CAS of
    // an object in the new region could persist before this link.
    persist::pwb(&prev->next, sizeof prev->next);
    persist::psync();
    if constexpr (C::has(internal::kGrowLinkFirst)) {
      // Broken: the header is written back only after the link is durable.
      persist::pwb(h, sizeof(RegionHeader));
      persist::psync();
    }
    publish_region(k, r);
  }
  void give(std::uint64_t i, std::uint32_t u, int tid) {
    if (u > kMaxClass) {
      std::lock_guard g(mu_);
      give_range_locked(i, u);
      return;
    }
    auto& own = mine(tid).by_class[u];
    own.push_back(i);
    if (own.size() > kSpill) {
      std::lock_guard g(mu_);
      for (std::size_t k = 0; k < kSpill / 2; ++k) {
        shared_[u].push_back(own.back());
        own.pop_back();
      }
    }
  }
  void give_range_shared(std::uint64_t i, std::uint64_t n) {
    std::lock_guard g(mu_);
    give_range_locked(i, n);
  }
  void give_range_locked(std::uint64_t i, std::uint64_t n) {
    while (n > 0) {
      const auto c = static_cast<std::uint32_t>(std::min<std::uint64_t>(n, kMaxClass));
      shared_[c].push_back(i);
      i += c;
      n -= c;
    }
  }
  template <std::uint32_t U>
  static void free_cb(void* ctx, void* v, int tid) {
    auto* h = static_cast<Heap*>(ctx);
    h->give(h->unit_of(v), U, tid);
  }

  // The new object's persistent copy, durable before the object can be
  // published.
  void publishable(void* v, std::size_t n) {
    void* p = rep_p_of<C>(v);
    std::memcpy(p, v, n);
    // PERSIST: §4.3.2 / Fig. 1: a new object is constructed on rep_v and
    // copied to rep_p; its rep_p copy is written back and durable before any
    // CAS links it (that CAS's own write-back, Fig. 4 l.41, covers only the
    // linking field). psync, not pfence: a helper of the linking CAS (l.20)
    // may make the link durable from another thread, and only this thread's
    // psync guarantees the object is durable first (docs/mirror.md, "Deviations": fences).
    persist::pwb(p, n);
    persist::psync();
  }

  pmem::Pool& pool_;
  int threads_;
  std::size_t bytes_;     // S
  std::uint64_t units_;   // U = S / 64 per region, unit 0 the header
  std::uintptr_t base_ = 0;
  internal::SegArray<char*> dir_;                 // region k -> its rep_p
  std::atomic<std::uint64_t> nregions_{0};
  std::unique_ptr<std::atomic<std::atomic<std::uint32_t>*>[]> wtab_;  // window -> two region slots (k + 1)
  std::uint64_t nseg_ = 0;
  std::vector<std::unique_ptr<std::atomic<std::uint32_t>[]>> owned_;  // the window segments (growth lock)
  std::atomic<std::uint64_t> bump_{0};  // g of the next unit to bump-allocate
  std::vector<Lists> lists_;
  mutable std::mutex mu_;
  std::mutex grow_mu_;
  std::vector<std::uint64_t> shared_[kMaxClass + 1];
};

}  // namespace ferrite::mirror
