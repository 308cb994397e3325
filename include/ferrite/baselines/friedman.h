// ferrite/baselines/friedman.h — the durable queue and the log queue of
// M. Friedman, M. Herlihy, V. Marathe, E. Petrank, "A Persistent Lock-Free
// Queue for Non-Volatile Memory", PPoPP 2018 (FHMP; the PBcomb paper's
// competitor of that name). Benchmark names: friedman-durable, friedman-log.
//
// Both are the Michael–Scott queue with persistence added as the paper
// describes:
//   durable queue (durably linearizable)
//     enqueue: persist the node before linking it; after the CAS that links
//       it, persist last->next; a helper that finds a lagging tail persists
//       last->next before moving the tail.
//     dequeue: the linearization point is a CAS on the node's deqThreadID
//       (here `deq_by`, 0 = free) claiming the node after the sentinel; the
//       claimer persists deq_by, stores the value in returnedValues[tid] and
//       persists it, then moves head. A thread that finds the node already
//       claimed helps: persists deq_by, writes returnedValues of the claimer,
//       moves head. An empty dequeue writes EMPTY to returnedValues[tid].
//     recovery: walk from the durable head over claimed nodes (their
//       dequeue took effect), set head to the last claimed one and tail to
//       the last node. The pool runs it when it opens (Root's registered
//       hook, recover_root: repair — idempotent —, then mark the list from
//       the new head; pmem::Pool::recover); the constructor, attaching,
//       runs the repair again (a no-op then) and frees nothing.
//   log queue (detectable): every operation first writes a per-thread log
//     entry (operation, argument, sequence number) and persists it; nodes
//     carry the enqueuer's log tag (`enq_by`) and the claimer's log tag
//     (`deq_by`); the result of an operation is recorded in its log entry.
//     recover_op answers from the log, completing the operation if it had
//     not taken effect.
//
// Deviations from the paper's pseudocode (all for this code base's memory
// model and reclamation, see docs/baselines.md):
//   * the paper's FLUSH is pwb + psync: FHMP assume a flush completes (is
//     durable) before the next instruction; with only pfence (ordering) the
//     crash simulator finds 2-thread violations (B's durable effects depend
//     on A's link that is only ordered in A's pending write-backs). Only the
//     owner-private log announcement uses pwb + pfence. On x86 psync and
//     pfence are both sfence.
//   * the dequeuer pwbs first->next before claiming `next`: the link it
//     relies on must be durable before its claim is (otherwise a crash could
//     keep a completed dequeue of a node whose enqueue is lost).
//   * head is written back after a successful head CAS, and the old sentinel
//     is retired to EBR only after the operation's psync: recovery walks from
//     the durable head, which must never reach a reused block.
//   * log queue: one log entry per thread, reused (its state word carries
//     the sequence number), instead of a freshly allocated LogEntry per
//     operation; the dequeued value is stored in the entry (not a node
//     pointer) so a node can be reclaimed; state and result are one 16-byte
//     word updated by CAS (helpers and the owner never overwrite a newer
//     operation's result); a dequeuer (or helper) marks the enqueuer's entry
//     done before moving head past the node, so an enqueue whose node was
//     reclaimed is still known to have taken effect.
//
// Thread safety: lock-free; enqueue/try_dequeue concurrently for distinct
// tids in [0, max_threads).
//
// Persistence invariants: (1) a node is durable before the link to it;
// (2) a link is durable before any claim of the linked node; (3) a claim is
// durable before the claimer's returnedValues/log result, which is durable
// before head passes the node; (4) log: an entry is durable before the
// operation's first shared update.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ferrite/baselines/persistent_common.h"
#include "ferrite/persist/persist.h"
#include "ferrite/sync/dwcas.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"
#include "ferrite/sync/backoff.h"
#include "ferrite/sync/cache_padded.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::baselines {

