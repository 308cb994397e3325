// ferrite/montage/transient_sys.h — the epoch system's interface with
// nothing to persist: the nbMontage structures' transient originals, the
// paper's "DRAM (T)".
//
// Paper: W. Cai et al., "Fast Nonblocking Persistence for Concurrent Data
// Structures", DISC 2021, §5: "DRAM (T) ... unmodified transient versions
// of our various data structures, with data located in DRAM", the baseline
// nbMontage's throughput is reported against (the split-ordered table
// "within 65% of the transient version", §5.2).
//
// What it is. Every nbMontage structure (hash_map.h, split_ordered.h, bst.h,
// skiplist.h, ms_queue.h) is a template over its system S, EpochSys<F> by
// default. Instantiated with TransientSys, the same code — the same
// algorithm, the same index nodes, the same EBR — runs as the transient
// original:
//   CASObj    an 8-byte std::atomic word (EpochSys: 16 bytes, value and
//             counter or an installed descriptor, every access a
//             `cmpxchg16b`)
//   lin_CAS   a plain CAS; load/cas/store plain atomic accesses; no
//             descriptors, no epochs, no tags, no anti-nodes
//   pnew      a block of the payload's size in DRAM (EpochSys: a 64-byte
//             header and the payload, in a pool slab)
//   pdetach   nothing to do (no anti-node)
//   pdelete   the block goes back to the caller's free list at once: every
//             structure calls it from its EBR deleter, when no thread can
//             reach the payload any more (EpochSys waits until every
//             recovery would drop it, P4; DRAM has no recovery)
//   sync      nothing to do.
// A structure on TransientSys has no create(pool, ...) nor attach: it is
// created with create(threads, options) and nothing survives it.
//
// Why the allocator is the epoch system's shape (per-thread size classes
// carved from 64 KiB slabs, free lists in DRAM) and not malloc: the paper's
// DRAM (T) uses jemalloc, nbMontage Ralloc — two allocators of the same
// kind (thread-local size classes). Here both sides get the same
// allocator design, so what the comparison measures is the persistence
// (the pool's media, the 16-byte CASObj, tagging, write-backs, epochs). The
// blocks have no header: a block's size class is its slab's, found by
// aligning its address down to the slab. Classes are multiples of 16 bytes
// (EpochSys: of 64, its blocks are written back line by line).
//
// Memory orders: every access is seq_cst, which is what the 16-byte CAS of
// EpochSys provides (`lock cmpxchg16b`, a full barrier) and what the
// structures' ORDER arguments assume. On x86 a seq_cst load is a plain
// `mov` and a CAS is `lock cmpxchg` either way: the transient original
// pays nothing for it.
//
// ABA: EpochSys's CASObj carries a counter; this word does not. The
// structures compare only node and payload pointers that their EBR keeps
// alive while the comparing thread is pinned (a retired block is reused
// only after every thread pinned at its retirement has unpinned), which is
// what makes the original lock-free algorithms ABA-free too.
//
// Thread safety: as EpochSys — members taking `tid` concurrently for
// distinct ids in [0, max_threads); load/cas/store/lin_cas on any object
// from any thread. The destructor frees every slab: run it after the
// structure's nodes are gone (the structures own it and destroy it last).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferrite/montage/layout.h"

namespace ferrite::montage {

// The transient CASObj: one word. Same constructor shape as CASObj.
class TransientCASObj {
 public:
  explicit TransientCASObj(std::uint64_t v = 0) : v_(v) {}
  TransientCASObj(const TransientCASObj&) = delete;
  TransientCASObj& operator=(const TransientCASObj&) = delete;

 private:
  friend class TransientSys;
  std::atomic<std::uint64_t> v_;
};

class TransientSys {
 public:
  static constexpr bool kPersistent = false;
  using CASObj = TransientCASObj;
  // A payload block: its bytes start at its address (no header).
  struct Blk {
    void* data() { return this; }
    const void* data() const { return this; }
  };
  static constexpr std::size_t kGrain = 16;
  static constexpr int kClasses = 256;  // 16 B, 32 B, ..., 4 KiB
  static constexpr std::size_t kMaxPayload = kGrain * kClasses;

  static std::unique_ptr<TransientSys> create(int threads) {
    if (threads <= 0 || threads > kMaxThreads)
      throw std::invalid_argument("montage: threads must be in [1, " + std::to_string(kMaxThreads) + "]");
    return std::unique_ptr<TransientSys>(new TransientSys(threads));
  }
  ~TransientSys() {
    for (int t = 0; t < threads_; ++t)
      for (void* s : ts_[static_cast<std::size_t>(t)].slabs) ::operator delete(s, std::align_val_t{kDramSlabBytes});
  }
  TransientSys(const TransientSys&) = delete;
  TransientSys& operator=(const TransientSys&) = delete;

