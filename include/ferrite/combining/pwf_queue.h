// ferrite/combining/pwf_queue.h — PWFqueue: a detectably recoverable,
// wait-free FIFO queue on two PWFcomb instances (structure "pwf-queue").
//
// Paper: PBcomb/PWFcomb (PPoPP'22) §5 "PWFQueue" (the persistent SimQueue);
// Algorithms 3–4 for each instance. The queue is a singly linked list whose
// first node is a dummy. Instance IE serialises enqueuers, ID dequeuers, so
// enqueues and dequeues run in parallel.
//   IE state: three node pointers (tail, first, last). An enqueue combiner
//     cannot link its new nodes to the shared list before its SC succeeds
//     (a losing combiner would corrupt it), so it builds a *local* list
//     first..last of new nodes and installs it in its state: the list is then
//     in two parts, ...->tail and first->...->last. Every thread (enqueuers and
//     dequeuers) links the parts, tail->next := first, before serving; an
//     enqueue combiner then continues from (last, ∅, ∅).
//   ID state: head (the dummy).
//
// Thread safety: enqueue/dequeue/recover_* are safe from distinct thread ids:
// enqueue/dequeue take ids in [0, threads) of the attach, recover_* any id
// below the capacity n the queue was created for (attach asks for any 1..n
// threads; PWFcomb's "Thread capacity"). Tags: both instances use full-seq tags (kSeqTags): a thread's seq
// advances on the other instance too, so its parity on one instance does not
// alternate.
//
// Invariants:
//   Q1 A node's value is written once, before the IE SC that installs it; its
//      next is written once (0 -> successor, by CAS, the same value by every
//      linker). Nodes are never recycled while the process runs (the paper
//      leaves PWFqueue garbage collection as future work; so does Ferrite).
//   Q2 A dequeue combiner never passes `limit` = the last node of an IE state
//      it read (validated), and before it serves a dequeue that returns a
//      node it makes that IE state durable (IE.ensure_durable): a dequeued
//      value is never the value of an enqueue whose effect could be lost
//      (the role PBqueue's oldTail plays; the paper's PWFqueue text omits it,
//      see docs/combining-pwf.md).
//
//   Q3 A dequeue combiner reads IE's state with at most kReadAttempts
//      validated reads (each failure means an IE round completed meanwhile:
//      an unbounded retry could starve under a stream of enqueue rounds).
//      Then it probes: it runs an IE request of its own (kind kProbe, a seq
//      from a space of its own, kProbeSeqBit) that enqueues nothing and
//      answers the linked tail of the state it is served in. PWFcomb serves
//      it within two attempts (Alg. 3–4) and makes that state durable
//      before apply returns, so the tail is a Q2 limit and dequeue stays
//      wait-free. The `probe` ablation (kProbeAlways) always probes.
//
// Persistence invariants (paper §5):
//   P1 new nodes (value, next) are written back before the IE StateRec and the
//      fence (persist::publish_fence) of Alg. 4 l.28–29, hence before the SC publishes them;
//   P2 the enqueue combiner that links the two parts and moves tail to `last`
//      writes back the connecting pointer tail->next before its StateRec and
//      the fence, hence before its SC (broken variant kNoConnectPwb skips it);
//   P3 dequeuers persist only their StateRec (head, responses, tags).
//
// Recovery: the pool recovers when it opens (pmem::Pool::recover):
// PWFQueueRoot's registered hook (recover_root), from the root alone, first
// makes the list exactly the durable IE state (relink: re-links the two
// parts, clears a stale next after its last node; in memory only, redone by
// every recovery; idempotent),
// then traces the live nodes from the persisted head (plus IE's tail and
// first..last, which IE may still link) and the StateRecs, so the heap
// rebuilds its free lists from everything else. attach() repeats relink
// (a no-op after the hook) and frees nothing. recover_enqueue/
// recover_dequeue: Alg. 3 l.4–7 on the instance the operation belongs to.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "ferrite/combining/common.h"
#include "ferrite/combining/pwfcomb.h"
#include "ferrite/combining/validate.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/sync/thread_registry.h"
#include "ferrite/pmem/root_registry.h"
#include "ferrite/sync/cache_padded.h"

