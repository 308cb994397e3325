// ferrite/logging/undo_log.h — failure-atomic regions by undo logging:
// transactions, ATLAS lock-based failure-atomic sections and SFRs, for the
// x86, HOPS, HOPS+ and strand persistency models.
//
// What it is. The logging design of StrandWeaver (Vaibhav Gogte, William
// Wang, Stephan Diestelhorst, Peter M. Chen, Satish Narayanasamy, Thomas F.
// Wenisch, "Relaxed Persist Ordering Using Strand Persistency", ISCA 2020,
// §V, Figures 5 and 6) with the instrumentation per persistency model of
// Table 1 of the HOPS+ paper (Swapnil Haria, Pratyush Mahapatra, Mark D.
// Hill, Michael M. Swift, "Efficient Durability for Lock-based Code"):
//
//   * a per-thread circular log of 64-byte entries in the pool (type,
//     address, old value, size, valid bit, commit marker), a volatile tail
//     and a persistent head (Fig. 6(a) step 1);
//   * `write(addr, v)` = log_store: an undo entry with the old value, then
//     the in-place store, ordered by the model's instrumentation (below);
//   * a region ends with an entry that carries the commit marker (Fig. 6(a)
//     step 2); then its entries are invalidated (step 3) and the head is
//     advanced past them (step 4) — at once, or for ATLAS / SFR with
//     batched commits (§VI; LoggerOptions::commit_batch) after the unlock,
//     several regions in one batch;
//   * recovery (Fig. 6(b)) finishes interrupted commits and rolls back the
//     valid entries of every region that must be undone in reverse creation
//     order.
//
// Language-level models (StrandWeaver §V "Integrating with language
// persistency models"), chosen per Logger:
//   kTxn    txn_begin/txn_end delimit a region; isolation is the caller's
//           (a logging::Lock or any mutex); txn_end returns durable.
//   kAtlas  a region is an outermost critical section: acquire of the first
//           logging::Lock begins it, the release that drops the last one
//           ends it. Acquires and releases are logged; an acquire entry
//           records the lock's last release (thread, entry, clock): the
//           synchronization history. A crash undoes every section that was
//           not complete and, transitively, every section that acquired a
//           lock released inside an undone one (the HOPS+ paper's Figure 1).
//   kSfr    a region is a synchronization-free region: every acquire and
//           every release ends the current region and the next store (or
//           acquire) begins the next one; the history is logged as for
//           ATLAS (an SFR that acquired from an undone SFR is undone).
//
// Instrumentation (Instrumentation, chosen at run time):
//   kX86      Undo-Log(A); pwb log; publish_fence (the synchronous "CLFLUSH
//             Log": durable); ST A; pwb A. Region end: pfence;
//             end entry with commit marker; pwb; psync (HOPS+ paper Table 1,
//             x86-64 column, with clwb for the log as the StrandWeaver
//             paper's Intel baseline).
//   kHops     Undo-Log(A); ofence; ST A. Region end: ofence; end entry;
//             dfence. Acquire: Log-Acq + Log-SH in one entry; ofence.
//             (Table 1, HOPS column: no write-back at all.)
//   kHopsPlus as kHops without the software history (Table 1, HOPS+ column:
//             the hardware orders critical sections by lock commit order).
//             Under ATLAS it relies on closed nesting (HOPS+ paper §3: "run
//             outermost critical sections in a serializable order using
//             closed nesting, i.e., delaying the global visibility of
//             updates from nested critical sections until the outermost
//             critical sections complete ... by having private caches
//             retain exclusive permissions for modified cachelines until
//             the outermost CS releases its lock"). The unlock of a lock
//             released inside an outermost section is such an update (the
//             lock word): a lock released early stays locked until the
//             section ends (its release entry and dfence are issued where
//             the program releases it, Table 1; the mutex is handed over
//             after the section's commit), so no section can acquire from
//             a section a crash may undo, and recovery needs no history.
//             Like HOPS+, this deadlocks a program that relies on open
//             nesting (§3: "for such programs, SH must be recorded by
//             software": use kHops).
//   kStrand   Undo-Log(A); pwb log; persist_barrier; ST A; pwb A;
//             new_strand — one strand per log/update pair; region end:
//             join_strand; end entry; pwb; join_strand (Fig. 5).
// Every persistent store is an annotated store (persist::store), so the
// HOPS and strand models of the crash simulator see them; under x86 and
// abstract the pwbs do the work. The models HOPS/HOPS+ have no write-backs:
// they are correct only under a model in which stores persist by themselves.
//
// Thread safety: a Logger is shared; each thread uses its own tid (distinct
// tids concurrently); a logging::Lock is an ordinary mutex plus its history.
// A thread's completed-but-unpruned regions (the deferred ones) and the
// pruned part of its log are guarded by a per-thread mutex: the owner
// prunes them, and so does any thread that waits for room (make_room,
// drain) and finds them ready — ATLAS's log pruning is not tied to the
// thread that wrote the log (ATLAS uses a helper thread), and a region of
// one thread may wait for a region of a thread that stopped running.
//
// Invariants.
//   I1 the entries of thread t with head_t <= seq < tail_t are the
//      unpruned ones; an entry is live iff its valid bit is set, its
//      checksum matches, slot == seq % capacity and seq >= head_t.
//   I2 each entry names its region (the seq of the region's first entry)
//      and a Lamport clock: clocks increase along program order and across
//      a lock's release -> acquire, so conflicting stores (race-free code
//      orders them by locks) are ordered by clock.
//   I3 a region is complete iff its end entry (commit marker) is live.
//   I4 a region is pruned (its entries invalidated, head past it) only
//      after every region it depends on is pruned (ATLAS/SFR).
// Persistence invariants.
//   P1 an undo entry is persisted before its in-place update (x86: pwb +
//      pfence; strand: persist barrier; HOPS: ofence) — a torn entry fails
//      its checksum and is never used, and then its update cannot have
//      persisted either.
//   P2 a region's updates persist before its commit marker; the marker is
//      durable before the region ends (txn_end returns, the lock is
//      released): a completed region is never undone unless it depends on
//      one that is.
//   P3 pruning invalidates the end entry after every other entry of the
//      region, and advances the head after that: a crash during a prune
//      leaves either the complete region or nothing of it. A batch of
//      regions (prune) orders all their other entries before all their end
//      entries: each region of it is whole, its end entry alone, or gone.
//   P4 a pruned region's end slot is reused only by an entry ordered after
//      the prune: the helper's prune is durable (prune_durable) before the
//      owner may reuse it; the owner's own prune is ordered by its fence
//      before the head (order_prune) under x86 and HOPS, and under strand — where that fence
//      orders only the current strand and the next entries are on new
//      strands — by a JoinStrand before an entry that reuses the end slot of
//      a region the owner pruned since its last join (append). Else an entry
//      torn in the end slot hides the end entry while the region's other
//      entries are live, and recovery undoes a completed region.
// Recovery (recover_area, run by the owner's root hook before it traces):
//   1. collect the live entries of every thread; group them by region;
//   2. kept := complete regions; drop from kept, to a fixpoint, every region
//      that depends on a live region not kept (a dependency whose release
//      entry is no longer live was pruned: kept) and every region that
//      follows a region not kept of its own thread (program order);
//   3. roll back every store entry of every region not kept, in decreasing
//      clock order (reverse creation order); psync;
//   4. invalidate those entries, newest first, each durable before the next
//      (a crash here leaves the older entries, whose rollback is the rest of
//      step 3's sequence);
//   5. advance each thread's head past its last live entry.
// Idempotent: a crash in 3 repeats 3; in 4, step 2 finds the same kept set
// (only entries of non-kept regions were invalidated, newest first, so a
// live dependent still sees its dependency's release entry); in 5, a kept
// region below an advanced head is pruned, one above is kept again.
// Relies only on the pool's contents.
//
// A full log inside a region (append): one slot of each ring is kept for an
// open region's end entry; out of room, the thread waits as make_room does
// (bounded), then rolls the open region back in place the way recovery
// would (old values durable, then its entries invalidated newest first,
// each durable), takes its slots back, unlocks every lock it holds, and
// throws LogFull — unless the region handed a lock over (docs/logging.md).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ferrite/logging/internal/faults.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/sync/backoff.h"