namespace friedman {

inline constexpr int kMaxThreads = 256;
inline constexpr std::uint64_t kSeqMask = (std::uint64_t{1} << 48) - 1;

// (tid, seq) → nonzero tag; 0 means "nobody".
inline std::uint64_t make_tag(int tid, std::uint64_t seq) {
  return (static_cast<std::uint64_t>(tid + 1) << 48) | (seq & kSeqMask);
}
inline int tag_tid(std::uint64_t tag) { return static_cast<int>(tag >> 48) - 1; }
inline std::uint64_t tag_seq(std::uint64_t tag) { return tag & kSeqMask; }

// 16-byte word: state = (seq << 1) | done, result. Updated by an inline
// lock cmpxchg16b (-mcx16), never torn.
struct alignas(16) LogWord {
  std::uint64_t state;
  std::int64_t result;
};
// The 16-byte CAS lives in sync/dwcas.h (inline lock cmpxchg16b).
inline bool cas16(LogWord* p, LogWord expected, LogWord desired) { return sync::dwcas(p, expected, desired); }
inline LogWord load16(LogWord* p) { return sync::dwload(p); }
inline void store16(LogWord* p, LogWord v) { sync::dwstore(p, v); }

enum LogOp : std::int64_t { kLogNone = 0, kLogEnq = 1, kLogDeq = 2 };

// One per thread, alone on a cache line.
struct alignas(64) LogEntry {
  LogWord word{0, 0};  // (seq << 1) | done, result (dequeue: value or kEmptyValue)
  std::int64_t op = kLogNone;
  std::int64_t arg = 0;
  PNode* node = nullptr;  // enqueue: its node
};
static_assert(sizeof(LogEntry) == 64);

}  // namespace friedman

template <bool kLog, unsigned Faults = kNoFaults>
class FriedmanQueue {
 public:
  struct Root {
    static constexpr std::uint32_t kTypeTag = kLog ? 0x42A5'0011 : 0x42A5'0010;
    static constexpr std::uint32_t kTypeVersion = 1;
    static constexpr const char* kTypeName =
        kLog ? "baselines::FriedmanLogQueue" : "baselines::FriedmanDurableQueue";
    alignas(64) std::atomic<PNode*> head{nullptr};
    alignas(64) std::atomic<PNode*> tail{nullptr};
    // Durable queue: returnedValues[tid], one per cache line.
    sync::CachePadded<std::atomic<std::int64_t>> returned[friedman::kMaxThreads];
    // Log queue: the per-thread log entries.
    friedman::LogEntry log[kLog ? friedman::kMaxThreads : 1];
  };

  // Creates root `name` or, if present, attaches and runs recovery (the
  // caller guarantees exclusive use of the pool during the call). Attaching
  // frees nothing: the pool recovered the heap when it opened.
  FriedmanQueue(pmem::Pool& pool, std::string_view name, int max_threads, std::size_t value_size = 8)
      : pool_(pool), max_(max_threads), alloc_(pool, value_size), ebr_(max_threads),
        retire_(static_cast<std::size_t>(max_threads > 0 ? max_threads : 1)) {
    if (max_threads <= 0 || max_threads > friedman::kMaxThreads)
      throw std::invalid_argument("FriedmanQueue: max_threads must be in [1, 256]");
    if (pool.has_root(name)) {
      root_ = pool.root<Root>(name);
      recover();
    } else {
      root_ = pool.create_root<Root>(name);
      PNode* s = alloc_.make(0, 0);
      persist::pwb(s, alloc_.node_size());
      persist::psync();
      root_->head.store(s, std::memory_order_relaxed);  // relaxed: single-threaded setup
      root_->tail.store(s, std::memory_order_relaxed);
      persist::pwb(&root_->head);
      persist::pwb(&root_->tail);
      persist::psync();
    }
  }

