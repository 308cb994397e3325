// ferrite/baselines/izraelevitz.h — the Izraelevitz–Mendes–Scott transform
// (J. Izraelevitz, H. Mendes, M. L. Scott, "Linearizability of Persistent
// Memory Objects Under a Full-System-Crash Failure Model", DISC 2016, §5)
// applied mechanically to the Michael–Scott queue (PODC'96) and Treiber's
// stack (IBM RJ 5118, 1986). Benchmark names: izraelevitz-ms (queue),
// izraelevitz-treiber (stack).
//
// The rule applied (exactly; one helper per access kind below):
//   * every load of a shared location is followed by pwb(location); psync
//     (load_p);
//   * every store / CAS (successful or not) to a shared location is followed
//     by pwb(location); psync (store_p, cas_p);
//   * the initializing stores to a fresh node, made before it is published,
//     are written back as one pwb(node, node_size); psync (the transform
//     would flush each store; they share the node's line(s));
//   * each operation ends with psync before it returns (a no-op in effect
//     after the rule, kept so the broken variant can drop it).
// The fence is psync, not pfence: the DISC'16 transform's fence is a
// *persist* fence (x86 sfence after clwb/clflush completes the write-back),
// and the transform needs it — a value written by thread A and read by B
// must be durable before B's own effects are, and B cannot write back A's
// pending lines. With pfence (ordering only) the crash simulator finds
// violations in 2-thread runs: B links its node to A's node while A's node
// is still only ordered, not durable. On x86 both map to sfence, so the
// choice costs nothing there; it shows up only in the psync counter.
// This makes any linearizable algorithm durably linearizable: a value read
// by a thread is persistent before anything the thread does next.
//
// Thread safety: enqueue/try_dequeue (push/try_pop) are lock-free and may run
// concurrently for distinct tids in [0, max_threads).
//
// Invariants (volatile view = persistent view after psync): head → sentinel →
// ... → last node, tail is head or behind the last node by at most one link;
// stack: top → ... → null. Nodes live in the Ferrite pool heap (arena = tid).
// A removed node is retired to EBR after the removing operation's psync, so
// it is never reused while the durable head/top may still reach it.
//
// Persistence invariants: a node is durable before any link to it (psync
// between its pwb and the linking CAS). The durable head (top) always points
// to a chain of durable nodes.
//
// Recovery (single-threaded, after a crash): the durable head/top is the
// state. The pool rebuilds the heap when it opens (pmem::Pool::recover):
// each Root's registered hook (recover_root) traces the list from the root
// — for the queue after recomputing the tail (the durable tail may lag or
// point at a freed node; idempotent). The constructor, attaching, repeats
// the tail repair and frees nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ferrite/baselines/persistent_common.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"
#include "ferrite/sync/backoff.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::baselines {

namespace izraelevitz {

template <unsigned Faults>
struct Rule {
  template <class T>
  static T load_p(const std::atomic<T>& a) {
    // ORDER: acquire — the MS queue / Treiber stack need it (node contents).
    T v = a.load(std::memory_order_acquire);
    // PERSIST: IMS'16 §5: a load is followed by a flush of the location, so
    // the value read is durable before it can influence anything we persist.
    persist::pwb(&a);
    persist::psync();
    return v;
  }
  template <class T>
  static void store_p(std::atomic<T>& a, T v) {
    a.store(v, std::memory_order_release);
    if constexpr ((Faults & kNoLinkPwb) == 0) persist::pwb(&a);
    persist::psync();
  }
  template <class T>
  static bool cas_p(std::atomic<T>& a, T& expected, T desired) {
    // ORDER: acq_rel: release publishes the new node, acquire reads the
    // current value on failure.
    const bool ok = a.compare_exchange_strong(expected, desired, std::memory_order_acq_rel,
                                              std::memory_order_acquire);
    // PERSIST: IMS'16 §5: a CAS is followed by a flush of the location
    // (also when it fails: it was a load).
    if constexpr ((Faults & kNoLinkPwb) == 0) persist::pwb(&a);
    persist::psync();
    return ok;
  }
  static void node_p(const PNode* n, std::size_t size) {
    // PERSIST: the node's initializing stores before publication.
    if constexpr ((Faults & kNoNodePwb) == 0) persist::pwb(n, size);
    persist::psync();
  }
  static void end_op() {
    // PERSIST: durable before the response.
    if constexpr ((Faults & kNoFinalPsync) == 0) persist::psync();
  }
};

}  // namespace izraelevitz

