// ferrite/baselines/hs_skip_list.h — Herlihy and Shavit's lock-free skip
// list (a set and a map), written once and templated on a persistence
// policy (durable_policy.h). Three policies make three of Mirror's skip-list
// competitors:
//
//   durable::Transient     DRAM, no persistence (bench technique
//                          hs-skiplist, origin transient);
//   durable::Izraelevitz   every load and CAS written back and fenced
//                          (izraelevitz-skiplist);
//   durable::NVTraverse    find/contains walk without write-backs; at the
//                          end ensureReachable(preds[0]) and
//                          makePersistent(preds[0], the level-0 nodes skipped,
//                          succs[0]), a fence; every critical read and CAS
//                          (and each snip) written back (nvtraverse-skiplist).
//
// Sources.
//   * M. Herlihy, N. Shavit, "The Art of Multiprocessor Programming", §14.4,
//     Figs. 14.10–14.16 (LockFreeSkipList, after K. Fraser): find (snips
//     marked nodes level by level, answers preds/succs), add (link at level
//     0 — the linearization point — then upward), remove (mark top-down; the
//     level-0 mark is the linearization point; then find to snip), contains
//     (wait-free, skips marked nodes, never writes). The mark is bit 0 of a
//     next pointer (the book's AtomicMarkableReference).
//   * The transforms: Izraelevitz, Mendes, Scott, DISC 2016, §5; Friedman,
//     Ben-David, Wei, Blelloch, Petrank, "NVTraverse", PLDI 2020 (the skip
//     list is one of its examples). Which level is the destination: the
//     set is level 0; upper levels are an index. An add's upper-level CASes
//     come after its level-0 CAS, each behind NVTraverse's fence, so a node
//     reachable at an upper level is durably linked at level 0; a pred that
//     find reached from above therefore needs no ensureReachable, one reached
//     along level 0 needs the level-0 link into it. The snips inside find are
//     CASes, so they are critical: the victim's mark is written back before
//     the snip (its fence is the CAS's).
//   * Mirror's version (mirror/skip_list.h; Friedman, Petrank, Ramalhete,
//     PLDI 2021, §6) makes the same adaptations, so the competitors answer
//     as mirror-skiplist does: the list ends in nullptr (every int64 is a
//     key), variable-length nodes (top + 1 next fields) with geometric(1/2)
//     levels from a per-thread generator seeded by tid; add's errata (a
//     level's next is CASed to succs[l] before linking l, and linking stops
//     once the node is marked); reclamation by an owners count (adder and
//     remover, the last retires to EBR); the map's value CAS with
//     kTombstone, then the book's remove.
//
// Thread safety: every operation is lock-free (contains/get wait-free),
// safe concurrently for distinct tids in [0, threads).
//
// Invariants: level 0 is a sorted list of distinct keys among unmarked
// nodes; level l's list is a sublist of level l−1's among unmarked nodes; a
// marked next never changes; a node's level-0 mark comes after its marks at
// every other level.
//
// Persistence invariants (both durable policies): a node is written back
// before the CAS that links it; every CAS is written back and fenced before
// the operation returns; everything an answer depends on (the level-0 link
// into preds[0], preds[0]'s level-0 link, the marked nodes skipped, succs[0]'s
// key, value and level-0 link) is durable before the answer. A node is
// retired only after every snip of it is written back, and freed after its
// last owner unpinned: no durable link reaches a reused block.
//
// Recovery. The durable list is a state the algorithm reaches with the
// crashed threads stalled: nodes linked at some levels only, or marked at
// upper levels only, are handled as at run time; nothing is repaired. The
// pool's recover hook marks every node reachable from head at any level (a
// node snipped at level 0 may still be linked above) and writes nothing;
// attach() sets owners := 1 in each (DRAM meaning only, never written back:
// their adders are gone). A node a crashed remover marked is snipped later
// but never retired: a leak of one node until the next recovery, which does
// not reach it. Idempotent. A crash during create() leaves head unreached:
// the pool frees it.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ferrite/baselines/durable_policy.h"
#include "ferrite/baselines/harris_hash.h"  // harris::kTombstone
#include "ferrite/baselines/persistent_common.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::baselines {

