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

template <class C = Default>
class HarrisList {
 public:
  using Node = HarrisNode<C>;
  using Link = patomic<Node*, C>;

  HarrisList(Heap<C>& heap, sync::Ebr& ebr) : heap_(heap), ebr_(ebr) {}

  // ------------------------------------------------------------------ set
  bool insert(Link& head, std::int64_t key, int tid) { return insert_if_absent(head, key, 0, tid); }

  // Harris's delete.
  bool remove(Link& head, std::int64_t key, int tid) {
    auto g = ebr_.pin(tid);
    Link* left;
    Node* right;
    Node* right_next;
    for (;;) {
      right = search(head, key, &left, tid);
      if (right == nullptr || right->key.get() != key) return false;
      right_next = right->next.load();
      if (!marked(right_next)) {
        Node* e = right_next;
        if (right->next.compare_exchange_strong(e, mark(right_next))) break;  // logical deletion
      }
    }
    Node* e = right;
    if (left->compare_exchange_strong(e, right_next)) {
      heap_.retire(ebr_, tid, right);  // physical deletion by us
    } else {
      search(head, key, &left, tid);  // someone else's search (or ours now) unlinks it
    }
    return true;
  }

  // Harris's find: a search (which unlinks marked nodes on its way).
  bool contains(Link& head, std::int64_t key, int tid) {
    auto g = ebr_.pin(tid);
    Link* left;
    Node* right = search(head, key, &left, tid);
    return right != nullptr && right->key.get() == key;
  }

  // ------------------------------------------------------------------ map
  // The old value, or nullopt if the key was absent (then inserted).
  std::optional<std::int64_t> put(Link& head, std::int64_t key, std::int64_t value, int tid) {
    auto g = ebr_.pin(tid);
    Node* node = nullptr;
    for (;;) {
      Link* left;
      Node* right = search(head, key, &left, tid);
      if (right != nullptr && right->key.get() == key) {
        std::int64_t cur = right->value.load();
        if (cur == kTombstone) {
          finish_erase(right);
          continue;
        }
        if (right->value.compare_exchange_strong(cur, value)) {
          if (node != nullptr) heap_.free(node, sizeof(Node), tid);  // never published
          return cur;
        }
        continue;
      }
      if (node == nullptr) node = heap_.template make<Node>(tid, key, value, right);
      else node->next.store(right);
      Node* e = right;
      if (left->compare_exchange_strong(e, node)) return std::nullopt;
    }
  }
  std::optional<std::int64_t> get(Link& head, std::int64_t key, int tid) {
    auto g = ebr_.pin(tid);
    Link* left;
    Node* right = search(head, key, &left, tid);
    if (right == nullptr || right->key.get() != key) return std::nullopt;
    const std::int64_t v = right->value.load();
    if (v == kTombstone) return std::nullopt;
    return v;
  }
  std::optional<std::int64_t> erase(Link& head, std::int64_t key, int tid) {
    auto g = ebr_.pin(tid);
    for (;;) {
      Link* left;
      Node* right = search(head, key, &left, tid);
      if (right == nullptr || right->key.get() != key) return std::nullopt;
      std::int64_t cur = right->value.load();
      if (cur == kTombstone) {  // erased by someone else, not yet marked
        finish_erase(right);
        continue;
      }
      if (right->value.compare_exchange_strong(cur, kTombstone)) {
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
  bool insert_if_absent(Link& head, std::int64_t key, std::int64_t value, int tid) {
    auto g = ebr_.pin(tid);
    Node* node = nullptr;
    for (;;) {
      Link* left;
      Node* right = search(head, key, &left, tid);
      if (right != nullptr && right->key.get() == key) {
        if (node != nullptr) heap_.free(node, sizeof(Node), tid);  // never published
        return false;
      }
      if (node == nullptr) node = heap_.template make<Node>(tid, key, value, right);
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
  Node* search(Link& head, std::int64_t key, Link** left_out, int tid) {
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
      } while (marked(t_next) || t->key.get() < key);
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
          heap_.retire(ebr_, tid, n);
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
};

}  // namespace ferrite::mirror
