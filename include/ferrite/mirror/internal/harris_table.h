// ferrite/mirror/internal/harris_table.h — what mirror/list.h and
// mirror/hash_map.h share: an array of Harris-list heads (one for the list,
// one per bucket for the hash table) in a Mirror region, its pool root, its
// creation, its attach (= Mirror recovery, §4.3.3) and its trace.
//
// Creation order (a crash at any verb leaves either no root — the
// structure does not exist and is created afresh — or a complete one):
//   1. region 0: a block of the pool heap (its chunk map entry persisted
//      by the pool), its header written back (mirror/heap.h; at least the
//      bucket array's size, which must fit one region); later regions are
//      chained by the heap as the table fills (Heap's "Growth");
//   2. the bucket heads, constructed on rep_v (nullptr, seq 0), copied to
//      rep_p, written back, psync (Heap::make_array);
//   3. the root, written by pmem::Pool::create_root: persisted before the
//      header names it.
// Attach: the pool has recovered itself (Root's hook kept every linked region);
// attach maps rep_v (DRAM: a fresh zeroed mapping; pool mode: the second half
// of the region), then Heap::recover traces from the bucket heads, copying
// every reachable object to rep_v and rebuilding the free lists. It reads
// only the pool.
//
// Parameters: P, the list's key/value policy (harris_list.h: IntKeys for the
// int64 list and map; mirror/bytes_map.h's BytesKeys), constructed as
// P(pool, heap) and owned here, outliving the EBR whose callbacks use it;
// R, the pool root type (mirror::Root, or one whose recover hook also marks
// the payloads the structure names: its own type tag, so a root of one kind
// never attaches as the other — Pool::root<R> throws kRootType).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferrite/mirror/harris_list.h"
#include "ferrite/mirror/heap.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::mirror::internal {

// The bucket lists of a Harris table root read from the persistent replica,
// as the recover hooks validate them (attach's Heap::recover walks the same
// links): the anchor and every node inside one region of the chain (not its
// header unit) and 64-byte aligned, no list longer than the regions' units
// (a cycle), a bucket count that agrees with the anchor's size. on_node(n)
// sees each node's rep_p copy (a `const Node*`). Throws PoolError(kCorrupt)
// "<who>: ...". Node is the persistent layout (it does not depend on the
// Config); `next` its link.
template <class Node, class OnNode>
void walk_persistent_buckets(const pmem::Pool& pool, const Root& r, const std::string& who, OnNode&& on_node) {
  using Link = patomic<Node*, Default>;
  auto corrupt = [&](const std::string& what) { return pmem::PoolError(pmem::Errc::kCorrupt, who + ": " + what); };
  const std::uint64_t delta =
      r.placement == static_cast<std::uint32_t>(PlacementKind::kDram) ? pmem::kReplicaOffset : r.replica_bytes;
  // Every region of the chain (validated), sorted by address to find the
  // one a pointer falls in.
  std::vector<std::uint64_t> regions = region_chain(pool, r.region, r.replica_bytes, r.placement);
  std::sort(regions.begin(), regions.end());
  const std::uint64_t S = r.replica_bytes;
  // rep_v address -> its rep_p copy, checked to lie inside one region (not
  // its header unit).
  auto rep_p = [&](std::uint64_t v, std::uint64_t n) -> const void* {
    const std::uint64_t p = v - delta;
    auto it = std::upper_bound(regions.begin(), regions.end(), p);
    if (it == regions.begin()) throw corrupt("a pointer " + hex(v) + " outside the regions");
    const std::uint64_t lo = *--it;
    if (p == lo || n > S || p + n > lo + S || (p - lo) % 64 != 0)
      throw corrupt("a pointer " + hex(v) + " outside the regions");
    return reinterpret_cast<const void*>(p);
  };
  const std::uint64_t buckets = r.param;
  if (buckets == 0 || buckets > S / sizeof(Link) || r.anchor_bytes != buckets * sizeof(Link))
    throw corrupt("the root is inconsistent");
  const auto* heads = static_cast<const Link*>(rep_p(r.anchor, r.anchor_bytes));
  std::uint64_t budget = regions.size() * (S / 64);  // more nodes than units: a cycle
  auto unmark = [](Node* p) { return reinterpret_cast<std::uint64_t>(p) & ~std::uint64_t{1}; };
  for (std::uint64_t b = 0; b < buckets; ++b) {
    // CRASH: the persistent replica's links are what survived; rep_v is
    // gone (DRAM) or stale (pool placement) and is never read here.
    for (std::uint64_t v = unmark(heads[b].load()); v != 0;) {
      if (budget-- == 0) throw corrupt("a list longer than its region (a cycle)");
      const auto* n = static_cast<const Node*>(rep_p(v, sizeof(Node)));
      on_node(n);
      v = unmark(n->next.load());
    }
  }
}

// Root's validation of the int64 list (tag 1) and hash table (tag 2): their
// bucket lists (heap.h, Root::recover_root).
inline void validate_int_harris_root(const pmem::Pool& pool, const Root& r) {
  walk_persistent_buckets<HarrisNode<Default>>(pool, r, "mirror recovery", [](const HarrisNode<Default>*) {});
}
inline const bool kIntListValidatorRegistered = register_root_validator(1, &validate_int_harris_root);
inline const bool kIntHashValidatorRegistered = register_root_validator(2, &validate_int_harris_root);

