// ferrite/mirror/skip_list.h — a lock-free skip list made persistent by
// Mirror (Friedman, Petrank, Ramalhete, PLDI 2021, §6's skip list): the
// original algorithm with std::atomic replaced by patomic, immutable fields
// by pconst and new by Heap::make_sized; mirror::SkipList is the durable set
// and map built on it.
//
// The algorithm is Herlihy and Shavit's LockFreeSkipList (M. Herlihy,
// N. Shavit, "The Art of Multiprocessor Programming", §14.4, Figs. 14.10–
// 14.16; after K. Fraser's), with the book's names: find (which snips
// marked nodes level by level and answers preds/succs), add (link at level
// 0 — the linearization point — then upward), remove (mark top-down; the
// level-0 mark is the linearization point; then find to snip), contains
// (wait-free: skips marked nodes, never writes). A node's next pointers carry
// the mark in bit 0 (the book's AtomicMarkableReference).
//
// Adapted, none of it for persistence:
//   * the list ends in nullptr (the book's tail sentinel, key +∞), so every
//     int64 is a key; head is a node of kLevels levels whose key is never read;
//   * add's errata: before linking level l > 0 it sets the new node's
//     next[l] to succs[l] (a CAS from the value it had: if the node was
//     marked meanwhile, it stops linking);
//   * nodes are of variable length (top + 1 next fields, 64-byte units),
//     top levels geometric(1/2) from a per-thread generator seeded by tid
//     (deterministic runs);
//   * reclamation (the book relies on a garbage collector): a node's
//     `owners` starts at 2 — its adder, until it stops linking, and its
//     remover (the thread whose level-0 mark succeeded), until its find has
//     snipped it at every level. An adder that finds its node marked runs
//     find itself, so a level it linked late is snipped too; whoever drops
//     owners to 0 retires the node to EBR: it is then unreachable. owners is
//     a plain atomic, meaningful on rep_v only (never written back); recovery
//     sets it to 1 in every traced node (their adders are gone). A node a
//     crashed remover marked is snipped later but never retired: a leak of
//     one node until the next recovery, which does not trace it.
//   * the map (put/get/erase): the hash map's value-CAS extension
//     (mirror/harris_list.h): erase CASes the value to kTombstone, its
//     linearization point, then removes the node (mark top-down, level 0,
//     find); a put or erase that meets a tombstone finishes that removal.
//   * a key/value policy P (as HarrisList's, harris_list.h): what a node
//     holds, how keys compare, how nodes are made and freed, what happens to
//     a value a CAS replaced. The algorithm exists once; IntSkipKeys (below)
//     is the int64 set and map of this file, mirror/bytes_skip_map.h's
//     BytesSkipKeys holds byte strings as payload offsets.
//
// Thread safety: every operation is lock-free (contains/get wait-free),
// safe concurrently for distinct tids in [0, threads).
//
// Invariants: level 0 is a sorted list of distinct keys among unmarked
// nodes; level l's list is a sublist of level l−1's among unmarked nodes;
// a marked next never changes; a node's level-0 mark comes after its marks
// at every other level. Mirror's per field: patomic.h I1–I4.
//
// Persistence invariants: a node is durable on rep_p before it is linked
// (make_sized); every link and mark is durable before it is visible
// (patomic P1). rep_p after a crash is a state the algorithm reaches with the
// crashed threads stalled; every pending operation is decided by it (add at
// its level-0 CAS, remove at its level-0 mark, put/erase at their value CAS):
// a node linked at some levels only or marked at upper levels only is
// handled by the algorithm as at run time.
//
// Recovery (SkipList::attach): Mirror's §4.3.3 — trace follows every level
// of every node from head (a node snipped at level 0 may still be linked
// above), reading the persistent copies; Heap::recover copies each node to
// rep_v and rebuilds the allocator; then owners := 1 in every traced node
// (rep_v only). Writes nothing to rep_p: idempotent.
//
// For users. Reserved value: a map never stores kTombstone (INT64_MIN, the
// mark of an erased key): put(k, INT64_MIN) throws std::invalid_argument
// and changes nothing; every other int64 is a value. Durability: every
// operation is durable when it returns (durable linearizability): a crash
// or an exit loses nothing completed. Threads: `threads` sizes DRAM only
// (EBR slots, free lists) — nothing per thread is in the pool — so attach
// takes any count >= 1, fewer or more than at creation; a tid must be
// below this run's count. open_or_create: attach also accepts create's
// arguments and ignores the creation-only ones (the root recorded them),
// so pmem::Pool::open_or_create<T>(name, create's arguments...) works.
// Capacity: the region's size (replica_bytes) is fixed at create; a full
// region throws pmem::PoolError(kFull) saying its size and to create the
// structure with a larger one (docs/mirror.md, "Capacity").
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferrite/mirror/harris_list.h"  // kTombstone
#include "ferrite/mirror/heap.h"
#include "ferrite/mirror/patomic.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::mirror {