// ------------------------------------------------------------------ queue
template <unsigned Faults = kNoFaults>
class IzraelevitzQueue {
  using R = izraelevitz::Rule<Faults>;

 public:
  struct Root {
    static constexpr std::uint32_t kTypeTag = 0x42A5'0001;
    static constexpr std::uint32_t kTypeVersion = 1;
    static constexpr const char* kTypeName = "baselines::IzraelevitzQueue";
    alignas(64) std::atomic<PNode*> head{nullptr};
    alignas(64) std::atomic<PNode*> tail{nullptr};
  };

  // Attaches to root `name` in `pool`: creates it if absent, else recovers
  // (the caller guarantees no other thread uses the pool during the call).
  IzraelevitzQueue(pmem::Pool& pool, std::string_view name, int max_threads, std::size_t value_size = 8)
      : pool_(pool), max_(max_threads), alloc_(pool, value_size), ebr_(max_threads) {
    if (pool.has_root(name)) {
      root_ = pool.root<Root>(name);
      repair(root_);
    } else {
      root_ = pool.create_root<Root>(name);
      PNode* s = alloc_.make(0, 0);
      persist::pwb(s, alloc_.node_size());
      persist::pfence();
      root_->head.store(s, std::memory_order_relaxed);  // relaxed: single-threaded setup
      root_->tail.store(s, std::memory_order_relaxed);
      persist::pwb(root_, sizeof(Root));
      persist::psync();
    }
  }

  void enqueue(int tid, std::int64_t v) {
    check_tid(tid, max_, "IzraelevitzQueue");
    PNode* node = alloc_.make(tid, v);
    R::node_p(node, alloc_.node_size());
    auto guard = ebr_.pin(tid);
    sync::Backoff backoff;
    for (;;) {
      PNode* last = R::load_p(root_->tail);
      PNode* next = R::load_p(last->next);
      if (last != R::load_p(root_->tail)) continue;
      if (next == nullptr) {
        PNode* expected = nullptr;
        // CRASH: once this CAS is durable the element is in the queue.
        if (R::cas_p(last->next, expected, node)) {
          PNode* t = last;
          R::cas_p(root_->tail, t, node);
          R::end_op();
          return;
        }
        backoff.pause();
      } else {
        PNode* t = last;
        R::cas_p(root_->tail, t, next);  // help a lagging tail
      }
    }
  }

  bool try_dequeue(int tid, std::int64_t* out) {
    check_tid(tid, max_, "IzraelevitzQueue");
    PNode* retired = nullptr;
    bool ok = false;
    {
      auto guard = ebr_.pin(tid);
      sync::Backoff backoff;
      for (;;) {
        PNode* first = R::load_p(root_->head);
        PNode* last = R::load_p(root_->tail);
        PNode* next = R::load_p(first->next);
        if (first != R::load_p(root_->head)) continue;
        if (first == last) {
          if (next == nullptr) break;  // empty
          PNode* t = last;
          R::cas_p(root_->tail, t, next);
          continue;
        }
        const std::int64_t v = next->value;
        // PERSIST: the load of next->value is a shared load too.
        persist::pwb(&next->value);
        persist::psync();
        PNode* f = first;
        // CRASH: once this CAS is durable the element is gone.
        if (R::cas_p(root_->head, f, next)) {
          *out = v;
          retired = first;
          ok = true;
          break;
        }
        backoff.pause();
      }
      R::end_op();
    }
    // Retired after the psync: the durable head no longer reaches it.
    if (retired != nullptr) alloc_.retire(ebr_, tid, retired);
    return ok;
  }

  // Front to back. Not concurrent with updates.
  std::vector<std::int64_t> snapshot() const {
    std::vector<std::int64_t> r;
    ListWalk walk;
    for (PNode* n = root_->head.load(std::memory_order_acquire)->next.load(std::memory_order_acquire);
         n != nullptr; n = walk.next(n))
      r.push_back(n->value);
    return r;
  }

  // Root's recover hook (pmem/root_registry.h): repair, then mark the list
  // from the durable head.
  static void recover_root(pmem::Pool&, Root* r, const std::function<void(void*)>& mark) {
    repair(r);
    ListWalk walk;
    for (PNode* n = r->head.load(std::memory_order_relaxed); n != nullptr; n = walk.next(n)) mark(n);
  }

