// ferrite/logging/handoff.h — the HOPS+ paper's Figure 1 as a workload:
// ATLAS critical sections that release a lock early, so that a completed
// section can depend on an incomplete one.
//
// What it is. Persistent DATA, COUNT and FLAG[kSlots] words and two
// logging::Locks, A and B (Swapnil Haria, Pratyush Mahapatra, Mark D. Hill,
// Michael M. Swift, "Efficient Durability for Lock-based Code", Figure 1
// and §2: hand-over-hand locking "releasing isolation early"):
//   produce(v)  CS1: lock A; DATA := v; lock B; unlock A; COUNT += 1;
//               unlock B; returns the old COUNT — one outermost critical
//               section (ATLAS), which
//               hands DATA to other threads before it ends;
//   consume(k)  CS2: lock A; FLAG[k] := DATA; unlock A — returns DATA.
// A crash after a consume read a produce's DATA but before that produce
// ended must undo the produce and, with it, the consume (and every later
// section of the consumer's thread): ATLAS's synchronization history (the
// acquire entry names the release it follows; logging/undo_log.h). Without
// it recovery keeps {FLAG[k] = v, DATA = old}: the paper's {FLAG=1,
// DATA=0}. Under the HOPS+ instrumentation (no software history) the
// Logger keeps A locked until the produce ends (closed nesting, HOPS+ paper
// §3): a consume then never reads a DATA a crash can undo. ATLAS only: a
// transaction or an SFR cannot release a lock inside a region (the
// constructor refuses the other languages).
//
// Thread safety: every member may be called concurrently with distinct tids.
// Invariants (between sections): every FLAG[k] is 0 or a value some produce
// stored into DATA; COUNT is the number of produces.
// Persistence: each section is failure-atomic in the ATLAS sense (undo_log.h
// P1-P3, I4): a completed section is durable unless it depends on one a
// crash undid.
// Recovery: the root hook runs logging::recover_area.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "ferrite/logging/workloads.h"

namespace ferrite::logging {

class LoggedHandoff {
 public:
  static constexpr int kSlots = 8;
  struct Root {
    static constexpr std::uint32_t kTypeTag = 0x4C47'4846;  // "LGHF"
    static constexpr std::uint32_t kTypeVersion = 1;
    static constexpr const char* kTypeName = "logging::LoggedHandoff";
    LogArea log{};
    alignas(64) std::int64_t data = 0;
    std::int64_t count = 0;
    std::int64_t flags[kSlots] = {};
  };
  static_assert(offsetof(Root, log) == 0);
  static_assert(offsetof(Root, data) == 576);
  static_assert(offsetof(Root, count) == 584);
  static_assert(offsetof(Root, flags) == 592);

  LoggedHandoff(pmem::Pool& pool, std::string_view name, int threads, const LoggerOptions& opt)
      : root_(pool.has_root(name) ? pool.root<Root>(name) : pool.create_root<Root>(name)),
        log_(pool, &root_->log, threads, opt) {
    if (opt.language != Language::kAtlas)
      throw std::invalid_argument("logging::LoggedHandoff: ATLAS only (a region cannot release a lock early)");
  }

  // CS1 of Figure 1: the COUNT before it.
  std::int64_t produce(int tid, std::int64_t v) {
    log_.make_room(tid);
    log_.acquire(tid, a_);  // begins the outermost section
    log_.write(tid, &root_->data, v);
    log_.acquire(tid, b_);
    // ORDER: the early release: from here another thread may read DATA.
    // CRASH: a crash before this section ends undoes it, and recovery
    // follows the synchronization history to every section that acquired
    // A after this release (HOPS+: A stays locked until the section ends).
    log_.release(tid, a_);
    const std::int64_t n = root_->count;
    log_.write(tid, &root_->count, n + 1);
    log_.release(tid, b_);  // ends the outermost section
    return n;
  }
  // CS2 of Figure 1 (into slot k modulo kSlots): the DATA it copied.
  std::int64_t consume(int tid, std::uint64_t k) {
    log_.make_room(tid);
    log_.acquire(tid, a_);
    const std::int64_t v = root_->data;
    log_.write(tid, &root_->flags[k % kSlots], v);
    log_.release(tid, a_);
    return v;
  }
  // DATA, COUNT, FLAG[0..kSlots): a quiescent snapshot.
  std::vector<std::int64_t> snapshot() {
    a_.lock_for_read();
    b_.lock_for_read();
    std::vector<std::int64_t> out{root_->data, root_->count};
    out.insert(out.end(), root_->flags, root_->flags + kSlots);
    b_.unlock_for_read();
    a_.unlock_for_read();
    return out;
  }
  Logger& logger() { return log_; }

  static void recover_root(pmem::Pool& pool, Root* r, const std::function<void(void*)>& mark) {
    validate_area(pool, &r->log);  // before following its pointers (issue 40)
    recover_area(&r->log);
    mark_area(&r->log, mark);
  }

 private:
  Root* root_;
  Logger log_;
  Lock a_, b_;
};

inline const bool kLoggedHandoffRootRegistered =
    pmem::register_root_type<LoggedHandoff::Root>(&LoggedHandoff::recover_root);

}  // namespace ferrite::logging