// A node's fixed part; its next fields follow it (top + 1 of them).
template <class C = Default>
struct alignas(16) SkipNode {
  using Edge = patomic<std::uintptr_t, C>;
  pconst<std::int64_t, C> key;
  pconst<std::int32_t, C> top;  // top level: next[0 .. top]
  // Reclamation (header): DRAM meaning only. ORDER: acq_rel decrements (below).
  std::atomic<std::int32_t> owners{2};
  patomic<std::int64_t, C> value;
  SkipNode(std::int64_t k, std::int32_t t, std::int64_t v) : key(k), top(t), value(v) {}
  Edge& next(int l) { return reinterpret_cast<Edge*>(this + 1)[l]; }
  const Edge& next(int l) const { return reinterpret_cast<const Edge*>(this + 1)[l]; }
  static std::size_t bytes(int top) { return sizeof(SkipNode) + static_cast<std::size_t>(top + 1) * sizeof(Edge); }
};
static_assert(sizeof(SkipNode<>) == 32 && alignof(SkipNode<>) == 16);
static_assert(std::atomic<std::int32_t>::is_always_lock_free);

// A key/value policy of HsSkipList. A policy P provides
//   Node (fields top, owners, value, next(l), static bytes(top)), Key (the
//   search argument), kErased (the value of an erased key);
//   less(n, key), equal(n, key)         the order of level 0;
//   key_of(n)                           a node's Key (n kept alive by the
//                                       caller: an owner of it, pinned);
//   make(heap, tid, key, top, value, edges)  a new durable node
//                                       (Heap::make_sized); edges(node)
//                                       constructs its next fields;
//   make_head(heap, tid, edges)         the head node (its key never read);
//   discard(heap, tid, n)               frees a node never published;
//   retire(heap, ebr, tid, n)           a node unlinked at every level;
//   replaced(ebr, tid, old)             a value this thread's CAS replaced;
//   before_value_cas(tid)               just before a put's value CAS;
//   same_replicas(n)                    the pconst fields agree (tests).
// This one is the int64 skip list of the essay.
template <class C = Default>
struct IntSkipKeys {
  using Node = SkipNode<C>;
  using Key = std::int64_t;
  static constexpr std::int64_t kErased = kTombstone;
  static bool less(const Node* n, Key k) { return n->key.get() < k; }
  static bool equal(const Node* n, Key k) { return n->key.get() == k; }
  static Key key_of(const Node* n) { return n->key.get(); }
  template <class Edges>
  static Node* make(Heap<C>& heap, int tid, Key k, int top, std::int64_t v, Edges&& edges) {
    return heap.template make_sized<Node>(tid, Node::bytes(top), [&](void* p) {
      Node* n = new (p) Node(k, top, v);
      edges(n);
      return n;
    });
  }
  template <class Edges>
  static Node* make_head(Heap<C>& heap, int tid, int top, Edges&& edges) {
    return make(heap, tid, 0, top, 0, edges);
  }
  static void discard(Heap<C>& heap, int tid, Node* n) { heap.free(n, Node::bytes(n->top.get()), tid); }
  static void retire(Heap<C>& heap, sync::Ebr& ebr, int tid, Node* n) {
    ebr.retire(tid, n, &free_node, &heap);  // the heap outlives EBR's last frees
  }
  static void replaced(sync::Ebr&, int, std::int64_t) {}
  static void before_value_cas(int) {}
  static bool same_replicas(const Node* n) {
    return n->key.get() == n->key.persistent()->get() && n->top.get() == n->top.persistent()->get();
  }

 private:
  static void free_node(void* ctx, void* p, int tid) {
    auto* n = static_cast<Node*>(p);
    static_cast<Heap<C>*>(ctx)->free(n, Node::bytes(n->top.get()), tid);
  }
};

