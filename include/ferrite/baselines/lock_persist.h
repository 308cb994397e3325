// ferrite/baselines/lock_persist.h — "lock-persist": a mutex around a
// sequential object that lives in the pool and persists in place
// (seq_objects.h). The simplest correct persistent concurrent object, and
// the baseline every combining paper implicitly beats.
//
// Per operation: lock; apply (pwb of each changed line, pfence between
// dependent write-backs; the heap also writes a redo log); psync; free the
// blocks the op unlinked; unlock. Durable on return.
//
// Thread safety: all members may be called concurrently (one std::mutex).
// Invariants / persistence / recovery: those of the sequential object; a
// crash leaves the state after every completed op plus a prefix of the
// in-flight one's crash-consistent steps (only one op is ever in flight).
// Not detectable (no per-thread record of operations).
#pragma once

#include <cstdint>
#include <mutex>
#include <string_view>
#include <vector>

#include "ferrite/baselines/persistent_common.h"
#include "ferrite/baselines/seq_objects.h"
#include "ferrite/persist/persist.h"

namespace ferrite::baselines {

template <class Seq, unsigned Faults = kNoFaults>
class LockPersist {
 public:
  LockPersist(pmem::Pool& pool, std::string_view name, const SeqParams& p) : max_(p.max_threads), seq_(pool, name, p) {}

  // insert: push / enqueue / heap insert / float mul; remove: pop / dequeue
  // / delete-min / float read. Returns whether *out holds a value.
  bool apply(int tid, bool insert, std::int64_t arg, std::int64_t* out) {
    check_tid(tid, max_, "LockPersist");
    std::lock_guard<std::mutex> g(mu_);
    const bool r = seq_.apply(tid, insert, arg, out);
    // PERSIST: durable before the response (and before the next holder).
    if constexpr ((Faults & kNoFinalPsync) == 0) persist::psync();
    seq_.after_sync(tid);
    return r;
  }
  std::vector<std::int64_t> snapshot() {
    std::lock_guard<std::mutex> g(mu_);
    return seq_.snapshot();
  }

 private:
  int max_;
  std::mutex mu_;
  Seq seq_;
};

}  // namespace ferrite::baselines
