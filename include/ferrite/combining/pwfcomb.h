// ferrite/combining/pwfcomb.h — PWFcomb: wait-free recoverable software combining.
//
// Implements Algorithms 3–4 of Fatourou, Kallimanis, Kosmas, "The Performance
// Power of Software Combining in Persistence" (PPoPP 2022), section 4.
// Every thread "pretends to
// be the combiner": it copies the current StateRec (pointed to by S) into one
// of its own two StateRecs, applies every active request it sees, persists the
// record and tries to switch S to it with an SC.
//
// Thread safety: apply()/recover() are safe from distinct thread ids (one
// operation per id at a time); attach/create are not concurrent with them.
//
// Thread capacity. The n given at creation is a capacity: the layout holds
// 2n+1 StateRecs with n ReturnVal/Tag words each, and a combiner scans n
// request slots. A later attach may ask for any 1 <= threads <= n (more
// throws, naming both numbers); apply/fresh_seq then take ids in [0,
// threads), recover any id in [0, n): a thread of an earlier, wider run may
// have left a pending operation, and whoever recovers it for that id
// combines like any other thread (its records and request slot exist and
// every combiner scans every slot; its DRAM scratch is made on first use).
//
// Layout (persistent, in a pmem::Pool):
//   PWFCombLayout (embedded in the structure's root object): S on its own
//   cache line, then n, sizes and the offsets of the 2n+1 StateRecs.
//   StateRec (heap block of arena `owner`, 64-byte aligned, contiguous so one
//   pwb range covers everything — persistence principle 3), all 64-bit words:
//     [0] Deactivate bits (bit q)   [1] Index bits (bit q)   [2] pid
//     [3] reserved                  [4 .. 4+n) ReturnVal[q]
//     [4+n .. 4+2n) Tag[q]  (only when Obj::kSeqTags)       then the state
//   Tags: the paper's Deactivate bit per thread (activate = seq % 2) is used
//   by single-instance objects. An object that is one of two instances used
//   by the same threads (PWFqueue's IE and ID) sets kSeqTags: the per-thread
//   seq advances on the other instance too, so its parity on this instance
//   does not alternate; Tag[q] then stores the full seq of q's last served
//   request (same protocol, exact detection; PBcomb's TagKind::kSeq).
//   Records 2p and 2p+1 belong to thread p (MemState[p][0..1]); record 2n is
//   the paper's initial dummy MemState[n][0]. (MemState[n][1] is never read or
//   written by Alg. 4 — no thread has pid n — so it is not allocated.)
//
// S encoding: one 64-bit word, (version << 8) | record id. LL = load, VL =
// "S still equals the value LL returned", SC = CAS with version+1. A 56-bit
// version cannot wrap in practice, so there is no ABA (the paper's LL/SC).
//
// Invariants:
//   I1 S always points to a record whose contents were written and persisted
//      (pwb + psync, Alg. 4 l.28–29) before the SC that installed it, and that
//      record is never written while S points to it: thread p writes only
//      MemState[p][S->Index[p]], and Index[p] is flipped (l.27) in every record
//      p installs, so the record p installed last is never p's next target.
//   I2 The ReturnVal[q] and Deactivate[q] of every state at or after the one
//      that served q's request are equal until q announces again — so reading
//      ret[q] from any record S pointed to after q was served is exact, even
//      if the record is being recycled (it is overwritten with the same value).
//   I3 A thread returns only when the durable S is at or after the state that
//      served its request (see "helper write-back" below).
//
// Persistence and recovery:
//   - A combiner persists its record (l.28), fences (l.29, a publish_fence:
//     pfence on x86, psync under the abstract model; see there), SC (l.31), then
//     pwb(&S) + psync (l.32–33) before it returns or reuses any record/node.
//   - Helper write-back (l.38–48): a thread whose request was served by
//     another combiner persists S unless the durable S is known to be recent
//     enough. The paper decides this with Flush[]/CombRound[][] parity; Ferrite
//     uses a volatile durable-version watermark instead, because the paper's
//     test consults only the combiner of the *current* S and misses the case
//     where the round that served q has been overtaken by a later round whose
//     combiner has not persisted either (docs/combining-pwf.md, "Flush/
//     CombRound"). The watermark keeps the paper's goal (principles 1 and 2:
//     a helper writes S back only when no one has made a recent-enough S
//     durable) and is never wrong.
//   - Recovery (Alg. 3 l.4–7): attach() rebuilds the volatile part (Request
//     array with valid = 0, watermark = current S); recover(tid, seq, ...)
//     announces the request with activate = seq % 2 and re-runs it only if
//     S->Deactivate[tid] differs. Heap blocks (the 2n+1 StateRecs, plus the
//     structure's nodes) are kept by the structure's recover hook, which the
//     pool runs when it opens (pmem/root_registry.h); attach frees nothing.
//
// The sequential object (template parameter Obj, held by reference) provides:
//   static constexpr std::size_t kStateWords;   // maximum state size (words)
//   static constexpr std::size_t kFixedWords;   // words always copied (<= kStateWords)
//   static constexpr bool kSeqTags;             // full-seq tags instead of bits
//   std::size_t used_state_words(const std::uint64_t* st) const;  // must
//       // tolerate torn input and return a value in [kFixedWords, kStateWords]
//   bool combine(int p, std::uint64_t* st, std::span<PWFEntry> batch,
//                const PWFValidator& vl);   // fills entry.ret; false = abort
//   void persist_side(int p);   // pwb side data (new nodes) before the record
//   void on_commit(int p);      // after the successful SC and pwb(S)+psync
//   void on_abort(int p);       // attempt failed: give back what it took
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "ferrite/combining/common.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/sync/backoff.h"
#include "ferrite/sync/cache_padded.h"

