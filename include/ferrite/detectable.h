// ferrite/detectable.h — exactly-once operations across crashes, the same
// way for every detectable structure: begin, complete, recover.
//
// Detectable recovery (the PBcomb paper, Fatourou, Kallimanis, Kosmas,
// PPoPP 2022, §2): after a crash, each thread calls the structure's
// recovery function with the operation it was running — same op, same
// arguments, same sequence number seq — and learns whether it took effect
// and its response; if it had not, recovery completes it. The structure
// records responses per (thread, seq) in its own persistent state (PBcomb's
// ReturnVal/Deactivate, PWFcomb's StateRec); what the *system* must persist
// is the (seq, op, args) each thread was running. That is OpLog.
//
//   ferrite::sync::ThreadRegistry threads(4);
//   auto log = ferrite::OpLog::open_or_create(*pool, "oplog", 4);
//   auto queue = pool->open_or_create<ferrite::combining::PBQueue<>>("jobs", 4);
//   ferrite::Detectable<ferrite::combining::PBQueue<>> jobs(*queue, log);
//   auto me = threads.acquire();
//   if (auto r = jobs.recover(me)) { ... r->op was pending; r->response is its answer ... }
//   auto job = jobs.run(me, {ferrite::op::kDequeue});   // = begin + complete
//
// A structure S is detectable when it offers, for the vocabulary of op.h,
//   op::Response apply(int tid, std::uint64_t seq, const op::Op& o);
//   op::Response recover(int tid, std::uint64_t seq, const op::Op& o);
// with recover answering the same response as apply would have, and
// completing the operation if it had not taken effect. Every PBcomb and
// PWFcomb structure does (combining/*.h).
//
// OpLog layout and crash atomicity. A root "OpLog" holds, per thread, two
// 32-byte records {seq, op, check, arg, arg2} in one cache line. begin()
// writes the record for seq into slot seq % 2 (the previous record stays
// intact): op/args and `check`, a 32-bit checksum of the whole record with
// the seq it is about to take (record_check), written back, pfence, then
// writes and writes back seq, then psync:
// the record is durable before the operation starts. A line may tear at
// 8-byte boundaries, so after a crash a slot carries either the new seq with
// its new op/args or its old seq (smaller than the other slot's); pending()
// takes the slot with the larger seq, so it never pairs a seq with another
// operation's arguments. If begin() did not complete, pending() returns the
// previous operation (completed: recover answers its response again) and the
// new one was never invoked.
//
// Validation (pool recovery's hook, so `ferrite check` and Pool::open): in
// every state a crash can leave, each thread's line has slot[i].seq of
// parity i (or 0), the two seqs differ by exactly 1 (or both are 0), and
// the slot with the larger seq carries its checksum (begin's
// pfence orders `check` before the seq that makes the slot the latest; the
// other slot may hold a begin's half-written record). A line that breaks
// any of these is damage, not a crash: the root is refused, naming the
// thread and the word, instead of a pending() that answers a seq or
// arguments never written. Cost: 2 pwb (one line), 1 pfence, 1 psync per
// operation; benchmarks exclude it, as the paper does.
//
// One OpLog serves one structure: its seqs are that structure's per-thread
// sequence numbers, which must be consecutive (PBcomb's toggle bit is the
// seq's parity). Do not mix a structure's seq-less convenience overloads
// with Detectable on the same structure.
//
// Thread capacity: the count at creation is a capacity (<= 64; by default
// kDefaultThreads = 64); attach asks for any 1..capacity (by default,
// kAsCreated: all of it; more throws, naming both), begin takes the attach's
// ids, pending any id below the capacity (Detectable::recover(tid)).
//
// Thread safety: begin/complete/recover/pending for distinct threads may run
// concurrently; one thread handle runs one operation at a time.
#pragma once

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <functional>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferrite/op.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"
#include "ferrite/sync/thread_registry.h"

