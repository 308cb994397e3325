// ferrite/combining/common.h — small pieces shared by the recoverable
// combining protocols (PBcomb, PWFcomb) and the structures built on them.
//
// Paper: Fatourou, Kallimanis, Kosmas, "The Performance Power of Software
// Combining in Persistence" (PBcomb/PWFcomb), PPoPP 2022.
//
//   * OpCode          ferrite/op.h's operation kinds, as the combiners name them.
//   * response words  what a combiner writes into ReturnVal[q]: one 64-bit
//                     word; containers reserve two sentinels (empty, full),
//                     so stored values must be >= kMinValue.
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

#include "ferrite/sync/thread_registry.h"
#include "ferrite/combining/internal/faults.h"
#include "ferrite/op.h"
#include "ferrite/persist/line_writeback.h"
#include "ferrite/persist/persist.h"

namespace ferrite::combining {

// ------------------------------------------------------------------ ops
// The operations the sequential objects understand are Ferrite's one
// vocabulary (ferrite/op.h): kMul/kRead (AtomicFloat), kPush/kPop,
// kEnqueue/kDequeue, kInsert/kDeleteMin/kGetMin (bounded min-heap).
using OpCode = op::Kind;

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

// A response word as the vocabulary's response (ferrite/op.h): pops,
// dequeues, delete-mins and get-mins answer a value or empty; pushes,
// enqueues and inserts answer an ack even when the acked word happens to
// equal a value (0); an insert into a full bounded heap answers none.
inline op::Response response_of(std::int32_t kind, std::uint64_t w) {
  if (kind == op::kPush || kind == op::kEnqueue || kind == op::kInsert)
    return w == kFullWord ? op::Response::none() : op::Response::ack();
  if (!is_value_word(w)) return op::Response::none();
  return op::Response::of(word_value(w));
}

[[noreturn]] inline void unsupported_op(const char* who, const op::Op& o) {
  throw std::invalid_argument(std::string(who) + ": operation '" + std::string(op::kind_name(o.kind)) +
                              "' is not one of this structure's");
}

inline void check_value(std::int64_t v, const char* who) {
  if (v < kMinValue)
    throw std::invalid_argument(std::string(who) +
                                ": values INT64_MIN and INT64_MIN+1 are reserved (empty/full)");
}

// ------------------------------------------------------------- faults
// The fault bits of the deliberately broken variants (a persistence step
// removed) live in combining/internal/faults.h: test machinery, not API.

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

// ------------------------------------------------------------- records
// StateRec blocks are allocated in whole cache lines, so the two records of
// a PBcomb instance (and a PWFcomb thread's two) never share a line: a
// combiner writing one must not invalidate the line that readers of the
// other are copying, and a pwb of one must not write back the other. The
// layout (rec_bytes) keeps the exact size; only the block is rounded.
inline std::size_t record_block_bytes(std::size_t bytes) {
  return (bytes + persist::kCacheLine - 1) & ~(persist::kCacheLine - 1);
}

// LineWriteback (persist/line_writeback.h): one pwb per distinct line of
// consecutively allocated nodes (persistence principle 3).
using persist::LineWriteback;

}  // namespace ferrite::combining
