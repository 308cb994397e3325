// ferrite/logging/array_swap.h — the StrandWeaver paper's Array Swap
// workload (Table II: "Swap of array elements") as a persistent structure
// on the failure-atomic logging library (logging/undo_log.h).
//
// What it is. A persistent array of `n` 64-bit elements; swap(i, j)
// exchanges two elements in one failure-atomic region — two logged stores,
// so a crash between them is exactly what the logging must hide (Vaibhav
// Gogte et al., "Relaxed Persist Ordering Using Strand Persistency", ISCA
// 2020, Table II and §V; the region's language — transaction, ATLAS
// outermost critical section, SFR — and the instrumentation are the
// Logger's).
//
// Thread safety: every member may be called concurrently with distinct
// tids; elements are striped over kLocks locks, a swap holds the stripes of
// both elements (acquired in increasing stripe order: no deadlock).
// Invariants: between regions the array is a permutation of its initial
// contents (1..n).
// Persistence: a swap is failure-atomic and durable when it returns
// (undo_log.h P1-P3).
// Recovery: the root hook runs logging::recover_area (an interrupted swap is
// rolled back) and marks the array and the log area.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string_view>
#include <vector>

#include "ferrite/logging/workloads.h"

namespace ferrite::logging {

class LoggedArraySwap {
 public:
  static constexpr int kLocks = 16;
  struct Root {
    static constexpr std::uint32_t kTypeTag = 0x4C47'4153;  // "LGAS"
    static constexpr std::uint32_t kTypeVersion = 1;
    static constexpr const char* kTypeName = "logging::LoggedArraySwap";
    LogArea log{};
    alignas(64) std::int64_t* slots = nullptr;  // set once, after the array is durable
    std::uint64_t n = 0;
  };
  static_assert(offsetof(Root, log) == 0);
  static_assert(offsetof(Root, slots) == 576);
  static_assert(offsetof(Root, n) == 584);

  LoggedArraySwap(pmem::Pool& pool, std::string_view name, int threads, const LoggerOptions& opt,
                  std::uint64_t n = 16)
      : root_(pool.has_root(name) ? pool.root<Root>(name) : pool.create_root<Root>(name)),
        log_(pool, &root_->log, threads, opt) {
    if (root_->slots == nullptr) {
      // CRASH: a crash before the slots pointer is durable leaves it null:
      // the next attach builds the array again (the lost one was never
      // marked, so pool recovery freed it).
      const std::uint64_t len = n < 2 ? 2 : n;
      auto* a = static_cast<std::int64_t*>(pool.heap().alloc(len * sizeof(std::int64_t), 0));
      for (std::uint64_t i = 0; i < len; ++i) persist::store(&a[i], static_cast<std::int64_t>(i + 1));
      persist::pwb(a, len * sizeof(std::int64_t));
      persist::store(&root_->n, len);
      persist::pwb(&root_->n, sizeof len);
      // ORDER: the initial contents and the length before the pointer.
      persist::psync();
      persist::store(&root_->slots, a);
      persist::pwb(&root_->slots, sizeof a);
      persist::psync();
    }
  }

  std::uint64_t size() const { return root_->n; }

  // Exchanges elements i and j (indices modulo size()): one region, two
  // logged stores. Returns the element that was at i (what a caller that
  // moves elements around needs; it also pins the order of conflicting
  // swaps in a history).
  std::int64_t swap(int tid, std::uint64_t i, std::uint64_t j) {
    i %= root_->n;
    j %= root_->n;
    Lock* a = &locks_[std::min(i, j) % kLocks];
    Lock* b = &locks_[std::max(i, j) % kLocks];
    if (a > b) std::swap(a, b);  // stripe order, not index order, is the global lock order
    Region r(log_, tid, {a, a == b ? nullptr : b});
    std::int64_t* s = root_->slots;
    const std::int64_t vi = s[i];
    const std::int64_t vj = s[j];
    log_.write(tid, &s[i], vj);
    // CRASH: here element i holds vj twice over; the undo entry of s[i]
    // is durable before this store could be (P1), so recovery restores vi.
    log_.write(tid, &s[j], vi);
    r.end();
    return vi;
  }
  std::int64_t get(int tid, std::uint64_t i) {
    i %= root_->n;
    ReadLock g(log_, tid, locks_[i % kLocks]);
    return root_->slots[i];
  }
  // The locks swap(i, j) (or get(i): j = i) takes (for a Group).
  void locks_of(std::uint64_t i, std::uint64_t j, std::vector<Lock*>& out) {
    out.push_back(&locks_[i % root_->n % kLocks]);
    out.push_back(&locks_[j % root_->n % kLocks]);
  }
  std::vector<std::int64_t> snapshot() {
    for (auto& l : locks_) l.lock_for_read();
    std::vector<std::int64_t> out(root_->slots, root_->slots + root_->n);
    for (auto& l : locks_) l.unlock_for_read();
    return out;
  }
  Logger& logger() { return log_; }

  static void recover_root(pmem::Pool& pool, Root* r, const std::function<void(void*)>& mark) {
    validate_area(pool, &r->log);  // before following its pointers (issue 40)
    recover_area(&r->log);
    mark_area(&r->log, mark);
    if (r->slots != nullptr) mark(r->slots);
  }

 private:
  Root* root_;
  Logger log_;
  Lock locks_[kLocks];
};

inline const bool kLoggedArraySwapRootRegistered =
    pmem::register_root_type<LoggedArraySwap::Root>(&LoggedArraySwap::recover_root);

}  // namespace ferrite::logging
