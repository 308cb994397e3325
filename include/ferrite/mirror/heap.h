// ferrite/mirror/heap.h — Mirror's allocator, reclamation and recovery
// (PLDI 2021 §4.3, §4.3.2, §4.3.3), and the pool root of a Mirror structure.
//
// What it is. A Mirror structure owns one region of its pool: S bytes of
// persistent replica rep_p (a block of the pool heap, chunk aligned) and S
// bytes of volatile replica rep_v at rep_p + delta (mirror/placement.h: in
// DRAM at pool base + kReplicaOffset, or the second half of a 2·S block of
// the pool). Heap hands out objects in that region: each object is
// allocated on both replicas at the same offset ("the persistent replica
// behaves exactly the same, with just an offset", §4.3), returned as its
// rep_v address.
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
// Allocator metadata is volatile, all of it (§4.3: "all allocator metadata
// may reside on the volatile replica"): a bump index and free lists of
// 64-byte units in DRAM; the allocation path writes nothing to the pool and
// issues no verb except make's write-back of the new object itself.
// Objects are 64-byte aligned and a multiple of 64 bytes (a node is a line:
// its write-back is one pwb and it shares no line with another object).
//
// Thread safety: alloc/free/make/retire are safe concurrently for distinct
// tids in [0, threads); recover is single-threaded (before other threads).
//
// Recovery (§4.3.3). The restarted process has no rep_v (DRAM is gone, or the
// pool's rep_v half holds whatever a crash left) and no allocator metadata.
// The structure's trace function is called with visit(p, bytes) for every
// reachable object, reading the objects' persistent copies to find the next
// ones (field.persistent()->load()). visit copies the object's rep_p bytes
// to rep_v (rep_v := rep_p, values and sequence numbers) and marks its
// units live. Then every unit not live becomes free (the free lists are
// rebuilt from the live set; the bump index starts after the last live
// unit). It writes nothing to rep_p and issues no verb, so it is idempotent:
// a crash during recovery leaves the pool exactly as before it.
// The pool itself recovers first (pmem::Pool::recover): Root's hook marks
// the region block live, so the pool heap never frees it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "ferrite/mirror/internal/faults.h"
#include "ferrite/mirror/placement.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::mirror {

// The pool root of every Mirror structure: immutable after creation (written
// by create_root, which persists it before publishing its name).
struct Root {
  static constexpr std::uint32_t kTypeTag = 0x4D19'0001;
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "mirror::Root";
  std::uint64_t region = 0;         // pool address of the region block (rep_p first)
  std::uint64_t replica_bytes = 0;  // S: bytes per replica
  std::uint32_t placement = 0;      // PlacementKind
  std::uint32_t structure = 0;      // the structure's own tag (a list, a hash table)
  std::uint64_t anchor = 0;         // rep_v address of the structure's first object
  std::uint64_t anchor_bytes = 0;
  std::uint64_t param = 0;          // the structure's parameter (buckets)

  // The pool's recover hook (pmem/root_registry.h): the region is live. What
  // is inside is Mirror's business (Heap::recover, run by attach).
  static void recover_root(pmem::Pool&, Root* r, const std::function<void(void*)>& mark) {
    if (r->region != 0) mark(reinterpret_cast<void*>(r->region));
  }
};
inline const bool kMirrorRootRegistered = pmem::register_root_type<Root>(&Root::recover_root);

template <class C = Default>
class Heap {
 public:
  static constexpr std::size_t kUnit = 64;
  static constexpr std::uint32_t kMaxClass = 8;  // units; larger objects come from the bump index only