namespace ferrite::logging {

enum class Instrumentation : std::uint8_t { kX86 = 0, kHops, kHopsPlus, kStrand };
enum class Language : std::uint8_t { kTxn = 0, kAtlas, kSfr };

inline const char* instrumentation_name(Instrumentation i) {
  switch (i) {
    case Instrumentation::kX86: return "x86";
    case Instrumentation::kHops: return "hops";
    case Instrumentation::kHopsPlus: return "hops+";
    case Instrumentation::kStrand: return "strand";
  }
  return "?";
}
inline const char* language_name(Language l) {
  switch (l) {
    case Language::kTxn: return "txn";
    case Language::kAtlas: return "atlas";
    case Language::kSfr: return "sfr";
  }
  return "?";
}

// ------------------------------------------------------ on-media layout

enum class EntryType : std::uint8_t { kStore = 1, kBegin = 2, kEnd = 3, kAcquire = 4, kRelease = 5 };

inline constexpr std::size_t kMaxValue = 24;  // bytes of old value a store entry holds

// One log entry: one cache line (StrandWeaver §V "Log structure").
struct alignas(64) LogEntry {
  // bit 0 valid, bit 1 commit marker, bits 8..15 type, 16..23 size,
  // 32..63 checksum of the other fields (a torn entry fails it).
  std::uint64_t meta;
  std::uint64_t seq;     // per-thread creation number: slot = seq % capacity
  std::uint64_t region;  // seq of the region's first entry
  std::uint64_t clock;   // Lamport clock (invariant I2)
  std::uint64_t addr;    // store: address; acquire/release: the lock's id
  // store: the old bytes; acquire: the lock's last release (tid + 1, seq,
  // clock), tid + 1 == 0 meaning none.
  unsigned char value[kMaxValue];
};
static_assert(sizeof(LogEntry) == 64);
static_assert(offsetof(LogEntry, meta) == 0);
static_assert(offsetof(LogEntry, seq) == 8);
static_assert(offsetof(LogEntry, region) == 16);
static_assert(offsetof(LogEntry, clock) == 24);
static_assert(offsetof(LogEntry, addr) == 32);
static_assert(offsetof(LogEntry, value) == 40);

inline constexpr std::uint64_t kValid = 1;
inline constexpr std::uint64_t kCommit = 2;

// One thread's log: the persistent head on its own line, then the ring.
struct alignas(64) ThreadLog {
  std::uint64_t head;  // first seq that may be unpruned (Fig. 6(a))
  std::uint64_t capacity;
  unsigned char pad[48];
  LogEntry entries[1];  // `capacity` entries are allocated
};
static_assert(offsetof(ThreadLog, head) == 0);
static_assert(offsetof(ThreadLog, capacity) == 8);
static_assert(offsetof(ThreadLog, entries) == 64);

inline std::size_t thread_log_bytes(std::size_t capacity) {
  return offsetof(ThreadLog, entries) + capacity * sizeof(LogEntry);
}

inline constexpr int kMaxThreads = 64;

// Embedded in the root of each structure that logs (one log area per
// structure: its recovery runs in the structure's root hook before the
// structure is traced, so the trace sees the rolled-back state).
struct LogArea {
  static constexpr std::uint32_t kVersion = 1;
  std::uint32_t version;
  std::uint32_t threads;
  std::uint32_t faults;  // internal::Fault bits of a broken variant (recovery's)
  std::uint32_t pad;
  ThreadLog* logs[kMaxThreads];
};
static_assert(sizeof(LogArea) == 16 + 8 * kMaxThreads);
static_assert(offsetof(LogArea, logs) == 16);

namespace detail {

inline std::uint32_t checksum(const LogEntry& e) {
  std::uint64_t h = 0x9E3779B97F4A7C15ull ^ (e.meta & 0xFFFF'FF00ull);
  auto mix = [&h](std::uint64_t w) {
    h ^= w + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
  };
  mix(e.seq);
  mix(e.region);
  mix(e.clock);
  mix(e.addr);
  std::uint64_t w[3];
  std::memcpy(w, e.value, sizeof w);
  for (auto x : w) mix(x);
  return static_cast<std::uint32_t>(h ^ (h >> 32));
}
inline EntryType type_of(const LogEntry& e) { return static_cast<EntryType>((e.meta >> 8) & 0xFF); }
inline std::size_t size_of(const LogEntry& e) { return (e.meta >> 16) & 0xFF; }

struct Dep {
  std::uint64_t tid_plus_1 = 0;  // 0: none
  std::uint64_t seq = 0;
  std::uint64_t clock = 0;
};

// Is `e` (read from slot `slot` of a log with head `head`) live (I1)?
inline bool live(const LogEntry& e, std::uint64_t slot, std::uint64_t head, std::uint64_t capacity) {
  return (e.meta & kValid) != 0 && e.seq >= head && e.seq % capacity == slot &&
         static_cast<std::uint32_t>(e.meta >> 32) == checksum(e);
}

}  // namespace detail

// What recovery did (tests and `ferrite` read it).
struct RecoveryStats {
  std::size_t live_entries = 0;
  std::size_t regions = 0;
  std::size_t regions_kept = 0;
  std::size_t regions_undone = 0;
  std::size_t stores_rolled_back = 0;
};

// Fig. 6(b). See the essay (Recovery) for the steps and why each is
// idempotent. Relies only on the pool's contents.
inline RecoveryStats recover_area(LogArea* area) {
  RecoveryStats st;
  if (area == nullptr || area->version != LogArea::kVersion) return st;
  const int n = static_cast<int>(std::min<std::uint32_t>(area->threads, kMaxThreads));
  struct Live {
    int tid;
    LogEntry* e;
  };
  struct Region {
    int tid = 0;
    std::uint64_t start = 0;
    bool complete = false;
    bool kept = false;
    std::vector<detail::Dep> deps;
    std::vector<LogEntry*> entries;
  };
  // 1. live entries, grouped by (tid, region)
  std::vector<Region> regions;
  auto region_of = [&](int tid, std::uint64_t start) -> Region& {
    for (auto& r : regions)
      if (r.tid == tid && r.start == start) return r;
    Region r;
    r.tid = tid;
    r.start = start;
    regions.push_back(std::move(r));
    return regions.back();
  };
  std::vector<std::uint64_t> last(static_cast<std::size_t>(n), 0);
  for (int t = 0; t < n; ++t) {
    ThreadLog* log = area->logs[t];
    if (log == nullptr) continue;
    last[static_cast<std::size_t>(t)] = log->head;
    for (std::uint64_t slot = 0; slot < log->capacity; ++slot) {
      LogEntry& e = log->entries[slot];
      if (!detail::live(e, slot, log->head, log->capacity)) continue;
      ++st.live_entries;
      last[static_cast<std::size_t>(t)] = std::max(last[static_cast<std::size_t>(t)], e.seq + 1);
      Region& r = region_of(t, e.region);
      r.entries.push_back(&e);
      if ((e.meta & kCommit) != 0) r.complete = true;
      if (detail::type_of(e) == EntryType::kAcquire) {
        detail::Dep d;
        std::memcpy(&d, e.value, sizeof d);
        if (d.tid_plus_1 != 0) r.deps.push_back(d);
      }
    }
  }
  st.regions = regions.size();
  // 2. kept := complete, minus (to a fixpoint) regions depending on a live
  // region not kept. A dependency on one's own region is no dependency.
  for (auto& r : regions) r.kept = r.complete;
  auto dep_region = [&](const detail::Dep& d) -> Region* {
    const int dt = static_cast<int>(d.tid_plus_1) - 1;
    for (auto& r : regions) {
      if (r.tid != dt) continue;
      for (LogEntry* e : r.entries)
        if (e->seq == d.seq) return &r;
    }
    return nullptr;  // pruned (or invalidated by a commit): kept
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& r : regions) {
      if (!r.kept) continue;
      // Program order is happens-before too: a live region after an undone
      // one of the same thread is undone (it may have read what the undone
      // one read or wrote under a lock it re-acquired from itself, an edge
      // the history does not log). Pruning keeps a thread's regions in
      // order (prune_ready), so every later region of an undone one is live.
      bool after_undone = false;
      for (const auto& o : regions)
        if (o.tid == r.tid && o.start < r.start && !o.kept) after_undone = true;
      if (after_undone) {
        r.kept = false;
        changed = true;
        continue;
      }
      for (const auto& d : r.deps) {
        Region* dr = dep_region(d);
        if (dr != nullptr && dr != &r && !dr->kept) {
          r.kept = false;
          changed = true;
          break;
        }
      }
    }
  }
  // 3. roll back every store entry of the regions not kept, newest first.
  std::vector<Live> undo;
  for (auto& r : regions) {
    if (r.kept) {
      ++st.regions_kept;
      continue;
    }
    ++st.regions_undone;
    for (LogEntry* e : r.entries) undo.push_back({r.tid, e});
  }
  std::sort(undo.begin(), undo.end(), [](const Live& a, const Live& b) {
    if (a.e->clock != b.e->clock) return a.e->clock > b.e->clock;
    if (a.tid != b.tid) return a.tid > b.tid;
    return a.e->seq > b.e->seq;
  });
  const bool forward = (area->faults & internal::kForwardRollback) != 0;
  auto rollback = [&](const Live& l) {
    if (detail::type_of(*l.e) != EntryType::kStore) return;
    void* dst = reinterpret_cast<void*>(l.e->addr);
    const std::size_t size = detail::size_of(*l.e);
    persist::store_bytes(dst, l.e->value, size);
    persist::pwb(dst, size);  // [site: rollback-pwb]
    ++st.stores_rolled_back;
  };
  if (forward) {
    for (auto it = undo.rbegin(); it != undo.rend(); ++it) rollback(*it);
  } else {
    for (const auto& l : undo) rollback(l);
  }
  // PERSIST: the rolled-back values are durable before any entry that
  // describes them is invalidated (step 4).
  persist::psync();  // [site: rollback-psync]
  // 4. invalidate, newest first, each durable before the next.
  for (const auto& l : undo) {
    persist::store(&l.e->meta, std::uint64_t{0});
    persist::pwb(&l.e->meta, sizeof l.e->meta);  // [site: invalidate-pwb]
    // CRASH: a crash after this leaves only older entries live; their
    // rollback is the rest of step 3's sequence (idempotent).
    persist::psync();  // [site: invalidate-psync]
  }
  // 5. heads past every live entry (kept regions are pruned by this).
  for (int t = 0; t < n; ++t) {
    ThreadLog* log = area->logs[t];
    if (log == nullptr || last[static_cast<std::size_t>(t)] == log->head) continue;
    persist::store(&log->head, last[static_cast<std::size_t>(t)]);
    // CRASH: this pwb and the psync below are not caught by any campaign
    // (docs/logging.md, "Mutation testing"), and their loss is benign: a
    // head that does not persist leaves live only the kept regions
    // (complete, kept again by the next recovery: step 2 depends only on
    // the live entries, which are the same) and the undone regions'
    // entries that step 4 made durably invalid; the recovered run's
    // in-memory head and tail are the new ones whatever persisted, its
    // entries continue past every live one, and its first prune writes
    // the head back (Logger::prune) long before its tail reaches a slot
    // of this lap again. Kept: a recovered pool then reads as pruned.
    persist::pwb(&log->head, sizeof log->head);  // [site: recovery-head-pwb]
  }
  persist::psync();  // [site: recovery-head-psync]
  return st;
}

// Validates what recover_area and mark_area follow (the owner's root hook
// calls it first, issue 40): the area's version and thread count, and each
// thread log pointer — null, or the start of a heap block of the pool large
// enough for the capacity it records (capacity >= 1). A damaged word is a
// pmem::PoolError(kCorrupt) naming its offset, never a wild pointer followed.
inline void validate_area(const pmem::Pool& pool, const LogArea* area) {
  auto bad = [&](const void* at, const std::string& why) {
    throw pmem::PoolError(pmem::Errc::kCorrupt, "logging: undo log area: " + why + " (the word at offset " +
                                                    std::to_string(pool.offset_of(at)) + ")");
  };
  if (area->version != LogArea::kVersion) bad(&area->version, "version " + std::to_string(area->version));
  if (area->threads > kMaxThreads) bad(&area->threads, "thread count " + std::to_string(area->threads));
  for (std::uint32_t t = 0; t < area->threads; ++t) {
    const ThreadLog* log = area->logs[t];
    if (log == nullptr) continue;
    const std::size_t block = pool.heap().block_at(log);
    if (block < thread_log_bytes(1)) bad(&area->logs[t], "thread " + std::to_string(t) + "'s log is not a heap block");
    if (log->capacity < 1 || log->capacity > block / sizeof(LogEntry) ||
        thread_log_bytes(static_cast<std::size_t>(log->capacity)) > block)
      bad(&log->capacity, "thread " + std::to_string(t) + "'s log capacity " + std::to_string(log->capacity) +
                              " does not fit its " + std::to_string(block) + "-byte block");
  }
}

// Marks the blocks of the log area (for the owner's root hook).
inline void mark_area(LogArea* area, const std::function<void(void*)>& mark) {
  if (area == nullptr || area->version != LogArea::kVersion) return;
  for (std::uint32_t t = 0; t < area->threads && t < kMaxThreads; ++t) mark(area->logs[t]);
}

// ------------------------------------------------------------------ locks

class Logger;

// A lock whose release -> acquire edges the ATLAS and SFR models log (the
// synchronization history) and that carries Lamport clocks for every model.
// Volatile: the history lives in the log entries, not in the lock.
class Lock {
 public:
  Lock() = default;
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

