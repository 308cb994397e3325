// ferrite/combining/common.h — small pieces shared by the recoverable
// combining protocols (PBcomb, PWFcomb) and the structures built on them.
//
// Paper: "Recoverable software combining" (PBcomb/PWFcomb, PPoPP'22),
// /work/shared/papers/pbcomb-pwfcomb-recoverable-combining.txt.
//
//   * OpCode          the operations the sequential objects understand.
//   * response words  what a combiner writes into ReturnVal[q]: one 64-bit
//                     word; containers reserve two sentinels (empty, full),
//                     so stored values must be >= kMinValue.
//   * Fault           bitmask of deliberately removed persistence steps for
//                     the broken variants that the crash tests must catch
//                     (a constexpr template parameter; 0 = correct).
//   * RequestSlot     the volatile, cache-padded announcement RequestRec of
//                     Alg. 1 (func, args, activate, valid).
//   * CombineStats    combining degree (requests served per round).
//
// Thread safety: RequestSlot is written by its owner and read by combiners
// (release/acquire on `ctl`); CombineStats is written only by the thread
// holding the combiner role.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "ferrite/persist/persist.h"

namespace ferrite::combining {

// ------------------------------------------------------------------ ops
enum class OpCode : std::uint32_t {
  kNone = 0,
  kMul,        // AtomicFloat: v := v * k, returns old v (double bits)
  kRead,       // AtomicFloat: returns v
  kPush,       // stack
  kPop,
  kEnqueue,    // queue
  kDequeue,
  kInsert,     // bounded min-heap
  kDeleteMin,
  kGetMin,
};

// ---------------------------------------------------------- responses
// ReturnVal words. A pop/dequeue/delete-min on an empty structure answers
// kEmptyWord; an insert into a full bounded heap answers kFullWord; an
// acknowledged update answers kAckWord (its value carries no information).
inline constexpr std::uint64_t kEmptyWord = 0x8000'0000'0000'0000ull;  // INT64_MIN
inline constexpr std::uint64_t kFullWord = kEmptyWord + 1;
inline constexpr std::uint64_t kAckWord = 0;
// Smallest value a container may store (the two sentinels are excluded).
inline constexpr std::int64_t kMinValue = std::numeric_limits<std::int64_t>::min() + 2;

inline bool is_value_word(std::uint64_t w) { return w != kEmptyWord && w != kFullWord; }
inline std::int64_t word_value(std::uint64_t w) { return static_cast<std::int64_t>(w); }
inline std::uint64_t value_word(std::int64_t v) { return static_cast<std::uint64_t>(v); }

inline void check_value(std::int64_t v, const char* who) {
  if (v < kMinValue)
    throw std::invalid_argument(std::string(who) +
                                ": values INT64_MIN and INT64_MIN+1 are reserved (empty/full)");
}

// ------------------------------------------------------------- faults
// Each bit removes one persistence step (broken variants; default 0).
enum Fault : unsigned {
  kNoFaults = 0,
  kNoPfenceBetweenPwbs = 1u << 0,  // PBcomb Alg. 2 l.23 removed
  kNoPsyncBeforeUnlock = 1u << 1,  // PBcomb Alg. 2 l.27 removed
  kNoToPersist = 1u << 2,          // PBqueue Alg. 5 l.24 removed (nodes not written back)
  kNoOldTail = 1u << 3,            // PBqueue Alg. 6 l.57 removed (dequeuers pass the tail)
  kNoNodePwb = 1u << 4,            // PBstack: new nodes not written back
  kNoHelperPwbS = 1u << 5,         // PWFcomb (the PWF helper's)
};

// ------------------------------------------------------------ requests
// Alg. 1 RequestRec in DRAM, one per thread, alone on its cache lines.
// `ctl` packs (tag << 1) | valid, where tag is the request's sequence
// number (its low bit is the paper's activate bit). The owner writes op and
// arg first and publishes with a store to ctl; a combiner that observes a
// ctl newer than the served tag reads op/arg afterwards.
struct alignas(128) RequestSlot {
  // ORDER: op/arg are relaxed: they are published by the release (seq_cst)
  // store to ctl and read after an acquire load of ctl; the owner does not
  // rewrite them until its request has been served.
  std::atomic<std::uint32_t> op{0};
  std::atomic<std::int64_t> arg{0};
  std::atomic<std::uint64_t> ctl{0};

  void announce(OpCode o, std::int64_t a, std::uint64_t tag) {
    op.store(static_cast<std::uint32_t>(o), std::memory_order_relaxed);
    arg.store(a, std::memory_order_relaxed);
    // ORDER: seq_cst (xchg on x86) drains the store buffer before the
    // announcer reads Lock (Alg. 2 l.6): a combiner whose round starts after
    // the announcer saw the lock value lval must see this request, which is
    // what bounds the LockVal wait of Alg. 2 l.12 to one extra round.
    ctl.store((tag << 1) | 1u, std::memory_order_seq_cst);
  }
};

// ------------------------------------------------------------- stats
struct CombineStats {
  // Written only by the current combiner (under the combining lock, whose
  // release/acquire orders successive combiners), so a relaxed load+store
  // (no RMW) is enough; readers get a possibly slightly stale snapshot.
  std::atomic<std::uint64_t> rounds{0};
  std::atomic<std::uint64_t> served{0};

  void record(std::uint64_t k) {
    rounds.store(rounds.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    served.store(served.load(std::memory_order_relaxed) + k, std::memory_order_relaxed);
  }
  double degree() const {
    const auto r = rounds.load(std::memory_order_relaxed);
    return r == 0 ? 0.0
                  : static_cast<double>(served.load(std::memory_order_relaxed)) /
                        static_cast<double>(r);
  }
  void reset() {
    rounds.store(0, std::memory_order_relaxed);
    served.store(0, std::memory_order_relaxed);
  }
};

// Writes back each distinct cache line of a sequence of small objects once
// (nodes allocated consecutively share lines: persistence principle 3).
// Lines are compared with the previous one only, which is what consecutive
// allocation needs; a line revisited later is written back again (harmless).
class LineWriteback {
 public:
  void add(const void* p, std::size_t n) {
    auto a = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{persist::kCacheLine - 1};
    const auto end = reinterpret_cast<std::uintptr_t>(p) + n;
    for (; a < end; a += persist::kCacheLine) {
      if (a == last_) continue;
      persist::pwb(reinterpret_cast<const void*>(a));
      last_ = a;
    }
  }
  void reset() { last_ = 0; }

 private:
  std::uintptr_t last_ = 0;
};

}  // namespace ferrite::combining
