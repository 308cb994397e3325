// ferrite/logging/workloads.h — persistent structures written with the
// failure-atomic logging library (logging/undo_log.h): the workloads of the
// StrandWeaver paper's Table II that are structures (queue, hash map).
//
// What they are. Sequential structures in the pool made concurrent by
// logging::Locks, each operation one failure-atomic region in the Logger's
// language: a transaction (txn_begin/txn_end inside the lock), an ATLAS
// outermost critical section (the lock), or the SFR between the lock's
// acquire and release. Every in-place store is a Logger::write (undo entry,
// ordering, store: the instrumentation of the Logger's persistency model);
// stores to blocks allocated in the region are Logger::init; unlinked blocks
// are retired and freed when the region is pruned.
//
//   LoggedQueue  head/tail list, one lock (the StrandWeaver paper's Queue).
//   LoggedMap    chained hash table, buckets striped over 16 locks
//                (HashMap); a read takes the lock without logging (it stores
//                nothing, so it has nothing to undo or to order). The table
//                is LoggedHashTable<Traits>, which the N-Store-like store
//                (kv_store.h) shares with a multi-field payload.
//
// Thread safety: every member may be called concurrently with distinct tids.
// Invariants: those of a singly linked list / chained table, between regions.
// Persistence: failure atomicity per operation (undo_log.h P1-P3); an
// operation is durable when it returns.
// Recovery: the root hook runs logging::recover_area (rolls back the
// regions a crash left incomplete) and then traces the rolled-back
// structure, so blocks of undone insertions are freed and blocks of undone
// removals are kept.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "ferrite/logging/undo_log.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"

namespace ferrite::logging {

// One operation = one failure-atomic region in the logger's language,
// holding one lock or several (acquired in the order given, which the
// caller keeps global to avoid deadlock; released in reverse). Under ATLAS
// the first acquire begins the outermost section and the last release ends
// it; under SFR each acquire / release ends the current SFR, so the stores
// made while every lock is held form one SFR.
//
// Inside a Group of the same thread (several operations in one region) a
// Region is nested: its locks must be the group's, and it takes, begins,
// ends and releases nothing.
class Region {
 public:
  static constexpr int kMaxLocks = 8;
  Region(Logger& lg, int tid, Lock& l) : Region(lg, tid, {&l}) {}
  Region(Logger& lg, int tid, std::initializer_list<Lock*> locks) : lg_(lg), tid_(tid) {
    if (lg_.grouped(tid_)) {
      for (Lock* l : locks)
        if (l != nullptr && !lg_.group_holds(tid_, l))
          throw std::logic_error("logging::Region: a lock its enclosing Group does not hold");
      done_ = true;  // nested: the group ends the region
      return;
    }
    // Before taking any lock, so the other threads can run (undo_log.h,
    // Logger::make_room).
    lg_.make_room(tid_);
    for (Lock* l : locks) {
      if (l == nullptr) continue;  // a lock named twice is passed once and then null
      if (n_ == kMaxLocks) throw std::length_error("logging::Region: more than 8 locks");
      locks_[n_++] = l;
    }
    for (int i = 0; i < n_; ++i) lg_.acquire(tid_, *locks_[i]);
    if (lg_.language() == Language::kTxn) lg_.txn_begin(tid_);
  }
  // Ends the region explicitly (txn_end may throw; a destructor must not).
  void end() {
    if (done_) return;
    done_ = true;
    // A full log rolled the region back and released its locks (LogFull).
    if (lg_.rolled_back(tid_)) return;
    if (lg_.language() == Language::kTxn) lg_.txn_end(tid_);
    for (int i = n_ - 1; i >= 0; --i) lg_.release(tid_, *locks_[i]);
  }
  // On an exception (an allocation failed before any store) the region
  // ends here; after LogFull it was rolled back and ends nothing. An
  // exception from ending it is dropped (a full log in a region that
  // handed a lock over: the region stays open and a crash would undo it).
  ~Region() {
    try {
      end();
    } catch (...) {
    }
  }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

