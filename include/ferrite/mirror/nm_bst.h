// ferrite/mirror/nm_bst.h — the Natarajan–Mittal lock-free external binary
// search tree made persistent by Mirror: the original algorithm with
// std::atomic replaced by patomic, keys by pconst and new by Heap::make
// (Friedman, Petrank, Ramalhete, "Mirror: Making Lock-Free Data Structures
// Persistent", PLDI 2021, §3.2, §6: "a lock-free BST by Aravind et al.").
//
// The algorithm is A. Natarajan, N. Mittal, "Fast Concurrent Lock-Free Binary
// Search Trees", PPoPP 2014: its seek, search, insert, delete (injection and
// cleanup modes) and cleanup, with the same names. A leaf-oriented tree:
// keys live in leaves; an internal node routes (key < node.key: left, else
// right) and has exactly two children. Edges, not nodes, are marked: a
// child field is (address | flag | tag). A delete flags the edge to its
// leaf (injection), then cleanup tags the sibling edge (NM's bit-test-and-set,
// here patomic::fetch_or) and swings the ancestor's edge to the sibling,
// removing the parent and the leaf (and any chain of tagged nodes between
// the ancestor's successor and the parent) in one CAS. Three sentinel keys
// inf0 < inf1 < inf2 (INT64_MAX − 2 .. INT64_MAX) make R(inf2) → S(inf1)
// the fixed top of the tree; user keys are < inf0.
//
// Nothing in it was changed for persistence. Adapted, not for persistence:
//   * reclamation: the thread whose cleanup CAS succeeds retires the removed
//     nodes to EBR (sync/ebr.h); every operation runs pinned. The removed
//     part is the successor's subtree minus the kept sibling: a path of
//     internal nodes each with one flagged edge to a leaf and one tagged edge
//     on (every edge there is frozen: a CAS expects an unflagged, untagged
//     edge), so retire_removed walks it without racing writers.
//   * an insert whose CAS fails frees its unpublished internal node and makes
//     a new one on the next attempt (its key depends on the leaf found).
//   * the map (put/get/erase): NM is a set; the map is the value-CAS extension
//     of mirror/harris_list.h. A leaf carries a patomic value; put on a
//     present key CASes it; erase CASes it to kTombstone (its linearization
//     point), then deletes the leaf as NM's delete does (delete_leaf: flag,
//     cleanup, by the eraser or by any put/erase that meets the tombstone).
//     A tombstoned leaf is absent.
//
// Thread safety: every operation is lock-free and safe concurrently for
// distinct tids in [0, threads).
//
// Invariants (NM's): the leaves in order are the keys, strictly ascending;
// an internal node has two children, a leaf none (its child fields stay 0:
// only a parent's edges are CASed, and seek's parent is always internal);
// a flagged edge points to a leaf and is never unflagged; a tagged edge is
// never untagged and its parent is about to be removed; R, S and the three
// sentinel leaves are never removed. Mirror's per field: patomic.h I1–I4.
//
// Persistence invariants: every node is durable on rep_p before a CAS can
// link it (Heap::make); every edge and value is durable before it is
// visible (patomic P1). So rep_p is always a tree some prefix of the run's
// CASes produced, i.e. a state NM reaches with the crashed threads stalled.
//
// Recovery (Bst::attach, mirror/bst.h): Mirror's §4.3.3 — trace(root) visits
// every node reachable on rep_p, Heap::recover copies each to rep_v and
// rebuilds the allocator. Then complete_flagged: NM commits a delete at its
// flag but linearizes it when the leaf leaves the tree (a search still
// finds a flagged leaf), so a crash between the two leaves a delete that the
// next update on that key would finish — after the restart. Ferrite's
// durable linearizability asks a pending operation to be decided by the
// recovered state, so recovery finishes every flagged delete with NM's own
// helping code (delete_leaf: cleanup). Its CASes are Mirror's; a crash during
// it leaves a tree with fewer flagged leaves, and running it again finishes
// the rest (idempotent). docs/mirror.md, "The BST".
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "ferrite/mirror/harris_list.h"  // kTombstone
#include "ferrite/mirror/heap.h"
#include "ferrite/mirror/patomic.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::mirror {

