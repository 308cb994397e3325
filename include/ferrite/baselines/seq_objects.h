// ferrite/baselines/seq_objects.h — sequential objects that live in a
// Ferrite pool and persist in place: the shared state of the lock-persist
// and fc-inplace competitors (lock_persist.h, fc_inplace.h), and — through
// a transactional storage policy (below) — of the RomulusLog ones
// (romulus.h).
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
//
// Storage policy. Each object is templated on how it stores, persists and
// allocates (`Storage`); everything above describes the default,
// InPlaceStorage: roots are named pool roots, nodes come from the pool heap
// (NodeAlloc), stores are plain, the pwb/pfence/psync calls are the persist
// verbs (with the object's own call sites, for the crash simulator's
// mutation testing). A transactional storage (Storage::kTransactional, e.g.
// RomulusStorage in romulus.h) runs every `apply` inside a failure-atomic
// transaction of a persistent transactional memory: stores go through the
// PTM's store interposition, nodes and roots come from the PTM's own
// allocator, the pwb/pfence/psync calls are no-ops (the PTM makes the
// transaction durable at its commit), removed nodes are freed inside the
// transaction, and the repairs (queue tail, heap redo log) are never needed:
// the heap applies its planned key moves directly instead of through its
// redo log. A storage provides:
//   using Context;                         what the object is built on
//   static constexpr bool kTransactional;
//   Storage(Context&, const SeqParams&, bool nodes);
//   template <class Root> Root* find_root(name);    nullptr: absent
//   template <class Root> Root* create_root(name);
//   set(T& dst, T v); set_next(PNode*, PNode*);     stores to the object
//   T get(const T& src); PNode* next(const PNode*); loads from the object
//                                                   (identity but for a PTM
//                                                   whose loads are interposed,
//                                                   e.g. OneFileStorage)
//   pwb(p, n), pfence(), psync();                   persistence (caller's site)
//   PNode* make(tid, v); node_size(); release(tid, PNode*); after_sync(tid);
//   void* alloc_array(bytes, tid);
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
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

// The default storage: in place in a Ferrite pool, persisted with the
// persist verbs (see the top of the file).
class InPlaceStorage {
 public:
  using Context = pmem::Pool;
  static constexpr bool kTransactional = false;
  // nodes: the object allocates list nodes (a NodeAlloc of p.value_size).
  InPlaceStorage(pmem::Pool& pool, const SeqParams& p, bool nodes) : pool_(pool) {
    if (nodes) alloc_.emplace(pool, p.value_size);
  }
  template <class Root>
  Root* find_root(std::string_view name) {
    return pool_.has_root(name) ? pool_.root<Root>(name) : nullptr;
  }
  template <class Root>
  Root* create_root(std::string_view name) {
    return pool_.create_root<Root>(name);
  }
  template <class T>
  void set(T& dst, T v) {
    dst = v;
  }
  // Relaxed: the objects are serialized by their caller.
  void set_next(PNode* n, PNode* v) { n->next.store(v, std::memory_order_relaxed); }
  template <class T>
  T get(const T& src) const {
    return src;
  }
  PNode* next(const PNode* n) const { return n->next.load(std::memory_order_relaxed); }
  void pwb(const void* p, std::size_t n = 1, const persist::Site& where = persist::Site::current()) {
    persist::pwb(p, n, where);
  }
  void pfence(const persist::Site& where = persist::Site::current()) { persist::pfence(where); }
  void psync(const persist::Site& where = persist::Site::current()) { persist::psync(where); }
  PNode* make(int tid, std::int64_t v) { return alloc_->make(tid, v); }
  std::size_t node_size() const { return alloc_->node_size(); }
  // Freed only after the caller's psync (after_sync): the durable state
  // never reaches a reused block.
  void release(int, PNode* n) { deferred_.push_back(n); }
  void after_sync(int tid) {
    for (PNode* n : deferred_) alloc_->free_now(tid, n);
    deferred_.clear();
  }
  void* alloc_array(std::size_t bytes, int tid) { return pool_.heap().alloc(bytes, tid); }

