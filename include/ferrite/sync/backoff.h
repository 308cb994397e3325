// ferrite/sync/backoff.h — bounded exponential backoff for spin loops.
//
// Thread safety: a Backoff is per-thread state; do not share one.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

namespace ferrite::sync {

// PAUSE through the compiler's builtin: <immintrin.h> for _mm_pause alone
// was 50,000 lines of intrinsics in every translation unit that spins.
inline void cpu_relax() { __builtin_ia32_pause(); }

// Spin-wait notification, for a test scheduler: a thread that waits for
// another thread to move calls spin_wait() once per retry (spin_until does).
// The crash campaigns' controlled scheduling (src/crash/schedule.h) sets the
// hook so that a waiting thread yields its turn deterministically; outside
// it the hook is null and this is one relaxed load.
inline std::atomic<void (*)()> g_spin_hook{nullptr};
inline void spin_wait() {
  if (auto* h = g_spin_hook.load(std::memory_order_relaxed)) h();
}

class Backoff {
 public:
  explicit Backoff(std::uint32_t min_spins = 1, std::uint32_t max_spins = 1024)
      : min_(min_spins), max_(max_spins), cur_(min_spins) {}

  // Spins for the current budget and doubles it (up to max). Past the cap on
  // an oversubscribed machine, yields so the lock holder can run.
  void pause() {
    for (std::uint32_t i = 0; i < cur_; ++i) cpu_relax();
    if (cur_ < max_) {
      cur_ *= 2;
    } else {
      std::this_thread::yield();
    }
  }
  void reset() { cur_ = min_; }
  std::uint32_t current() const { return cur_; }

 private:
  std::uint32_t min_, max_, cur_;
};

// Waits until pred() is true: spins briefly, then yields. The oversubscribed
// benchmarks (4 and 8 threads on 2 cores) need the yield so a preempted
// combiner can finish.
template <class Pred>
inline void spin_until(Pred&& pred) {
  std::uint32_t spins = 0;
  while (!pred()) {
    spin_wait();
    if (++spins < 256) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
}

}  // namespace ferrite::sync
