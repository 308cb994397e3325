// ferrite/baselines/pmdk_hashmap.h — "pmdk-hashmap": a chained hash table
// (a set and a map of int64 keys to int64 values) whose every update is one
// PMDK libpmemobj undo-log transaction (https://pmem.io/pmdk/, Debian
// libpmemobj 1.12; PMDK is archived upstream). What was built, since
// pmemkv's concurrent engine (cmap) is archived too and not in Debian: a
// fixed array of bucket heads (PMEMoid) and singly linked chains of
// {next, key, value} nodes, unsorted (new nodes at the chain's head); no
// resizing (one bucket per key of the bench's key range, load factor 1, as
// the other hash maps measured).
//
// One operation = at most one transaction:
//   insert / put of an absent key  pmemobj_tx_alloc(node), fill it,
//                                  pmemobj_tx_add_range_direct(bucket head),
//                                  head = node, commit;
//   put of a present key           add_range(node->value), value = v, commit;
//   remove / erase                 add_range(predecessor link), unlink,
//                                  pmemobj_tx_free(node), commit;
//   contains / get                 no transaction.
// Concurrency: PMDK transactions are per thread and give no isolation, so
// each operation holds the lock of its bucket's stripe (kStripes DRAM
// mutexes, bucket i -> stripe i % kStripes) for the whole operation; two
// operations on different stripes touch disjoint data (their chains) and
// PMDK's allocator is thread safe. Values are 8 bytes (the bench's
// --value-size is ignored, as for the other hash maps).
//
// The table lives in its own pmemobj pool file (not a Ferrite pool):
// <dir>/ferrite-pmdk-hashmap-<pid>-<n>.pool, removed by the destructor.
// Persistence is entirely PMDK's (libpmem's flushes and fences), which
// Ferrite's persist counters do not see and its crash simulator cannot
// model: crash consistency rests on PMDK's transactions, not on a Ferrite
// campaign.
//
// Thread safety: every operation may be called concurrently.
// Errors: a PMDK failure throws std::runtime_error with pmemobj_errormsg().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ferrite::baselines {

class PmdkHashMap {
 public:
  static constexpr std::size_t kStripes = 1024;

  // `buckets` >= 1; `pool_size` 0: sized for `buckets` keys.
  PmdkHashMap(const std::string& dir, std::uint64_t buckets, std::size_t pool_size = 0);
  ~PmdkHashMap();
  PmdkHashMap(const PmdkHashMap&) = delete;
  PmdkHashMap& operator=(const PmdkHashMap&) = delete;

  // set
  bool insert(std::int64_t key);
  bool remove(std::int64_t key);
  bool contains(std::int64_t key);
  // map: put -> old value | nullopt (inserted); get; erase -> old | nullopt
  std::optional<std::int64_t> put(std::int64_t key, std::int64_t value);
  std::optional<std::int64_t> get(std::int64_t key);
  std::optional<std::int64_t> erase(std::int64_t key);

  // (key, value) pairs, sorted. Not concurrent with updates.
  std::vector<std::pair<std::int64_t, std::int64_t>> items();
  const std::string& path() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ferrite::baselines