template <class C = Default, class P = IntSkipKeys<C>>
class HsSkipList {
 public:
  using Node = typename P::Node;
  using Edge = typename Node::Edge;
  using Key = typename P::Key;
  static constexpr std::int64_t kErased = P::kErased;
  static constexpr int kLevels = 20;  // levels 0 .. 19: about 1 M keys at p = 1/2

  HsSkipList(Heap<C>& heap, sync::Ebr& ebr, Node* head, int threads, P& policy)
      : heap_(heap), ebr_(ebr), pol_(policy), head_(head), rng_(static_cast<std::size_t>(threads)) {
    for (std::size_t t = 0; t < rng_.size(); ++t) rng_[t].s = 0x9e3779b97f4a7c15ull * (t + 1) | 1;
  }

  // head: kLevels levels, all nullptr.
  static Node* make_head(Heap<C>& heap, int tid, P& policy) {
    return policy.make_head(heap, tid, kLevels - 1, [](Node* n) {
      for (int l = 0; l < kLevels; ++l) new (&n->next(l)) Edge(0);
    });
  }
  Node* head() const { return head_; }

  // ------------------------------------------------------------------ set
  bool add(const Key& key, int tid) {
    auto g = ebr_.pin(tid);
    return add_node(key, 0, tid).second;
  }
  // The book's remove.
  bool remove(const Key& key, int tid) {
    auto g = ebr_.pin(tid);
    std::array<Node*, kLevels> preds, succs;
    for (;;) {
      if (!find(key, preds, succs, tid)) return false;
      if (remove_node(succs[0], preds, succs, tid)) return true;
      // Someone else marked it first: the book returns false there (the key
      // was removed by them, linearized before us).
      return false;
    }
  }
  // The book's wait-free contains.
  bool contains(const Key& key, int tid) {
    auto g = ebr_.pin(tid);
    Node* n = locate(key);
    return n != nullptr && pol_.equal(n, key);
  }

  // ------------------------------------------------------------------ map
  // Callers of the map operations below hold an EBR pin of their own when
  // they use an answered value after the call (a payload offset: it stays
  // allocated until they unpin); the pins nest.
  std::optional<std::int64_t> put(const Key& key, std::int64_t value, int tid) {
    auto g = ebr_.pin(tid);
    std::array<Node*, kLevels> preds, succs;
    for (;;) {
      if (find(key, preds, succs, tid)) {
        Node* n = succs[0];
        std::int64_t cur = n->value.load();
        if (cur == kErased) {
          remove_node(n, preds, succs, tid);  // finish the erase
          continue;
        }
        pol_.before_value_cas(tid);
        if (n->value.compare_exchange_strong(cur, value)) {
          pol_.replaced(ebr_, tid, cur);
          return cur;
        }
        continue;
      }
      const auto [n, added] = add_node(key, value, tid);
      if (added) return std::nullopt;
    }
  }
  std::optional<std::int64_t> get(const Key& key, int tid) {
    auto g = ebr_.pin(tid);
    Node* n = locate(key);
    if (n == nullptr || !pol_.equal(n, key)) return std::nullopt;
    const std::int64_t v = n->value.load();
    if (v == kErased) return std::nullopt;
    return v;
  }
  std::optional<std::int64_t> erase(const Key& key, int tid) {
    auto g = ebr_.pin(tid);
    std::array<Node*, kLevels> preds, succs;
    for (;;) {
      if (!find(key, preds, succs, tid)) return std::nullopt;
      Node* n = succs[0];
      std::int64_t cur = n->value.load();
      if (cur == kErased) {
        remove_node(n, preds, succs, tid);
        continue;
      }
      if (n->value.compare_exchange_strong(cur, kErased)) {
        pol_.replaced(ebr_, tid, cur);
        remove_node(n, preds, succs, tid);
        return cur;
      }
    }
  }

  // Range scan (the caller pinned): fn(node, value) for every node of level
  // 0 from the first with key >= lo, in list order, while fn returns true;
  // a node is passed only if its value was not kErased and its level-0
  // next was unmarked after that value was read (so the pair was in the map
  // at the value's read). Keys ascend strictly along level 0 (every next
  // names a larger key, marked nodes' frozen nexts included), so no node
  // twice. fn decides where the range ends.
  template <class F>
  void scan_from(const Key& lo, F&& fn) const {
    for (Node* n = locate(lo); n != nullptr;) {
      const std::int64_t v = n->value.load();
      const std::uintptr_t nx = n->next(0).load();
      if (!marked(nx) && v != kErased && !fn(n, v)) return;
      n = unmarked(nx);
    }
  }

