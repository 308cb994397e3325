// ferrite/montage/mindicator.h — the minimum epoch any thread may still have
// unpersisted work in (nbMontage §3.6, after Liu, Luchangco and Spear's
// mindicator; Fig. 2 l.23, l.64, l.100, l.103).
//
// What it is. A fixed-size balanced binary tree, one leaf per thread id;
// each inner node holds the minimum of its subtree. A leaf is the oldest
// epoch whose to-be-persisted buffer and descriptor of that thread an epoch
// advance may still have to write back. Leaves only grow (raise() is a
// max), so every node's value only grows too.
//
// Updates are Jayanti's f-array refresh: after changing a leaf, each
// ancestor is refreshed twice (read the node, read both children, CAS the
// node from what it read to the children's minimum). If both CASes of a
// level fail, a refresh that began after ours succeeded, so when raise()
// returns the root reflects the raised leaf. Wait-free: O(log T).
//
// Invariant used by advance(): a node's value is never larger than the
// true minimum of its subtree's leaves (children only grow, and a refresh
// computes its minimum from reads made after the CAS's expected value).
// So "root >= e" proves that no leaf is below e.
//
// Thread safety: every member is safe concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>

namespace ferrite::montage {

class Mindicator {
 public:
  static constexpr std::uint64_t kIdle = std::numeric_limits<std::uint64_t>::max();

  // `n` leaves, all at `initial`; leaves >= n stay kIdle.
  Mindicator(int n, std::uint64_t initial) : n_(n) {
    width_ = 1;
    while (width_ < n) width_ *= 2;
    node_.reset(new std::atomic<std::uint64_t>[2 * static_cast<std::size_t>(width_)]);
    for (int i = 0; i < 2 * width_; ++i) node_[i].store(kIdle, std::memory_order_relaxed);
    for (int i = 0; i < n; ++i) node_[width_ + i].store(initial, std::memory_order_relaxed);
    for (int i = width_ - 1; i >= 1; --i)
      node_[i].store(std::min(node_[2 * i].load(std::memory_order_relaxed), node_[2 * i + 1].load(std::memory_order_relaxed)),
                     std::memory_order_relaxed);
  }

  int size() const { return n_; }
  std::uint64_t root() const { return node_[1].load(std::memory_order_seq_cst); }
  std::uint64_t leaf(int t) const { return node_[width_ + t].load(std::memory_order_seq_cst); }

  // Raises leaf t to at least v (never lowers it), then refreshes the path.
  void raise(int t, std::uint64_t v) {
    auto& l = node_[width_ + t];
    std::uint64_t cur = l.load(std::memory_order_seq_cst);
    // ORDER: seq_cst: an advancer that reads the raised leaf (or root)
    // must also see everything this thread made durable before raising it.
    while (cur < v && !l.compare_exchange_weak(cur, v, std::memory_order_seq_cst)) {
    }
    refresh_path(width_ + t);
  }
  // Raises leaf t from exactly `from` to `to` (an advancer, l.103); false if
  // the leaf was not `from` any more (someone else raised it).
  bool raise_from(int t, std::uint64_t from, std::uint64_t to) {
    bool ok = node_[width_ + t].compare_exchange_strong(from, to, std::memory_order_seq_cst);
    refresh_path(width_ + t);
    return ok;
  }

  // A thread whose leaf is below e, found by descending from the root
  // (§3.6), or -1 if the root says there is none. A descent that meets a
  // stale inner node falls back to a scan of the leaves (O(T), still
  // wait-free).
  int find_below(std::uint64_t e) const {
    if (root() >= e) return -1;
    int i = 1;
    while (i < width_) {
      if (node_[2 * i].load(std::memory_order_seq_cst) < e) i = 2 * i;
      else if (node_[2 * i + 1].load(std::memory_order_seq_cst) < e) i = 2 * i + 1;
      else break;
    }
    if (i >= width_) return i - width_;
    for (int t = 0; t < n_; ++t)
      if (leaf(t) < e) return t;
    return -1;
  }

 private:
  void refresh_path(int i) {
    for (i /= 2; i >= 1; i /= 2) {
      for (int twice = 0; twice < 2; ++twice) {
        std::uint64_t old = node_[i].load(std::memory_order_seq_cst);
        const std::uint64_t m = std::min(node_[2 * i].load(std::memory_order_seq_cst),
                                         node_[2 * i + 1].load(std::memory_order_seq_cst));
        if (old == m || node_[i].compare_exchange_strong(old, m, std::memory_order_seq_cst)) break;
      }
    }
  }

  int n_;
  int width_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> node_;
};

}  // namespace ferrite::montage
