// ferrite/baselines/nm_bst.h — the Natarajan–Mittal lock-free external BST
// (a set and a map), written once and templated on a persistence policy
// (durable_policy.h). Three policies make three of Mirror's BST competitors:
//
//   durable::Transient     DRAM, no persistence (bench technique nm-bst,
//                          origin transient);
//   durable::Izraelevitz   every load and CAS written back and fenced
//                          (izraelevitz-bst);
//   durable::NVTraverse    seek is the traversal (no write-back); at its end
//                          ensureReachable(ancestor) and makePersistent(
//                          ancestor, successor … parent, leaf), a fence; the
//                          critical phase writes back every read and CAS
//                          (nvtraverse-bst).
//
// Sources.
//   * A. Natarajan, N. Mittal, "Fast Concurrent Lock-Free Binary Search
//     Trees", PPoPP 2014: seek, search, insert, delete (injection and
//     cleanup modes) and cleanup, with the paper's names. A leaf-oriented
//     tree: keys live in leaves; an internal node routes (key < node.key:
//     left, else right) and has two children. Edges are marked, not nodes:
//     a child field is (address | kFlag | kTag). delete flags the edge to its
//     leaf (injection); cleanup tags the sibling edge (NM's bit-test-and-set)
//     and swings the ancestor's edge to the sibling. Sentinels inf0 < inf1 <
//     inf2 (INT64_MAX − 2 .. INT64_MAX): R(inf2) → S(inf1) is the fixed top;
//     user keys are < inf0.
//   * The transforms: Izraelevitz, Mendes, Scott, DISC 2016, §5; Friedman,
//     Ben-David, Wei, Blelloch, Petrank, "NVTraverse", PLDI 2020 — the NM
//     tree is one of its examples: the traversal is seek, and the nodes it
//     returns are the seek record's (ancestor, successor, parent, leaf).
//     The nodes between successor and parent hang on tagged edges, which
//     never change again; they are written back too (part of the answer:
//     cleanup's CAS removes them).
//   * Mirror's version of the same algorithm (mirror/nm_bst.h; Friedman,
//     Petrank, Ramalhete, PLDI 2021, §6) makes the same adaptations, so the
//     competitors answer as mirror-bst does: reclamation by EBR (the thread
//     whose cleanup CAS succeeds retires the removed path), an insert that
//     fails frees its unpublished nodes, and the map's value CAS with
//     kTombstone (erase's linearization point), then NM's delete of the
//     leaf (delete_leaf), by the eraser or by any put/erase that meets it.
//
// Thread safety: every operation is lock-free and safe concurrently for
// distinct tids in [0, threads). Use one tree either as a set or as a map.
//
// Invariants (NM's): the leaves in order are the keys, strictly ascending;
// an internal node has two children, a leaf none (its child fields stay 0);
// a flagged edge points to a leaf and is never unflagged; a tagged edge is
// never untagged; R, S and the sentinel leaves are never removed. Map: a
// kTombstone value never changes again.
//
// Persistence invariants (both durable policies).
//   * A node is written back (P::publish) before the CAS that links it.
//   * Every CAS and bit-test-and-set is written back, and fenced before the
//     operation returns (Izraelevitz: at once; NVTraverse: the fence before
//     the next CAS or the return).
//   * Everything an answer depends on is durable before the answer:
//     Izraelevitz writes back every location it loads; NVTraverse writes back
//     the edge into the ancestor (ensureReachable) and the nodes ancestor …
//     leaf (makePersistent, one line each: a node is 32 bytes aligned to 32),
//     then each location the critical phase reads. Keys are immutable and
//     durable before their node is linked: loading one needs no write-back.
//   * Removed nodes are retired after the CAS that removes them is written
//     back; EBR frees them only after the remover unpinned, after its last
//     fence: no durable edge ever reaches a reused block.
//
// Recovery. The durable tree is one that some prefix of the CASes produced:
// it may hold flagged leaves (a delete committed by its flag, not finished)
// and tagged edges (a cleanup under way). NM's search still finds a flagged
// leaf, and the delete is linearized when the leaf leaves the tree; a
// pending delete must be decided by the recovered state, so attach() finishes
// every flagged delete with NM's own helping code (delete_leaf: cleanup), as
// mirror-bst's recovery does. Its CASes go through the policy (written back,
// fenced); a crash during it leaves fewer flagged leaves, and running it
// again finishes the rest (idempotent). Before that, the pool's recover
// hook (pmem/root_registry.h) marks every node reachable from R through the
// edges' addresses (flag and tag bits cleared); it writes nothing and reads
// only the pool. A crash during create() leaves the sentinels unreached (no
// root names them): the pool frees them.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string_view>
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

