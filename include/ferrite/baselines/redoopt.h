// ferrite/baselines/redoopt.h — RedoOpt, a persistent universal construction
// with a small pool of replicas brought up to date by redo logs, and the
// sequential objects (seq_objects.h) run on it: the "redoopt-*" competitors.
//
// Paper: Andreia Correia, Pascal Felber, Pedro Ramalhete, "Persistent Memory
// and the Rise of Universal Constructions", EuroSys 2020. The paper builds
// CX-PUC and CX-PTM on the CX universal construction, then Redo-PTM and its
// optimised variant RedoOpt, and compares them with RomulusLog, OneFile and
// PMDK. Implemented from the paper's description; the public reference code
// (pramalhe/RedoDB, ptms/redoopt) was read to settle details, never copied.
// The paper's text is not among the repository's sources, so its section,
// algorithm and line numbers are not cited; the steps C1–C8 below are ours,
// in the order the paper describes them.
//
// What it is. The object lives in R replicas (R >= 2; by default 2N for
// the wait-free election, N = max_threads, and 3 for the lock one) in the
// Ferrite pool. A persistent word, curComb, names the
// replica that holds the last committed state and its sequence number. An
// update never touches that replica: a combiner takes another one, brings it
// up to date, applies every announced operation to it, writes back the
// lines it changed, and switches curComb to it. Read-only operations run on
// the replica curComb names, never blocked by the combiner (it writes
// elsewhere). The optimisations of RedoOpt over CX-PUC kept here:
//   * replica reuse by redo logs: each combined batch leaves a volatile redo
//     log of the cache lines it changed (their final contents); a replica is
//     brought up to date by applying the logs of the batches it missed — a
//     copy of the whole state only when it missed more than the log ring
//     holds, or after a restart (the logs are volatile);
//   * one pwb per modified cache line per batch (the lines of the missed
//     logs and of the batch, each once), one pfence, one psync per batch;
//   * curComb as the only commit record: its store and write-back are the
//     commit; recovery has nothing to repair.
//
// Electing the combiner (RedoOptElection). kWaitFree, the paper's and the
// RedoOpt of record: an updater announces its operation (a ticket and the
// op in its slot), then, until the state curComb names holds its ticket,
// runs C1–C7 itself: it takes a replica by a CAS on the replica's owner
// word, applies every announced operation the state lacks (whoever
// announced it) and commits by a CAS on curComb from the (s, i) it read. A
// lost CAS means another batch committed first; the operation is applied by
// the first committed batch that read its announcement, exactly once (the
// replica's per-thread ticket says whether a state holds it), and the
// announcer reads its result from curComb's replica. kLock: one combiner at
// a time, elected by a try-lock with flat combining; the same C1–C8.
//
// A combined batch (an attempt, by a combiner):
//   C1  read curComb = (s, i), as a reader of replica i (the copy source)
//   C2  take a replica j != i by CAS on its owner word; check curComb is
//       still (s, i) and no reader is on j; prefer the one the fewest
//       batches behind
//   C3  wait until (s, i) is durable if C7's psync of s is under way (the
//       durable curComb may still name j, ensure_durable()); bring
//       j up to state s: apply the redo logs of batches (seq_j, s], or copy
//       i's used lines (rebasing pointers, below) and per-thread tickets
//   C4  run every announced operation j lacks; stores are interposed
//       (their lines logged, pointer words marked)
//   C5  pwb every line of j changed in C3 or C4; pfence
//   C6  keep C4's lines (position independent) and tickets as the redo log
//       of s+1 (published after C7)
//   C7  CAS curComb (s, i) -> (s+1, j); pwb(curComb); psync (commit:
//       durable here). A lost CAS drops j's contents (invalid; copied anew).
//   C8  the announcers read their results on curComb's replica (kLock: the
//       combiner hands them over)
// A read: announce "on replica k" for k = curComb's replica, check curComb
// did not move (Dekker with C2), wait until curComb's batch is durable
// (C7's psync done), run on k, leave.
//
// Bounded attempts (kWaitFree, every update announced through update_op).
// An update_op needs at most N combine attempts, and C2 finds a replica in
// a bounded number of passes, when R >= 2N:
//   * an attempt is lost only if a batch committed inside it (C2 saw
//     curComb move, or C7's CAS failed). A batch that committed after our
//     announcement and lacks our operation read the announcements before
//     our ticket, so it is the attempt some other thread had under way when
//     we announced: at most N - 1 of them. The next batch to commit holds
//     our operation: N attempts at most (done() sees it before another);
//   * C2 while no batch commits: at any instant another thread blocks at
//     most two replicas — the one it reads (done(), read(), or a
//     combiner's source until C3; a reader entering now enters curComb's
//     replica) and the one it owns — and we read curComb's. So 2N
//     replicas leave one neither owned nor read by anyone but us, and a
//     pass that finds none is one during which another thread released a
//     replica or left one it read (it moved from a stale attempt or read
//     to curComb's, or hopped past a replica with a stale reader); such
//     moves are finitely many while no batch commits (each thread has one
//     stale attempt and one stale read, and hops at most once past each
//     stale reader), so the passes are bounded too;
//   * what is not bounded by our own steps: waiting for the psync of the
//     batch we build on (ensure_durable, C3 and done()), and enter()'s
//     retry when curComb moved between its two loads (lock-free: each
//     retry is another thread's commit). update(fn) closures, which no
//     other thread can run, are lock-free (solo). An operation that throws
//     costs its announcer and each combiner that ran it one more attempt.
// With fewer replicas (the lock election's 3, or a RedoOptParams::replicas
// below 2N) C2 may find none free and wait for a replica to be released.
//
// A failing operation (kWaitFree). The sequential operation may throw (a
// full region) in whichever combiner runs it. That combiner records the
// exception as the operation's result (Announce::failed/error), drops its
// batch (the replica holds the operation's partial stores: invalid, copied
// anew) and retries; every later batch applies the operation as failed —
// no effect, the replica's Meta says error — and its announcer rethrows
// the recorded exception once a durable state holds that. The combiner's
// own update goes on. update(fn) rethrows fn's exception to its caller;
// kLock's flat-combined batch rethrows to every request in it.
//
// Pointers. The replicas live at different addresses and the objects hold
// raw pointers into their own replica (each replica has its own instance of
// the object, attached to it). Every replica carries a pointer bitmap (one
// bit per 8-byte word, at the end of the region, itself part of the
// replica): the store interposition sets the bit of a word stored through a
// pointer-typed store and clears it otherwise. A redo log line or a copied
// line is kept position independent (a pointer word as its offset + 1, null
// as 0) and rebased to the destination replica.
//
// Recovery: curComb names a replica whose lines were durable before curComb
// was (C5's pfence before C7's store), and no other replica's contents
// matter; so nothing is repaired, and a crash inside recovery is harmless.
// The replicas other than curComb's start "invalid" in the new process: the
// first combiner that picks one copies the state into it (C3). The state of
// the crashed run's DRAM (logs, replica sequence numbers) is never used.
//
// In-region allocation (as RomulusLog's): a bump pointer and a few exact-
// size free lists in the region header, changed only by logged stores. The
// header holds offsets, not pointers.
//
// Thread safety: update/read/transaction concurrently for distinct tids in
// [0, max_threads). log/store/alloc/free/object/set_object only from inside
// an update (the function given to update or transaction), on its replica.
//
// Invariants:
//   * only a replica's owner stores to it; only the owner of j commits a
//     curComb naming j, and never stores to the replica curComb names
//     (C2's check after the ownership CAS);
//   * a replica a reader (or a combiner copying from it) is on is never
//     taken (C2);
//   * durable curComb = (s, i) => replica i's used lines and bitmap are
//     durable and hold state s;
//   * a replica is overwritten only once a curComb naming another one is
//     durable (C3's ensure_durable; kLock: the lock is released after C7);
//   * a state's per-thread ticket only grows along committed states: an
//     announced operation is in every state after the first that holds it.
//
// Deviations from the paper (docs/baselines.md, "RedoOpt"): replicas are
// taken by a CAS on an owner word, not CX's strong try reader-writer lock
// (readers announce per thread and a combiner skips a replica with one);
// 2N replicas (CX's count; the reference RedoOpt allocates up to N + 1),
// allocated up front, for the bound above (an argument, not a
// machine-checked proof; the stress test asserts the N attempts); and a
// combiner, reader or announcer waits for the psync of the batch it builds
// on or returns (ensure_durable(): one blocking step). The log is kept per
// cache line, not per word with an undo part (a failed batch marks its
// replica invalid instead of undoing it); logs are kept in DRAM as shared
// immutable records; the allocator is the small one above. Not detectable,
// like RomulusLog. kWaitFree's update(fn) (a closure on the caller's
// stack, which no other thread may run) is combined by its caller alone,
// retried until its CAS wins: lock-free; the objects use update_op.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferrite/baselines/flat_combining.h"
#include "ferrite/baselines/persistent_common.h"
#include "ferrite/baselines/seq_objects.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"
#include "ferrite/sync/backoff.h"
#include "ferrite/sync/cache_padded.h"

