// ferrite/combining/pbcomb.h — PBcomb, recoverable blocking software
// combining (Algorithms 1–2, §3 of Fatourou, Kallimanis, Kosmas, "The
// Performance Power of Software Combining in Persistence", PPoPP 2022).
//
// What it is. A generic protocol that turns a *sequential* object (a
// Policy, see below) whose state is a trivially copyable block of bytes
// into a detectably recoverable concurrent object. Each thread announces
// its request in a volatile, cache-padded Request[p]; one thread at a time
// becomes the combiner by taking a volatile odd/even Lock, copies the
// current StateRec MemState[MIndex] into the other one, applies every
// active request to the copy, persists the copy, switches the persistent
// MIndex to it, persists MIndex, and unlocks. Served threads leave without
// any CAS (Alg. 2 l.10–13).
//
// Thread safety: apply/recover may be called concurrently by distinct
// thread ids in [0, n); one thread id must not run two operations at once.
//
// Persistent layout (per instance; the structure's root embeds a
// PBCombRoot):
//   PBCombRoot { rec[2], rec_bytes, threads n, state_bytes, tag kind,
//                MIndex (alone on its cache line) }
//   StateRec (heap block, 64-byte aligned) =
//     [ ReturnVal[n] : u64 ][ tag[n] : u8 bit or u64 seq ][ state ... ]
//   The responses and tags come first so that "everything this round
//   wrote" is one contiguous prefix: ReturnVal + tags + the state's used
//   prefix (Policy::used_bytes), persisted by ONE pwb range (persistence
//   principle 3; a bounded heap persists only its used keys).
//
// Tags. The paper keeps one Deactivate bit per thread and uses seq mod 2 as
// the activate bit (TagKind::kBit). A structure built from two instances
// (PBqueue) cannot use a bit: a thread's per-thread seq advances on the
// other instance too, so its parity on this instance is not alternating.
// TagKind::kSeq stores the full seq of the last served request instead
// (8 bytes per thread, same protocol, exact detection).
//
// Invariants.
//  * MemState[MIndex] is never written while it is current: combiners write
//    only MemState[1 - MIndex] and only while holding Lock (odd).
//  * tag[q] in MemState[MIndex] names q's last request whose effect is in
//    MemState[MIndex].state, and ReturnVal[q] is that request's response.
//  * Lock is odd iff a combiner holds it; LockVal is the odd Lock value of
//    the last combiner that executed l.24.
//
// Persistence invariants.
//  * (Alg. 2 l.22–23) the new StateRec is written back and ordered before
//    the MIndex write-back, so a durable MIndex names a durable StateRec.
//  * (l.26–27) MIndex is durable before Lock is released, so every thread
//    served in the round returns only after its effect is durable; a thread
//    that observes its request served by a *later* round than the one it
//    waited for waits for that round's unlock (LockVal check, l.12).
//  * Policy::before_persist runs before l.22 (nodes outside the StateRec,
//    e.g. Alg. 5 l.24); Policy::after_durable after l.27 and before l.28
//    (Alg. 5 l.31–32: publish oldTail, recycle removed nodes).
//
// Recovery. Nothing is needed for durable linearizability beyond
// re-attaching (null recovery): the volatile Request/Lock/LockVal restart
// from their initial values (valid bits 0). Detectable recovery is
// recover(tid, seq, op, arg) — Alg. 1 l.3–6: re-announce with the seq's
// tag, and re-run the request unless MemState[MIndex] says it was served.
// Heap blocks: the structure's recover hook, run by the pool when it opens
// (pmem/root_registry.h), keeps both StateRecs (pbcomb_mark_records) and
// whatever the current state reaches (pbcomb_current_state); attaching
// frees nothing.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "ferrite/combining/common.h"
#include "ferrite/persist/persist.h"
#include "ferrite/sync/backoff.h"
#include "ferrite/sync/cache_padded.h"