  // ------------------------------------------------------------- recovery
  // §4.3.3: every node reachable from head at any level, from the persistent
  // copies of the next fields; visit(p, bytes) is false for a node seen.
  template <class Visit>
  static void trace(Node* head, Visit& visit, std::vector<Node*>* seen) {
    std::vector<Node*> stack{head};
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      const int top = n->top.persistent()->get();
      if (top < 0 || top >= kLevels) throw pmem::PoolError(pmem::Errc::kCorrupt, "mirror: skip-list node level");
      if (!visit(n, Node::bytes(top))) continue;
      if (seen != nullptr) seen->push_back(n);
      for (int l = top; l >= 0; --l) {
        Node* s = unmarked(n->next(l).persistent()->load());
        if (s != nullptr) stack.push_back(s);
      }
    }
  }

  // --------------------------------------------------------------- views
  // fn(node, value) for the unmarked level-0 nodes, ascending (rep_v;
  // quiescent); with map, erased ones are left out.
  template <class F>
  void for_each(bool map, F&& fn) const {
    for (Node* n = unmarked(head_->next(0).load()); n != nullptr;) {
      const std::uintptr_t nx = n->next(0).load();
      const std::int64_t v = n->value.load();
      if (!marked(nx) && !(map && v == kErased)) fn(n, v);
      n = unmarked(nx);
    }
  }
  bool replicas_equal() const {
    auto same = [](const auto& f) {
      const auto r = f.replicas();
      return r.p == r.v;
    };
    for (Node* n = head_; n != nullptr; n = unmarked(n->next(0).load())) {
      if (!same(n->value) || !P::same_replicas(n)) return false;
      for (int l = 0; l <= n->top.get(); ++l)
        if (!same(n->next(l))) return false;
    }
    return true;
  }

  static bool marked(std::uintptr_t e) { return (e & 1u) != 0; }
  static Node* unmarked(std::uintptr_t e) { return reinterpret_cast<Node*>(e & ~std::uintptr_t{1}); }

 private:
  static std::uintptr_t bits(const Node* n) { return reinterpret_cast<std::uintptr_t>(n); }

  struct alignas(64) Rng {
    std::uint64_t s;
  };
  // Geometric(1/2) top level in [0, kLevels − 1].
  int random_level(int tid) {
    std::uint64_t& s = rng_[static_cast<std::size_t>(tid)].s;
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    const int l = __builtin_ctzll(s | (std::uint64_t{1} << (kLevels - 1)));
    return l;
  }

  // The book's find: preds/succs at every level (succs[l] the first node
  // with key >= key, nullptr at the end), snipping marked nodes on the way.
  bool find(const Key& key, std::array<Node*, kLevels>& preds, std::array<Node*, kLevels>& succs, int tid) {
  retry:
    Node* pred = head_;
    Node* curr = nullptr;
    for (int level = kLevels - 1; level >= 0; --level) {
      curr = unmarked(pred->next(level).load());
      for (;;) {
        if (curr == nullptr) break;
        std::uintptr_t succ = curr->next(level).load();
        while (marked(succ)) {
          std::uintptr_t e = bits(curr);
          if (!pred->next(level).compare_exchange_strong(e, succ & ~std::uintptr_t{1})) goto retry;  // snip
          curr = unmarked(succ);
          if (curr == nullptr) break;
          succ = curr->next(level).load();
        }
        if (curr == nullptr) break;
        if (pol_.less(curr, key)) {
          pred = curr;
          curr = unmarked(succ);
        } else {
          break;
        }
      }
      preds[static_cast<std::size_t>(level)] = pred;
      succs[static_cast<std::size_t>(level)] = curr;
    }
    (void)tid;
    return curr != nullptr && pol_.equal(curr, key);
  }

  // The book's contains, answering the node it stops at.
  Node* locate(const Key& key) const {
    Node* pred = head_;
    Node* curr = nullptr;
    for (int level = kLevels - 1; level >= 0; --level) {
      curr = unmarked(pred->next(level).load());
      for (;;) {
        if (curr == nullptr) break;
        std::uintptr_t succ = curr->next(level).load();
        while (marked(succ)) {
          curr = unmarked(succ);
          if (curr == nullptr) break;
          succ = curr->next(level).load();
        }
        if (curr == nullptr) break;
        if (pol_.less(curr, key)) {
          pred = curr;
          curr = unmarked(succ);
        } else {
          break;
        }
      }
    }
    return curr;
  }

  // The book's add (with a value): (node, true) if added, (found, false) if
  // the key was present.
  std::pair<Node*, bool> add_node(const Key& key, std::int64_t value, int tid) {
    const int top = random_level(tid);
    std::array<Node*, kLevels> preds, succs;
    Node* node = nullptr;
    for (;;) {
      if (find(key, preds, succs, tid)) {
        if (node != nullptr) pol_.discard(heap_, tid, node);  // never published
        return {succs[0], false};
      }
      if (node == nullptr) {
        node = pol_.make(heap_, tid, key, top, value, [&](Node* n) {
          for (int l = 0; l <= top; ++l) new (&n->next(l)) Edge(bits(succs[static_cast<std::size_t>(l)]));
        });
      } else {
        for (int l = 0; l <= top; ++l) node->next(l).store(bits(succs[static_cast<std::size_t>(l)]));  // unpublished
      }
      std::uintptr_t e = bits(succs[0]);
      if (!preds[0]->next(0).compare_exchange_strong(e, bits(node))) continue;  // linearization point
      for (int level = 1; level <= top; ++level) {
        bool stop = false;
        for (;;) {
          Node* const pred = preds[static_cast<std::size_t>(level)];
          Node* const succ = succs[static_cast<std::size_t>(level)];
          // Errata: the node's next at this level is succ before it is linked.
          std::uintptr_t mine = node->next(level).load();
          if (marked(mine)) {
            stop = true;  // being removed: link no further
            break;
          }
          if (mine != bits(succ) && !node->next(level).compare_exchange_strong(mine, bits(succ))) continue;
          std::uintptr_t ps = bits(succ);
          if (pred->next(level).compare_exchange_strong(ps, bits(node))) break;
          find(key, preds, succs, tid);
          if (succs[0] != node) {  // removed (and snipped at level 0) meanwhile
            stop = true;
            break;
          }
        }
        if (stop) break;
      }
      // A level linked after the remover's find is snipped by ours.
      if (marked(node->next(0).load())) find(key, preds, succs, tid);
      release(node, tid);
      return {node, true};
    }
  }

  // The book's remove on a found node: mark top-down; true if our level-0
  // mark removed it (then find snips it everywhere).
  bool remove_node(Node* victim, std::array<Node*, kLevels>& preds, std::array<Node*, kLevels>& succs, int tid) {
    for (int level = victim->top.get(); level >= 1; --level) {
      std::uintptr_t succ = victim->next(level).load();
      while (!marked(succ)) {
        victim->next(level).compare_exchange_strong(succ, succ | 1u);
      }
    }
    std::uintptr_t succ = victim->next(0).load();
    for (;;) {
      if (marked(succ)) return false;  // someone else removed it
      if (victim->next(0).compare_exchange_strong(succ, succ | 1u)) {  // linearization point
        find(pol_.key_of(victim), preds, succs, tid);  // victim: ours until release
        release(victim, tid);
        return true;
      }
    }
  }

  // Drops one owner; the last one retires the node (header: reclamation).
  void release(Node* n, int tid) {
    // ORDER: acq_rel: the last owner's retire happens after the other's
    // unlinking steps.
    if (n->owners.fetch_sub(1, std::memory_order_acq_rel) == 1) pol_.retire(heap_, ebr_, tid, n);
  }

  Heap<C>& heap_;
  sync::Ebr& ebr_;
  P& pol_;
  Node* head_;  // rep_v
  std::vector<Rng> rng_;
};
// The durable set / map: a skip list in a Mirror region under a pool root.
// Creation: the region, head (durable, Heap::make_sized), the root record
// (pmem::Pool::create_root). Attach: trace from head, copy, rebuild; owners
// := 1 in the traced nodes.
template <class C = Default>
class SkipList {
 public:
  using Algo = HsSkipList<C>;
  using Node = typename Algo::Node;
  static constexpr std::uint32_t kStructure = 4;  // mirror::Root::structure (3 is the BST)