namespace ferrite::baselines {

// Deliberately broken variants (the crash campaigns must catch each).
inline constexpr unsigned kRedoOptNoReplicaFence = 1u << 10;  // C5 without its pfence
inline constexpr unsigned kRedoOptNoCommitSync = 1u << 11;    // C7 without its psync

// The pool root: curComb and where the replicas are.
// Version 2 (issue 16): room for 256 replicas (the wait-free election's
// 2N, below); version 1 had 8. A version-1 root is refused by the pool's
// root lookup (type version mismatch), never reinterpreted.
struct RedoOptRoot {
  static constexpr std::uint32_t kTypeTag = 0x5244'4F50;  // "RDOP"
  static constexpr std::uint32_t kTypeVersion = 2;
  static constexpr const char* kTypeName = "baselines::RedoOpt";
  static constexpr int kIdxBits = 8;
  static constexpr int kMaxReplicas = 1 << kIdxBits;  // curComb's index field
  RedoOptRoot(int n, std::uint64_t bytes, const std::array<std::uint8_t*, kMaxReplicas>& r)
      : replicas(static_cast<std::uint64_t>(n)), region_bytes(bytes), replica(r) {}
  // curComb = seq << 8 | replica index. Written only by the combiner; an
  // aligned 8-byte word, so failure-atomic.
  alignas(64) std::atomic<std::uint64_t> cur_comb{0};
  // Set at creation, never changed.
  alignas(64) std::uint64_t replicas = 0;
  std::uint64_t region_bytes = 0;  // bytes per replica (a multiple of 4096)
  std::array<std::uint8_t*, kMaxReplicas> replica{};
};
static_assert(offsetof(RedoOptRoot, cur_comb) == 0);
static_assert(offsetof(RedoOptRoot, replicas) == 64);
static_assert(offsetof(RedoOptRoot, replica) == 80);
static_assert(sizeof(RedoOptRoot) == 2176);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

// The header at offset 0 of each replica. Offsets, never pointers.
struct RedoOptRegion {
  static constexpr std::uint64_t kMagic = 0x5245'444F'4F50'5431;  // "REDOOPT1"
  static constexpr int kFreeLists = 6;
  std::uint64_t magic;
  std::uint64_t used;        // bytes [0, used) of the replica are allocated
  std::uint64_t object;      // offset of the object's root, 0: none
  std::uint64_t object_tag;  // its Root::kTypeTag
  struct FreeList {
    std::uint64_t size;      // block size (0: unused list)
    std::uint64_t head;      // offset of the first free block (0: empty); its first word: the next's
  } free[kFreeLists];
};
inline constexpr std::uint64_t kRedoOptHeaderBytes = 128;
static_assert(sizeof(RedoOptRegion) == kRedoOptHeaderBytes);

struct RedoOptParams {
  int max_threads = 8;
  std::size_t region_bytes = std::size_t{1} << 20;  // per replica
  int replicas = 0;  // 0: redoopt_replicas(election, max_threads)
};

// How the combiner is elected (docs/baselines.md, "RedoOpt"):
//   kWaitFree  the paper's: every updater announces its operation and races
//              to combine: it takes a free replica by a CAS on the replica's
//              owner word, applies every announced operation the state it
//              starts from lacks, and commits by a CAS on curComb; the
//              loser of the CAS retries, the announcer whose operation
//              another combiner applied reads its result from curComb's
//              replica (redoopt-*);
//   kLock      a try-lock with flat combining (as RomulusLog's writers): one
//              combiner at a time (the ablation redoopt-lock-*).
enum class RedoOptElection { kWaitFree, kLock };

// The replicas a new RedoOpt gets by default. kWaitFree: 2N for N =
// max_threads (at least 3), the bound under which C2 always finds a
// replica while no batch commits ("Bounded attempts" in RedoOpt's comment);
// kLock: 3 (one combiner at a time: curComb's replica, the combiner's, and
// a spare for when a stale reader is on one; it waits for readers to leave
// otherwise).
constexpr int redoopt_replicas(RedoOptElection e, int max_threads) {
  return e == RedoOptElection::kLock ? 3 : std::max(3, 2 * std::max(max_threads, 1));
}

// An announced operation and its result (the sequential objects' one entry
// point, apply(tid, insert, arg, &out) -> ok), as OneFile-WF's.
struct RedoOptOp {
  bool insert = false;
  std::int64_t arg = 0;
};
struct RedoOptResult {
  bool ok = false;
  std::int64_t out = 0;
};

template <unsigned Faults = kNoFaults, RedoOptElection E = RedoOptElection::kWaitFree>
class RedoOpt {
 public:
  static constexpr int kMaxThreads = 256;
  static constexpr std::size_t kRing = 8;  // redo logs kept (batches)
  static constexpr RedoOptElection kElection = E;