namespace ferrite::combining {

enum class TagKind : std::uint32_t { kBit = 1, kSeq = 2 };

// One active request collected by the combiner (Alg. 2 l.17).
struct Active {
  int tid;
  OpCode op;
  std::int64_t arg;
};

// A sequential object usable by PBcomb:
//   static constexpr TagKind kTag;
//   std::size_t state_bytes() const;              // maximum state size
//   std::size_t used_bytes(const void* st) const; // prefix to copy/persist
//   void init_state(void* st) const;              // initial state
//   // Simulation phase (Alg. 2 l.16–20): apply `active[0..k)` in order to
//   // `st`, write each response word to resp[i]. `tid` = the combiner.
//   void simulate(void* st, const Active* active, std::size_t k,
//                 std::uint64_t* resp, int tid);
//   void before_persist(void* st, int tid);  // extra pwbs, before l.22
//   void after_durable(void* st, int tid);   // after l.27, before l.28
template <class P>
concept SequentialObject = requires(P p, const P cp, void* st, const void* cst, const Active* a,
                                    std::size_t k, std::uint64_t* r, int tid) {
  { P::kTag } -> std::convertible_to<TagKind>;
  { cp.state_bytes() } -> std::convertible_to<std::size_t>;
  { cp.used_bytes(cst) } -> std::convertible_to<std::size_t>;
  cp.init_state(st);
  p.simulate(st, a, k, r, tid);
  p.before_persist(st, tid);
  p.after_durable(st, tid);
};

// Persistent part of one PBcomb instance, embedded in a structure's root.
struct PBCombRoot {
  void* rec[2] = {nullptr, nullptr};  // MemState[0..1] (heap blocks)
  std::uint64_t rec_bytes = 0;
  std::uint32_t threads = 0;      // n
  std::uint32_t state_bytes = 0;  // maximum state size
  std::uint32_t tag_kind = 0;
  std::uint32_t reserved = 0;
  // MIndex: alone on its line, written back every round (Alg. 2 l.26).
  alignas(64) std::atomic<std::uint64_t> mindex{0};
  char pad_[56] = {};

  PBCombRoot() = default;
  PBCombRoot(void* r0, void* r1, std::uint64_t bytes, std::uint32_t n, std::uint32_t sbytes,
             TagKind tk)
      : rec{r0, r1}, rec_bytes(bytes), threads(n), state_bytes(sbytes),
        tag_kind(static_cast<std::uint32_t>(tk)) {}
};
static_assert(sizeof(PBCombRoot) == 128);
static_assert(offsetof(PBCombRoot, mindex) == 64);

// Byte layout of a StateRec for n threads.
struct RecLayout {
  int n = 0;
  TagKind tag = TagKind::kBit;
  std::size_t state_bytes = 0;

  std::size_t tag_off() const { return 8 * static_cast<std::size_t>(n); }
  std::size_t tag_size() const {
    return tag == TagKind::kBit ? static_cast<std::size_t>(n) : 8 * static_cast<std::size_t>(n);
  }
  std::size_t state_off() const { return (tag_off() + tag_size() + 7) & ~std::size_t{7}; }
  std::size_t total() const { return state_off() + state_bytes; }
};

// Accessors for one StateRec. ReturnVal and tags are read by waiting threads
// while a later combiner may be overwriting a (no longer current) record
// with the same values for them, so they are accessed through relaxed
// atomic_refs (the publication order comes from MIndex/Lock); the state is
// touched only by combiners and by quiescent recovery.
struct RecView {
  char* base;
  const RecLayout* layout;

  std::uint64_t ret(int q) const {
    return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(base + 8 * q))
        .load(std::memory_order_relaxed);
  }
  void set_ret(int q, std::uint64_t v) const {
    std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(base + 8 * q))
        .store(v, std::memory_order_relaxed);
  }
  std::uint64_t tag(int q) const {
    char* t = base + layout->tag_off();
    if (layout->tag == TagKind::kBit)
      return std::atomic_ref<std::uint8_t>(*reinterpret_cast<std::uint8_t*>(t + q))
          .load(std::memory_order_relaxed);
    return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(t + 8 * q))
        .load(std::memory_order_relaxed);
  }
  // Stores the tag of request `seq` (its low bit for kBit).
  void set_tag(int q, std::uint64_t seq) const {
    char* t = base + layout->tag_off();
    if (layout->tag == TagKind::kBit)
      std::atomic_ref<std::uint8_t>(*reinterpret_cast<std::uint8_t*>(t + q))
          .store(static_cast<std::uint8_t>(seq & 1), std::memory_order_relaxed);
    else
      std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(t + 8 * q))
          .store(seq, std::memory_order_relaxed);
  }
  // Has request `seq` of q been applied in this record?
  bool served(int q, std::uint64_t seq) const {
    const std::uint64_t t = tag(q);
    return layout->tag == TagKind::kBit ? t == (seq & 1) : t == seq;
  }
  void* state() const { return base + layout->state_off(); }
};