namespace hs {

inline constexpr int kLevels = 20;  // levels 0 .. 19: about 1 M keys at p = 1/2
using Edge = std::atomic<std::uintptr_t>;

// A node's fixed part (24 bytes); its top + 1 next fields follow it, so a
// level-0 node is 32 bytes and its key, value and next(0) share a line.
struct Node {
  std::int64_t key;                  // immutable once linked
  std::int32_t top;                  // immutable: next[0 .. top]
  std::atomic<std::int32_t> owners;  // reclamation (header): DRAM meaning only
  std::atomic<std::int64_t> value;   // a map's value, or kTombstone
  Edge& next(int l) { return reinterpret_cast<Edge*>(this + 1)[l]; }
  const Edge& next(int l) const { return reinterpret_cast<const Edge*>(this + 1)[l]; }
  static constexpr std::size_t bytes(int top) { return sizeof(Node) + static_cast<std::size_t>(top + 1) * sizeof(Edge); }
};
static_assert(sizeof(Node) == 24);
static_assert(offsetof(Node, key) == 0);
static_assert(offsetof(Node, top) == 8);
static_assert(offsetof(Node, owners) == 12);
static_assert(offsetof(Node, value) == 16);
static_assert(Node::bytes(0) == 32);
static_assert(std::atomic<std::int32_t>::is_always_lock_free);

inline bool marked(std::uintptr_t e) { return (e & 1u) != 0; }
inline Node* unmarked(std::uintptr_t e) { return reinterpret_cast<Node*>(e & ~std::uintptr_t{1}); }
inline std::uintptr_t bits(const Node* n) { return reinterpret_cast<std::uintptr_t>(n); }

// The durable root (both durable policies): head. Written once by create().
struct Root {
  static constexpr std::uint32_t kTypeTag = 0x42A5'0111;
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "baselines::HsSkipList";
  Node* head = nullptr;
  std::uint64_t levels = 0;
  Root(Node* h, std::uint64_t l) : head(h), levels(l) {}
};
static_assert(sizeof(Root) == 16);
static_assert(offsetof(Root, head) == 0);
static_assert(offsetof(Root, levels) == 8);

// Every node reachable from head at any level, each once (a corrupt level
// throws). Reads only; single-threaded.
template <class Visit>
void trace(Node* head, Visit&& visit) {
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack{head};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    if (seen.size() > kMaxListWalk) throw std::runtime_error("HsSkipList: too many nodes in a corrupt image");
    if (n->top < 0 || n->top >= kLevels) throw std::runtime_error("HsSkipList: corrupt node level");
    visit(n);
    for (int l = n->top; l >= 0; --l)
      // Relaxed: recovery is single-threaded.
      if (Node* s = unmarked(n->next(l).load(std::memory_order_relaxed)); s != nullptr) stack.push_back(s);
  }
}

}  // namespace hs

template <class P>
class HsSkipList {
  using Node = hs::Node;
  using Edge = hs::Edge;
  static constexpr int kLevels = hs::kLevels;
  using Path = std::array<Node*, kLevels>;

