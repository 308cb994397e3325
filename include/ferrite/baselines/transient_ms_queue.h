// ferrite/baselines/transient_ms_queue.h — the Michael–Scott lock-free queue
// (M. M. Michael, M. L. Scott, "Simple, Fast, and Practical Non-Blocking and
// Blocking Concurrent Queue Algorithms", PODC 1996, Figure 1), transient.
//
// A transient competitor for `ferrite bench`: no persistence at all. It is the
// queue the PBcomb paper's volatile comparisons and most persistent queues
// (FHMP, OptLinkedQ) start from.
//
// Thread safety: enqueue/try_dequeue are lock-free and may be called
// concurrently from any threads with distinct tids in [0, max_threads).
//
// Invariants: the list from head_ always holds a dummy node first; the values
// are in the nodes after it, in FIFO order. tail_ points at the last node or
// at its predecessor (it lags by at most one; anyone may help swing it).
// Nodes unlinked by a dequeue (the old dummy) are retired to the Reclaimer
// (transient_reclaim.h) and freed only when no pinned thread can read them,
// which also excludes ABA on head_/tail_.
//
// Persistence: none (transient). Recovery: none.
#pragma once

#include <atomic>
#include <type_traits>

#include "ferrite/baselines/transient_reclaim.h"
#include "ferrite/sync/cache_padded.h"

namespace ferrite::baselines {

template <class T, class Reclaimer = DefaultReclaimer>
class MsQueue {
  static_assert(std::is_trivially_copyable_v<T>,
                "MsQueue reads the value before its CAS on head_: T must be trivially copyable");

 public:
  explicit MsQueue(int max_threads) : reclaim_(max_threads) {
    Node* dummy = new Node{};
    head_.value.store(dummy, std::memory_order_relaxed);  // relaxed: not yet shared
    tail_.value.store(dummy, std::memory_order_relaxed);
  }
  MsQueue(const MsQueue&) = delete;
  MsQueue& operator=(const MsQueue&) = delete;
  ~MsQueue() {  // single-threaded by contract: free the live list
    Node* n = head_.value.load(std::memory_order_relaxed);
    while (n != nullptr) {
      Node* next = n->next.load(std::memory_order_relaxed);
      delete n;
      n = next;
    }
  }

  void enqueue(int tid, const T& v) {
    Node* node = new Node{};
    node->value = v;
    [[maybe_unused]] auto guard = reclaim_.pin(tid);  // held to the end of the operation
    for (;;) {
      // ORDER: acquire pairs with the release CAS that published `tail`'s
      // successor or swung tail_, so the node we read is fully constructed.
      Node* tail = tail_.value.load(std::memory_order_acquire);
      Node* next = tail->next.load(std::memory_order_acquire);
      if (tail != tail_.value.load(std::memory_order_acquire)) continue;  // E7: tail moved
      if (next == nullptr) {
        // ORDER: release publishes node->value with the link (E9).
        if (tail->next.compare_exchange_weak(next, node, std::memory_order_release,
                                             std::memory_order_relaxed)) {
          // E17: swing tail; failure means someone helped already.
          tail_.value.compare_exchange_strong(tail, node, std::memory_order_release,
                                              std::memory_order_relaxed);
          return;
        }
      } else {
        // E13: tail lags: help it forward before retrying.
        tail_.value.compare_exchange_strong(tail, next, std::memory_order_release,
                                            std::memory_order_relaxed);
      }
    }
  }

  bool try_dequeue(int tid, T* out) {
    [[maybe_unused]] auto guard = reclaim_.pin(tid);  // held to the end of the operation
    for (;;) {
      Node* head = head_.value.load(std::memory_order_acquire);
      Node* tail = tail_.value.load(std::memory_order_acquire);
      Node* next = head->next.load(std::memory_order_acquire);
      if (head != head_.value.load(std::memory_order_acquire)) continue;  // D5
      if (head == tail) {
        if (next == nullptr) return false;  // D8: empty
        tail_.value.compare_exchange_strong(tail, next, std::memory_order_release,
                                            std::memory_order_relaxed);  // D10: help
        continue;
      }
      // D12: read before the CAS; after it another dequeuer may retire `next`
      // (safe to read here: we are pinned, so `next` is not freed yet).
      T v = next->value;
      // ORDER: acq_rel — acquire keeps the value read above the CAS's
      // successful ownership; release orders our reads before the retire.
      if (head_.value.compare_exchange_weak(head, next, std::memory_order_acq_rel,
                                            std::memory_order_relaxed)) {
        *out = v;
        reclaim_.retire(tid, head);  // the old dummy is unreachable now
        return true;
      }
    }
  }

  // Not linearizable with concurrent updates; for tests and teardown.
  bool empty_unsafe() const {
    return head_.value.load(std::memory_order_acquire)->next.load(std::memory_order_acquire) == nullptr;
  }

 private:
  struct Node {
    T value{};
    std::atomic<Node*> next{nullptr};
  };
  sync::CachePadded<std::atomic<Node*>> head_;
  sync::CachePadded<std::atomic<Node*>> tail_;
  Reclaimer reclaim_;
};

}  // namespace ferrite::baselines