namespace ferrite::combining {

struct PWFQueueNode {
  std::atomic<std::int64_t> value{0};
  std::atomic<std::uint64_t> next{0};  // address, 0 = none
};
static_assert(sizeof(PWFQueueNode) == 16);

namespace pwf_queue_detail {
inline PWFQueueNode* node(std::uint64_t a) { return reinterpret_cast<PWFQueueNode*>(a); }
// An IE request kind that enqueues nothing: its response is the tail of the
// linked list in the state it is served in (see PWFDeqObject).
inline constexpr std::int32_t kProbe = -1;
// Probe requests take their seqs from a space of their own (bit 61 set), so
// a probe never takes a seq the caller may give one of its own operations.
inline constexpr std::uint64_t kProbeSeqBit = std::uint64_t{1} << 61;
// Validated reads of IE's state a dequeue combiner tries before it probes.
inline constexpr int kReadAttempts = 2;
// tail->next := first. Every linker stores the same value (Q1), so a CAS
// from 0 is enough; acq_rel orders it with the node contents it publishes.
inline void link(std::uint64_t tail, std::uint64_t first) {
  std::uint64_t expected = 0;
  node(tail)->next.compare_exchange_strong(expected, first, std::memory_order_acq_rel,
                                           std::memory_order_acquire);
}
}  // namespace pwf_queue_detail

// IE: the enqueuers' sequential object.
template <unsigned kFaults>
class PWFEnqObject {
 public:
  static constexpr std::size_t kStateWords = 3;  // tail, first, last
  static constexpr std::size_t kFixedWords = 3;
  static constexpr bool kSeqTags = true;

  PWFEnqObject(pmem::Pool& pool, int n)
      : pool_(pool), per_(std::make_unique<sync::CachePadded<PerThread>[]>(static_cast<std::size_t>(n))) {}
  std::size_t used_state_words(const std::uint64_t*) const { return 3; }

  bool combine(int p, std::uint64_t* st, std::span<PWFEntry> batch, const PWFValidator&) {
    auto& me = *per_[static_cast<std::size_t>(p)];
    std::uint64_t tail = st[0], first = st[1], last = st[2];
    me.conn = 0;
    if (first != 0) {  // link the two parts before serving
      pwf_queue_detail::link(tail, first);
      me.conn = tail;  // P2: written back in persist_side
      tail = last;
      first = last = 0;
    }
    PWFQueueNode* prev = nullptr;
    for (auto& e : batch) {
      if (e.kind == pwf_queue_detail::kProbe) {
        // Linearized before this round's enqueues: the end of the linked
        // list (everything enqueued by earlier rounds, linked above).
        e.ret = tail;
        continue;
      }
      PWFQueueNode* nd = take(p, me);
      // Relaxed: nd is private to this attempt until the SC (release).
      nd->value.store(e.arg, std::memory_order_relaxed);
      nd->next.store(0, std::memory_order_relaxed);
      const auto a = reinterpret_cast<std::uint64_t>(nd);
      if (prev == nullptr) first = a;
      else prev->next.store(a, std::memory_order_relaxed);
      prev = nd;
      last = a;
      e.ret = kAckWord;
    }
    st[0] = tail;
    st[1] = first;
    st[2] = last;
    return true;
  }
  void persist_side(int p) {
    auto& me = *per_[static_cast<std::size_t>(p)];
    me.wb.reset();
    // PERSIST: P1 new nodes before the StateRec + fence (Alg. 4 l.28–29).
    for (PWFQueueNode* nd : me.taken) me.wb.add(nd, sizeof *nd);
    if constexpr ((kFaults & pwf_fault::kNoConnectPwb) == 0) {
      // PERSIST: P2 the connecting pointer, before our SC moves tail past it.
      if (me.conn != 0) me.wb.add(&pwf_queue_detail::node(me.conn)->next, sizeof(std::uint64_t));
    }
  }
  void on_commit(int p) { per_[static_cast<std::size_t>(p)]->taken.clear(); }
  void on_abort(int p) {
    auto& me = *per_[static_cast<std::size_t>(p)];
    // Never published (only our unpublished StateRec named them): reuse.
    for (auto it = me.taken.rbegin(); it != me.taken.rend(); ++it) me.spare.push_back(*it);
    me.taken.clear();
  }