namespace ferrite {

struct OpRecord {
  std::uint64_t seq = 0;  // 0: none
  std::uint32_t op = 0;   // op::Kind (or the application's own code)
  std::uint32_t check = 0;  // record_check(seq, op, arg, arg2): set with op/args, before seq
  std::int64_t arg = 0;
  std::int64_t arg2 = 0;
};
static_assert(sizeof(OpRecord) == 32);
static_assert(offsetof(OpRecord, seq) == 0 && offsetof(OpRecord, op) == 8 && offsetof(OpRecord, check) == 12 &&
              offsetof(OpRecord, arg) == 16 && offsetof(OpRecord, arg2) == 24);

// The checksum a record for `seq` carries (never 0 for a record that was
// written, so a zeroed record does not pass as one).
constexpr std::uint32_t record_check(std::uint64_t seq, std::uint32_t op, std::int64_t arg, std::int64_t arg2) {
  std::uint64_t h = 0x4f504c47'52454331ull;  // "OPLGREC1"
  for (const std::uint64_t w : {seq, static_cast<std::uint64_t>(op), static_cast<std::uint64_t>(arg),
                                static_cast<std::uint64_t>(arg2)}) {
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 31;
  }
  const auto c = static_cast<std::uint32_t>(h >> 32);
  return c == 0 ? 1 : c;
}

struct OpLogRoot {
  static constexpr std::uint32_t kTypeTag = 0x4f504c47;  // "OPLG"
  // Version 3: each record carries its checksum (OpRecord::check); 2 had
  // none (a flipped seq was a seq never written), 1 used combining's own op
  // codes. Older roots are refused as another type version.
  static constexpr std::uint32_t kTypeVersion = 3;
  static constexpr const char* kTypeName = "ferrite::OpLog";
  static constexpr int kMaxThreads = 64;

  struct alignas(64) Line {
    OpRecord slot[2];
  };
  std::uint32_t threads;
  std::uint32_t reserved = 0;
  alignas(64) Line lines[kMaxThreads];

  explicit OpLogRoot(int n) : threads(static_cast<std::uint32_t>(n)) {}
};
static_assert(sizeof(OpLogRoot::Line) == 64);
static_assert(offsetof(OpLogRoot, lines) == 64);

class OpLog {
 public:
  static OpLog create(pmem::Pool& pool, std::string_view name, int threads = kDefaultThreads) {
    if (threads <= 0 || threads > OpLogRoot::kMaxThreads)
      throw std::invalid_argument("OpLog: threads must be in [1, 64], got " + std::to_string(threads));
    return OpLog(pool.create_root<OpLogRoot>(name, threads), threads, threads);
  }
  // Any 1 <= threads <= the capacity the log was created for.
  // kAsCreated (the default): every id of that capacity.
  static OpLog attach(pmem::Pool& pool, std::string_view name, int threads = kAsCreated) {
    auto* r = pool.root<OpLogRoot>(name);
    const int cap = capacity_for(*r, name, threads);
    return OpLog(r, threads == kAsCreated ? cap : threads, cap);
  }
  // kAsCreated (the default): attach with every id, or create with
  // kDefaultThreads.
  static OpLog open_or_create(pmem::Pool& pool, std::string_view name, int threads = kAsCreated) {
    return pool.has_root(name) ? attach(pool, name, threads)
                               : create(pool, name, threads == kAsCreated ? kDefaultThreads : threads);
  }
  // Persists (seq = last + 1, op, arg, arg2) for tid; returns seq. Call it
  // right before invoking the operation with that seq.
  std::uint64_t begin(int tid, std::uint32_t op, std::int64_t arg, std::int64_t arg2 = 0) {
    auto& line = attached_line(tid);
    const std::uint64_t seq = last_seq(tid) + 1;
    OpRecord& r = line.slot[seq % 2];
    r.op = op;
    r.check = record_check(seq, op, arg, arg2);
    r.arg = arg;
    r.arg2 = arg2;
    persist::pwb(&r, sizeof(OpRecord));
    // PERSIST: op/args and their checksum durable-ordered before the seq
    // that validates them (the hook's "the latest slot carries its checksum").
    persist::pfence();
    std::atomic_ref<std::uint64_t>(r.seq).store(seq, std::memory_order_relaxed);
    persist::pwb(&r.seq);
    // PERSIST: the record is durable before the operation starts.
    persist::psync();
    return seq;
  }
  std::uint64_t begin(int tid, const op::Op& o) {
    return begin(tid, static_cast<std::uint32_t>(o.kind), o.arg, o.arg2);
  }

