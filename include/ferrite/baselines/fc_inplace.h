// ferrite/baselines/fc_inplace.h — "fc-inplace": flat combining (Hendler,
// Incze, Shavit, Tzafrir, SPAA'10) made persistent the way the PBcomb paper
// (§6, "DFC" [47], lines 782-800 of the paper text) describes and argues
// against: requests are announced in a *persistent* announce array that each
// thread persists itself; a combiner applies the requests *directly on the
// shared structure in the pool*, writing back the scattered lines it
// changed; then it persists each response in the announce array one by one.
//
// Per operation of thread t:
//   1. write announce[t] = {op, arg, seq}; pwb; psync (the combiner serves
//      only persisted announcements: t publishes the volatile request only
//      after its psync — the "additional mechanism" the paper mentions);
//   2. publish the volatile request; spin until served, or take the combiner
//      lock (a test-and-set flag);
//   3. combiner: for every published, unserved request apply it to the
//      sequential object (seq_objects.h: pwb of every changed line, pfence
//      after each op); psync; then for each served request write its
//      response into announce[i] and pwb + psync it (one by one); free the
//      unlinked blocks; publish the volatile responses; release the lock.
//
// What this is not: DFC's elimination and its detectable recovery are not
// implemented. The persisted responses are written (that is the cost being
// measured) but recovery does not use them, so fc-inplace is durably
// linearizable, not detectable (crash adapter: detectable() = false).
//
// Thread safety: apply() concurrently for distinct tids in [0, max_threads).
// Invariants: resp_tag[i] == req_tag[i] iff thread i's request is served;
// only the lock holder applies requests and writes responses.
// Persistence / recovery: those of the sequential object (each op ends with
// a pfence, so a crash image is a prefix of the batch); recovery = the
// sequential object's recovery (its root's hook, run by the pool when it
// opens). The announce array is its own root ("<name>.announce") and holds
// no heap block: its hook marks nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ferrite/baselines/persistent_common.h"
#include "ferrite/baselines/seq_objects.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"
#include "ferrite/sync/backoff.h"
#include "ferrite/sync/cache_padded.h"

namespace ferrite::baselines {

template <class Seq, unsigned Faults = kNoFaults>
class FcInplace {
 public:
  static constexpr int kMaxThreads = 256;
  struct alignas(64) Announce {
    std::int64_t insert = 0;
    std::int64_t arg = 0;
    std::uint64_t seq = 0;
    std::int64_t resp = 0;
    std::uint64_t resp_seq = 0;
    std::int64_t has_value = 0;
  };
  struct Root {
    static constexpr std::uint32_t kTypeTag = 0x42A5'0030;
    static constexpr std::uint32_t kTypeVersion = 1;
    static constexpr const char* kTypeName = "baselines::FcInplaceAnnounce";
    Announce announce[kMaxThreads];
  };

  // Root's recover hook (pmem/root_registry.h): nothing outside the root.
  static void recover_root(pmem::Pool&, Root*, const std::function<void(void*)>&) {}

  FcInplace(pmem::Pool& pool, std::string_view name, const SeqParams& p)
      : max_(p.max_threads), seq_(pool, name, p), slots_(static_cast<std::size_t>(check(p.max_threads))) {
    const std::string an = std::string(name) + ".announce";
    root_ = pool.has_root(an) ? pool.root<Root>(an) : pool.create_root<Root>(an);
  }

