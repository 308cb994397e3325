// ferrite/baselines/seq_objects.h — sequential objects that live in a
// Ferrite pool and persist in place: the shared state of the lock-persist
// and fc-inplace competitors (lock_persist.h, fc_inplace.h).
//
// What it is: a stack (linked list, top pointer), a queue (linked list with
// sentinel, head/tail), an AtomicFloat register (one double, initially 1.0)
// and a bounded binary min-heap (array; multi-word updates go through a
// small redo log). Each `apply` modifies the shared state directly in the
// pool and writes back every line it changed (pwb); the caller issues the
// psync that makes a batch durable and then calls `after_sync` (blocks of
// removed nodes are freed only then, so the durable state never reaches a
// reused block).
//
// Thread safety: none — the caller serializes (a mutex, or the combiner).
//
// Persistence invariants: a new node is written back before the pointer
// that links it (pfence in between); each op ends with a pfence, so a crash
// image is the state after a prefix of the applied ops plus a crash-
// consistent part of the next one. Heap: the redo log is durable (psync)
// before the first in-place store and cleared (and durable) after the last.
//
// Recovery: stack/float: nothing (the root is the state). Queue: tail :=
// last node. Heap: replay a committed redo log. Heap blocks: the pool
// recovers them when it opens (pmem::Pool::recover) through each Root's
// registered hook (recover_root), which does the repair (idempotent) and
// traces from the root; the constructors, attaching, repeat the repair and
// free nothing.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "ferrite/baselines/persistent_common.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"

namespace ferrite::baselines {

struct SeqParams {
  int max_threads = 8;
  std::size_t value_size = 8;
  int heap_capacity = 1024;
};

// Base for the linked objects: node allocation and deferred frees.
class SeqLinked {
 protected:
  SeqLinked(pmem::Pool& pool, const SeqParams& p) : pool_(pool), alloc_(pool, p.value_size) {}
  void defer_free(PNode* n) { deferred_.push_back(n); }

 public:
  void after_sync(int tid) {
    for (PNode* n : deferred_) alloc_.free_now(tid, n);
    deferred_.clear();
  }

 protected:
  pmem::Pool& pool_;
  NodeAlloc alloc_;
  std::vector<PNode*> deferred_;
};

template <unsigned Faults = kNoFaults>
class SeqStack : public SeqLinked {
 public:
  struct Root {
    static constexpr std::uint32_t kTypeTag = 0x42A5'0020;
    static constexpr std::uint32_t kTypeVersion = 1;
    static constexpr const char* kTypeName = "baselines::SeqStack";
    alignas(64) PNode* top = nullptr;
  };
  SeqStack(pmem::Pool& pool, std::string_view name, const SeqParams& p) : SeqLinked(pool, p) {
    if (pool.has_root(name)) {
      root_ = pool.root<Root>(name);  // the pool recovered the heap (recover_root)
    } else {
      root_ = pool.create_root<Root>(name);
    }
  }
  // Root's recover hook: the list from the durable top.
  static void recover_root(pmem::Pool&, Root* r, const std::function<void(void*)>& mark) {
    ListWalk walk;
    for (PNode* n = r->top; n != nullptr; n = walk.next(n)) mark(n);
  }
  // insert = push (ack), remove = pop (value | empty).
  bool apply(int tid, bool insert, std::int64_t arg, std::int64_t* out) {
    if (insert) {
      PNode* n = alloc_.make(tid, arg);
      n->next.store(root_->top, std::memory_order_relaxed);  // relaxed: serialized by the caller
      // PERSIST: node before the pointer to it.
      if constexpr ((Faults & kNoNodePwb) == 0) persist::pwb(n, alloc_.node_size());
      persist::pfence();
      root_->top = n;
      persist::pwb(&root_->top);
      persist::pfence();
      return false;
    }
    PNode* t = root_->top;
    if (t == nullptr) return false;
    *out = t->value;
    root_->top = t->next.load(std::memory_order_relaxed);
    persist::pwb(&root_->top);
    persist::pfence();
    defer_free(t);
    return true;
  }
  std::vector<std::int64_t> snapshot() const {
    std::vector<std::int64_t> r;
    ListWalk walk;
    for (PNode* n = root_->top; n != nullptr; n = walk.next(n)) r.push_back(n->value);
    return r;
  }