 public:
  // ----------------------------------------------------------- lifetime
  // Transient: a list in DRAM.
  explicit HsSkipList(int threads)
    requires(!P::kDurable)
      : threads_(threads), ebr_(threads), rng_(static_cast<std::size_t>(threads)) {
    seed();
    head_ = make_head(0);
  }
  // Durable: a new list under root `name` of `pool` (single-threaded).
  static std::unique_ptr<HsSkipList> create(pmem::Pool& pool, std::string_view name, int threads)
    requires(P::kDurable)
  {
    auto t = std::unique_ptr<HsSkipList>(new HsSkipList(pool, threads));
    t->head_ = t->make_head(0);
    // PERSIST: head is durable before the root names it.
    // CRASH: before create_root, no root reaches head: the pool frees it.
    persist::psync();
    pool.create_root<hs::Root>(name, t->head_, kLevels);  // persists the root, then names it
    return t;
  }
  // Durable: the list under root `name` (the pool recovered its heap when
  // it opened; nothing to repair, nothing freed).
  static std::unique_ptr<HsSkipList> attach(pmem::Pool& pool, std::string_view name, int threads)
    requires(P::kDurable)
  {
    auto t = std::unique_ptr<HsSkipList>(new HsSkipList(pool, threads));
    hs::Root* r = pool.root<hs::Root>(name);
    if (r->levels != kLevels) throw std::runtime_error("HsSkipList: root made with another level count");
    t->head_ = r->head;
    // ORDER: relaxed: single-threaded recovery, before the list is shared.
    hs::trace(t->head_, [](Node* n) { n->owners.store(1, std::memory_order_relaxed); });
    return t;
  }
  // EBR frees the retired nodes; a transient list also deletes the nodes
  // still linked at level 0 (a durable list's stay in the pool).
  ~HsSkipList() {
    if constexpr (!P::kDurable) {
      std::vector<Node*> all;
      hs::trace(head_, [&](Node* n) { all.push_back(n); });
      for (Node* n : all) ::operator delete(n);
    }
  }
  HsSkipList(const HsSkipList&) = delete;
  HsSkipList& operator=(const HsSkipList&) = delete;

  // ---------------------------------------------------------------- set
  bool insert(std::int64_t key, int tid) {
    check_tid(tid, threads_, "HsSkipList");
    auto g = ebr_.pin(tid);
    const bool ok = add_node(key, 0, tid).second;
    P::end_op();
    return ok;
  }
  // The book's remove.
  bool remove(std::int64_t key, int tid) {
    check_tid(tid, threads_, "HsSkipList");
    auto g = ebr_.pin(tid);
    Path preds, succs;
    // Someone else marking it first answers false (their remove is
    // linearized before ours), as the book does.
    const bool ok = find(key, preds, succs) && remove_node(succs[0], preds, succs, tid);
    P::end_op();
    return ok;
  }
  // The book's wait-free contains.
  bool contains(std::int64_t key, int tid) {
    check_tid(tid, threads_, "HsSkipList");
    auto g = ebr_.pin(tid);
    Node* n = locate(key);
    const bool found = n != nullptr && n->key == key;
    P::end_op();
    return found;
  }

  // ---------------------------------------------------------------- map
  // The old value, or nullopt if the key was absent (then inserted).
  std::optional<std::int64_t> put(std::int64_t key, std::int64_t value, int tid) {
    check_tid(tid, threads_, "HsSkipList");
    if (value == harris::kTombstone) throw std::invalid_argument("HsSkipList: INT64_MIN is reserved");
    auto g = ebr_.pin(tid);
    Path preds, succs;
    std::optional<std::int64_t> old;
    for (;;) {
      if (find(key, preds, succs)) {
        Node* n = succs[0];
        std::int64_t cur = P::read(n->value);
        if (cur == harris::kTombstone) {
          remove_node(n, preds, succs, tid);  // finish the erase
          continue;
        }
        // CRASH: once this CAS is durable the key maps to value.
        if (P::cas(n->value, cur, value)) {
          old = cur;
          break;
        }
        continue;
      }
      if (add_node(key, value, tid).second) break;
    }
    P::end_op();
    return old;
  }
  std::optional<std::int64_t> get(std::int64_t key, int tid) {
    check_tid(tid, threads_, "HsSkipList");
    auto g = ebr_.pin(tid);
    Node* n = locate(key);
    std::optional<std::int64_t> r;
    if (n != nullptr && n->key == key) {
      const std::int64_t v = P::read(n->value);
      if (v != harris::kTombstone) r = v;
    }
    P::end_op();
    return r;
  }
  // The old value, or nullopt if the key was absent.
  std::optional<std::int64_t> erase(std::int64_t key, int tid) {
    check_tid(tid, threads_, "HsSkipList");
    auto g = ebr_.pin(tid);
    Path preds, succs;
    std::optional<std::int64_t> old;
    while (find(key, preds, succs)) {
      Node* n = succs[0];
      std::int64_t cur = P::read(n->value);
      if (cur == harris::kTombstone) {
        remove_node(n, preds, succs, tid);
        continue;
      }
      // CRASH: once this CAS is durable the key is absent (erase's
      // linearization point); the book's remove follows.
      if (P::cas(n->value, cur, harris::kTombstone)) {
        remove_node(n, preds, succs, tid);
        old = cur;
        break;
      }
    }
    P::end_op();
    return old;
  }

