// ferrite/mirror/harris_list.h — Harris's lock-free linked list made
// persistent by Mirror: the original algorithm, with std::atomic replaced by
// patomic and new by Heap::make (PLDI 2021 §3.2, Figure 1).
//
// The algorithm is T. L. Harris, "A Pragmatic Implementation of
// Non-Blocking Linked-Lists", DISC 2001 (its search, insert and delete;
// find = search): a sorted list; a node is deleted by
// marking the low bit of its next pointer (logical deletion), then unlinked
// by a CAS on its predecessor (physical deletion), by the deleter or by any
// later search that meets it. Nothing in it was changed for persistence.
// Two things are adapted, neither for persistence:
//   * the list hangs off a link (`Link& head`, a patomic<Node*>) rather
//     than a head sentinel node, so a hash table's bucket is one 16-byte
//     field; "left" is the link whose value is the right node (the head or
//     a node's next). The end of the list is nullptr (Harris's tail node).
//   * reclamation: the thread whose CAS unlinks nodes retires them to EBR
//     (sync/ebr.h); every operation runs pinned.
// Map operations (put/get/erase, used by mirror/hash_map.h) extend the set
// algorithm, since Harris's list has no update: a node's value is a
// patomic; a present key is updated by a CAS on its value; erase first CASes
// the value to kTombstone (its linearization point), then deletes the node
// as Harris does. A node whose value is kTombstone is absent; an insert or
// put that meets one finishes its deletion (marks it) and searches again.
// So kTombstone (INT64_MIN) is a reserved value: the maps' put refuses it
// (check_value: std::invalid_argument, nothing changed). docs/mirror.md,
// "The map".
//
// Thread safety: every operation is lock-free and safe concurrently for
// distinct tids in [0, threads).
//
// Persistence: none written here. Every shared field is a patomic (so every
// CAS is Mirror's Fig. 4: durable before visible), keys are pconst, and nodes come
// from Heap::make (durable before they are linked). A crash leaves on rep_p
// a Harris list whose every link was made by a complete CAS on rep_p: some
// nodes may be marked (logically deleted) but not unlinked, which the
// algorithm handles as it does at run time (searches unlink them).
// Recovery: trace() visits the anchor's lists from their persistent copies.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ferrite/mirror/heap.h"
#include "ferrite/mirror/patomic.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::mirror {

// A map value that means "erased" (an erase's linearization point writes it).
// Reserved: no map stores it as a value (check_value).
inline constexpr std::int64_t kTombstone = INT64_MIN;

// The maps' guard on put (mirror::HashMap, Bst, SkipList): a value of
// kTombstone would read as "erased" — the key would silently vanish — so
// put refuses it, before it changes anything, with std::invalid_argument.
// Every other int64 is a value. (Until values are byte strings.)
inline std::int64_t check_value(std::int64_t value, const char* structure) {
  if (value == kTombstone)
    throw std::invalid_argument(std::string(structure) + "::put: the value " + std::to_string(value) +
                                " (INT64_MIN) is reserved: it is kTombstone, the mark of an erased key, and "
                                "storing it would erase the key; every other int64 is a value");
  return value;
}

template <class C = Default>
struct HarrisNode {
  pconst<std::int64_t, C> key;
  patomic<std::int64_t, C> value;
  patomic<HarrisNode*, C> next;
  HarrisNode(std::int64_t k, std::int64_t v, HarrisNode* n) : key(k), value(v), next(n) {}
};
static_assert(sizeof(HarrisNode<>) <= 64);

