// ferrite/montage/bytes_hash_map.h — nbMontage's hash map of byte-string
// keys and values (the ferrite::Map interface, ferrite/map.h).
//
// Papers: W. Cai et al., "Fast Nonblocking Persistence for Concurrent Data
// Structures", DISC 2021 (nbMontage: Fig. 1's API, Fig. 2's epoch system,
// §3.4's recovery; Fig. 7 builds a map on it the same way); the table is
// the Shalev–Shavit split-ordered resizable hash table (JACM 2006, Figs.
// 4–5) over Michael's lock-free list (SPAA 2002) — split_ordered.h, whose
// algorithm this map runs unchanged (SplitOrderedMap<F, Bytes>).
//
// What it is. Keys and values are byte strings of 0 to
// pmem::kMaxPayloadBytes (16 MiB) bytes each, the empty string included (no
// reserved values). Each key present has ONE immutable payload block in the
// pool, {key length, value length, key bytes, value bytes}
// (internal/bytes_payload.h), made by EpochSys::pnew_bytes in the size class
// that holds it (64 B up to 40 MiB blocks: epoch_sys.h "Size classes"). The
// DRAM index is the split-ordered list: a node holds the key's 63-bit hash
// (its split-order key) and a view of the key's bytes in its payload;
// comparing keys reads the payload (under the caller's epoch pin). The table
// starts with MapOptions::buckets buckets and doubles past two keys per
// bucket: no capacity to guess.
//
// Operations (ferrite::Map): put (true: inserted; false: replaced), get (a
// copy, or a callback over the bytes in place, valid during the call),
// remove, contains, size (exact when no update runs), sync. Each update is
// one lin_CAS (split_ordered.h's linearization points): a put of a present
// key marks the old node and links the new one in ONE CAS, detaching the old
// payload, so the new payload and the old one's anti-node commit together.
//
// Thread safety: every operation is safe concurrently from distinct thread
// handles (ids in [0, MapOptions::threads)); one handle, one thread at a time.
//
// Invariants: split_ordered.h S1–S4; B1 a payload is written only between
// its pnew and its operation's lin_CAS (constraint 3), then only read; B2 a
// payload is read only under an epoch pin by a thread that reached it through
// a node, and returned to the allocator only by EBR's free of that node
// (pdelete, then the epoch system's delay P4) — never while a reader or a
// recovery may still need it.
//
// Persistence (guarantee: buffered durably linearizable). A payload's every
// byte is written back by the epoch system with the block, from the
// to-be-persisted buffer of the epoch its lin_CAS tagged it in, before that
// epoch can become recoverable (epoch_sys.h P1, P5); the map writes nothing
// else to the pool. A crash loses at most the operations of the last two
// epochs; sync() makes every operation that returned before it durable; a
// clean close or destruction syncs (EpochSys's destructor runs sync(),
// also through a std::unique_ptr at a normal exit; abandon() skips it).
//
// Recovery (attach). The epoch system's scan (§3.4) returns the payloads in
// use — at most one per key — each validated (its lengths must add up to its
// block's size: else PoolError(kCorrupt) naming the block); the index is
// rebuilt from them (split_ordered.h rebuild). Nothing is written but the
// epoch system's resets, so a crash during recovery recovers the same.
//
// Limits. A key or value over pmem::kMaxPayloadBytes throws
// PoolError(kInvalidArgument) naming its size and the limit; a full pool
// throws PoolError(kFull) from put before the put changes anything (its
// payload and the anti-node a replace needs are allocated first). Blocks
// are never returned to the heap (slabs stay the epoch system's; free
// blocks are reused within their size class).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferrite/map.h"
#include "ferrite/montage/epoch_sys.h"
#include "ferrite/montage/internal/bytes_payload.h"
#include "ferrite/montage/split_ordered.h"

namespace ferrite::montage {

template <unsigned F = fault::kNone>
class BytesHashMap {
 public:
  using Table = SplitOrderedMap<F, Bytes>;
  using Sys = typename Table::Sys;
  static constexpr std::size_t kMaxKeyBytes = pmem::kMaxPayloadBytes;
  static constexpr std::size_t kMaxValueBytes = pmem::kMaxPayloadBytes;