// From an instance's persistent root alone (no PBComb object, no DRAM
// state: for the pool's recover hooks, pmem/root_registry.h): the state of
// the current StateRec MemState[MIndex]. Throws std::runtime_error when the
// root is inconsistent.
inline void* pbcomb_current_state(const PBCombRoot& r) {
  const std::uint64_t mi = r.mindex.load(std::memory_order_acquire);
  if (mi > 1 || r.rec[mi] == nullptr || r.threads == 0 ||
      (r.tag_kind != static_cast<std::uint32_t>(TagKind::kBit) &&
       r.tag_kind != static_cast<std::uint32_t>(TagKind::kSeq)))
    throw std::runtime_error("PBcomb: corrupt persistent root");
  const RecLayout l{static_cast<int>(r.threads), static_cast<TagKind>(r.tag_kind), r.state_bytes};
  if (r.rec_bytes < l.total()) throw std::runtime_error("PBcomb: corrupt persistent root");
  return static_cast<char*>(r.rec[mi]) + l.state_off();
}
// Marks both StateRecs of an instance (heap recovery must keep both).
template <class Mark>
void pbcomb_mark_records(const PBCombRoot& r, const Mark& mark) {
  mark(r.rec[0]);
  mark(r.rec[1]);
}

template <SequentialObject Policy, unsigned Faults = kNoFaults>
class PBComb {
 public:
  static constexpr TagKind kTag = Policy::kTag;

  static RecLayout layout_for(const Policy& pol, int n) {
    return RecLayout{n, kTag, pol.state_bytes()};
  }

  // Fills a fresh pair of StateRecs (both hold the initial state, tags 0,
  // responses 0) and writes them back. It issues no fence: the caller then
  // publishes a root holding PBCombRoot{rec0, rec1, ...} with
  // pool.create_root, which pfences before the root's write-back and psyncs
  // after it (PBQueue formats from its root's constructor, inside
  // create_root). A psync here was redundant before create_root: mutation
  // testing found it never needed (docs/crash.md §6).
  static void format(const Policy& pol, int n, void* rec0, void* rec1) {
    const RecLayout l = layout_for(pol, n);
    for (void* r : {rec0, rec1}) {
      std::memset(r, 0, l.total());
      pol.init_state(static_cast<char*>(r) + l.state_off());
      // PERSIST: initial MemState[0..1] (Alg. 1 "initially") written back;
      // the caller's fence makes them durable before anything names them.
      persist::pwb(r, l.total());
    }
  }

  // Attaches to a formatted instance (fresh or after a restart: the
  // volatile part starts from its initial values, Request valid bits 0).
  PBComb(PBCombRoot* root, Policy* policy, int threads)
      : root_(root), pol_(policy), n_(threads) {
    if (threads <= 0 || static_cast<std::uint32_t>(threads) != root->threads)
      throw std::invalid_argument("PBcomb: structure was created for " +
                                  std::to_string(root->threads) + " threads, attach asked for " +
                                  std::to_string(threads));
    if (root->tag_kind != static_cast<std::uint32_t>(kTag))
      throw std::invalid_argument("PBcomb: persistent tag kind does not match the structure");
    layout_ = layout_for(*policy, threads);
    if (root->state_bytes != layout_.state_bytes || root->rec_bytes < layout_.total())
      throw std::invalid_argument("PBcomb: persistent state size does not match the structure");
    if (root->rec[0] == nullptr || root->rec[1] == nullptr ||
        root->mindex.load(std::memory_order_relaxed) > 1)
      throw std::invalid_argument("PBcomb: corrupt persistent root");
    requests_ = std::vector<RequestSlot>(static_cast<std::size_t>(threads));
    next_seq_ = std::vector<sync::CachePadded<std::uint64_t>>(static_cast<std::size_t>(threads));
    active_.resize(static_cast<std::size_t>(threads));
    active_tag_.resize(static_cast<std::size_t>(threads));
    resp_.resize(static_cast<std::size_t>(threads));
    const RecView cur = current();
    for (int q = 0; q < threads; ++q) next_seq_[static_cast<std::size_t>(q)].value = cur.tag(q) + 1;
  }
  PBComb(const PBComb&) = delete;
  PBComb& operator=(const PBComb&) = delete;

  int threads() const { return n_; }

  // Alg. 1 PBcomb(func, args, seq): runs (op, arg) as thread tid with the
  // caller's sequence number (seq's low bit alternates per request on this
  // instance for TagKind::kBit; seq strictly increases for kSeq). Returns
  // the response word.
  std::uint64_t apply(int tid, std::uint64_t seq, OpCode op, std::int64_t arg) {
    check_tid(tid);
    const RecView cur = current();
    if (cur.served(tid, seq) || (kTag == TagKind::kSeq && seq < cur.tag(tid)))
      throw std::invalid_argument(
          kTag == TagKind::kBit
              ? "PBcomb: seq parity must alternate between a thread's operations (first seq odd)"
              : "PBcomb: seq must increase between a thread's operations (first seq >= 1)");
    next_seq_[static_cast<std::size_t>(tid)].value = seq + 1;
    // Alg. 1 l.1: announce.
    requests_[static_cast<std::size_t>(tid)].announce(op, arg, seq);
    return perform(tid);  // l.2
  }
  // Same, with a sequence number kept by the handle (durably linearizable
  // use without the application keeping seq: after re-attach it restarts
  // from the persisted tag).
  std::uint64_t apply(int tid, OpCode op, std::int64_t arg) {
    check_tid(tid);
    return apply(tid, next_seq_[static_cast<std::size_t>(tid)].value, op, arg);
  }

