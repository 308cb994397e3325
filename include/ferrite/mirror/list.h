// ferrite/mirror/list.h — mirror::List: a durable sorted set, Harris's
// lock-free linked list (DISC 2001) made persistent by Mirror (PLDI 2021:
// the paper's running example, Figure 1, and its §6 "Linked-List").
//
// The algorithm is mirror/harris_list.h's, unchanged but for the types
// (std::atomic -> patomic, new -> Heap::make). One list hangs off one head
// link in a Mirror region (mirror/heap.h); the replicas are placed by the
// Config (mirror/placement.h: DRAM by default, both in the pool with
// Config<InPool>).
//
// Thread safety: insert/remove/contains are lock-free, safe concurrently for
// distinct tids in [0, threads).
//
// Invariants: Harris's (sorted, keys unique among unmarked nodes, a marked
// node's next never changes); Mirror's per field (patomic.h I1–I4). Any
// int64 is a key (no sentinel keys: the list hangs off a head link).
//
// Persistence invariants: a node is durable on rep_p before it is linked
// (Heap::make); every link is durable before it is visible (patomic P1).
// So every operation that completed is durable, and rep_p is always a
// Harris list (what a crash leaves).
//
// Recovery: pmem::Pool::open recovers the pool (the region is kept);
// List::attach rebuilds rep_v and the allocator by tracing from the head
// (internal/harris_table.h, §4.3.3). No repair is needed: marked nodes left
// in the list are unlinked by later searches, as at run time.
//
// For users. A set: no values, nothing reserved. Durability: every
// operation is durable when it returns (durable linearizability): a crash
// or an exit loses nothing completed. Threads: `threads` sizes DRAM only
// (EBR slots, free lists) — nothing per thread is in the pool — so attach
// takes any count >= 1, fewer or more than at creation; a tid must be
// below this run's count. open_or_create: attach also accepts create's
// arguments and ignores the creation-only ones (the root recorded them),
// so pmem::Pool::open_or_create<List>(name, threads[, replica_bytes])
// works.
// Capacity: no fixed capacity: replica_bytes is the size of each region of
// the heap's chain (mirror/heap.h, "Growth"); when the regions are used up
// the chain grows by one region, so only a full POOL throws
// pmem::PoolError(kFull), naming the pool's free space; nothing stored is
// lost (docs/mirror.md, "Growth").
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "ferrite/mirror/internal/harris_table.h"

namespace ferrite::mirror {

template <class C = Default>
class List : public internal::HarrisTable<C, 1> {
  using Base = internal::HarrisTable<C, 1>;

 public:
  // A fresh list under root `name`, with a region of `replica_bytes` per
  // replica (64 bytes per node).
  static std::unique_ptr<List> create(pmem::Pool& pool, std::string_view name, int threads,
                                      std::size_t replica_bytes = std::size_t{1} << 20) {
    return std::unique_ptr<List>(new List(pool, name, threads, replica_bytes));
  }
  // open_or_create's rule (pmem::Pool::open_or_create<T>(name, args...)):
  // attach accepts create's arguments and ignores the creation-only ones —
  // the region's size is the one the root recorded at creation
  // (heap().replica_bytes()). `threads` is DRAM-only (EBR slots, free
  // lists): any count >= 1 attaches, fewer or more than at creation.
  static std::unique_ptr<List> attach(pmem::Pool& pool, std::string_view name, int threads) {
    return std::unique_ptr<List>(new List(pool, name, threads));
  }
  static std::unique_ptr<List> attach(pmem::Pool& pool, std::string_view name, int threads,
                                   std::size_t /*replica_bytes: the root's*/) {
    return attach(pool, name, threads);
  }

  bool insert(std::int64_t key, int tid) { return this->list_->insert(this->heads_[0], key, tid); }
  bool remove(std::int64_t key, int tid) { return this->list_->remove(this->heads_[0], key, tid); }
  bool contains(std::int64_t key, int tid) { return this->list_->contains(this->heads_[0], key, tid); }

 private:
  List(pmem::Pool& pool, std::string_view name, int threads, std::size_t bytes) : Base(pool, name, threads, bytes, 1) {}
  List(pmem::Pool& pool, std::string_view name, int threads) : Base(pool, name, threads) {}
};

}  // namespace ferrite::mirror
