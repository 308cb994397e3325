// ferrite/montage/bytes_skip_map.h — nbMontage's ordered map of byte-string
// keys and values, with range scans (the ferrite::OrderedMap interface,
// ferrite/map.h).
//
// Papers: W. Cai et al., "Fast Nonblocking Persistence for Concurrent Data
// Structures", DISC 2021 (nbMontage: Fig. 1's API, Fig. 2's epoch system,
// §3.4's recovery, §5's skip list, whose evaluation stores real values in
// the payloads); the list is Herlihy–Shavit's lock-free skip list (The Art
// of Multiprocessor Programming §14.4, after Fraser) — skiplist.h, whose
// algorithm this map runs unchanged (SkipList<F, Bytes>: the key/value
// policy internal::KVPolicy<Bytes> of internal/bytes_payload.h, the same
// one the byte hash map uses).
//
// What it is. Keys and values are byte strings of 0 to
// pmem::kMaxPayloadBytes (16 MiB) bytes each, the empty string included (no
// reserved values). Each key present has ONE immutable payload block in the
// pool, {key length, value length, key bytes, value bytes}
// (internal/bytes_payload.h), made by EpochSys::pnew_bytes in the size class
// that holds it (epoch_sys.h "Size classes"). The DRAM index is the skip
// list: a tower holds its own copy of the key's bytes (a replace swaps the
// tower's payload, not the tower) and a `val` CASObj naming the payload.
// Keys are ordered as std::string_view compares them (bytes as unsigned,
// a prefix first).
//
// Operations (ferrite::OrderedMap): put (true: inserted; false: replaced),
// get (a copy, or a callback over the bytes in place, valid during the
// call), remove, contains, size (exact when no update runs), scan(t, lo,
// hi, fn): fn(key, value) for the keys in [lo, hi) in ascending order,
// views valid during the call, fn returning false stops it; scan_from(t,
// lo, fn), the same with no upper bound (iteration in key order); sync. Each
// update is one lin_CAS (skiplist.h's linearization points): a put of a
// present key swaps the tower's val from the old payload to the new one,
// detaching the old, so the new payload and the old one's anti-node commit
// together. A scan reads each key's val once (per-key linearizable, not a
// snapshot of the range: skiplist.h scan).
//
// Thread safety: every operation is safe concurrently from distinct thread
// handles (ids in [0, MapOptions::threads)); one handle, one thread at a time.
//
// Invariants: skiplist.h K1–K3; B1 a payload is written only between its
// pnew and its operation's lin_CAS (constraint 3), then only read; B2 a
// payload is read only under an epoch pin by a thread that reached it
// through a tower's val, and returned to the allocator only after EBR's
// grace period (pdelete, then the epoch system's delay P4) — never while a
// reader or a recovery may still need it. B3 a tower's key bytes are its
// own (DRAM), freed with the tower by EBR.
//
// Persistence (guarantee: buffered durably linearizable). A payload's every
// byte is written back by the epoch system with the block, from the
// to-be-persisted buffer of the epoch its lin_CAS tagged it in, before that
// epoch can become recoverable (epoch_sys.h P1, P5); the map writes nothing
// else to the pool and issues no persistence instruction of its own. A
// crash loses at most the operations of the last two epochs; sync() makes
// every operation that returned before it durable; a clean close or
// destruction syncs (EpochSys's destructor runs sync(), also through a
// std::unique_ptr at a normal exit; abandon() skips it).
//
// Recovery (attach). The epoch system's scan (§3.4) returns the payloads in
// use — at most one per key — and each is validated by the calling thread
// (its lengths must add up to its block's size: else PoolError(kCorrupt)
// naming the block) before the index is rebuilt from them: sorted by key,
// towers linked level by level (skiplist.h rebuild). Nothing is written but
// the epoch system's resets, so a crash during recovery recovers the same.
//
// Limits. A key or value over pmem::kMaxPayloadBytes throws
// PoolError(kInvalidArgument) naming its size and the limit; a full pool
// throws PoolError(kFull) from put before the put changes anything (its
// payload and the anti-node a replace needs are allocated first).
// MapOptions::buckets does not apply (no table).
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
#include "ferrite/montage/skiplist.h"

namespace ferrite::montage {

template <unsigned F = fault::kNone>
class BytesSkipMap {
 public:
  using List = SkipList<F, Bytes>;
  using Sys = typename List::Sys;
  static constexpr std::size_t kMaxKeyBytes = pmem::kMaxPayloadBytes;
  static constexpr std::size_t kMaxValueBytes = pmem::kMaxPayloadBytes;

