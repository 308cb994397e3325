// ferrite/sync/ebr.h — epoch-based reclamation (EBR) for lock-free structures.
//
// What it is: Fraser's three-epoch scheme (K. Fraser, "Practical lock-
// freedom", PhD thesis, Cambridge 2004, §5.2.3; also Hart et al., JPDC 2007).
// A global epoch E advances only when every thread that is inside a read-side
// section ("pinned") has announced E. A node unlinked and retired while the
// global epoch was r is freed once the global epoch reaches r + 2: by then
// every thread pinned at the time of the unlink has unpinned at least once,
// so nobody can still hold a reference. Retired nodes sit in three per-thread
// buckets indexed by epoch mod 3 (the "3 epochs").
//
// Interface (the reclamation policy shape the transient and persistent
// lock-free structures take as a template parameter):
//   Ebr ebr(max_threads);
//   { auto g = ebr.pin(tid); ... read shared nodes ... }   // RAII guard
//   ebr.retire(tid, node);                 // `delete node` when safe
//   ebr.retire(tid, p, fn, ctx);           // fn(ctx, p, freeing_tid) when safe
// `tid` is a ThreadRegistry id in [0, max_threads); each tid must be used by
// at most one thread at a time. The freeing callback receives the tid of the
// thread that runs it, so a persistent structure can hand the block back to
// its Ferrite heap arena (pmem::Heap::free(p, tid)).
//
// Thread safety: pin/retire/collect/try_advance are safe concurrently for
// distinct tids; the destructor (which frees everything still retired) must
// not race with any other member.
//
// Invariants:
//   * slot[t].word = (epoch << 1) | active. Only thread t writes it; an active
//     slot's epoch is at most one behind the global epoch (E advances only
//     when all active slots equal E).
//   * A bucket holds only nodes retired at the bucket's recorded epoch.
//   * A node retired at epoch r is passed to its deleter only when the global
//     epoch is >= r + 2.
// Pins nest (a counter per slot); only the outermost pin announces.
//
// Why not liburcu: Debian 12 has liburcu 0.13 (`apt-cache policy
// liburcu-dev`), but (1) its deferred reclamation (call_rcu) runs callbacks on
// a helper thread, while Ferrite's pool heap wants blocks freed by a thread
// that owns a heap arena id; (2) its readers register by pthread, not by the
// dense ThreadRegistry ids that the benchmark harness and the persistent
// structures already use; (3) the urcu-qsbr flavour needs explicit quiescent
// states inside the benchmark loop. A header-only EBR is ~200 lines, has no
// extra dependency and is TSan-visible. We did NOT measure liburcu; that is
// the honest status (docs/baselines.md).
//
// Persistence: none — EBR state is volatile. After a crash no thread is
// pinned; persistent structures rebuild their heap from a trace instead.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ferrite/sync/cache_padded.h"

namespace ferrite::sync {

class Ebr {
 public:
  using FreeFn = void (*)(void* ctx, void* p, int tid);

  // `collect_threshold`: a thread tries to advance the epoch and free its
  // old buckets every `collect_threshold` retirements.
  explicit Ebr(int max_threads, std::size_t collect_threshold = 64)
      : max_(max_threads), threshold_(collect_threshold == 0 ? 1 : collect_threshold),
        slots_(static_cast<std::size_t>(check(max_threads))) {}
  Ebr(const Ebr&) = delete;
  Ebr& operator=(const Ebr&) = delete;
  ~Ebr() { free_all(); }

  class Guard {
   public:
    Guard() = default;
    Guard(Guard&& o) noexcept : ebr_(std::exchange(o.ebr_, nullptr)), tid_(o.tid_) {}
    Guard& operator=(Guard&& o) noexcept {
      if (this != &o) {
        reset();
        ebr_ = std::exchange(o.ebr_, nullptr);
        tid_ = o.tid_;
      }
      return *this;
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard() { reset(); }
    void reset() {
      if (ebr_ != nullptr) std::exchange(ebr_, nullptr)->unpin(tid_);
    }
    explicit operator bool() const { return ebr_ != nullptr; }

   private:
    friend class Ebr;
    Guard(Ebr* e, int tid) : ebr_(e), tid_(tid) {}
    Ebr* ebr_ = nullptr;
    int tid_ = -1;
  };

  // Enters a read-side section: until the guard dies, no node that was
  // reachable when pin returned is freed.
  [[nodiscard]] Guard pin(int tid) {
    Slot& s = slot(tid);
    if (s.nesting++ == 0) {
      const std::uint64_t e = global_.value.load(std::memory_order_seq_cst);
      // ORDER: a seq_cst RMW (xchg on x86, a full barrier) rather than a store
      // + fence: the announcement must be globally visible before this thread
      // loads any shared pointer, and TSan models RMWs (not standalone
      // fences). An advancer that misses this announcement scanned before it
      // in the seq_cst order, so every node unlinked before that scan is
      // already unreachable for our later loads.
      s.word.exchange((e << 1) | 1u, std::memory_order_seq_cst);
    }
    return Guard(this, tid);
  }