  // The latest record of tid (nullopt if tid never began an operation);
  // tid may be any id below max_threads().
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
  // The root holds no pointers: pool recovery keeps it and marks nothing
  // else. It validates the word every reader indexes by (the thread
  // capacity, in [1, 64]), so that pending() never indexes past the root,
  // and every line of that capacity (the header's "Validation"): damage
  // leaves the root closed (PoolError kCorrupt naming the offset) instead
  // of a pending() that answers what was never written.
  static void recover_root(pmem::Pool& pool, OpLogRoot* r, const std::function<void(void*)>&) {
    auto corrupt = [&](const void* at, const std::string& what) {
      char off[24];
      std::snprintf(off, sizeof off, "0x%llx", static_cast<unsigned long long>(pool.offset_of(at)));
      return pmem::PoolError(pmem::Errc::kCorrupt, "OpLog: " + what + " (the word at offset " + off + ")");
    };
    if (r->threads == 0 || r->threads > static_cast<std::uint32_t>(OpLogRoot::kMaxThreads))
      throw corrupt(&r->threads, "the thread capacity " + std::to_string(r->threads) + " is not in [1, 64]");
    for (std::uint32_t t = 0; t < r->threads; ++t) {
      const OpRecord* s = r->lines[t].slot;
      const std::string who = "thread " + std::to_string(t) + "'s record";
      for (int i = 0; i < 2; ++i)
        if (s[i].seq != 0 && s[i].seq % 2 != static_cast<std::uint64_t>(i))
          throw corrupt(&s[i].seq, who + " in slot " + std::to_string(i) + " has seq " + std::to_string(s[i].seq) +
                                       ", of the other slot's parity");
      const int hi = s[0].seq >= s[1].seq ? 0 : 1;
      const std::uint64_t top = s[hi].seq, low = s[1 - hi].seq;
      if (top == 0) continue;  // the thread never began an operation
      if (top - low != 1)
        throw corrupt(&s[1 - hi].seq, who + "s have seqs " + std::to_string(low) + " and " + std::to_string(top) +
                                          " (consecutive in every state a crash leaves)");
      if (s[hi].check != record_check(top, s[hi].op, s[hi].arg, s[hi].arg2))
        throw corrupt(&s[hi].seq, who + " of seq " + std::to_string(top) + " fails its checksum");
    }
  }

  // The threads attached for (begin's ids) and the capacity (pending's).
  int threads() const { return n_; }
  int max_threads() const { return cap_; }
  const void* root() const { return root_; }