 private:
  struct PerThread {
    std::vector<PWFQueueNode*> taken, spare;
    std::uint64_t conn = 0;
    LineWriteback wb;
  };
  PWFQueueNode* take(int p, PerThread& me) {
    PWFQueueNode* nd;
    if (!me.spare.empty()) {
      nd = me.spare.back();
      me.spare.pop_back();
    } else {
      nd = static_cast<PWFQueueNode*>(pool_.heap().alloc(sizeof(PWFQueueNode), p));  // arena p
    }
    me.taken.push_back(nd);
    return nd;
  }
  pmem::Pool& pool_;
  std::unique_ptr<sync::CachePadded<PerThread>[]> per_;
};

// ID: the dequeuers' sequential object. Reads IE through `enq`.
template <class EnqComb, unsigned kFaults = pwf_fault::kNone>
class PWFDeqObject {
 public:
  static constexpr std::size_t kStateWords = 1;  // head (dummy)
  static constexpr std::size_t kFixedWords = 1;
  static constexpr bool kSeqTags = true;

  explicit PWFDeqObject(EnqComb** enq) : enq_(enq) {}
  std::size_t used_state_words(const std::uint64_t*) const { return 1; }

  bool combine(int p, std::uint64_t* st, std::span<PWFEntry> batch, const PWFValidator&) {
    using pwf_queue_detail::node;
    std::uint64_t head = st[0];
    std::uint64_t es[3];
    EnqComb& e = **enq_;
    // Q3: a bounded number of validated reads of IE's state; each failure
    // means an IE round completed meanwhile, so a stream of enqueue rounds
    // could starve an unbounded read loop. Then the probe: an IE request of
    // our own (wait-free, PWFcomb Alg. 3–4) whose response is the linked
    // tail of the state it was served in, which IE made durable before
    // apply returned (Alg. 4 l.32–33 or the helper write-back l.38–48).
    std::uint64_t s_e = 0;
    if constexpr ((kFaults & pwf_fault::kProbeAlways) == 0) s_e = e.try_read_state(es, 3, pwf_queue_detail::kReadAttempts);
    std::uint64_t limit;
    if (s_e != 0) {
      if (es[1] != 0) pwf_queue_detail::link(es[0], es[1]);  // link (no pwb: P3)
      limit = es[1] != 0 ? es[2] : es[0];
    } else {
      const std::uint64_t tag = e.tag_now(p);
      const std::uint64_t seq = (tag & pwf_queue_detail::kProbeSeqBit) != 0 ? tag + 1 : (pwf_queue_detail::kProbeSeqBit | 1u);
      // apply_slot: p may be a recovered id >= the attach's thread count.
      limit = e.apply_slot(p, seq, pwf_queue_detail::kProbe, 0);
      s_e = 0;  // the probe's state is durable already: no ensure_durable below
    }
    bool durable = false;
    for (auto& r : batch) {
      std::uint64_t nx = 0;
      // Q2: never pass the last node of the IE state we read.
      if (head != limit) nx = node(head)->next.load(std::memory_order_acquire);
      if (nx == 0) {
        r.ret = kEmptyWord;
        continue;
      }
      if (!durable) {
        // Q2: the IE state naming this node must be durable before a
        // dequeue can return its value.
        if (s_e != 0) e.ensure_durable(pwf_detail::version(s_e));
        durable = true;
      }
      r.ret = value_word(node(nx)->value.load(std::memory_order_relaxed));
      head = nx;
    }
    st[0] = head;
    return true;
  }
  void persist_side(int) {}
  void on_commit(int) {}
  void on_abort(int) {}