template <class C = Default>
struct NmNode {
  pconst<std::int64_t, C> key;
  patomic<std::int64_t, C> value;   // a map's leaf: its value (kTombstone: erased)
  patomic<std::uintptr_t, C> left;  // child address | kFlag | kTag; 0 in a leaf
  patomic<std::uintptr_t, C> right;
  NmNode(std::int64_t k, std::int64_t v, std::uintptr_t l, std::uintptr_t r) : key(k), value(v), left(l), right(r) {}
};
// One line per node: one pwb in Heap::make, no line shared between nodes.
static_assert(sizeof(NmNode<>) == 64 && alignof(NmNode<>) == 16);

template <class C = Default>
class NmBst {
 public:
  using Node = NmNode<C>;
  using Edge = patomic<std::uintptr_t, C>;
  static constexpr std::uintptr_t kFlag = 1;  // the edge's leaf is being deleted
  static constexpr std::uintptr_t kTag = 2;   // the edge's parent is being removed
  static constexpr std::int64_t kInf0 = INT64_MAX - 2;
  static constexpr std::int64_t kInf1 = INT64_MAX - 1;
  static constexpr std::int64_t kInf2 = INT64_MAX;
  static constexpr std::int64_t kMaxKey = kInf0 - 1;

  // NM's seekRecord.
  struct SeekRecord {
    Node* ancestor;
    Node* successor;
    Node* parent;
    Node* leaf;
  };

  NmBst(Heap<C>& heap, sync::Ebr& ebr, Node* root) : heap_(heap), ebr_(ebr), root_(root) {}

  // NM's initial tree: R(inf2) with left S(inf1) and right leaf inf2; S with
  // leaves inf0 and inf1. Leaves first: each node is durable before the node
  // that points to it is made. Returns R (rep_v), the tree's one root.
  static Node* make_sentinels(Heap<C>& heap, int tid) {
    Node* l0 = heap.template make<Node>(tid, kInf0, 0, 0, 0);
    Node* l1 = heap.template make<Node>(tid, kInf1, 0, 0, 0);
    Node* l2 = heap.template make<Node>(tid, kInf2, 0, 0, 0);
    Node* s = heap.template make<Node>(tid, kInf1, 0, bits(l0), bits(l1));
    return heap.template make<Node>(tid, kInf2, 0, bits(s), bits(l2));
  }

  // ------------------------------------------------------------------ set
  // NM's search.
  bool contains(std::int64_t key, int tid) {
    auto g = ebr_.pin(tid);
    SeekRecord s;
    seek(key, s);
    return s.leaf->key.get() == key;
  }

  // NM's insert.
  bool insert(std::int64_t key, int tid) {
    auto g = ebr_.pin(tid);
    SeekRecord s;
    Node* new_leaf = nullptr;
    for (;;) {
      seek(key, s);
      if (s.leaf->key.get() == key) {
        if (new_leaf != nullptr) heap_.free(new_leaf, sizeof(Node), tid);  // never published
        return false;
      }
      if (try_link(key, 0, s, new_leaf, tid)) return true;
    }
  }

  // NM's delete: injection (flag the edge to the leaf), then cleanup until
  // the leaf is out of the tree.
  bool remove(std::int64_t key, int tid) {
    auto g = ebr_.pin(tid);
    SeekRecord s;
    bool injection = true;
    Node* leaf = nullptr;
    for (;;) {
      seek(key, s);
      Edge& child = key < s.parent->key.get() ? s.parent->left : s.parent->right;
      if (injection) {
        leaf = s.leaf;
        if (leaf->key.get() != key) return false;
        std::uintptr_t e = bits(leaf);
        if (child.compare_exchange_strong(e, bits(leaf) | kFlag)) {
          injection = false;  // cleanup mode: the delete is committed
          if (cleanup(key, s, tid)) return true;
        } else if (address(e) == leaf && (e & (kFlag | kTag)) != 0) {
          cleanup(key, s, tid);  // help the delete in our way, then retry
        }
      } else {
        if (s.leaf != leaf) return true;  // someone else's cleanup removed it
        if (cleanup(key, s, tid)) return true;
      }
    }
  }

