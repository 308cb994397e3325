// ferrite/baselines/transient_reclaim.h — memory reclamation policies for the
// transient lock-free competitors (Michael–Scott queue, Treiber stack).
//
// A policy has the shape
//   explicit Policy(int max_threads);
//   Guard pin(int tid);                  // RAII: the thread may read shared nodes
//   void retire(int tid, T* p);          // p is unlinked; delete it when safe
// and the structures take it as a template parameter, so switching from the
// fallback below to epoch-based reclamation (sync/ebr.h) is one line: the
// `DefaultReclaimer` alias at the bottom of this file, which is sync::Ebr
// (Fraser's epoch-based reclamation, sync/ebr.h).
//
// DeferredReclaimer (the fallback, kept for tests and comparison): every retired node is kept on its thread's list and
// deleted when the reclaimer is destroyed (end of the structure's life). It is
// trivially safe — no node is freed, hence none reused, while any thread runs,
// so there is no ABA either — at the price of memory growing with the number
// of removals. Adequate for bounded benchmark runs and tests.
//
// Thread safety: pin/retire are safe concurrently for distinct tids; the
// destructor must not race with any other member.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <utility>
#include <vector>

#include "ferrite/sync/cache_padded.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::baselines {

class DeferredReclaimer {
 public:
  explicit DeferredReclaimer(int max_threads) : lists_(static_cast<std::size_t>(check(max_threads))) {}
  DeferredReclaimer(const DeferredReclaimer&) = delete;
  DeferredReclaimer& operator=(const DeferredReclaimer&) = delete;
  ~DeferredReclaimer() {
    for (auto& l : lists_)
      for (auto& [p, del] : l.value) del(p);
  }

  struct Guard {};  // nothing to pin: nodes outlive every reader
  Guard pin(int /*tid*/) { return {}; }

  template <class T>
  void retire(int tid, T* p) {
    lists_[static_cast<std::size_t>(tid)].value.emplace_back(p, [](void* q) { delete static_cast<T*>(q); });
  }

 private:
  static int check(int n) {
    if (n <= 0) throw std::invalid_argument("DeferredReclaimer: max_threads must be > 0");
    return n;
  }
  using Entry = std::pair<void*, void (*)(void*)>;
  std::vector<sync::CachePadded<std::vector<Entry>>> lists_;
};

// The policy the transient structures use unless told otherwise.
using DefaultReclaimer = sync::Ebr;

}  // namespace ferrite::baselines