// A key/value policy of HarrisList: what a node holds and how keys compare,
// make nodes, and what happens to a node or a value the list lets go of.
// The list's algorithm is the same for every policy. This one is the int64
// list of the essay above; mirror/bytes_map.h's BytesKeys holds byte strings
// as payload offsets. A policy P provides
//   Node, Key (the search argument), kErased (the value of an erased key),
//   less(n, key), equal(n, key)          the order within a list;
//   make(heap, tid, key, value, next)    a new durable node (Heap::make);
//   discard(heap, tid, n)                frees a node never published;
//   retire(heap, ebr, tid, n)            a node unlinked by this thread;
//   replaced(ebr, tid, old)              a value this thread's CAS replaced
//                                        (put or erase), to reclaim;
//   before_value_cas(tid)                just before a put's value CAS;
//   same_replicas(n)                     the node's pconst fields agree on
//                                        both replicas (tests).
template <class C = Default>
struct IntKeys {
  using Node = HarrisNode<C>;
  using Key = std::int64_t;
  static constexpr std::int64_t kErased = kTombstone;
  IntKeys() = default;
  IntKeys(pmem::Pool&, Heap<C>&) {}
  static bool less(const Node* n, Key k) { return n->key.get() < k; }
  static bool equal(const Node* n, Key k) { return n->key.get() == k; }
  static Node* make(Heap<C>& heap, int tid, Key k, std::int64_t v, Node* next) {
    return heap.template make<Node>(tid, k, v, next);
  }
  static void discard(Heap<C>& heap, int tid, Node* n) { heap.free(n, sizeof(Node), tid); }
  static void retire(Heap<C>& heap, sync::Ebr& ebr, int tid, Node* n) { heap.retire(ebr, tid, n); }
  static void replaced(sync::Ebr&, int, std::int64_t) {}
  static void before_value_cas(int) {}
  static bool same_replicas(const Node* n) { return n->key.get() == n->key.persistent()->get(); }
};

template <class C = Default, class P = IntKeys<C>>
class HarrisList {
 public:
  using Node = typename P::Node;
  using Link = patomic<Node*, C>;
  using Key = typename P::Key;
  static constexpr std::int64_t kErased = P::kErased;

  HarrisList(Heap<C>& heap, sync::Ebr& ebr, P& policy) : heap_(heap), ebr_(ebr), pol_(policy) {}

  // ------------------------------------------------------------------ set
  bool insert(Link& head, const Key& key, int tid) { return insert_if_absent(head, key, 0, tid); }

  // Harris's delete.
  bool remove(Link& head, const Key& key, int tid) {
    auto g = ebr_.pin(tid);
    Link* left;
    Node* right;
    Node* right_next;
    for (;;) {
      right = search(head, key, &left, tid);
      if (right == nullptr || !pol_.equal(right, key)) return false;
      right_next = right->next.load();
      if (!marked(right_next)) {
        Node* e = right_next;
        if (right->next.compare_exchange_strong(e, mark(right_next))) break;  // logical deletion
      }
    }
    Node* e = right;
    if (left->compare_exchange_strong(e, right_next)) {
      pol_.retire(heap_, ebr_, tid, right);  // physical deletion by us
    } else {
      search(head, key, &left, tid);  // someone else's search (or ours now) unlinks it
    }
    return true;
  }

  // Harris's find: a search (which unlinks marked nodes on its way).
  bool contains(Link& head, const Key& key, int tid) {
    auto g = ebr_.pin(tid);
    Link* left;
    Node* right = search(head, key, &left, tid);
    return right != nullptr && pol_.equal(right, key);
  }

  // ------------------------------------------------------------------ map
  // The old value, or nullopt if the key was absent (then inserted).
  std::optional<std::int64_t> put(Link& head, const Key& key, std::int64_t value, int tid) {
    auto g = ebr_.pin(tid);
    Node* node = nullptr;
    for (;;) {
      Link* left;
      Node* right = search(head, key, &left, tid);
      if (right != nullptr && pol_.equal(right, key)) {
        std::int64_t cur = right->value.load();
        if (cur == kErased) {
          finish_erase(right);
          continue;
        }
        pol_.before_value_cas(tid);
        if (right->value.compare_exchange_strong(cur, value)) {
          if (node != nullptr) pol_.discard(heap_, tid, node);  // never published
          pol_.replaced(ebr_, tid, cur);  // unnamed now: reclaimed after the readers
          return cur;
        }
        continue;
      }
      if (node == nullptr) node = pol_.make(heap_, tid, key, value, right);
      else node->next.store(right);
      Node* e = right;
      if (left->compare_exchange_strong(e, node)) return std::nullopt;
    }
  }
  std::optional<std::int64_t> get(Link& head, const Key& key, int tid) {
    auto g = ebr_.pin(tid);
    Link* left;
    Node* right = search(head, key, &left, tid);
    if (right == nullptr || !pol_.equal(right, key)) return std::nullopt;
    const std::int64_t v = right->value.load();
    if (v == kErased) return std::nullopt;
    return v;
  }
  std::optional<std::int64_t> erase(Link& head, const Key& key, int tid) {
    auto g = ebr_.pin(tid);
    for (;;) {
      Link* left;
      Node* right = search(head, key, &left, tid);
      if (right == nullptr || !pol_.equal(right, key)) return std::nullopt;
      std::int64_t cur = right->value.load();
      if (cur == kErased) {  // erased by someone else, not yet marked
        finish_erase(right);
        continue;
      }
      if (right->value.compare_exchange_strong(cur, kErased)) {
        pol_.replaced(ebr_, tid, cur);  // unnamed now: reclaimed after the readers
        finish_erase(right);
        search(head, key, &left, tid);  // unlinks (and retires) it, as Harris's delete
        return cur;
      }
    }
  }