 private:
  Root* root_ = nullptr;
};

template <unsigned Faults = kNoFaults>
class SeqQueue : public SeqLinked {
 public:
  struct Root {
    static constexpr std::uint32_t kTypeTag = 0x42A5'0021;
    static constexpr std::uint32_t kTypeVersion = 1;
    static constexpr const char* kTypeName = "baselines::SeqQueue";
    alignas(64) PNode* head = nullptr;
    alignas(64) PNode* tail = nullptr;
  };
  SeqQueue(pmem::Pool& pool, std::string_view name, const SeqParams& p) : SeqLinked(pool, p) {
    if (pool.has_root(name)) {
      root_ = pool.root<Root>(name);
      repair(root_);
    } else {
      root_ = pool.create_root<Root>(name);
      PNode* s = alloc_.make(0, 0);
      persist::pwb(s, alloc_.node_size());
      persist::pfence();
      root_->head = root_->tail = s;
      persist::pwb(root_, sizeof(Root));
      persist::psync();
    }
  }
  bool apply(int tid, bool insert, std::int64_t arg, std::int64_t* out) {
    if (insert) {
      PNode* n = alloc_.make(tid, arg);
      if constexpr ((Faults & kNoNodePwb) == 0) persist::pwb(n, alloc_.node_size());
      persist::pfence();
      root_->tail->next.store(n, std::memory_order_relaxed);  // relaxed: serialized by the caller
      persist::pwb(&root_->tail->next);
      root_->tail = n;
      persist::pwb(&root_->tail);
      persist::pfence();
      return false;
    }
    PNode* first = root_->head;
    PNode* next = first->next.load(std::memory_order_relaxed);
    if (next == nullptr) return false;
    *out = next->value;
    root_->head = next;
    persist::pwb(&root_->head);
    persist::pfence();
    defer_free(first);
    return true;
  }
  std::vector<std::int64_t> snapshot() const {
    std::vector<std::int64_t> r;
    ListWalk walk;
    for (PNode* n = root_->head->next.load(std::memory_order_relaxed); n != nullptr;
         n = walk.next(n))
      r.push_back(n->value);
    return r;
  }
  // Root's recover hook: repair, then the list from the durable head.
  static void recover_root(pmem::Pool&, Root* r, const std::function<void(void*)>& mark) {
    repair(r);
    ListWalk walk;
    for (PNode* n = r->head; n != nullptr; n = walk.next(n)) mark(n);
  }

 private:
  // tail := the last node reachable from head. Idempotent.
  static void repair(Root* r) {
    if (r->head == nullptr) return;  // creation did not complete
    PNode* last = r->head;
    ListWalk walk;
    while (PNode* n = walk.next(last)) last = n;
    r->tail = last;  // CRASH: the durable tail may lag; recompute
    persist::pwb(&r->tail);
    persist::psync();
  }
  Root* root_ = nullptr;
};

// AtomicFloat: insert = mul(k) with k = bit_cast<double>(arg); returns the
// old value's bits. remove = read.
template <unsigned Faults = kNoFaults>
class SeqFloat {
 public:
  struct Root {
    static constexpr std::uint32_t kTypeTag = 0x42A5'0022;
    static constexpr std::uint32_t kTypeVersion = 1;
    static constexpr const char* kTypeName = "baselines::SeqFloat";
    alignas(64) double value = 1.0;
  };
  SeqFloat(pmem::Pool& pool, std::string_view name, const SeqParams&) {
    if (pool.has_root(name)) {
      root_ = pool.root<Root>(name);
    } else {
      root_ = pool.create_root<Root>(name);
    }
  }
  // Root's recover hook: the root is the whole state.
  static void recover_root(pmem::Pool&, Root*, const std::function<void(void*)>&) {}
  bool apply(int, bool insert, std::int64_t arg, std::int64_t* out) {
    const double old = root_->value;
    *out = std::bit_cast<std::int64_t>(old);
    if (insert) {
      root_->value = old * std::bit_cast<double>(arg);
      if constexpr ((Faults & kNoLinkPwb) == 0) persist::pwb(&root_->value);
      persist::pfence();
    }
    return true;
  }
  void after_sync(int) {}
  double value() const { return root_->value; }
  std::vector<std::int64_t> snapshot() const { return {std::bit_cast<std::int64_t>(root_->value)}; }