  RedoOpt(pmem::Pool& pool, std::string_view name, const RedoOptParams& p)
      : fc_(p.max_threads, "RedoOpt"),
        max_(fc_.max_threads()),
        reading_(static_cast<std::size_t>(max_) + 1),
        ann_(static_cast<std::size_t>(max_)) {
    if (pool.has_root(name)) {
      root_ = pool.root<RedoOptRoot>(name);
    } else {
      const int want = p.replicas > 0 ? p.replicas : redoopt_replicas(E, max_);
      if (want < 2 || want > RedoOptRoot::kMaxReplicas)
        throw std::invalid_argument("RedoOpt: replicas must be in [2, 256], got " + std::to_string(want) +
                                    (p.replicas > 0 ? "" : " (2 x max_threads)"));
      const std::size_t bytes = std::max<std::size_t>((p.region_bytes + 4095) & ~std::size_t{4095}, 8192);
      std::array<std::uint8_t*, RedoOptRoot::kMaxReplicas> r{};
      for (int k = 0; k < want; ++k) {
        r[static_cast<std::size_t>(k)] = static_cast<std::uint8_t*>(pool.heap().alloc(bytes, 0));
        if (reinterpret_cast<std::uintptr_t>(r[static_cast<std::size_t>(k)]) % 64 != 0)
          throw std::logic_error("RedoOpt: replica blocks are not line aligned");
      }
      // Replica 0 holds state 0 (an empty region); the others are invalid
      // until a combiner copies into them.
      auto* h = reinterpret_cast<RedoOptRegion*>(r[0]);
      std::memset(h, 0, sizeof(RedoOptRegion));
      h->magic = RedoOptRegion::kMagic;
      h->used = kRedoOptHeaderBytes;
      // Replica 0's pointer bitmap is left as the heap gave it: a bit
      // matters only for a word below `used` holding an address inside the
      // replica, and every such word is stored through the interposition,
      // which sets or clears its bit (the header holds no addresses).
      // PERSIST: replica 0's header before the root naming it (create_root's
      // pfence orders it; its publish makes all durable). CRASH: before the
      // root is published no root marks the blocks: the pool's recovery
      // frees them.
      persist::pwb(h, sizeof(RedoOptRegion));
      root_ = pool.create_root<RedoOptRoot>(name, want, static_cast<std::uint64_t>(bytes), r);
    }
    n_ = static_cast<int>(root_->replicas);
    bytes_ = root_->region_bytes;
    if (n_ < 2 || n_ > RedoOptRoot::kMaxReplicas || bytes_ < 8192 || bytes_ % 4096 != 0)
      throw std::runtime_error("RedoOpt: corrupt root (" + std::to_string(root_->replicas) + " replicas of " +
                               std::to_string(bytes_) + " bytes)");
    for (int k = 0; k < n_; ++k)
      if (root_->replica[static_cast<std::size_t>(k)] == nullptr ||
          reinterpret_cast<std::uintptr_t>(root_->replica[static_cast<std::size_t>(k)]) % 64 != 0)
        throw std::runtime_error("RedoOpt: corrupt root (replica " + std::to_string(k) + " is not a line)");
    bitmap_off_ = bytes_ - bytes_ / 64;
    const std::uint64_t c = root_->cur_comb.load(std::memory_order_acquire);
    if (static_cast<int>(c & 0xff) >= n_) throw std::runtime_error("RedoOpt: corrupt curComb " + std::to_string(c));
    const int cur = static_cast<int>(c & 0xff);
    if (used_of(cur) > bitmap_off_) throw std::runtime_error("RedoOpt: corrupt region");
    // Only curComb's replica is valid in a new process (see "Recovery").
    const std::size_t lines = bytes_ / 64;
    for (int k = 0; k < n_; ++k) {
      auto r = std::make_unique<Replica>();
      r->dirty_bits.assign((lines + 63) / 64, 0);
      r->op_bits.assign((lines + 63) / 64, 0);
      r->meta = std::make_unique<Meta[]>(static_cast<std::size_t>(max_));
      reps_.push_back(std::move(r));
    }
    reps_[static_cast<std::size_t>(cur)]->held = c >> RedoOptRoot::kIdxBits;
    reps_[static_cast<std::size_t>(cur)]->valid = true;
    durable_seq_.store(c >> RedoOptRoot::kIdxBits, std::memory_order_relaxed);
  }
  RedoOpt(const RedoOpt&) = delete;
  RedoOpt& operator=(const RedoOpt&) = delete;

  // An update: fn(k) runs on replica k inside a combined batch; returns
  // once the batch is durable. An exception thrown by fn (or by any of the
  // batch) discards the batch and is rethrown here. kLock: combined with
  // the other announced updates. kWaitFree: fn lives on the caller's stack,
  // so no other thread may run it: the caller combines alone (it retries
  // until its CAS on curComb wins: lock-free, not wait-free); the announced
  // path is update_op.
  template <class F>
  void update(int tid, F&& fn) {
    check_tid(tid, max_, "RedoOpt");
    if constexpr (E == RedoOptElection::kLock) {
      Request req{&invoke<F>, &fn, {}};
      // Served by a combiner (C8 released it: fn's effects and req.error are
      // visible), or we took the lock and serve every announced request.
      fc_.submit(tid, &req, [this, tid](Request* const* reqs, std::size_t n) { run_batch(tid, reqs, n); });
    } else {
      solo(tid, fn);
    }
  }

  // An announced operation: fn(k, t, op, &out) -> ok applies thread t's op
  // to replica k (every caller passes the same function: a combiner runs
  // every announced operation with its own fn). Returns once the state
  // holding it is durable.
  template <class F>
  RedoOptResult update_op(int tid, const RedoOptOp& op, F&& fn) {
    check_tid(tid, max_, "RedoOpt");
    if constexpr (E == RedoOptElection::kLock) {
      RedoOptResult r;
      update(tid, [&](int k) { r.ok = fn(k, tid, op, &r.out); });
      return r;
    } else {
      return announced(tid, op, fn);
    }
  }

  // A read-only operation: fn(k) on the replica curComb names.
  template <class F>
  void read(int tid, F&& fn) {
    check_tid(tid, max_, "RedoOpt");
    const std::uint64_t c = enter(tid);
    Leave leave{reading_[static_cast<std::size_t>(tid)].value};
    ensure_durable(c >> RedoOptRoot::kIdxBits);
    fn(static_cast<int>(c & 0xff));
  }

  // An update run by the caller alone (creation, tests): no combining.
  template <class F>
  void transaction(F&& fn) {
    if constexpr (E == RedoOptElection::kLock) {
      Request req{&invoke<F>, &fn, {}};
      fc_.alone(&req, [this](Request* const* reqs, std::size_t n) { run_batch(max_, reqs, n); });
    } else {
      solo(max_, fn);
    }
  }

  // ---- inside an update only (the combiner), on replica k == the batch's
  std::uint8_t* base(int k) const { return root_->replica[static_cast<std::size_t>(k)]; }
  // Store interposition: [p, p+n) of replica k is being stored as plain
  // (non-pointer) bytes: its lines are logged, its pointer bits cleared.
  void log(int k, const void* p, std::size_t n) {
    const std::uint64_t off = offset_in(k, p, n);
    for (std::uint64_t w = off / 8, last = (off + n - 1) / 8; w <= last; ++w) mark_word(k, w, false);
    for (std::uint64_t l = off / 64, last = (off + n - 1) / 64; l <= last; ++l) mark_line(k, l);
  }
  // A pointer-typed word of replica k is being stored.
  void log_pointer(int k, const void* p) {
    const std::uint64_t off = offset_in(k, p, 8);
    if (off % 8 != 0) throw std::logic_error("RedoOpt: an unaligned pointer store");
    mark_word(k, off / 8, true);
    mark_line(k, off / 64);
  }
  template <class T>
  void store(int k, T* p, const T& v) {
    if constexpr (std::is_pointer_v<T>) {
      static_assert(sizeof(T) == 8);
      log_pointer(k, p);
    } else {
      log(k, p, sizeof(T));
    }
    *p = v;
  }
  void* alloc(int k, std::size_t n, std::size_t align = 16) {
    n = (n + 15) & ~std::size_t{15};
    RedoOptRegion& h = header(k);
    std::uint8_t* b = base(k);
    for (auto& f : h.free)
      if (f.size == n && f.head != 0 && f.head % align == 0) {
        const std::uint64_t at = f.head;
        store(k, &f.head, *reinterpret_cast<std::uint64_t*>(b + at));
        return b + at;
      }
    const std::uint64_t at = (h.used + align - 1) & ~static_cast<std::uint64_t>(align - 1);
    if (at + n > bitmap_off_)
      throw std::runtime_error("RedoOpt: region full (" + std::to_string(bytes_) + " bytes per replica)");
    // The padding's pointer bits are cleared too: every word below `used`
    // has a meaningful bit (a whole copy rebases by them).
    if (at > h.used) log(k, b + h.used, at - h.used);
    store(k, &h.used, at + n);
    return b + at;
  }
  void free(int k, void* p, std::size_t n) {
    n = (n + 15) & ~std::size_t{15};
    RedoOptRegion& h = header(k);
    RedoOptRegion::FreeList* list = nullptr;
    for (auto& f : h.free)
      if (f.size == n) list = &f;
    if (list == nullptr)
      for (auto& f : h.free)
        if (f.size == 0) {
          list = &f;
          store(k, &f.size, static_cast<std::uint64_t>(n));
          break;
        }
    if (list == nullptr) return;  // a size with no list left is leaked
    store(k, static_cast<std::uint64_t*>(p), list->head);
    store(k, &list->head, offset_in(k, p, n));
  }
  void* object(int k, std::uint32_t tag) const {
    const RedoOptRegion& h = header(k);
    if (h.object != 0 && h.object_tag != tag)
      throw std::runtime_error("RedoOpt: the region holds an object of another type");
    return h.object == 0 ? nullptr : base(k) + h.object;
  }
  void set_object(int k, void* o, std::uint32_t tag) {
    store(k, &header(k).object, offset_in(k, o, 1));
    store(k, &header(k).object_tag, static_cast<std::uint64_t>(tag));
  }