  // create and attach take the same arguments (Pool::open_or_create).
  // MapOptions::threads is the thread capacity (recorded in the root:
  // attach for more throws std::invalid_argument), ::buckets the initial
  // table; the epoch options are this run's.
  static std::unique_ptr<BytesHashMap> create(pmem::Pool& pool, std::string_view name, const MapOptions& mo = {},
                                              const EpochOptions& eo = {}) {
    return std::unique_ptr<BytesHashMap>(new BytesHashMap(Table::create(pool, name, mo.threads, options(mo), eo)));
  }
  static std::unique_ptr<BytesHashMap> attach(pmem::Pool& pool, std::string_view name, const MapOptions& mo = {},
                                              const EpochOptions& eo = {}, RecoveryStats* stats = nullptr) {
    return std::unique_ptr<BytesHashMap>(
        new BytesHashMap(Table::attach(pool, name, mo.threads, options(mo), eo, stats)));
  }

  // ferrite::Map, by thread handle.
  bool put(const Thread& t, std::string_view key, std::string_view value) { return put(t.id(), key, value); }
  std::optional<std::string> get(const Thread& t, std::string_view key) { return get(t.id(), key); }
  template <class Fn>
  bool get(const Thread& t, std::string_view key, Fn&& fn) {
    return get(t.id(), key, std::forward<Fn>(fn));
  }
  bool remove(const Thread& t, std::string_view key) { return remove(t.id(), key); }
  bool contains(const Thread& t, std::string_view key) { return contains(t.id(), key); }

  // The same by raw thread id (adapters, benchmarks).
  bool put(int tid, std::string_view key, std::string_view value) {
    return table_->put_with(tid, key, value, [](std::string_view) {});
  }
  std::optional<std::string> get(int tid, std::string_view key) {
    std::optional<std::string> out;
    table_->get_with(tid, key, [&](std::string_view v) { out.emplace(v); });
    return out;
  }
  template <class Fn>
  bool get(int tid, std::string_view key, Fn&& fn) {
    return table_->get_with(tid, key, [&](std::string_view v) { fn(v); });
  }
  bool remove(int tid, std::string_view key) {
    return table_->erase_with(tid, key, [](std::string_view) {});
  }
  bool contains(int tid, std::string_view key) {
    return table_->get_with(tid, key, [](std::string_view) {});
  }

  // put and remove that hand the old value to fn (a view, valid during
  // the call): put returns true if it inserted (fn not called), remove
  // false if the key was absent.
  template <class Fn>
  bool put(int tid, std::string_view key, std::string_view value, Fn&& fn) {
    return table_->put_with(tid, key, value, [&](std::string_view v) { fn(v); });
  }
  template <class Fn>
  bool remove(int tid, std::string_view key, Fn&& fn) {
    return table_->erase_with(tid, key, [&](std::string_view v) { fn(v); });
  }

  // Exact when no update runs concurrently.
  std::size_t size() const { return static_cast<std::size_t>(std::max<std::int64_t>(0, table_->approximate_size())); }
  void sync() { table_->sync(); }
  // A simulated crash for tests: destruction then syncs nothing.
  void abandon() { table_->abandon(); }
  Sys& epochs() { return table_->epochs(); }
  std::uint64_t bucket_count() const { return table_->bucket_count(); }

  // (key, value) copies sorted by key (quiescent only).
  std::vector<std::pair<std::string, std::string>> contents() {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [k, v] : table_->contents()) out.emplace_back(std::string(k), std::string(v));
    return out;
  }
  // split_ordered.h S1, S2 (quiescent only): "" if they hold.
  std::string check_index() { return table_->check_index(); }

 private:
  explicit BytesHashMap(std::unique_ptr<Table> t) : table_(std::move(t)) {}
  static SplitOrderedOptions options(const MapOptions& mo) {
    SplitOrderedOptions so;
    so.initial_buckets = mo.buckets;
    so.max_load = 2;
    return so;
  }
  std::unique_ptr<Table> table_;
};

static_assert(ferrite::Map<BytesHashMap<>>);

}  // namespace ferrite::montage