namespace nm {

// A node: 32 bytes in a 32-byte block aligned to 32 (one line, one pwb).
struct Node {
  std::int64_t key;                      // immutable once linked
  std::atomic<std::int64_t> value;       // a map's leaf: its value, or kTombstone
  std::atomic<std::uintptr_t> left;      // child address | kFlag | kTag; 0 in a leaf
  std::atomic<std::uintptr_t> right;
};
static_assert(sizeof(Node) == 32);
static_assert(offsetof(Node, key) == 0);
static_assert(offsetof(Node, value) == 8);
static_assert(offsetof(Node, left) == 16);
static_assert(offsetof(Node, right) == 24);
static_assert(std::atomic<std::uintptr_t>::is_always_lock_free);
using Edge = std::atomic<std::uintptr_t>;

inline constexpr std::uintptr_t kFlag = 1;  // the edge's leaf is being deleted
inline constexpr std::uintptr_t kTag = 2;   // the edge's parent is being removed
inline constexpr std::int64_t kInf0 = INT64_MAX - 2;
inline constexpr std::int64_t kInf1 = INT64_MAX - 1;
inline constexpr std::int64_t kInf2 = INT64_MAX;
inline constexpr std::int64_t kMaxKey = kInf0 - 1;

inline Node* address(std::uintptr_t e) { return reinterpret_cast<Node*>(e & ~(kFlag | kTag)); }
inline std::uintptr_t bits(const Node* n) { return reinterpret_cast<std::uintptr_t>(n); }

// The durable root (both durable policies): R. Written once by create().
struct Root {
  static constexpr std::uint32_t kTypeTag = 0x42A5'0110;
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "baselines::NmBst";
  Node* r = nullptr;
  std::uint64_t reserved = 0;
  explicit Root(Node* root) : r(root) {}
};
static_assert(sizeof(Root) == 16);
static_assert(offsetof(Root, r) == 0);

}  // namespace nm

template <class P>
class NmBst {
  using Node = nm::Node;
  using Edge = nm::Edge;
  static constexpr std::uintptr_t kFlag = nm::kFlag;
  static constexpr std::uintptr_t kTag = nm::kTag;

  // NM's seekRecord, plus the edge into the ancestor (ensureReachable).
  struct SeekRecord {
    Node* ancestor;
    Node* successor;
    Node* parent;
    Node* leaf;
    const Edge* into_ancestor;  // nullptr when the ancestor is R
  };

 public:
  // ----------------------------------------------------------- lifetime
  // Transient: a tree in DRAM.
  explicit NmBst(int threads)
    requires(!P::kDurable)
      : threads_(threads), ebr_(threads), root_(make_sentinels(0)) {}
  // Durable: a new tree under root `name` of `pool` (single-threaded).
  static std::unique_ptr<NmBst> create(pmem::Pool& pool, std::string_view name, int threads)
    requires(P::kDurable)
  {
    auto t = std::unique_ptr<NmBst>(new NmBst(pool, threads));
    t->root_ = t->make_sentinels(0);  // each node written back (P::publish)
    // PERSIST: the sentinels are durable before the root names R.
    // CRASH: before create_root, no root reaches them: the pool frees them.
    persist::psync();
    pool.create_root<nm::Root>(name, t->root_);  // persists the root, then names it
    return t;
  }
  // Durable: the tree under root `name`; finishes the flagged deletes
  // (header: Recovery). The pool recovered its heap when it opened.
  static std::unique_ptr<NmBst> attach(pmem::Pool& pool, std::string_view name, int threads)
    requires(P::kDurable)
  {
    auto t = std::unique_ptr<NmBst>(new NmBst(pool, threads));
    t->root_ = pool.root<nm::Root>(name)->r;
    if constexpr ((P::kFaults & internal::kNoRecoveryHelp) == 0) t->complete_flagged(0);
    return t;
  }
  // EBR frees the retired nodes; a transient tree also deletes its live
  // ones (a durable tree's stay in the pool).
  ~NmBst() {
    if constexpr (!P::kDurable) {
      std::vector<Node*> stack{root_};
      while (!stack.empty()) {
        Node* n = stack.back();
        stack.pop_back();
        // Relaxed: no operation runs concurrently with the destructor.
        if (Node* l = nm::address(n->left.load(std::memory_order_relaxed)); l != nullptr) stack.push_back(l);
        if (Node* r = nm::address(n->right.load(std::memory_order_relaxed)); r != nullptr) stack.push_back(r);
        ::operator delete(n);
      }
    }
  }
  NmBst(const NmBst&) = delete;
  NmBst& operator=(const NmBst&) = delete;