  // create and attach take the same arguments (Pool::open_or_create).
  // MapOptions::threads is the thread capacity (recorded in the root:
  // attach for more throws std::invalid_argument); the epoch options are
  // this run's.
  static std::unique_ptr<BytesSkipMap> create(pmem::Pool& pool, std::string_view name, const MapOptions& mo = {},
                                              const EpochOptions& eo = {}) {
    return std::unique_ptr<BytesSkipMap>(new BytesSkipMap(List::create(pool, name, mo.threads, {}, eo)));
  }
  static std::unique_ptr<BytesSkipMap> attach(pmem::Pool& pool, std::string_view name, const MapOptions& mo = {},
                                              const EpochOptions& eo = {}, RecoveryStats* stats = nullptr) {
    return std::unique_ptr<BytesSkipMap>(new BytesSkipMap(List::attach(pool, name, mo.threads, {}, eo, stats)));
  }

  // ferrite::OrderedMap, by thread handle.
  bool put(const Thread& t, std::string_view key, std::string_view value) { return put(t.id(), key, value); }
  std::optional<std::string> get(const Thread& t, std::string_view key) { return get(t.id(), key); }
  template <class Fn>
  bool get(const Thread& t, std::string_view key, Fn&& fn) {
    return get(t.id(), key, std::forward<Fn>(fn));
  }
  bool remove(const Thread& t, std::string_view key) { return remove(t.id(), key); }
  bool contains(const Thread& t, std::string_view key) { return contains(t.id(), key); }
  template <class Fn>
  void scan(const Thread& t, std::string_view lo, std::string_view hi, Fn&& fn) {
    scan(t.id(), lo, hi, std::forward<Fn>(fn));
  }
  // Every key >= lo in key order (no upper bound), until fn returns false.
  template <class Fn>
  void scan_from(const Thread& t, std::string_view lo, Fn&& fn) {
    scan_from(t.id(), lo, std::forward<Fn>(fn));
  }

  // The same by raw thread id (adapters, benchmarks).
  bool put(int tid, std::string_view key, std::string_view value) {
    return list_->put_with(tid, key, value, [](std::string_view) {});
  }
  std::optional<std::string> get(int tid, std::string_view key) {
    std::optional<std::string> out;
    list_->get_with(tid, key, [&](std::string_view v) { out.emplace(v); });
    return out;
  }
  template <class Fn>
  bool get(int tid, std::string_view key, Fn&& fn) {
    return list_->get_with(tid, key, [&](std::string_view v) { fn(v); });
  }
  bool remove(int tid, std::string_view key) {
    return list_->erase_with(tid, key, [](std::string_view) {});
  }
  bool contains(int tid, std::string_view key) {
    return list_->get_with(tid, key, [](std::string_view) {});
  }
  // fn(std::string_view key, std::string_view value) -> bool (false stops).
  template <class Fn>
  void scan(int tid, std::string_view lo, std::string_view hi, Fn&& fn) {
    list_->scan(tid, lo, hi, [&](std::string_view k, std::string_view v) { return static_cast<bool>(fn(k, v)); });
  }
  template <class Fn>
  void scan_from(int tid, std::string_view lo, Fn&& fn) {
    list_->scan_from(tid, lo, [&](std::string_view k, std::string_view v) { return static_cast<bool>(fn(k, v)); });
  }

  // put and remove that hand the old value to fn (a view, valid during
  // the call): put returns true if it inserted (fn not called), remove
  // false if the key was absent.
  template <class Fn>
  bool put(int tid, std::string_view key, std::string_view value, Fn&& fn) {
    return list_->put_with(tid, key, value, [&](std::string_view v) { fn(v); });
  }
  template <class Fn>
  bool remove(int tid, std::string_view key, Fn&& fn) {
    return list_->erase_with(tid, key, [&](std::string_view v) { fn(v); });
  }

  // Exact when no update runs concurrently.
  std::size_t size() const { return list_->size(); }
  void sync() { list_->sync(); }
  // A simulated crash for tests: destruction then syncs nothing.
  void abandon() { list_->abandon(); }
  Sys& epochs() { return list_->epochs(); }

  // (key, value) copies in key order, by a walk of level 0 (quiescent only).
  std::vector<std::pair<std::string, std::string>> contents() {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [k, v] : list_->contents()) out.emplace_back(std::string(k), std::string(v));
    return out;
  }

 private:
  explicit BytesSkipMap(std::unique_ptr<List> l) : list_(std::move(l)) {}
  std::unique_ptr<List> list_;
};

static_assert(ferrite::OrderedMap<BytesSkipMap<>>);

}  // namespace ferrite::montage