  void enqueue(int tid, std::uint64_t seq, std::int64_t v) {
    check_tid(tid, max_, "FriedmanQueue");
    if (v == kEmptyValue) throw std::invalid_argument("FriedmanQueue: INT64_MIN is reserved");
    PNode* node = alloc_.make(tid, v);
    if constexpr (kLog) node->enq_by = friedman::make_tag(tid, seq);
    // PERSIST: FHMP enq: FLUSH(node) before it is linked (inv. 1).
    if constexpr ((Faults & kNoNodePwb) == 0) persist::pwb(node, alloc_.node_size());
    if constexpr (kLog) announce(tid, seq, friedman::kLogEnq, v, node);
    persist::psync();
    auto guard = ebr_.pin(tid);
    sync::Backoff backoff;
    for (;;) {
      PNode* last = root_->tail.load(std::memory_order_acquire);
      PNode* next = last->next.load(std::memory_order_acquire);
      if (last != root_->tail.load(std::memory_order_acquire)) continue;
      if (next == nullptr) {
        PNode* expected = nullptr;
        if (last->next.compare_exchange_strong(expected, node, std::memory_order_acq_rel,
                                               std::memory_order_acquire)) {
          // PERSIST: FHMP enq: FLUSH(&last->next) after the linking CAS.
          if constexpr ((Faults & kNoLinkPwb) == 0) persist::pwb(&last->next);
          persist::psync();
          if constexpr (kLog) mark_done(tid, seq, 0);
          root_->tail.compare_exchange_strong(last, node, std::memory_order_acq_rel);
          end_op();
          return;
        }
        backoff.pause();
      } else {
        // PERSIST: a helper persists the link before moving the tail past it.
        persist::pwb(&last->next);
        persist::psync();
        root_->tail.compare_exchange_strong(last, next, std::memory_order_acq_rel);
      }
    }
  }

  bool try_dequeue(int tid, std::uint64_t seq, std::int64_t* out) {
    check_tid(tid, max_, "FriedmanQueue");
    if constexpr (kLog) {
      announce(tid, seq, friedman::kLogDeq, 0, nullptr);
      persist::psync();
    }
    const std::uint64_t my_tag = kLog ? friedman::make_tag(tid, seq) : static_cast<std::uint64_t>(tid + 1);
    auto& retired = retire_[tid].value;  // old sentinels we unlinked (owner-only)
    bool ok = false;
    {
      auto guard = ebr_.pin(tid);
      sync::Backoff backoff;
      for (;;) {
        PNode* first = root_->head.load(std::memory_order_acquire);
        PNode* last = root_->tail.load(std::memory_order_acquire);
        PNode* next = first->next.load(std::memory_order_acquire);
        if (first != root_->head.load(std::memory_order_acquire)) continue;
        if (first == last) {
          if (next == nullptr) {
            // PERSIST: FHMP deq: returnedValues[tid] = EMPTY; FLUSH.
            if constexpr (kLog) {
              mark_done(tid, seq, kEmptyValue);
            } else {
              root_->returned[tid]->store(kEmptyValue, std::memory_order_relaxed);
              persist::pwb(&root_->returned[tid].value);
            }
            break;
          }
          persist::pwb(&last->next);
          persist::psync();
          root_->tail.compare_exchange_strong(last, next, std::memory_order_acq_rel);
          continue;
        }
        // PERSIST: (deviation) the link first->next is durable before our
        // claim of `next` (inv. 2).
        if constexpr ((Faults & kNoLinkPwb) == 0) persist::pwb(&first->next);
        persist::psync();
        const std::int64_t v = next->value;
        std::uint64_t expected = 0;
        // CRASH: once this claim is durable the dequeue took effect.
        if (next->deq_by.compare_exchange_strong(expected, my_tag, std::memory_order_acq_rel,
                                                 std::memory_order_acquire)) {
          // PERSIST: FHMP deq: FLUSH(&next->deqThreadID).
          persist::pwb(&next->deq_by);
          persist::psync();
          record_result(my_tag, next, v);
          if (advance_head(first, next)) retired.push_back(first);
          *out = v;
          ok = true;
          break;
        }
        // Someone else claimed it: help (FHMP deq else-branch).
        if (root_->head.load(std::memory_order_acquire) == first) {
          persist::pwb(&next->deq_by);
          persist::psync();
          record_result(expected, next, next->value);
          if (advance_head(first, next)) retired.push_back(first);
        }
        backoff.pause();
      }
      end_op();
    }
    // After the psync: the durable head no longer reaches them.
    for (PNode* n : retired) alloc_.retire(ebr_, tid, n);
    retired.clear();
    return ok;
  }