namespace ferrite::combining {

// Broken variants (deliberately removed persistence steps) for crash tests.
// Default 0 = the correct algorithm; the checks are `if constexpr`.
// Bits do not collide with common.h's Fault (kNoHelperPwbS is shared).
// pwf_fault: the broken variants' fault bits (combining/internal/faults.h).

inline constexpr int kPWFMaxThreads = 64;
inline constexpr int kPWFMaxRecs = 2 * kPWFMaxThreads + 1;

// One request the combiner serves in this attempt.
struct PWFEntry {
  int tid;
  std::int32_t kind;
  std::int64_t arg;
  std::uint64_t ret;
  std::uint64_t act;  // the request's seq (its low bit is the activate bit)
};

// VL(S) for a combining attempt: true while S still holds the LL value.
class PWFValidator {
 public:
  PWFValidator(const std::atomic<std::uint64_t>* s, std::uint64_t seen) : s_(s), seen_(seen) {}
  bool operator()() const {
    // ORDER: the acquire fence orders every earlier (relaxed) read of shared
    // records/nodes before the re-read of S: if one of those reads saw a
    // recycled value, the write that recycled it followed an SC that changed
    // S, and that change is visible here (seqlock argument, see
    // docs/combining-pwf.md).
#if !defined(__SANITIZE_THREAD__)
    std::atomic_thread_fence(std::memory_order_acquire);
#endif  // under TSan the record loads are acquire instead (pwf_detail::ld)
    return s_->load(std::memory_order_relaxed) == seen_;
  }

 private:
  const std::atomic<std::uint64_t>* s_;
  std::uint64_t seen_;
};

// The persistent part of one PWFcomb instance, embedded in a root object.
struct PWFCombLayout {
  static constexpr std::uint64_t kMagic = 0x5057'4643'4f4d'4202ull;  // "PWFCOMB\2" (v2: pointers)
  alignas(64) std::atomic<std::uint64_t> s{0};  // S (alone on its line: pwb(&S) is one line)
  char pad_[64 - sizeof(std::atomic<std::uint64_t>)]{};
  std::uint64_t magic = 0;
  std::uint32_t n = 0;            // threads
  std::uint32_t state_words = 0;  // Obj::kStateWords
  std::uint32_t rec_words = 0;    // 4 + n (+ n tags) + state_words
  std::uint32_t nrecs = 0;        // 2n + 1
  // The StateRecs. Raw pointers, as in every Ferrite root (the pool maps at
  // its recorded base, so they stay valid across restarts); attach checks
  // each lies inside the pool. (Layout version 1 held pool offsets.)
  std::uint64_t* rec[kPWFMaxRecs]{};

