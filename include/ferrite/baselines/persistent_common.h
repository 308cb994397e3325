// ferrite/baselines/persistent_common.h — pieces shared by the persistent
// competitors (Izraelevitz transform, Friedman queues, flat combining with
// in-place persistence, lock + persist).
//
//   * Fault          bitmask of deliberately removed persistence steps; the
//                    crash tests must catch each broken variant.
//   * PNode          a list node in the Ferrite pool: next, value, payload
//                    padding so a node carries RunParams::value_size bytes.
//   * NodeAlloc      allocates/frees PNodes in the pool heap by thread id
//                    and retires them through EBR (sync/ebr.h).
//
// Thread safety: NodeAlloc is safe for distinct tids concurrently.
// Persistence: NodeAlloc writes nothing back; callers pwb the node.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::baselines {

enum Fault : unsigned {
  kNoFaults = 0,
  kNoNodePwb = 1u << 0,     // new nodes not written back before they are linked
  kNoFinalPsync = 1u << 1,  // operation returns without psync (not durable on return)
  kNoLinkPwb = 1u << 2,     // the linking CAS / store is not written back
  kNoAnnouncePwb = 1u << 3, // fc-inplace: announcements not persisted
  kNoLogPwb = 1u << 4,      // redo log / operation log not persisted
};

// Reserved value words (containers answer "empty" with a bool, but the
// detectable logs need an in-band marker).
inline constexpr std::int64_t kEmptyValue = INT64_MIN;

struct PNode {
  std::atomic<PNode*> next{nullptr};
  std::int64_t value = 0;
  // Friedman queues: who dequeued this node (0: nobody), see friedman.h.
  std::atomic<std::uint64_t> deq_by{0};
  // Friedman log queue: (tid, seq) of the enqueuing operation.
  std::uint64_t enq_by = 0;
  // value_size - 8 payload bytes follow (allocated, not declared).
};
static_assert(sizeof(PNode) == 32);
static_assert(std::atomic<PNode*>::is_always_lock_free);

class NodeAlloc {
 public:
  NodeAlloc(pmem::Pool& pool, std::size_t value_size)
      : heap_(&pool.heap()), size_(sizeof(PNode) + (value_size > 8 ? value_size - 8 : 0)) {
    if (value_size < 8) throw std::invalid_argument("value_size must be >= 8");
  }
  std::size_t node_size() const { return size_; }

  // A fresh node with value v, next = nullptr, payload filled (the payload
  // is written so value_size costs what it would for real data).
  PNode* make(int tid, std::int64_t v) {
    void* mem = heap_->alloc(size_, tid);
    auto* n = new (mem) PNode;
    n->value = v;
    if (size_ > sizeof(PNode))
      std::memset(reinterpret_cast<char*>(n) + sizeof(PNode), static_cast<int>(v & 0xff),
                  size_ - sizeof(PNode));
    return n;
  }
  void free_now(int tid, PNode* n) { heap_->free(n, tid); }
  // EBR deleter: gives the block back to the freeing thread's arena.
  static void ebr_free(void* ctx, void* p, int tid) { static_cast<pmem::Heap*>(ctx)->free(p, tid); }
  void retire(sync::Ebr& ebr, int tid, PNode* n) { ebr.retire(tid, n, &ebr_free, heap_); }
  pmem::Heap& heap() { return *heap_; }

 private:
  pmem::Heap* heap_;
  std::size_t size_;
};

// Walks a persistent list with a step bound: a corrupt crash image (e.g. a
// broken variant that never wrote a node back) can hold a cycle; recovery
// and observation then fail with an error instead of hanging.
inline constexpr std::size_t kMaxListWalk = std::size_t{1} << 23;  // 8M nodes (256 MiB of 32-byte nodes)
struct ListWalk {
  std::size_t steps = 0;
  PNode* next(const PNode* n) {
    if (++steps > kMaxListWalk)
      throw std::runtime_error("persistent list longer than 2^23 nodes: cycle in a corrupt image");
    return n->next.load(std::memory_order_acquire);
  }
  // The same through a storage policy's loads (seq_objects.h).
  template <class Storage>
  PNode* next(const PNode* n, const Storage& st) {
    if (++steps > kMaxListWalk)
      throw std::runtime_error("persistent list longer than 2^23 nodes: cycle in a corrupt image");
    return st.next(n);
  }
};

inline void check_tid(int tid, int max_threads, const char* who) {
  if (tid < 0 || tid >= max_threads)
    throw std::out_of_range(std::string(who) + ": tid " + std::to_string(tid) + " outside [0, " +
                            std::to_string(max_threads) + ")");
}

}  // namespace ferrite::baselines
