// ferrite/logging/rb_tree.h — the StrandWeaver paper's RB-Tree workload
// (Table II: "Insert/delete to RB-Tree") as a persistent structure on the
// failure-atomic logging library (logging/undo_log.h).
//
// What it is. A red-black tree map (Cormen, Leiserson, Rivest, Stein,
// "Introduction to Algorithms", 3rd ed., §13.3 RB-INSERT and §13.4
// RB-DELETE, with a null leaf instead of the sentinel, so the deletion
// fix-up carries x's parent explicitly), one lock, each put / erase one
// failure-atomic region (Vaibhav Gogte et al., "Relaxed Persist Ordering
// Using Strand Persistency", ISCA 2020, Table II and §V). A region stores
// many words — links, parents, colours, across rotations — and may store
// one word twice (a colour set in one fix-up step and reset in the next),
// so it is the workload that shows why recovery must roll back in reverse
// creation order.
//
// Thread safety: every member may be called concurrently with distinct
// tids (one lock; reads take it without logging).
// Invariants (between regions): binary-search order; parent links agree
// with child links; the root is black; no red node has a red child; every
// root-to-leaf path has the same number of black nodes. check() verifies
// them (the crash adapters turn a violation into a malformed state).
// Persistence: put and erase are failure-atomic and durable when they
// return (undo_log.h P1-P3); a node allocated in the region is initialised
// with unlogged stores (Logger::init: an undone region leaves it
// unreachable, and pool recovery frees it), and so are its later stores in
// the same region; an erased node is retired and freed when its region is
// pruned.
// Recovery: the root hook runs logging::recover_area, then traces the
// rolled-back tree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferrite/logging/workloads.h"

namespace ferrite::logging {

class LoggedRbTree {
 public:
  struct Node {
    std::int64_t key;
    std::int64_t value;
    Node* left;
    Node* right;
    Node* parent;
    std::uint64_t red;  // 1 red, 0 black
  };
  struct Root {
    static constexpr std::uint32_t kTypeTag = 0x4C47'5254;  // "LGRT"
    static constexpr std::uint32_t kTypeVersion = 1;
    static constexpr const char* kTypeName = "logging::LoggedRbTree";
    LogArea log{};
    alignas(64) Node* root = nullptr;
  };
  static_assert(offsetof(Root, log) == 0);
  static_assert(offsetof(Root, root) == 576);
  static_assert(sizeof(Node) == 48);

  LoggedRbTree(pmem::Pool& pool, std::string_view name, int threads, const LoggerOptions& opt)
      : root_(pool.has_root(name) ? pool.root<Root>(name) : pool.create_root<Root>(name)),
        log_(pool, &root_->log, threads, opt) {}

  // RB-INSERT (or an update of the key's value): the old value if present.
  std::optional<std::int64_t> put(int tid, std::int64_t k, std::int64_t v) {
    Region r(log_, tid, lock_);
    Op o{this, tid, nullptr};
    Node* y = nullptr;
    for (Node* x = root_->root; x != nullptr; x = k < x->key ? x->left : x->right) {
      y = x;
      if (x->key == k) {
        const std::int64_t old = x->value;
        o.set(&x->value, v);
        r.end();
        return old;
      }
    }
    auto* z = static_cast<Node*>(log_.alloc(tid, sizeof(Node)));
    o.fresh = z;
    o.set(&z->key, k);
    o.set(&z->value, v);
    o.set(&z->left, static_cast<Node*>(nullptr));
    o.set(&z->right, static_cast<Node*>(nullptr));
    o.set(&z->parent, y);
    o.set(&z->red, std::uint64_t{1});
    if (y == nullptr) o.set(&root_->root, z);
    else if (k < y->key) o.set(&y->left, z);
    else o.set(&y->right, z);
    o.insert_fixup(z);
    r.end();
    return std::nullopt;
  }

  // RB-DELETE: the removed value if the key was present.
  std::optional<std::int64_t> erase(int tid, std::int64_t k) {
    Region r(log_, tid, lock_);
    Node* z = root_->root;
    while (z != nullptr && z->key != k) z = k < z->key ? z->left : z->right;
    if (z == nullptr) {
      r.end();
      return std::nullopt;
    }
    const std::int64_t old = z->value;
    Op o{this, tid, nullptr};
    o.erase(z);
    log_.retire(tid, z);
    r.end();
    return old;
  }

  std::optional<std::int64_t> get(int, std::int64_t k) {
    lock_.lock_for_read();
    std::optional<std::int64_t> out;
    for (Node* x = root_->root; x != nullptr; x = k < x->key ? x->left : x->right)
      if (x->key == k) {
        out = x->value;
        break;
      }
    lock_.unlock_for_read();
    return out;
  }