  // ------------------------------------------------------------- views
  // (key, value) of the unmarked level-0 nodes, ascending. Not concurrent
  // with updates.
  std::vector<std::pair<std::int64_t, std::int64_t>> items(bool map) const {
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    std::size_t steps = 0;
    for (Node* n = hs::unmarked(head_->next(0).load(std::memory_order_acquire)); n != nullptr;) {
      if (++steps > kMaxListWalk) throw std::runtime_error("HsSkipList: cycle in a corrupt image");
      const std::uintptr_t nx = n->next(0).load(std::memory_order_acquire);
      const std::int64_t v = n->value.load(std::memory_order_acquire);
      if (!hs::marked(nx) && !(map && v == harris::kTombstone)) out.emplace_back(n->key, v);
      n = hs::unmarked(nx);
    }
    return out;
  }

  // The root type's recover hook (pmem/root_registry.h): marks every node
  // reachable from head at any level. Writes nothing.
  static void recover_root(pmem::Pool&, hs::Root* r, const std::function<void(void*)>& mark_live) {
    if (r->levels != kLevels) throw std::runtime_error("HsSkipList: root made with another level count");
    hs::trace(r->head, [&](Node* n) { mark_live(n); });
  }

 private:
  HsSkipList(pmem::Pool& pool, int threads)
    requires(P::kDurable)
      : threads_(threads), ebr_(threads), mem_(&pool.heap()), rng_(static_cast<std::size_t>(threads)) {
    seed();
  }

  struct alignas(64) Rng {
    std::uint64_t s;
  };
  void seed() {
    for (std::size_t t = 0; t < rng_.size(); ++t) rng_[t].s = 0x9e3779b97f4a7c15ull * (t + 1) | 1;
  }
  // Geometric(1/2) top level in [0, kLevels − 1] (xorshift64).
  int random_level(int tid) {
    std::uint64_t& s = rng_[static_cast<std::size_t>(tid)].s;
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return __builtin_ctzll(s | (std::uint64_t{1} << (kLevels - 1)));
  }

