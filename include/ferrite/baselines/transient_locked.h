// ferrite/baselines/transient_locked.h — the simplest transient competitors:
// a standard container (or a double) behind one std::mutex ("mutex-std").
//
// They are the floor every concurrent design must beat and, on 2 cores, often
// a surprisingly strong one. The AtomicFloat variant implements the PBcomb
// paper's synthetic object (§6: read v, store v*k, return v) under a lock;
// CasAtomicFloat is the "simple lock-free implementation" (a CAS loop).
//
// Thread safety: every member is safe to call concurrently (one mutex per
// object; CasAtomicFloat is lock-free).
// Invariants: those of the wrapped std container. Persistence: none.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <functional>
#include <mutex>
#include <queue>
#include <stack>
#include <vector>

#include "ferrite/sync/cache_padded.h"

namespace ferrite::baselines {

template <class T>
class LockedQueue {
 public:
  void enqueue(const T& v) {
    std::lock_guard<std::mutex> g(mu_);
    q_.push(v);
  }
  bool try_dequeue(T* out) {
    std::lock_guard<std::mutex> g(mu_);
    if (q_.empty()) return false;
    *out = q_.front();
    q_.pop();
    return true;
  }

 private:
  alignas(sync::kPadding) std::mutex mu_;
  std::queue<T> q_;
};

template <class T>
class LockedStack {
 public:
  void push(const T& v) {
    std::lock_guard<std::mutex> g(mu_);
    s_.push(v);
  }
  bool try_pop(T* out) {
    std::lock_guard<std::mutex> g(mu_);
    if (s_.empty()) return false;
    *out = s_.top();
    s_.pop();
    return true;
  }

 private:
  alignas(sync::kPadding) std::mutex mu_;
  std::stack<T, std::vector<T>> s_;
};

// Min-priority queue (the PBheap's HInsert / HDeleteMin).
template <class T>
class LockedMinHeap {
 public:
  void insert(const T& v) {
    std::lock_guard<std::mutex> g(mu_);
    h_.push(v);
  }
  bool try_delete_min(T* out) {
    std::lock_guard<std::mutex> g(mu_);
    if (h_.empty()) return false;
    *out = h_.top();
    h_.pop();
    return true;
  }

 private:
  alignas(sync::kPadding) std::mutex mu_;
  std::priority_queue<T, std::vector<T>, std::greater<T>> h_;
};

class LockedAtomicFloat {
 public:
  explicit LockedAtomicFloat(double init = 1.0) : v_(init) {}
  // Multiplies by k and returns the previous value.
  double fetch_mul(double k) {
    std::lock_guard<std::mutex> g(mu_);
    const double old = v_;
    v_ = old * k;
    return old;
  }
  double load() {
    std::lock_guard<std::mutex> g(mu_);
    return v_;
  }

 private:
  alignas(sync::kPadding) std::mutex mu_;
  double v_;
};

class CasAtomicFloat {
 public:
  explicit CasAtomicFloat(double init = 1.0) : bits_(std::bit_cast<std::uint64_t>(init)) {}
  double fetch_mul(double k) {
    // relaxed first load: the CAS below re-validates and acquires.
    std::uint64_t old = bits_.value.load(std::memory_order_relaxed);
    for (;;) {
      const double v = std::bit_cast<double>(old);
      if (bits_.value.compare_exchange_weak(old, std::bit_cast<std::uint64_t>(v * k),
                                            std::memory_order_acq_rel, std::memory_order_relaxed))
        return v;
    }
  }
  double load() const { return std::bit_cast<double>(bits_.value.load(std::memory_order_acquire)); }

 private:
  sync::CachePadded<std::atomic<std::uint64_t>> bits_;
};

}  // namespace ferrite::baselines