  // (key, value) pairs in key order.
  std::vector<std::pair<std::int64_t, std::int64_t>> items() {
    lock_.lock_for_read();
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    walk(root_->root, [&](Node* n) { out.emplace_back(n->key, n->value); });
    lock_.unlock_for_read();
    return out;
  }

  // Every invariant of the essay; "" when they hold, else the first broken.
  std::string check() {
    lock_.lock_for_read();
    std::string why;
    Node* rt = root_->root;
    if (rt != nullptr && rt->parent != nullptr) why = "the root has a parent";
    else if (rt != nullptr && rt->red != 0) why = "the root is red";
    else check_subtree(rt, nullptr, nullptr, nullptr, why);
    lock_.unlock_for_read();
    return why;
  }
  Logger& logger() { return log_; }

  // Validates before it follows (issue 40), after the log's rollback (the
  // tree is then as the last complete regions left it): the log area
  // (validate_area), then every node before its children are read — a heap
  // block of a node's size whose parent pointer names the node it was
  // reached from (the root's: null), so a pointer flipped to another node
  // (a lost subtree, a cycle) is caught too. A damaged pointer is a
  // pmem::PoolError(kCorrupt) naming its offset.
  static void recover_root(pmem::Pool& pool, Root* r, const std::function<void(void*)>& mark) {
    validate_area(pool, &r->log);
    recover_area(&r->log);
    mark_area(&r->log, mark);
    struct Edge {
      Node* const* at;
      const Node* parent;
    };
    std::vector<Edge> todo{{&r->root, nullptr}};
    std::size_t seen = 0;
    const std::size_t most = pool.size() / sizeof(Node);
    while (!todo.empty()) {
      const Edge e = todo.back();
      todo.pop_back();
      Node* n = *e.at;
      if (n == nullptr) continue;
      const char* why = nullptr;
      if (pool.heap().block_at(n) < sizeof(Node)) why = " is not a node";
      else if (n->parent != e.parent) why = " names a node whose parent pointer differs";
      else if (++seen > most) why = " closes a cycle";
      if (why != nullptr)
        throw pmem::PoolError(pmem::Errc::kCorrupt, "logging: rb tree: the pointer at offset " +
                                                        std::to_string(pool.offset_of(e.at)) + why);
      mark(n);
      todo.push_back({&n->left, n});
      todo.push_back({&n->right, n});
    }
  }

 private:
  // One region's stores: logged, except into the node allocated by it.
  struct Op {
    LoggedRbTree* t;
    int tid;
    Node* fresh;  // allocated in this region: unlogged stores (Logger::init)