  // A read-only critical section: it stores nothing, so it has nothing to
  // log, undo or order (and it leaves the history alone).
  void lock_for_read() { take(); }
  void unlock_for_read() { give(); }

 private:
  friend class Logger;
  // The lock hand-off, annotated for the trace backend (persist.h).
  void take() {
    mu_.lock();
    persist::note_acquired(this);
  }
  void give() {
    persist::note_releasing(this);
    mu_.unlock();
  }
  // The unlock of a hand-off already announced (Logger::release, HOPS+
  // closed nesting).
  void unlock_only() { mu_.unlock(); }
  std::mutex mu_;
  detail::Dep last_;  // guarded by mu_: the last release (tid + 1, seq, clock)
};

// -------------------------------------------------------------- the logger

// A full log inside a failure-atomic region (Logger::append, after waiting
// for room): the region was rolled back in place and durably (its entries
// invalidated, its slots free again), and every lock the thread held was
// released — the section never happened, for this run and for recovery.
// The thread may retry (with fewer stores per region, or after other
// threads pruned). Not thrown for a region that already handed a lock over
// (an early release under ATLAS, a release inside a transaction): another
// thread may have read its stores, so it cannot be undone alone; that case
// throws a plain std::length_error and leaves the region open (docs/logging.md).
class LogFull : public std::length_error {
 public:
  using std::length_error::length_error;
};

struct LoggerOptions {
  Language language = Language::kTxn;
  Instrumentation instrumentation = Instrumentation::kX86;
  unsigned faults = internal::kNoFaults;  // broken variants (tests)
  std::size_t capacity = 256;             // entries per thread
  // ATLAS / SFR: batched commits (StrandWeaver §VI, "Sensitivity to
  // language-level persistency model": "the SFR implementation issues
  // batched commits by logging happens-before relations in logs at the end
  // of each SFR and continuing execution without stalling for log
  // commits. ATLAS issues batched log commits too"). With N > 1 a region
  // still ends with its durable end entry (P2), but its prune (Fig. 6(a)
  // steps 3 and 4) is left to a release that finds at least N of the
  // thread's regions complete; that release prunes, after the lock is
  // free, every ready one in one batch (three ordering points per batch,
  // prune). 1: each region is pruned at its end, before the release frees
  // the lock (unless a region it depends on is not pruned yet: deferred).
  // Transactions commit at their end (the paper's "log end() flushes all
  // PM mutations ... before committing the logs"): 1 only.
  std::size_t commit_batch = 1;
};

class Logger {
 public:
  // Creates the thread logs of `area` (zeroed, durable) — or, when
  // area->version says they exist, attaches to them (the pool's recovery
  // already ran recover_area).
  Logger(pmem::Pool& pool, LogArea* area, int threads, const LoggerOptions& opt)
      : pool_(&pool), area_(area), opt_(opt) {
    if (threads < 1 || threads > kMaxThreads) throw std::invalid_argument("logging: threads out of [1, 64]");
    if (opt.commit_batch < 1 || opt.commit_batch > opt.capacity)
      throw std::invalid_argument("logging: commit_batch out of [1, capacity]");
    if (opt.commit_batch > 1 && opt.language == Language::kTxn)
      throw std::invalid_argument("logging: a transaction commits at its end (commit_batch > 1 is for ATLAS and SFR)");
    if (area->version != LogArea::kVersion) {
      std::memset(static_cast<void*>(area), 0, sizeof *area);
      for (int t = 0; t < threads; ++t) {
        auto* log = static_cast<ThreadLog*>(pool.heap().alloc(thread_log_bytes(opt.capacity), 0));
        std::memset(static_cast<void*>(log), 0, thread_log_bytes(opt.capacity));
        log->capacity = opt.capacity;
        persist::pwb(log, thread_log_bytes(opt.capacity));  // [site: create-logs-pwb]
        area->logs[t] = log;
      }
      area->threads = static_cast<std::uint32_t>(threads);
      area->faults = opt.faults;
      // PERSIST: the whole area. The version's write-back covers only its
      // own line (logs[0..5] when the area starts a line, as in every root
      // here): without this one a logger of more than 6 threads recovers
      // null logs (caught: --crash-create, 8 threads' logs, docs/logging.md).
      persist::pwb(area, sizeof *area);  // [site: create-area-pwb]
      // ORDER: the logs and the area's contents are durable before the
      // version that says they exist.
      persist::psync();  // [site: create-area-psync]
      persist::store(&area->version, LogArea::kVersion);
      persist::pwb(&area->version, sizeof area->version);  // [site: create-version-pwb]
      // PERSIST: the version durable before another thread's region can
      // persist an update (its fences order only its own write-backs): a
      // lost version leaves recovery no log to roll an incomplete region
      // back from (caught: abstract, 3 threads, --crash-create).
      persist::psync();  // [site: create-version-psync]
    }
    const int n = static_cast<int>(area->threads);
    state_ = std::make_unique<State[]>(static_cast<std::size_t>(n));
    for (int t = 0; t < n; ++t) {
      State& s = state_[static_cast<std::size_t>(t)];
      s.log = area->logs[t];
      s.tail = s.log->head;
      s.pruned.store(s.log->head, std::memory_order_relaxed);  // relaxed: before any thread runs
    }
    threads_ = n;
  }
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  const LoggerOptions& options() const { return opt_; }
  Language language() const { return opt_.language; }
  Instrumentation instrumentation() const { return opt_.instrumentation; }
  int threads() const { return threads_; }