  // ---- for tests and tools
  RedoOptRoot* root() const { return root_; }
  int replicas() const { return n_; }
  std::uint64_t seq() const { return root_->cur_comb.load(std::memory_order_acquire) >> RedoOptRoot::kIdxBits; }
  int current() const { return static_cast<int>(root_->cur_comb.load(std::memory_order_acquire) & 0xff); }
  std::uint64_t used(int k) const { return header(k).used; }
  // Lines brought up to date by redo logs / by whole copies, since creation
  // in this process (the replica-reuse optimisation at work).
  std::uint64_t lines_replayed() const { return replayed_.load(std::memory_order_relaxed); }
  std::uint64_t copies() const { return copies_.load(std::memory_order_relaxed); }
  // kLock: operations per batch. kWaitFree: announced operations per
  // committed batch.
  double combining_degree() const {
    if constexpr (E == RedoOptElection::kLock) {
      return fc_.combining_degree();
    } else {
      const auto c = commits_.load(std::memory_order_relaxed);
      return c == 0 ? 0.0 : static_cast<double>(ops_.load(std::memory_order_relaxed)) / static_cast<double>(c);
    }
  }
  // kWaitFree: operations applied by another thread's committed batch,
  // committed announced batches, the most combine attempts an update_op
  // needed.
  std::uint64_t helped() const { return helped_.load(std::memory_order_relaxed); }
  std::uint64_t commits() const { return commits_.load(std::memory_order_relaxed); }
  std::uint64_t max_attempts() const { return max_attempts_.load(std::memory_order_relaxed); }
  // C2 passes that found every other replica owned or read (and looked
  // again).
  std::uint64_t full_passes() const { return full_passes_.load(std::memory_order_relaxed); }

 private:
  struct Request {
    void (*run)(void*, int);
    void* fn;
    std::exception_ptr error;
  };
  // A thread's announcement (kWaitFree; DRAM, its own line). The owner
  // writes the op, then ticket (seq_cst); a combiner reads ticket, then the
  // op. The fields are atomics: a combiner may read the next operation's
  // fields under an older ticket, but the batch that does started from a
  // state without that ticket, while the announcer moved on only after a
  // state with it committed: that batch's CAS on curComb fails.
  //
  // A failed operation (its function threw, in whichever combiner ran it):
  // the thrower records (ticket, exception) here under `m` and drops its
  // batch; every later batch applies the operation as failed (no effect,
  // Meta.error), and its announcer rethrows the recorded exception.
  struct alignas(64) Announce {
    std::atomic<std::uint64_t> ticket{0};  // 0: nothing announced yet
    std::atomic<bool> insert{false};
    std::atomic<std::int64_t> arg{0};
    std::uint64_t mine = 0;  // the owner's last ticket (owner only)
    std::atomic<std::uint64_t> failed{0};  // the ticket `error` belongs to (written under m)
    std::mutex m;
    std::exception_ptr error;  // under m
  };
  // Per replica and thread (kWaitFree): the last ticket of the thread the
  // replica's state holds, and its result. Written by the replica's owner
  // only; read by announcers on curComb's replica as readers (relaxed: the
  // acquire of curComb that named it orders them).
  struct Meta {
    std::atomic<std::uint64_t> ticket{0};
    std::atomic<bool> ok{false};
    std::atomic<std::int64_t> out{0};
    std::atomic<bool> error{false};  // the operation threw (Announce::error)
  };
  struct MetaDelta {
    int t;
    std::uint64_t ticket;
    bool ok;
    std::int64_t out;
    bool error = false;
  };
  // One line of a redo log: its final contents, pointer words as offset + 1.
  struct LogLine {
    std::uint64_t line;
    std::uint64_t mask;  // bit w: word w is a pointer
    std::uint64_t w[8];
  };
  // A committed batch's redo log, immutable once published.
  struct BatchLog {
    std::uint64_t seq = 0;
    std::vector<LogLine> lines;
    std::vector<MetaDelta> metas;
  };
  // A replica's volatile state. owner: tid + 1 of the combiner that holds
  // it (0: free), taken by CAS; the rest is the owner's alone (the CAS's
  // acquire and the release store that frees it hand it on).
  struct Replica {
    std::atomic<std::uint32_t> owner{0};
    std::atomic<std::uint64_t> hint{0};  // held, for pick's preference (relaxed)
    std::uint64_t held = 0;              // the state the replica holds, if valid
    bool valid = false;
    std::vector<std::uint64_t> dirty_bits, op_bits, dirty, op_lines;
    std::unique_ptr<Meta[]> meta;
  };
  struct Leave {
    std::atomic<std::uint32_t>& on;
    // ORDER: release: our loads of the replica happen before a later
    // combiner's stores to it.
    ~Leave() { on.store(0, std::memory_order_release); }
  };
  enum class Outcome { kCommitted, kLost, kFailed };