  // A fresh node, written back (P::publish) before any CAS links it.
  Node* make(int tid, std::int64_t key, int top, std::int64_t value, const Path* succs) {
    const std::size_t n = Node::bytes(top);
    void* mem = mem_.alloc(n, tid);
    auto* node = static_cast<Node*>(mem);
    node->key = key;
    node->top = top;
    new (&node->owners) std::atomic<std::int32_t>(2);  // adder and remover
    new (&node->value) std::atomic<std::int64_t>(value);
    for (int l = 0; l <= top; ++l)
      new (&node->next(l)) Edge(succs == nullptr ? 0 : hs::bits((*succs)[static_cast<std::size_t>(l)]));
    P::publish(node, n);  // PERSIST: before the CAS that links it
    return node;
  }
  Node* make_head(int tid) { return make(tid, 0, kLevels - 1, 0, nullptr); }
  void free_now(Node* n, int tid) {
    mem_.free_now(n, tid);
  }
  // Drops one owner; the last one retires the node (header: reclamation).
  void release(Node* n, int tid) {
    // ORDER: acq_rel: the last owner's retire happens after the other's
    // unlinking steps. EBR frees n only after this operation unpins, after
    // its end_op fence.
    if (n->owners.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    mem_.retire(ebr_, n, tid);
  }

  // NVTraverse: ensureReachable(pred) — the level-0 link into it, when find
  // reached it along level 0 — and makePersistent(pred's level-0 link, the
  // marked nodes from `first` up to curr, curr's key/value/next(0)), then
  // the fence. The skipped nodes' level-0 links are marked, so they never
  // change: the walk reads what the traversal read. Pinned: none is freed.
  static void traversal_done(const Edge* into_pred, const Node* pred, Node* first, const Node* curr) {
    if constexpr (P::kMakesPersistent) {
      if (into_pred != nullptr) P::make_persistent(into_pred, sizeof(Edge));
      P::make_persistent(&pred->next(0), sizeof(Edge));
      for (Node* n = first; n != nullptr && n != curr; n = hs::unmarked(n->next(0).load(std::memory_order_acquire)))
        P::make_persistent(n, Node::bytes(0));  // ORDER: acquire: a frozen (marked) link
      if (curr != nullptr) P::make_persistent(curr, Node::bytes(0));
    }
    P::traversal_done();
  }

  // The book's find: preds/succs at every level (succs[l] the first node
  // with key >= key, nullptr at the end), snipping marked nodes on the way.
  bool find(std::int64_t key, Path& preds, Path& succs) {
  retry:
    Node* pred = head_;
    Node* curr = nullptr;
    const Edge* into_pred = nullptr;  // the level-0 link into pred (ensureReachable)
    for (int level = kLevels - 1; level >= 0; --level) {
      curr = hs::unmarked(P::traverse_read(pred->next(level)));
      for (;;) {
        if (curr == nullptr) break;
        std::uintptr_t succ = P::traverse_read(curr->next(level));
        while (hs::marked(succ)) {
          // A snip is a CAS: critical. PERSIST: the victim's mark first
          // (NVTraverse; the CAS's fence orders it).
          P::make_persistent(&curr->next(level), sizeof(Edge));
          std::uintptr_t e = hs::bits(curr);
          if (!P::cas(pred->next(level), e, succ & ~std::uintptr_t{1})) goto retry;
          curr = hs::unmarked(succ);
          if (curr == nullptr) break;
          succ = P::traverse_read(curr->next(level));
        }
        if (curr == nullptr) break;
        if (curr->key >= key) break;
        if (level == 0) into_pred = &pred->next(0);
        pred = curr;
        curr = hs::unmarked(succ);
      }
      preds[static_cast<std::size_t>(level)] = pred;
      succs[static_cast<std::size_t>(level)] = curr;
    }
    traversal_done(into_pred, pred, curr, curr);  // level 0: pred's link is curr (snipped)
    return curr != nullptr && curr->key == key;
  }

  // The book's contains, answering the node it stops at (no snips).
  Node* locate(std::int64_t key) const {
    Node* pred = head_;
    Node* curr = nullptr;
    Node* first = nullptr;            // what pred's link pointed to (level 0: then marked nodes up to curr)
    const Edge* into_pred = nullptr;  // the level-0 link into pred (ensureReachable)
    for (int level = kLevels - 1; level >= 0; --level) {
      const Edge* into_curr = &pred->next(level);
      curr = hs::unmarked(P::traverse_read(*into_curr));
      first = curr;
      for (;;) {
        if (curr == nullptr) break;
        std::uintptr_t succ = P::traverse_read(curr->next(level));
        while (hs::marked(succ)) {
          into_curr = &curr->next(level);
          curr = hs::unmarked(succ);
          if (curr == nullptr) break;
          succ = P::traverse_read(curr->next(level));
        }
        if (curr == nullptr || curr->key >= key) break;
        if (level == 0) into_pred = into_curr;
        pred = curr;
        into_curr = &pred->next(level);
        curr = hs::unmarked(succ);
        first = curr;
      }
    }
    traversal_done(into_pred, pred, first, curr);
    return curr;
  }

  // The book's add (with a value): (node, true) if added, (found, false) if
  // the key was present.
  std::pair<Node*, bool> add_node(std::int64_t key, std::int64_t value, int tid) {
    const int top = random_level(tid);
    Path preds, succs;
    Node* node = nullptr;
    for (;;) {
      if (find(key, preds, succs)) {
        if (node != nullptr) free_now(node, tid);  // never published
        return {succs[0], false};
      }
      if (node == nullptr) {
        node = make(tid, key, top, value, &succs);
      } else {
        // Unpublished: relaxed, then written back before the CAS.
        for (int l = 0; l <= top; ++l)
          node->next(l).store(hs::bits(succs[static_cast<std::size_t>(l)]), std::memory_order_relaxed);
        P::publish(node, Node::bytes(top));
      }
      std::uintptr_t e = hs::bits(succs[0]);
      // CRASH: once this CAS is durable the key is present (the
      // linearization point).
      if (!P::cas(preds[0]->next(0), e, hs::bits(node))) continue;
      for (int level = 1; level <= top; ++level) {
        bool stop = false;
        for (;;) {
          Node* const pred = preds[static_cast<std::size_t>(level)];
          Node* const succ = succs[static_cast<std::size_t>(level)];
          // Errata: the node's next at this level is succ before it is linked.
          std::uintptr_t mine = P::read(node->next(level));
          if (hs::marked(mine)) {
            stop = true;  // being removed: link no further
            break;
          }
          if (mine != hs::bits(succ) && !P::cas(node->next(level), mine, hs::bits(succ))) continue;
          std::uintptr_t ps = hs::bits(succ);
          if (P::cas(pred->next(level), ps, hs::bits(node))) break;
          find(key, preds, succs);
          if (succs[0] != node) {  // removed (and snipped at level 0) meanwhile
            stop = true;
            break;
          }
        }
        if (stop) break;
      }
      // A level linked after the remover's find is snipped by ours.
      if (hs::marked(P::read(node->next(0)))) find(key, preds, succs);
      release(node, tid);
      return {node, true};
    }
  }

  // The book's remove on a found node: mark top-down; true if our level-0
  // mark removed it (then find snips it everywhere).
  bool remove_node(Node* victim, Path& preds, Path& succs, int tid) {
    for (int level = victim->top; level >= 1; --level) {
      std::uintptr_t succ = P::read(victim->next(level));
      while (!hs::marked(succ)) P::cas(victim->next(level), succ, succ | 1u);
    }
    std::uintptr_t succ = P::read(victim->next(0));
    for (;;) {
      if (hs::marked(succ)) return false;  // someone else removed it
      // CRASH: once this mark is durable the key is absent (the
      // linearization point).
      if (P::cas(victim->next(0), succ, succ | 1u)) {
        find(victim->key, preds, succs);
        release(victim, tid);
        return true;
      }
    }
  }

  int threads_;
  sync::Ebr ebr_;
  durable::NodeMemory<P> mem_;
  std::vector<Rng> rng_;
  Node* head_ = nullptr;
};

// The pool's recover hook (the trace depends on neither policy nor faults).
inline const bool kHsSkipListRootRegistered =
    pmem::register_root_type<hs::Root>(&HsSkipList<durable::Izraelevitz<>>::recover_root);

using TransientHsSkipList = HsSkipList<durable::Transient>;
template <unsigned F = kNoFaults>
using IzraelevitzHsSkipList = HsSkipList<durable::Izraelevitz<F>>;
template <unsigned F = kNoFaults>
using NVTraverseHsSkipList = HsSkipList<durable::NVTraverse<F>>;

}  // namespace ferrite::baselines