  // ------------------------------------------------------ transactions
  void txn_begin(int tid) {
    State& s = st(tid);
    if (s.in_region) throw std::logic_error("logging: nested txn_begin");
    s.rolled_back = false;
    begin_region(s, EntryType::kBegin, 0, nullptr);
  }
  void txn_end(int tid) {
    State& s = st(tid);
    if (!s.in_region) throw std::logic_error("logging: txn_end without txn_begin");
    end_region(tid, s, EntryType::kEnd, 0);
  }

  // ------------------------------------------- lock acquire and release
  // kTxn: a plain lock (clocks only). kAtlas: the first lock begins an
  // outermost critical section, the release of the last one ends it.
  // kSfr: every acquire and release ends the current SFR.
  void acquire(int tid, Lock& l) {
    State& s = st(tid);
    if (auto h = std::find(s.held.begin(), s.held.end(), &l); h != s.held.end()) {
      // HOPS+ closed nesting: this section released `l` earlier and still
      // holds it (the release is invisible until the section ends): the
      // re-acquire takes it back without locking it again.
      s.held.erase(h);
    } else {
      l.take();
      s.locked.push_back({&l, kPending});
    }
    if (s.depth == 0 && !s.in_region) s.rolled_back = false;
    // ORDER: Lamport clock across release -> acquire (invariant I2).
    s.clock = std::max(s.clock, l.last_.clock);
    ++s.depth;
    if (opt_.language == Language::kTxn) {
      mark_acquired(s, l);
      return;
    }
    if (opt_.language == Language::kSfr && s.in_region) end_region(tid, s, EntryType::kEnd, 0);
    const bool history = opt_.instrumentation != Instrumentation::kHopsPlus &&
                         (opt_.faults & internal::kNoSyncHistory) == 0 && l.last_.tid_plus_1 != 0;
    detail::Dep dep = history ? l.last_ : detail::Dep{};
    if (!s.in_region) {
      begin_region(s, EntryType::kAcquire, reinterpret_cast<std::uint64_t>(&l), &dep);
    } else {
      // PERSIST: Table 1 "Log-Acq(L); Log-SH(L)" (one entry here).
      LogEntry* e = append(s, EntryType::kAcquire, reinterpret_cast<std::uint64_t>(&l), &dep, sizeof dep, false);
      order_entry(e);
    }
    if (history && dep.tid_plus_1 != static_cast<std::uint64_t>(tid) + 1) s.deps.push_back(dep);
    mark_acquired(s, l);
  }
  void release(int tid, Lock& l) {
    State& s = st(tid);
    if (s.depth <= 0) throw std::logic_error("logging: release without acquire");
    --s.depth;
    if (opt_.language == Language::kTxn) {
      l.last_ = {static_cast<std::uint64_t>(tid) + 1, 0, ++s.clock};
      if (s.in_region) s.handed_over = true;  // a transaction's store may be read now
      unlocked(s, l);
      l.give();
      return;
    }
    const bool ends = opt_.language == Language::kSfr || s.depth == 0;
    if (!s.in_region) begin_region(s, EntryType::kBegin, 0, nullptr);  // SFR: empty region
    std::uint64_t seq;
    if (ends) {
      seq = end_region(tid, s, EntryType::kRelease, reinterpret_cast<std::uint64_t>(&l));
    } else {
      // An early release inside an outermost section (ATLAS): logged, and
      // durable before another thread can acquire (Table 1, Unlock L:
      // "SFENCE; Log-Rel(L); CLFLUSH Log").
      pre_end(s);
      LogEntry* e = append(s, EntryType::kRelease, reinterpret_cast<std::uint64_t>(&l), nullptr, 0, false);
      seq = e->seq;
      s.last_clock = e->clock;
      make_durable(s, e);
    }
    l.last_ = {static_cast<std::uint64_t>(tid) + 1, seq, s.last_clock};
    if (!ends && closed_nesting()) {
      // ORDER: HOPS+ closed nesting (§3): the early release stays invisible
      // — `l` stays locked — until the outermost section ends (below).
      s.held.push_back(&l);
      return;
    }
    if (!ends) s.handed_over = true;  // another thread may read the section's stores now
    if (!s.held.empty()) {
      // ORDER: the outermost section ended (its end entry is durable,
      // end_region): every hand-off is announced (the hops+ model's lock
      // history) before any of the section's locks is free, then they are
      // freed.
      for (Lock* h : s.held) persist::note_releasing(h);
      unlocked(s, l);
      l.give();
      for (Lock* h : s.held) {
        unlocked(s, *h);
        h->unlock_only();
      }
      s.held.clear();
      if (ends) commit_batch(tid, s);
      return;
    }
    unlocked(s, l);
    l.give();
    if (ends) commit_batch(tid, s);
  }