 private:
  EnqComb** enq_;
};

struct PWFQueueRoot {
  static constexpr std::uint32_t kTypeTag = 0x50574651;  // "PWFQ"
  static constexpr std::uint32_t kTypeVersion = 2;  // v2: PWFCombLayout holds StateRec pointers
  static constexpr const char* kTypeName = "combining::PWFQueue";
  PWFCombLayout enq;
  PWFCombLayout deq;
  PWFQueueRoot(const PWFCombLayout& e, const PWFCombLayout& d) : enq(e), deq(d) {}
};

template <unsigned kFaults = pwf_fault::kNone>
class PWFQueue {
 public:
  using EnqObject = PWFEnqObject<kFaults>;
  using EnqComb = PWFComb<EnqObject, kFaults>;
  using DeqObject = PWFDeqObject<EnqComb, kFaults>;
  using DeqComb = PWFComb<DeqObject, kFaults>;

  static std::unique_ptr<PWFQueue> create(pmem::Pool& pool, std::string_view name, int threads = kDefaultThreads,
                                          PWFOptions opts = {}) {
    if (threads <= 0 || threads > kPWFMaxThreads)
      throw std::invalid_argument("PWFQueue: threads must be in [1, " + std::to_string(kPWFMaxThreads) + "]");
    auto* dummy = static_cast<PWFQueueNode*>(pool.heap().alloc(sizeof(PWFQueueNode), 0));
    // PERSIST: the dummy is never written back. Its value word is never
    // read, and its next word, whatever the media holds, is cleared by every
    // recovery's relink (the dummy is the durable last node until an enqueue
    // round's P2 write-back links past it). Mutation testing found the
    // write-back never needed (docs/crash.md §6).
    new (dummy) PWFQueueNode();
    const auto d = reinterpret_cast<std::uint64_t>(dummy);
    PWFCombLayout le, ld;
    const std::uint64_t einit[3] = {d, 0, 0};
    EnqComb::create_layout(pool, threads, &le, einit);
    DeqComb::create_layout(pool, threads, &ld, &d);
    auto* root = pool.create_root<PWFQueueRoot>(name, le, ld);
    return std::unique_ptr<PWFQueue>(new PWFQueue(pool, root, threads, opts));
  }
  // Re-attaches after a restart (relink, idempotent). Frees nothing: the
  // pool recovered the heap when it opened.
  static std::unique_ptr<PWFQueue> attach(pmem::Pool& pool, std::string_view name, int threads = kAsCreated,
                                          PWFOptions opts = {}) {
    auto* root = pool.root<PWFQueueRoot>(name);
    std::unique_ptr<PWFQueue> h(new PWFQueue(pool, root, threads, opts));  // validates both layouts
    // A pool opened without recovery ran no hook: validate before relink
    // writes through the state's pointers.
    if (!pool.heap().recovered()) h->validate(pool);
    h->relink();
    return h;
  }
  // PWFQueueRoot's recover hook (pmem/root_registry.h): relink (the trace
  // follows next pointers, so a stale link must be cleared first), then
  // mark the StateRecs and the live nodes.
  static void recover_root(pmem::Pool& pool, PWFQueueRoot* root, const std::function<void(void*)>& mark) {
    PWFQueue q(pool, root, pwf_capacity(root->enq, 1), PWFOptions{});  // validates both layouts
    q.validate(pool);  // before relink writes through tail / last
    q.relink();
    q.trace(mark);
  }
  // Validating (combining/validate.h): IE's Tail, First, Last and ID's
  // Head are nodes (inside the pool, 8-aligned, heap block starts of at
  // least 16 bytes; First and Last both 0 or both nodes), and the lists the
  // trace walks — from Head, and from First — hold only nodes, end at 0
  // (after relink's repair: tail->next := First, end->next := 0, which it
  // may write) and never loop. Damage throws PoolError(kCorrupt) naming the
  // offset of the word that holds the bad pointer.
  void validate(const pmem::Pool& pool) const {
    using pwf_queue_detail::node;
    const Damage d{pool, "PWFQueue"};
    const std::uint64_t* es = enq_.current_state();
    const std::uint64_t* ds = deq_.current_state();
    auto ok = [&](std::uint64_t a) { return d.block_ok(node(a), sizeof(PWFQueueNode)); };
    if (!ok(es[0])) d.fail("Tail is not a node", &es[0], es[0]);
    if (!ok(ds[0])) d.fail("Head is not a node", &ds[0], ds[0]);
    if ((es[1] == 0) != (es[2] == 0)) d.fail("First and Last disagree (one is 0)", &es[1], es[1]);
    if (es[1] != 0 && !ok(es[1])) d.fail("First is not a node", &es[1], es[1]);
    if (es[2] != 0 && !ok(es[2])) d.fail("Last is not a node", &es[2], es[2]);
    const std::uint64_t end = es[1] != 0 ? es[2] : es[0];  // relink's: its next becomes 0
    // The walks as relink leaves them: Tail's next is First (when First is
    // set), end's next is 0.
    // Each walk must reach `end`: a list that stops short (a next pointer
    // zeroed or redirected to 0) would make the queue answer fewer elements
    // while every pointer on it is a node (the fuzz campaign's zeroed node
    // page: a PWF queue of 8 answered none).
    auto walk = [&](const std::uint64_t* from, const char* what) {
      std::unordered_set<std::uint64_t> seen;
      const void* at = from;
      for (std::uint64_t a = *from;;) {
        if (a == 0) d.fail(std::string("the list from ") + what + " ends before its last node", at, a);
        if (!ok(a)) d.fail(std::string("a next pointer on the list from ") + what + " names no node", at, a);
        if (!seen.insert(a).second) d.fail(std::string("the list from ") + what + " loops", at, a);
        if (a == end) break;
        at = &node(a)->next;
        a = (a == es[0] && es[1] != 0) ? es[1] : node(a)->next.load(std::memory_order_relaxed);
      }
    };
    walk(&ds[0], "Head");
    if (es[1] != 0) walk(&es[1], "First");
  }