  template <class F>
  static void invoke(void* f, int k) {
    (*static_cast<std::remove_reference_t<F>*>(f))(k);
  }
  static void backoff(std::uint32_t& spins) { FlatCombining<Request>::backoff(spins); }
  Replica& rep(int k) const { return *reps_[static_cast<std::size_t>(k)]; }
  RedoOptRegion& header(int k) const { return *reinterpret_cast<RedoOptRegion*>(base(k)); }
  std::uint64_t used_of(int k) const {
    const RedoOptRegion& h = header(k);
    if (h.magic != RedoOptRegion::kMagic || h.used < kRedoOptHeaderBytes || h.used > bitmap_off_)
      throw std::runtime_error("RedoOpt: corrupt region header");
    return h.used;
  }
  std::uint64_t offset_in(int k, const void* p, std::size_t n) const {
    const auto* q = static_cast<const std::uint8_t*>(p);
    const std::uint8_t* b = base(k);
    // Relaxed: the owner checks its own word.
    if (k < 0 || k >= n_ || rep(k).owner.load(std::memory_order_relaxed) == 0 || q < b ||
        static_cast<std::uint64_t>(q - b) + n > bitmap_off_)
      throw std::logic_error("RedoOpt: a store outside the batch's replica");
    return static_cast<std::uint64_t>(q - b);
  }
  // The pointer bit of word w of replica k := ptr (logged if it changes).
  void mark_word(int k, std::uint64_t w, bool ptr) {
    std::uint8_t* byte = base(k) + bitmap_off_ + w / 8;
    const auto bit = static_cast<std::uint8_t>(1u << (w % 8));
    if (((*byte & bit) != 0) == ptr) return;
    *byte = static_cast<std::uint8_t>(ptr ? (*byte | bit) : (*byte & ~bit));
    mark_line(k, static_cast<std::uint64_t>(byte - base(k)) / 64);
  }
  // Line l of replica k changed in this batch's operations (C4): written
  // back in C5 and kept in the batch's redo log (C6).
  void mark_line(int k, std::uint64_t l) {
    Replica& r = rep(k);
    std::uint64_t& w = r.op_bits[l / 64];
    const std::uint64_t bit = std::uint64_t{1} << (l % 64);
    if ((w & bit) != 0) return;
    w |= bit;
    r.op_lines.push_back(l);
    mark_dirty(k, l);
  }
  // Line l of replica k changed (C3 or C4): written back in C5.
  void mark_dirty(int k, std::uint64_t l) {
    Replica& r = rep(k);
    std::uint64_t& w = r.dirty_bits[l / 64];
    const std::uint64_t bit = std::uint64_t{1} << (l % 64);
    if ((w & bit) != 0) return;
    w |= bit;
    r.dirty.push_back(l);
  }

  // Line l of replica k, position independent.
  LogLine capture(int k, std::uint64_t l) const {
    LogLine e{l, 0, {}};
    const std::uint8_t* b = base(k);
    std::memcpy(e.w, b + l * 64, 64);
    // The bitmap byte of line l: its 8 words. The bitmap's own lines hold
    // no pointers (their bits are never maintained: 0).
    e.mask = l < bitmap_off_ / 64 ? b[bitmap_off_ + l] : 0;
    for (int i = 0; i < 8; ++i) {
      if ((e.mask & (1u << i)) == 0 || e.w[i] == 0) continue;
      const auto v = static_cast<std::uintptr_t>(e.w[i]), lo = reinterpret_cast<std::uintptr_t>(b);
      // A marked word past `used` (the tail of the last used line) may
      // hold anything: copied as it is, never read.
      if (v < lo || v >= lo + bitmap_off_) e.mask &= ~(std::uint64_t{1} << i);
      else e.w[i] = v - lo + 1;
    }
    return e;
  }
  // Writes a captured line into replica j (its owner).
  void apply(int j, const LogLine& e) {
    std::uint8_t* b = base(j);
    std::uint64_t w[8];
    for (int i = 0; i < 8; ++i)
      w[i] = ((e.mask & (1u << i)) != 0 && e.w[i] != 0) ? reinterpret_cast<std::uintptr_t>(b) + e.w[i] - 1 : e.w[i];
    std::memcpy(b + e.line * 64, w, 64);
    // CRASH: replica j is not the one durable curComb names (acquire()): a
    // torn line is never read after a crash.
    persist::declare_store(b + e.line * 64, 64);
    mark_dirty(j, e.line);
  }

  // The reader protocol: announce "on replica k" for k = curComb's
  // replica, check curComb did not move. Returns the curComb read.
  std::uint64_t enter(int slot) {
    std::atomic<std::uint32_t>& on = reading_[static_cast<std::size_t>(slot)].value;
    for (;;) {
      // ORDER: seq_cst load, store, load against the combiner's seq_cst
      // curComb store or CAS and loads of the indicators (C2): a reader
      // that saw curComb unchanged after announcing is seen by every later
      // C2. curComb's sequence number only grows: no ABA.
      const std::uint64_t c = root_->cur_comb.load(std::memory_order_seq_cst);
      on.store(static_cast<std::uint32_t>(c & 0xff) + 1, std::memory_order_seq_cst);
      if (root_->cur_comb.load(std::memory_order_seq_cst) == c) return c;
    }
  }
  // State s (or a later one) is durable on return: wait for the C7 psync
  // of the combiner that committed it (under way). Both elections: writing
  // curComb back ourselves (pwb + psync, as the reference's readers do)
  // would not do under the abstract model, where the committer's pwbs of
  // its replica's lines are complete only at its own psync — the 2-3 thread
  // campaigns caught it (x86 accepted it). This wait is kWaitFree's one
  // blocking step.
  void ensure_durable(std::uint64_t s) {
    std::uint32_t spins = 0;
    // ORDER: acquire pairs with C7's release.
    while (durable_seq_.load(std::memory_order_acquire) < s) backoff(spins);
  }
  void raise_durable(std::uint64_t s) {
    std::uint64_t d = durable_seq_.load(std::memory_order_relaxed);
    // ORDER: release: a thread that sees s durable sees it after our psync.
    while (d < s && !durable_seq_.compare_exchange_weak(d, s, std::memory_order_release, std::memory_order_relaxed)) {
    }
  }

  // C2: take a replica j != cur (curComb's) with no reader on it,
  // preferring the fewest batches behind. -1: curComb moved past c (the
  // attempt is lost: a batch committed). Otherwise it returns a replica:
  // when a pass finds every other replica owned or read it looks again —
  // with 2N replicas only while another thread moves (see "Bounded
  // attempts"); with fewer it may wait for one to leave. `me` is the
  // taker's tid + 1.
  int acquire(std::uint64_t c, std::uint32_t me) {
    const int cur = static_cast<int>(c & 0xff);
    std::array<std::pair<std::uint64_t, int>, RedoOptRoot::kMaxReplicas> order;
    int m = 0;
    // The most recent first. Relaxed: a preference only.
    for (int k = 0; k < n_; ++k)
      if (k != cur) order[static_cast<std::size_t>(m++)] = {rep(k).hint.load(std::memory_order_relaxed), k};
    std::stable_sort(order.begin(), order.begin() + m, [](const auto& a, const auto& b) { return a.first > b.first; });
    std::uint32_t spins = 0;
    for (;;) {
      for (int x = 0; x < m; ++x) {
        const int k = order[static_cast<std::size_t>(x)].second;
        Replica& r = rep(k);
        // A lost attempt takes nothing: a combiner whose c is stale holds
        // no replica past this check (at most the one it took as c moved).
        if (root_->cur_comb.load(std::memory_order_seq_cst) != c) return -1;
        std::uint32_t free = 0;
        // ORDER: acquire (and seq_cst, for the Dekker below): the previous
        // owner's stores to the replica and its volatile state happen
        // before ours.
        if (!r.owner.compare_exchange_strong(free, me, std::memory_order_seq_cst, std::memory_order_relaxed)) continue;
        // Owned, curComb can name k only if it did before we took it: check
        // it still is c (names cur != k); from now on no one else commits k.
        if (root_->cur_comb.load(std::memory_order_seq_cst) != c) {
          r.owner.store(0, std::memory_order_release);
          return -1;
        }
        bool ok = true;
        // ORDER: seq_cst (Dekker with enter()): a reader that validated
        // curComb while k was current is seen here.
        for (std::size_t t = 0; ok && t < reading_.size(); ++t)
          if (reading_[t].value.load(std::memory_order_seq_cst) == static_cast<std::uint32_t>(k) + 1) ok = false;
        if (ok) return k;
        r.owner.store(0, std::memory_order_release);
      }
      // Every other replica was owned or read when we looked at it, and no
      // batch committed. Relaxed: statistics.
      full_passes_.fetch_add(1, std::memory_order_relaxed);
      backoff(spins);
    }
  }