  int max_threads() const { return threads_; }

  // -------------------------------------------------------------- payloads
  Blk* pnew_bytes(int tid, std::size_t bytes) {
    if (bytes > kMaxPayload) throw std::invalid_argument("montage: payload larger than " + std::to_string(kMaxPayload) + " bytes");
    const int c = static_cast<int>((std::max<std::size_t>(bytes, 1) + kGrain - 1) / kGrain) - 1;
    ClassState& cs = ts(tid).cls[c];
    if (!cs.free.empty()) {
      Blk* b = cs.free.back();
      cs.free.pop_back();
      return b;
    }
    const std::size_t size = class_bytes(c);
    if (cs.next == nullptr || cs.next + size > cs.end) {
      auto* slab = static_cast<char*>(::operator new(kDramSlabBytes, std::align_val_t{kDramSlabBytes}));
      ts(tid).slabs.push_back(slab);
      reinterpret_cast<SlabHeader*>(slab)->cls = c;
      cs.next = slab + kHeaderBytes;
      cs.end = slab + kDramSlabBytes;
    }
    Blk* b = reinterpret_cast<Blk*>(cs.next);
    cs.next += size;
    return b;
  }
  template <class T, class... A>
  Blk* pnew(int tid, A&&... args) {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                  "payloads are raw bytes (as in the pool)");
    Blk* b = pnew_bytes(tid, sizeof(T));
    new (b->data()) T(std::forward<A>(args)...);
    return b;
  }
  template <class T>
  static const T& get(const Blk* b) {
    return *static_cast<const T*>(b->data());
  }
  // The structures write a payload only before the lin_CAS that publishes
  // it (nbMontage constraint 3); EpochSys checks that, this does not.
  template <class T>
  T& own(int, Blk* b) {
    return *static_cast<T*>(b->data());
  }
  void pdetach(int, Blk*) {}
  // Called when no thread can reach b (the structure's EBR deleter).
  void pdelete(int tid, Blk* b) {
    auto* slab = reinterpret_cast<SlabHeader*>(reinterpret_cast<std::uintptr_t>(b) & ~(std::uintptr_t{kDramSlabBytes} - 1));
    ts(tid).cls[slab->cls].free.push_back(b);
  }

  // ------------------------------------------------------------ CASObj
  std::uint64_t load(CASObj& o) { return o.v_.load(std::memory_order_seq_cst); }
  bool cas(CASObj& o, std::uint64_t expected, std::uint64_t desired) {
    return o.v_.compare_exchange_strong(expected, desired, std::memory_order_seq_cst);
  }
  void store(CASObj& o, std::uint64_t v) { o.v_.store(v, std::memory_order_seq_cst); }
  // A store into an object no other thread can see yet (a fresh node):
  // relaxed, published by the CAS that links the node.
  static void init(CASObj& o, std::uint64_t v) { o.v_.store(v, std::memory_order_relaxed); }
  // lin_CAS with nothing to tag: the plain CAS the original algorithm has
  // at its linearization point.
  bool lin_cas(int, CASObj& o, std::uint64_t expected, std::uint64_t desired) { return cas(o, expected, desired); }
  void abort_op(int) {}
  void sync() {}
  void abandon() {}  // nothing persists: nothing to skip at destruction

 private:
  static constexpr std::size_t kDramSlabBytes = std::size_t{64} << 10;
  static constexpr std::size_t kHeaderBytes = 64;  // a line: 1 KiB blocks stay line-aligned
  static constexpr std::size_t class_bytes(int c) { return kGrain * static_cast<std::size_t>(c + 1); }
  struct SlabHeader {
    int cls;
  };
  struct ClassState {
    char* next = nullptr;
    char* end = nullptr;
    std::vector<Blk*> free;
  };
  struct alignas(128) ThreadState {
    ClassState cls[kClasses];
    std::vector<void*> slabs;
  };

  explicit TransientSys(int threads) : threads_(threads), ts_(new ThreadState[static_cast<std::size_t>(threads)]) {}
  ThreadState& ts(int tid) {
    if (tid < 0 || tid >= threads_) throw std::out_of_range("montage: thread id " + std::to_string(tid) + " out of range");
    return ts_[static_cast<std::size_t>(tid)];
  }

  int threads_;
  std::unique_ptr<ThreadState[]> ts_;
};

}  // namespace ferrite::montage