  // Detectable recovery (log queue only): the response of thread tid's
  // operation `seq`; executes it if it had not taken effect. Call after the
  // constructor recovered, single-threaded.
  bool recover_op(int tid, std::uint64_t seq, bool is_enqueue, std::int64_t arg, std::int64_t* out) {
    static_assert(kLog, "recover_op: only the log queue is detectable");
    check_tid(tid, max_, "FriedmanQueue::recover_op");
    friedman::LogEntry& e = root_->log[tid];
    const friedman::LogWord w = friedman::load16(&e.word);
    const bool same = (w.state >> 1) == (seq & friedman::kSeqMask) &&
                      e.op == (is_enqueue ? friedman::kLogEnq : friedman::kLogDeq);
    if (same && (w.state & 1) != 0) {
      if (is_enqueue) return true;
      if (w.result == kEmptyValue) return false;
      *out = w.result;
      return true;
    }
    // CRASH: announced (or not) but never took effect: run it now.
    if (is_enqueue) {
      enqueue(tid, seq, arg);
      return true;
    }
    return try_dequeue(tid, seq, out);
  }

  // Front to back. Not concurrent with updates.
  std::vector<std::int64_t> snapshot() const {
    std::vector<std::int64_t> r;
    PNode* n = root_->head.load(std::memory_order_acquire)->next.load(std::memory_order_acquire);
    ListWalk walk;
    for (; n != nullptr; n = walk.next(n)) {
      if (n->deq_by.load(std::memory_order_acquire) != 0) continue;  // claimed, head lags
      r.push_back(n->value);
    }
    return r;
  }
  std::int64_t returned_value(int tid) const { return root_->returned[tid]->load(std::memory_order_relaxed); }

  // Root's recover hook (pmem/root_registry.h): the FHMP repair (for every
  // thread slot: the hook does not know max_threads), then the list from
  // the repaired head.
  static void recover_root(pmem::Pool& pool, Root* r, const std::function<void(void*)>& mark) {
    if (r->head.load(std::memory_order_relaxed) == nullptr) return;  // creation did not complete
    FriedmanQueue q(pool, r, friedman::kMaxThreads);
    q.recover();
    ListWalk walk;
    for (PNode* n = r->head.load(std::memory_order_relaxed); n != nullptr; n = walk.next(n)) mark(n);
  }

 private:
  // For recover_root: a handle on an existing root (no recovery).
  FriedmanQueue(pmem::Pool& pool, Root* root, int max_threads)
      : pool_(pool), max_(max_threads), alloc_(pool, 8), ebr_(max_threads),
        retire_(static_cast<std::size_t>(max_threads)), root_(root) {}