  // --------------------------------------------------------------- views
  // (key, value) of the nodes present in `head`'s list, read from rep_v.
  // Not concurrent with updates.
  static void collect(const Link& head, bool map, std::vector<std::pair<std::int64_t, std::int64_t>>& out) {
    for (Node* n = unmark(head.load()); n != nullptr;) {
      Node* nx = n->next.load();
      const std::int64_t v = n->value.load();
      if (!marked(nx) && !(map && v == kTombstone)) out.emplace_back(n->key.get(), v);
      n = unmark(nx);
    }
  }
  // Recovery: visits every node reachable from `head` (a rep_v address whose
  // object was visited already), following the persistent copies.
  template <class Visit>
  static void trace(const Link& head, Visit& visit) {
    Node* n = unmark(head.persistent()->load());
    while (n != nullptr && visit(n, sizeof(Node))) n = unmark(n->next.persistent()->load());
  }

 private:
  static bool marked(Node* p) { return (reinterpret_cast<std::uintptr_t>(p) & 1u) != 0; }
  static Node* mark(Node* p) { return reinterpret_cast<Node*>(reinterpret_cast<std::uintptr_t>(p) | 1u); }
  static Node* unmark(Node* p) {
    return reinterpret_cast<Node*>(reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{1});
  }

  // Harris's insert, for a key with a value.
  bool insert_if_absent(Link& head, const Key& key, std::int64_t value, int tid) {
    auto g = ebr_.pin(tid);
    Node* node = nullptr;
    for (;;) {
      Link* left;
      Node* right = search(head, key, &left, tid);
      if (right != nullptr && pol_.equal(right, key)) {
        if (node != nullptr) pol_.discard(heap_, tid, node);  // never published
        return false;
      }
      if (node == nullptr) node = pol_.make(heap_, tid, key, value, right);
      else node->next.store(right);  // new_node.next = right_node
      Node* e = right;
      if (left->compare_exchange_strong(e, node)) return true;
    }
  }

  // Marks n's next (Harris's logical deletion) unless it is marked already.
  static void finish_erase(Node* n) {
    Node* nx = n->next.load();
    while (!marked(nx)) {
      if (n->next.compare_exchange_strong(nx, mark(nx))) return;
    }
  }

  // Harris's search: right = the first unmarked node with key >= key
  // (or nullptr), *left = the link that points to it, with the marked nodes
  // between them unlinked.
  Node* search(Link& head, const Key& key, Link** left_out, int tid) {
    for (;;) {  // search_again
      Link* left = &head;
      Node* left_next = nullptr;
      Link* t_link = &head;
      Node* t = nullptr;
      Node* t_next = head.load();
      // 1: find left and right
      do {
        if (!marked(t_next)) {
          left = t_link;
          left_next = t_next;
        }
        t = unmark(t_next);
        if (t == nullptr) break;
        t_link = &t->next;
        t_next = t->next.load();
      } while (marked(t_next) || pol_.less(t, key));
      Node* right = t;
      // 2: check nodes are adjacent
      if (left_next == right) {
        if (right != nullptr && marked(right->next.load())) continue;
        *left_out = left;
        return right;
      }
      // 3: remove one or more marked nodes
      Node* e = left_next;
      if (left->compare_exchange_strong(e, right)) {
        for (Node* n = left_next; n != right;) {  // unlinked by us: ours to retire
          Node* nx = unmark(n->next.load());
          pol_.retire(heap_, ebr_, tid, n);
          n = nx;
        }
        if (right != nullptr && marked(right->next.load())) continue;
        *left_out = left;
        return right;
      }
    }
  }

  Heap<C>& heap_;
  sync::Ebr& ebr_;
  P& pol_;
};

}  // namespace ferrite::mirror