  // Alg. 1 Recover(func, args, seq): for the operation (tid, seq) that was
  // pending at a crash. Completes it if it had not taken effect; returns its
  // response either way. Idempotent (a crash during recovery re-invokes it).
  std::uint64_t recover(int tid, std::uint64_t seq, OpCode op, std::int64_t arg) {
    check_tid(tid);
    next_seq_[static_cast<std::size_t>(tid)].value = seq + 1;
    // l.3: re-announce with seq's tag and the valid bit set.
    requests_[static_cast<std::size_t>(tid)].announce(op, arg, seq);
    const RecView cur = current();
    // l.4–5: not yet applied -> run it now.
    if (!cur.served(tid, seq)) return perform(tid);
    return cur.ret(tid);  // l.6
  }

  // Did request (tid, seq) take effect in the current (durable once
  // quiescent) state? Its response is response(tid).
  bool applied(int tid, std::uint64_t seq) const { return current().served(tid, seq); }
  std::uint64_t response(int tid) const { return current().ret(tid); }
  std::uint64_t next_seq(int tid) const { return next_seq_[static_cast<std::size_t>(tid)].value; }

  // The current state (for quiescent inspection: tracing, observe, tests).
  const void* state() const { return current().state(); }
  void* state_mut() { return current().state(); }
  // The two StateRec blocks (heap recovery must keep both).
  void* rec(int i) const { return root_->rec[i]; }

  double combining_degree() const { return stats_.degree(); }
  const CombineStats& stats() const { return stats_; }
  void reset_stats() { stats_.reset(); }

 private:
  void check_tid(int tid) const {
    if (tid < 0 || tid >= n_)
      throw std::out_of_range("PBcomb: thread id " + std::to_string(tid) + " not in [0, " +
                              std::to_string(n_) + ")");
  }

  RecView view(std::uint64_t i) const { return RecView{static_cast<char*>(root_->rec[i]), &layout_}; }
  RecView current() const {
    // ORDER: acquire pairs with the combiner's release store of MIndex
    // (l.25): the record it names is fully written.
    return view(root_->mindex.load(std::memory_order_acquire));
  }

  // Alg. 2 PerformRequest.
  std::uint64_t perform(int p) {
    auto& req = requests_[static_cast<std::size_t>(p)];
    for (;;) {
      std::uint64_t lval = lock_->load(std::memory_order_acquire);  // l.6
      if (lval % 2 == 0) {                                          // l.7
        std::uint64_t expected = lval;
        // ORDER: acq_rel: acquiring the lock sees the previous combiner's
        // writes (its release unlock); nothing is published by it.
        if (lock_->compare_exchange_strong(expected, lval + 1, std::memory_order_acq_rel,
                                           std::memory_order_acquire))
          return combine(p, lval + 1);  // l.8
        lval = lval + 1;                // l.9: someone else took lval+1
      }
      // l.10: wait for the combiner holding lval to leave (spin, then yield:
      // the combiner may be preempted on an oversubscribed machine).
      sync::spin_until([&] { return lock_->load(std::memory_order_acquire) != lval; });
      const RecView cur = current();
      const std::uint64_t my_tag = req.ctl.load(std::memory_order_relaxed) >> 1;  // own slot
      if (cur.served(p, my_tag)) {  // l.11
        const std::uint64_t resp = cur.ret(p);
        // l.12: served by a round later than lval's (LockVal moved on, l.24):
        // that round may not have reached its psync yet — wait for its unlock.
        if (lockval_->load(std::memory_order_acquire) != lval)
          sync::spin_until([&] { return lock_->load(std::memory_order_acquire) != lval + 2; });
        return resp;  // l.13
      }
    }
  }

