// ferrite/baselines/pmdk_tx.h — "pmdk-tx": the sequential stack, queue,
// bounded min-heap and AtomicFloat written with PMDK libpmemobj undo-log
// transactions (https://pmem.io/pmdk/, Debian libpmemobj 1.12; PMDK is
// archived upstream). One operation per transaction (pmemobj_tx_begin /
// pmemobj_tx_add_range_direct / pmemobj_tx_alloc / pmemobj_tx_free /
// pmemobj_tx_commit / pmemobj_tx_end), serialized by a std::mutex (a
// transaction is per-thread; isolation between threads is the caller's job).
//
// The structure lives in its own pmemobj pool file (not a Ferrite pool):
// <dir>/ferrite-pmdk-<pid>-<n>.pool, removed by the destructor.
//
// Persistence is entirely PMDK's: its flushes and fences are its own
// (libpmem's), so Ferrite's persist counters do not see them and the crash
// simulator cannot model them. pmdk-tx is crash-tested by PMDK's own
// guarantees (failure-atomic transactions), not by Ferrite campaigns.
//
// Thread safety: apply() may be called concurrently (one mutex).
// Errors: a PMDK failure throws std::runtime_error with pmemobj_errormsg().
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ferrite::baselines {

class PmdkTx {
 public:
  enum class Kind { kStack, kQueue, kHeap, kFloat };
  // value_size: payload bytes per node (>= 8); heap_capacity: heap keys.
  PmdkTx(const std::string& dir, Kind kind, std::size_t value_size = 8, int heap_capacity = 1024,
         std::size_t pool_size = std::size_t{256} << 20);
  ~PmdkTx();
  PmdkTx(const PmdkTx&) = delete;
  PmdkTx& operator=(const PmdkTx&) = delete;

  // insert: push / enqueue / heap insert / float mul by bit_cast<double>(arg)
  // (returns the old value's bits); remove: pop / dequeue / delete-min /
  // float read. Returns whether *out holds a value.
  bool apply(bool insert, std::int64_t arg, std::int64_t* out);
  std::vector<std::int64_t> snapshot();
  const std::string& path() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// "libpmemobj 1.12.x" from the library itself (pmemobj_check_version).
std::string pmdk_version();

}  // namespace ferrite::baselines