  // C3: replica j := state s (held by replica cur, which we read on).
  void catch_up(int j, int cur, std::uint64_t s) {
    Replica& st = rep(j);
    bool logs = st.valid && st.held <= s && s - st.held <= kRing;
    std::shared_ptr<const BatchLog> got[kRing];
    for (std::uint64_t q = st.held + 1; logs && q <= s; ++q) {
      // ORDER: the slot's mutex: the log's contents, published after its
      // commit.
      got[q - st.held - 1] = ring_[q % kRing].get();
      logs = got[q - st.held - 1] != nullptr && got[q - st.held - 1]->seq == q;
    }
    if (logs) {
      for (std::uint64_t q = st.held + 1; q <= s; ++q) {
        const BatchLog& g = *got[q - st.held - 1];
        for (const LogLine& e : g.lines) apply(j, e);
        for (const MetaDelta& d : g.metas) set_meta(j, d);
      }
      replayed_.fetch_add(st.dirty.size(), std::memory_order_relaxed);
    } else {
      // A whole copy: the used lines and their bitmap lines, and the
      // announcers' tickets and results.
      const std::uint64_t used = used_of(cur);
      for (std::uint64_t l = 0; l < (used + 63) / 64; ++l) apply(j, capture(cur, l));
      const std::uint64_t first = bitmap_off_ / 64, last = (bitmap_off_ + (used + 63) / 64 - 1) / 64;
      for (std::uint64_t l = first; l <= last; ++l) apply(j, capture(cur, l));
      for (int t = 0; t < max_; ++t) {
        const Meta& m = rep(cur).meta[static_cast<std::size_t>(t)];
        set_meta(j, {t, m.ticket.load(std::memory_order_relaxed), m.ok.load(std::memory_order_relaxed),
                     m.out.load(std::memory_order_relaxed), m.error.load(std::memory_order_relaxed)});
      }
      copies_.fetch_add(1, std::memory_order_relaxed);
    }
    st.held = s;
    st.valid = true;
  }
  // Relaxed: the owner writes; announcers read once the replica is
  // curComb's (ordered by curComb's CAS and their enter()).
  void set_meta(int j, const MetaDelta& d) {
    Meta& m = rep(j).meta[static_cast<std::size_t>(d.t)];
    m.ticket.store(d.ticket, std::memory_order_relaxed);
    m.ok.store(d.ok, std::memory_order_relaxed);
    m.out.store(d.out, std::memory_order_relaxed);
    m.error.store(d.error, std::memory_order_relaxed);
  }

  // One attempt at C1–C7 by `slot` (a tid, or max_ for transaction()):
  // run(j, metas) applies the batch's operations to replica j. kLost: no
  // replica free, or another combiner committed first (nothing of ours is
  // visible). kFailed: run threw (*error).
  template <class Run>
  Outcome combine(int slot, Run&& run, std::exception_ptr* error) {
    // C1, and read on curComb's replica (the source of a whole copy).
    const std::uint64_t c = enter(slot);
    Leave leave{reading_[static_cast<std::size_t>(slot)].value};
    const int cur = static_cast<int>(c & 0xff);
    const std::uint64_t s = c >> RedoOptRoot::kIdxBits;
    // C2.
    const int j = acquire(c, static_cast<std::uint32_t>(slot) + 1);
    if (j < 0) return Outcome::kLost;
    Replica& r = rep(j);
    struct Free {
      Replica& r;
      // ORDER: release: our stores to the replica and its volatile state
      // happen before the next owner's.
      ~Free() { r.owner.store(0, std::memory_order_release); }
    } free{r};
    // The durable curComb may still name j (the one before c, if c's
    // psync is under way): j is overwritten only once curComb (>= c,
    // naming cur != j) is durable. kLock: always (the previous combiner
    // released the lock after its psync).
    ensure_durable(s);
    // C3.
    catch_up(j, cur, s);
    // Done reading replica cur: leave it now, so that a combiner stalled in
    // C4 holds one replica (its own), not two (with three replicas the
    // others could find none free until it resumes). ORDER: release, as
    // Leave's.
    reading_[static_cast<std::size_t>(slot)].value.store(0, std::memory_order_release);
    // C4.
    std::vector<MetaDelta> metas;
    try {
      run(j, metas);
    } catch (...) {
      // The replica holds part of a batch: it is copied anew when taken.
      r.valid = false;
      clear_marks(j);
      *error = std::current_exception();
      return Outcome::kFailed;
    }
    // C5. PERSIST: every changed line of replica j, ordered before curComb
    // names it. CRASH: anywhere in C2–C6 curComb still names (s, cur) (or a
    // later replica != j); replica j, torn or not, is never read after it.
    std::uint8_t* b = base(j);
    for (std::uint64_t l : r.dirty) persist::pwb(b + l * 64);
    if constexpr ((Faults & kRedoOptNoReplicaFence) == 0) persist::pfence();
    // C6.
    auto log = std::make_shared<BatchLog>();
    log->seq = s + 1;
    log->lines.reserve(r.op_lines.size());
    for (std::uint64_t l : r.op_lines) log->lines.push_back(capture(j, l));
    log->metas = std::move(metas);
    clear_marks(j);
    // C7. ORDER: seq_cst, against the readers' loads (Dekker with C2), and
    // release: replica j's contents and metadata to whoever reads it.
    std::uint64_t expected = c;
    const std::uint64_t next = (s + 1) << RedoOptRoot::kIdxBits | static_cast<std::uint64_t>(j);
    if (!root_->cur_comb.compare_exchange_strong(expected, next, std::memory_order_seq_cst)) {
      // Another combiner committed s + 1 first: our batch is dropped (its
      // operations stay announced).
      r.valid = false;
      return Outcome::kLost;
    }
    // PERSIST: the commit point: curComb durable before the announcers
    // return, before a reader returns what it read of s+1, and before any
    // combiner overwrites replica `cur` (ensure_durable). CRASH: before it,
    // recovery finds (s, cur) or earlier: state s.
    persist::pwb(&root_->cur_comb);
    if constexpr ((Faults & kRedoOptNoCommitSync) == 0) persist::psync();
    r.held = s + 1;
    r.hint.store(s + 1, std::memory_order_relaxed);
    // ORDER: the slot's mutex: the log's contents before its pointer.
    ring_[(s + 1) % kRing].put(std::move(log));
    raise_durable(s + 1);
    return Outcome::kCommitted;
  }

  // kLock: C1–C8 for `n` requests, under the lock (every attempt takes a
  // replica and commits, unless every other replica has a reader).
  void run_batch(int slot, Request* const* reqs, std::size_t n) {
    std::exception_ptr failed;
    std::uint32_t spins = 0;
    for (;;) {
      const Outcome o = combine(
          slot,
          [&](int j, std::vector<MetaDelta>&) {
            for (std::size_t i = 0; i < n; ++i) reqs[i]->run(reqs[i]->fn, j);
          },
          &failed);
      if (o != Outcome::kLost) break;
      backoff(spins);  // every other replica has a reader: they leave
    }
    if (failed)
      for (std::size_t i = 0; i < n; ++i) reqs[i]->error = failed;
    // C8.
    fc_.release(reqs, n);
  }

