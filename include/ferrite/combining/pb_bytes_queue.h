// ferrite/combining/pb_bytes_queue.h — PBBytesQueue: a durable FIFO queue
// of byte strings (jobs of 0 bytes to 16 MiB, the empty one included): the
// PBqueue of pb_queue.h ("Recoverable and Detectable Software Combining",
// Fatourou, Kallimanis, Kosmas, PPoPP'22, §5, Alg. 5–7) whose values are the
// offsets of payload blocks (pmem/payload.h).
//
// What it is. One algorithm, not two: PBQueue<Faults, PBBytesQueueRoot>
// runs unchanged; a node's value word holds a payload offset (never a
// sentinel: offsets are positive and below the pool size). This class adds
// the payload protocol around it — write and publish (P1), copy out with
// validation, reclaim — and its own root type (PBBytesQueueRoot: the same
// layout under its own tag "PBQB" and version), so an int64 queue is never
// attached as a byte queue nor the reverse (Pool::root checks the tag), and
// the pool runs this type's recovery hook, which also keeps the payloads.
//
// Thread safety: enqueue/dequeue are safe from distinct thread ids
// concurrently (one operation per id at a time, ids in [0, threads) of the
// attach); values()/payload_offsets() are for quiescent inspection.
//
// Invariants.
//  * A payload is named by the durable state in exactly one place, or in
//    none (then it is garbage for the pool's recovery): a node after Head
//    (Head exclusive .. Tail inclusive of the current EState/DState
//    records), or ReturnVal[p] of the current DState record — the response
//    of p's last dequeue, which names the payload until p's NEXT dequeue's
//    round replaces it. (Head itself, the dummy, still holds the offset of
//    the job dequeued last; that word is dead and never read.)
//  * last_[p] (DRAM, touched by thread p only) is the payload ReturnVal[p]
//    names, 0 for none. A payload is freed only by its dequeuer p, right
//    after p's next dequeue returned (its round is durable: PBcomb returns
//    after the round's psync, pbcomb.h), i.e. once no durable state names it.
//    Bound: while thread p is idle, at most one payload (its last dequeued
//    job's) stays allocated; a thread slot that is never used again (an
//    attach for fewer threads than the capacity) keeps one for good.
//  * A payload is immutable once published (P2); only its dequeuer reads
//    its bytes, so no epoch is needed: no other reader can hold the offset.
//
// Persistence. enqueue: write_payload (its pwbs, P1: no fence), psync, then
// the int64 enqueue of the offset. The psync is needed because the thread
// that makes the node naming the payload durable is the enqueue combiner —
// another thread in general — and a fence of the combiner does not order
// this thread's write-backs (nor would a pfence of this thread order them
// before another thread's). With the psync, a durable node (Alg. 5 l.24–26)
// always names a durable payload. Dequeue persists nothing of its own: the
// response word is the combiner's (Alg. 6 l.62–66).
//
// Recovery. The pool recovers its heap when it opens: PBBytesQueueRoot's
// hook marks what PBQueue's marks (both instances' records, the nodes
// Head..Tail) and every payload the durable state names — the nodes after
// Head and every ReturnVal of the current DState record — validating each
// (mark_payload: a damaged payload, or one named twice, which the
// invariant above excludes, throws; the pool then keeps every block and
// lists the root in failed_roots, and attach refuses the queue with
// PoolError(kCorrupt) naming the reason). attach sets last_[p] :=
// ReturnVal[p], so each thread's first dequeue after a restart frees the
// payload its recovered response named. A payload written by an enqueue
// that was pending at the crash and never became durable is named by
// nothing: the pool's recovery frees it.
//
// Out of scope: detectable recovery of byte jobs (the int64 PBQueue's
// seq API is not offered here). An enqueue pending at a crash either took
// effect or not — the user re-enqueues if unsure (durable linearizability);
// a dequeue pending at a crash whose round was durable has consumed its job.
// (Detection would be short — the response word is kept until the next
// dequeue — but it needs a user-side log of (seq, op, bytes): not built.)
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "ferrite/combining/internal/bytes_faults.h"
#include "ferrite/combining/pb_queue.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/payload.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"
#include "ferrite/sync/cache_padded.h"
#include "ferrite/sync/thread_registry.h"

namespace ferrite::combining {

// The byte queue's root: PBQueueRoot's layout under its own tag and
// version (the hook registered for it also keeps the payloads).
struct PBBytesQueueRoot : PBQueueRoot {
  static constexpr std::uint32_t kTypeTag = 0x50425142;  // "PBQB"
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "combining::PBBytesQueue";
  using PBQueueRoot::PBQueueRoot;
};
static_assert(sizeof(PBBytesQueueRoot) == sizeof(PBQueueRoot));

template <unsigned Faults = kNoFaults, unsigned BFaults = bytes_fault::kNone>
class PBBytesQueue {
 public:
  using Queue = PBQueue<Faults, PBBytesQueueRoot>;
  using Node = PBQueueNode;