 private:
  Root* root_ = nullptr;
};

// Bounded binary min-heap. insert on a full heap is refused (returns false
// with *out untouched: the caller treats it as "full").
template <unsigned Faults = kNoFaults>
class SeqHeap {
 public:
  static constexpr int kMaxLog = 64;
  struct Root {
    static constexpr std::uint32_t kTypeTag = 0x42A5'0023;
    static constexpr std::uint32_t kTypeVersion = 1;
    static constexpr const char* kTypeName = "baselines::SeqHeap";
    alignas(64) std::uint64_t size = 0;
    std::uint64_t capacity = 0;
    std::int64_t* keys = nullptr;
    // Redo log: valid != 0 means entries[0..count) and new_size are the
    // committed effect of one operation, not yet (fully) applied.
    alignas(64) std::uint64_t valid = 0;
    std::uint64_t count = 0;
    std::uint64_t new_size = 0;
    struct Entry {
      std::uint64_t index;
      std::int64_t key;
    } entries[kMaxLog];
  };
  SeqHeap(pmem::Pool& pool, std::string_view name, const SeqParams& p) {
    if (pool.has_root(name)) {
      root_ = pool.root<Root>(name);
      repair(root_);
    } else {
      if (p.heap_capacity <= 0) throw std::invalid_argument("SeqHeap: capacity must be > 0");
      root_ = pool.create_root<Root>(name);
      auto* keys = static_cast<std::int64_t*>(pool.heap().alloc(sizeof(std::int64_t) * static_cast<std::size_t>(p.heap_capacity), 0));
      root_->capacity = static_cast<std::uint64_t>(p.heap_capacity);
      root_->keys = keys;
      persist::pwb(root_, sizeof(Root));
      persist::psync();
    }
  }
  // insert(key) -> false (ack, or refused when full); remove = delete-min.
  bool apply(int, bool insert, std::int64_t arg, std::int64_t* out) {
    Root& r = *root_;
    std::int64_t* k = r.keys;
    std::uint64_t n = 0;
    if (insert) {
      if (r.size == r.capacity) return false;
      std::uint64_t pos = r.size;
      while (pos > 0 && k[(pos - 1) / 2] > arg) {
        r.entries[n++] = {pos, k[(pos - 1) / 2]};
        pos = (pos - 1) / 2;
      }
      r.entries[n++] = {pos, arg};
      r.new_size = r.size + 1;
    } else {
      if (r.size == 0) return false;
      *out = k[0];
      const std::uint64_t ns = r.size - 1;
      const std::int64_t last = k[ns];
      std::uint64_t pos = 0;
      for (;;) {
        std::uint64_t c = 2 * pos + 1;
        if (c >= ns) break;
        if (c + 1 < ns && k[c + 1] < k[c]) ++c;
        if (k[c] >= last) break;
        r.entries[n++] = {pos, k[c]};
        pos = c;
      }
      if (ns > 0) r.entries[n++] = {pos, last};
      r.new_size = ns;
    }
    r.count = n;
    // PERSIST: log entries, then the commit word, durable before any
    // in-place store (a dirty key line may be evicted at any time).
    if constexpr ((Faults & kNoLogPwb) == 0) persist::pwb(&r.count, sizeof(std::uint64_t) * 2 + sizeof(typename Root::Entry) * n);
    persist::pfence();
    r.valid = 1;
    persist::pwb(&r.valid);
    persist::psync();
    replay();
    // PERSIST: the in-place writes are durable before the log is cleared,
    // and the clear is durable before the next operation (possibly another
    // thread's) writes the log again.
    persist::psync();
    r.valid = 0;
    persist::pwb(&r.valid);
    persist::psync();
    return !insert;
  }
  void after_sync(int) {}
  std::vector<std::int64_t> snapshot() const {
    std::vector<std::int64_t> v(root_->keys, root_->keys + root_->size);
    std::sort(v.begin(), v.end());
    return v;
  }
  // Root's recover hook: replay a committed redo log, keep the key array.
  static void recover_root(pmem::Pool&, Root* r, const std::function<void(void*)>& mark) {
    repair(r);
    mark(r->keys);
  }

 private:
  // Replays a committed redo log and clears it. Idempotent (the log holds
  // absolute values).
  static void repair(Root* r) {
    if (r->valid != 0) replay(*r);  // CRASH: committed but maybe not applied
    r->valid = 0;
    persist::pwb(&r->valid);
    persist::psync();
  }
  void replay() { replay(*root_); }
  static void replay(Root& r) {
    for (std::uint64_t i = 0; i < r.count; ++i) {
      r.keys[r.entries[i].index] = r.entries[i].key;
      persist::pwb(&r.keys[r.entries[i].index]);
    }
    r.size = r.new_size;
    persist::pwb(&r.size);
  }
  Root* root_ = nullptr;
};

// The pool's recover hooks (repair and trace do not depend on Faults).
inline const bool kSeqStackRootRegistered = pmem::register_root_type<SeqStack<>::Root>(&SeqStack<>::recover_root);
inline const bool kSeqQueueRootRegistered = pmem::register_root_type<SeqQueue<>::Root>(&SeqQueue<>::recover_root);
inline const bool kSeqFloatRootRegistered = pmem::register_root_type<SeqFloat<>::Root>(&SeqFloat<>::recover_root);
inline const bool kSeqHeapRootRegistered = pmem::register_root_type<SeqHeap<>::Root>(&SeqHeap<>::recover_root);

}  // namespace ferrite::baselines