 private:
  pmem::Pool& pool_;
  std::optional<NodeAlloc> alloc_;
  std::vector<PNode*> deferred_;
};

// Base for the linked objects: node allocation and deferred frees.
template <class Storage>
class SeqLinked {
 protected:
  SeqLinked(typename Storage::Context& ctx, const SeqParams& p) : st_(ctx, p, true) {}
  void defer_free(int tid, PNode* n) { st_.release(tid, n); }

 public:
  void after_sync(int tid) { st_.after_sync(tid); }

 protected:
  Storage st_;
};

template <unsigned Faults = kNoFaults, class Storage = InPlaceStorage>
class SeqStack : public SeqLinked<Storage> {
  using SeqLinked<Storage>::st_;

 public:
  struct Root {
    static constexpr std::uint32_t kTypeTag = 0x42A5'0020;
    static constexpr std::uint32_t kTypeVersion = 1;
    static constexpr const char* kTypeName = "baselines::SeqStack";
    alignas(64) PNode* top = nullptr;
  };
  SeqStack(typename Storage::Context& ctx, std::string_view name, const SeqParams& p) : SeqLinked<Storage>(ctx, p) {
    root_ = st_.template find_root<Root>(name);  // in place: the pool recovered the heap (recover_root)
    if (root_ == nullptr) root_ = st_.template create_root<Root>(name);
  }
  // Root's recover hook: the list from the durable top.
  static void recover_root(pmem::Pool&, Root* r, const std::function<void(void*)>& mark) {
    ListWalk walk;
    for (PNode* n = r->top; n != nullptr; n = walk.next(n)) mark(n);
  }
  // insert = push (ack), remove = pop (value | empty).
  bool apply(int tid, bool insert, std::int64_t arg, std::int64_t* out) {
    if (insert) {
      PNode* n = st_.make(tid, arg);
      st_.set_next(n, st_.get(root_->top));
      // PERSIST: node before the pointer to it.
      if constexpr ((Faults & kNoNodePwb) == 0) st_.pwb(n, st_.node_size());
      st_.pfence();
      st_.set(root_->top, n);
      st_.pwb(&root_->top);
      st_.pfence();
      return false;
    }
    PNode* t = st_.get(root_->top);
    if (t == nullptr) return false;
    *out = st_.get(t->value);
    st_.set(root_->top, st_.next(t));
    st_.pwb(&root_->top);
    st_.pfence();
    this->defer_free(tid, t);
    return true;
  }
  std::vector<std::int64_t> snapshot() const {
    std::vector<std::int64_t> r;
    ListWalk walk;
    for (PNode* n = st_.get(root_->top); n != nullptr; n = walk.next(n, st_)) r.push_back(st_.get(n->value));
    return r;
  }

 private:
  Root* root_ = nullptr;
};

template <unsigned Faults = kNoFaults, class Storage = InPlaceStorage>
class SeqQueue : public SeqLinked<Storage> {
  using SeqLinked<Storage>::st_;