  static std::unique_ptr<PBBytesQueue> create(pmem::Pool& pool, std::string_view name, int threads = kDefaultThreads,
                                              int alloc_tid = 0) {
    return std::unique_ptr<PBBytesQueue>(
        new PBBytesQueue(pool, Queue::create(pool, name, threads, alloc_tid)));
  }

  // Re-attaches by name. The pool recovered the heap when it opened (this
  // type's hook kept the payloads); a queue whose hook failed there (a
  // damaged payload or list) is refused: PoolError(kCorrupt) with the
  // hook's reason — the pool kept every block, nothing was freed.
  // (The refusal is the pool's: Pool::root leaves a root whose hook failed
  // closed, for every structure — PoolOptions::damaged_roots.)
  static std::unique_ptr<PBBytesQueue> attach(pmem::Pool& pool, std::string_view name, int threads = kAsCreated) {
    std::unique_ptr<PBBytesQueue> q(new PBBytesQueue(pool, Queue::attach(pool, name, threads)));
    // CRASH: ReturnVal[p] of the current DState record names p's last
    // dequeued payload (kept by the hook); p's next dequeue frees it.
    for (std::size_t p = 0; p < q->last_.size(); ++p) {
      const std::uint64_t w = q->q_->deq_comb().response(static_cast<int>(p));
      q->last_[p].value = names_payload(w) ? w : 0;
    }
    return q;
  }

  // PBBytesQueueRoot's recover hook: PBQueue's trace, then every payload the
  // durable state names, validated (see the essay). Idempotent.
  static void recover_root(pmem::Pool& pool, PBBytesQueueRoot* root, const std::function<void(void*)>& mark) {
    Queue::trace_root(pool, root, mark);
    std::unordered_set<std::uint64_t> named;
    auto keep = [&](std::uint64_t off, const char* where) {
      if (!named.insert(off).second)
        throw pmem::PoolError(pmem::Errc::kCorrupt, "PBBytesQueue: the payload at offset " + std::to_string(off) +
                                                        " is named twice (" + where + ")");
      pmem::mark_payload(pool, off, mark);  // throws kCorrupt on a damaged payload
    };
    for_each_node(pool, root, [&](const Node* n) { keep(static_cast<std::uint64_t>(n->value), "a queue node"); });
    for (std::uint32_t q = 0; q < root->deq.threads; ++q) {
      const std::uint64_t w = pbcomb_current_response(root->deq, static_cast<int>(q));
      if (names_payload(w)) keep(w, "a dequeue response");
    }
  }

  // Appends `job` (any bytes, up to kMaxPayloadBytes). Throws PoolError
  // kFull when the pool has no room (nothing is published then).
  void enqueue(int tid, std::string_view job) {
    check_tid(tid);
    const std::uint64_t off = pmem::write_payload(*pool_, tid, job);
    // PERSIST: payload.h P1 — the payload's write-backs (issued by
    // write_payload) complete before the offset is announced: the node that
    // names it is made durable by the enqueue combiner (Alg. 5 l.24–26),
    // in general another thread, whose fences do not order our pwbs.
    if constexpr ((BFaults & bytes_fault::kNoPayloadPsync) == 0) persist::psync();
    try {
      q_->enqueue(tid, static_cast<std::int64_t>(off));  // Alg. 1 l.1 announce .. Alg. 5
    } catch (...) {
      pmem::free_payload(*pool_, tid, off);  // never published
      throw;
    }
  }
  void enqueue(const Thread& t, std::string_view job) { enqueue(t.id(), job); }

  // Removes the oldest job and returns its bytes (nullopt when empty). A
  // payload that fails validation throws PoolError(kCorrupt) naming its
  // offset (the job is consumed: its round is durable).
  std::optional<std::string> dequeue(int tid) {
    const std::optional<std::uint64_t> off = dequeue_offset(tid);
    if (!off) return std::nullopt;
    std::string out(pmem::read_payload(*pool_, *off));  // validates (P3)
    if constexpr ((BFaults & bytes_fault::kFreeAtReturn) != 0) {
      // BROKEN: ReturnVal[tid] still names the payload (until tid's next
      // dequeue): the block may be reused while durable state names it.
      pmem::free_payload(*pool_, tid, *off);
      last_[static_cast<std::size_t>(tid)].value = 0;
    }
    return out;
  }
  std::optional<std::string> dequeue(const Thread& t) { return dequeue(t.id()); }

