// ferrite/mirror/hash_map.h — mirror::HashMap: a durable hash table of
// Harris lists (PLDI 2021 §6: "A Hash-Table, (based on Harris et al.'s
// [21] with a linked-list in every bucket)"), as a set and as a map.
//
// A fixed array of buckets, each the head link of a Harris list
// (mirror/harris_list.h), made persistent by Mirror with no change to the
// algorithm but the types. Keys are spread by splitmix64's finalizer.
// Set operations are Harris's; map operations (put/get/erase) are the
// value-CAS extension described in harris_list.h (a value of kTombstone,
// INT64_MIN, is reserved: it marks an erased key).
//
// Thread safety: every operation is lock-free, safe concurrently for
// distinct tids in [0, threads). Use one HashMap either as a set or as a map.
//
// Persistence and recovery: as mirror/list.h, per bucket. The bucket array
// is one Mirror object (created once, never freed), traced first.
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
#include <string_view>

#include "ferrite/mirror/internal/harris_table.h"

namespace ferrite::mirror {

template <class C = Default>
class HashMap : public internal::HarrisTable<C, 2> {
  using Base = internal::HarrisTable<C, 2>;

 public:
  // A fresh table under root `name`: `buckets` lists, a region of
  // `replica_bytes` per replica (64 bytes per node, 16 per bucket).
  static std::unique_ptr<HashMap> create(pmem::Pool& pool, std::string_view name, int threads,
                                         std::uint64_t buckets = 1024, std::size_t replica_bytes = std::size_t{1} << 20) {
    return std::unique_ptr<HashMap>(new HashMap(pool, name, threads, replica_bytes, buckets));
  }
  // open_or_create's rule (pmem::Pool::open_or_create<T>(name, args...)):
  // attach accepts create's arguments and ignores the creation-only ones —
  // the bucket count and the region's size are the ones the root
  // recorded at creation (buckets(), heap().replica_bytes()). `threads` is DRAM-only (EBR slots, free
  // lists): any count >= 1 attaches, fewer or more than at creation.
  static std::unique_ptr<HashMap> attach(pmem::Pool& pool, std::string_view name, int threads) {
    return std::unique_ptr<HashMap>(new HashMap(pool, name, threads));
  }
  static std::unique_ptr<HashMap> attach(pmem::Pool& pool, std::string_view name, int threads,
                                         std::uint64_t /*buckets: the root's*/, std::size_t /*replica_bytes: the root's*/) {
    return attach(pool, name, threads);
  }

  // set
  bool insert(std::int64_t key, int tid) { return this->list_->insert(head(key), key, tid); }
  bool remove(std::int64_t key, int tid) { return this->list_->remove(head(key), key, tid); }
  bool contains(std::int64_t key, int tid) { return this->list_->contains(head(key), key, tid); }
  // map: put -> old value | nullopt (inserted); get; erase -> old | nullopt
  // put refuses the reserved value kTombstone (INT64_MIN): std::invalid_argument.
  std::optional<std::int64_t> put(std::int64_t key, std::int64_t value, int tid) {
    return this->list_->put(head(key), key, check_value(value, "mirror::HashMap"), tid);
  }
  std::optional<std::int64_t> get(std::int64_t key, int tid) { return this->list_->get(head(key), key, tid); }
  std::optional<std::int64_t> erase(std::int64_t key, int tid) { return this->list_->erase(head(key), key, tid); }

 private:
  HashMap(pmem::Pool& pool, std::string_view name, int threads, std::size_t bytes, std::uint64_t buckets)
      : Base(pool, name, threads, bytes, buckets) {}
  HashMap(pmem::Pool& pool, std::string_view name, int threads) : Base(pool, name, threads) {}

  typename Base::Link& head(std::int64_t key) {
    auto x = static_cast<std::uint64_t>(key);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return this->heads_[x % this->n_];
  }
};

}  // namespace ferrite::mirror
