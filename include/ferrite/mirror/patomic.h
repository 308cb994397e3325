// ferrite/mirror/patomic.h — Mirror's patomic<T> and pconst<T>.
//
// What it is. patomic<T> is std::atomic<T> made persistent the Mirror way
// (Friedman, Petrank, Ramalhete, PLDI 2021, §3.2, §4.1, Figures 2, 4, 5):
// every field exists twice, as (value, sequence number) on the persistent
// replica rep_p and on the volatile replica rep_v, at a constant distance
// (mirror/placement.h). A structure holds rep_v addresses; `this` is always
// the rep_v copy and rep_p is this - delta. Converting a lock-free structure
// is a type change: std::atomic<T> -> patomic<T>, new -> Heap::make
// (mirror/heap.h), plus a trace function for recovery.
//
//   load()                      Fig. 5: the value word of rep_v, nothing else
//                               (wait-free; never written back, never fenced).
//   compare_exchange_strong     Fig. 4, line by line (the l. numbers below).
//   store, exchange, fetch_add, fetch_sub, fetch_or
//                               §4.1.2: the CAS in a loop until it succeeds.
//   compare_exchange_weak       = strong (no spurious failure).
// Memory orders are accepted for std::atomic compatibility: a DWCAS is a full
// barrier (lock cmpxchg16b), so every update is sequentially consistent
// whatever is asked; load uses the order it is given.
//
// pconst<T> is an immutable field (a key): one value per replica, no
// sequence number (§4.1.1: "immutable fields ... do not require it"),
// written once when the object is made — Heap::make copies the new object
// to rep_p and writes it back before it can be published.
//
// T: trivially copyable, at most 8 bytes (a pointer, an integer, a small
// struct). Wider fields are not supported (§4.1.2, last paragraph: algorithms
// with double-word fields already version them; not needed here).
//
// Thread safety: every member but the constructors is safe concurrently.
//
// Invariants (Lemmas 5.3–5.5), for one field with rep_p = (vp, sp) and
// rep_v = (vv, sv):
//   I1  sv <= sp <= sv + 1: rep_v is at most one write behind rep_p.
//   I2  sp == sv implies vp == vv (one value per sequence number).
//   I3  rep_p changes only from a state with sp == sv (l.29, l.40).
//   I4  the sequence number of a field never decreases on either replica.
// Persistence invariants:
//   P1  a value is durable on rep_p before it appears on rep_v: every
//       DWCAS of rep_v (l.24, l.44, l.47) follows a write-back of rep_p and
//       a psync by the same thread (l.20–21, l.41–42). Loads read rep_v
//       only, so whatever any thread has read is durable (§5).
//   P2  an update is linearized at its DWCAS of rep_v (§5), hence after it
//       is durable: a completed operation survives a crash.
// Recovery: rep_v := rep_p for every reachable object (mirror/heap.h);
// rep_p holds for each field the last value any CAS wrote there, which is
// either linearized already or may be linearized at the crash (§5, Theorem
// 5.1's proof: "linearizes those i successful CASes").
#pragma once

#if !defined(__GCC_HAVE_SYNC_COMPARE_AND_SWAP_16)
#error "Mirror's patomic<T> needs an inline 16-byte CAS (x86-64 lock cmpxchg16b) to update a value and its sequence number together: build with -mcx16 on a CPU that has cmpxchg16b"
#endif

#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ferrite/mirror/internal/faults.h"
#include "ferrite/mirror/placement.h"
#include "ferrite/persist/persist.h"
#include "ferrite/sync/dwcas.h"

namespace ferrite::mirror {

template <class T>
concept PatomicValue = std::is_trivially_copyable_v<T> && sizeof(T) <= 8;

namespace internal {
// One replica of a field: Fig. 2's (value, sequence), 16-aligned for DWCAS.
struct alignas(16) Word {
  std::uint64_t val;
  std::uint64_t seq;
  friend bool operator==(const Word&, const Word&) = default;
};
static_assert(sync::DoubleWord<Word>);

template <PatomicValue T>
inline std::uint64_t to_bits(T v) {
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <PatomicValue T>
inline T from_bits(std::uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}
template <class C>
concept HasCasHook = requires(const void* p) { C::hooks::after_persistent_cas(p); };
}  // namespace internal

template <PatomicValue T, class C = Default>
class alignas(16) patomic {
 public:
  using value_type = T;
  using config = C;
  static constexpr bool is_always_lock_free = true;

  // Constructs the rep_v copy only; Heap::make copies the whole object to
  // rep_p and writes it back before the object can be published.
  constexpr patomic() noexcept : val_(0), seq_(0) {}
  patomic(T v) noexcept : val_(internal::to_bits(v)), seq_(0) {}  // NOLINT: as std::atomic
  patomic(const patomic&) = delete;
  patomic& operator=(const patomic&) = delete;