  // ---------------------------------------------------------------- set
  // NM's search.
  bool contains(std::int64_t key, int tid) {
    check(key, tid);
    auto g = ebr_.pin(tid);
    SeekRecord s;
    seek(key, s);
    const bool found = s.leaf->key == key;
    P::end_op();
    return found;
  }

  // NM's insert.
  bool insert(std::int64_t key, int tid) {
    check(key, tid);
    auto g = ebr_.pin(tid);
    SeekRecord s;
    Node* new_leaf = nullptr;
    bool ok = false;
    for (;;) {
      seek(key, s);
      if (s.leaf->key == key) {
        if (new_leaf != nullptr) free_now(new_leaf, tid);  // never published
        break;
      }
      if (try_link(key, 0, s, new_leaf, tid)) {
        ok = true;
        break;
      }
    }
    P::end_op();
    return ok;
  }

  // NM's delete: injection (flag the edge to the leaf), then cleanup until
  // the leaf is out of the tree.
  bool remove(std::int64_t key, int tid) {
    check(key, tid);
    auto g = ebr_.pin(tid);
    SeekRecord s;
    bool injection = true;
    Node* leaf = nullptr;
    bool ok = false;
    for (;;) {
      seek(key, s);
      Edge& child = key < s.parent->key ? s.parent->left : s.parent->right;
      if (injection) {
        leaf = s.leaf;
        if (leaf->key != key) break;
        std::uintptr_t e = nm::bits(leaf);
        // CRASH: once this flag is durable the delete is committed; recovery
        // finishes it (header: Recovery).
        if (P::cas(child, e, nm::bits(leaf) | kFlag)) {
          injection = false;  // cleanup mode
          if (cleanup(key, s, tid)) {
            ok = true;
            break;
          }
        } else if (nm::address(e) == leaf && (e & (kFlag | kTag)) != 0) {
          cleanup(key, s, tid);  // help the delete in our way, then retry
        }
      } else {
        if (s.leaf != leaf || cleanup(key, s, tid)) {  // removed by someone's cleanup, or by ours
          ok = true;
          break;
        }
      }
    }
    P::end_op();
    return ok;
  }

  // ---------------------------------------------------------------- map
  // The old value, or nullopt if the key was absent (then inserted).
  std::optional<std::int64_t> put(std::int64_t key, std::int64_t value, int tid) {
    check(key, tid);
    if (value == harris::kTombstone) throw std::invalid_argument("NmBst: INT64_MIN is reserved");
    auto g = ebr_.pin(tid);
    SeekRecord s;
    Node* new_leaf = nullptr;
    std::optional<std::int64_t> old;
    for (;;) {
      seek(key, s);
      Node* leaf = s.leaf;
      if (leaf->key == key) {
        std::int64_t cur = P::read(leaf->value);
        if (cur == harris::kTombstone) {  // erased, not yet out of the tree: finish it
          delete_leaf(key, leaf, tid);
          continue;
        }
        // CRASH: once this CAS is durable the key maps to value.
        if (P::cas(leaf->value, cur, value)) {
          if (new_leaf != nullptr) free_now(new_leaf, tid);  // never published
          old = cur;
          break;
        }
        continue;
      }
      if (try_link(key, value, s, new_leaf, tid)) break;
    }
    P::end_op();
    return old;
  }
  std::optional<std::int64_t> get(std::int64_t key, int tid) {
    check(key, tid);
    auto g = ebr_.pin(tid);
    SeekRecord s;
    seek(key, s);
    std::optional<std::int64_t> r;
    if (s.leaf->key == key) {
      const std::int64_t v = P::read(s.leaf->value);
      if (v != harris::kTombstone) r = v;
    }
    P::end_op();
    return r;
  }
  // The old value, or nullopt if the key was absent.
  std::optional<std::int64_t> erase(std::int64_t key, int tid) {
    check(key, tid);
    auto g = ebr_.pin(tid);
    SeekRecord s;
    std::optional<std::int64_t> old;
    for (;;) {
      seek(key, s);
      Node* leaf = s.leaf;
      if (leaf->key != key) break;
      std::int64_t cur = P::read(leaf->value);
      if (cur == harris::kTombstone) {
        delete_leaf(key, leaf, tid);
        continue;
      }
      // CRASH: once this CAS is durable the key is absent (erase's
      // linearization point); NM's delete of the leaf follows.
      if (P::cas(leaf->value, cur, harris::kTombstone)) {
        delete_leaf(key, leaf, tid);
        old = cur;
        break;
      }
    }
    P::end_op();
    return old;
  }