  // kWaitFree, update()/transaction(): fn alone, retried until committed.
  template <class F>
  void solo(int slot, F& fn) {
    std::exception_ptr failed;
    std::uint32_t spins = 0;
    while (combine(slot, [&](int j, std::vector<MetaDelta>&) { fn(j); }, &failed) == Outcome::kLost) backoff(spins);
    if (failed) std::rethrow_exception(failed);
  }

  // kWaitFree, update_op(): announce, then until a durable state holds our
  // ticket, combine every announced operation.
  template <class F>
  RedoOptResult announced(int tid, const RedoOptOp& op, F& fn) {
    Announce& a = ann_[static_cast<std::size_t>(tid)];
    const std::uint64_t ticket = ++a.mine;
    a.insert.store(op.insert, std::memory_order_relaxed);
    a.arg.store(op.arg, std::memory_order_relaxed);
    // ORDER: seq_cst: a combiner whose C1 follows this sees the ticket (and,
    // by release, the op).
    a.ticket.store(ticket, std::memory_order_seq_cst);
    std::uint64_t attempts = 0;
    std::uint32_t spins = 0;
    for (;;) {
      RedoOptResult res;
      if (done(tid, ticket, &res)) {
        std::uint64_t m = max_attempts_.load(std::memory_order_relaxed);
        while (m < attempts && !max_attempts_.compare_exchange_weak(m, attempts, std::memory_order_relaxed)) {
        }
        return res;
      }
      ++attempts;
      std::exception_ptr failed;
      bool recorded = false;  // failed is an operation's, recorded for its announcer
      std::uint64_t helped = 0, applied = 0;
      const Outcome o = combine(
          tid,
          [&](int j, std::vector<MetaDelta>& metas) {
            Replica& r = rep(j);
            helped = 0;
            applied = 0;
            for (int t = 0; t < max_; ++t) {
              Announce& x = ann_[static_cast<std::size_t>(t)];
              // ORDER: seq_cst (acquire pairs with the announcer's store):
              // after our C1's seq_cst load of curComb, so a ticket stored
              // before that load is seen — the attempt bound counts on it.
              const std::uint64_t tk = x.ticket.load(std::memory_order_seq_cst);
              if (tk == 0 || tk <= r.meta[static_cast<std::size_t>(t)].ticket.load(std::memory_order_relaxed)) continue;
              const RedoOptOp o2{x.insert.load(std::memory_order_relaxed), x.arg.load(std::memory_order_relaxed)};
              MetaDelta d{t, tk, false, 0, false};
              // ORDER: acquire pairs with record_failure's release: a
              // batch that applies the operation as failed follows the
              // record, so its announcer finds the exception.
              if (x.failed.load(std::memory_order_acquire) == tk) {
                d.error = true;  // it threw in an earlier batch: no effect
              } else {
                try {
                  d.ok = fn(j, t, o2, &d.out);
                } catch (...) {
                  // Its partial stores are in replica j: this batch is
                  // dropped (combine marks j invalid), the failure recorded
                  // for the next batch to apply as the operation's result.
                  record_failure(x, tk, std::current_exception());
                  recorded = true;
                  throw;
                }
              }
              set_meta(j, d);
              metas.push_back(d);
              ++applied;
              if (t != tid) ++helped;
            }
          },
          &failed);
      if (o == Outcome::kFailed) {
        // Not an operation's failure (the batch's own bookkeeping threw,
        // e.g. bad_alloc): nothing records it for anyone; ours to report.
        if (!recorded) std::rethrow_exception(failed);
        continue;  // the next attempt applies the failed operation as such
      }
      if (o == Outcome::kCommitted) {
        // Relaxed: statistics.
        helped_.fetch_add(helped, std::memory_order_relaxed);
        commits_.fetch_add(1, std::memory_order_relaxed);
        ops_.fetch_add(applied, std::memory_order_relaxed);
      } else {
        backoff(spins);
      }
    }
  }
  // The operation of ticket tk announced in x threw e (in this combiner's
  // batch). The first record of tk stands: a later ticket's never
  // overwrites a record its announcer has still to read (the announcer
  // announces tk + 1 only after reading tk's), and an older ticket's
  // (a stale combiner's) never overwrites a newer one.
  static void record_failure(Announce& x, std::uint64_t tk, std::exception_ptr e) {
    std::lock_guard<std::mutex> g(x.m);
    if (x.failed.load(std::memory_order_relaxed) >= tk) return;
    x.error = std::move(e);
    // ORDER: release: the exception before the ticket that names it.
    x.failed.store(tk, std::memory_order_release);
  }
  // Does curComb's state hold thread tid's ticket? Then *res is its result,
  // and that state is durable. If the operation failed (threw in a
  // combiner), its exception is rethrown here.
  bool done(int tid, std::uint64_t ticket, RedoOptResult* res) {
    bool error = false;
    {
      const std::uint64_t c = enter(tid);
      Leave leave{reading_[static_cast<std::size_t>(tid)].value};
      const Meta& m = rep(static_cast<int>(c & 0xff)).meta[static_cast<std::size_t>(tid)];
      if (m.ticket.load(std::memory_order_relaxed) != ticket) return false;
      res->ok = m.ok.load(std::memory_order_relaxed);
      res->out = m.out.load(std::memory_order_relaxed);
      error = m.error.load(std::memory_order_relaxed);
      ensure_durable(c >> RedoOptRoot::kIdxBits);
    }
    if (error) {
      Announce& a = ann_[static_cast<std::size_t>(tid)];
      std::exception_ptr e;
      {
        std::lock_guard<std::mutex> g(a.m);
        e = a.error;  // recorded for this ticket (failed == ticket)
      }
      std::rethrow_exception(e);
    }
    return true;
  }

  void clear_marks(int j) {
    Replica& r = rep(j);
    for (std::uint64_t l : r.dirty) r.dirty_bits[l / 64] = 0;
    for (std::uint64_t l : r.op_lines) r.op_bits[l / 64] = 0;
    r.dirty.clear();
    r.op_lines.clear();
  }

  FlatCombining<Request> fc_;  // kLock: announcements and the combiner lock
  int max_;
  RedoOptRoot* root_ = nullptr;
  int n_ = 0;
  std::uint64_t bytes_ = 0;
  std::uint64_t bitmap_off_ = 0;
  // replica + 1 a reader (or a combiner, on its source) is on, 0: none;
  // slot max_: transaction().
  std::vector<sync::CachePadded<std::atomic<std::uint32_t>>> reading_;
  std::vector<Announce> ann_;
  std::atomic<std::uint64_t> durable_seq_{0};
  std::vector<std::unique_ptr<Replica>> reps_;
  // One slot of the redo-log ring. Not std::atomic<std::shared_ptr>:
  // libstdc++ 12's is a spin lock on the control-block pointer's low bit
  // whose load() unlocks with a relaxed fetch_sub, so a later store()'s
  // write of the object pointer is not ordered after that load's read (a
  // data race in the C++ memory model; TSan reports it). A mutex per slot
  // gives the same progress (either blocks behind a preempted holder) with
  // an order the model and TSan see. The old log is released outside it.
  class LogSlot {
   public:
    std::shared_ptr<const BatchLog> get() const {
      std::lock_guard<std::mutex> g(m_);
      return log_;
    }
    void put(std::shared_ptr<const BatchLog> log) {
      {
        std::lock_guard<std::mutex> g(m_);
        log_.swap(log);
      }
    }

