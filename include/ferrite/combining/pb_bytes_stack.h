// ferrite/combining/pb_bytes_stack.h — PBBytesStack: a durable, detectably
// recoverable LIFO stack of byte strings (0 bytes to pmem::kMaxPayloadBytes,
// the empty one included): the PBstack of pb_stack.h ("Recoverable and
// Detectable Software Combining", Fatourou, Kallimanis, Kosmas, PPoPP'22,
// §5 "PBStack", Algorithms 1–2) whose values are the offsets of payload
// blocks (pmem/payload.h).
//
// What it is. One algorithm, not two: PBStack<Faults, PBBytesStackRoot>
// runs unchanged (elimination, the recycling stack, the top cache); a
// node's value word, the cached word and a pop's ReturnVal hold a payload
// offset (never a sentinel: offsets are positive and below the pool size,
// and kNoCached is INT64_MIN). This class adds the payload protocol around
// it — write and publish (P1), copy out with validation, reclaim — and its
// own root type (PBBytesStackRoot: PBStackRoot's layout under the tag
// "PBSB"), so an int64 stack is never attached as a byte stack nor the
// reverse (Pool::root checks the tag), and the pool runs this type's
// recovery hook, which also keeps the payloads.
//
// Thread safety: push/pop (and recover_push/recover_pop) are safe from
// distinct thread ids concurrently (one operation per id at a time; push
// and pop take ids in [0, threads) of the attach, the recover calls any id
// of the capacity); values()/payload_offsets() are for quiescent inspection.
//
// Invariants.
//  1. A payload is named by the durable state in exactly one place, or in
//     none (then it is garbage for the pool's recovery): the cached word of
//     the current record's state, a node reachable from its top, or
//     ReturnVal[p] of the current record — the response of p's last pop,
//     which names the payload until p's NEXT operation's round (push or
//     pop: every operation of p replaces ReturnVal[p]) is durable. An
//     eliminated pair (a push and a pop of one round) hands the pushed
//     offset straight to the pop's ReturnVal: it never enters the state.
//  2. last_[p] (DRAM, thread p's only) is the payload ReturnVal[p] names, 0
//     for none. A payload is freed only by its popper p, right after p's
//     next operation returned (its round is durable: PBcomb returns after
//     the round's psync, Alg. 2 l.27), i.e. once no durable state names it.
//     Bound: at most one payload per thread slot (its last popped one)
//     stays allocated while the thread is idle.
//  3. A payload is immutable once published (P2); only its popper reads its
//     bytes, so no epoch is needed: no other reader can hold the offset.
//
// Persistence. push: write_payload (its pwbs, P1: no fence), psync, then
// the int64 push of the offset. The psync is needed because the round that
// makes the state naming the payload durable is the combiner's — another
// thread in general — whose fences do not order this thread's write-backs;
// and even at one thread a push onto an empty top cache issues no pfence
// before the record's write-back (pb_stack.h "Why the cache"). pop persists
// nothing of its own: the response word is the combiner's (Alg. 2 l.22).
//
// Recovery. The pool recovers its heap when it opens: PBBytesStackRoot's
// hook validates and marks what PBStack's marks (the records, the nodes
// from top: pb_stack.h "Validation") and every payload the durable state
// names (invariant 1), validating each (mark_payload: a damaged payload,
// or one named twice — which invariant 1 excludes — throws kCorrupt; the
// pool then keeps every block and leaves the root closed). attach sets
// last_[p] := ReturnVal[p] if it names a payload, so p's first operation
// after a restart frees it. A payload written by a push pending at the
// crash whose round never became durable is named by nothing: freed by
// the pool's recovery.
//
// Detection (like PBStack: Alg. 1 l.3–6). push(tid, seq, bytes) /
// pop(tid, seq) with the caller's seq (parity alternating per thread, first
// odd); after a crash, recover_push(tid, seq, bytes) — applied before the
// crash: nothing to do (its payload is in the state, or was popped); else
// a fresh payload is written and the push completed — and recover_pop(tid,
// seq) — applied: the bytes of the payload ReturnVal[tid] names (kept by
// the hook, invariant 1), else the pop is completed now. Both idempotent.
#pragma once

#include <cstdint>
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
#include "ferrite/combining/pb_stack.h"
#include "ferrite/combining/validate.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/payload.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"
#include "ferrite/sync/cache_padded.h"
#include "ferrite/sync/thread_registry.h"

namespace ferrite::combining {

// The byte stack's root: PBStackRoot's layout under its own tag and
// version (the hook registered for it also keeps the payloads).
struct PBBytesStackRoot : PBStackRoot {
  static constexpr std::uint32_t kTypeTag = 0x50425342;  // "PBSB"
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "combining::PBBytesStack";
  using PBStackRoot::PBStackRoot;
};
static_assert(sizeof(PBBytesStackRoot) == sizeof(PBStackRoot));

template <unsigned Faults = kNoFaults, unsigned BFaults = bytes_fault::kNone>
class PBBytesStack {
 public:
  using Stack = PBStack<Faults, PBBytesStackRoot>;
  using Node = PBStackNode;