  // ------------------------------------------------------------------ map
  // The old value, or nullopt if the key was absent (then inserted).
  std::optional<std::int64_t> put(std::int64_t key, std::int64_t value, int tid) {
    auto g = ebr_.pin(tid);
    SeekRecord s;
    Node* new_leaf = nullptr;
    for (;;) {
      seek(key, s);
      Node* leaf = s.leaf;
      if (leaf->key.get() == key) {
        std::int64_t cur = leaf->value.load();
        if (cur == kTombstone) {  // erased, not yet out of the tree: finish it
          delete_leaf(key, leaf, tid);
          continue;
        }
        if (leaf->value.compare_exchange_strong(cur, value)) {
          if (new_leaf != nullptr) heap_.free(new_leaf, sizeof(Node), tid);  // never published
          return cur;
        }
        continue;
      }
      if (try_link(key, value, s, new_leaf, tid)) return std::nullopt;
    }
  }
  std::optional<std::int64_t> get(std::int64_t key, int tid) {
    auto g = ebr_.pin(tid);
    SeekRecord s;
    seek(key, s);
    if (s.leaf->key.get() != key) return std::nullopt;
    const std::int64_t v = s.leaf->value.load();
    if (v == kTombstone) return std::nullopt;
    return v;
  }
  std::optional<std::int64_t> erase(std::int64_t key, int tid) {
    auto g = ebr_.pin(tid);
    SeekRecord s;
    for (;;) {
      seek(key, s);
      Node* leaf = s.leaf;
      if (leaf->key.get() != key) return std::nullopt;
      std::int64_t cur = leaf->value.load();
      if (cur == kTombstone) {
        delete_leaf(key, leaf, tid);
        continue;
      }
      if (leaf->value.compare_exchange_strong(cur, kTombstone)) {
        delete_leaf(key, leaf, tid);
        return cur;
      }
    }
  }