  PWFCombLayout() = default;
  PWFCombLayout(const PWFCombLayout& o)
      : s(o.s.load(std::memory_order_relaxed)), magic(o.magic), n(o.n),
        state_words(o.state_words), rec_words(o.rec_words), nrecs(o.nrecs) {
    std::memcpy(rec, o.rec, sizeof(rec));
  }
  PWFCombLayout& operator=(const PWFCombLayout&) = delete;
};
static_assert(offsetof(PWFCombLayout, s) == 0);
static_assert(offsetof(PWFCombLayout, magic) == 64);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

namespace pwf_detail {
inline constexpr std::size_t kDeact = 0, kIndex = 1, kPid = 2, kHdr = 4;
// ThreadSanitizer does not model standalone fences (GCC 12 rejects them
// under -fsanitize=thread with -Wtsan). In a TSan build the seqlock's two
// fences (PWFValidator, the writer's release fence before it overwrites its
// record) are left out and the record accesses are acquire/release instead,
// which orders each record word as the fences do.
#if defined(__SANITIZE_THREAD__)
inline constexpr std::memory_order kRecLoad = std::memory_order_acquire;
inline constexpr std::memory_order kRecStore = std::memory_order_release;
#else
inline constexpr std::memory_order kRecLoad = std::memory_order_relaxed;
inline constexpr std::memory_order kRecStore = std::memory_order_relaxed;
#endif
inline std::uint64_t ld(const std::uint64_t* p) {
  // Relaxed: records are read optimistically and validated with VL (seqlock).
  return std::atomic_ref<std::uint64_t>(*const_cast<std::uint64_t*>(p)).load(kRecLoad);
}
inline void st(std::uint64_t* p, std::uint64_t v) {
  // Relaxed: the record is published by the (release) SC on S; concurrent
  // stale readers only need atomicity, they discard what they read via VL.
  std::atomic_ref<std::uint64_t>(*p).store(v, kRecStore);
}
inline std::uint64_t version(std::uint64_t s) { return s >> 8; }
inline std::uint32_t rec_id(std::uint64_t s) { return static_cast<std::uint32_t>(s & 0xff); }
inline std::uint64_t make_s(std::uint64_t ver, std::uint32_t id) { return (ver << 8) | id; }

}  // namespace pwf_detail

// The thread capacity of a layout, for sizing a sequential object's
// per-thread DRAM before the PWFComb that validates the layout is built
// (a layout out of range gets n slots: PWFComb's constructor then throws).
inline int pwf_capacity(const PWFCombLayout& l, int n) {
  return l.n >= 1 && l.n <= static_cast<std::uint32_t>(kPWFMaxThreads) ? static_cast<int>(l.n) : (n > 0 ? n : 1);
}

struct PWFOptions {
  std::uint32_t backoff_min = 0;    // spins before the first attempt (Alg. 3 l.2)
  std::uint32_t backoff_max = 512;  // cap of the adaptive backoff (Alg. 4 l.36)
};

template <class Obj, unsigned kFaults = pwf_fault::kNone>
class PWFComb {
 public:
  static constexpr unsigned kFaultMask = kFaults;
  static constexpr bool kSeqTags = Obj::kSeqTags;

  static std::size_t record_words(int n) {
    return pwf_detail::kHdr + static_cast<std::size_t>(n) * (kSeqTags ? 2 : 1) + Obj::kStateWords;
  }

  // Allocates and persists the StateRecs and fills `out` (to be embedded in
  // a root; create_root persists the root before publishing it).
  static void create_layout(pmem::Pool& pool, int n, PWFCombLayout* out,
                            const std::uint64_t* init_state) {
    if (n <= 0 || n > kPWFMaxThreads)
      throw std::invalid_argument("PWFcomb: threads must be in [1, " +
                                  std::to_string(kPWFMaxThreads) + "], got " + std::to_string(n));
    const std::size_t words = record_words(n);
    out->magic = PWFCombLayout::kMagic;
    out->n = static_cast<std::uint32_t>(n);
    out->state_words = static_cast<std::uint32_t>(Obj::kStateWords);
    out->rec_words = static_cast<std::uint32_t>(words);
    out->nrecs = static_cast<std::uint32_t>(2 * n + 1);
    const std::size_t soff = words - Obj::kStateWords;
    for (std::uint32_t r = 0; r < out->nrecs; ++r) {
      const bool dummy = r == 2u * static_cast<std::uint32_t>(n);
      // Thread p's records come from arena p (consecutive addresses).
      const int owner = dummy ? 0 : static_cast<int>(r / 2);
      auto* rec = static_cast<std::uint64_t*>(pool.heap().alloc(record_block_bytes(words * 8), owner));
      std::memset(rec, 0, words * 8);
      rec[pwf_detail::kPid] = dummy ? static_cast<std::uint64_t>(n) : r / 2;
      std::memcpy(rec + soff, init_state, Obj::kStateWords * 8);
      // PERSIST: initial MemState contents durable before the root that
      // names them (Alg. 3 "initially"); create_root pfences + publishes.
      persist::pwb(rec, words * 8);
      out->rec[r] = rec;
    }
    // S := &MemState[n][0] (Alg. 3), version 1.
    // PERSIST: no fence here: *out lives in the root, and create_root's
    // pfence orders the records' write-backs above before the root's (a
    // pfence here was redundant, found by mutation testing, docs/crash.md §6).
    out->s.store(pwf_detail::make_s(1, static_cast<std::uint32_t>(2 * n)), std::memory_order_relaxed);
  }