  // Frees `p` with `delete` once no pinned thread can reach it. `p` must be
  // unlinked already (unreachable for threads that pin from now on).
  template <class T>
  void retire(int tid, T* p) {
    retire(tid, p, [](void*, void* q, int) { delete static_cast<T*>(q); }, nullptr);
  }
  void retire(int tid, void* p, FreeFn fn, void* ctx) {
    if (p == nullptr) return;
    Slot& s = slot(tid);
    // ORDER: seq_cst pairs with the advancer's CAS: the unlink (before this
    // call) precedes the retirement epoch we read.
    const std::uint64_t e = global_.value.load(std::memory_order_seq_cst);
    Bucket& b = s.buckets[e % 3];
    if (b.epoch != e) {
      // The bucket holds nodes of epoch b.epoch <= e - 3 (same residue,
      // smaller): safe since e >= b.epoch + 2.
      run(b, tid);
      b.epoch = e;
    }
    b.items.push_back({p, fn, ctx});
    ++s.pending;
    if (++s.since_collect >= threshold_) {
      s.since_collect = 0;
      try_advance();
      collect(tid);
    }
  }

  // Tries to advance the global epoch; true if it moved (by us or another).
  bool try_advance() {
    const std::uint64_t e = global_.value.load(std::memory_order_seq_cst);
    for (auto& s : slots_) {
      // ORDER: seq_cst (acquire) load: if the thread is seen unpinned (or
      // re-pinned at e), its earlier read-side accesses happen-before any
      // free that follows this advance (release sequence of its xchg/store).
      const std::uint64_t w = s.value.word.load(std::memory_order_seq_cst);
      if ((w & 1u) != 0 && (w >> 1) != e) return false;
    }
    std::uint64_t expected = e;
    // ORDER: seq_cst CAS publishes the new epoch after the scan; freers
    // acquire it through their load of global_.
    global_.value.compare_exchange_strong(expected, e + 1, std::memory_order_seq_cst);
    return true;
  }

  // Frees this thread's buckets whose epoch is at least two behind.
  void collect(int tid) {
    Slot& s = slot(tid);
    const std::uint64_t e = global_.value.load(std::memory_order_seq_cst);
    for (auto& b : s.buckets) {
      if (!b.items.empty() && b.epoch + 2 <= e) run(b, tid);
    }
  }

  // Test / shutdown helper: advances the epoch until everything `tid`
  // retired is freed. Must not be called while `tid` is pinned; returns
  // false (gives up) if some other thread stays pinned.
  bool drain(int tid, int max_rounds = 16) {
    for (int i = 0; i < max_rounds && slot(tid).pending != 0; ++i) {
      try_advance();
      collect(tid);
    }
    return slot(tid).pending == 0;
  }

  std::uint64_t epoch() const { return global_.value.load(std::memory_order_relaxed); }
  // Nodes `tid` retired and not yet freed (read by the owner, or when quiet).
  std::size_t pending(int tid) { return slot(tid).pending; }
  int max_threads() const { return max_; }

 private:
  struct Item {
    void* p;
    FreeFn fn;
    void* ctx;
  };
  struct Bucket {
    std::uint64_t epoch = 0;
    std::vector<Item> items;
  };
  struct Slot {
    std::atomic<std::uint64_t> word{0};  // (epoch << 1) | active
    // Owner-only fields below (never read by other threads while running).
    int nesting = 0;
    std::size_t pending = 0;
    std::size_t since_collect = 0;
    Bucket buckets[3];
  };

  static int check(int n) {
    if (n <= 0) throw std::invalid_argument("Ebr: max_threads must be > 0");
    return n;
  }
  Slot& slot(int tid) {
    if (tid < 0 || tid >= max_)
      throw std::out_of_range("Ebr: tid " + std::to_string(tid) + " outside [0, " +
                              std::to_string(max_) + ")");
    return slots_[static_cast<std::size_t>(tid)].value;
  }
  void unpin(int tid) {
    Slot& s = slot(tid);
    if (--s.nesting == 0) {
      // ORDER: release: our read-side accesses happen-before the free of any
      // node by a thread that observes this (or a later) slot value.
      const std::uint64_t w = s.word.load(std::memory_order_relaxed);  // own slot
      s.word.store(w & ~std::uint64_t{1}, std::memory_order_release);
    }
  }
  void run(Bucket& b, int tid) {
    Slot& s = slot(tid);
    // Move out first: a deleter may retire more (it then lands in a bucket).
    std::vector<Item> items;
    items.swap(b.items);
    for (const Item& it : items) it.fn(it.ctx, it.p, tid);
    s.pending -= items.size();
    items.clear();
    if (b.items.empty()) b.items.swap(items);  // keep the capacity
  }
  void free_all() {
    for (int t = 0; t < max_; ++t) {
      Slot& s = slots_[static_cast<std::size_t>(t)].value;
      for (int round = 0; round < 4 && s.pending != 0; ++round)
        for (auto& b : s.buckets) run(b, t);
    }
  }

  int max_;
  std::size_t threshold_;
  CachePadded<std::atomic<std::uint64_t>> global_{std::uint64_t{3}};  // start >= 2: no underflow
  std::vector<CachePadded<Slot>> slots_;
};

}  // namespace ferrite::sync
