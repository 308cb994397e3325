// ferrite/mirror/placement.h — where Mirror's two replicas live, and the
// Config that every Mirror type is instantiated with.
//
// Mirror (M. Friedman, E. Petrank, P. Ramalhete, "Mirror: Making Lock-Free
// Data Structures Persistent", PLDI 2021) keeps two replicas of every
// persistent field: the persistent replica rep_p in the pool and the
// volatile replica rep_v, "at a constant offset" (§4.3.1), so one pointer
// value names an object in both. Structures hold rep_v addresses: every
// load is a load of rep_v, and patomic finds rep_p as rep_v - delta.
//
// Two placements, chosen when the structure is created (recorded in its root
// and checked when it is attached):
//
//   InDram  the paper's main mode (§3.1, §6.2): rep_v is DRAM — the
//           anonymous mapping pmem::Pool::map_volatile_replica() reserves at
//           pool base + pmem::kReplicaOffset. delta = kReplicaOffset, a
//           compile-time constant. After a crash rep_v is gone; recovery
//           rebuilds it (mirror/heap.h).
//   InPool  both replicas in the pool (§6.3, "Mirror with both replicas on
//           NVMM"): the structure's region is 2·S bytes of the pool, rep_p
//           its first half, rep_v its second; delta = S. rep_v is never
//           written back; after a crash recovery overwrites it from rep_p
//           exactly as in the DRAM mode. delta is a run-time value held
//           process-wide (one S per process at a time: attaching an InPool
//           region of another size while one is in use is refused).
//
// Config<Placement, Faults, Hooks> bundles the placement with the fault
// switches of the broken variants (internal/faults.h, 0 = correct) and test
// hooks (none by default); patomic, pconst, the heap and the structures all
// take one. The defaults (mirror::Default) are the paper's main mode.
//
// Thread safety: delta() is safe from any thread; set_pool_delta is called
// by create/attach, before other threads use the structure.
#pragma once

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "ferrite/mirror/internal/faults.h"
#include "ferrite/pmem/pool.h"

namespace ferrite::mirror {

enum class PlacementKind : std::uint32_t { kDram = 1, kPool = 2 };

struct InDram {
  static constexpr PlacementKind kKind = PlacementKind::kDram;
  static constexpr const char* kName = "dram";
  static std::uintptr_t delta() { return pmem::kReplicaOffset; }
};

namespace internal {
// ORDER: relaxed is enough: it is set before the structure is handed to
// other threads (create/attach are single-threaded), and that hand-off
// synchronizes.
inline std::atomic<std::uintptr_t> g_pool_delta{0};
// InPool heaps alive (an abandoned one counts forever). ORDER: relaxed, as
// g_pool_delta: changed only by create/attach/destruction, never concurrently
// with operations on the structures.
inline std::atomic<int> g_pool_users{0};
// Called by each InPool heap when it is made; release_pool_delta when it dies.
inline void set_pool_delta(std::uintptr_t d) {
  const std::uintptr_t cur = g_pool_delta.load(std::memory_order_relaxed);
  if (g_pool_users.load(std::memory_order_relaxed) > 0 && cur != d)
    throw std::logic_error("mirror: an InPool region of " + std::to_string(d) +
                           " bytes per replica cannot be used while one of " + std::to_string(cur) +
                           " bytes is in use in this process (delta is process-wide)");
  g_pool_delta.store(d, std::memory_order_relaxed);
  g_pool_users.fetch_add(1, std::memory_order_relaxed);
}
inline void release_pool_delta() { g_pool_users.fetch_sub(1, std::memory_order_relaxed); }
}  // namespace internal

struct InPool {
  static constexpr PlacementKind kKind = PlacementKind::kPool;
  static constexpr const char* kName = "pool";
  static std::uintptr_t delta() { return internal::g_pool_delta.load(std::memory_order_relaxed); }
};

template <class Placement = InDram, unsigned Faults = internal::kNoFaults, class Hooks = internal::NoHooks>
struct Config {
  using placement = Placement;
  using hooks = Hooks;
  static constexpr unsigned kFaults = Faults;
  static constexpr bool has(unsigned f) { return (Faults & f) != 0; }
};
using Default = Config<>;

// rep_v address -> rep_p address of the same object (§4.3.1) and back.
template <class C, class T>
inline T* rep_p_of(T* v) {
  return reinterpret_cast<T*>(reinterpret_cast<std::uintptr_t>(v) - C::placement::delta());
}
template <class C, class T>
inline T* rep_v_of(T* p) {
  return reinterpret_cast<T*>(reinterpret_cast<std::uintptr_t>(p) + C::placement::delta());
}

}  // namespace ferrite::mirror