template <class C, std::uint32_t kStructure, class P = IntKeys<C>,
          class R = std::conditional_t<C::has(kRecoverNoMarkGrown), RootFirstRegionOnly, Root>>
class HarrisTable {
 public:
  using List = HarrisList<C, P>;
  using Node = typename List::Node;
  using Link = typename List::Link;

  HarrisTable(const HarrisTable&) = delete;
  HarrisTable& operator=(const HarrisTable&) = delete;

  std::uint64_t buckets() const { return n_; }
  Heap<C>& heap() { return *heap_; }
  int threads() const { return heap_->threads(); }

  // Keys present, ascending, with their values (rep_v; not concurrent with
  // updates).
  std::vector<std::pair<std::int64_t, std::int64_t>> items(bool map) const {
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    for (std::uint64_t b = 0; b < n_; ++b) List::collect(heads_[b], map, out);
    std::sort(out.begin(), out.end());
    return out;
  }
  // Both replicas of every reachable field equal (a quiescent check for
  // tests): rep_v mirrors rep_p.
  bool replicas_equal() const {
    auto same = [](const auto& f) {
      const auto r = f.replicas();
      return r.p == r.v;
    };
    for (std::uint64_t b = 0; b < n_; ++b) {
      if (!same(heads_[b])) return false;
      for (Node* n = unmark(heads_[b].load()); n != nullptr; n = unmark(n->next.load())) {
        if (!same(n->value) || !same(n->next) || !P::same_replicas(n)) return false;
      }
    }
    return true;
  }

 protected:
  // Fresh structure under root `name`.
  HarrisTable(pmem::Pool& pool, std::string_view name, int threads, std::size_t replica_bytes, std::uint64_t buckets)
      : n_(buckets), ebr_(threads) {
    if (buckets == 0) throw std::invalid_argument("mirror: a table needs at least one bucket");
    // Region 0 holds the bucket array (one object: it never moves to a later
    // region), so it has room for it and its header at least.
    heap_ = std::make_unique<Heap<C>>(pool, std::max(replica_bytes, buckets * sizeof(Link) + Heap<C>::kUnit), threads);
    heads_ = heap_->template make_array<Link>(0, n_);
    pol_ = std::make_unique<P>(pool, *heap_);
    R r;
    r.region = heap_->region();
    r.replica_bytes = heap_->replica_bytes();
    r.placement = static_cast<std::uint32_t>(C::placement::kKind);
    r.structure = kStructure;
    r.anchor = reinterpret_cast<std::uint64_t>(heads_);
    r.anchor_bytes = n_ * sizeof(Link);
    r.param = n_;
    root_ = pool.create_root<R>(name, r);
    list_ = std::make_unique<List>(*heap_, ebr_, *pol_);
  }
  // Attach to root `name` (after Pool::open recovered the pool).
  HarrisTable(pmem::Pool& pool, std::string_view name, int threads) : ebr_(threads) {
    root_ = pool.root<R>(name);
    if (root_->structure != kStructure)
      throw pmem::PoolError(pmem::Errc::kRootType, "mirror: root '" + std::string(name) + "' holds another structure");
    if (root_->placement != static_cast<std::uint32_t>(C::placement::kKind))
      throw pmem::PoolError(pmem::Errc::kRootType, "mirror: root '" + std::string(name) +
                                                       "' was created with the other replica placement");
    n_ = root_->param;
    if (n_ == 0 || root_->anchor_bytes != n_ * sizeof(Link))
      throw pmem::PoolError(pmem::Errc::kCorrupt, "mirror: root '" + std::string(name) + "' is inconsistent");
    heap_ = std::make_unique<Heap<C>>(pool, root_->region, root_->replica_bytes, threads);
    heads_ = reinterpret_cast<Link*>(root_->anchor);
    // §4.3.3: trace from the persistent roots, copy to rep_v, rebuild.
    Link* heads = heads_;
    const std::uint64_t n = n_;
    heap_->recover([heads, n](auto& visit) {
      if (!visit(heads, n * sizeof(Link))) return;
      for (std::uint64_t b = 0; b < n; ++b) List::trace(heads[b], visit);
    });
    pol_ = std::make_unique<P>(pool, *heap_);
    list_ = std::make_unique<List>(*heap_, ebr_, *pol_);
  }

  static Node* unmark(Node* p) {
    return reinterpret_cast<Node*>(reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{1});
  }

  std::uint64_t n_ = 0;
  R* root_ = nullptr;
  std::unique_ptr<Heap<C>> heap_;  // declared before ebr_: EBR's last frees go to a live heap
  std::unique_ptr<P> pol_;         // likewise: EBR's callbacks of a policy (payloads) use it
  sync::Ebr ebr_;
  Link* heads_ = nullptr;  // rep_v
  std::unique_ptr<List> list_;
};

}  // namespace ferrite::mirror::internal