  // ------------------------------------------------------------- views
  // (key, value) of the leaves present, ascending (a flagged leaf is
  // present: NM's search finds it). Not concurrent with updates.
  std::vector<std::pair<std::int64_t, std::int64_t>> items(bool map) const {
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    std::vector<Node*> stack{root_};
    std::size_t steps = 0;
    while (!stack.empty()) {
      if (++steps > kMaxListWalk) throw std::runtime_error("NmBst: cycle in a corrupt image");
      Node* n = stack.back();
      stack.pop_back();
      const std::uintptr_t l = n->left.load(std::memory_order_acquire);
      if (l == 0) {
        const std::int64_t v = n->value.load(std::memory_order_acquire);
        if (n->key <= nm::kMaxKey && !(map && v == harris::kTombstone)) out.emplace_back(n->key, v);
        continue;
      }
      stack.push_back(nm::address(n->right.load(std::memory_order_acquire)));
      stack.push_back(nm::address(l));
    }
    return out;
  }

  // The root type's recover hook (pmem/root_registry.h): marks every node
  // reachable from R. Writes nothing.
  static void recover_root(pmem::Pool&, nm::Root* r, const std::function<void(void*)>& mark_live) {
    std::vector<Node*> stack{r->r};
    std::size_t steps = 0;
    while (!stack.empty()) {
      if (++steps > kMaxListWalk) throw std::runtime_error("NmBst: cycle in a corrupt image");
      Node* n = stack.back();
      stack.pop_back();
      mark_live(n);
      // Relaxed: recovery is single-threaded.
      if (Node* c = nm::address(n->left.load(std::memory_order_relaxed)); c != nullptr) stack.push_back(c);
      if (Node* c = nm::address(n->right.load(std::memory_order_relaxed)); c != nullptr) stack.push_back(c);
    }
  }

 private:
  NmBst(pmem::Pool& pool, int threads)
    requires(P::kDurable)
      : threads_(threads), ebr_(threads), mem_(&pool.heap()) {}

  void check(std::int64_t key, int tid) const {
    check_tid(tid, threads_, "NmBst");
    if (key > nm::kMaxKey) throw std::invalid_argument("NmBst: the three largest keys are sentinels");
  }

  Node* make(int tid, std::int64_t key, std::int64_t value, const Node* l, const Node* r) {
    void* mem = mem_.alloc(sizeof(Node), tid);
    auto* n = static_cast<Node*>(mem);
    n->key = key;
    new (&n->value) std::atomic<std::int64_t>(value);
    new (&n->left) Edge(nm::bits(l));
    new (&n->right) Edge(nm::bits(r));
    P::publish(n, sizeof(Node));  // PERSIST: before any CAS links it
    return n;
  }
  void free_now(Node* n, int tid) {
    mem_.free_now(n, tid);
  }
  void retire(Node* n, int tid) {
    // ORDER: called after the removing CAS (and its write-back); EBR frees
    // n only after this operation unpins, after its end_op fence.
    mem_.retire(ebr_, n, tid);
  }

