// ferrite/sync/backoff.h — bounded exponential backoff for spin loops.
//
// Thread safety: a Backoff is per-thread state; do not share one.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <thread>

namespace ferrite::sync {

inline void cpu_relax() { _mm_pause(); }

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
    if (++spins < 256) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
}

}  // namespace ferrite::sync
