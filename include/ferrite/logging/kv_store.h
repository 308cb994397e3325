// ferrite/logging/kv_store.h — the StrandWeaver paper's N-Store workloads
// (Table II: 90/10, 50/50, 10/90 read/write key-value workloads driven by
// YCSB) as a persistent structure on the failure-atomic logging library
// (logging/undo_log.h).
//
// What it is. An N-Store-like table (Joy Arulraj, Andrew Pavlo, Subramanya
// R. Dulloor, "Let's Talk About Storage & Recovery Methods for Non-Volatile
// Memory Database Systems", SIGMOD 2015: its in-place-update engine with an
// undo log — the engine the StrandWeaver paper modified, §VI): tuples of
// kFields 8-byte fields (YCSB's record, scaled down) indexed by a chained
// hash table, buckets striped over 16 locks. A YCSB read returns the
// tuple's first field; a YCSB update rewrites every field of the tuple in
// one failure-atomic region (kFields logged stores: a torn update is
// visible as fields that disagree); an insert links a new tuple; an erase
// unlinks one. The read/write mixes are the benchmark's get:put ratios
// (`ferrite bench --mix 90:10:0`, `50:50:0`, `10:90:0` over a prefilled
// key range) and the crash workload's default map mix. Paper: Vaibhav
// Gogte et al., "Relaxed Persist Ordering Using Strand Persistency", ISCA
// 2020, Table II.
//
// Thread safety: every member may be called concurrently with distinct tids.
// Invariants (between regions): field f of a tuple holding value v is
// field_value(v, f); keys are unique.
// Persistence: put and erase are failure-atomic and durable when they
// return (undo_log.h P1-P3); a new tuple is initialised with unlogged
// stores (Logger::init), an unlinked one retired.
// Recovery: the root hook runs logging::recover_area, then traces the
// rolled-back table.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "ferrite/logging/workloads.h"

namespace ferrite::logging {

class LoggedKvStore {
 public:
  static constexpr int kLocks = 16;
  static constexpr int kFields = 4;
  struct Tuple {
    std::int64_t key;
    std::int64_t fields[kFields];
    Tuple* next;
  };
  struct Root {
    static constexpr std::uint32_t kTypeTag = 0x4C47'4B56;  // "LGKV"
    static constexpr std::uint32_t kTypeVersion = 1;
    static constexpr const char* kTypeName = "logging::LoggedKvStore";
    LogArea log{};
    alignas(64) Tuple** buckets = nullptr;  // set once, after the array is durable
    std::uint64_t nbuckets = 0;
  };
  static_assert(offsetof(Root, log) == 0);
  static_assert(offsetof(Root, buckets) == 576);
  static_assert(offsetof(Root, nbuckets) == 584);
  static_assert(sizeof(Tuple) == 8 * (kFields + 2));

  // What field f holds when the tuple's value is v.
  static constexpr std::int64_t field_value(std::int64_t v, int f) {
    return f == 0 ? v : static_cast<std::int64_t>(static_cast<std::uint64_t>(v) * 0x9E3779B97F4A7C15ull + f);
  }

  LoggedKvStore(pmem::Pool& pool, std::string_view name, int threads, const LoggerOptions& opt,
                std::uint64_t nbuckets = 64)
      : root_(pool.has_root(name) ? pool.root<Root>(name) : pool.create_root<Root>(name)),
        log_(pool, &root_->log, threads, opt) {
    if (root_->buckets == nullptr) {
      // CRASH: as LoggedMap: a crash before the pointer is durable leaves it
      // null, and the next attach allocates again.
      const std::uint64_t nb = std::bit_ceil(std::max<std::uint64_t>(nbuckets, kLocks));
      auto** b = static_cast<Tuple**>(pool.heap().alloc(nb * sizeof(Tuple*), 0));
      std::memset(static_cast<void*>(b), 0, nb * sizeof(Tuple*));
      persist::pwb(b, nb * sizeof(Tuple*));
      persist::store(&root_->nbuckets, nb);
      persist::pwb(&root_->nbuckets, sizeof nb);
      // ORDER: the zeroed array and its size before the pointer to it.
      persist::psync();
      persist::store(&root_->buckets, b);
      persist::pwb(&root_->buckets, sizeof b);
      persist::psync();
    }
  }