 private:
  Logger& lg_;
  int tid_;
  Lock* locks_[kMaxLocks] = {};
  int n_ = 0;
  bool done_ = false;
};

// Several operations of one thread in one failure-atomic region: takes
// every lock the operations will take (any order, repeats allowed; taken in
// address order, the global order of every structure here: a stripe array
// is in address order, TPC-C's district locks precede its stock locks),
// begins the region (a transaction; the outermost ATLAS section; under SFR
// the operations' stores form one SFR, between the last acquire and the
// first release), and makes the operations' Regions and ReadLocks nest
// until end(). The StrandWeaver paper's Figure 10 (operations per SFR).
// ORDER: address order is the order every Region of these structures uses
// (a Region with two locks of one structure sorts them so), so a group
// deadlocks with no other thread's region or group.
class Group {
 public:
  Group(Logger& lg, int tid, std::vector<Lock*> locks) : lg_(lg), tid_(tid), locks_(std::move(locks)) {
    if (lg_.grouped(tid_)) throw std::logic_error("logging::Group: nested group");
    std::erase(locks_, nullptr);
    std::sort(locks_.begin(), locks_.end(), std::less<Lock*>());
    locks_.erase(std::unique(locks_.begin(), locks_.end()), locks_.end());
    lg_.make_room(tid_);
    for (Lock* l : locks_) lg_.acquire(tid_, *l);
    if (lg_.language() == Language::kTxn) lg_.txn_begin(tid_);
    lg_.set_group(tid_, &locks_);
  }
  void end() {
    if (done_) return;
    done_ = true;
    lg_.set_group(tid_, nullptr);
    if (lg_.rolled_back(tid_)) return;  // LogFull: rolled back, locks released
    if (lg_.language() == Language::kTxn) lg_.txn_end(tid_);
    for (auto it = locks_.rbegin(); it != locks_.rend(); ++it) lg_.release(tid_, **it);
  }
  ~Group() {
    try {
      end();
    } catch (...) {
    }
  }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

 private:
  Logger& lg_;
  int tid_;
  std::vector<Lock*> locks_;
  bool done_ = false;
};

// A read-only critical section on `l` (Lock::lock_for_read), or nothing
// inside a Group of the thread that holds it.
class ReadLock {
 public:
  ReadLock(Logger& lg, int tid, Lock& l) : l_(lg.group_holds(tid, &l) ? nullptr : &l) {
    if (l_ != nullptr) l_->lock_for_read();
  }
  ~ReadLock() {
    if (l_ != nullptr) l_->unlock_for_read();
  }
  ReadLock(const ReadLock&) = delete;
  ReadLock& operator=(const ReadLock&) = delete;

 private:
  Lock* l_;
};

// ------------------------------------------------------------------ queue

class LoggedQueue {
 public:
  struct Node {
    std::int64_t value;
    Node* next;
  };
  struct Root {
    static constexpr std::uint32_t kTypeTag = 0x4C47'5155;  // "LGQU"
    static constexpr std::uint32_t kTypeVersion = 1;
    static constexpr const char* kTypeName = "logging::LoggedQueue";
    LogArea log{};
    alignas(64) Node* head = nullptr;
    Node* tail = nullptr;
  };
  static_assert(offsetof(Root, log) == 0);
  static_assert(offsetof(Root, head) == 576);
  static_assert(offsetof(Root, tail) == 584);
  static_assert(sizeof(Node) == 16);

  LoggedQueue(pmem::Pool& pool, std::string_view name, int threads, const LoggerOptions& opt)
      : root_(pool.has_root(name) ? pool.root<Root>(name) : pool.create_root<Root>(name)),
        log_(pool, &root_->log, threads, opt) {}