  // Attaches the volatile handle to a persistent layout (after create or after
  // a restart: this is the structure-level recovery of PWFcomb; the Request
  // array restarts with valid = 0). Throws pmem::PoolError on a mismatch.
  // n may be fewer than the capacity the layout was created for (lay_->n):
  // everything persistent or scanned is sized by the capacity (n_), only
  // apply's ids by n.
  PWFComb(pmem::Pool& pool, PWFCombLayout* layout, int n, Obj& obj, PWFOptions opts = {})
      : lay_(layout), n_(static_cast<int>(layout->n)), attached_(n), obj_(obj), opts_(opts) {
    if (lay_->magic != PWFCombLayout::kMagic)
      throw pmem::PoolError(pmem::Errc::kCorrupt, "PWFcomb: bad layout magic in " + pool.path());
    if (lay_->n == 0 || lay_->n > static_cast<std::uint32_t>(kPWFMaxThreads))
      throw pmem::PoolError(pmem::Errc::kCorrupt, "PWFcomb: thread capacity " + std::to_string(lay_->n) +
                                                      " out of [1, " + std::to_string(kPWFMaxThreads) + "] in " +
                                                      pool.path());
    if (n == kAsCreated) attached_ = n = n_;
    if (n <= 0)
      throw pmem::PoolError(pmem::Errc::kInvalidArgument, "PWFcomb: attach asked for " + std::to_string(n) +
                                                              " threads; it takes at least 1 (or kAsCreated: the capacity)");
    if (n > n_)
      throw pmem::PoolError(pmem::Errc::kInvalidArgument,
                            "PWFcomb: structure in " + pool.path() + " was created for at most " +
                                std::to_string(n_) + " threads; attach asked for " + std::to_string(n) +
                                " — create the structure with a larger capacity");
    if (lay_->state_words != Obj::kStateWords || lay_->rec_words != record_words(n_) ||
        lay_->nrecs != 2 * lay_->n + 1)
      throw pmem::PoolError(pmem::Errc::kCorrupt, "PWFcomb: inconsistent layout in " + pool.path());
    words_ = lay_->rec_words;
    for (std::uint32_t r = 0; r < lay_->nrecs; ++r) {
      // Validating (combining/validate.h's rule, restated here: this header
      // precedes it): each record inside the pool, 8-aligned, the start of
      // a heap block of at least rec_words words — a flipped bit in a
      // record pointer is named, never followed.
      const void* rp = lay_->rec[r];
      if (rp == nullptr || reinterpret_cast<std::uintptr_t>(rp) % 8 != 0 || !pool.contains(rp, words_ * 8) ||
          pool.heap().block_at(rp) < words_ * 8)
        throw pmem::PoolError(pmem::Errc::kCorrupt,
                              "PWFcomb: StateRec pointer " + std::to_string(r) + " at offset " +
                                  std::to_string(reinterpret_cast<std::uintptr_t>(&lay_->rec[r]) -
                                                 reinterpret_cast<std::uintptr_t>(pool.base())) +
                                  " names no StateRec block (holds " +
                                  std::to_string(reinterpret_cast<std::uintptr_t>(rp)) + ") in " + pool.path());
      recs_[r] = lay_->rec[r];
    }
    const std::uint64_t s = lay_->s.load(std::memory_order_acquire);
    if (pwf_detail::rec_id(s) >= lay_->nrecs)
      throw pmem::PoolError(pmem::Errc::kCorrupt,
                            "PWFcomb: S names no StateRec: the word at offset " +
                                std::to_string(reinterpret_cast<std::uintptr_t>(&lay_->s) -
                                               reinterpret_cast<std::uintptr_t>(pool.base())) +
                                " holds record " + std::to_string(pwf_detail::rec_id(s)) + " of " +
                                std::to_string(lay_->nrecs) + " (in " + pool.path() + ")");
    // After a restart the S in memory is the durable S.
    durable_ver_.store(pwf_detail::version(s), std::memory_order_relaxed);
    // A slot per id of the capacity; the scratch of the ids >= n is made
    // when one of them is recovered (init_slot).
    threads_ = std::make_unique<sync::CachePadded<ThreadState>[]>(static_cast<std::size_t>(n_));
    reqs_ = std::make_unique<sync::CachePadded<Request>[]>(static_cast<std::size_t>(n_));
    for (int p = 0; p < n_; ++p) {
      auto& t = *threads_[static_cast<std::size_t>(p)];
      t.backoff = opts_.backoff_min;
      if (p < n) init_slot(p);
    }
  }

  // The thread count this handle was attached for (apply's ids: [0,
  // threads())) and the layout's capacity (recover's ids: [0, max_threads())).
  int threads() const { return attached_; }
  int max_threads() const { return n_; }
  PWFCombLayout* layout() const { return lay_; }
  // All StateRecs (for heap recovery by tracing).
  template <class F>
  void for_each_record(F&& f) const {
    for (std::uint32_t r = 0; r < lay_->nrecs; ++r) f(static_cast<void*>(recs_[r]));
  }