    template <class T>
    void set(T* field, const T& v) {
      const auto* p = reinterpret_cast<const unsigned char*>(field);
      const auto* f = reinterpret_cast<const unsigned char*>(fresh);
      if (fresh != nullptr && p >= f && p < f + sizeof(Node)) t->log_.init(tid, field, v);
      else t->log_.write(tid, field, v);
    }
    static bool red(const Node* n) { return n != nullptr && n->red != 0; }
    void set_red(Node* n, std::uint64_t c) {
      if (n->red != c) set(&n->red, c);  // an unchanged colour is not logged
    }
    void replace_child(Node* parent, Node* old_child, Node* new_child) {
      if (parent == nullptr) set(&t->root_->root, new_child);
      else if (parent->left == old_child) set(&parent->left, new_child);
      else set(&parent->right, new_child);
    }
    // LEFT-ROTATE (CLRS §13.2).
    void rotate_left(Node* x) {
      Node* y = x->right;
      set(&x->right, y->left);
      if (y->left != nullptr) set(&y->left->parent, x);
      set(&y->parent, x->parent);
      replace_child(x->parent, x, y);
      set(&y->left, x);
      set(&x->parent, y);
    }
    void rotate_right(Node* x) {
      Node* y = x->left;
      set(&x->left, y->right);
      if (y->right != nullptr) set(&y->right->parent, x);
      set(&y->parent, x->parent);
      replace_child(x->parent, x, y);
      set(&y->right, x);
      set(&x->parent, y);
    }
    // RB-INSERT-FIXUP (CLRS §13.3).
    void insert_fixup(Node* z) {
      while (red(z->parent)) {
        Node* p = z->parent;
        Node* g = p->parent;  // p is red, so not the root
        const bool left = p == g->left;
        Node* u = left ? g->right : g->left;
        if (red(u)) {
          set_red(p, 0);
          set_red(u, 0);
          set_red(g, 1);
          z = g;
          continue;
        }
        if (z == (left ? p->right : p->left)) {
          z = p;
          if (left) rotate_left(z);
          else rotate_right(z);
          p = z->parent;
        }
        set_red(p, 0);
        set_red(g, 1);
        if (left) rotate_right(g);
        else rotate_left(g);
      }
      set_red(t->root_->root, 0);
    }
    // RB-TRANSPLANT (CLRS §13.4).
    void transplant(Node* u, Node* v) {
      replace_child(u->parent, u, v);
      if (v != nullptr) set(&v->parent, u->parent);
    }
    // RB-DELETE (CLRS §13.4); x's parent xp is carried (null leaves).
    void erase(Node* z) {
      Node* y = z;
      std::uint64_t y_red = y->red;
      Node* x;
      Node* xp;
      if (z->left == nullptr) {
        x = z->right;
        xp = z->parent;
        transplant(z, z->right);
      } else if (z->right == nullptr) {
        x = z->left;
        xp = z->parent;
        transplant(z, z->left);
      } else {
        y = z->right;
        while (y->left != nullptr) y = y->left;
        y_red = y->red;
        x = y->right;
        if (y->parent == z) {
          xp = y;
        } else {
          xp = y->parent;
          transplant(y, y->right);
          set(&y->right, z->right);
          set(&y->right->parent, y);
        }
        transplant(z, y);
        set(&y->left, z->left);
        set(&y->left->parent, y);
        set_red(y, z->red);
      }
      if (y_red == 0) erase_fixup(x, xp);
    }
    // RB-DELETE-FIXUP (CLRS §13.4).
    void erase_fixup(Node* x, Node* xp) {
      while (x != t->root_->root && !red(x)) {
        const bool left = x == xp->left;
        Node* w = left ? xp->right : xp->left;  // x is doubly black: w exists
        if (red(w)) {
          set_red(w, 0);
          set_red(xp, 1);
          if (left) rotate_left(xp);
          else rotate_right(xp);
          w = left ? xp->right : xp->left;
        }
        if (!red(w->left) && !red(w->right)) {
          set_red(w, 1);
          x = xp;
          xp = x->parent;
          continue;
        }
        if (!red(left ? w->right : w->left)) {
          set_red(left ? w->left : w->right, 0);
          set_red(w, 1);
          if (left) rotate_right(w);
          else rotate_left(w);
          w = left ? xp->right : xp->left;
        }
        set_red(w, xp->red);
        set_red(xp, 0);
        set_red(left ? w->right : w->left, 0);
        if (left) rotate_left(xp);
        else rotate_right(xp);
        x = t->root_->root;
        xp = nullptr;
      }
      if (x != nullptr) set_red(x, 0);
    }
  };

  template <class F>
  static void walk(Node* n, const F& f) {
    // Iterative in-order walk: a torn tree (a broken variant) may be deep.
    std::vector<Node*> stack;
    std::size_t guard = 0;
    while ((n != nullptr || !stack.empty()) && ++guard < (std::size_t{1} << 26)) {
      while (n != nullptr && stack.size() < (std::size_t{1} << 20)) {
        stack.push_back(n);
        n = n->left;
      }
      if (stack.empty()) break;
      n = stack.back();
      stack.pop_back();
      f(n);
      n = n->right;
    }
  }
  // Black height of the subtree, or -1 with `why` set.
  static int check_subtree(Node* n, Node* parent, const std::int64_t* lo, const std::int64_t* hi,
                           std::string& why, int depth = 0) {
    if (n == nullptr) return 1;
    if (depth > 128) return why = "deeper than a red-black tree can be (a cycle?)", -1;
    if (n->parent != parent) return why = "a parent link disagrees with its child link", -1;
    if ((lo != nullptr && n->key <= *lo) || (hi != nullptr && n->key >= *hi))
      return why = "keys out of search order", -1;
    if (n->red != 0 && ((n->left != nullptr && n->left->red != 0) || (n->right != nullptr && n->right->red != 0)))
      return why = "a red node has a red child", -1;
    const int l = check_subtree(n->left, n, lo, &n->key, why, depth + 1);
    if (l < 0) return -1;
    const int r = check_subtree(n->right, n, &n->key, hi, why, depth + 1);
    if (r < 0) return -1;
    if (l != r) return why = "black heights differ", -1;
    return l + (n->red == 0 ? 1 : 0);
  }

  Root* root_;
  Logger log_;
  Lock lock_;
};

inline const bool kLoggedRbTreeRootRegistered =
    pmem::register_root_type<LoggedRbTree::Root>(&LoggedRbTree::recover_root);

}  // namespace ferrite::logging