  // Alg. 2 l.14–29, run while holding Lock == lock_val (odd).
  std::uint64_t combine(int p, std::uint64_t lock_val) {
    // Only combiners write MIndex and we hold the lock (acquired with
    // acquire semantics after the previous combiner's release): relaxed.
    const std::uint64_t mi = root_->mindex.load(std::memory_order_relaxed);
    const std::uint64_t ind = 1 - mi;  // l.14
    const RecView src = view(mi);
    const RecView dst = view(ind);

    // l.16–17: collect the active, valid requests (against src's tags, which
    // are the same as the copy's).
    std::size_t k = 0;
    for (int q = 0; q < n_; ++q) {
      // ORDER: acquire pairs with announce(): op/arg of the request are visible.
      const std::uint64_t ctl = requests_[static_cast<std::size_t>(q)].ctl.load(std::memory_order_acquire);
      if ((ctl & 1u) == 0) continue;  // not valid (never announced since restart)
      const std::uint64_t tag = ctl >> 1;
      if (src.served(q, tag)) continue;
      const auto& r = requests_[static_cast<std::size_t>(q)];
      active_[k] = Active{q, static_cast<OpCode>(r.op.load(std::memory_order_relaxed)),
                          r.arg.load(std::memory_order_relaxed)};
      active_tag_[k] = tag;
      ++k;
    }
    if (k == 0) {
      // Our own request was served (and made durable) by an earlier round
      // that completed before we took the lock: nothing to switch.
      const std::uint64_t resp = src.ret(p);
      lock_->store(lock_val + 1, std::memory_order_release);
      return resp;
    }

    // l.15: MemState[ind] := MemState[MIndex] (responses, tags, used state).
    copy_rec(src, dst);
    // l.18–21: simulate on the copy; record responses and tags.
    pol_->simulate(dst.state(), active_.data(), k, resp_.data(), p);
    for (std::size_t i = 0; i < k; ++i) {
      dst.set_ret(active_[i].tid, resp_[i]);
      dst.set_tag(active_[i].tid, active_tag_[i]);
    }
    stats_.record(k);

    // PERSIST: data outside the StateRec this round created or changed
    // (new nodes, the old tail's next) — Alg. 5 l.19, 23, 24 — before the
    // StateRec and MIndex.
    pol_->before_persist(dst.state(), p);
    // PERSIST: Alg. 2 l.22 — responses + tags + the state's used prefix:
    // one contiguous range.
    persist::pwb(dst.base, layout_.state_off() + pol_->used_bytes(dst.state()));
    // PERSIST: l.23 — the StateRec's write-backs are ordered before the
    // MIndex store/write-back (else MIndex may be durable while part of the
    // record is not: a served request with a lost effect).
    if constexpr ((Faults & kNoPfenceBetweenPwbs) == 0) persist::pfence();
    // l.24: LockVal := Lock. ORDER: ordered before the MIndex release below,
    // so a thread that sees its request served in this record sees LockVal.
    lockval_->store(lock_val, std::memory_order_release);
    // l.25. ORDER: release publishes the record to waiters (acquire in current()).
    root_->mindex.store(ind, std::memory_order_release);
    persist::pwb(&root_->mindex);  // PERSIST: l.26
    // PERSIST: l.27 — the switch is durable before any served thread may
    // return (they return only after the unlock below).
    if constexpr ((Faults & kNoPsyncBeforeUnlock) == 0) persist::psync();
    // Alg. 5 l.31–32 (oldTail, recycling of nodes whose removal is now durable).
    pol_->after_durable(dst.state(), p);
    const std::uint64_t resp = dst.ret(p);
    // l.28. ORDER: release: waiters that see the new Lock see the new record.
    lock_->store(lock_val + 1, std::memory_order_release);
    return resp;  // l.29
  }

  void copy_rec(const RecView& src, const RecView& dst) const {
    for (int q = 0; q < n_; ++q) {
      dst.set_ret(q, src.ret(q));
      dst.set_tag(q, src.tag(q));
    }
    std::memcpy(dst.state(), src.state(), pol_->used_bytes(src.state()));
    persist::declare_store(dst.state(), pol_->used_bytes(src.state()));  // CRASH: a memcpy may tear (crash/model.h)
  }

  PBCombRoot* root_;
  Policy* pol_;
  int n_;
  RecLayout layout_;
  std::vector<RequestSlot> requests_;  // Request[0..n-1] (volatile)
  std::vector<sync::CachePadded<std::uint64_t>> next_seq_;  // owner-only
  sync::CachePadded<std::atomic<std::uint64_t>> lock_{0};     // Lock (volatile)
  sync::CachePadded<std::atomic<std::uint64_t>> lockval_{0};  // LockVal (volatile)
  // Combiner-only scratch (under the lock).
  std::vector<Active> active_;
  std::vector<std::uint64_t> active_tag_;
  std::vector<std::uint64_t> resp_;
  CombineStats stats_;
};

}  // namespace ferrite::combining
