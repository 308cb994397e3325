// adapters/plog.h — a persistent append-only log: the reference
// structure for the crash pipeline (docs/crash.md).
//
// What it is: a fixed array of 16-byte records {value, tag} and a persisted
// count, in one pool root. append(tid, seq, v) writes record[count], writes
// it back, fences, then publishes it by incrementing the count, writes the
// count back and psyncs. It is deliberately simple: the crash simulator's
// tests use it (and its broken variants) to show that the pipeline catches
// missing pwb/pfence/psync. Not from a paper; it follows the PBcomb paper's
// persistence principles (make data durable before the pointer that
// publishes it; psync before the response).
//
// Thread safety: append is serialized by a spin lock (a word in the root; it
// has no meaning after a crash and recovery resets it). entries()/find() are
// for a quiescent log (recovery, tests).
//
// Invariants: records [0, count) are appended values; each record's tag is
// (tid + 1) << 48 | seq, nonzero, unique per (tid, seq).
// Persistence invariants: record i is durable before count > i is (pwb,
// pfence, then the count's store); the count is durable before append
// returns (psync), so a completed append survives every crash.
// Recovery: the count is the truth; records at or beyond it are garbage from
// an interrupted append and are overwritten by later appends. Detectable:
// recover_append(tid, seq, v) finds the record tagged (tid, seq) below the
// count (the append took effect: its index) or appends again.
#pragma once

#include <functional>

#include "ferrite/pmem/root_registry.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <thread>
#include <stdexcept>
#include <vector>

#include "ferrite/persist/persist.h"
#include "ferrite/sync/backoff.h"

namespace ferrite::examples {

class PLog {
 public:
  static constexpr std::uint32_t kTypeTag = 0x504c4f47;  // "PLOG"
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "ferrite::examples::PLog";
  static constexpr std::size_t kCapacity = 3900;  // keeps sizeof within one 64 KiB heap block

  // Deliberately broken variants (each removes one needed persistence step).
  enum class Flaw {
    kNone,
    kNoPfence,     // no pfence between the record's pwb and the count's store
    kNoPsync,      // returns before the count is durable
    kNoRecordPwb,  // never writes the record back
  };

  struct Record {
    std::int64_t value;
    std::uint64_t tag;
  };

  PLog() = default;

  static std::uint64_t tag_of(int tid, std::uint64_t seq) {
    return (static_cast<std::uint64_t>(tid) + 1) << 48 | (seq & ((std::uint64_t{1} << 48) - 1));
  }

  // Returns the index of the new record. Throws std::length_error when full.
  std::size_t append(int tid, std::uint64_t seq, std::int64_t value, Flaw flaw = Flaw::kNone) {
    lock();
    const std::uint64_t i = count_.load(std::memory_order_relaxed);  // under the lock
    if (i >= kCapacity) {
      unlock();
      throw std::length_error("PLog is full");
    }
    records_[i].value = value;
    records_[i].tag = tag_of(tid, seq);
    // PERSIST: the record is written back and fenced before the count that
    // publishes it is stored (principle 1: data before the pointer to it).
    if (flaw != Flaw::kNoRecordPwb) persist::pwb(&records_[i], sizeof(Record));
    if (flaw != Flaw::kNoPfence) persist::pfence();
    count_.store(i + 1, std::memory_order_release);
    persist::pwb(&count_, sizeof(count_));
    // PERSIST: the count is durable before the response (principle 2).
    // CRASH: before this psync the count may or may not survive; either way
    // the record it covers is durable, so the log is a prefix of appends.
    if (flaw != Flaw::kNoPsync) persist::psync();
    unlock();
    return static_cast<std::size_t>(i);
  }

  // After a crash: resets the volatile lock. The count needs no repair.
  void recover() { lock_.store(0, std::memory_order_relaxed); }

  // Detectable recovery of append(tid, seq, value) pending at a crash.
  std::size_t recover_append(int tid, std::uint64_t seq, std::int64_t value, Flaw flaw = Flaw::kNone) {
    if (auto i = find(tid, seq)) return *i;
    return append(tid, seq, value, flaw);
  }

  std::optional<std::size_t> find(int tid, std::uint64_t seq) const {
    const std::uint64_t n = count_.load(std::memory_order_acquire);
    const std::uint64_t t = tag_of(tid, seq);
    for (std::uint64_t i = 0; i < n && i < kCapacity; ++i)
      if (records_[i].tag == t) return static_cast<std::size_t>(i);
    return std::nullopt;
  }

  std::vector<std::int64_t> entries() const {
    const std::uint64_t n = count_.load(std::memory_order_acquire);
    std::vector<std::int64_t> out;
    for (std::uint64_t i = 0; i < n && i < kCapacity; ++i) out.push_back(records_[i].value);
    return out;
  }
  std::size_t size() const { return static_cast<std::size_t>(count_.load(std::memory_order_acquire)); }

 private:
  void lock() {
    while (lock_.exchange(1, std::memory_order_acquire) != 0)
      sync::spin_until([&] { return lock_.load(std::memory_order_relaxed) == 0; });
  }
  void unlock() { lock_.store(0, std::memory_order_release); }

  alignas(64) std::atomic<std::uint64_t> count_{0};
  alignas(64) std::atomic<std::uint32_t> lock_{0};
  alignas(64) Record records_[kCapacity]{};
};

static_assert(sizeof(PLog) <= 65536, "PLog must fit one heap block");

// The log is one root block with no pointers: pool recovery keeps it and
// marks nothing else (its volatile lock is reset by recover() on attach).
inline void plog_recover_root(pmem::Pool&, PLog*, const std::function<void(void*)>&) {}
inline const bool kPLogRootRegistered = pmem::register_root_type<PLog>(&plog_recover_root);

}  // namespace ferrite::examples
