// ferrite/mirror/bst.h — mirror::Bst: a durable set and map, the
// Natarajan–Mittal lock-free BST (PPoPP 2014) made persistent by Mirror
// (PLDI 2021 §6's BST): the algorithm of mirror/nm_bst.h, in a Mirror region
// (mirror/heap.h), under a pool root.
//
// Thread safety: every operation is lock-free, safe concurrently for
// distinct tids in [0, threads). Use one Bst either as a set or as a map.
// Keys: any int64 up to NmBst::kMaxKey (INT64_MAX − 3; the three largest
// are NM's sentinels); a map value of kTombstone (INT64_MIN) is reserved.
//
// Creation order (a crash at any verb leaves no root — the structure does
// not exist — or a complete one): the region (a pool-heap block), the five
// sentinel nodes (each made durable by Heap::make before the node pointing
// to it), then the root record by pmem::Pool::create_root (persisted before
// its name is).
//
// Persistence invariants: nm_bst.h's (nodes durable before linked, every
// field durable before visible).
//
// Recovery (attach, after Pool::open recovered the pool; mirror::Root's hook
// kept the region): map rep_v; Heap::recover with NmBst::trace from R — every
// node reachable on rep_p copied to rep_v, free lists rebuilt from the live
// set (§4.3.3); then NmBst::complete_flagged finishes the deletes that
// flagged their leaf before the crash (nm_bst.h, Recovery). Idempotent: the
// trace writes only rep_v and DRAM; the completion's CASes are Mirror CASes,
// and a rerun finishes whatever a crash during it left flagged.
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
// Capacity: no fixed capacity: replica_bytes is the size of each region of
// the heap's chain (mirror/heap.h, "Growth"); when the regions are used up
// the chain grows by one region, so only a full POOL throws
// pmem::PoolError(kFull), naming the pool's free space; nothing stored is
// lost (docs/mirror.md, "Growth").
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferrite/mirror/heap.h"
#include "ferrite/mirror/internal/faults.h"
#include "ferrite/mirror/nm_bst.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::mirror {

template <class C = Default>
class Bst {
 public:
  using Tree = NmBst<C>;
  using Node = typename Tree::Node;
  static constexpr std::uint32_t kStructure = 3;  // mirror::Root::structure (1 list, 2 hash table)

  static std::unique_ptr<Bst> create(pmem::Pool& pool, std::string_view name, int threads,
                                     std::size_t replica_bytes = std::size_t{1} << 20) {
    return std::unique_ptr<Bst>(new Bst(pool, name, threads, replica_bytes));
  }
  // open_or_create's rule (pmem::Pool::open_or_create<T>(name, args...)):
  // attach accepts create's arguments and ignores the creation-only ones —
  // the region's size is the one the root recorded at creation
  // (heap().replica_bytes()). `threads` is DRAM-only (EBR slots, free
  // lists): any count >= 1 attaches, fewer or more than at creation.
  static std::unique_ptr<Bst> attach(pmem::Pool& pool, std::string_view name, int threads) {
    return std::unique_ptr<Bst>(new Bst(pool, name, threads));
  }
  static std::unique_ptr<Bst> attach(pmem::Pool& pool, std::string_view name, int threads,
                                   std::size_t /*replica_bytes: the root's*/) {
    return attach(pool, name, threads);
  }
  Bst(const Bst&) = delete;
  Bst& operator=(const Bst&) = delete;

  // set
  bool insert(std::int64_t key, int tid) { return tree_->insert(check(key), tid); }
  bool remove(std::int64_t key, int tid) { return tree_->remove(check(key), tid); }
  bool contains(std::int64_t key, int tid) { return tree_->contains(check(key), tid); }
  // map: put -> old value | nullopt (inserted); get; erase -> old | nullopt
  // put refuses the reserved value kTombstone (INT64_MIN): std::invalid_argument.
  std::optional<std::int64_t> put(std::int64_t key, std::int64_t value, int tid) {
    return tree_->put(check(key), check_value(value, "mirror::Bst"), tid);
  }
  std::optional<std::int64_t> get(std::int64_t key, int tid) { return tree_->get(check(key), tid); }
  std::optional<std::int64_t> erase(std::int64_t key, int tid) { return tree_->erase(check(key), tid); }

  // Keys present, ascending, with their values (rep_v; quiescent).
  std::vector<std::pair<std::int64_t, std::int64_t>> items(bool map) const {
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    tree_->collect(map, out);
    return out;
  }
  bool replicas_equal() const { return tree_->replicas_equal(); }
  Heap<C>& heap() { return *heap_; }

 private:
  Bst(pmem::Pool& pool, std::string_view name, int threads, std::size_t bytes) : ebr_(threads) {
    heap_ = std::make_unique<Heap<C>>(pool, bytes, threads);
    Node* const r = Tree::make_sentinels(*heap_, 0);
    Root root;
    root.region = heap_->region();
    root.replica_bytes = heap_->replica_bytes();
    root.placement = static_cast<std::uint32_t>(C::placement::kKind);
    root.structure = kStructure;
    root.anchor = reinterpret_cast<std::uint64_t>(r);
    root.anchor_bytes = sizeof(Node);
    root_ = pool.create_root<Root>(name, root);
    tree_ = std::make_unique<Tree>(*heap_, ebr_, r);
  }
  Bst(pmem::Pool& pool, std::string_view name, int threads) : ebr_(threads) {
    root_ = pool.root<Root>(name);
    if (root_->structure != kStructure)
      throw pmem::PoolError(pmem::Errc::kRootType, "mirror: root '" + std::string(name) + "' holds another structure");
    if (root_->placement != static_cast<std::uint32_t>(C::placement::kKind))
      throw pmem::PoolError(pmem::Errc::kRootType, "mirror: root '" + std::string(name) +
                                                       "' was created with the other replica placement");
    if (root_->anchor_bytes != sizeof(Node))
      throw pmem::PoolError(pmem::Errc::kCorrupt, "mirror: root '" + std::string(name) + "' is inconsistent");
    heap_ = std::make_unique<Heap<C>>(pool, root_->region, root_->replica_bytes, threads);
    Node* const r = reinterpret_cast<Node*>(root_->anchor);
    // §4.3.3: trace from the persistent root, copy to rep_v, rebuild.
    heap_->recover([r](auto& visit) { Tree::trace(r, visit); });
    tree_ = std::make_unique<Tree>(*heap_, ebr_, r);
    // Broken (kRecoverNoHelp): flagged leaves stay, their deletes undecided.
    if constexpr (!C::has(internal::kRecoverNoHelp)) tree_->complete_flagged(0);
  }

  static std::int64_t check(std::int64_t key) {
    if (key > Tree::kMaxKey) throw std::out_of_range("mirror::Bst: keys above INT64_MAX - 3 are NM's sentinels");
    return key;
  }

  Root* root_ = nullptr;
  std::unique_ptr<Heap<C>> heap_;  // declared before ebr_: EBR's last frees go to a live heap
  sync::Ebr ebr_;
  std::unique_ptr<Tree> tree_;
};

}  // namespace ferrite::mirror