  // ------------------------------------------------------------- recovery
  // Finishes every delete that flagged its leaf and did not remove it
  // (header: Recovery). Single-threaded, after Heap::recover.
  void complete_flagged(int tid) {
    auto g = ebr_.pin(tid);
    std::vector<std::pair<std::int64_t, Node*>> flagged;
    std::vector<Node*> stack{root_};
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (const Edge* f : {&n->left, &n->right}) {
        const std::uintptr_t e = f->load();
        Node* c = address(e);
        if (c == nullptr) continue;
        if (is_leaf(c)) {
          if ((e & kFlag) != 0) flagged.emplace_back(c->key.get(), c);
        } else {
          stack.push_back(c);
        }
      }
    }
    for (const auto& [k, leaf] : flagged) delete_leaf(k, leaf, tid);
  }

  // §4.3.3: visits every node reachable from `root` (rep_v), following the
  // persistent copies of the edges. visit(p, bytes) is false for a node seen
  // already.
  template <class Visit>
  static void trace(Node* root, Visit& visit) {
    std::vector<Node*> stack{root};
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      if (!visit(n, sizeof(Node))) continue;
      Node* r = address(n->right.persistent()->load());
      Node* l = address(n->left.persistent()->load());
      if (r != nullptr) stack.push_back(r);
      if (l != nullptr) stack.push_back(l);
    }
  }

  // --------------------------------------------------------------- views
  // (key, value) of the leaves present, ascending, from rep_v (a flagged
  // leaf is present: NM's search finds it). Not concurrent with updates.
  void collect(bool map, std::vector<std::pair<std::int64_t, std::int64_t>>& out) const {
    std::vector<Node*> stack{root_};
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      if (is_leaf(n)) {
        const std::int64_t k = n->key.get();
        const std::int64_t v = n->value.load();
        if (k <= kMaxKey && !(map && v == kTombstone)) out.emplace_back(k, v);
        continue;
      }
      stack.push_back(address(n->right.load()));
      stack.push_back(address(n->left.load()));
    }
  }
  // Both replicas of every reachable field equal (quiescent).
  bool replicas_equal() const {
    auto same = [](const auto& f) {
      const auto r = f.replicas();
      return r.p == r.v;
    };
    std::vector<Node*> stack{root_};
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      if (!same(n->value) || !same(n->left) || !same(n->right) || n->key.get() != n->key.persistent()->get())
        return false;
      if (!is_leaf(n)) {
        stack.push_back(address(n->right.load()));
        stack.push_back(address(n->left.load()));
      }
    }
    return true;
  }

  static Node* address(std::uintptr_t e) { return reinterpret_cast<Node*>(e & ~(kFlag | kTag)); }

 private:
  static std::uintptr_t bits(const Node* n) { return reinterpret_cast<std::uintptr_t>(n); }
  static bool is_leaf(const Node* n) { return n->left.load() == 0; }

  // NM's seek: the access path to `key`'s leaf; successor is the node after
  // the last untagged edge on it, ancestor that edge's parent.
  void seek(std::int64_t key, SeekRecord& s) const {
    Node* const sn = address(root_->left.load());
    s.ancestor = root_;
    s.successor = sn;
    s.parent = sn;
    std::uintptr_t parent_field = sn->left.load();
    s.leaf = address(parent_field);
    std::uintptr_t current_field = s.leaf->left.load();
    Node* current = address(current_field);
    while (current != nullptr) {
      if ((parent_field & kTag) == 0) {
        s.ancestor = s.parent;
        s.successor = s.leaf;
      }
      s.parent = s.leaf;
      s.leaf = current;
      parent_field = current_field;
      current_field = key < current->key.get() ? current->left.load() : current->right.load();
      current = address(current_field);
    }
  }

  // NM's insert, one attempt after a seek that did not find `key`: replace
  // the edge to the leaf by a new internal node over the leaf and a new one.
  bool try_link(std::int64_t key, std::int64_t value, const SeekRecord& s, Node*& new_leaf, int tid) {
    Node* const leaf = s.leaf;
    Edge& child = key < s.parent->key.get() ? s.parent->left : s.parent->right;
    if (new_leaf == nullptr) new_leaf = heap_.template make<Node>(tid, key, value, 0, 0);
    const std::int64_t lk = leaf->key.get();
    Node* const internal = key < lk ? heap_.template make<Node>(tid, lk, 0, bits(new_leaf), bits(leaf))
                                    : heap_.template make<Node>(tid, key, 0, bits(leaf), bits(new_leaf));
    std::uintptr_t e = bits(leaf);
    if (child.compare_exchange_strong(e, bits(internal))) return true;
    heap_.free(internal, sizeof(Node), tid);  // never published
    // NM: the edge still leads to the leaf but is flagged or tagged — help.
    if (address(e) == leaf && (e & (kFlag | kTag)) != 0) cleanup(key, s, tid);
    return false;
  }

  // NM's cleanup: tag the edge that stays, swing the ancestor's edge from
  // the successor to it (keeping its flag). True if this CAS removed the
  // flagged leaf.
  bool cleanup(std::int64_t key, const SeekRecord& s, int tid) {
    Node* const ancestor = s.ancestor;
    Node* const successor = s.successor;
    Node* const parent = s.parent;
    Edge& successor_edge = key < ancestor->key.get() ? ancestor->left : ancestor->right;
    Edge* child_edge;
    Edge* sibling_edge;
    if (key < parent->key.get()) {
      child_edge = &parent->left;
      sibling_edge = &parent->right;
    } else {
      child_edge = &parent->right;
      sibling_edge = &parent->left;
    }
    // The leaf to remove is the sibling when our child's edge is not flagged.
    if ((child_edge->load() & kFlag) == 0) sibling_edge = child_edge;
    sibling_edge->fetch_or(kTag);  // NM's BTS(siblingAddr, TAG)
    const std::uintptr_t sib = sibling_edge->load();
    std::uintptr_t e = bits(successor);
    if (successor_edge.compare_exchange_strong(e, sib & ~kTag)) {
      retire_removed(successor, address(sib), tid);
      return true;
    }
    return false;
  }

  // The nodes our cleanup CAS cut off: the successor's subtree but `keep`'s.
  // From the successor down, each internal node has one child on a flagged
  // edge (a leaf, removed) and one on a tagged edge (the next internal node,
  // or `keep` at the parent). All those edges are frozen (header).
  void retire_removed(Node* successor, Node* keep, int tid) {
    Node* n = successor;
    while (n != nullptr) {
      Node* const l = address(n->left.load());
      Node* const r = address(n->right.load());
      heap_.retire(ebr_, tid, n);
      Node* next = nullptr;
      for (Node* c : {l, r}) {
        if (c == keep) continue;
        if (is_leaf(c)) heap_.retire(ebr_, tid, c);
        else next = c;
      }
      n = next;
    }
  }

  // Deletes `leaf` (reached by `key`) if it is still in the tree: NM's
  // injection by whoever gets there first, then cleanup, helping whatever
  // is in the way. Used by the map's erase (and by puts that meet its
  // tombstone) and by recovery.
  void delete_leaf(std::int64_t key, Node* leaf, int tid) {
    SeekRecord s;
    for (;;) {
      seek(key, s);
      if (s.leaf != leaf) return;
      Edge& child = key < s.parent->key.get() ? s.parent->left : s.parent->right;
      std::uintptr_t e = child.load();
      if (address(e) != leaf) continue;
      if ((e & (kFlag | kTag)) == 0) {
        child.compare_exchange_strong(e, e | kFlag);
        continue;
      }
      cleanup(key, s, tid);
    }
  }

  Heap<C>& heap_;
  sync::Ebr& ebr_;
  Node* root_;  // R, rep_v
};

}  // namespace ferrite::mirror