  bool apply(int tid, std::uint64_t seq, bool insert, std::int64_t arg, std::int64_t* out) {
    check_tid(tid, max_, "FcInplace");
    Slot& me = slots_[static_cast<std::size_t>(tid)].value;
    Announce& a = root_->announce[tid];
    a.insert = insert ? 1 : 0;
    a.arg = arg;
    a.seq = seq;
    // PERSIST: the thread persists its own announcement (DFC).
    if constexpr ((Faults & kNoAnnouncePwb) == 0) persist::pwb(&a, sizeof(a));
    persist::psync();
    me.insert = insert;
    me.arg = arg;
    const std::uint64_t tag = ++me.local_tag;
    // ORDER: release publishes insert/arg to the combiner.
    me.req_tag.store(tag, std::memory_order_release);
    std::uint32_t spins = 0;
    for (;;) {
      // ORDER: acquire pairs with the combiner's release of resp_tag.
      if (me.resp_tag.load(std::memory_order_acquire) == tag) break;
      if (!lock_.load(std::memory_order_relaxed) && !lock_.exchange(true, std::memory_order_acquire)) {
        combine(tid);
        lock_.store(false, std::memory_order_release);
        continue;
      }
      sync::spin_wait();  // waits for the combiner: a scheduling point in crash campaigns
      if (++spins < 256) sync::cpu_relax();
      else std::this_thread::yield();
    }
    if (me.has_value) *out = me.resp;
    return me.has_value;
  }

  double combining_degree() const {
    const auto r = rounds_.load(std::memory_order_relaxed);
    return r == 0 ? 0.0 : static_cast<double>(served_.load(std::memory_order_relaxed)) / static_cast<double>(r);
  }
  std::vector<std::int64_t> snapshot() { return seq_.snapshot(); }

 private:
  struct Slot {
    std::atomic<std::uint64_t> req_tag{0};
    std::atomic<std::uint64_t> resp_tag{0};
    bool insert = false;       // written by the owner before req_tag (release)
    std::int64_t arg = 0;
    std::int64_t resp = 0;     // written by the combiner before resp_tag (release)
    bool has_value = false;
    std::uint64_t local_tag = 0;  // owner-only
  };
  static int check(int n) {
    if (n <= 0 || n > kMaxThreads) throw std::invalid_argument("FcInplace: max_threads must be in [1, 256]");
    return n;
  }

  void combine(int tid) {
    served_list_.clear();
    for (int i = 0; i < max_; ++i) {
      Slot& s = slots_[static_cast<std::size_t>(i)].value;
      const std::uint64_t tag = s.req_tag.load(std::memory_order_acquire);
      // Relaxed: resp_tag is written only by the lock holder (us).
      if (tag == s.resp_tag.load(std::memory_order_relaxed)) continue;
      std::int64_t v = 0;
      const bool hv = seq_.apply(tid, s.insert, s.arg, &v);
      s.resp = v;
      s.has_value = hv;
      served_list_.push_back({i, tag});
    }
    if (served_list_.empty()) return;
    // PERSIST: the batch's in-place changes are durable before any response.
    if constexpr ((Faults & kNoFinalPsync) == 0) persist::psync();
    for (const auto& [i, tag] : served_list_) {
      Slot& s = slots_[static_cast<std::size_t>(i)].value;
      Announce& a = root_->announce[i];
      a.resp = s.resp;
      a.has_value = s.has_value ? 1 : 0;
      a.resp_seq = a.seq;
      // PERSIST: each response persisted separately (the DFC cost).
      persist::pwb(&a, sizeof(a));
      persist::psync();
    }
    seq_.after_sync(tid);
    for (const auto& [i, tag] : served_list_)
      slots_[static_cast<std::size_t>(i)].value.resp_tag.store(tag, std::memory_order_release);
    // Relaxed: statistics, read after the run.
    rounds_.store(rounds_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    served_.store(served_.load(std::memory_order_relaxed) + served_list_.size(), std::memory_order_relaxed);
  }

  int max_;
  Seq seq_;
  std::vector<sync::CachePadded<Slot>> slots_;
  sync::CachePadded<std::atomic<bool>> lock_padded_{false};
  std::atomic<bool>& lock_ = lock_padded_.value;
  std::vector<std::pair<int, std::uint64_t>> served_list_;  // lock holder only
  std::atomic<std::uint64_t> rounds_{0}, served_{0};
  Root* root_ = nullptr;
};

// The pool's recover hook for the announce root (same tag for every Seq).
inline const bool kFcInplaceRootRegistered =
    pmem::register_root_type<FcInplace<SeqStack<>>::Root>(&FcInplace<SeqStack<>>::recover_root);

}  // namespace ferrite::baselines
