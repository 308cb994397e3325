// ferrite/crash/history.h — per-thread operation histories for crash campaigns.
//
// What it is: one append-only log per thread. A thread records the
// invocation of an operation (op, seq, a real-time stamp) before running it,
// and its response (value, stamp) when it returns. An operation invoked but
// not responded to is *pending*. Stamps come from one global atomic counter,
// so "a responded before b was invoked" (a.response_stamp < b.invoke_stamp)
// is a sound real-time order.
//
// Thread safety: invoke/respond for thread `tid` must be called only by that
// thread (single writer per log, no locks); snapshot() may run at any time
// and in a fork()ed child — it takes no lock and allocates only in the
// caller. Records are published with release stores of the log length and
// of the per-record state, so a snapshot never sees a half-written record.
//
// Invariants: capacity is fixed at reset(); exceeding it throws
// std::length_error (the campaign sizes it from the op count).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "ferrite/crash/subject.h"

namespace ferrite::crash {

inline constexpr std::uint64_t kPendingStamp = ~std::uint64_t{0};

// One operation of a history, as the checkers see it.
struct HistoryOp {
  int tid = 0;
  std::uint64_t seq = 0;
  Op op;
  std::uint64_t invoke = 0;             // real-time stamp
  std::uint64_t respond = kPendingStamp;  // kPendingStamp while pending
  Response response;                    // meaningful when completed()
  bool completed() const { return respond != kPendingStamp; }
};

class History {
 public:
  History() = default;
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  // Forgets everything; room for `per_thread` operations per thread.
  void reset(int threads, std::size_t per_thread);
  int threads() const { return static_cast<int>(logs_.size()); }

  // Returns the record index to pass to respond().
  std::size_t invoke(int tid, std::uint64_t seq, const Op& op);
  void respond(int tid, std::size_t index, const Response& r);

  // All operations, per thread in program order, threads in id order.
  std::vector<HistoryOp> snapshot() const;

 private:
  struct Record {
    Op op;
    std::uint64_t seq = 0;
    std::uint64_t invoke = 0;
    std::uint64_t respond = 0;
    Response response;
    std::atomic<std::uint32_t> done{0};  // 1 once response fields are written
  };
  struct alignas(128) Log {
    std::unique_ptr<Record[]> records;
    std::size_t capacity = 0;
    std::atomic<std::size_t> size{0};
  };
  std::uint64_t stamp() {
    // ORDER: acq_rel RMWs on one counter are totally ordered and ordered with
    // the surrounding operation in each thread, so stamp order respects
    // real-time order.
    return clock_.fetch_add(1, std::memory_order_acq_rel) + 1;
  }
  std::vector<std::unique_ptr<Log>> logs_;
  std::atomic<std::uint64_t> clock_{0};
};

}  // namespace ferrite::crash