  // NM's initial tree: R(inf2) over S(inf1) and leaf inf2; S over leaves
  // inf0 and inf1. Leaves first: each node is written back before the node
  // that points to it is made.
  Node* make_sentinels(int tid) {
    Node* l0 = make(tid, nm::kInf0, 0, nullptr, nullptr);
    Node* l1 = make(tid, nm::kInf1, 0, nullptr, nullptr);
    Node* l2 = make(tid, nm::kInf2, 0, nullptr, nullptr);
    Node* s = make(tid, nm::kInf1, 0, l0, l1);
    return make(tid, nm::kInf2, 0, s, l2);
  }

  // A leaf's left stays 0, an internal node's is never 0: structural, not
  // part of an answer, so no write-back. ORDER: acquire (node contents).
  static bool is_leaf(const Node* n) { return n->left.load(std::memory_order_acquire) == 0; }

  // NM's seek (the traversal): the access path to `key`'s leaf; successor
  // is the node after the last untagged edge on it, ancestor that edge's
  // parent. Then NVTraverse's ensureReachable + makePersistent.
  void seek(std::int64_t key, SeekRecord& s) const {
    Node* const sn = nm::address(P::traverse_read(root_->left));
    s.ancestor = root_;
    s.into_ancestor = nullptr;
    s.successor = sn;
    s.parent = sn;
    const Edge* into_parent = &root_->left;
    const Edge* into_leaf = &sn->left;
    std::uintptr_t parent_field = P::traverse_read(sn->left);
    s.leaf = nm::address(parent_field);
    const Edge* current_edge = &s.leaf->left;
    std::uintptr_t current_field = P::traverse_read(s.leaf->left);
    Node* current = nm::address(current_field);
    while (current != nullptr) {
      if ((parent_field & kTag) == 0) {
        s.ancestor = s.parent;
        s.into_ancestor = into_parent;
        s.successor = s.leaf;
      }
      s.parent = s.leaf;
      into_parent = into_leaf;
      s.leaf = current;
      into_leaf = current_edge;
      parent_field = current_field;
      current_edge = key < current->key ? &current->left : &current->right;
      current_field = P::traverse_read(*current_edge);
      current = nm::address(current_field);
    }
    traversal_done(key, s);
  }

  // NVTraverse: ensureReachable(ancestor): the edge the traversal took into
  // it; makePersistent(ancestor, successor … parent, leaf). The edges from
  // the successor down to the parent are tagged, so they never change: the
  // walk reads what seek read. Pinned: nothing is freed meanwhile.
  static void traversal_done(std::int64_t key, const SeekRecord& s) {
    if constexpr (P::kMakesPersistent) {
      if (s.into_ancestor != nullptr) P::make_persistent(s.into_ancestor, sizeof(Edge));
      P::make_persistent(s.ancestor, sizeof(Node));
      for (Node* n = s.successor; n != nullptr && n != s.parent;
           n = nm::address((key < n->key ? n->left : n->right).load(std::memory_order_acquire)))  // ORDER: acquire: frozen edge
        P::make_persistent(n, sizeof(Node));
      P::make_persistent(s.parent, sizeof(Node));
      P::make_persistent(s.leaf, sizeof(Node));
    }
    P::traversal_done();
  }

  // NM's insert, one attempt after a seek that did not find `key`: replace
  // the edge to the leaf by a new internal node over the leaf and a new one.
  bool try_link(std::int64_t key, std::int64_t value, const SeekRecord& s, Node*& new_leaf, int tid) {
    Node* const leaf = s.leaf;
    Edge& child = key < s.parent->key ? s.parent->left : s.parent->right;
    if (new_leaf == nullptr) new_leaf = make(tid, key, value, nullptr, nullptr);
    const std::int64_t lk = leaf->key;
    Node* const internal = key < lk ? make(tid, lk, 0, new_leaf, leaf) : make(tid, key, 0, leaf, new_leaf);
    std::uintptr_t e = nm::bits(leaf);
    // CRASH: once this CAS is durable the key is present.
    if (P::cas(child, e, nm::bits(internal))) return true;
    free_now(internal, tid);  // never published
    // NM: the edge still leads to the leaf but is flagged or tagged — help.
    if (nm::address(e) == leaf && (e & (kFlag | kTag)) != 0) cleanup(key, s, tid);
    return false;
  }

