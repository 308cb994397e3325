// ferrite/baselines/transient_treiber_stack.h — Treiber's lock-free stack
// (R. K. Treiber, "Systems Programming: Coping with Parallelism", IBM RJ 5118,
// 1986), transient.
//
// A transient competitor for `ferrite bench`: one CAS on the top pointer per
// push and per pop, no persistence.
//
// Thread safety: push/try_pop are lock-free and may be called concurrently
// from any threads with distinct tids in [0, max_threads).
//
// Invariants: top_ is the head of a null-terminated singly linked list of the
// values, most recent first. A popped node is retired to the Reclaimer
// (transient_reclaim.h): it is freed (and could be reused) only when no pinned
// thread can still hold it, which excludes ABA on top_.
//
// Persistence: none (transient). Recovery: none.
#pragma once

#include <atomic>
#include <type_traits>

#include "ferrite/baselines/transient_reclaim.h"
#include "ferrite/sync/backoff.h"
#include "ferrite/sync/cache_padded.h"

namespace ferrite::baselines {

template <class T, class Reclaimer = DefaultReclaimer>
class TreiberStack {
  static_assert(std::is_trivially_copyable_v<T>, "TreiberStack: T must be trivially copyable");

 public:
  explicit TreiberStack(int max_threads) : reclaim_(max_threads) {}
  TreiberStack(const TreiberStack&) = delete;
  TreiberStack& operator=(const TreiberStack&) = delete;
  ~TreiberStack() {  // single-threaded by contract
    Node* n = top_.value.load(std::memory_order_relaxed);
    while (n != nullptr) {
      Node* next = n->next;
      delete n;
      n = next;
    }
  }

  void push(int tid, const T& v) {
    Node* node = new Node{v, nullptr};
    [[maybe_unused]] auto guard = reclaim_.pin(tid);  // held to the end of the operation
    Node* top = top_.value.load(std::memory_order_relaxed);  // relaxed: the CAS re-validates
    sync::Backoff backoff;
    for (;;) {
      node->next = top;
      // ORDER: release publishes node->value/next to the popper that acquires top_.
      if (top_.value.compare_exchange_weak(top, node, std::memory_order_release,
                                           std::memory_order_relaxed))
        return;
      backoff.pause();
    }
  }

  bool try_pop(int tid, T* out) {
    [[maybe_unused]] auto guard = reclaim_.pin(tid);  // held to the end of the operation
    // ORDER: acquire pairs with push's release: top->next/value are visible.
    Node* top = top_.value.load(std::memory_order_acquire);
    sync::Backoff backoff;
    while (top != nullptr) {
      Node* next = top->next;  // safe: pinned, `top` cannot be freed under us
      if (top_.value.compare_exchange_weak(top, next, std::memory_order_acquire,
                                           std::memory_order_acquire)) {
        *out = top->value;
        reclaim_.retire(tid, top);
        return true;
      }
      backoff.pause();
    }
    return false;
  }

  bool empty_unsafe() const { return top_.value.load(std::memory_order_acquire) == nullptr; }

 private:
  struct Node {
    T value;
    Node* next;
  };
  sync::CachePadded<std::atomic<Node*>> top_;
  Reclaimer reclaim_;
};

}  // namespace ferrite::baselines