  void enqueue(int tid, std::uint64_t seq, std::int64_t v) {
    check_value(v, "PWFQueue::enqueue");
    enq_.apply(tid, seq, static_cast<std::int32_t>(OpCode::kEnqueue), v);
  }
  std::optional<std::int64_t> dequeue(int tid, std::uint64_t seq) {
    return decode(deq_.apply(tid, seq, static_cast<std::int32_t>(OpCode::kDequeue), 0));
  }
  void recover_enqueue(int tid, std::uint64_t seq, std::int64_t v) {
    enq_.recover(tid, seq, static_cast<std::int32_t>(OpCode::kEnqueue), v);
  }
  std::optional<std::int64_t> recover_dequeue(int tid, std::uint64_t seq) {
    return decode(deq_.recover(tid, seq, static_cast<std::int32_t>(OpCode::kDequeue), 0));
  }

  // Front to back (quiescent use only).
  std::vector<std::int64_t> contents() const {
    std::vector<std::int64_t> out;
    const std::uint64_t* es = enq_.current_state();
    std::uint64_t a = deq_.current_state()[0];
    const std::uint64_t limit = es[1] != 0 ? es[2] : es[0];
    while (a != limit) {
      std::uint64_t nx = pwf_queue_detail::node(a)->next.load(std::memory_order_acquire);
      if (nx == 0 && a == es[0] && es[1] != 0) nx = es[1];  // parts not linked yet
      if (nx == 0) break;
      out.push_back(pwf_queue_detail::node(nx)->value.load(std::memory_order_relaxed));
      a = nx;
    }
    return out;
  }
  void trace(const std::function<void(void*)>& mark) const {
    enq_.for_each_record(mark);
    deq_.for_each_record(mark);
    const std::uint64_t* es = enq_.current_state();
    mark(reinterpret_cast<void*>(es[0]));  // IE may still link tail->next
    for (std::uint64_t a = deq_.current_state()[0]; a != 0;
         a = pwf_queue_detail::node(a)->next.load(std::memory_order_relaxed))
      mark(reinterpret_cast<void*>(a));
    for (std::uint64_t a = es[1]; a != 0; a = pwf_queue_detail::node(a)->next.load(std::memory_order_relaxed))
      mark(reinterpret_cast<void*>(a));
  }
  double combining_degree() const {
    const auto re = enq_.rounds(), rd = deq_.rounds();
    return re + rd == 0 ? 0.0
                        : (enq_.combining_degree() * static_cast<double>(re) +
                           deq_.combining_degree() * static_cast<double>(rd)) /
                              static_cast<double>(re + rd);
  }
  EnqComb& enq() { return enq_; }
  DeqComb& deq() { return deq_; }