 public:
  struct Root {
    static constexpr std::uint32_t kTypeTag = 0x42A5'0021;
    static constexpr std::uint32_t kTypeVersion = 1;
    static constexpr const char* kTypeName = "baselines::SeqQueue";
    alignas(64) PNode* head = nullptr;
    alignas(64) PNode* tail = nullptr;
  };
  SeqQueue(typename Storage::Context& ctx, std::string_view name, const SeqParams& p) : SeqLinked<Storage>(ctx, p) {
    root_ = st_.template find_root<Root>(name);
    if (root_ != nullptr) {
      // A transaction never leaves the tail behind: nothing to repair.
      if constexpr (!Storage::kTransactional) repair(root_);
    } else {
      root_ = st_.template create_root<Root>(name);
      PNode* s = st_.make(0, 0);
      st_.pwb(s, st_.node_size());
      st_.pfence();
      st_.set(root_->head, s);
      st_.set(root_->tail, s);
      st_.pwb(root_, sizeof(Root));
      st_.psync();
    }
  }
  bool apply(int tid, bool insert, std::int64_t arg, std::int64_t* out) {
    if (insert) {
      PNode* n = st_.make(tid, arg);
      if constexpr ((Faults & kNoNodePwb) == 0) st_.pwb(n, st_.node_size());
      st_.pfence();
      PNode* tail = st_.get(root_->tail);
      st_.set_next(tail, n);
      st_.pwb(&tail->next);
      st_.set(root_->tail, n);
      st_.pwb(&root_->tail);
      st_.pfence();
      return false;
    }
    PNode* first = st_.get(root_->head);
    PNode* next = st_.next(first);
    if (next == nullptr) return false;
    *out = st_.get(next->value);
    st_.set(root_->head, next);
    st_.pwb(&root_->head);
    st_.pfence();
    this->defer_free(tid, first);
    return true;
  }
  std::vector<std::int64_t> snapshot() const {
    std::vector<std::int64_t> r;
    ListWalk walk;
    for (PNode* n = st_.next(st_.get(root_->head)); n != nullptr; n = walk.next(n, st_))
      r.push_back(st_.get(n->value));
    return r;
  }
  // Root's recover hook: repair, then the list from the durable head.
  static void recover_root(pmem::Pool&, Root* r, const std::function<void(void*)>& mark) {
    repair(r);
    ListWalk walk;
    for (PNode* n = r->head; n != nullptr; n = walk.next(n)) mark(n);
  }

 private:
  // tail := the last node reachable from head. Idempotent. In place only.
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
// old value's bits. remove = read (stores nothing: kReadOnlyRemove).
template <unsigned Faults = kNoFaults, class Storage = InPlaceStorage>
class SeqFloat {
 public:
  static constexpr bool kReadOnlyRemove = true;
  struct Root {
    static constexpr std::uint32_t kTypeTag = 0x42A5'0022;
    static constexpr std::uint32_t kTypeVersion = 1;
    static constexpr const char* kTypeName = "baselines::SeqFloat";
    alignas(64) double value = 1.0;
  };
  SeqFloat(typename Storage::Context& ctx, std::string_view name, const SeqParams& p) : st_(ctx, p, false) {
    root_ = st_.template find_root<Root>(name);
    if (root_ == nullptr) root_ = st_.template create_root<Root>(name);
  }
  // Root's recover hook: the root is the whole state.
  static void recover_root(pmem::Pool&, Root*, const std::function<void(void*)>&) {}
  bool apply(int, bool insert, std::int64_t arg, std::int64_t* out) {
    const double old = st_.get(root_->value);
    *out = std::bit_cast<std::int64_t>(old);
    if (insert) {
      st_.set(root_->value, old * std::bit_cast<double>(arg));
      if constexpr ((Faults & kNoLinkPwb) == 0) st_.pwb(&root_->value);
      st_.pfence();
    }
    return true;
  }
  void after_sync(int) {}
  double value() const { return st_.get(root_->value); }
  std::vector<std::int64_t> snapshot() const { return {std::bit_cast<std::int64_t>(st_.get(root_->value))}; }