 private:
  // tail := the last node reachable from the durable head. Idempotent.
  static void repair(Root* r) {
    PNode* h = r->head.load(std::memory_order_relaxed);
    if (h == nullptr) return;  // creation did not complete: nothing linked
    PNode* last = h;
    ListWalk walk;
    while (PNode* n = walk.next(last)) last = n;
    r->tail.store(last, std::memory_order_relaxed);
    persist::pwb(&r->tail);
    persist::psync();
  }

  pmem::Pool& pool_;
  int max_;
  NodeAlloc alloc_;
  sync::Ebr ebr_;
  Root* root_ = nullptr;
};

// ------------------------------------------------------------------ stack
template <unsigned Faults = kNoFaults>
class IzraelevitzStack {
  using R = izraelevitz::Rule<Faults>;

 public:
  struct Root {
    static constexpr std::uint32_t kTypeTag = 0x42A5'0002;
    static constexpr std::uint32_t kTypeVersion = 1;
    static constexpr const char* kTypeName = "baselines::IzraelevitzStack";
    alignas(64) std::atomic<PNode*> top{nullptr};
  };

  IzraelevitzStack(pmem::Pool& pool, std::string_view name, int max_threads, std::size_t value_size = 8)
      : pool_(pool), max_(max_threads), alloc_(pool, value_size), ebr_(max_threads) {
    if (pool.has_root(name)) {
      root_ = pool.root<Root>(name);  // the pool recovered the heap (recover_root)
    } else {
      root_ = pool.create_root<Root>(name);  // persisted by create_root
    }
  }

  void push(int tid, std::int64_t v) {
    check_tid(tid, max_, "IzraelevitzStack");
    PNode* node = alloc_.make(tid, v);
    auto guard = ebr_.pin(tid);
    sync::Backoff backoff;
    for (;;) {
      PNode* top = R::load_p(root_->top);
      // Relaxed: the node is private until the CAS publishes it (release).
      node->next.store(top, std::memory_order_relaxed);
      R::node_p(node, alloc_.node_size());
      // CRASH: once this CAS is durable the element is on the stack.
      if (R::cas_p(root_->top, top, node)) break;
      backoff.pause();
    }
    R::end_op();
  }

  bool try_pop(int tid, std::int64_t* out) {
    check_tid(tid, max_, "IzraelevitzStack");
    PNode* retired = nullptr;
    {
      auto guard = ebr_.pin(tid);
      sync::Backoff backoff;
      for (;;) {
        PNode* top = R::load_p(root_->top);
        if (top == nullptr) break;
        PNode* next = R::load_p(top->next);
        const std::int64_t v = top->value;
        persist::pwb(&top->value);  // PERSIST: shared load rule
        persist::psync();
        PNode* t = top;
        if (R::cas_p(root_->top, t, next)) {
          *out = v;
          retired = top;
          break;
        }
        backoff.pause();
      }
      R::end_op();
    }
    if (retired != nullptr) alloc_.retire(ebr_, tid, retired);
    return retired != nullptr;
  }

  // Top to bottom. Not concurrent with updates.
  std::vector<std::int64_t> snapshot() const {
    std::vector<std::int64_t> r;
    ListWalk walk;
    for (PNode* n = root_->top.load(std::memory_order_acquire); n != nullptr;
         n = walk.next(n))
      r.push_back(n->value);
    return r;
  }

  // Root's recover hook (pmem/root_registry.h): the stack from the durable
  // top. Nothing to repair.
  static void recover_root(pmem::Pool&, Root* r, const std::function<void(void*)>& mark) {
    ListWalk walk;
    for (PNode* n = r->top.load(std::memory_order_relaxed); n != nullptr; n = walk.next(n)) mark(n);
  }

 private:
  pmem::Pool& pool_;
  int max_;
  NodeAlloc alloc_;
  sync::Ebr ebr_;
  Root* root_ = nullptr;
};

// The pool's recover hooks (the trace does not depend on Faults).
inline const bool kIzraelevitzQueueRootRegistered =
    pmem::register_root_type<IzraelevitzQueue<>::Root>(&IzraelevitzQueue<>::recover_root);
inline const bool kIzraelevitzStackRootRegistered =
    pmem::register_root_type<IzraelevitzStack<>::Root>(&IzraelevitzStack<>::recover_root);

}  // namespace ferrite::baselines