  // PWFcomb(func, args, seq), Alg. 3 l.1–3. The request's activate bit is
  // seq % 2 (kSeqTags: its tag is seq). seq must differ in parity (tags:
  // value) from the thread's last served request, also across restarts: the
  // caller's persistent per-thread seq (paper §2). Violations throw.
  // A sequence number for p's next operation when the caller keeps none
  // (the seq-less API: durable linearizability without detection): one past
  // p's tag in the current state (seq tags), or the parity opposite to p's
  // Deactivate bit. A thread runs one operation at a time, so its tag in
  // the current state is that of its last completed operation.
  std::uint64_t fresh_seq(int p) const {
    check_tid(p);
    const std::uint64_t s = lay_->s.load(std::memory_order_seq_cst);
    const std::uint64_t* rec = recs_[pwf_detail::rec_id(s)];
    if constexpr (kSeqTags) return pwf_detail::ld(rec + tag_off() + static_cast<std::size_t>(p)) + 1;
    else return ((pwf_detail::ld(rec + pwf_detail::kDeact) >> p) & 1u) != 0 ? 2 : 1;
  }

  std::uint64_t apply(int p, std::uint64_t seq, std::int32_t kind, std::int64_t arg) {
    check_tid(p);
    return apply_slot(p, seq, kind, arg);
  }
  // apply for any id of the capacity: for a combiner of another instance
  // running as p (PWFqueue's dequeue probe), where p may be a recovered id
  // >= threads().
  std::uint64_t apply_slot(int p, std::uint64_t seq, std::int32_t kind, std::int64_t arg) {
    check_slot(p);
    init_slot(p);
    check_seq(seq);
    if (served_now(p, seq))
      throw std::logic_error("PWFcomb: thread " + std::to_string(p) + " reused seq " +
                             std::to_string(seq) +
                             (kSeqTags ? " (seq must change per operation)"
                                       : " parity (seq must alternate odd/even per operation)"));
    announce(p, kind, arg, seq);  // l.1
    auto& t = *threads_[static_cast<std::size_t>(p)];
    for (std::uint32_t i = 0; i < t.backoff; ++i) sync::cpu_relax();  // l.2 Backoff()
    return perform_request(p, seq);                                  // l.3
  }

  // Recover(func, args, seq), Alg. 3 l.4–7.
  // p may be any id of the capacity, also one >= threads() (a pending
  // operation of a wider run).
  std::uint64_t recover(int p, std::uint64_t seq, std::int32_t kind, std::int64_t arg) {
    check_slot(p);
    init_slot(p);
    check_seq(seq);
    announce(p, kind, arg, seq);                          // l.4
    if (!served_now(p, seq)) return perform_request(p, seq);  // l.5–6
    // l.7. The S we read may not be durable yet if the crash is only a
    // re-attach in the same run; after a real restart it is.
    ensure_durable(current_version());
    return read_ret(p);
  }

  // Whether thread p's request with this seq took effect (current S).
  bool applied(int p, std::uint64_t seq) const { return served_now(p, seq); }

  // Consistent copy of the current state (kStateWords words). Lock-free:
  // retries only when an SC intervened.
  void snapshot(std::vector<std::uint64_t>* out) const {
    std::vector<std::uint64_t> buf(words_);
    for (;;) {
      const std::uint64_t s = lay_->s.load(std::memory_order_acquire);
      const std::uint64_t* rec = recs_[pwf_detail::rec_id(s)];
      for (std::size_t i = 0; i < words_; ++i) buf[i] = pwf_detail::ld(rec + i);
      if (PWFValidator(&lay_->s, s)()) break;
    }
    out->assign(buf.begin() + static_cast<std::ptrdiff_t>(state_off()), buf.end());
  }
  // The current state in place (quiescent use only: recovery, observe()).
  const std::uint64_t* current_state() const {
    return recs_[pwf_detail::rec_id(lay_->s.load(std::memory_order_acquire))] + state_off();
  }
  std::uint64_t current_version() const {
    return pwf_detail::version(lay_->s.load(std::memory_order_acquire));
  }
  // Validated read of the state words [0, k) with the S value they belong to.
  std::uint64_t read_state(std::uint64_t* out, std::size_t k) const {
    for (;;) {
      const std::uint64_t s = try_read_state(out, k, 1 << 30);
      if (s != 0) return s;
    }
  }
  // At most `attempts` validated reads; 0 when every one met a concurrent
  // SC (S's version is never 0 after create, so 0 is free as "failed").
  std::uint64_t try_read_state(std::uint64_t* out, std::size_t k, int attempts) const {
    for (int a = 0; a < attempts; ++a) {
      const std::uint64_t s = lay_->s.load(std::memory_order_seq_cst);
      const std::uint64_t* st = recs_[pwf_detail::rec_id(s)] + state_off();
      for (std::size_t i = 0; i < k; ++i) out[i] = pwf_detail::ld(st + i);
      if (PWFValidator(&lay_->s, s)()) return s;
    }
    return 0;
  }
  // p's tag in the current state (kSeqTags): the seq of p's last served
  // request on this instance.
  std::uint64_t tag_now(int p) const {
    static_assert(kSeqTags, "tag_now needs full-seq tags");
    const std::uint64_t s = lay_->s.load(std::memory_order_seq_cst);
    return pwf_detail::ld(recs_[pwf_detail::rec_id(s)] + tag_off() + static_cast<std::size_t>(p));
  }