  static std::unique_ptr<SkipList> create(pmem::Pool& pool, std::string_view name, int threads,
                                          std::size_t replica_bytes = std::size_t{1} << 20) {
    return std::unique_ptr<SkipList>(new SkipList(pool, name, threads, replica_bytes));
  }
  // open_or_create's rule (pmem::Pool::open_or_create<T>(name, args...)):
  // attach accepts create's arguments and ignores the creation-only ones —
  // the region's size is the one the root recorded at creation
  // (heap().replica_bytes()). `threads` is DRAM-only (EBR slots, free
  // lists): any count >= 1 attaches, fewer or more than at creation.
  static std::unique_ptr<SkipList> attach(pmem::Pool& pool, std::string_view name, int threads) {
    return std::unique_ptr<SkipList>(new SkipList(pool, name, threads));
  }
  static std::unique_ptr<SkipList> attach(pmem::Pool& pool, std::string_view name, int threads,
                                   std::size_t /*replica_bytes: the root's*/) {
    return attach(pool, name, threads);
  }
  SkipList(const SkipList&) = delete;
  SkipList& operator=(const SkipList&) = delete;

  bool insert(std::int64_t key, int tid) { return algo_->add(key, tid); }
  bool remove(std::int64_t key, int tid) { return algo_->remove(key, tid); }
  bool contains(std::int64_t key, int tid) { return algo_->contains(key, tid); }
  // put refuses the reserved value kTombstone (INT64_MIN): std::invalid_argument.
  std::optional<std::int64_t> put(std::int64_t key, std::int64_t value, int tid) {
    return algo_->put(key, check_value(value, "mirror::SkipList"), tid);
  }
  std::optional<std::int64_t> get(std::int64_t key, int tid) { return algo_->get(key, tid); }
  std::optional<std::int64_t> erase(std::int64_t key, int tid) { return algo_->erase(key, tid); }