  static std::unique_ptr<PBBytesStack> create(pmem::Pool& pool, std::string_view name, int threads = kDefaultThreads,
                                              PBStackOptions opts = {}, int alloc_tid = 0) {
    return std::unique_ptr<PBBytesStack>(
        new PBBytesStack(pool, Stack::create(pool, name, threads, opts, alloc_tid)));
  }

  // Re-attaches by name. The pool recovered the heap when it opened (this
  // type's hook kept the payloads); a stack whose hook failed there is
  // refused by Pool::root (PoolError kCorrupt with the hook's reason).
  static std::unique_ptr<PBBytesStack> attach(pmem::Pool& pool, std::string_view name, int threads = kAsCreated,
                                              PBStackOptions opts = {}) {
    std::unique_ptr<PBBytesStack> s(new PBBytesStack(pool, Stack::attach(pool, name, threads, opts)));
    // CRASH: ReturnVal[p] of the current record names p's last popped
    // payload (kept by the hook, invariant 1); p's next operation frees it.
    for (std::size_t p = 0; p < s->last_.size(); ++p) {
      const std::uint64_t w = s->s_->comb().response(static_cast<int>(p));
      s->last_[p].value = names_payload(w) ? w : 0;
    }
    return s;
  }

  // PBBytesStackRoot's recover hook: PBStack's validating trace, then every
  // payload the durable state names, validated (invariant 1). Idempotent.
  static void recover_root(pmem::Pool& pool, PBBytesStackRoot* root, const std::function<void(void*)>& mark) {
    Stack::trace_root(pool, root, mark);
    std::unordered_set<std::uint64_t> named;
    auto keep = [&](std::uint64_t off, const char* where) {
      if (!named.insert(off).second)
        throw pmem::PoolError(pmem::Errc::kCorrupt, "PBBytesStack: the payload at offset " + std::to_string(off) +
                                                        " is named twice (" + where + ")");
      pmem::mark_payload(pool, off, mark);  // throws kCorrupt on a damaged payload
    };
    for_each_payload(pool, root, [&](std::uint64_t off, const char* where) { keep(off, where); });
    for (std::uint32_t q = 0; q < root->comb.threads; ++q) {
      const std::uint64_t w = pbcomb_current_response(root->comb, static_cast<int>(q));
      if (names_payload(w)) keep(w, "a pop response");
    }
  }

  // Pushes `b` (any bytes, up to kMaxPayloadBytes). Throws PoolError kFull
  // when the pool has no room (nothing is published then).
  void push(int tid, std::string_view b) {
    check_tid(tid, threads_);
    publish(tid, b, [&](std::int64_t off) { s_->push(tid, off); });
  }
  // Removes the top element and returns its bytes (nullopt when empty). A
  // payload that fails validation throws PoolError(kCorrupt) naming its
  // offset (the element is consumed: its round is durable).
  std::optional<std::string> pop(int tid) {
    check_tid(tid, threads_);
    return take(tid, s_->pop(tid));
  }
  void push(const Thread& t, std::string_view b) { push(t.id(), b); }
  std::optional<std::string> pop(const Thread& t) { return pop(t.id()); }

  // Detectable (see the essay): the caller's seq, parity alternating per
  // thread (first odd), as PBStack's.
  void push(int tid, std::uint64_t seq, std::string_view b) {
    check_tid(tid, threads_);
    publish(tid, b, [&](std::int64_t off) { s_->push(tid, seq, off); });
  }
  std::optional<std::string> pop(int tid, std::uint64_t seq) {
    check_tid(tid, threads_);
    return take(tid, s_->pop(tid, seq));
  }
  // For the push (tid, seq, b) pending at a crash: completes it unless it
  // took effect (Alg. 1 l.4–5). Idempotent.
  void recover_push(int tid, std::uint64_t seq, std::string_view b) {
    check_tid(tid, capacity());
    if (s_->comb().applied(tid, seq)) return;  // l.6: took effect before the crash
    // CRASH: the payload the interrupted push wrote is named by no durable
    // state (its round did not become durable): the pool's recovery freed
    // it; a fresh one is published.
    publish(tid, b, [&](std::int64_t off) { s_->recover(tid, seq, OpCode::kPush, off); });
  }
  // For the pop (tid, seq) pending at a crash: its bytes (nullopt: it found
  // the stack empty), completing it unless it took effect. Idempotent.
  std::optional<std::string> recover_pop(int tid, std::uint64_t seq) {
    check_tid(tid, capacity());
    if (s_->comb().applied(tid, seq)) {
      // l.6: ReturnVal[tid] names the payload (kept by the hook; last_[tid]
      // already holds it, attach): read it, free nothing.
      const std::uint64_t w = s_->comb().response(tid);
      if (!names_payload(w)) return std::nullopt;
      return std::string(pmem::read_payload(*pool_, w));
    }
    return take(tid, Stack::to_optional(s_->recover(tid, seq, OpCode::kPop, 0)));
  }