  // Makes the durable S at least version `ver` (the helper write-back of
  // Alg. 4 l.44–46, guarded by the durable-version watermark).
  void ensure_durable(std::uint64_t ver) {
    if (durable_ver_.load(std::memory_order_acquire) >= ver) return;
    const std::uint64_t now = lay_->s.load(std::memory_order_acquire);
    // PERSIST: pwb writes back S's line as it is now (version >= ver);
    // psync makes it durable before we return (Alg. 4 l.44–46).
    persist::pwb(&lay_->s);
    persist::psync();
    bump_durable(pwf_detail::version(now));
  }
  std::uint64_t durable_version() const { return durable_ver_.load(std::memory_order_acquire); }

  // Average requests served per successful combining round.
  double combining_degree() const {
    const std::uint64_t rounds = sum(&ThreadState::rounds);
    return rounds == 0 ? 0.0 : static_cast<double>(sum(&ThreadState::served)) / static_cast<double>(rounds);
  }
  std::uint64_t rounds() const { return sum(&ThreadState::rounds); }
  // Helper write-backs performed / skipped thanks to the watermark.
  std::uint64_t helper_pwbs() const { return sum(&ThreadState::helper_pwbs); }
  std::uint64_t helper_skips() const { return sum(&ThreadState::helper_skips); }

 private:
  struct Request {
    // ORDER: kind and arg are relaxed; they are published by the seq_cst
    // store to `word` = (seq << 1) | valid, and read after loading it.
    std::atomic<std::int32_t> kind{0};
    std::atomic<std::int64_t> arg{0};
    std::atomic<std::uint64_t> word{0};
  };
  // The owner's private state, on its own padded block: the counters and
  // backoff are written every operation and must not share a line with the
  // request slots every combiner scans (reqs_).
  struct ThreadState {
    std::vector<std::uint64_t> scratch;  // DRAM copy the attempt works on
    std::vector<PWFEntry> batch;
    std::uint32_t backoff = 0;
    std::uint64_t vol_index = 0;  // kNoIndexPersist only: Index[p] in DRAM
    // Written only by the owner (relaxed load+store), summed by readers.
    std::atomic<std::uint64_t> rounds{0}, served{0}, helper_pwbs{0}, helper_skips{0};
  };

  std::size_t tag_off() const { return pwf_detail::kHdr + static_cast<std::size_t>(n_); }
  std::size_t state_off() const { return words_ - Obj::kStateWords; }

  std::uint64_t sum(std::atomic<std::uint64_t> ThreadState::*m) const {
    std::uint64_t r = 0;
    for (int p = 0; p < n_; ++p)
      r += ((*threads_[static_cast<std::size_t>(p)]).*m).load(std::memory_order_relaxed);
    return r;
  }
  static void inc(std::atomic<std::uint64_t>& c, std::uint64_t k = 1) {
    c.store(c.load(std::memory_order_relaxed) + k, std::memory_order_relaxed);
  }

  // apply's ids: those of the threads attached for.
  void check_tid(int p) const {
    if (p < 0 || p >= attached_)
      throw std::out_of_range("PWFcomb: thread id " + std::to_string(p) + " not in [0, " +
                              std::to_string(attached_) + ")" +
                              (p >= attached_ && p < n_
                                   ? " (attached for " + std::to_string(attached_) + " of its " + std::to_string(n_) +
                                         " threads; recover takes any id below " + std::to_string(n_) + ")"
                                   : std::string()));
  }
  // recover's ids: every slot of the capacity.
  void check_slot(int p) const {
    if (p < 0 || p >= n_)
      throw std::out_of_range("PWFcomb: thread id " + std::to_string(p) + " not in [0, " +
                              std::to_string(n_) + ") (the structure's thread capacity)");
  }
  // p's DRAM scratch, made at attach for the ids < threads() and on first
  // use for the others. Only p's (one) running operation touches it.
  void init_slot(int p) {
    auto& t = *threads_[static_cast<std::size_t>(p)];
    if (!t.scratch.empty()) return;
    t.scratch.assign(words_, 0);
    t.batch.reserve(static_cast<std::size_t>(n_));
  }
  static void check_seq(std::uint64_t seq) {
    if (kSeqTags && (seq == 0 || seq >= (1ull << 62)))
      throw std::invalid_argument("PWFcomb: seq must be in [1, 2^62)");
  }

  // Is the request with this seq served in record `rec` (tag or parity)?
  bool served_in(const std::uint64_t* rec, int q, std::uint64_t seq) const {
    if constexpr (kSeqTags) return pwf_detail::ld(rec + tag_off() + static_cast<std::size_t>(q)) == seq;
    else return ((pwf_detail::ld(rec + pwf_detail::kDeact) >> q) & 1u) == (seq & 1u);
  }
  bool served_now(int p, std::uint64_t seq) const {
    // I2: the tag/Deactivate of p is the same in every state after p's last
    // serve, so reading it from a record being recycled is still exact.
    const std::uint64_t s = lay_->s.load(std::memory_order_seq_cst);
    return served_in(recs_[pwf_detail::rec_id(s)], p, seq);
  }
  std::uint64_t read_ret(int p) const {
    const std::uint64_t s = lay_->s.load(std::memory_order_acquire);
    return pwf_detail::ld(recs_[pwf_detail::rec_id(s)] + pwf_detail::kHdr + static_cast<std::size_t>(p));
  }