  bool is_lock_free() const noexcept { return true; }

  // Fig. 5: the value of rep_v. Its linearization point is this load (§5).
  T load(std::memory_order o = std::memory_order_seq_cst) const noexcept {
    return internal::from_bits<T>(val_.load(o));
  }
  operator T() const noexcept { return load(); }  // NOLINT: as std::atomic

  // Fig. 4.
  bool compare_exchange_strong(T& expected, T desired, std::memory_order = std::memory_order_seq_cst,
                               std::memory_order = std::memory_order_seq_cst) noexcept {
    return cas(expected, desired);
  }
  bool compare_exchange_weak(T& expected, T desired, std::memory_order = std::memory_order_seq_cst,
                             std::memory_order = std::memory_order_seq_cst) noexcept {
    return cas(expected, desired);
  }

  // §4.1.2: "simple write and FAA ... keeps on calling the CAS operation in a
  // loop until it succeeds". On failure the CAS refreshes `cur` (l.33).
  void store(T desired, std::memory_order = std::memory_order_seq_cst) noexcept {
    T cur = load(std::memory_order_acquire);
    while (!cas(cur, desired)) {
    }
  }
  T operator=(T desired) noexcept {  // NOLINT: as std::atomic
    store(desired);
    return desired;
  }
  T exchange(T desired, std::memory_order = std::memory_order_seq_cst) noexcept {
    T cur = load(std::memory_order_acquire);
    while (!cas(cur, desired)) {
    }
    return cur;
  }
  T fetch_add(T d, std::memory_order = std::memory_order_seq_cst) noexcept
    requires(std::is_integral_v<T>)
  {
    T cur = load(std::memory_order_acquire);
    while (!cas(cur, static_cast<T>(cur + d))) {
    }
    return cur;
  }
  T fetch_sub(T d, std::memory_order = std::memory_order_seq_cst) noexcept
    requires(std::is_integral_v<T>)
  {
    T cur = load(std::memory_order_acquire);
    while (!cas(cur, static_cast<T>(cur - d))) {
    }
    return cur;
  }

  T fetch_or(T m, std::memory_order = std::memory_order_seq_cst) noexcept
    requires(std::is_integral_v<T>)
  {
    T cur = load(std::memory_order_acquire);
    while (!cas(cur, static_cast<T>(cur | m))) {
    }
    return cur;
  }

  // ---------------------------------------------------------- not std::atomic
  // Both replicas' (value, sequence), for tests and tools (not linearizable
  // with concurrent updates: call when quiescent).
  struct Replicas {
    internal::Word p, v;
  };
  Replicas replicas() const noexcept {
    const auto* p = persistent();
    return {{p->val_.load(std::memory_order_acquire), p->seq_.load(std::memory_order_acquire)},
            {val_.load(std::memory_order_acquire), seq_.load(std::memory_order_acquire)}};
  }
  // The rep_p copy of this field (recovery traces read it).
  const patomic* persistent() const noexcept { return rep_p_of<C>(this); }
  patomic* persistent() noexcept { return rep_p_of<C>(this); }

 private:
  internal::Word* word() noexcept { return reinterpret_cast<internal::Word*>(this); }