   private:
    mutable std::mutex m_;
    std::shared_ptr<const BatchLog> log_;
  };
  // The last kRing committed batches' redo logs (slot seq % kRing).
  LogSlot ring_[kRing];
  std::atomic<std::uint64_t> replayed_{0}, copies_{0};
  std::atomic<std::uint64_t> helped_{0}, commits_{0}, ops_{0}, max_attempts_{0}, full_passes_{0};
};
// The pool's recover hook: nothing to repair (see "Recovery"); every
// replica block is kept.
inline void redoopt_recover_root(pmem::Pool&, RedoOptRoot* r, const std::function<void(void*)>& mark) {
  if (r->replicas > static_cast<std::uint64_t>(RedoOptRoot::kMaxReplicas))
    throw std::runtime_error("RedoOpt: corrupt root");
  for (std::uint64_t k = 0; k < r->replicas; ++k)
    if (r->replica[k] != nullptr) mark(r->replica[k]);
}
inline const bool kRedoOptRootRegistered = pmem::register_root_type<RedoOptRoot>(&redoopt_recover_root);

// What a seq_objects.h object is built on: one replica of a RedoOpt.
template <unsigned Faults, RedoOptElection E = RedoOptElection::kWaitFree>
struct RedoOptReplica {
  RedoOpt<Faults, E>* ptm;
  int k;
};

// The storage policy of seq_objects.h for an object in one RedoOpt replica:
// stores interposed (lines logged, pointer words marked), allocation in the
// replica, frees inside the batch, persistence by the batch (the objects'
// own pwb/pfence/psync are no-ops).
template <unsigned Faults = kNoFaults, RedoOptElection E = RedoOptElection::kWaitFree>
class RedoOptStorage {
 public:
  using Context = RedoOptReplica<Faults, E>;
  static constexpr bool kTransactional = true;
  RedoOptStorage(Context& ctx, const SeqParams& p, bool nodes)
      : ctx_(ctx), node_size_(nodes ? sizeof(PNode) + (p.value_size > 8 ? p.value_size - 8 : 0) : 0) {
    if (nodes && p.value_size < 8) throw std::invalid_argument("value_size must be >= 8");
  }
  template <class Root>
  Root* find_root(std::string_view) {
    return static_cast<Root*>(ctx_.ptm->object(ctx_.k, Root::kTypeTag));
  }
  template <class Root>
  Root* create_root(std::string_view) {
    void* mem = ctx_.ptm->alloc(ctx_.k, sizeof(Root), alignof(Root));
    ctx_.ptm->log(ctx_.k, mem, sizeof(Root));  // a new root's pointers are null
    auto* r = new (mem) Root;
    ctx_.ptm->set_object(ctx_.k, r, Root::kTypeTag);
    return r;
  }
  template <class T>
  void set(T& dst, T v) {
    ctx_.ptm->store(ctx_.k, &dst, v);
  }
  void set_next(PNode* n, PNode* v) {
    ctx_.ptm->log_pointer(ctx_.k, &n->next);
    n->next.store(v, std::memory_order_relaxed);  // relaxed: the combiner alone
  }
  // Loads are plain (seq_objects.h's storage interface). Relaxed: the
  // reader holds the object still (lock, or a replica no one writes).
  template <class T>
  T get(const T& src) const {
    return src;
  }
  PNode* next(const PNode* n) const { return n->next.load(std::memory_order_relaxed); }
  void pwb(const void*, std::size_t = 1) {}
  void pfence() {}
  void psync() {}
  PNode* make(int, std::int64_t v) {
    void* mem = ctx_.ptm->alloc(ctx_.k, node_size_);
    ctx_.ptm->log(ctx_.k, mem, node_size_);  // next starts null: no pointer bit needed
    auto* n = new (mem) PNode;
    n->value = v;
    if (node_size_ > sizeof(PNode))
      std::memset(static_cast<char*>(mem) + sizeof(PNode), static_cast<int>(v & 0xff), node_size_ - sizeof(PNode));
    return n;
  }
  std::size_t node_size() const { return node_size_; }
  void release(int, PNode* n) { ctx_.ptm->free(ctx_.k, n, node_size_); }
  void after_sync(int) {}
  void* alloc_array(std::size_t bytes, int) {
    void* a = ctx_.ptm->alloc(ctx_.k, bytes, 64);
    ctx_.ptm->log(ctx_.k, a, bytes);  // plain bytes (the heap's keys)
    return a;
  }

 private:
  Context ctx_;
  std::size_t node_size_;
};

// A RedoOpt holding one sequential object: the redoopt-* technique. Each
// replica has its own instance of the object (attached when a batch first
// runs on it; the object's root is at the same offset in every replica).
template <template <unsigned, class> class Seq, unsigned Faults = kNoFaults,
          RedoOptElection E = RedoOptElection::kWaitFree>
class RedoOptObject {
 public:
  using Object = Seq<kNoFaults, RedoOptStorage<Faults, E>>;
  // replicas 0: redoopt_replicas(E, max_threads).
  RedoOptObject(pmem::Pool& pool, std::string_view name, const SeqParams& p, std::size_t region_bytes,
                int replicas = 0)
      : max_(p.max_threads), name_(name), p_(p), ptm_(pool, name, RedoOptParams{p.max_threads, region_bytes, replicas}),
        obj_(static_cast<std::size_t>(ptm_.replicas())) {
    // Creating or attaching is a batch of its own: a crash inside creation
    // leaves curComb on the state without the object.
    ptm_.transaction([&](int k) { attach(k); });
  }
  // As RomulusObject::apply. Durable on return.
  bool apply(int tid, bool insert, std::int64_t arg, std::int64_t* out) {
    check_tid(tid, max_, "RedoOptObject");
    bool r = false;
    if constexpr (requires { Object::kReadOnlyRemove; }) {
      if (!insert) {
        ptm_.read(tid, [&](int k) { r = obj_[static_cast<std::size_t>(k)]->apply(tid, false, arg, out); });
        return r;
      }
    }
    // Announced (kWaitFree: any combiner may run it, with its own copy of
    // this function; kLock: the combiner runs it). A refused insert or an
    // empty remove leaves *out untouched, as the object's own apply does.
    const RedoOptResult res = ptm_.update_op(tid, RedoOptOp{insert, arg},
                                             [this](int k, int t, const RedoOptOp& o, std::int64_t* o_out) {
                                               return attach(k).apply(t, o.insert, o.arg, o_out);
                                             });
    if (res.ok) *out = res.out;
    return res.ok;
  }
  std::vector<std::int64_t> snapshot(int tid = 0) {
    std::vector<std::int64_t> v;
    ptm_.read(tid, [&](int k) { v = obj_[static_cast<std::size_t>(k)]->snapshot(); });
    return v;
  }
  RedoOpt<Faults, E>& ptm() { return ptm_; }
  double combining_degree() const { return ptm_.combining_degree(); }

 private:
  // Inside a batch on replica k (the combiner alone touches obj_[k]; a
  // reader reads obj_[k] only once k is curComb's, after this batch).
  Object& attach(int k) {
    auto& o = obj_[static_cast<std::size_t>(k)];
    if (!o) {
      RedoOptReplica<Faults, E> ctx{&ptm_, k};
      o.emplace(ctx, name_, p_);
    }
    return *o;
  }
  int max_;
  std::string name_;
  SeqParams p_;
  RedoOpt<Faults, E> ptm_;
  std::vector<std::optional<Object>> obj_;
};

}  // namespace ferrite::baselines