  // Typed convenience: a trivially copyable T stored as its bytes.
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void enqueue_as(int tid, const T& v) {
    enqueue(tid, std::string_view(reinterpret_cast<const char*>(&v), sizeof v));
  }
  template <class T>
    requires std::is_trivially_copyable_v<T>
  std::optional<T> dequeue_as(int tid) {
    const std::optional<std::uint64_t> off = dequeue_offset(tid);
    if (!off) return std::nullopt;
    return pmem::read_payload_as<T>(*pool_, *off);  // throws on a size mismatch or damage
  }
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void enqueue_as(const Thread& t, const T& v) { enqueue_as<T>(t.id(), v); }
  template <class T>
    requires std::is_trivially_copyable_v<T>
  std::optional<T> dequeue_as(const Thread& t) { return dequeue_as<T>(t.id()); }

  // Quiescent: the jobs front -> back, validated (a damaged payload or list
  // throws PoolError(kCorrupt)). Modifies nothing.
  std::vector<std::string> values() const {
    std::vector<std::string> out;
    for (std::uint64_t off : payload_offsets()) out.emplace_back(pmem::read_payload(*pool_, off));
    return out;
  }
  // Quiescent: the payload offsets front -> back (throws on a broken list).
  std::vector<std::uint64_t> payload_offsets() const {
    std::vector<std::uint64_t> out;
    for_each_node(*pool_, root(), [&](const Node* n) { out.push_back(static_cast<std::uint64_t>(n->value)); });
    return out;
  }
  // Payloads held for reclamation (one per thread at most: the essay's bound).
  std::size_t held_payloads() const {
    std::size_t n = 0;
    for (const auto& l : last_) n += l.value != 0 ? 1 : 0;
    return n;
  }

  double combining_degree() const { return q_->combining_degree(); }
  Queue& queue() { return *q_; }
  pmem::Pool* pool() const { return pool_; }

 private:
  PBBytesQueue(pmem::Pool& pool, std::unique_ptr<Queue> q)
      : pool_(&pool), q_(std::move(q)), threads_(q_->deq_comb().threads()),
        last_(static_cast<std::size_t>(q_->deq_comb().max_threads())) {}

  PBBytesQueueRoot* root() const { return q_->root(); }

  void check_tid(int tid) const {
    if (tid < 0 || tid >= threads_)
      throw std::out_of_range("PBBytesQueue: thread id " + std::to_string(tid) + " not in [0, " +
                              std::to_string(threads_) + ")");
  }

  // The int64 dequeue, then the reclamation step.
  std::optional<std::uint64_t> dequeue_offset(int tid) {
    const std::optional<std::int64_t> r = q_->dequeue(tid);
    // CRASH: the round that answered is durable (PBcomb returns after its
    // psync; Alg. 2 l.12–13): the current DState record's ReturnVal[tid]
    // names *r (or empty), so the payload of tid's previous dequeue is
    // named by no durable state any more (no node: dequeued before; no
    // response: replaced) and no reader holds it — free it now.
    auto& last = last_[static_cast<std::size_t>(tid)].value;
    const std::uint64_t prev = last;
    last = r ? static_cast<std::uint64_t>(*r) : 0;
    if (prev != 0) pmem::free_payload(*pool_, tid, prev);
    if (!r) return std::nullopt;
    return static_cast<std::uint64_t>(*r);
  }

  // Calls f on every node after Head up to Tail of the current records;
  // a list that does not reach Tail (null, outside the pool, a cycle)
  // throws PoolError(kCorrupt).
  template <class F>
  static void for_each_node(const pmem::Pool& pool, PBQueueRoot* root, const F& f) {
    const Node* t = *static_cast<Node* const*>(pbcomb_current_state(root->enq));
    const Node* n = *static_cast<Node* const*>(pbcomb_current_state(root->deq));
    std::unordered_set<const Node*> seen;
    while (n != t) {
      if (n == nullptr || !pool.contains(n, sizeof(Node)) || !seen.insert(n).second)
        throw pmem::PoolError(pmem::Errc::kCorrupt, "PBBytesQueue: the list from Head does not reach Tail");
      n = n->next.load(std::memory_order_relaxed);
      if (n == nullptr || !pool.contains(n, sizeof(Node)))
        throw pmem::PoolError(pmem::Errc::kCorrupt, "PBBytesQueue: the list from Head does not reach Tail");
      f(n);
    }
  }

  pmem::Pool* pool_;
  std::unique_ptr<Queue> q_;
  int threads_;
  // last_[p]: the payload ReturnVal[p] names (0: none); thread p's only.
  std::vector<sync::CachePadded<std::uint64_t>> last_;
};

// The pool's recover hook for PBBytesQueueRoot (independent of the faults).
inline const bool kPBBytesQueueRootRegistered =
    pmem::register_root_type<PBBytesQueueRoot>(&PBBytesQueue<>::recover_root);

}  // namespace ferrite::combining