  void enqueue(int tid, std::int64_t v) {
    Region r(log_, tid, lock_);
    auto* n = static_cast<Node*>(log_.alloc(tid, sizeof(Node)));
    log_.init(tid, &n->value, v);
    log_.init(tid, &n->next, static_cast<Node*>(nullptr));
    if (root_->tail != nullptr) log_.write(tid, &root_->tail->next, n);
    else log_.write(tid, &root_->head, n);
    log_.write(tid, &root_->tail, n);
    r.end();
  }
  std::optional<std::int64_t> dequeue(int tid) {
    Region r(log_, tid, lock_);
    Node* h = root_->head;
    if (h == nullptr) {
      r.end();
      return std::nullopt;
    }
    const std::int64_t v = h->value;
    log_.write(tid, &root_->head, h->next);
    if (h->next == nullptr) log_.write(tid, &root_->tail, static_cast<Node*>(nullptr));
    log_.retire(tid, h);
    r.end();
    return v;
  }
  // The locks an enqueue or a dequeue takes (for a Group).
  void locks_of(std::vector<Lock*>& out) { out.push_back(&lock_); }
  std::vector<std::int64_t> snapshot() {
    lock_.lock_for_read();
    std::vector<std::int64_t> out;
    for (Node* n = root_->head; n != nullptr; n = n->next) out.push_back(n->value);
    lock_.unlock_for_read();
    return out;
  }
  Logger& logger() { return log_; }

  static void recover_root(pmem::Pool&, Root* r, const std::function<void(void*)>& mark) {
    recover_area(&r->log);
    mark_area(&r->log, mark);
    for (Node* n = r->head; n != nullptr; n = n->next) mark(n);
  }

 private:
  Root* root_;
  Logger log_;
  Lock lock_;
};

// --------------------------------------------------------------- hash map

// A chained hash table of (key, payload) nodes, buckets striped over 16
// locks, each put / erase one region. The payload is the Traits' (a value:
// LoggedMap; a multi-field tuple: LoggedKvStore, kv_store.h), and so is
// how a put stores it: Traits::store(lg, tid, payload, v, fresh) with fresh
// = the node was allocated in this region (unlogged init stores), else
// logged writes. Traits::value reads the value back; Traits::whole says
// whether a payload is one a region left whole.
template <class Traits>
class LoggedHashTable {
 public:
  static constexpr int kLocks = 16;
  using Payload = typename Traits::Payload;
  struct Node {
    std::int64_t key;
    Payload payload;
    Node* next;
  };
  struct Root {
    static constexpr std::uint32_t kTypeTag = Traits::kTypeTag;
    static constexpr std::uint32_t kTypeVersion = 1;
    static constexpr const char* kTypeName = Traits::kTypeName;
    LogArea log{};
    alignas(64) Node** buckets = nullptr;  // set once, after the array is durable
    std::uint64_t nbuckets = 0;
  };
  static_assert(offsetof(Root, log) == 0);
  static_assert(offsetof(Root, buckets) == 576);
  static_assert(offsetof(Root, nbuckets) == 584);
  static_assert(sizeof(Node) == 16 + sizeof(Payload));

  LoggedHashTable(pmem::Pool& pool, std::string_view name, int threads, const LoggerOptions& opt,
                  std::uint64_t nbuckets = 64)
      : root_(pool.has_root(name) ? pool.root<Root>(name) : pool.create_root<Root>(name)),
        log_(pool, &root_->log, threads, opt) {
    if (root_->buckets == nullptr) {
      // CRASH: a crash before the buckets pointer is durable leaves it null:
      // the next attach allocates again (the lost array was never marked).
      const std::uint64_t nb = std::bit_ceil(std::max<std::uint64_t>(nbuckets, kLocks));
      auto** b = static_cast<Node**>(pool.heap().alloc(nb * sizeof(Node*), 0));
      std::memset(static_cast<void*>(b), 0, nb * sizeof(Node*));
      persist::pwb(b, nb * sizeof(Node*));
      persist::store(&root_->nbuckets, nb);
      persist::pwb(&root_->nbuckets, sizeof nb);
      // ORDER: the zeroed array and its size before the pointer to it.
      persist::psync();
      persist::store(&root_->buckets, b);
      persist::pwb(&root_->buckets, sizeof b);
      persist::psync();
    }
  }

