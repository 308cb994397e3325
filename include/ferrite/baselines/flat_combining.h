// ferrite/baselines/flat_combining.h — the flat combining shared by the
// PTM-style competitors (romulus.h: RomulusLog's writers; redoopt.h:
// RedoOpt's combiner): each thread announces a request in its own slot; the
// thread that takes the try-lock serves every announced request in one
// batch and hands each announcer its result; the others wait until their
// slot is cleared or the lock is free.
//
// Request is the PTM's own request type (it must have a member
// `std::exception_ptr error`); only pointers to it are kept.
//
// Thread safety: announce_or_lock concurrently for distinct tids in
// [0, max_threads); collect/release only by the lock holder.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ferrite/persist/persist.h"
#include "ferrite/sync/backoff.h"
#include "ferrite/sync/cache_padded.h"

namespace ferrite::baselines {

template <class Request>
class FlatCombining {
 public:
  static constexpr int kMaxThreads = 256;

  FlatCombining(int max_threads, const char* who)
      : max_(check(max_threads, who)), slots_(static_cast<std::size_t>(max_)) {}
  int max_threads() const { return max_; }

  // Announces req. True: this thread took the lock and must serve the
  // batch (collect, run, release, unlock). False: a combiner served req
  // (its effects and req->error are visible).
  bool announce_or_lock(int tid, Request* req) {
    std::atomic<Request*>& me = slots_[static_cast<std::size_t>(tid)].value;
    // ORDER: release publishes req (and what it points to) to the combiner.
    me.store(req, std::memory_order_release);
    std::uint32_t spins = 0;
    for (;;) {
      if (try_lock()) return true;
      // ORDER: acquire pairs with the combiner's release (release()).
      if (me.load(std::memory_order_acquire) == nullptr) return false;
      backoff(spins);
    }
  }
  // A request served by flat combining: run(reqs, n) serves a batch (and
  // calls release). Rethrows the request's error.
  template <class Run>
  void submit(int tid, Request* req, Run&& run) {
    if (announce_or_lock(tid, req)) {
      if (const auto& batch = collect(); !batch.empty()) run(batch.data(), batch.size());
      unlock();
    }
    if (req->error) std::rethrow_exception(req->error);
  }
  // A request served by the caller alone under the lock (no combining).
  template <class Run>
  void alone(Request* req, Run&& run) {
    lock();
    persist::note_acquired(&flag_.value);
    run(&req, 1);
    unlock();
    if (req->error) std::rethrow_exception(req->error);
  }

  void lock() {
    std::uint32_t spins = 0;
    while (!try_lock()) backoff(spins);
  }
  bool try_lock() {
    bool f = false;
    // ORDER: seq_cst CAS: RomulusLog's readers pair with it (C-RW-WP, Dekker).
    return !flag_.value.load(std::memory_order_relaxed) &&
           flag_.value.compare_exchange_strong(f, true, std::memory_order_seq_cst);
  }
  void unlock() {
    persist::note_releasing(&flag_.value);
    // ORDER: release publishes the holder's stores to the next holder.
    flag_.value.store(false, std::memory_order_release);
  }
  // The lock word (RomulusLog's readers check it).
  std::atomic<bool>& flag() { return flag_.value; }

  // The lock holder: every announced request.
  const std::vector<Request*>& collect() {
    persist::note_acquired(&flag_.value);
    batch_.clear();
    for (auto& s : slots_) {
      // ORDER: acquire pairs with the announcer's release.
      if (Request* r = s.value.load(std::memory_order_acquire)) batch_.push_back(r);
    }
    return batch_;
  }
  // The lock holder: hands reqs[0, n) back to their announcers.
  void release(Request* const* reqs, std::size_t n) {
    for (auto& s : slots_) {
      Request* r = s.value.load(std::memory_order_relaxed);  // relaxed: only the holder clears it
      if (r != nullptr && std::find(reqs, reqs + n, r) != reqs + n)
        // ORDER: release publishes the request's effects to the announcer.
        s.value.store(nullptr, std::memory_order_release);
    }
    // Relaxed: statistics, read after the run.
    batches_.store(batches_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    served_.store(served_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  // Requests per batch, since creation in this process.
  double combining_degree() const {
    const auto b = batches_.load(std::memory_order_relaxed);
    return b == 0 ? 0.0 : static_cast<double>(served_.load(std::memory_order_relaxed)) / static_cast<double>(b);
  }

  static void backoff(std::uint32_t& spins) {
    sync::spin_wait();  // a scheduling point in crash campaigns
    if (++spins < 256) sync::cpu_relax();
    else std::this_thread::yield();
  }

 private:
  static int check(int n, const char* who) {
    if (n <= 0 || n > kMaxThreads) throw std::invalid_argument(std::string(who) + ": max_threads must be in [1, 256]");
    return n;
  }
  int max_;
  std::vector<sync::CachePadded<std::atomic<Request*>>> slots_;
  sync::CachePadded<std::atomic<bool>> flag_{false};
  std::vector<Request*> batch_;  // the lock holder's
  std::atomic<std::uint64_t> batches_{0}, served_{0};
};

}  // namespace ferrite::baselines