 private:
  OpLog(OpLogRoot* r, int n, int cap) : root_(r), n_(n), cap_(cap) {}
  // The capacity of root r (its thread count at creation), checked against
  // an attach for `threads`: any 1 <= threads <= capacity.
  static int capacity_for(const OpLogRoot& r, std::string_view name, int threads) {
    if (r.threads == 0 || r.threads > static_cast<std::uint32_t>(OpLogRoot::kMaxThreads))
      throw std::runtime_error("OpLog '" + std::string(name) + "': corrupt root (thread capacity " +
                               std::to_string(r.threads) + ")");
    if (threads == kAsCreated) return static_cast<int>(r.threads);
    if (threads < 0)
      throw std::invalid_argument("OpLog '" + std::string(name) + "': attach asked for " +
                                  std::to_string(threads) + " threads; it takes at least 1 (or kAsCreated)");
    if (static_cast<std::uint32_t>(threads) > r.threads)
      throw std::invalid_argument("OpLog '" + std::string(name) + "' was created for at most " +
                                  std::to_string(r.threads) + " threads; attach asked for " +
                                  std::to_string(threads) + " — create the log with a larger capacity");
    return static_cast<int>(r.threads);
  }
  // begin's line: ids of the threads attached for.
  OpLogRoot::Line& attached_line(int tid) const {
    if (tid >= n_ && tid < cap_)
      throw std::out_of_range("OpLog: thread id " + std::to_string(tid) + " outside [0, " + std::to_string(n_) +
                              ") (attached for " + std::to_string(n_) + " of its " + std::to_string(cap_) +
                              " threads; pending takes any id below " + std::to_string(cap_) + ")");
    return line_of(tid);
  }
  OpLogRoot::Line& line_of(int tid) const {
    if (tid < 0 || tid >= cap_)
      throw std::out_of_range("OpLog: thread id " + std::to_string(tid) + " outside [0, " +
                              std::to_string(cap_) + ")");
    return root_->lines[tid];
  }
  OpLogRoot* root_;
  int n_;    // the threads attached for: begin's ids [0, n_)
  int cap_;  // the root's capacity: pending/last_seq's ids [0, cap_)
};

inline const bool kOpLogRootRegistered = pmem::register_root_type<OpLogRoot>(&OpLog::recover_root);

template <class S>
concept DetectableStructure = requires(S& s, int tid, std::uint64_t seq, const op::Op& o) {
  { s.apply(tid, seq, o) } -> std::same_as<op::Response>;
  { s.recover(tid, seq, o) } -> std::same_as<op::Response>;
};

// Exactly-once operations on a detectable structure S, for threads holding
// a ThreadRegistry handle. Holds references: S and the OpLog outlive it.
template <DetectableStructure S>
class Detectable {
 public:
  Detectable(S& s, OpLog& log) : s_(&s), log_(&log) {}

  // Makes (seq, op) durable for this thread; the operation has not run yet.
  std::uint64_t begin(const Thread& t, const op::Op& o) { return log_->begin(id(t), o); }
  // Runs the operation begun last by this thread and returns its response.
  op::Response complete(const Thread& t) {
    const auto rec = log_->pending(id(t));
    if (!rec) throw std::logic_error("Detectable::complete: this thread has begun no operation");
    return s_->apply(id(t), rec->seq, to_op(*rec));
  }
  // begin + complete.
  op::Response run(const Thread& t, const op::Op& o) {
    begin(t, o);
    return complete(t);
  }

  struct Recovered {
    std::uint64_t seq;
    op::Op op;
    op::Response response;
  };
  // After a restart: the operation this thread had begun last (nullopt if
  // none), completed if it had not taken effect, with its response. Calling
  // it for an operation that had completed is fine: it answers the same
  // response again. Idempotent.
  std::optional<Recovered> recover(const Thread& t) { return recover(id(t)); }
  // The same for thread id tid, any id below the log's capacity: also one
  // no handle of this run holds (tid >= the threads attached for), whose
  // pending operation a wider earlier run left. Nothing drops such an
  // operation: a later run that wide recovers it as usual, or this run does
  // here (completing it if it had not taken effect, else answering its
  // response again). The caller must be the only one running an operation
  // of tid (recovering it counts as tid's operation).
  std::optional<Recovered> recover(int tid) {
    const auto rec = log_->pending(tid);
    if (!rec) return std::nullopt;
    const op::Op o = to_op(*rec);
    return Recovered{rec->seq, o, s_->recover(tid, rec->seq, o)};
  }
  // recover(tid) for every id in [threads, capacity) of the log with a
  // record: the ids this run (attached for fewer threads) gives no handle.
  // Run it before those ids' slots are used again; not concurrent with
  // itself.
  std::vector<std::pair<int, Recovered>> recover_unattached() {
    std::vector<std::pair<int, Recovered>> out;
    for (int tid = log_->threads(); tid < log_->max_threads(); ++tid)
      if (auto r = recover(tid)) out.emplace_back(tid, *r);
    return out;
  }

 private:
  static int id(const Thread& t) {
    if (!t) throw std::invalid_argument("Detectable: the thread handle holds no id");
    return t.id();
  }
  static op::Op to_op(const OpRecord& r) { return {static_cast<std::int32_t>(r.op), r.arg, r.arg2}; }
  S* s_;
  OpLog* log_;
};

}  // namespace ferrite