  // YCSB update (every field rewritten) or insert: the old value if present.
  std::optional<std::int64_t> put(int tid, std::int64_t k, std::int64_t v) {
    const std::uint64_t b = bucket(k);
    Region r(log_, tid, lock_of(b));
    Tuple** slot = &root_->buckets[b];
    for (Tuple* t = *slot; t != nullptr; t = t->next) {
      if (t->key != k) continue;
      const std::int64_t old = t->fields[0];
      for (int f = 0; f < kFields; ++f) {
        // CRASH: a crash between two fields leaves a torn tuple; the undo
        // entries of the stored ones are durable first (P1), so recovery
        // restores the old tuple whole.
        log_.write(tid, &t->fields[f], field_value(v, f));
      }
      r.end();
      return old;
    }
    auto* t = static_cast<Tuple*>(log_.alloc(tid, sizeof(Tuple)));
    log_.init(tid, &t->key, k);
    for (int f = 0; f < kFields; ++f) log_.init(tid, &t->fields[f], field_value(v, f));
    log_.init(tid, &t->next, *slot);
    log_.write(tid, slot, t);
    r.end();
    return std::nullopt;
  }
  std::optional<std::int64_t> erase(int tid, std::int64_t k) {
    const std::uint64_t b = bucket(k);
    Region r(log_, tid, lock_of(b));
    Tuple** link = &root_->buckets[b];
    for (Tuple* t = *link; t != nullptr; link = &t->next, t = t->next) {
      if (t->key != k) continue;
      const std::int64_t old = t->fields[0];
      log_.write(tid, link, t->next);
      log_.retire(tid, t);
      r.end();
      return old;
    }
    r.end();
    return std::nullopt;
  }
  // YCSB read: the tuple's first field.
  std::optional<std::int64_t> get(int, std::int64_t k) {
    const std::uint64_t b = bucket(k);
    Lock& l = lock_of(b);
    l.lock_for_read();
    std::optional<std::int64_t> out;
    for (Tuple* t = root_->buckets[b]; t != nullptr; t = t->next)
      if (t->key == k) {
        out = t->fields[0];
        break;
      }
    l.unlock_for_read();
    return out;
  }
  // (key, value) pairs sorted by key; `torn` (if given) counts tuples whose
  // fields disagree (a torn update).
  std::vector<std::pair<std::int64_t, std::int64_t>> items(std::size_t* torn = nullptr) {
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    std::size_t bad = 0;
    for (auto& l : locks_) l.lock_for_read();
    for (std::uint64_t b = 0; b < root_->nbuckets; ++b)
      for (Tuple* t = root_->buckets[b]; t != nullptr; t = t->next) {
        out.emplace_back(t->key, t->fields[0]);
        for (int f = 1; f < kFields; ++f)
          if (t->fields[f] != field_value(t->fields[0], f)) {
            ++bad;
            break;
          }
      }
    for (auto& l : locks_) l.unlock_for_read();
    std::sort(out.begin(), out.end());
    if (torn != nullptr) *torn = bad;
    return out;
  }
  Logger& logger() { return log_; }

  static void recover_root(pmem::Pool&, Root* r, const std::function<void(void*)>& mark) {
    recover_area(&r->log);
    mark_area(&r->log, mark);
    if (r->buckets == nullptr) return;
    mark(r->buckets);
    for (std::uint64_t b = 0; b < r->nbuckets; ++b)
      for (Tuple* t = r->buckets[b]; t != nullptr; t = t->next) mark(t);
  }

 private:
  std::uint64_t bucket(std::int64_t k) const {
    auto h = static_cast<std::uint64_t>(k) * 0x9E3779B97F4A7C15ull;
    return (h >> 32) & (root_->nbuckets - 1);
  }
  Lock& lock_of(std::uint64_t b) { return locks_[b % kLocks]; }

  Root* root_;
  Logger log_;
  Lock locks_[kLocks];
};

inline const bool kLoggedKvStoreRootRegistered =
    pmem::register_root_type<LoggedKvStore::Root>(&LoggedKvStore::recover_root);

}  // namespace ferrite::logging