  // NM's cleanup: tag the edge that stays, swing the ancestor's edge from
  // the successor to it (keeping its flag). True if this CAS removed the
  // flagged leaf.
  bool cleanup(std::int64_t key, const SeekRecord& s, int tid) {
    Node* const ancestor = s.ancestor;
    Node* const successor = s.successor;
    Node* const parent = s.parent;
    Edge& successor_edge = key < ancestor->key ? ancestor->left : ancestor->right;
    Edge* child_edge;
    Edge* sibling_edge;
    if (key < parent->key) {
      child_edge = &parent->left;
      sibling_edge = &parent->right;
    } else {
      child_edge = &parent->right;
      sibling_edge = &parent->left;
    }
    // The leaf to remove is the sibling when our child's edge is not flagged.
    if ((P::read(*child_edge) & kFlag) == 0) sibling_edge = child_edge;
    P::fetch_or(*sibling_edge, kTag);  // NM's BTS(siblingAddr, TAG)
    const std::uintptr_t sib = P::read(*sibling_edge);
    std::uintptr_t e = nm::bits(successor);
    // CRASH: once this CAS is durable the flagged leaf (and the path from
    // the successor to the parent) is out of the tree.
    if (P::cas(successor_edge, e, sib & ~kTag)) {
      retire_removed(successor, nm::address(sib), tid);
      return true;
    }
    return false;
  }

  // The nodes our cleanup CAS cut off: the successor's subtree but `keep`'s.
  // From the successor down, each internal node has one child on a flagged
  // edge (a leaf, removed) and one on a tagged edge (the next internal node,
  // or `keep` at the parent); those edges are frozen.
  void retire_removed(Node* successor, Node* keep, int tid) {
    Node* n = successor;
    while (n != nullptr) {
      Node* const l = nm::address(n->left.load(std::memory_order_acquire));  // ORDER: acquire: frozen
      Node* const r = nm::address(n->right.load(std::memory_order_acquire));
      retire(n, tid);
      Node* next = nullptr;
      for (Node* c : {l, r}) {
        if (c == keep) continue;
        if (is_leaf(c)) retire(c, tid);
        else next = c;
      }
      n = next;
    }
  }

  // Deletes `leaf` (reached by `key`) if it is still in the tree: NM's
  // injection by whoever gets there first, then cleanup, helping whatever
  // is in the way. Used by erase, by put/erase that meet a tombstone, and by
  // recovery.
  void delete_leaf(std::int64_t key, Node* leaf, int tid) {
    SeekRecord s;
    for (;;) {
      seek(key, s);
      if (s.leaf != leaf) return;
      Edge& child = key < s.parent->key ? s.parent->left : s.parent->right;
      std::uintptr_t e = P::read(child);
      if (nm::address(e) != leaf) continue;
      if ((e & (kFlag | kTag)) == 0) {
        P::cas(child, e, e | kFlag);
        continue;
      }
      cleanup(key, s, tid);
    }
  }

  // Recovery: finishes every delete that flagged its leaf and did not
  // remove it (header: Recovery). Single-threaded, in attach().
  void complete_flagged(int tid) {
    auto g = ebr_.pin(tid);
    std::vector<std::pair<std::int64_t, Node*>> flagged;
    std::vector<Node*> stack{root_};
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (const Edge* f : {&n->left, &n->right}) {
        const std::uintptr_t e = f->load(std::memory_order_relaxed);  // relaxed: single-threaded
        Node* c = nm::address(e);
        if (c == nullptr) continue;
        if (is_leaf(c)) {
          if ((e & kFlag) != 0) flagged.emplace_back(c->key, c);
        } else {
          stack.push_back(c);
        }
      }
    }
    for (const auto& [k, leaf] : flagged) delete_leaf(k, leaf, tid);
    P::end_op();  // PERSIST: the completions are durable before the tree is used
  }

  int threads_;
  sync::Ebr ebr_;
  durable::NodeMemory<P> mem_;
  Node* root_ = nullptr;  // R
};

// The pool's recover hook (the trace depends on neither policy nor faults).
inline const bool kNmBstRootRegistered =
    pmem::register_root_type<nm::Root>(&NmBst<durable::Izraelevitz<>>::recover_root);

using TransientNmBst = NmBst<durable::Transient>;
template <unsigned F = kNoFaults>
using IzraelevitzNmBst = NmBst<durable::Izraelevitz<F>>;
template <unsigned F = kNoFaults>
using NVTraverseNmBst = NmBst<durable::NVTraverse<F>>;

}  // namespace ferrite::baselines