  std::optional<std::int64_t> put(int tid, std::int64_t k, std::int64_t v) {
    const std::uint64_t b = bucket(k);
    Region r(log_, tid, lock_of(b));
    Node** slot = &root_->buckets[b];
    for (Node* n = *slot; n != nullptr; n = n->next) {
      if (n->key != k) continue;
      const std::int64_t old = Traits::value(n->payload);
      // CRASH: a payload of several words may be left partly stored; their
      // undo entries are durable first (P1), so recovery restores it whole.
      Traits::store(log_, tid, n->payload, v, false);
      r.end();
      return old;
    }
    auto* n = static_cast<Node*>(log_.alloc(tid, sizeof(Node)));
    log_.init(tid, &n->key, k);
    Traits::store(log_, tid, n->payload, v, true);
    log_.init(tid, &n->next, *slot);
    log_.write(tid, slot, n);
    r.end();
    return std::nullopt;
  }
  std::optional<std::int64_t> erase(int tid, std::int64_t k) {
    const std::uint64_t b = bucket(k);
    Region r(log_, tid, lock_of(b));
    Node** link = &root_->buckets[b];
    for (Node* n = *link; n != nullptr; link = &n->next, n = n->next) {
      if (n->key != k) continue;
      const std::int64_t old = Traits::value(n->payload);
      log_.write(tid, link, n->next);
      log_.retire(tid, n);
      r.end();
      return old;
    }
    r.end();
    return std::nullopt;
  }
  std::optional<std::int64_t> get(int tid, std::int64_t k) {
    const std::uint64_t b = bucket(k);
    ReadLock g(log_, tid, lock_of(b));
    std::optional<std::int64_t> out;
    for (Node* n = root_->buckets[b]; n != nullptr; n = n->next)
      if (n->key == k) {
        out = Traits::value(n->payload);
        break;
      }
    return out;
  }
  // The lock a put, erase or get of k takes (for a Group).
  void locks_of(std::int64_t k, std::vector<Lock*>& out) { out.push_back(&lock_of(bucket(k))); }
  // (key, value) pairs sorted by key; `torn` (if given) counts the payloads
  // that are not whole (a torn multi-word update).
  std::vector<std::pair<std::int64_t, std::int64_t>> items(std::size_t* torn = nullptr) {
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    std::size_t bad = 0;
    for (auto& l : locks_) l.lock_for_read();
    for (std::uint64_t b = 0; b < root_->nbuckets; ++b)
      for (Node* n = root_->buckets[b]; n != nullptr; n = n->next) {
        out.emplace_back(n->key, Traits::value(n->payload));
        if (!Traits::whole(n->payload)) ++bad;
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
      for (Node* n = r->buckets[b]; n != nullptr; n = n->next) mark(n);
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

// The hash map: one 8-byte value per key (a put stores one word).
struct MapPayload {
  using Payload = std::int64_t;
  static constexpr std::uint32_t kTypeTag = 0x4C47'4D50;  // "LGMP"
  static constexpr const char* kTypeName = "logging::LoggedMap";
  static std::int64_t value(const Payload& p) { return p; }
  static bool whole(const Payload&) { return true; }
  static void store(Logger& lg, int tid, Payload& p, std::int64_t v, bool fresh) {
    if (fresh) lg.init(tid, &p, v);
    else lg.write(tid, &p, v);
  }
};
using LoggedMap = LoggedHashTable<MapPayload>;
static_assert(sizeof(LoggedMap::Node) == 24);

inline const bool kLoggedQueueRootRegistered =
    pmem::register_root_type<LoggedQueue::Root>(&LoggedQueue::recover_root);
inline const bool kLoggedMapRootRegistered = pmem::register_root_type<LoggedMap::Root>(&LoggedMap::recover_root);

}  // namespace ferrite::logging