  void announce(int tid, std::uint64_t seq, std::int64_t op, std::int64_t arg, PNode* node) {
    friedman::LogEntry& e = root_->log[tid];
    e.op = op;
    e.arg = arg;
    e.node = node;
    // PERSIST: entry fields durable before the state names this operation
    // (same line: the pfence orders the two write-backs).
    if constexpr ((Faults & kNoLogPwb) == 0) persist::pwb(&e, sizeof(e));
    persist::pfence();
    friedman::store16(&e.word, {(seq & friedman::kSeqMask) << 1, 0});
    if constexpr ((Faults & kNoLogPwb) == 0) persist::pwb(&e.word);
  }
  // Log queue: completes entry (tid, seq) with `result` if it still names
  // that operation and is not done. Durable queue: no-op. Two phases, each
  // a 16-byte CAS followed by pwb + psync: first the result (state still
  // "not done"), then the done bit. A line may tear at 8-byte boundaries, so
  // a single {done, result} write could persist as {done, stale result};
  // with two ordered phases every torn image is either "not done" or
  // "done with the right result".
  void mark_done(int tid, std::uint64_t seq, std::int64_t result) {
    if constexpr (kLog) {
      friedman::LogEntry& e = root_->log[tid];
      const std::uint64_t s = (seq & friedman::kSeqMask) << 1;
      // Either succeeds or someone already wrote this result / a newer
      // operation owns the entry: both fine.
      friedman::cas16(&e.word, {s, 0}, {s, result});
      if constexpr ((Faults & kNoLogPwb) == 0) persist::pwb(&e.word);
      persist::psync();
      friedman::cas16(&e.word, {s, result}, {s | 1, result});
      if constexpr ((Faults & kNoLogPwb) == 0) persist::pwb(&e.word);
      persist::psync();
    } else {
      (void)tid, (void)seq, (void)result;
    }
  }
  // The claimer's result (returnedValues / log entry), and for the log queue
  // the enqueuer's entry marked done — both durable (psync) before head
  // moves past the node (inv. 3).
  void record_result(std::uint64_t claim_tag, PNode* node, std::int64_t v) {
    if constexpr (kLog) {
      mark_done(friedman::tag_tid(claim_tag), friedman::tag_seq(claim_tag), v);
      const std::uint64_t et = node->enq_by;
      if (et != 0) mark_done(friedman::tag_tid(et), friedman::tag_seq(et), 0);
    } else {
      const int t = static_cast<int>(claim_tag) - 1;
      // Relaxed: returnedValues is read only by recovery (single-threaded).
      root_->returned[t]->store(v, std::memory_order_relaxed);
      persist::pwb(&root_->returned[t].value);
      persist::psync();
    }
  }
  bool advance_head(PNode* first, PNode* next) {
    if (!root_->head.compare_exchange_strong(first, next, std::memory_order_acq_rel)) return false;
    // PERSIST: (deviation) durable head before the old sentinel is retired.
    persist::pwb(&root_->head);
    return true;
  }
  void end_op() {
    if constexpr ((Faults & kNoFinalPsync) == 0) persist::psync();
  }

  void recover() {
    if constexpr (kLog) {
      // A torn entry may hold a stale result next to a "not done" state:
      // normalize so the CASes of mark_done apply.
      for (int t = 0; t < max_; ++t) {
        friedman::LogWord& w = root_->log[t].word;
        if ((w.state & 1) == 0) w.result = 0;
      }
    }
    // FHMP recovery: claimed nodes after the durable head were dequeued.
    PNode* h = root_->head.load(std::memory_order_relaxed);
    ListWalk walk;
    for (PNode* n = h->next.load(std::memory_order_relaxed); n != nullptr && n->deq_by.load(std::memory_order_relaxed) != 0;
         n = walk.next(n)) {
      record_result(n->deq_by.load(std::memory_order_relaxed), n, n->value);
      h = n;
    }
    root_->head.store(h, std::memory_order_relaxed);
    PNode* last = h;
    walk = ListWalk{};
    for (PNode* n = h->next.load(std::memory_order_relaxed); n != nullptr;
         n = walk.next(n)) {
      // Log queue: a linked node's enqueue took effect.
      if constexpr (kLog)
        if (n->enq_by != 0) mark_done(friedman::tag_tid(n->enq_by), friedman::tag_seq(n->enq_by), 0);
      last = n;
    }
    root_->tail.store(last, std::memory_order_relaxed);
    persist::pwb(&root_->head);
    persist::pwb(&root_->tail);
    persist::psync();
  }

  pmem::Pool& pool_;
  int max_;
  NodeAlloc alloc_;
  sync::Ebr ebr_;
  std::vector<sync::CachePadded<std::vector<PNode*>>> retire_;
  Root* root_ = nullptr;
};

using FriedmanDurableQueue = FriedmanQueue<false>;
using FriedmanLogQueue = FriedmanQueue<true>;

// The pool's recover hooks (the repair and the trace use the correct
// instantiation for every fault variant: recovery always persists).
inline const bool kFriedmanDurableRootRegistered =
    pmem::register_root_type<FriedmanDurableQueue::Root>(&FriedmanDurableQueue::recover_root);
inline const bool kFriedmanLogRootRegistered =
    pmem::register_root_type<FriedmanLogQueue::Root>(&FriedmanLogQueue::recover_root);

}  // namespace ferrite::baselines