  // ---- with a thread handle (sync::ThreadRegistry; no seq kept by the
  // caller: durably linearizable, not detectable — see ferrite/detectable.h)
  void enqueue(const Thread& t, std::int64_t v) { enqueue(t.id(), enq_.fresh_seq(t.id()), v); }
  std::optional<std::int64_t> dequeue(const Thread& t) { return dequeue(t.id(), deq_.fresh_seq(t.id())); }

  // ---- the vocabulary of ferrite/op.h (Detectable<S>, adapters) ----
  // One convention for every PB and PWF structure: apply runs an op::Op with
  // the caller's seq; recover answers the same response for an operation
  // pending at a crash, completing it if it had not taken effect.
  op::Response apply(int tid, std::uint64_t seq, const op::Op& o) {
    if (o.kind == op::kEnqueue) return enqueue(tid, seq, o.arg), op::Response::ack();
    if (o.kind == op::kDequeue) return op::Response::from(dequeue(tid, seq));
    unsupported_op("PWFQueue", o);
  }
  op::Response recover(int tid, std::uint64_t seq, const op::Op& o) {
    if (o.kind == op::kEnqueue) return recover_enqueue(tid, seq, o.arg), op::Response::ack();
    if (o.kind == op::kDequeue) return op::Response::from(recover_dequeue(tid, seq));
    unsupported_op("PWFQueue", o);
  }

 private:
  PWFQueue(pmem::Pool& pool, PWFQueueRoot* root, int n, PWFOptions opts)
      : eobj_(pool, pwf_capacity(root->enq, n)), enq_(pool, &root->enq, n, eobj_, opts), enq_ptr_(&enq_), dobj_(&enq_ptr_),
        deq_(pool, &root->deq, n, dobj_, opts) {}
  // Recovery: make the list exactly the durable IE state. The connecting
  // pointer tail->next := first may be missing (a dequeuer's link is not
  // persisted, P3), and the next of the durable last node may hold a link to
  // nodes of an IE state that never became durable (a dequeuer linked it,
  // an eviction persisted it): such a stale link would make a later CAS
  // 0 -> first fail and lose enqueues, so it is cleared.
  // The repairs are not written back. CRASH: a crash that loses them is
  // repaired by the next recovery, which recomputes both from the durable
  // IE state; and they are never needed on the media by a later state: the
  // next enqueue round writes tail->next itself before its StateRec (P2)
  // and overwrites the cleared next of `end` the same way. (Mutation testing
  // found the write-backs and the psync never needed, also with recovery
  // itself crashed: docs/crash.md §6.)
  void relink() {
    using pwf_queue_detail::node;
    const std::uint64_t* es = enq_.current_state();
    const std::uint64_t tail = es[0], first = es[1], last = es[2];
    if (first != 0) node(tail)->next.store(first, std::memory_order_relaxed);
    const std::uint64_t end = first != 0 ? last : tail;
    if (node(end)->next.load(std::memory_order_relaxed) != 0) node(end)->next.store(0, std::memory_order_relaxed);
  }
  static std::optional<std::int64_t> decode(std::uint64_t w) {
    if (w == kEmptyWord) return std::nullopt;
    return word_value(w);
  }
  EnqObject eobj_;
  EnqComb enq_;
  EnqComb* enq_ptr_;
  DeqObject dobj_;
  DeqComb deq_;
};

// The pool's recover hook for PWFQueueRoot (fault-independent: relink and
// the trace persist/read the same words in every variant).
inline const bool kPWFQueueRootRegistered = pmem::register_root_type<PWFQueueRoot>(&PWFQueue<>::recover_root);

}  // namespace ferrite::combining