  // Quiescent: the elements top -> bottom, validated (a damaged payload or
  // list throws PoolError(kCorrupt)). Modifies nothing.
  std::vector<std::string> values() const {
    std::vector<std::string> out;
    for (std::uint64_t off : payload_offsets()) out.emplace_back(pmem::read_payload(*pool_, off));
    return out;
  }
  // Quiescent: the payload offsets top -> bottom (the cached one first).
  std::vector<std::uint64_t> payload_offsets() const {
    std::vector<std::uint64_t> out;
    for_each_payload(*pool_, s_->root(), [&](std::uint64_t off, const char*) { out.push_back(off); });
    return out;
  }
  // Payloads held for reclamation (one per thread slot at most: invariant 2).
  std::size_t held_payloads() const {
    std::size_t n = 0;
    for (const auto& l : last_) n += l.value != 0 ? 1 : 0;
    return n;
  }

  double combining_degree() const { return s_->combining_degree(); }
  Stack& stack() { return *s_; }
  pmem::Pool* pool() const { return pool_; }

 private:
  PBBytesStack(pmem::Pool& pool, std::unique_ptr<Stack> s)
      : pool_(&pool), s_(std::move(s)), threads_(s_->comb().threads()),
        last_(static_cast<std::size_t>(s_->comb().max_threads())) {}

  int capacity() const { return s_->comb().max_threads(); }
  static void check_tid(int tid, int bound) {
    if (tid < 0 || tid >= bound)
      throw std::out_of_range("PBBytesStack: thread id " + std::to_string(tid) + " not in [0, " +
                              std::to_string(bound) + ")");
  }

  // Writes b's payload, makes it durable, then runs `push_off` (an int64
  // push of its offset); afterwards frees tid's previous popped payload.
  template <class F>
  void publish(int tid, std::string_view b, const F& push_off) {
    const std::uint64_t off = pmem::write_payload(*pool_, tid, b);
    // PERSIST: payload.h P1 — the payload's write-backs (issued by
    // write_payload) complete before the offset is announced (Alg. 1 l.1):
    // the round that makes the state naming it durable (Alg. 2 l.22–27) is
    // in general another thread's, whose fences do not order our pwbs.
    if constexpr ((BFaults & bytes_fault::kNoPayloadPsync) == 0) persist::psync();
    try {
      push_off(static_cast<std::int64_t>(off));
    } catch (...) {
      pmem::free_payload(*pool_, tid, off);  // never published
      throw;
    }
    release_last(tid, 0);
  }

  // After tid's pop returned r (its round durable), the reclamation step,
  // then the bytes.
  std::optional<std::string> take(int tid, std::optional<std::int64_t> r) {
    const std::uint64_t off = r ? static_cast<std::uint64_t>(*r) : 0;
    release_last(tid, off);
    if (!r) return std::nullopt;
    std::string out(pmem::read_payload(*pool_, off));  // validates (P3)
    if constexpr ((BFaults & bytes_fault::kFreeAtReturn) != 0) {
      // BROKEN: ReturnVal[tid] still names the payload (until tid's next
      // operation): the block may be reused while durable state names it.
      pmem::free_payload(*pool_, tid, off);
      last_[static_cast<std::size_t>(tid)].value = 0;
    }
    return out;
  }

  // CRASH: tid's operation just returned, so its round is durable (PBcomb
  // returns after the round's psync, Alg. 2 l.27): ReturnVal[tid] of the
  // current record is this operation's response (`now`: the payload it
  // names, 0 for none), so the payload of tid's previous pop is named by no
  // durable state any more (not in the state: popped; no response:
  // replaced) and no reader holds it — free it now.
  void release_last(int tid, std::uint64_t now) {
    auto& last = last_[static_cast<std::size_t>(tid)].value;
    const std::uint64_t prev = last;
    last = now;
    if (prev != 0 && prev != now) pmem::free_payload(*pool_, tid, prev);
  }

  // Calls f(offset, where) on every payload the current state names: the
  // cached word (a root whose state holds the top cache), then the nodes
  // from top; validated by PBStack (records, nodes), not the payloads.
  template <class F>
  static void for_each_payload(const pmem::Pool& pool, PBBytesStackRoot* root, const F& f) {
    const Damage d{pool, "PBBytesStack"};
    const auto* st = static_cast<const std::int64_t*>(pbcomb_checked_state(d, root->comb));
    if (root->comb.state_bytes == sizeof(typename Stack::Object::State) && st[1] != Stack::Object::kNoCached)
      f(static_cast<std::uint64_t>(st[1]), "the cached top");
    Stack::for_each_node(pool, root, [&](const Node* n) { f(static_cast<std::uint64_t>(n->value), "a stack node"); });
  }

  pmem::Pool* pool_;
  std::unique_ptr<Stack> s_;
  int threads_;
  // last_[p]: the payload ReturnVal[p] names (0: none); thread p's only.
  std::vector<sync::CachePadded<std::uint64_t>> last_;
};

// The pool's recover hook for PBBytesStackRoot (independent of the faults).
inline const bool kPBBytesStackRootRegistered =
    pmem::register_root_type<PBBytesStackRoot>(&PBBytesStack<>::recover_root);

}  // namespace ferrite::combining
