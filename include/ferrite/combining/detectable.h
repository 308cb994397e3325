// ferrite/combining/detectable.h — the per-thread persistent operation
// record that detectable recovery needs from "the system" (PBcomb paper §2:
// the system persists what is needed to call, after a crash, the recovery
// function of each thread with the same op, arguments and seq).
//
// What it is. A root object "OpLog" with, per thread, two 32-byte records
// {seq, op, arg, arg2} in one cache line. begin(tid, op, arg) picks the next
// seq, writes the record and makes it durable *before* the application
// invokes the operation; after a restart pending(tid) returns the latest
// record, and the application calls the structure's
// recover(tid, rec.seq, rec.op, rec.arg) — which completes the operation if
// it had not taken effect and returns its response either way (so calling
// it for an operation that had completed is fine: it returns the same
// response again).
//
// Thread safety: begin/pending for distinct tids may run concurrently.
//
// Persistence / crash-atomicity. The record for seq goes to slot seq % 2,
// leaving the previous record intact. Its op/args are written back and a
// pfence orders them before the seq word is written and written back, then
// psync. A line may tear at 8-byte boundaries, so after a crash a slot
// either carries the new seq with its new op/args, or its old seq (smaller
// than the other slot's) — pending() takes the slot with the larger seq, so
// it never pairs a seq with another operation's arguments. If begin() did
// not complete, pending() returns the previous operation (already
// completed: recover answers its response again), and the new operation was
// never invoked.
//
// Cost: 2 pwb (same line), 1 pfence, 1 psync per operation. Benchmarks
// exclude it (as the paper does).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ferrite/combining/common.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"

namespace ferrite::combining {

struct OpRecord {
  std::uint64_t seq = 0;  // 0: none
  std::uint32_t op = 0;   // OpCode (or the application's own code)
  std::uint32_t reserved = 0;
  std::int64_t arg = 0;
  std::int64_t arg2 = 0;
};
static_assert(sizeof(OpRecord) == 32);

struct OpLogRoot {
  static constexpr std::uint32_t kTypeTag = 0x4f504c47;  // "OPLG"
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "combining::OpLog";
  static constexpr int kMaxThreads = 64;

  struct alignas(64) Line {
    OpRecord slot[2];
  };
  std::uint32_t threads;
  std::uint32_t reserved = 0;
  alignas(64) Line lines[kMaxThreads];

  explicit OpLogRoot(int n) : threads(static_cast<std::uint32_t>(n)) {}
};

class OpLog {
 public:
  static OpLog create(pmem::Pool& pool, std::string_view name, int threads) {
    if (threads <= 0 || threads > OpLogRoot::kMaxThreads)
      throw std::invalid_argument("OpLog: threads must be in [1, 64]");
    return OpLog(pool.create_root<OpLogRoot>(name, threads), threads);
  }
  static OpLog attach(pmem::Pool& pool, std::string_view name, int threads) {
    auto* r = pool.root<OpLogRoot>(name);
    if (r->threads != static_cast<std::uint32_t>(threads))
      throw std::invalid_argument("OpLog '" + std::string(name) + "' was created for " +
                                  std::to_string(r->threads) + " threads, attach asked for " +
                                  std::to_string(threads));
    return OpLog(r, threads);
  }

  // Persists (seq = last + 1, op, arg, arg2) for tid; returns seq. Call it
  // right before invoking the operation with that seq.
  std::uint64_t begin(int tid, std::uint32_t op, std::int64_t arg, std::int64_t arg2 = 0) {
    auto& line = line_of(tid);
    const std::uint64_t seq = last_seq(tid) + 1;
    OpRecord& r = line.slot[seq % 2];
    r.op = op;
    r.arg = arg;
    r.arg2 = arg2;
    persist::pwb(&r, sizeof(OpRecord));
    // PERSIST: op/args durable-ordered before the seq that validates them.
    persist::pfence();
    std::atomic_ref<std::uint64_t>(r.seq).store(seq, std::memory_order_relaxed);
    persist::pwb(&r.seq);
    // PERSIST: the record is durable before the operation starts.
    persist::psync();
    return seq;
  }
  std::uint64_t begin(int tid, OpCode op, std::int64_t arg) {
    return begin(tid, static_cast<std::uint32_t>(op), arg);
  }

  // The latest record of tid (nullopt if tid never began an operation).
  std::optional<OpRecord> pending(int tid) const {
    const auto& line = line_of(tid);
    const OpRecord& a = line.slot[0];
    const OpRecord& b = line.slot[1];
    const OpRecord& r = a.seq >= b.seq ? a : b;
    if (r.seq == 0) return std::nullopt;
    return r;
  }
  std::uint64_t last_seq(int tid) const {
    const auto& line = line_of(tid);
    return std::max(line.slot[0].seq, line.slot[1].seq);
  }
  int threads() const { return n_; }
  const void* root() const { return root_; }

 private:
  OpLog(OpLogRoot* r, int n) : root_(r), n_(n) {}
  OpLogRoot::Line& line_of(int tid) const {
    if (tid < 0 || tid >= n_) throw std::out_of_range("OpLog: thread id out of range");
    return root_->lines[tid];
  }
  OpLogRoot* root_;
  int n_;
};

}  // namespace ferrite::combining