  // A fresh region of `replica_bytes` per replica from `pool`'s heap.
  static std::size_t round_bytes(std::size_t b) {
    const std::size_t c = std::size_t{64} << 10;
    return (std::max(b, c) + c - 1) / c * c;
  }
  Heap(pmem::Pool& pool, std::size_t replica_bytes, int threads)
      : threads_(check_threads(threads)), bytes_(round_bytes(replica_bytes)), units_(bytes_ / kUnit),
        lists_(static_cast<std::size_t>(threads)) {
    const std::size_t block = C::placement::kKind == PlacementKind::kPool ? 2 * bytes_ : bytes_;
    region_ = static_cast<char*>(pool.heap().alloc(block, 0));
    map_replica(pool);
  }
  // An existing region (attach after a restart): call recover() next.
  Heap(pmem::Pool& pool, std::uint64_t region, std::size_t replica_bytes, int threads)
      : threads_(check_threads(threads)), bytes_(replica_bytes), units_(bytes_ / kUnit),
        lists_(static_cast<std::size_t>(threads)) {
    region_ = reinterpret_cast<char*>(region);
    const std::size_t block = C::placement::kKind == PlacementKind::kPool ? 2 * bytes_ : bytes_;
    if (region == 0 || bytes_ % kUnit != 0 || !pool.contains(region_, block))
      throw pmem::PoolError(pmem::Errc::kCorrupt, "mirror: region outside the pool");
    map_replica(pool);
    bump_.store(units_, std::memory_order_relaxed);  // nothing is free before recover()
  }
  ~Heap() {
    if constexpr (C::placement::kKind == PlacementKind::kPool) internal::release_pool_delta();
  }
  Heap(const Heap&) = delete;
  Heap& operator=(const Heap&) = delete;

  std::uint64_t region() const { return reinterpret_cast<std::uint64_t>(region_); }
  std::size_t replica_bytes() const { return bytes_; }
  int threads() const { return threads_; }