  // (key, value) of the unmarked level-0 nodes, ascending (rep_v; quiescent).
  std::vector<std::pair<std::int64_t, std::int64_t>> items(bool map) const {
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    algo_->for_each(map, [&](const Node* n, std::int64_t v) { out.emplace_back(n->key.get(), v); });
    return out;
  }
  bool replicas_equal() const { return algo_->replicas_equal(); }
  Heap<C>& heap() { return *heap_; }

 private:
  SkipList(pmem::Pool& pool, std::string_view name, int threads, std::size_t bytes) : ebr_(threads) {
    heap_ = std::make_unique<Heap<C>>(pool, bytes, threads);
    Node* const head = Algo::make_head(*heap_, 0, pol_);
    Root root;
    root.region = heap_->region();
    root.replica_bytes = heap_->replica_bytes();
    root.placement = static_cast<std::uint32_t>(C::placement::kKind);
    root.structure = kStructure;
    root.anchor = reinterpret_cast<std::uint64_t>(head);
    root.anchor_bytes = Node::bytes(Algo::kLevels - 1);
    root_ = pool.create_root<Root>(name, root);
    algo_ = std::make_unique<Algo>(*heap_, ebr_, head, threads, pol_);
  }
  SkipList(pmem::Pool& pool, std::string_view name, int threads) : ebr_(threads) {
    root_ = pool.root<Root>(name);
    if (root_->structure != kStructure)
      throw pmem::PoolError(pmem::Errc::kRootType, "mirror: root '" + std::string(name) + "' holds another structure");
    if (root_->placement != static_cast<std::uint32_t>(C::placement::kKind))
      throw pmem::PoolError(pmem::Errc::kRootType, "mirror: root '" + std::string(name) +
                                                       "' was created with the other replica placement");
    if (root_->anchor_bytes != Node::bytes(Algo::kLevels - 1))
      throw pmem::PoolError(pmem::Errc::kCorrupt, "mirror: root '" + std::string(name) + "' is inconsistent");
    heap_ = std::make_unique<Heap<C>>(pool, root_->region, root_->replica_bytes, threads);
    Node* const head = reinterpret_cast<Node*>(root_->anchor);
    std::vector<Node*> seen;
    // §4.3.3: trace from the persistent head, copy to rep_v, rebuild.
    heap_->recover([head, &seen](auto& visit) { Algo::trace(head, visit, &seen); });
    // ORDER: relaxed: single-threaded recovery, before the structure is shared.
    for (Node* n : seen) n->owners.store(1, std::memory_order_relaxed);
    algo_ = std::make_unique<Algo>(*heap_, ebr_, head, threads, pol_);
  }

  Root* root_ = nullptr;
  std::unique_ptr<Heap<C>> heap_;  // declared before ebr_: EBR's last frees go to a live heap
  IntSkipKeys<C> pol_;             // stateless (its retire's context is the heap)
  sync::Ebr ebr_;
  std::unique_ptr<Algo> algo_;
};

}  // namespace ferrite::mirror
