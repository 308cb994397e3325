// ferrite/montage/epoch_sys.h — nbMontage's epoch system: payload blocks,
// lin_CAS (DCSS), to-be-persisted / to-be-freed buffers, nonblocking epoch
// advance, wait-free sync, and recovery by a scan of the payload blocks.
//
// Paper: W. Cai, H. Wen, V. Beadle, C. Kjellqvist, M. Hedayati, M. L. Scott,
// "Fast Nonblocking Persistence for Concurrent Data Structures", DISC 2021.
// Figure 2 is the specification; "l.N" cites its line N (numbering in
// montage/layout.h). §3.4's recovery rules are "rule 1–3".
//
// What it is. A structure built on EpochSys keeps its index in DRAM and only
// its semantically essential data in payload blocks (PBlk) in the pool. An
// update operation creates payloads with pnew, names the payloads it
// removes with pdetach, and linearizes at one lin_CAS on a 16-byte CASObj.
// lin_CAS tags the operation's payloads (and creates anti-nodes for the
// detached ones) with the current epoch, then runs a DCSS that succeeds
// only if the global epoch is still that epoch. Epochs advance in the
// background (or on sync); the advance from e to e+1 writes back every
// block tagged e-1 and the descriptors of threads that ran in e-1. After a
// crash in epoch e, recovery keeps exactly the blocks of operations that
// linearized in epochs <= e-2: a prefix of the pre-crash linearization
// (buffered durable linearizability). sync() advances the epoch twice, so
// everything that completed before it is durable when it returns.
//
// What a user can count on. A crash loses at most the operations of the
// last two epochs (call sync() to make them durable); a clean close or
// destruction syncs. The destructor of EpochSys — and so of every
// structure built on it (queue, hash map, split-ordered map, BST, skip
// list), including through a std::unique_ptr at a normal exit — stops the
// advancer and runs sync(): every operation completed before the
// destruction is durable. Only abandon() (a test that simulates a crash
// in-process) skips it; a process that dies without running destructors
// (a signal, _exit, a crash) is a crash.
//
// Threads. `threads` at create is the system's capacity, recorded in the
// root (MontageRoot::max_threads): attach accepts any count in [1, that
// capacity] (the descriptors of the other threads are recovered all the
// same); above it attach throws std::invalid_argument naming both numbers.
//
// Thread safety. Every member taking `tid` may be called concurrently for
// distinct thread ids in [0, max_threads); one id, one thread at a time.
// load/cas/store on CASObj, advance, sync: any thread. Recovery (attach)
// runs alone, before any operation.
//
// Invariants (crash-free).
//  I1 Leaves of the mindicator only grow; once the global epoch is e, every
//     leaf is >= e-1 (advance e-1 -> e raised every leaf below e-1 first).
//  I2 A thread's TBP[e%4] holds (at least) every block it tagged e and not
//     yet written back, and every block it reset while its op was in e.
//  I3 A descriptor's status word holds the serial number of its current
//     attempt; an attempt is decided once (IN_PROGRESS -> COMMITTED or
//     FAILED by one CAS), COMMITTED only after a load of the global epoch
//     returned the attempt's epoch. That load is the operation's
//     linearization point (the paper's proof of Theorem 2).
//  I4 A CASObj holding a descriptor (cnt odd) is always resolved (helped)
//     before any thread acts on its value.
//
// Persistence invariants.
//  P1 (l.98–106) Before the global epoch moves from e to e+1, for every
//     thread whose leaf is below e: its TBP[e-1] blocks and its descriptor
//     are written back and made durable, and only then is its leaf raised.
//     The sync is per thread, before the raise (the paper has one sfence
//     at l.104): a concurrent advancer that sees the raised leaf skips the
//     thread. It is a psync, not a pfence: a pfence orders only the issuing
//     thread's write-backs, and another thread makes the epoch durable.
//  P2 (l.61–65) A thread that starts an operation in a later epoch than its
//     last writes back its old TBP and its descriptor and psyncs BEFORE
//     it raises its leaf and reinitializes its descriptor: the resets of
//     its failed attempt (epoch 0) are durable before the new serial number
//     can be, so an old block never looks committed by "s < sn" (§3.4).
//  P3 Before the CAS that moves the epoch from e to e+1, e is written back
//     and psynced: the durable epoch (what recovery calls "the epoch of the
//     crash") is never more than one behind the epoch in memory. sync()
//     writes back the epoch it reached before it returns.
//  P4 A deleted payload is reset (epoch 0, l.50–51) only once the durable
//     epoch is two past its detach, and the reset is durable (psync) before
//     its anti-node is reset and freed (a crash never leaves the payload
//     without the anti-node that cancels it).
//  P5 (D2 in docs/montage.md) A block leaves a to-be-persisted buffer only
//     durable: a full buffer is written back whole and psynced by its
//     producer before its entries are dropped (the paper drops the oldest
//     entry after a bare write-back, l.9–10), and an advancer moves
//     `popped` (l.21) only after its psync (another advancer that finds the
//     buffer empty skips the thread).
//
// Deviations from Figure 2 and why: docs/montage.md §3 (D1–D12).
//
// Recovery (attach; §3.4). Reads only the pool: the durable global epoch
// e, the descriptors' status words and every block of every slab (the
// blocks are classified by EpochOptions::recovery_threads threads over
// disjoint slabs; everything after the classification is one thread's). A block
// B (stamp = its slab's, tagged by thread t with serial s, epoch f) is in
// use iff rule 1: 0 < f <= e-2, rule 2: s < sn_t or (s == sn_t and
// COMMITTED), rule 3: a payload not cancelled by an in-use anti-node with
// its uid. Then it makes the decision durable, so that later runs (whose
// descriptors' serial numbers grow) never revive a rejected block: every
// block not kept is reset — payloads first, pfence, then anti-nodes — and
// psynced; only then is the global epoch moved past every epoch the crashed
// run used (max(e, largest tag) + 2) and psynced. Interrupted anywhere,
// recovery runs again with the same e and descriptors and decides the
// same: it is idempotent. The kept payloads go to the structure, which
// rebuilds its DRAM index from them.
//
// Allocation. Blocks come from 64 KiB slabs (heap blocks) of one block size
// each (a multiple of 64 bytes: the header plus the payload rounded up to a
// line), per thread and size class; a slab is linked into the root (header
// written back and psynced, then the root's slab_head) before any of its blocks
// is used, so recovery finds every block by walking the slab list. The
// root's recover hook marks every slab live; slabs are never returned to
// the heap. Free lists are DRAM (rebuilt by recovery).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ferrite/montage/internal/faults.h"
#include "ferrite/montage/layout.h"
#include "ferrite/montage/mindicator.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"
#include "ferrite/sync/dwcas.h"

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace ferrite::montage {

// The 16-byte CAS of sync/dwcas.h (`lock cmpxchg16b`, a full barrier) is
// seq_cst on x86, but ThreadSanitizer does not derive happens-before from
// the 16-byte __sync builtins (it reported a node's construction racing
// with a helper's CAS on it, the node having been published by a 16-byte
// CAS). Under TSan these wrappers add the acquire/release edges the
// instruction provides; elsewhere they are the plain calls.
// Every CASObj read is followed by a validating CAS or is the Fig. 1
// non-verifying load (a plain read in the paper): none needs the locked
// instruction's fence, so the shared (non-writing) 16-byte load serves.
template <class T>
inline T dw_load(T* p) {
  T v = sync::dwload_shared(p);
#if defined(__SANITIZE_THREAD__)
  __tsan_acquire(p);
#endif
  return v;
}
template <class T>
inline bool dw_cas(T* p, T expected, T desired) {
#if defined(__SANITIZE_THREAD__)
  __tsan_release(p);
#endif
  const bool ok = sync::dwcas(p, expected, desired);
#if defined(__SANITIZE_THREAD__)
  __tsan_acquire(p);
#endif
  return ok;
}

// The 16-byte CAS object (Fig. 1 CASObj). cnt even: val is the value and
// cnt counts successful changes (no ABA); cnt odd: val is a Desc* installed
// by attempt cnt >> 1 of that descriptor (a DCSS in progress).
struct alignas(16) CASWord {
  std::uint64_t val;
  std::uint64_t cnt;
  friend bool operator==(const CASWord&, const CASWord&) = default;
};
class CASObj {
 public:
  explicit CASObj(std::uint64_t v = 0) : w_{v, 0} {}
  CASObj(const CASObj&) = delete;
  CASObj& operator=(const CASObj&) = delete;

 private:
  template <unsigned>
  friend class EpochSys;
  CASWord w_;
};

struct EpochOptions {
  // Background advancer period; 0: the epoch advances only on sync() (what
  // the crash campaigns use: a thread of its own would escape their
  // scheduler). The paper's default is 10 ms (§5.1).
  std::chrono::microseconds epoch_length{10000};
  std::size_t tbp_capacity = 64;  // §5.1: 64-entry TBP buffers
  // Threads that classify the pool's blocks in recovery (the scan of §3.4,
  // read-only), then rebuild a map's DRAM index; the resets and the epoch
  // move between the two are one thread's, in a fixed order (D9).
  int recovery_threads = 1;
};

// What a recovery found (for tests and `docs/montage.md`).
struct RecoveryStats {
  std::uint64_t crash_epoch = 0;    // the durable global epoch found
  std::uint64_t new_epoch = 0;      // the epoch the new run starts in
  std::uint64_t blocks_seen = 0;    // blocks with a valid stamp and type
  std::uint64_t payloads_kept = 0;
  std::uint64_t rejected_epoch = 0;      // rule 1
  std::uint64_t rejected_uncommitted = 0;  // rule 2
  std::uint64_t cancelled = 0;           // rule 3
  std::uint64_t slabs = 0;
};

template <unsigned F = fault::kNone>
class EpochSys {
 public:
  // What a structure templated on its system (EpochSys<F> or, for the
  // transient original, TransientSys: transient_sys.h) names: payloads
  // persist; the CAS object and the payload block are the pool's.
  static constexpr bool kPersistent = true;
  using CASObj = montage::CASObj;
  using Blk = PBlk;
  static constexpr std::uint64_t kInitialEpoch = MontageRoot::kInitialEpoch;
  // Size classes. Small (0..63): every multiple of a cache line from 64 B
  // to 4 KiB (layout version 2; version 1 had the powers of two). A block is
  // its header plus its payload rounded up to a line, so a slab holds as
  // many blocks as fit (1 KiB values: 56 blocks of 1152 B, where the 2 KiB
  // class held 31): recovery's scan touches every page of every slab, and
  // on this density it touches about one page per 4 KiB of live payload,
  // not two. Medium (64..79): four classes per doubling above 4 KiB (5, 6,
  // 7, 8, 10, ... 56 KiB, then 64 KiB - 64), blocks of one 64 KiB slab.
  // Large (80..111): a slab of k chunks holding ONE block of k * 64 KiB - 64
  // bytes, k = 2..7, then four classes per doubling up to 640 chunks (40
  // MiB): the byte-string maps' payloads (bytes_hash_map.h). Every class
  // wastes at most a quarter of its block (plus a slab's tail). A pool
  // holding medium or large slabs is read by this code only (older code
  // rejects their block size: "a bad block size").
  static constexpr int kSmallClasses = 64;   // 64 B, 128 B, ..., 4 KiB
  static constexpr int kMediumClasses = 16;  // 5 KiB .. 64 KiB - 64 B
  static constexpr int kLargeClasses = 32;   // 2 .. 640 chunks
  static constexpr int kClasses = kSmallClasses + kMediumClasses + kLargeClasses;
  static constexpr std::size_t class_bytes(int c) {
    if (c < kSmallClasses) return std::size_t{64} * static_cast<std::size_t>(c + 1);
    if (c < kSmallClasses + kMediumClasses) {
      const int j = c - kSmallClasses;
      if (j == kMediumClasses - 1) return kSlabBytes - sizeof(SlabHeader);
      return (std::size_t{4096} << (j / 4)) * static_cast<std::size_t>(5 + j % 4) / 4;
    }
    const int i = c - kSmallClasses - kMediumClasses;
    const std::size_t k = i < 6 ? static_cast<std::size_t>(i + 2)
                                : (std::size_t{8} << ((i - 6) / 4)) * static_cast<std::size_t>(4 + (i - 6) % 4) / 4;
    return k * kSlabBytes - sizeof(SlabHeader);
  }
  // The heap block of a slab of class c: one 64 KiB chunk, or (large) the
  // chunks its one block needs.
  static constexpr std::size_t slab_bytes(int c) {
    return c < kSmallClasses + kMediumClasses ? kSlabBytes : class_bytes(c) + sizeof(SlabHeader);
  }
  static constexpr std::size_t kMaxPayload = class_bytes(kClasses - 1) - sizeof(PBlkHeader);
  // The class of a block of `bytes` (header included): the smallest that holds it.
  static int class_for(std::size_t bytes) {
    if (bytes == 0 || bytes > class_bytes(kClasses - 1))
      throw std::invalid_argument("montage: block of " + std::to_string(bytes) + " bytes is larger than the largest (" +
                                  std::to_string(class_bytes(kClasses - 1)) + ")");
    if (bytes <= class_bytes(kSmallClasses - 1)) return static_cast<int>((bytes + 63) / 64) - 1;
    int c = kSmallClasses;
    while (class_bytes(c) < bytes) ++c;
    return c;
  }

  // ------------------------------------------------------------ lifecycle
  // A fresh epoch system in a new root `name` of `pool` for a structure of
  // `kind`. The root is initialized by its constructor inside
  // Pool::create_root, whose write-back and publication (psync) make it
  // durable whole: create issues no persistence verb of its own.
  static std::unique_ptr<EpochSys> create(pmem::Pool& pool, std::string_view name, Kind kind, int threads,
                                          const EpochOptions& opt = {}) {
    check_threads(threads);
    auto* root = pool.create_root<MontageRoot>(name, static_cast<std::uint64_t>(kind), static_cast<std::uint64_t>(threads));
    return std::unique_ptr<EpochSys>(new EpochSys(pool, root, threads, opt, kInitialEpoch));
  }
  // Recovery (§3.4), then a running epoch system. `kept` receives every
  // in-use payload, in slab order.
  static std::unique_ptr<EpochSys> attach(pmem::Pool& pool, MontageRoot* root, int threads,
                                          std::vector<PBlk*>* kept, const EpochOptions& opt = {},
                                          RecoveryStats* stats = nullptr) {
    check_attach(root, threads);
    RecoveryStats st;
    std::vector<std::vector<PBlk*>> free_blocks(kClasses);
    const std::uint64_t run = recover(pool, root, kept, &free_blocks, &st, std::max(1, opt.recovery_threads));
    auto es = std::unique_ptr<EpochSys>(new EpochSys(pool, root, threads, opt, run));
    // Free blocks go to the threads' lists round robin.
    for (int c = 0; c < kClasses; ++c) {
      std::size_t i = 0;
      for (PBlk* b : free_blocks[static_cast<std::size_t>(c)])
        es->ts(static_cast<int>(i++ % static_cast<std::size_t>(threads))).cls[c].free.push_back(b);
    }
    if (stats != nullptr) *stats = st;
    return es;
  }

  // A clean close: the advancer stops, then sync() makes every completed
  // operation durable (unless abandon() was called). Operations must have
  // returned; the pool must still be open.
  // What attach refuses before it touches anything (structures call it
  // before they build their DRAM side): a thread count outside [1,
  // kMaxThreads] or above the root's capacity (the creation's count; a
  // root without one, 0, has no bound but kMaxThreads), a bad magic.
  static void check_attach(const MontageRoot* root, int threads) {
    check_threads(threads);
    check_root(*root);
    if (root->max_threads != 0 && static_cast<std::uint64_t>(threads) > root->max_threads)
      throw std::invalid_argument("montage: attach for " + std::to_string(threads) +
                                  " threads, but the structure was created for at most " +
                                  std::to_string(root->max_threads) +
                                  " (its thread capacity: create it with more to use more)");
  }

  ~EpochSys() {
    stop_advancer();
    if (abandoned_) return;
    try {
      // PERSIST: two advances write back every thread's to-be-persisted
      // buffers and descriptor, then the epoch reached (sync's P3): a
      // restart finds every operation that returned before the close.
      sync();
    } catch (const std::exception& e) {
      // sync issues only write-backs and fences on the pool's mapping: no
      // failure is known. Never let one escape a destructor.
      std::fprintf(stderr, "montage: sync at close failed: %s\n", e.what());
    }
  }
  // Drops this run as a crash would: the destructor then frees DRAM only
  // and syncs nothing (the last two epochs' operations may be lost). For
  // tests that simulate a crash without a second process.
  void abandon() { abandoned_ = true; }
  EpochSys(const EpochSys&) = delete;
  EpochSys& operator=(const EpochSys&) = delete;

  // The root's own words, as every attach and the recover hook read them:
  // its magic, a structure kind this library writes, a thread capacity of at
  // most kMaxThreads, an epoch no lower than a fresh root's (epochs only
  // grow). Throws PoolError(kCorrupt) naming the word. The hook runs it so
  // that `ferrite check` and Pool::open refuse what attach would (the fuzz
  // campaign's flipped magic and kind words were "sound" to the check and
  // then refused by attach).
  static void check_root(const MontageRoot& root) {
    auto corrupt = [](const std::string& what) { return pmem::PoolError(pmem::Errc::kCorrupt, "montage: root " + what); };
    if (root.magic != kRootMagic) throw corrupt("has a bad magic");
    switch (static_cast<Kind>(root.kind)) {
      case Kind::kQueue: case Kind::kHashMap: case Kind::kBst: case Kind::kSkipList: case Kind::kSplitOrdered:
      case Kind::kBytesHashMap: case Kind::kBytesSkipList: case Kind::kBytesQueue: case Kind::kTest:
        break;
      default:
        throw corrupt("names an unknown structure kind " + std::to_string(root.kind));
    }
    if (root.max_threads > static_cast<std::uint64_t>(kMaxThreads))
      throw corrupt("says a thread capacity of " + std::to_string(root.max_threads) + " (at most " +
                    std::to_string(kMaxThreads) + ")");
    if (root.global_epoch.load(std::memory_order_relaxed) < MontageRoot::kInitialEpoch)
      throw corrupt("has an epoch below a fresh root's");
  }

  // The root type's recover hook (pmem/root_registry.h): the root's words
  // (check_root), then every slab is live. The classification of the blocks
  // in them is attach()'s.
  static void recover_root(pmem::Pool& pool, MontageRoot* root, const std::function<void(void*)>& mark) {
    check_root(*root);
    std::uint64_t off = root->slab_head.load(std::memory_order_relaxed);
    std::uint64_t guard = 0;
    while (off != 0) {
      if (off >= pool.size() || ++guard > (pool.size() / kSlabBytes) + 1)
        throw std::runtime_error("montage: slab list is corrupt");
      auto* s = pool.at<SlabHeader>(off);
      if (s->magic != kSlabMagic) throw std::runtime_error("montage: slab with a bad magic");
      mark(s);
      off = s->next;
    }
  }

  int max_threads() const { return threads_; }
  pmem::Pool& pool() const { return pool_; }  // the pool the blocks are in (offsets in errors)
  std::uint64_t epoch() const { return root_->global_epoch.load(std::memory_order_seq_cst); }
  MontageRoot* root() const { return root_; }

  // -------------------------------------------------------------- payloads
  // pnew (Fig. 1): a payload of `bytes` bytes, owned by the calling
  // thread's current operation until its lin_CAS (l.25 allocs).
  PBlk* pnew_bytes(int tid, std::size_t bytes) {
    if (bytes > kMaxPayload)
      throw std::invalid_argument("montage: a payload of " + std::to_string(bytes) + " bytes is larger than the largest (" +
                                  std::to_string(kMaxPayload) + " bytes)");
    PBlk* b = alloc_block(tid, bytes + sizeof(PBlkHeader));
    ThreadState& s = ts(tid);
    b->epoch.store(0, std::memory_order_relaxed);
    b->tid_sn.store(0, std::memory_order_relaxed);
    b->uid_run.store(run_, std::memory_order_relaxed);
    b->uid_seq.store(static_cast<std::uint64_t>(tid) << 40 | ++s.uid_counter, std::memory_order_relaxed);
    b->size.store(bytes, std::memory_order_relaxed);
    b->anti.store(0, std::memory_order_relaxed);
    b->seal(kPayload);
    s.allocs.push_back(b);
    return b;
  }
  template <class T, class... A>
  PBlk* pnew(int tid, A&&... args) {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                  "payloads are raw bytes in the pool");
    PBlk* b = pnew_bytes(tid, sizeof(T));
    new (b->data()) T(std::forward<A>(args)...);
    return b;
  }
  template <class T>
  static const T& get(const PBlk* b) {
    return *static_cast<const T*>(b->data());
  }
  // A writable view of a payload that is still the caller's own (created by
  // pnew and not attached yet); nbMontage's payloads are immutable once
  // attached (§3.2 constraint 3).
  template <class T>
  T& own(int tid, PBlk* b) {
    if (!owned(tid, b)) throw std::logic_error("montage: writing a payload that is already attached");
    return *static_cast<T*>(b->data());
  }
  // Copy-on-write setter: a payload the operation may modify. Its own
  // unattached payload is returned as is; an attached one (tagged in an
  // older operation) is copied into a new payload and the original is
  // detached, so the operation's lin_CAS replaces one by the other.
  PBlk* open_write(int tid, PBlk* b) {
    if (owned(tid, b)) return b;
    const std::size_t n = b->size.load(std::memory_order_relaxed);
    PBlk* c = pnew_bytes(tid, n);
    std::memcpy(c->data(), b->data(), n);
    pdetach(tid, b);
    return c;
  }
  bool owned(int tid, const PBlk* b) {
    const auto& a = ts(tid).allocs;
    return std::find(a.begin(), a.end(), b) != a.end();
  }

  // Makes the anti-node allocation of the calling thread's next lin_CAS
  // (l.71, one detach) unable to fail: a block of the anti-nodes' class on
  // its free list (a failed attempt's anti-node returns there, abort_op).
  // An update that calls it before its pnew throws PoolError(kFull) from
  // one of the two, before it changes anything, when the pool is full.
  void reserve_anti(int tid) {
    ClassState& cs = ts(tid).cls[class_for(sizeof(PBlkHeader))];
    if (cs.free.empty()) cs.free.push_back(alloc_block(tid, sizeof(PBlkHeader)));
  }

  // Only for the broken variant fault::kFreeOnDetach: b reset and returned
  // to the allocator now, as pdelete does after its delay.
  void free_now(int tid, PBlk* b) { destroy(tid, b); }

  // pdetach (Fig. 1): `b` is removed if the operation's lin_CAS succeeds.
  void pdetach(int tid, PBlk* b) { ts(tid).detaches.push_back(b); }

  // pdelete (l.54–58): returns b to the allocator once safe for recovery.
  // Its detach linearized in some epoch d <= e (now); the payload may go
  // once every recovery would drop it, i.e. once the DURABLE epoch is
  // >= e+2; the anti-node one epoch after that (P4). The durable epoch is
  // at least the in-memory one minus 1 (P3), hence e+3 and e+4 below (the
  // paper's buckets free at e+2 / e+3 of the in-memory epoch: a crash
  // between an advance's CAS and its write-back of the epoch would then
  // find a payload freed and reused that its recovery still needs — the
  // campaigns found this). Call pdelete when no thread can reach b any
  // more (the structure's SMR). Deviation: the paper's four TBF buckets
  // indexed by epoch mod 4 also free a block too early when the calling
  // thread was idle for four or more epochs; we keep (epoch, block) queues.
  void pdelete(int tid, PBlk* b) {
    ThreadState& s = ts(tid);
    const std::uint64_t e = root_->global_epoch.load(std::memory_order_seq_cst);  // l.55
    auto it = std::find(s.allocs.begin(), s.allocs.end(), b);  // l.56
    if (it != s.allocs.end()) s.allocs.erase(it);
    auto* anti = reinterpret_cast<PBlk*>(b->anti.load(std::memory_order_relaxed));
    if (anti != nullptr) s.tbf_anti.push_back({e + 4, anti});  // l.57
    s.tbf_payload.push_back({e + 3, b});                         // l.58
  }

  // ------------------------------------------------------------ CASObj
  // Non-verifying load: resolves an installed descriptor first (I4).
  std::uint64_t load(CASObj& o) {
    for (;;) {
      CASWord w = dw_load(&o.w_);
      if ((w.cnt & 1) == 0) return w.val;
      help(o, w);
    }
  }
  // Non-verifying CAS (Fig. 1): no epoch check, no payloads.
  bool cas(CASObj& o, std::uint64_t expected, std::uint64_t desired) {
    for (;;) {
      CASWord w = dw_load(&o.w_);
      if ((w.cnt & 1) != 0) {
        help(o, w);
        continue;
      }
      if (w.val != expected) return false;
      if (dw_cas(&o.w_, w, CASWord{desired, w.cnt + 2})) return true;
    }
  }
  void store(CASObj& o, std::uint64_t v) {
    for (;;) {
      CASWord w = dw_load(&o.w_);
      if ((w.cnt & 1) != 0) {
        help(o, w);
        continue;
      }
      if (dw_cas(&o.w_, w, CASWord{v, w.cnt + 2})) return;
    }
  }
  // A store into an object no other thread can see yet (a fresh node).
  static void init(CASObj& o, std::uint64_t v) { o.w_ = CASWord{v, 0}; }

  // lin_CAS (Fig. 1): the operation's linearization point. Tags the
  // operation's payloads and anti-nodes with the current epoch (begin_op),
  // then a DCSS: o changes from `expected` to `desired` only if the global
  // epoch is still that epoch. Conflict: abort_op, false. Epoch advanced:
  // reset_op (re-tag with the new epoch) and retry. Success: end_op, true.
  bool lin_cas(int tid, CASObj& o, std::uint64_t expected, std::uint64_t desired) {
    ThreadState& s = ts(tid);
    Desc& d = root_->descs[tid];
    begin_op(tid, false);
    for (;;) {
      CASWord w = dw_load(&o.w_);
      if ((w.cnt & 1) != 0) {
        help(o, w);
        continue;
      }
      if (w.val != expected) {
        abort_op(tid);
        return false;
      }
      const std::uint64_t sn = status_sn(d.status.load(std::memory_order_relaxed));
      // ORDER: the fields are written before the descriptor is installed
      // (the install is a seq_cst 16-byte CAS); helpers read them only
      // after seeing the install.
      d.old_val.store(expected, std::memory_order_relaxed);
      d.old_cnt.store(w.cnt, std::memory_order_relaxed);
      d.new_val.store(desired, std::memory_order_relaxed);
      d.obj.store(reinterpret_cast<std::uint64_t>(&o), std::memory_order_relaxed);
      const CASWord installed{reinterpret_cast<std::uint64_t>(&d), sn << 1 | 1};
      if (!dw_cas(&o.w_, w, installed)) continue;
      complete(&d, sn, installed, &o.w_);
      const std::uint64_t st = d.status.load(std::memory_order_seq_cst);
      if (status_of(st) == kCommitted) {
        note_commit(s.e_curr);
        end_op(tid);
        return true;
      }
      // CRASH: a FAILED attempt: its blocks carry (tid, sn), which the
      // durable status never calls committed, until reset_op resets them
      // durably before the next serial number (P2).
      reset_op(tid);
    }
  }

  // abort_op (l.82–94): abandons the current attempt (also public, Fig. 1).
  void abort_op(int tid) { abort_op_impl(tid, false); }

  // ---------------------------------------------------- advance and sync
  // advance (l.98–106): moves the global epoch from its current value e to
  // e+1 after persisting what threads did in e-1. `force` = false (the
  // background advancer) advances only if some operation committed in e-1
  // or e (l.105, which keeps lin_CAS lock-free); sync forces.
  void advance(bool force = true) {
    const std::uint64_t e = root_->global_epoch.load(std::memory_order_seq_cst);  // l.99
    for (;;) {
      const int t = mindi_.find_below(e);  // l.100
      if (t < 0) break;
      const std::uint64_t v = mindi_.leaf(t);
      if (v >= e) continue;
      typename CircBuffer::Range popped[4];
      const std::uint64_t first = e - v > 4 ? e - 4 : v;
      if constexpr ((F & fault::kNoTbpWriteback) == 0) {
        // PERSIST: l.101 — the blocks thread t tagged (or reset) in v..e-1
        // (I1: v == e-1 unless a thread was never raised; older buffers
        // are written back too, harmlessly).
        for (std::uint64_t x = first; x < e; ++x) popped[x % 4] = ts(t).tbp[x % 4].write_back_all();
      }
      // PERSIST: l.102 — t's descriptor: the status of its attempts of e-1.
      persist::pwb(&root_->descs[t], sizeof(Desc));
      // PERSIST: l.104, per thread and before the raise (P1). A psync,
      // not a pfence: an advancer that sees the raised leaf skips t and
      // makes the epoch durable, and a pfence orders only this thread's
      // write-backs (under the abstract model they could still be lost).
      persist::psync();  // [site: advance-thread-psync]
      for (std::uint64_t x = first; x < e; ++x) ts(t).tbp[x % 4].commit(popped[x % 4]);  // P5
      mindi_.raise_from(t, v, e);  // l.103
    }
    if (force || last_commit_.load(std::memory_order_seq_cst) + 1 >= e) {  // l.105
      // PERSIST: P3 — e itself is durable before e+1 exists in memory
      // (whoever moved the epoch to e may not have written it back yet).
      persist::pwb(&root_->global_epoch, sizeof(std::uint64_t));  // [site: pre-cas-epoch-pwb]
      persist::psync();
      std::uint64_t expected = e;
      // ORDER: seq_cst: a thread whose epoch load precedes this CAS pushed
      // its blocks before the load, so the scan above saw them (I2).
      root_->global_epoch.compare_exchange_strong(expected, e + 1, std::memory_order_seq_cst);  // l.106
    }
  }

  // sync (Fig. 1): every operation that completed before the call is
  // durable when it returns. Two advances from the epoch read at the call
  // (the paper's "advance from e to e+2"); wait-free: each advance is
  // bounded and an advance that loses its CAS means another one succeeded.
  void sync() {
    const std::uint64_t target = root_->global_epoch.load(std::memory_order_seq_cst) + 2;
    while (root_->global_epoch.load(std::memory_order_seq_cst) < target) advance(true);
    // PERSIST: the epoch reached is durable before sync returns (the last
    // CAS may have been another thread's, not yet written back).
    persist::pwb(&root_->global_epoch, sizeof(std::uint64_t));
    persist::psync();
  }

  // Test hooks.
  std::size_t tbp_pending(int tid) {
    std::size_t n = 0;
    for (auto& b : ts(tid).tbp) n += b.pending();
    return n;
  }
  std::size_t free_blocks(int tid, int c) { return ts(tid).cls[c].free.size(); }
  std::uint64_t leaf(int tid) const { return mindi_.leaf(tid); }
  std::uint64_t serial(int tid) const { return status_sn(root_->descs[tid].status.load(std::memory_order_relaxed)); }
  std::size_t tbf_pending(int tid) { return ts(tid).tbf_payload.size() + ts(tid).tbf_anti.size(); }

 private:
  // The SPMC to-be-persisted buffer (l.1–21): the owner pushes, any
  // advancer pops (writes back) a range. Duplicate write-backs are harmless.
  class CircBuffer {
   public:
    void init(std::size_t cap) {
      cap_ = cap;
      blks_.reset(new std::atomic<PBlk*>[cap]);
      for (std::size_t i = 0; i < cap; ++i) blks_[i].store(nullptr, std::memory_order_relaxed);
    }
    void push(PBlk* item) {  // l.5–12, single producer
      const std::uint64_t cpush = pushed_.load(std::memory_order_relaxed);  // own counter
      const std::uint64_t cpop = popped_.load(std::memory_order_seq_cst);
      if (cpush >= cpop + cap_) {  // l.8: full
        // PERSIST: l.9–10, amended. The paper writes back the oldest entry
        // and drops it; but an entry that leaves the buffer is never seen
        // by an advance again, and an advance's fence covers only its own
        // write-backs: the entry must be DURABLE before it leaves (the
        // campaigns lost anti-nodes here under x86). We write back the
        // whole buffer and psync once: one psync per `cap` pushes.
        for (std::uint64_t i = cpop; i < cpush; ++i) write_back(blks_[i % cap_].load(std::memory_order_relaxed));
        persist::psync();  // [site: tbp-full-psync]
        std::uint64_t c = cpop;
        popped_.compare_exchange_strong(c, cpush, std::memory_order_seq_cst);  // l.10
      }
      blks_[cpush % cap_].store(item, std::memory_order_relaxed);  // l.11
      // ORDER: seq_cst (l.12): an advancer that reads the new count sees the
      // entry; see advance() for why every entry it must see is there.
      pushed_.store(cpush + 1, std::memory_order_seq_cst);
    }
    // pop_all (l.13–21) in two halves, because entries may leave the
    // buffer only once DURABLE (P5): another advancer that finds the buffer
    // empty skips this thread, and our psync covers only our write-backs
    // (the campaigns found a payload whose write-back was still pending in
    // a stopped advancer while another one made the next epoch durable).
    //   auto r = write_back_all();  ... psync ...  commit(r);
    struct Range {
      std::uint64_t from = 0, to = 0;
    };
    Range write_back_all() {
      const std::uint64_t cpop = popped_.load(std::memory_order_seq_cst);  // l.14
      const std::uint64_t cpush = pushed_.load(std::memory_order_seq_cst);  // l.15
      if (cpop >= cpush) return {cpop, cpop};  // l.16–17
      // l.19: at most one lap; older entries were made durable by the
      // producer before it dropped them (push).
      const std::uint64_t from = cpush - cpop > cap_ ? cpush - cap_ : cpop;
      for (std::uint64_t i = from; i < cpush; ++i) write_back(blks_[i % cap_].load(std::memory_order_relaxed));  // l.20
      return {cpop, cpush};
    }
    // After the caller's psync.
    void commit(const Range& r) {
      if (r.from == r.to) return;
      std::uint64_t c = r.from;
      popped_.compare_exchange_strong(c, r.to, std::memory_order_seq_cst);  // l.21
    }
    std::size_t pending() const {
      return static_cast<std::size_t>(pushed_.load(std::memory_order_seq_cst) - popped_.load(std::memory_order_seq_cst));
    }

   private:
    static void write_back(PBlk* b) {
      if (b == nullptr) return;
      // A stale entry may name a block reused since: writing it back is
      // harmless (its current contents belong to a later tagging).
      if constexpr ((F & fault::kNoPayloadWriteback) != 0) {
        persist::pwb(b, sizeof(PBlkHeader));  // the broken variant: the header line only
      } else {
        persist::pwb(b, sizeof(PBlkHeader) + b->size.load(std::memory_order_relaxed));
      }
    }
    std::size_t cap_ = 0;
    std::atomic<std::uint64_t> pushed_{0}, popped_{0};
    std::unique_ptr<std::atomic<PBlk*>[]> blks_;
  };

  struct ClassState {
    SlabHeader* slab = nullptr;
    std::uint64_t next = 0;
    std::vector<PBlk*> free;
  };
  struct alignas(128) ThreadState {
    std::uint64_t e_curr = 0, e_last = 0;  // l.24
    std::vector<PBlk*> allocs, detaches;   // l.25
    // The anti-node of detaches[i] (l.72 keeps it in the payload; a
    // payload that two threads try to detach at once would then lose the
    // winner's anti-node to the loser's abort_op: the winner's commit
    // stores it into the payload instead, in end_op).
    std::vector<PBlk*> antis;
    CircBuffer tbp[4];                     // l.28
    std::deque<std::pair<std::uint64_t, PBlk*>> tbf_payload, tbf_anti;  // l.53 (see pdelete)
    ClassState cls[kClasses];
    std::uint64_t uid_counter = 0;
  };

  EpochSys(pmem::Pool& pool, MontageRoot* root, int threads, const EpochOptions& opt, std::uint64_t run)
      : pool_(pool), root_(root), threads_(threads), opt_(opt), run_(run),
        mindi_(threads, root->global_epoch.load(std::memory_order_relaxed)),
        ts_(new ThreadState[static_cast<std::size_t>(threads)]) {
    const std::uint64_t e = root->global_epoch.load(std::memory_order_relaxed);
    for (int t = 0; t < threads; ++t) {
      ts(t).e_last = e;
      for (auto& b : ts(t).tbp) b.init(opt.tbp_capacity);
    }
    if (opt.epoch_length.count() > 0) advancer_ = std::thread([this] { run_advancer(); });
  }

  static void check_threads(int threads) {
    if (threads <= 0 || threads > kMaxThreads)
      throw std::invalid_argument("montage: threads must be in [1, " + std::to_string(kMaxThreads) + "]");
  }
  ThreadState& ts(int tid) {
    if (tid < 0 || tid >= threads_) throw std::out_of_range("montage: thread id " + std::to_string(tid) + " out of range");
    return ts_[static_cast<std::size_t>(tid)];
  }

  void note_commit(std::uint64_t e) {
    std::uint64_t c = last_commit_.load(std::memory_order_relaxed);
    while (c < e && !last_commit_.compare_exchange_weak(c, e, std::memory_order_seq_cst)) {
    }
  }

  // setup (l.44–48): tags b for the attempt (sn, e), or resets it (desc
  // absent: epoch 0), and registers it for write-back in epoch e.
  void setup(int tid, PBlk* b, std::uint64_t type, const Desc* d, std::uint64_t e) {
    b->epoch.store(d != nullptr ? d->epoch.load(std::memory_order_relaxed) : 0, std::memory_order_relaxed);  // l.46
    b->tid_sn.store(d != nullptr ? make_tid_sn(static_cast<std::uint64_t>(tid), status_sn(d->status.load(std::memory_order_relaxed))) : 0,
                    std::memory_order_relaxed);  // l.47
    b->seal(type);  // l.45
    ts(tid).tbp[e % 4].push(b);  // l.48
  }
  // destructor (l.49–51): the block is no longer live (epoch 0; the
  // header's checksum no longer matches either); written back now
  // (the caller fences where P4 needs it) and returned to the allocator.
  void destroy(int tid, PBlk* b) {
    b->epoch.store(0, std::memory_order_relaxed);  // l.50
    persist::pwb(&b->epoch, sizeof(std::uint64_t));  // l.51 [site: destroy-pwb]
    free_block(tid, b);
  }

  void begin_op(int tid, bool reset) {  // l.59–76
    ThreadState& s = ts(tid);
    Desc& d = root_->descs[tid];
    s.e_curr = root_->global_epoch.load(std::memory_order_seq_cst);  // l.60
    if (s.e_last < s.e_curr) {  // l.61
      // PERSIST: l.62–63 — what this thread tagged or reset in e_last,
      // and its descriptor, before the leaf is raised and the serial number
      // grows (P2).
      const auto popped = s.tbp[s.e_last % 4].write_back_all();
      persist::pwb(&d, sizeof(Desc));  // [site: catch-up-desc-pwb]
      // PERSIST: a psync (see advance): advancers skip a raised leaf.
      persist::psync();  // [site: catch-up-psync]
      s.tbp[s.e_last % 4].commit(popped);  // P5
      mindi_.raise(tid, s.e_curr);  // l.64
    }
    // l.66–67 (to-be-freed), with P4's order.
    bool freed_payloads = false;
    while (!s.tbf_payload.empty() && s.tbf_payload.front().first <= s.e_curr) {
      destroy(tid, s.tbf_payload.front().second);
      s.tbf_payload.pop_front();
      freed_payloads = true;
    }
    if (!s.tbf_anti.empty() && s.tbf_anti.front().first <= s.e_curr) {
      // PERSIST: P4 — the payload resets are durable before any anti-node
      // that cancels them is reset and freed (a payload reset in an earlier
      // begin_op was synced by the psync at l.63 of a later one). A psync:
      // the freed anti-node's block is reused, and its new contents are
      // written back by other threads.
      if (freed_payloads) persist::psync();  // [site: p4-psync]
      while (!s.tbf_anti.empty() && s.tbf_anti.front().first <= s.e_curr) {
        destroy(tid, s.tbf_anti.front().second);
        s.tbf_anti.pop_front();
      }
    }
    // l.65 reinit: a new serial number, status IN_PROGRESS, the epoch.
    const std::uint64_t sn = status_sn(d.status.load(std::memory_order_relaxed)) + 1;
    d.epoch.store(s.e_curr, std::memory_order_relaxed);
    // ORDER: seq_cst store: a helper that reads this serial number reads
    // the epoch stored above.
    d.status.store(status_word(sn, kInProgress), std::memory_order_seq_cst);
    // CRASH: the new serial number may become durable from here on (by
    // eviction); every reset of the previous attempt already is (P2) or
    // sits in TBP[e_curr], written back before any crash whose recovery
    // could consider blocks tagged e_curr.
    if (!reset) s.antis.clear();
    for (std::size_t i = 0; i < s.detaches.size(); ++i) {  // l.69–74
      PBlk* r = s.detaches[i];
      if (!reset) {
        PBlk* anti = alloc_block(tid, sizeof(PBlkHeader));  // l.71
        anti->size.store(0, std::memory_order_relaxed);
        anti->anti.store(0, std::memory_order_relaxed);
        s.antis.push_back(anti);  // l.72
        anti->uid_run.store(r->uid_run.load(std::memory_order_relaxed), std::memory_order_relaxed);  // l.73
        anti->uid_seq.store(r->uid_seq.load(std::memory_order_relaxed), std::memory_order_relaxed);
      }
      setup(tid, s.antis[i], kAnti, &d, s.e_curr);  // l.74
    }
    for (PBlk* p : s.allocs) setup(tid, p, kPayload, &d, s.e_curr);  // l.75–76
  }

  void end_op(int tid) {  // l.77–81
    ThreadState& s = ts(tid);
    // The committed detaches: pdelete finds the anti-node in the payload.
    for (std::size_t i = 0; i < s.detaches.size(); ++i)
      s.detaches[i]->anti.store(reinterpret_cast<std::uint64_t>(s.antis[i]), std::memory_order_relaxed);
    s.antis.clear();
    s.detaches.clear();
    s.allocs.clear();
    s.e_last = s.e_curr;
    s.e_curr = 0;
  }

  void abort_op_impl(int tid, bool reset) {  // l.82–94
    ThreadState& s = ts(tid);
    if (s.e_curr == 0) {  // not inside lin_CAS: nothing was tagged
      s.detaches.clear();
      return;
    }
    if (reset) {
      for (PBlk* anti : s.antis) setup(tid, anti, kAnti, nullptr, s.e_curr);  // l.84–85
    } else {
      for (PBlk* anti : s.antis) {  // l.87–89
        // CRASH: the anti-node's reset is written back here and, being in
        // TBP[e_curr] since its tagging, again by the advance that makes
        // e_curr recoverable; a crash before that recovers nothing of
        // e_curr.
        destroy(tid, anti);
      }
      s.antis.clear();
      s.detaches.clear();  // l.90
    }
    for (PBlk* p : s.allocs) setup(tid, p, kPayload, nullptr, s.e_curr);  // l.91–92
    s.e_last = s.e_curr;  // l.93
    s.e_curr = 0;         // l.94
  }

  void reset_op(int tid) {  // l.95–97
    abort_op_impl(tid, true);
    begin_op(tid, true);
  }

  // The DCSS helper (App. B of the full paper, reconstructed): decides the
  // attempt installed in w (COMMITTED iff the global epoch still equals the
  // attempt's epoch; I3), then uninstalls it.
  // `o` is the object the installed word was read from: the uninstalling CAS
  // goes there (not to d->obj, which may already name the owner's next
  // attempt's object).
  void help(CASObj& o, const CASWord& w) { complete(reinterpret_cast<Desc*>(w.val), w.cnt >> 1, w, &o.w_); }
  void complete(Desc* d, std::uint64_t sn, const CASWord& installed, CASWord* obj) {
    std::uint64_t st = d->status.load(std::memory_order_seq_cst);
    if (status_sn(st) == sn && status_of(st) == kInProgress) {
      const std::uint64_t e = d->epoch.load(std::memory_order_relaxed);
      // ORDER: seq_cst load of the epoch, then the deciding CAS: the
      // attempt linearizes at this load if the CAS commits it (I3).
      const std::uint64_t g = root_->global_epoch.load(std::memory_order_seq_cst);
      d->status.compare_exchange_strong(st, status_word(sn, g == e ? kCommitted : kFailed), std::memory_order_seq_cst);
      st = d->status.load(std::memory_order_seq_cst);
    }
    // The descriptor moved on: attempt sn was uninstalled already.
    if (status_sn(st) != sn) return;
    const std::uint64_t cnt = d->old_cnt.load(std::memory_order_relaxed);
    const CASWord repl = status_of(st) == kCommitted ? CASWord{d->new_val.load(std::memory_order_relaxed), cnt + 2}
                                                     : CASWord{d->old_val.load(std::memory_order_relaxed), cnt};
    // Succeeds only while the object still holds this very attempt, whose
    // fields were fixed before its install: the values read are its own.
    dw_cas(obj, installed, repl);
  }

  // ---------------------------------------------------------- allocation
  PBlk* alloc_block(int tid, std::size_t bytes) {
    const int c = class_for(bytes);
    ClassState& cs = ts(tid).cls[c];
    if (!cs.free.empty()) {
      PBlk* b = cs.free.back();
      cs.free.pop_back();
      return b;
    }
    if (cs.slab == nullptr || cs.next == cs.slab->nblocks) {
      cs.slab = new_slab(tid, c);
      cs.next = 0;
    }
    auto* b = reinterpret_cast<PBlk*>(reinterpret_cast<char*>(cs.slab) + sizeof(SlabHeader) + cs.next * class_bytes(c));
    ++cs.next;
    b->stamp.store(cs.slab->stamp, std::memory_order_relaxed);
    return b;
  }
  void free_block(int tid, PBlk* b) {
    const std::uint64_t size = b->size.load(std::memory_order_relaxed);
    ts(tid).cls[class_for(size + sizeof(PBlkHeader))].free.push_back(b);
  }
  // Lock-free (no mutex held across verbs): a CAS pushes the slab on the
  // root's list.
  SlabHeader* new_slab(int tid, int c) {
    void* mem = pool_.heap().alloc(slab_bytes(c), tid % pool_.heap().arenas());
    auto* s = static_cast<SlabHeader*>(mem);
    s->magic = kSlabMagic;
    s->block_size = class_bytes(c);
    s->stamp = run_ << 24 | (slab_counter_.fetch_add(1, std::memory_order_relaxed) + 1);  // unique: an RMW
    s->nblocks = (slab_bytes(c) - sizeof(SlabHeader)) / class_bytes(c);
    const std::uint64_t off = pool_.offset_of(s);
    std::uint64_t head = root_->slab_head.load(std::memory_order_acquire);
    for (;;) {
      s->next = head;
      // PERSIST: the slab header (with its `next`) before the root names
      // it; a crash between leaves an unlinked heap block, which the pool's
      // recovery frees. A psync, not a pfence: the next slab, linked by
      // another thread, names this one as its `next`.
      persist::pwb(s, sizeof(SlabHeader));
      persist::psync();
      // ORDER: release: a thread that links the next slab reads this one's
      // header through the list.
      if (root_->slab_head.compare_exchange_strong(head, off, std::memory_order_acq_rel)) break;
    }
    // PERSIST: the slab is linked before any block of it is written back (a
    // durable block is always found by recovery's walk): the head written
    // back is this slab or a later one whose chain reaches it. A psync:
    // other threads (advancers) write the blocks back.
    persist::pwb(&root_->slab_head, sizeof(std::uint64_t));
    persist::psync();
    return s;
  }

  // ------------------------------------------------------------ recovery
  static std::uint64_t recover(pmem::Pool& pool, MontageRoot* root, std::vector<PBlk*>* kept,
                               std::vector<std::vector<PBlk*>>* free_blocks, RecoveryStats* st, int nthreads = 1) {
    const std::uint64_t e = root->global_epoch.load(std::memory_order_relaxed);
    st->crash_epoch = e;
    std::uint64_t sn[kMaxThreads], dst[kMaxThreads];
    std::uint64_t max_epoch = e;
    for (int t = 0; t < kMaxThreads; ++t) {
      const std::uint64_t w = root->descs[t].status.load(std::memory_order_relaxed);
      sn[t] = status_sn(w);
      dst[t] = status_of(w);
      max_epoch = std::max(max_epoch, root->descs[t].epoch.load(std::memory_order_relaxed));
    }
    struct Key {
      std::uint64_t run, seq;
      bool operator==(const Key&) const = default;
    };
    struct KeyHash {
      std::size_t operator()(const Key& k) const { return std::hash<std::uint64_t>()(k.run * 0x9e3779b97f4a7c15ull ^ k.seq); }
    };
    // uid: read while the scan has the header's line (rule 3 joins on it
    // without touching the block again).
    struct Found {
      PBlk* b;
      int c;
      Key uid;
    };
    // The slab list first (one thread: a linked list), then the blocks
    // classified by `nthreads` threads over disjoint slabs; each thread's
    // findings are merged in slab order, so the result does not depend on
    // the thread count.
    std::vector<SlabHeader*> slabs;
    for (std::uint64_t off = root->slab_head.load(std::memory_order_relaxed); off != 0;) {
      auto* slab = pool.at<SlabHeader>(off);
      if (slab->magic != kSlabMagic) throw std::runtime_error("montage: slab with a bad magic");
      if (slab->block_size == 0 || slab->block_size > class_bytes(kClasses - 1) ||
          class_bytes(class_for(slab->block_size)) != slab->block_size ||
          slab->nblocks != (slab_bytes(class_for(slab->block_size)) - sizeof(SlabHeader)) / slab->block_size ||
          off + slab_bytes(class_for(slab->block_size)) > pool.size())
        throw std::runtime_error("montage: slab with a bad block size");
      slabs.push_back(slab);
      off = slab->next;
    }
    st->slabs = slabs.size();
    struct Part {
      std::vector<Found> payloads, antis;
      std::vector<PBlk*> reset_payloads, reset_antis;
      std::vector<std::pair<PBlk*, std::uint64_t>> stamps;  // not ours: the allocator's stamp, stored last
      std::vector<std::vector<PBlk*>> free_blocks = std::vector<std::vector<PBlk*>>(kClasses);
      std::uint64_t max_epoch = 0, blocks_seen = 0, rejected_epoch = 0, rejected_uncommitted = 0;
    };
    auto classify = [&](Part& part, std::size_t from, std::size_t to) {
      auto in_use = [&](PBlk* b) {  // rules 1 and 2
        const std::uint64_t f = b->epoch.load(std::memory_order_relaxed);
        if (f == 0 || f + 2 > e) {
          ++part.rejected_epoch;
          return false;
        }
        const std::uint64_t id = b->tid_sn.load(std::memory_order_relaxed);
        const std::uint64_t t = id >> kSnBits, s = id & kSnMask;
        if (t >= static_cast<std::uint64_t>(kMaxThreads)) {
          ++part.rejected_uncommitted;
          return false;
        }
        bool ok = s < sn[t] || (s == sn[t] && dst[t] == kCommitted);
        if constexpr ((F & fault::kAcceptUncommitted) != 0) ok = s <= sn[t] && s != 0;
        if (!ok) ++part.rejected_uncommitted;
        return ok;
      };
      for (std::size_t i = from; i < to; ++i) {
        SlabHeader* slab = slabs[i];
        const int c = class_for(slab->block_size);
        for (std::uint64_t j = 0; j < slab->nblocks; ++j) {
          auto* b = reinterpret_cast<PBlk*>(reinterpret_cast<char*>(slab) + sizeof(SlabHeader) + j * slab->block_size);
          const std::uint64_t type = b->type();
          const bool mine = (type == kPayload || type == kAnti) && b->stamp.load(std::memory_order_relaxed) == slab->stamp;
          if (!mine) {
            // Never used, reset, torn, or left by an earlier use of this
            // memory. The allocator needs the stamp, but storing it now
            // could complete a header torn only in its stamp word (a block
            // of the crashed run, tagged e-1 or e): the decision would then
            // not be durable — once the restored epoch is, that block
            // passes rule 1, and rule 2 once the new run's serial numbers
            // pass its own (found by the two-crash campaign, D19). So a
            // tagged block is reset with the rejected ones, and the stamp
            // is stored only after every reset is durable.
            if (b->epoch.load(std::memory_order_relaxed) != 0) part.reset_payloads.push_back(b);
            part.stamps.emplace_back(b, slab->stamp);
            part.free_blocks[static_cast<std::size_t>(c)].push_back(b);
            continue;
          }
          ++part.blocks_seen;
          part.max_epoch = std::max(part.max_epoch, b->epoch.load(std::memory_order_relaxed));
          if (in_use(b)) {
            const Key uid{b->uid_run.load(std::memory_order_relaxed), b->uid_seq.load(std::memory_order_relaxed)};
            // The anti-node pointer is DRAM meaning of the crashed run (not
            // in the checksum, never written back by recovery): cleared now,
            // while the line is in the cache, for a payload rule 3 keeps or
            // resets alike.
            if (type == kPayload) b->anti.store(0, std::memory_order_relaxed);
            (type == kPayload ? part.payloads : part.antis).push_back({b, c, uid});
            continue;
          }
          if (b->epoch.load(std::memory_order_relaxed) != 0)
            (type == kPayload ? part.reset_payloads : part.reset_antis).push_back(b);
          part.free_blocks[static_cast<std::size_t>(c)].push_back(b);
        }
      }
    };
    const std::size_t nparts = std::max<std::size_t>(1, std::min<std::size_t>(static_cast<std::size_t>(nthreads), slabs.size()));
    std::vector<Part> parts(nparts);
    {
      std::vector<std::thread> helpers;
      const std::size_t per = (slabs.size() + nparts - 1) / nparts;
      for (std::size_t p = 1; p < nparts; ++p)
        helpers.emplace_back(classify, std::ref(parts[p]), std::min(slabs.size(), p * per), std::min(slabs.size(), (p + 1) * per));
      classify(parts[0], 0, std::min(slabs.size(), per));
      for (auto& h : helpers) h.join();
    }
    std::vector<Found> payloads, antis;
    std::vector<PBlk*> reset_payloads, reset_antis;
    std::vector<std::pair<PBlk*, std::uint64_t>> stamps;
    for (Part& part : parts) {
      stamps.insert(stamps.end(), part.stamps.begin(), part.stamps.end());
      payloads.insert(payloads.end(), part.payloads.begin(), part.payloads.end());
      antis.insert(antis.end(), part.antis.begin(), part.antis.end());
      reset_payloads.insert(reset_payloads.end(), part.reset_payloads.begin(), part.reset_payloads.end());
      reset_antis.insert(reset_antis.end(), part.reset_antis.begin(), part.reset_antis.end());
      for (int c = 0; c < kClasses; ++c) {
        auto& to = (*free_blocks)[static_cast<std::size_t>(c)];
        to.insert(to.end(), part.free_blocks[static_cast<std::size_t>(c)].begin(), part.free_blocks[static_cast<std::size_t>(c)].end());
      }
      max_epoch = std::max(max_epoch, part.max_epoch);
      st->blocks_seen += part.blocks_seen;
      st->rejected_epoch += part.rejected_epoch;
      st->rejected_uncommitted += part.rejected_uncommitted;
    }
    // Rule 3 (a hash join on the uids the scan read; none to join when no
    // anti-node is in use, as after a clean close).
    std::unordered_map<Key, PBlk*, KeyHash> cancel;
    if constexpr ((F & fault::kIgnoreAnti) == 0)
      for (const Found& a : antis) cancel.emplace(a.uid, a.b);
    kept->reserve(kept->size() + payloads.size());
    for (const Found& p : payloads) {
      if (!cancel.empty() && cancel.count(p.uid) != 0) {
        ++st->cancelled;
        reset_payloads.push_back(p.b);
        (*free_blocks)[static_cast<std::size_t>(p.c)].push_back(p.b);
      } else {
        kept->push_back(p.b);
      }
    }
    for (const Found& a : antis) {
      reset_antis.push_back(a.b);
      (*free_blocks)[static_cast<std::size_t>(a.c)].push_back(a.b);
    }
    st->payloads_kept = kept->size();
    const std::uint64_t next = (F & fault::kNoEpochRestore) != 0 ? e : max_epoch + 2;
    if constexpr ((F & fault::kRestoreBeforeReset) != 0) {
      root->global_epoch.store(next, std::memory_order_relaxed);
      persist::pwb(&root->global_epoch, sizeof(std::uint64_t));
      persist::psync();
    }
    if constexpr ((F & fault::kNoRecoveryReset) != 0) {
      reset_payloads.clear();
      reset_antis.clear();
    }
    // Make the decision durable (see the header: payloads, pfence, anti-nodes, psync).
    for (PBlk* b : reset_payloads) {
      b->epoch.store(0, std::memory_order_relaxed);
      // PERSIST: a rejected or cancelled payload stays rejected in every
      // later recovery, whatever serial numbers the descriptors reach.
      persist::pwb(&b->epoch, sizeof(std::uint64_t));
    }
    // PERSIST: cancelled payloads are reset before the anti-nodes that
    // cancel them (a crash in between must not revive them).
    if (!reset_payloads.empty()) persist::pfence();
    for (PBlk* b : reset_antis) {
      b->epoch.store(0, std::memory_order_relaxed);
      persist::pwb(&b->epoch, sizeof(std::uint64_t));
    }
    // PERSIST: every reset is durable before the epoch moves (the epoch is
    // what makes a second recovery see the same e).
    persist::psync();
    root->global_epoch.store(next, std::memory_order_relaxed);
    // PERSIST: the new run's epochs are past every epoch of the crashed
    // run; its blocks never share an epoch (nor a stamp) with old ones.
    persist::pwb(&root->global_epoch, sizeof(std::uint64_t));
    persist::psync();
    // ORDER: after the resets are durable (above): a stamp that completes a
    // torn header completes one whose epoch is 0 (rule 1 rejects it).
    for (const auto& [b, stamp] : stamps) b->stamp.store(stamp, std::memory_order_relaxed);
    st->new_epoch = next;
    return next;
  }

  // ------------------------------------------------------ the advancer
  void run_advancer() {
    std::unique_lock<std::mutex> lk(adv_mu_);
    while (!adv_stop_) {
      adv_cv_.wait_for(lk, opt_.epoch_length, [this] { return adv_stop_; });
      if (adv_stop_) break;
      lk.unlock();
      advance(false);
      lk.lock();
    }
  }
  void stop_advancer() {
    if (!advancer_.joinable()) return;
    {
      std::lock_guard<std::mutex> g(adv_mu_);
      adv_stop_ = true;
    }
    adv_cv_.notify_all();
    advancer_.join();
  }

  pmem::Pool& pool_;
  MontageRoot* root_;
  int threads_;
  EpochOptions opt_;
  std::uint64_t run_;  // the epoch this run started in: part of uids and stamps
  Mindicator mindi_;   // l.23
  std::unique_ptr<ThreadState[]> ts_;
  std::atomic<std::uint64_t> last_commit_{0};
  std::atomic<std::uint64_t> slab_counter_{0};
  std::thread advancer_;
  std::mutex adv_mu_;
  std::condition_variable adv_cv_;
  bool adv_stop_ = false;
  bool abandoned_ = false;
};

inline const bool kMontageRootRegistered =
    pmem::register_root_type<MontageRoot>(&EpochSys<fault::kNone>::recover_root);

}  // namespace ferrite::montage