  // ---------------------------------------------------- logged stores
  // log_store (Fig. 5): undo entry, ordering, in-place store.
  template <class T>
  void write(int tid, T* addr, const T& v) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= kMaxValue);
    State& s = st(tid);
    implicit_begin(s);
    const bool fence = (opt_.faults & internal::kNoLogFence) == 0;
    if (opt_.instrumentation == Instrumentation::kStrand) {
      // PERSIST: a word stored again in its region. Each log/update pair
      // has its own strand (Fig. 5), so a second undo entry for the word,
      // which holds the first update's value as its "old" value, would be
      // ordered after nothing of the first pair: a crash could persist it
      // without the first entry (or the first update), and recovery would
      // roll the word back to that intermediate value — a region partly
      // visible (TPC-C: a repeated item's stock row), or a link to a node
      // whose initialisation never persisted (red-black tree: a field
      // stored twice by the fix-up). The first entry already holds the
      // value from before the region, so a store inside a range already
      // logged in this region is not logged again: SPA (Eq. 3) orders it
      // after the first update, which the barrier orders after the first
      // entry. The barrier before it orders this strand's earlier stores
      // (a fresh node's Logger::init stores) before it, as an entry's
      // barrier would. A store that only overlaps a logged range is joined
      // after everything before it instead.
      const auto a = reinterpret_cast<std::uint64_t>(addr);
      const auto b = a + sizeof(T);
      bool inside = false, overlaps = false;
      for (const auto& [lo, hi] : s.logged) {
        if (lo <= a && b <= hi) inside = true;
        else if (a < hi && lo < b) overlaps = true;
      }
      if (inside && fence) {
        // CRASH: this barrier's loss is not caught (docs/logging.md,
        // "Mutation testing") and is benign under strand and x86 (the
        // models the instrumentation claims). The word's first entry E1 in
        // this region persists before this store U2 without it: E1's barrier
        // orders E1 before the first update U1, and U1 before U2 (the same
        // word: SPA, Eq. 3, under strand; under x86 a line persists a
        // prefix of its stores, U1's write-back is an epoch after E1's and
        // an eviction needs the current epoch). So a region left
        // incomplete is rolled back to E1's value whatever else persisted,
        // and a complete one's end entry follows joined's JoinStrand over
        // all its strands. What the barrier adds, the strand's earlier
        // stores (a fresh node's init, the owner's prune of a complete
        // region) before U2, shows only in an undone region, where U2 is
        // undone and a node it linked unreachable.
        persist::note_undo_barrier();  // Fig. 5 log_store's barrier (the timing model's non-atomic-paper drops it)
        persist::persist_barrier();  // [site: strand-relogged-barrier]
        persist::store(addr, v);
        persist::pwb(addr, sizeof(T));  // [site: strand-relogged-pwb]
        // CRASH: as write's NewStrand below, never caught by construction
        // (Eq. 1: without it the model allows fewer images, not more).
        persist::new_strand();
        return;
      }
      if (overlaps && fence) ordering_joined(s);  // a JoinStrand of the owner: P4's mark clears too
      s.logged.emplace_back(a, b);
    }
    LogEntry* e = append(s, EntryType::kStore, reinterpret_cast<std::uint64_t>(addr), addr, sizeof(T), false);
    switch (opt_.instrumentation) {
      case Instrumentation::kX86:
        persist::pwb(e, sizeof *e);  // [site: x86-entry-pwb]
        // PERSIST: HOPS+ paper Table 1 "Undo-Log(A); CLFLUSH Log": the undo
        // entry (and this region's earlier write-backs) durable before the
        // in-place store (P1). A synchronous flush, not just an ordering: A's
        // line may be shared with another thread, whose write-back of it
        // would carry our store past an entry only ordered before it
        // (publish_fence: the sfence on x86, psync under `abstract`).
        if (fence) persist::publish_fence();  // [site: x86-entry-fence]
        persist::store(addr, v);
        persist::pwb(addr, sizeof(T));  // Table 1 "ST A, val; CLWB A" [site: x86-update-pwb]
        break;
      case Instrumentation::kHops:
      case Instrumentation::kHopsPlus:
        // PERSIST: Table 1 HOPS "Undo-Log(A); OFENCE; ST A, val".
        if (fence) persist::ofence();  // [site: hops-entry-ofence]
        persist::store(addr, v);
        break;
      case Instrumentation::kStrand:
        persist::pwb(e, sizeof *e);
        // PERSIST: Fig. 5 log_store: PersistBarrier between the log entry
        // and its update.
        if (fence) {
          persist::note_undo_barrier();  // the ordering the paper's NON-ATOMIC design removes (§VI)
          persist::persist_barrier();  // [site: strand-entry-barrier]
        }
        persist::store(addr, v);
        persist::pwb(addr, sizeof(T));
        // Fig. 5: NewStrand after each log-update sequence. CRASH: its
        // loss is never caught, by construction: NewStrand only drops the
        // ordering after the earlier stores of the strand (Eq. 1), so
        // without it the model allows fewer images, not more.
        persist::new_strand();
        break;
    }
  }
  // A store to memory allocated in this region (nothing to undo: a rolled
  // back region leaves the block unreachable, and pool recovery frees it).
  template <class T>
  void init(int tid, T* addr, const T& v) {
    State& s = st(tid);
    implicit_begin(s);
    persist::store(addr, v);
    if (writes_back()) persist::pwb(addr, sizeof(T));  // [site: init-pwb]
  }
  // Frees `p` once the region that unlinked it is pruned (a region undone
  // at a crash relinks it).
  void retire(int tid, void* p) { st(tid).frees.push_back(p); }
  void* alloc(int tid, std::size_t n) { return pool_->heap().alloc(n, tid); }

  // Prunes what it can of the regions whose dependencies were not yet
  // pruned when they ended (ATLAS/SFR only ever defer).
  void flush_deferred(int tid) { prune_ready(st(tid), tid, false); }
  std::size_t deferred(int tid) {
    State& s = st(tid);
    std::lock_guard<std::mutex> g(s.mu);
    return s.done.size();
  }
  // ATLAS and SFR defer the prune of a region whose dependencies (regions
  // of other threads it acquired a lock from) are not pruned yet: when
  // another thread lags (descheduled, on a loaded machine), this thread's
  // log fills with deferred regions. Call with no lock held, before a
  // region: prunes what can be pruned — this thread's deferred regions and,
  // helping, any other thread's whose dependencies are pruned — and yields
  // until `entries` are free (bounded: past it, a full log inside a region
  // rolls the region back and throws LogFull, append / abort_region). The dependency graph is acyclic (a dependency is a release
  // that happened before the acquire, and a section of the workloads here
  // acquires all its locks before it releases any — a section that
  // acquired after an early release could close a cycle with another
  // one), so the deferred regions always include one whose dependencies
  // are pruned or still running — and a running region ends without
  // waiting. Helping is what makes that enough: a thread that left
  // with deferred regions (a finished worker that never called drain) no
  // longer blocks every region that acquired from it (and transitively
  // every thread) until each log fills and append throws inside a critical
  // section, leaving its locks held (the 8-thread ATLAS swap / TPC-C /
  // hand-off traces hung in Logger::acquire so).
  static constexpr std::size_t kRoom = 64;
  static constexpr std::chrono::seconds kMaxWait{2};
  void make_room(int tid, std::size_t entries = kRoom) { prune_until(tid, entries); }
  // A thread that is done calls this before it leaves: another thread's
  // regions may wait for its deferred ones (bounded as make_room).
  void drain(int tid) { prune_until(tid, static_cast<std::size_t>(st(tid).log->capacity)); }
  // Free entries in the thread's log (capacity minus the unpruned ones).
  std::size_t room(int tid) {
    State& s = st(tid);
      // ORDER: acquire pairs with the release in prune() (a helper's).
    return static_cast<std::size_t>(s.log->capacity - (s.tail - s.pruned.load(std::memory_order_acquire)));
  }
  bool in_region(int tid) { return st(tid).in_region; }
  // The thread's last region was rolled back by a full log (LogFull) and
  // its locks released; no region or lock was taken since. Region and
  // Group end nothing then.
  bool rolled_back(int tid) { return st(tid).rolled_back; }
  // Regions pruned by a thread other than their owner (make_room's help).
  std::uint64_t helped_prunes() const { return helped_.load(std::memory_order_relaxed); }
  // strand: entries that reused the end slot of a region their thread had
  // pruned since its last join (append joined first; with
  // internal::kNoOwnerPruneJoin, would have).
  std::uint64_t owner_prune_reuses() const { return reuse_joins_.load(std::memory_order_relaxed); }

  // ------------------------------------------------------------ groups
  // Several operations of one thread in one failure-atomic region (the
  // StrandWeaver paper's Figure 10, operations per SFR): logging::Group
  // (workloads.h) takes the locks of every operation, in the one global
  // order, and sets them here; the operations' own Regions and read locks
  // then nest in it (they take nothing). The thread's own state; `locks`
  // outlives the group.
  void set_group(int tid, const std::vector<Lock*>* locks) { st(tid).group = locks; }
  bool grouped(int tid) { return st(tid).group != nullptr; }
  bool group_holds(int tid, const Lock* l) {
    const auto* g = st(tid).group;
    return g != nullptr && std::find(g->begin(), g->end(), l) != g->end();
  }

 private:
  struct Done {
    std::uint64_t start, end;
    std::vector<detail::Dep> deps;
    std::vector<void*> frees;
  };
  struct alignas(64) State {
    ThreadLog* log = nullptr;
    std::uint64_t tail = 0;        // volatile tail (Fig. 6(a))
    std::uint64_t clock = 0;       // Lamport clock of the last entry
    std::uint64_t last_clock = 0;  // clock of the last region-ending entry
    std::uint64_t region = 0;
    bool in_region = false;
    int depth = 0;
    std::vector<detail::Dep> deps;  // of the current region
    std::vector<void*> frees;       // of the current region
    // strand: the byte ranges [lo, hi) the current region's store entries
    // logged (write: a range logged once per region)
    std::vector<std::pair<std::uint64_t, std::uint64_t>> logged;
    const std::vector<Lock*>* group = nullptr;  // the open Group's locks
    // HOPS+ closed nesting: locks released inside the open outermost
    // section, still locked until it ends (release).
    std::vector<Lock*> held;
    // Every lock the thread has locked (take), with the region its acquire
    // belongs to (kPending while the acquire runs, kNoRegion outside a
    // region): a full log releases them all (abort_region).
    std::vector<std::pair<Lock*, std::uint64_t>> locked;
    bool handed_over = false;   // the open region released a lock to others
    bool poisoned = false;      // a region that handed a lock over met a full log
    bool rolled_back = false;   // rolled_back()
    bool ended_one = false;     // last_end is set
    std::uint64_t last_end = 0;  // seq of the last region-ending entry
    // strand: the end seq of the first region this thread pruned itself
    // (Logger::prune, not helping) since its last join_strand, kNoSeq if
    // none. Those prunes are ordered only within the thread's current
    // strand; append joins before an entry reuses one of their end slots.
    std::uint64_t unjoined_prune_end = kNoSeq;
    // Guards `done`, log->head and the entries of the regions in `done`
    // once complete (the owner and helpers prune under it).
    std::mutex mu;
    std::deque<Done> done;          // complete, not yet pruned (mu)
    // DRAM mirror of log->head, read by other threads' prune decisions and
    // by the owner before it reuses a slot (acquire/release: a reader that
    // sees it also sees the region's invalidation stores ordered before
    // it). Written under mu.
    std::atomic<std::uint64_t> pruned{0};
  };

  State& st(int tid) {
    if (tid < 0 || tid >= threads_) throw std::out_of_range("logging: tid outside the logger's threads");
    return state_[static_cast<std::size_t>(tid)];
  }
  // HOPS+ under ATLAS: locks released inside an outermost section stay
  // locked until it ends (kHopsPlus above; the broken variant
  // kOpenNesting hands them over at once).
  bool closed_nesting() const {
    return opt_.instrumentation == Instrumentation::kHopsPlus && opt_.language == Language::kAtlas &&
           (opt_.faults & internal::kOpenNesting) == 0;
  }
  bool writes_back() const {
    return opt_.instrumentation == Instrumentation::kX86 || opt_.instrumentation == Instrumentation::kStrand;
  }

  void implicit_begin(State& s) {
    if (s.in_region) return;
    if (opt_.language != Language::kSfr) throw std::logic_error("logging: store outside a failure-atomic region");
    s.rolled_back = false;
    begin_region(s, EntryType::kBegin, 0, nullptr);
  }

  static constexpr std::uint64_t kPending = ~std::uint64_t{0};
  static constexpr std::uint64_t kNoRegion = ~std::uint64_t{0} - 1;
  static constexpr std::uint64_t kNoSeq = ~std::uint64_t{0};
  int tid_of(const State& s) const { return static_cast<int>(&s - state_.get()); }
  // The acquire of `l` is logged (or needs no entry): it belongs to the
  // open region, if any.
  void mark_acquired(State& s, Lock& l) {
    for (auto& [lk, region] : s.locked)
      if (lk == &l) region = s.in_region ? s.region : kNoRegion;
  }
  void unlocked(State& s, Lock& l) {
    for (auto it = s.locked.begin(); it != s.locked.end(); ++it)
      if (it->first == &l) {
        s.locked.erase(it);
        return;
      }
  }

  // The log has no room for an entry of `need` slots (append). Waits for
  // room as make_room does (bounded: other threads may wait for a lock this
  // thread holds), then, still full, rolls the open region back and
  // releases the thread's locks (LogFull) — unless the region handed a lock
  // over, which only its end may make visible consistently (length_error,
  // the region stays open and can no longer end).
  [[noreturn]] void overflow_fail(State& s, std::uint64_t cap) {
    if (s.handed_over) {
      s.poisoned = true;
      throw std::length_error("logging: undo log full (" + std::to_string(cap) +
                              " entries) in a region that already released a lock to other threads: it cannot be "
                              "rolled back alone");
    }
    abort_region(tid_of(s), s);
    throw LogFull("logging: undo log full (" + std::to_string(cap) +
                  " entries; a region larger than the log, or regions deferred behind a thread that does not run): "
                  "the region was rolled back and its locks released");
  }
  void overflow(State& s, std::uint64_t need) {
    const int tid = tid_of(s);
    const std::uint64_t cap = s.log->capacity;
    prune_until(tid, static_cast<std::size_t>(need));
    if (s.tail - s.pruned.load(std::memory_order_acquire) + need > cap) overflow_fail(s, cap);
  }

  // Rolls the open region back during the run (LogFull) the way recovery
  // would (Fig. 6(b) steps 3 and 4, for one region), gives its slots back
  // and unlocks every lock the thread holds. No other thread read the
  // region's stores (it handed no lock over), so undoing it alone is
  // consistent; its blocks allocated are unreachable (pool recovery frees
  // them), its retired blocks stay linked.
  void abort_region(int tid, State& s) {
    const std::uint64_t cap = s.log->capacity;
    const std::uint64_t region = s.in_region ? s.region : kNoRegion;
    if (s.in_region) {
      for (std::uint64_t q = s.tail; q-- > s.region;) {
        LogEntry& e = s.log->entries[q % cap];
        if (detail::type_of(e) != EntryType::kStore) continue;
        void* dst = reinterpret_cast<void*>(e.addr);
        persist::store_bytes(dst, e.value, detail::size_of(e));
        if (writes_back()) persist::pwb(dst, detail::size_of(e));  // [site: abort-rollback-pwb]
      }
      // PERSIST: the old values are durable before any entry describing
      // them is invalidated (as recovery's step 3 before step 4). Without
      // it (internal::kNoRollbackDurable) the LogFull campaigns of
      // table2_crash_test.cc find a region partly visible.
      if ((opt_.faults & internal::kNoRollbackDurable) == 0) prune_durable();
      for (std::uint64_t q = s.tail; q-- > s.region;) {
        LogEntry* e = &s.log->entries[q % cap];
        persist::store(&e->meta, std::uint64_t{0});
        if (writes_back()) persist::pwb(&e->meta, sizeof e->meta);  // [site: abort-invalidate-pwb]
        // CRASH: newest first, each durable before the next: a crash here
        // leaves the region's older entries live and incomplete, whose
        // rollback by recovery writes the old values again (idempotent).
        prune_durable();
      }
      // ORDER: under strand that last prune_durable was this thread's own
      // JoinStrand (Eq. 2): every prune it issued before is ordered before
      // its next entries, so P4's mark clears as at joined().
      if (opt_.instrumentation == Instrumentation::kStrand) s.unjoined_prune_end = kNoSeq;
      // The region's seqs are reused: its entries are durably invalid, and
      // nothing outside the thread names them (it handed no lock over).
      s.tail = s.region;
      s.in_region = false;
      s.deps.clear();
      s.frees.clear();
      s.logged.clear();
    }
    // Unlock newest first. A lock taken in an earlier region (SFR: the
    // region ended at the acquire) may guard stores of that region: its next
    // acquirer depends on the thread's last region end, as after a logged
    // release. A lock taken in the rolled-back region keeps the release it
    // was acquired from.
    for (auto it = s.locked.rbegin(); it != s.locked.rend(); ++it) {
      Lock* l = it->first;
      if (opt_.language == Language::kSfr && it->second != region && it->second != kPending && s.ended_one)
        l->last_ = {static_cast<std::uint64_t>(tid) + 1, s.last_end, s.last_clock};
      l->give();
    }
    s.locked.clear();
    s.held.clear();
    s.depth = 0;
    s.group = nullptr;
    s.handed_over = false;
    s.rolled_back = true;
  }

  LogEntry* append(State& s, EntryType type, std::uint64_t addr, const void* value, std::size_t size,
                   bool commit) {
    const std::uint64_t cap = s.log->capacity;
    // One slot stays free for an open region's end entry (commit): a
    // region that got its entries can always end, and a full log is met
    // at an entry the region can be rolled back from (overflow).
    const std::uint64_t need = commit ? 1 : 2;
    // ORDER: acquire pairs with the release in prune(): a helper's
    // invalidations of a reused slot happen before this entry's store.
    if (s.tail - s.pruned.load(std::memory_order_acquire) + need > cap) overflow(s, need);
    if (opt_.instrumentation == Instrumentation::kStrand && s.unjoined_prune_end != kNoSeq &&
        s.tail >= cap && s.tail - cap >= s.unjoined_prune_end) {
      // PERSIST: the owner's own prune under strand (StrandWeaver §V: the
      // log's slots are reused on the next lap). This entry reuses the
      // slot of seq tail - cap, at or past the end entry of a region this
      // thread pruned since its last JoinStrand: the prune's invalidations
      // and head are ordered only within the thread's current strand
      // (order_prune: a persist barrier, Eq. 1), while this entry may be
      // on a new strand (Fig. 5: NewStrand after each log/update pair),
      // ordered after them only word by word (SPA, Eq. 3). If it lands on
      // such an end slot, a crash may persist some words of it but not its
      // meta word, nor the invalidations of the region's other slots:
      // the end entry fails its checksum, the region's other entries are
      // live, and recovery undoes a completed region (and every later
      // region of the thread). JoinStrand (Eq. 2) orders the prune before
      // this entry. Reached only when an end slot is reused before the
      // thread's next join: a region pruned with the region after it in
      // one go (deferred ATLAS / SFR regions: prune_ready, make_room),
      // then a region that writes most of a lap before its own join —
      // small logs, or a ring full of deferred regions (overflow, make_room
      // giving up) whose next entries land on the batch's first slots
      // (owner_prune_crash_test.cc); a region pruned alone, at
      // its end, has its end slot reused only by the next region's end
      // entry, after that region's pre_end join. Without it:
      // internal::kNoOwnerPruneJoin.
      reuse_joins_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
      if ((opt_.faults & internal::kNoOwnerPruneJoin) == 0) ordering_joined(s);
    }
    LogEntry v{};
    v.seq = s.tail++;
    v.region = s.in_region ? s.region : v.seq;
    v.clock = ++s.clock;
    v.addr = addr;
    if (size > 0) std::memcpy(v.value, value, size);
    v.meta = kValid | (commit ? kCommit : 0) | (static_cast<std::uint64_t>(type) << 8) |
             (static_cast<std::uint64_t>(size) << 16);
    v.meta |= static_cast<std::uint64_t>(detail::checksum(v)) << 32;
    LogEntry* e = &s.log->entries[v.seq % cap];
    persist::store(e, v);
    // CRASH: a 64-byte store may tear at 8-byte words; a torn entry fails
    // its checksum and counts as never written (its update is ordered after
    // it, so it cannot have persisted either).
    persist::declare_store(e, sizeof *e);
    return e;
  }

  // The ordering after an undo-like entry that precedes stores of its region.
  void order_entry(LogEntry* e) {
    switch (opt_.instrumentation) {
      case Instrumentation::kX86:
        // PERSIST: an acquire entry carries the synchronization history
        // (the lock's last release): durable before the region's end entry,
        // or a completed region that acquired from an undone one is kept
        // (caught: logging-atlas-handoff, 2 threads, x86).
        persist::pwb(e, sizeof *e);  // [site: sync-entry-pwb]
        // CRASH: not caught by any campaign (x86, abstract): the entry needs
        // to be durable only before its region's end entry, which pre_end's
        // pfence orders after it (as the region's updates, P2); before that
        // the region is undone whatever its begin entry says, and its
        // rollback reads only the store entries, each ordered before its
        // update by its own publish_fence (write). Kept for Table 1's
        // "Log-Acq(L); CLFLUSH Log" (the x86 column measured by `ferrite
        // bench` and `ferrite sim`): a removal candidate, docs/logging.md.
        persist::publish_fence();  // [site: sync-entry-fence]
        break;
      // CRASH: the other instrumentations' fences here are not caught
      // either (hops / hops+: the hand-off campaigns; strand: the barrier
      // and the NewStrand), for the reason above: pre_end's ofence, or its
      // JoinStrand (Eq. 2: every earlier strand of the thread), orders the
      // entry before the end entry. The strand pwb is caught under x86
      // (logging-atlas-handoff/correct-strand), as the x86 one.
      case Instrumentation::kHops:
      case Instrumentation::kHopsPlus: persist::ofence(); break;
      case Instrumentation::kStrand:
        persist::pwb(e, sizeof *e);
        persist::persist_barrier();
        persist::new_strand();
        break;
    }
  }
  // The region's updates before its terminating entry (P2).
  void pre_end(State& s) {
    switch (opt_.instrumentation) {
      case Instrumentation::kX86: persist::pfence(); break;  // Table 1 "SFENCE; Log-Rel(L)" [site: pre-end-pfence]
      case Instrumentation::kHops:
      case Instrumentation::kHopsPlus: persist::ofence(); break;  // "OFENCE; Log-Rel(L)" [site: hops-pre-end-ofence]
      case Instrumentation::kStrand: ordering_joined(s); break;  // Fig. 5 log_end: JoinStrand
    }
  }
  // JoinStrand by the thread that owns `s` (Eq. 2: every earlier store of
  // the thread, its own prunes included, before every later one).
  void joined(State& s) {
    persist::join_strand();  // [site: strand-join]
    s.unjoined_prune_end = kNoSeq;
  }
  // A JoinStrand that only orders (log_end's before the end entry, and the
  // ones before an entry above): where the HOPS code issues an ofence, not
  // a durability point — marked for the timing model's hops replay of a
  // strand recording (persist::note_ordering_join).
  void ordering_joined(State& s) {
    persist::note_ordering_join();
    joined(s);
  }
  void make_durable(State& s, LogEntry* e) {
    switch (opt_.instrumentation) {
      case Instrumentation::kX86:
        persist::pwb(e, sizeof *e);  // [site: end-entry-pwb]
        persist::psync();  // "CLFLUSH Log": durable before the unlock / return [site: end-entry-psync]
        break;
      case Instrumentation::kHops:
      case Instrumentation::kHopsPlus:
        if ((opt_.faults & internal::kNoDurableEnd) == 0) persist::dfence();  // "Log-Rel(L); DFENCE; Unlock L" [site: hops-end-dfence]
        break;
      case Instrumentation::kStrand:
        persist::pwb(e, sizeof *e);
        joined(s);
        break;
    }
  }
  void order_prune() {
    switch (opt_.instrumentation) {
      case Instrumentation::kX86: persist::pfence(); break;  // [site: order-prune-pfence]
      case Instrumentation::kHops:
      case Instrumentation::kHopsPlus: persist::ofence(); break;  // [site: hops-order-prune-ofence]
      case Instrumentation::kStrand: persist::persist_barrier(); break;  // [site: strand-order-prune-barrier]
    }
  }

  void begin_region(State& s, EntryType type, std::uint64_t addr, const detail::Dep* dep) {
    LogEntry* e = append(s, type, addr, dep, dep != nullptr ? sizeof *dep : 0, false);
    s.in_region = true;
    s.region = e->seq;
    s.handed_over = false;
    s.deps.clear();
    s.logged.clear();
    order_entry(e);
  }

  // Writes the region's end entry with the commit marker (Fig. 6(a) step
  // 2), durable. Then it is pruned (or deferred, if a region it depends on
  // is not pruned yet) — or, with batched commits (commit_batch > 1), left
  // to the release's commit_batch(). Returns the entry's seq.
  std::uint64_t end_region(int tid, State& s, EntryType type, std::uint64_t addr) {
    if (s.poisoned) throw std::logic_error("logging: a region that met a full log after handing a lock over cannot end");
    pre_end(s);
    LogEntry* e = append(s, type, addr, nullptr, 0, true);
    const std::uint64_t seq = e->seq;
    s.last_clock = e->clock;
    s.last_end = seq;
    s.ended_one = true;
    make_durable(s, e);
    // CRASH: from here the region is complete (I3): recovery keeps it
    // unless it depends on an undone one.
    s.in_region = false;
    {
      std::lock_guard<std::mutex> g(s.mu);
      s.done.push_back(Done{s.region, seq, std::move(s.deps), std::move(s.frees)});
    }
    s.deps.clear();
    s.frees.clear();
    if (internal::stop_commit_after_step == 1) return seq;
    if (opt_.commit_batch == 1) prune_ready(s, tid, false);
    return seq;
  }

  // ATLAS / SFR, after a release freed the lock: the batched commit
  // (LoggerOptions::commit_batch) of the thread's complete regions.
  // ORDER: after the unlock, so the prune's ordering points are not on the
  // lock's critical path; the regions are complete (their end entries
  // durable, P2) before another thread can acquire from them, and a region
  // left complete but unpruned is what recovery keeps (step 2).
  void commit_batch(int tid, State& s) {
    if (opt_.commit_batch == 1 || internal::stop_commit_after_step == 1) return;
    prune_ready(s, tid, false, opt_.commit_batch);
  }

  // Prunes and yields until `entries` are free or nothing is deferred, for
  // at most kMaxWait (a loaded machine may deschedule the thread we wait
  // for for a while).
  void prune_until(int tid, std::size_t entries) {
    if (room(tid) >= entries || deferred(tid) == 0) return;
    const auto until = std::chrono::steady_clock::now() + kMaxWait;
    for (std::uint64_t i = 0; room(tid) < entries && deferred(tid) > 0; ++i) {
      flush_deferred(tid);
      if (room(tid) >= entries) break;
      help(tid);
      flush_deferred(tid);
      if (room(tid) >= entries) break;
      // A retry of a wait for another thread: a scheduling point of the
      // crash campaigns' controlled scheduling (sync::spin_wait), a yield
      // outside it.
      sync::spin_wait();
      std::this_thread::yield();
      if ((i & 255) == 255 && std::chrono::steady_clock::now() > until) break;
    }
  }

  bool deps_pruned(const Done& d) {
    for (const auto& dep : d.deps) {
      const auto& o = state_[static_cast<std::size_t>(dep.tid_plus_1 - 1)];
      // ORDER: acquire pairs with the release in prune(): the dependency's
      // invalidations and head are issued before we prune after it.
      if (o.pruned.load(std::memory_order_acquire) <= dep.seq) return false;
    }
    return true;
  }

  // Prunes the ready deferred regions of `s` in order, from thread `tid`:
  // the log's owner, or a helper (which frees the
  // regions' retired blocks into its own arena: any tid may free any
  // block). A helper does not wait for the owner's mutex.
  // With `at_least` > 0, only if the thread has that many complete regions
  // (commit_batch).
  void prune_ready(State& s, int tid, bool helping, std::size_t at_least = 0) {
    std::unique_lock<std::mutex> g(s.mu, std::defer_lock);
    if (helping) {
      if (!g.try_lock()) return;
    } else {
      g.lock();
    }
    if (s.done.size() < at_least) return;
    // The ready prefix: in program order (I4 within the thread), each
    // region's dependencies pruned (I4 across threads).
    std::size_t n = 0;
    while (n < s.done.size() && deps_pruned(s.done[n])) ++n;
    if (n == 0) return;
    prune(s, s.done.begin(), s.done.begin() + static_cast<std::ptrdiff_t>(n), helping);
    if (helping) helped_.fetch_add(n, std::memory_order_relaxed);  // relaxed: a statistic
    for (std::size_t i = 0; i < n; ++i)
      for (void* p : s.done[i].frees) pool_->heap().free(p, tid);
    s.done.erase(s.done.begin(), s.done.begin() + static_cast<std::ptrdiff_t>(n));
  }
  // One pass over the other threads' logs, pruning what is ready.
  void help(int tid) {
    for (int t = 0; t < threads_; ++t)
      if (t != tid) prune_ready(state_[static_cast<std::size_t>(t)], tid, true);
  }
  // A helper's prune is durable before the owner may reuse its slots: the
  // owner's ordering of its own prune before its next entry (order_prune)
  // orders only the owner's stores. (Also the durable point of abort_region.)
  void prune_durable() {
    switch (opt_.instrumentation) {
      case Instrumentation::kX86: persist::psync(); break;  // [site: prune-durable-psync]
      case Instrumentation::kHops:
      case Instrumentation::kHopsPlus: persist::dfence(); break;  // [site: prune-durable-dfence]
      case Instrumentation::kStrand: persist::join_strand(); break;  // [site: prune-durable-join]
    }
  }

  // Fig. 6(a) steps 3 and 4 (P3) for the regions [first, last) of the
  // thread's complete ones, in one batch: every non-end entry of every
  // region, one ordering point, every end entry, one ordering point, the
  // head past the last region (a helper: then its durability fence) — two
  // per batch (LoggerOptions::commit_batch), as for a single region. A crash inside
  // leaves each region of the batch whole or as its end entry alone
  // (complete, nothing to undo: kept) or gone. Under s.mu.
  using DoneIt = std::deque<Done>::iterator;
  void prune(State& s, DoneIt first, DoneIt last, bool helping) {
    const std::uint64_t cap = s.log->capacity;
    for (DoneIt d = first; d != last; ++d) {
      for (std::uint64_t q = d->start; q < d->end; ++q) {
        LogEntry* e = &s.log->entries[q % cap];
        persist::store(&e->meta, std::uint64_t{0});
        if (writes_back()) persist::pwb(&e->meta, sizeof e->meta);  // [site: prune-invalidate-pwb]
      }
    }
    // ORDER: each end entry (commit marker) is invalidated after every other
    // entry of its region (P3): a crash never leaves an incomplete-looking
    // remainder of a complete region.
    order_prune();
    if (internal::stop_commit_after_step == 2) return;
    for (DoneIt r = first; r != last; ++r) {
      LogEntry* end = &s.log->entries[r->end % cap];
      persist::store(&end->meta, std::uint64_t{0});
      // CRASH: this write-back and the head's below each cover the other's
      // loss (mutation testing suppresses one site at a time: neither is
      // caught, docs/logging.md; one of the two may go, not both). Without
      // this one, the end entry stays valid until the head, written back and
      // ordered next, passes it: before that the region is its end entry
      // alone (complete, nothing to undo: kept), after it the entry is below
      // the head (not live, I1), and a later lap's entry in the slot is
      // ordered after the head (by the fence of an entry between them under
      // x86 and HOPS, P4's join under strand; prune_durable when helping).
      // Without the head's, every entry the head would pass is invalidated
      // and written back (above, ordered by order_prune): a stale head
      // bounds only invalid entries; recovery's step 5 and the attach take
      // the tail past every live entry.
      if (writes_back()) persist::pwb(&end->meta, sizeof end->meta);  // [site: prune-end-pwb]
    }
    const Done& d = *std::prev(last);
    order_prune();
    persist::store(&s.log->head, d.end + 1);
    if (writes_back()) persist::pwb(&s.log->head, sizeof s.log->head);  // [site: prune-head-pwb]
    // PERSIST: pruned on the owner's behalf (helping), the head and the
    // invalidations are durable before `pruned` lets the owner reuse a
    // slot: the owner's next entry is another thread's store. What must not
    // happen is an image with the region's end entry gone (overwritten by
    // the owner's entry for a later lap) while its other entries are still
    // live (their invalidation not persisted): recovery would undo a
    // completed region. x86 and HOPS do not need this call for that: the
    // owner writes the slots in order, each entry ordered before the next
    // (publish_fence; ofence), so its entry in the end slot persists only
    // after its entries in the region's other slots; and an owner's store
    // to a line persists with or after the helper's store to that line (a
    // line's write-back under x86; HOPS's cross-thread rule), which is
    // after the helper's earlier invalidations (order_prune). Campaign
    // TableTwoCrashSmallLog.HelpedPrunesStayConsistentWithoutTheHelpers-
    // DurabilityFence runs the variant without it (kNoHelperPruneDurable)
    // clean under x86, abstract and hops. Under strand it is needed: the
    // owner's entries are on separate strands, ordered after the helper's
    // stores only per word (SPA) — a torn entry in the end slot whose meta
    // word did not persist hides the end entry while the region's other
    // slots still hold its live entries (the image exists under the
    // strand model without this fence: helper_prune_crash_test.cc; a
    // campaign reaches it only rarely, docs/logging.md). Kept under every
    // model: one durable fence per region a helper prunes (make_room /
    // drain only).
    if (helping) {
      if ((opt_.faults & internal::kNoHelperPruneDurable) == 0) prune_durable();
      else order_prune();
    }
    // CRASH: the owner's prune ends with the head's write-back and no
    // ordering point (Fig. 6(a) step 4 names none). What follows it — the
    // unlock, the next region's entries — needs the head ordered before it
    // nowhere: the second ordering point above already orders every
    // invalidation of the batch before every later store of the thread
    // (x86, HOPS) or of its current strand (strand), so an image with a
    // later entry and the old head has every entry the old head admits
    // and the new one would not invalid (not live, I1) — the stale head
    // bounds only invalid entries, as when the head's write-back is lost
    // (above). A later entry that reuses a slot of the batch is ordered
    // after its invalidation by that same point (x86, HOPS) or by P4's
    // join (strand, append). Until stop 39 a third ordering point stood
    // here; it put one acknowledgement per region on the lock's critical
    // path under x86 and strand (docs/results.md, "Why strandweaver trails
    // hops on the single-lock queue").
    // ORDER: the owner's prune, ordered within its current strand only:
    // append joins before an entry reuses this end slot (strand).
    if (!helping && s.unjoined_prune_end == kNoSeq) s.unjoined_prune_end = first->end;
    if (internal::stop_commit_after_step == 3) return;
    s.pruned.store(d.end + 1, std::memory_order_release);
  }

  pmem::Pool* pool_;
  LogArea* area_;
  LoggerOptions opt_;
  int threads_ = 0;
  std::unique_ptr<State[]> state_;
  std::atomic<std::uint64_t> helped_{0};
  std::atomic<std::uint64_t> reuse_joins_{0};
};

}  // namespace ferrite::logging