 private:
  Storage st_;
  Root* root_ = nullptr;
};

// Bounded binary min-heap. insert on a full heap is refused (returns false
// with *out untouched: the caller treats it as "full").
template <unsigned Faults = kNoFaults, class Storage = InPlaceStorage>
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
  using Entry = typename Root::Entry;
  SeqHeap(typename Storage::Context& ctx, std::string_view name, const SeqParams& p) : st_(ctx, p, false) {
    root_ = st_.template find_root<Root>(name);
    if (root_ != nullptr) {
      // A transaction never leaves a half-applied operation: no redo log.
      if constexpr (!Storage::kTransactional) repair(root_);
    } else {
      if (p.heap_capacity <= 0) throw std::invalid_argument("SeqHeap: capacity must be > 0");
      root_ = st_.template create_root<Root>(name);
      auto* keys = static_cast<std::int64_t*>(st_.alloc_array(sizeof(std::int64_t) * static_cast<std::size_t>(p.heap_capacity), 0));
      st_.set(root_->capacity, static_cast<std::uint64_t>(p.heap_capacity));
      st_.set(root_->keys, keys);
      st_.pwb(root_, sizeof(Root));
      st_.psync();
    }
  }
  // insert(key) -> false (ack, or refused when full); remove = delete-min.
  bool apply(int, bool insert, std::int64_t arg, std::int64_t* out) {
    Root& r = *root_;
    if constexpr (Storage::kTransactional) {
      // The transaction makes the key moves atomic: apply the plan directly.
      Entry e[kMaxLog];
      std::uint64_t n = 0, new_size = 0;
      if (!plan(r, insert, arg, out, e, n, new_size)) return false;
      std::int64_t* keys = st_.get(r.keys);
      for (std::uint64_t i = 0; i < n; ++i) st_.set(keys[e[i].index], e[i].key);
      st_.set(r.size, new_size);
      return !insert;
    } else {
      std::uint64_t n = 0;
      if (!plan(r, insert, arg, out, r.entries, n, r.new_size)) return false;
      r.count = n;
      // PERSIST: log entries, then the commit word, durable before any
      // in-place store (a dirty key line may be evicted at any time).
      if constexpr ((Faults & kNoLogPwb) == 0) persist::pwb(&r.count, sizeof(std::uint64_t) * 2 + sizeof(Entry) * n);
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
  }
  void after_sync(int) {}
  std::vector<std::int64_t> snapshot() const {
    const std::int64_t* keys = st_.get(root_->keys);
    std::vector<std::int64_t> v;
    for (std::uint64_t i = 0, n = st_.get(root_->size); i < n; ++i) v.push_back(st_.get(keys[i]));
    std::sort(v.begin(), v.end());
    return v;
  }
  // Root's recover hook: replay a committed redo log, keep the key array.
  static void recover_root(pmem::Pool&, Root* r, const std::function<void(void*)>& mark) {
    repair(r);
    mark(r->keys);
  }

 private:
  // The key moves of one operation: e[0..n) = (index, key) to write, and
  // the size after it; *out = the minimum for a remove. Stores only to e,
  // n and new_size. False when the operation changes nothing (insert into a
  // full heap, remove from an empty one).
  // Loads through the storage (st_.get).
  bool plan(const Root& r, bool insert, std::int64_t arg, std::int64_t* out, Entry* e, std::uint64_t& n,
            std::uint64_t& new_size) const {
    const std::int64_t* keys = st_.get(r.keys);
    auto k = [&](std::uint64_t i) { return st_.get(keys[i]); };
    const std::uint64_t size = st_.get(r.size);
    if (insert) {
      if (size == st_.get(r.capacity)) return false;
      std::uint64_t pos = size;
      while (pos > 0 && k((pos - 1) / 2) > arg) {
        e[n++] = {pos, k((pos - 1) / 2)};
        pos = (pos - 1) / 2;
      }
      e[n++] = {pos, arg};
      new_size = size + 1;
      return true;
    }
    if (size == 0) return false;
    *out = k(0);
    const std::uint64_t ns = size - 1;
    const std::int64_t last = k(ns);
    std::uint64_t pos = 0;
    for (;;) {
      std::uint64_t c = 2 * pos + 1;
      if (c >= ns) break;
      if (c + 1 < ns && k(c + 1) < k(c)) ++c;
      if (k(c) >= last) break;
      e[n++] = {pos, k(c)};
      pos = c;
    }
    if (ns > 0) e[n++] = {pos, last};
    new_size = ns;
    return true;
  }
  // Replays a committed redo log and clears it. Idempotent (the log holds
  // absolute values). In place only.
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
  Storage st_;
  Root* root_ = nullptr;
};

// The pool's recover hooks (repair and trace do not depend on Faults).
inline const bool kSeqStackRootRegistered = pmem::register_root_type<SeqStack<>::Root>(&SeqStack<>::recover_root);
inline const bool kSeqQueueRootRegistered = pmem::register_root_type<SeqQueue<>::Root>(&SeqQueue<>::recover_root);
inline const bool kSeqFloatRootRegistered = pmem::register_root_type<SeqFloat<>::Root>(&SeqFloat<>::recover_root);
inline const bool kSeqHeapRootRegistered = pmem::register_root_type<SeqHeap<>::Root>(&SeqHeap<>::recover_root);

}  // namespace ferrite::baselines