  bool cas(T& expected, T desired) noexcept {
    using internal::Word;
    patomic* const rp = persistent();  // l.3 REP_V_2_REP_P(this)
    Word* const pw = rp->word();
    Word* const vw = word();
    const std::uint64_t exp = internal::to_bits(expected);
    const std::uint64_t des = internal::to_bits(desired);
    for (;;) {  // l.4
      // ORDER: acquire loads, in this order: seq, value, seq on rep_p
      // (l.5–7), then on rep_v (l.9–11). A (value, seq) pair is consistent
      // when both seq reads agree (l.14): a DWCAS writes both words at once.
      const std::uint64_t p_seq = rp->seq_.load(std::memory_order_acquire);        // l.5
      const std::uint64_t p_val = rp->val_.load(std::memory_order_acquire);        // l.6
      const std::uint64_t p_seq_again = rp->seq_.load(std::memory_order_acquire);  // l.7
      const std::uint64_t v_seq = seq_.load(std::memory_order_acquire);            // l.9
      const std::uint64_t v_val = val_.load(std::memory_order_acquire);            // l.10
      const std::uint64_t v_seq_again = seq_.load(std::memory_order_acquire);      // l.11
      if (p_seq_again != p_seq || v_seq_again != v_seq) continue;                 // l.14–16

      if (p_seq == v_seq + 1) {  // l.19: a write is in flight (I1); help it.
        // PERSIST: Fig. 4 l.20–21: the in-flight value is written back and
        // durable before this helper shows it on rep_v (P1). psync, not
        // pfence: a thread that then loads the value from rep_v may make its
        // own updates durable, and only a psync of this line orders ours
        // before theirs (docs/mirror.md, "Deviations": fences).
        if constexpr (!C::has(internal::kHelperNoPwb)) persist::pwb(pw, sizeof(Word));
        persist::psync();
        // ORDER: l.22–24: moves rep_v from what we read to what rep_p holds;
        // fails harmlessly if someone else did it first (I4: seq moved on).
        sync::dwcas(vw, Word{v_val, v_seq}, Word{p_val, p_seq});
        continue;  // l.25
      }
      if (p_seq != v_seq) continue;  // l.29: rep_v read ahead of our rep_p read

      if (p_val != exp) {  // l.32: linearized at the load of rep_p's value (§5)
        expected = internal::from_bits<T>(p_val);  // l.33
        return false;                              // l.34
      }

      Word before{p_val, p_seq};                                                            // l.38
      const Word after{des, C::has(internal::kNoSeq) ? p_seq : p_seq + 1};                 // l.39
      // CRASH: once this DWCAS reaches the media (a write-back by us, l.41, by
      // a helper, l.20, or an eviction) the new value survives a crash,
      // linearized at the crash if nobody saw it yet (§5, Theorem 5.1).
      // The 16-byte CAS changes both words of one line at once in the cache,
      // so hardware persists them together (a line reaches the media from
      // one snapshot). The abstract model may still tear the line at 8-byte
      // words (new value, old seq, or the reverse); that is harmless: after
      // a crash only the value word matters — recovery copies rep_p's
      // (value, seq) to rep_v, so the replicas agree whatever seq is — and
      // the value word alone is either the old value (the CAS did not
      // persist) or the new one (it did). Hence no persist::declare_store.
      const bool res = sync::dwcas(pw, before, after);  // l.40
      // l.40's DWCAS "updates before if it fails": sync::dwcas answers only
      // success, so the failed case reads rep_p again, atomically. If that
      // read has sequence p_seq + 1 it is exactly the value that made l.40
      // fail (rep_p holds one value per sequence number, I2/I4). If rep_p
      // has moved further, the value that made l.40 fail is gone: we retry
      // (below, after l.42) instead of failing with a value rep_v may not
      // show yet — failing then could be unlinearizable (A,s -> A,s+1 by
      // another CAS, then C,s+2 still in flight: the value is A throughout).
      if (!res) before = sync::dwload(pw);
      // PERSIST: Fig. 4 l.41–42: rep_p written back and durable before the
      // value reaches rep_v (l.44, or l.47 for the winner's value) — P1.
      // psync rather than pfence for the reason given at l.21.
      if constexpr (!C::has(internal::kNoPwbBeforeVolatile)) persist::pwb(pw, sizeof(Word));
      persist::psync();
      if constexpr (internal::HasCasHook<C>) C::hooks::after_persistent_cas(this);
      if (res) {
        // ORDER: l.44, the linearization point of a successful CAS (§5). A
        // failure means a helper already did it (l.24): nothing to do.
        sync::dwcas(vw, before, after);
        return true;  // l.49
      }
      if (before.seq != after.seq) continue;  // see l.40: not the value that made it fail
      if (before.val == exp) continue;  // l.46: same value, newer seq: a strong CAS must not fail
      sync::dwcas(vw, Word{v_val, v_seq}, before);  // l.47: help the winner before failing
      // std::atomic semantics: a failed CAS returns the current value (the
      // figure leaves `expected` as it was; linearized at l.40's failure).
      expected = internal::from_bits<T>(before.val);
      return false;  // l.49
    }
  }

  // Fig. 2. Accessed as two 8-byte atomics (the reads of l.5–11 and loads)
  // and as one 16-byte word (the DWCAS of l.24, l.40, l.44, l.47).
  std::atomic<std::uint64_t> val_;
  std::atomic<std::uint64_t> seq_;
};
static_assert(sizeof(patomic<std::uint64_t>) == 16 && alignof(patomic<std::uint64_t>) == 16);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

// An immutable field: one copy per replica, no sequence number (§4.1.1).
template <class T, class C = Default>
  requires std::is_trivially_copyable_v<T>
class pconst {
 public:
  using value_type = T;
  constexpr pconst() noexcept = default;
  pconst(T v) noexcept : v_(v) {}  // NOLINT: set once, by the object's constructor
  pconst(const pconst&) = delete;
  pconst& operator=(const pconst&) = delete;
  // rep_v's copy. Plain load: the value is written before the object is
  // published (a release CAS) and never again.
  T get() const noexcept { return v_; }
  T load(std::memory_order = std::memory_order_seq_cst) const noexcept { return v_; }
  operator T() const noexcept { return v_; }  // NOLINT
  const pconst* persistent() const noexcept { return rep_p_of<C>(this); }

 private:
  T v_{};
};

}  // namespace ferrite::mirror