  // n bytes on both replicas, uninitialized; the rep_v address. Throws
  // pmem::PoolError(kFull) when the region is exhausted; the message says
  // how large the region is and what to do (the size is fixed at create).
  void* alloc(std::size_t n, int tid) {
    const auto u = units_for(n);
    std::uint64_t i;
    if (!take(u, tid, &i))
      throw pmem::PoolError(
          pmem::Errc::kFull,
          "mirror: region full: no room for an object of " + std::to_string(n) + " bytes (" + std::to_string(u) +
              " units of 64 B) in a region of " + std::to_string(bytes_) + " bytes per replica (" +
              std::to_string(units_) + " units, every one in use or on another thread's free list); a Mirror "
              "region's size is fixed when the structure is created: create it with a larger replica_bytes "
              "(create's last argument; a list or hash-table node takes 64 B, a skip-list node 64 to 384 B, a BST "
              "insert 128 B)");
    return rep_v_of<C>(region_ + i * kUnit);
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
    // Broken (kRecoverNoTrace): rep_v := rep_p for the whole region, and
    // only the roots (the first object visited) are known to be live.
    if constexpr (C::has(internal::kRecoverNoTrace)) std::memcpy(rep_v_of<C>(region_), region_, bytes_);
    bool roots_only = false;
    std::vector<std::uint8_t> live(units_, 0);
    auto visit = [&](const void* v, std::size_t n) -> bool {
      if (roots_only) return false;
      if constexpr (C::has(internal::kRecoverNoTrace)) roots_only = true;
      const std::uint64_t u0 = unit_of(v);
      const std::uint64_t un = units_for(n);
      if (u0 + un > units_) throw pmem::PoolError(pmem::Errc::kCorrupt, "mirror: object outside its region");
      if (live[u0] != 0) return false;
      std::fill(live.begin() + static_cast<std::ptrdiff_t>(u0), live.begin() + static_cast<std::ptrdiff_t>(u0 + un), 1);
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
    for (std::uint64_t u = 0; u < units_; ++u)
      if (live[u] != 0) end = u + 1;
    bump_.store(end, std::memory_order_relaxed);
    std::uint64_t u = 0;
    while (u < end) {
      if (live[u] != 0) {
        ++u;
        continue;
      }
      std::uint64_t g = u;
      while (g < end && live[g] == 0) ++g;
      give_range_shared(u, g - u);
      u = g;
    }
  }

  // Live units (allocated and not freed), for tests and recovery timing.
  std::uint64_t free_units() const {
    std::uint64_t n = units_ - bump_.load(std::memory_order_relaxed);
    for (const auto& l : lists_)
      for (std::uint32_t c = 1; c <= kMaxClass; ++c) n += l.by_class[c].size() * c;
    for (std::uint32_t c = 1; c <= kMaxClass; ++c) n += shared_[c].size() * c;
    return n;
  }
  std::uint64_t units() const { return units_; }

 private:
  struct alignas(64) Lists {
    std::vector<std::uint32_t> by_class[kMaxClass + 1];
  };
  // A thread's list beyond kSpill units of one class gives half to the
  // shared list: at most threads x kSpill free units per class sit where
  // other threads cannot take them (a larger bound made a 4-thread map
  // stress run report "region full" with most of the region free).
  static constexpr std::size_t kSpill = 128;

  static int check_threads(int t) {
    if (t <= 0) throw std::invalid_argument("mirror::Heap: threads must be > 0");
    return t;
  }
  static constexpr std::uint32_t units_for(std::size_t n) {
    return static_cast<std::uint32_t>((n + kUnit - 1) / kUnit);
  }
  void map_replica(pmem::Pool& pool) {
    if constexpr (C::placement::kKind == PlacementKind::kDram) {
      pool.map_volatile_replica();  // idempotent; zeroed in a fresh process
    } else {
      internal::set_pool_delta(bytes_);
    }
  }
  std::uint64_t unit_of(const void* v) const {
    const auto p = reinterpret_cast<std::uintptr_t>(rep_p_of<C>(v));
    const auto r = reinterpret_cast<std::uintptr_t>(region_);
    if (p < r || p >= r + bytes_ || (p - r) % kUnit != 0)
      throw pmem::PoolError(pmem::Errc::kCorrupt, "mirror: pointer outside its region");
    return (p - r) / kUnit;
  }
  Lists& mine(int tid) {
    if (tid < 0 || tid >= threads_)
      throw std::out_of_range("mirror::Heap: tid " + std::to_string(tid) + " outside [0, " + std::to_string(threads_) + ")");
    return lists_[static_cast<std::size_t>(tid)];
  }

  bool take(std::uint32_t u, int tid, std::uint64_t* out) {
    if (u <= kMaxClass) {
      auto& own = mine(tid).by_class[u];
      if (!own.empty()) {
        *out = own.back();
        own.pop_back();
        return true;
      }
      {
        std::lock_guard g(mu_);
        if (!shared_[u].empty()) {
          *out = shared_[u].back();
          shared_[u].pop_back();
          return true;
        }
      }
    }
    // ORDER: relaxed: the index only partitions units between threads; the
    // object's contents are published by the structure's CAS.
    std::uint64_t b = bump_.load(std::memory_order_relaxed);
    while (b + u <= units_) {
      if (bump_.compare_exchange_weak(b, b + u, std::memory_order_relaxed)) {
        *out = b;
        return true;
      }
    }
    if (u > kMaxClass) return false;
    // Split a larger free block.
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
  void give(std::uint64_t i, std::uint32_t u, int tid) {
    if (u > kMaxClass) {
      std::lock_guard g(mu_);
      give_range_locked(i, u);
      return;
    }
    auto& own = mine(tid).by_class[u];
    own.push_back(static_cast<std::uint32_t>(i));
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
      shared_[c].push_back(static_cast<std::uint32_t>(i));
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

  int threads_;
  std::size_t bytes_;
  std::uint64_t units_;
  char* region_ = nullptr;  // rep_p of unit 0
  std::atomic<std::uint64_t> bump_{0};
  std::vector<Lists> lists_;
  std::mutex mu_;
  std::vector<std::uint32_t> shared_[kMaxClass + 1];
};

}  // namespace ferrite::mirror