  void announce(int p, std::int32_t kind, std::int64_t arg, std::uint64_t seq) {
    auto& r = *reqs_[static_cast<std::size_t>(p)];
    r.kind.store(kind, std::memory_order_relaxed);
    r.arg.store(arg, std::memory_order_relaxed);
    // ORDER: seq_cst store (xchg) orders the announcement before this
    // thread's (seq_cst) LL of S: a combiner that LLs a value of S
    // installed after our LL sees the request. The PSim argument "two failed
    // attempts => served" needs exactly this store->load order, which TSO's
    // store buffer does not give for free.
    r.word.store((seq << 1) | 1u, std::memory_order_seq_cst);
  }

  void bump_durable(std::uint64_t ver) {
    std::uint64_t cur = durable_ver_.load(std::memory_order_relaxed);
    // ORDER: release publishes "durable up to ver" after our psync.
    while (cur < ver && !durable_ver_.compare_exchange_weak(cur, ver, std::memory_order_release,
                                                            std::memory_order_relaxed)) {
    }
  }

  std::size_t clamp_used(std::size_t w) const {
    if (w < Obj::kFixedWords) return Obj::kFixedWords;
    if (w > Obj::kStateWords) return Obj::kStateWords;
    return w;
  }

  // Alg. 4, PerformRequest.
  std::uint64_t perform_request(int p, std::uint64_t seq) {
    using namespace pwf_detail;
    auto& t = *threads_[static_cast<std::size_t>(p)];
    std::uint64_t* sc = t.scratch.data();
    const std::size_t soff = state_off();
    std::uint64_t served_at = 0;  // version of the first S seen with our request served
    for (int attempt = 0;; ++attempt) {
      // ORDER: seq_cst (a plain load on x86) pairs with announce().
      const std::uint64_t s = lay_->s.load(std::memory_order_seq_cst);  // l.9 LL(S)
      const std::uint64_t* cur = recs_[rec_id(s)];
      // l.13: copy the current StateRec (optimistically; validated at l.18).
      const std::size_t fixed = soff + Obj::kFixedWords;
      for (std::size_t i = 0; i < fixed; ++i) sc[i] = ld(cur + i);
      std::size_t used = soff + clamp_used(obj_.used_state_words(sc + soff));
      for (std::size_t i = fixed; i < used; ++i) sc[i] = ld(cur + i);
      const PWFValidator vl(&lay_->s, s);
      if (!vl()) continue;  // l.18
      if (served_in(sc, p, seq)) {  // already served: nothing left to do (PSim early exit)
        served_at = version(s);
        break;
      }
      // (By the PSim argument at most two attempts reach this point: two
      // failed attempts mean two SCs after our announcement, the second of
      // which saw it. The loop nevertheless only exits once served.)
      // l.11: ind := Index[p] of the record we copied.
      std::uint64_t ind;
      if constexpr ((kFaults & pwf_fault::kNoIndexPersist) != 0) ind = t.vol_index;
      else ind = (sc[kIndex] >> p) & 1u;
      sc[kPid] = static_cast<std::uint64_t>(p);  // l.14
      // l.19–20: collect the active, valid requests.
      t.batch.clear();
      for (int q = 0; q < n_; ++q) {
        auto& rq = *reqs_[static_cast<std::size_t>(q)];
        // ORDER: seq_cst load (a plain mov on x86); also acquires kind/arg.
        // A newer announcement than the one our copy lacks can only be read
        // if q's previous request was served after our LL: then S changed
        // and our SC fails, so mixing fields of two requests is harmless.
        const std::uint64_t w = rq.word.load(std::memory_order_seq_cst);
        if ((w & 1u) == 0) continue;  // not valid (nothing announced since start/restart)
        const std::uint64_t qseq = w >> 1;
        if (served_in(sc, q, qseq)) continue;  // not active
        t.batch.push_back(PWFEntry{q, rq.kind.load(std::memory_order_relaxed),
                                   rq.arg.load(std::memory_order_relaxed), 0, qseq});
      }
      std::span<PWFEntry> batch(t.batch);
      if (!obj_.combine(p, sc + soff, batch, vl)) {  // l.21–22 (object aborts on failed VL)
        obj_.on_abort(p);
        continue;
      }
      for (const auto& e : batch) {
        const auto q = static_cast<std::size_t>(e.tid);
        sc[kHdr + q] = e.ret;  // l.23
        if constexpr (kSeqTags) sc[tag_off() + q] = e.act;  // l.24 (full tag)
        else sc[kDeact] = (sc[kDeact] & ~(1ull << q)) | ((e.act & 1u) << q);  // l.24
      }
      used = soff + clamp_used(obj_.used_state_words(sc + soff));
      if (!vl()) {  // l.26
        obj_.on_abort(p);
        continue;
      }
      std::uint64_t* mine = recs_[2 * static_cast<std::size_t>(p) + ind];
      // l.27: flip Index[p]; persisted with the record by l.28.
      if constexpr ((kFaults & pwf_fault::kNoIndexPersist) != 0) t.vol_index = 1 - ind;
      else sc[kIndex] ^= 1ull << p;
      // ORDER: release fence before overwriting our record (seqlock writer
      // side): a stale reader that sees one of these stores also sees, at
      // its VL, the S change we observed at our LL.
#if !defined(__SANITIZE_THREAD__)
      std::atomic_thread_fence(std::memory_order_release);
#endif  // under TSan the stores below are release instead (pwf_detail::st)
      for (std::size_t i = 0; i < used; ++i) st(mine + i, sc[i]);
      obj_.persist_side(p);          // PERSIST: new nodes before the record and S
      persist::pwb(mine, used * 8);  // PERSIST: Alg. 4 l.28 (one range: bits, ReturnVal, state)
      if constexpr ((kFaults & pwf_fault::kNoPfenceRecord) == 0) {
        // PERSIST: Alg. 4 l.29. A *helper* (l.44–46, another thread) may
        // make S durable as soon as it reads our SC's value, so the record
        // (and the nodes of persist_side) must be durable, not just
        // ordered, before the SC publishes it. On x86 the paper's pfence
        // (an sfence, which waits for the clwbs) gives that; under the
        // abstract model a pfence orders only this thread's write-backs, so
        // there it takes a psync. publish_fence issues whichever the
        // backend needs, so nosync and emulated:NS treat PWFcomb's l.29
        // like PBcomb's pfence (an ordering, not a durability wait).
        if constexpr ((kFaults & pwf_fault::kPfenceRecord) != 0) persist::pfence();  // BROKEN under abstract
        else persist::publish_fence();
      }
      std::uint64_t expected = s;
      const std::uint64_t ns = make_s(version(s) + 1, static_cast<std::uint32_t>(2 * p + ind));
      // ORDER: release publishes the record; acquire on failure (we reread S).
      if (lay_->s.compare_exchange_strong(expected, ns, std::memory_order_acq_rel,
                                          std::memory_order_acquire)) {  // l.31 SC
        persist::pwb(&lay_->s);  // PERSIST: Alg. 4 l.32
        persist::psync();        // PERSIST: Alg. 4 l.33 — before we return or reuse anything
        bump_durable(version(ns));  // l.34 (the watermark plays Flush[p])
        obj_.on_commit(p);
        inc(t.rounds);
        inc(t.served, batch.size());
        t.backoff = t.backoff / 2 > opts_.backoff_min ? t.backoff / 2 : opts_.backoff_min;
        return sc[kHdr + static_cast<std::size_t>(p)];  // l.35
      }
      obj_.on_abort(p);
      // l.36 BackoffCalculate(): the SC lost, wait longer next time.
      t.backoff = t.backoff * 2 + 1 < opts_.backoff_max ? t.backoff * 2 + 1 : opts_.backoff_max;
      for (std::uint32_t i = 0; i < t.backoff; ++i) sync::cpu_relax();
    }
    // l.38–48: served by another combiner; make a durable S cover it.
    if constexpr ((kFaults & pwf_fault::kNoHelperPwbS) == 0) {
      if (durable_ver_.load(std::memory_order_acquire) < served_at) {
        inc(t.helper_pwbs);
        ensure_durable(served_at);
      } else {
        inc(t.helper_skips);
      }
    }
    return read_ret(p);  // l.50 (I2: stable until our next announcement)
  }

  PWFCombLayout* lay_;
  int n_;         // the capacity (lay_->n): the records' entries, the request slots
  int attached_;  // the threads attached for: apply's ids [0, attached_)
  Obj& obj_;
  PWFOptions opts_;
  std::size_t words_ = 0;
  std::uint64_t* recs_[kPWFMaxRecs]{};
  std::unique_ptr<sync::CachePadded<ThreadState>[]> threads_;
  // Request[p] (Alg. 3), one padded block each: written by p once per
  // operation, read by every combiner's scan (l.19–20).
  std::unique_ptr<sync::CachePadded<Request>[]> reqs_;
  // Highest version of S known to be durable (volatile). Replaces the
  // paper's Flush[]/CombRound[][] test (see the header comment).
  alignas(sync::kPadding) std::atomic<std::uint64_t> durable_ver_{0};
};

}  // namespace ferrite::combining
