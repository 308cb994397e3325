// ferrite/baselines/romulus.h — RomulusLog, a persistent transactional
// memory with twin copies, and the sequential objects (seq_objects.h) run
// inside its transactions: the "romulus-*" competitors.
//
// Paper: Andreia Correia, Pascal Felber, Pedro Ramalhete, "Romulus:
// Efficient Algorithms for Persistent Transactional Memory", SPAA 2018.
// Implemented from the paper's description of Romulus and of its RomulusLog
// variant (the public reference code was read to settle details, not
// copied). The paper's text is not among the repository's sources, so its
// pseudo-code lines are not cited; the steps R1–R9 below are ours, in the
// order the paper gives them.
//
// What it is. The persistent data lives twice in the pool: `main`, which
// every load and store of a transaction uses, and `back`, a byte copy of
// main as of the last committed transaction. A persistent state word says
// which copy is consistent:
//   IDLE      both are (main == back on the used bytes);
//   MUTATING  a transaction is writing main: back is the consistent one;
//   COPYING   main holds a committed transaction, back is being brought up
//             to date: main is the consistent one.
// RomulusLog keeps a volatile log of the ranges (here: cache lines) a
// transaction modified, so that the end of a transaction writes back and
// copies only those lines, not the whole region. Write transactions are
// serialized by the writer side of a C-RW-WP reader-writer lock (Calciu,
// Dice, Lev, Luchangco, Marathe, Shavit, PPoPP 2013) and flat-combined: a
// thread announces its transaction in a per-thread slot; whoever holds the
// writer lock runs every announced transaction inside ONE durable
// transaction (one state cycle, four fences for the whole batch). Read-only
// transactions run on main under the reader side (they wait while a writer
// holds the lock, so they see only committed, durable state).
//
// A write transaction (one flat-combined batch), by the lock holder:
//   R1  state = MUTATING; pwb(state); pfence            (begin)
//   R2  wait until no reader is inside main
//   R3  run each announced transaction on main; every store is first logged
//       (its cache lines added to the volatile log) — store interposition only
//   R4  pwb every logged line of main; pfence
//   R5  state = COPYING; pwb(state); psync              (commit: durable here)
//   R6  hand the announcers their results (they return: durable linearizable)
//   R7  copy every logged line main -> back; pwb each
//   R8  fence (publish_fence: a pfence on x86, a psync where a pfence does
//       not make write-backs durable before the next lock holder's stores)
//   R9  state = IDLE (no pwb: it is written back by eviction or with the next
//       transaction's R1); release the lock
// Four fences per transaction whatever its size (R1, R4, R5, R8), as the
// paper states for Romulus.
//
// Recovery (idempotent: it may itself be interrupted):
//   IDLE      nothing;
//   MUTATING  copy back -> main (back's used bytes), pwb, psync;
//   COPYING   copy main -> back (main's used bytes), pwb, psync;
//   then state = IDLE; pwb; psync.
// It relies only on the pool: the volatile log of the crashed run is gone,
// so recovery copies the whole used part of the consistent copy.
//
// In-region allocation (the paper: "any sequential allocator" whose
// metadata lives in the region): a bump pointer (`used`) and a few exact-size
// free lists, kept in the region header at offset 0 of main, changed only
// through logged stores — so they are copied to back and restored with the
// data, and a crash never leaks or double-allocates. Pointers inside the
// region point into main (back is never dereferenced, only copied).
//
// Thread safety: update/read/snapshot concurrently for distinct tids in
// [0, max_threads). log/store/alloc/free/object/set_object only from inside
// a write transaction (the function given to update or transaction).
//
// Invariants:
//   * only the writer-lock holder stores to main, the state word and back;
//   * every store to main inside a transaction is logged before R4;
//   * IDLE durable => back == main on [0, used) durable; MUTATING durable =>
//     back durable and consistent; COPYING durable => main durable and
//     consistent (the transaction is committed).
// Persistence invariants: R1's MUTATING is durable before any store of R3
// can reach the media (pfence; under the abstract model an eviction never
// precedes a fenced write-back); main's lines are durable before COPYING
// (R4's pfence, R5's psync); back's lines are durable before IDLE, and before
// the next transaction's MUTATING (R8).
//
// Deviations from the paper (docs/baselines.md, "RomulusLog"): the log is
// kept per cache line (a bitmap and a list of line indices), not as (address,
// length) ranges, and there is no switch to a full copy for large logs (the
// objects' transactions touch a few lines); the allocator is the small one
// above, not Doug Lea's; an exception inside a batch rolls the whole batch
// back (back -> main on the logged lines) and is rethrown to every announcer.
// Not detectable (no per-thread record of operations), like lock-persist.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
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
inline constexpr unsigned kRomulusNoMutatingFence = 1u << 8;  // R1 without its pfence
inline constexpr unsigned kRomulusEarlyIdle = 1u << 9;        // R8 dropped: IDLE before back is durable

// The pool root: the state word and where the twin copies are.
struct RomulusRoot {
  static constexpr std::uint32_t kTypeTag = 0x524F'4D4C;  // "ROML"
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "baselines::RomulusLog";
  static constexpr std::uint64_t kIdle = 0, kMutating = 1, kCopying = 2;
  RomulusRoot(std::uint8_t* m, std::uint8_t* b, std::uint64_t n) : main(m), back(b), region_bytes(n) {}
  // Written only by the writer-lock holder and by recovery; an aligned
  // 8-byte word, so failure-atomic.
  alignas(64) std::uint64_t state = kIdle;
  // Set at creation, never changed.
  alignas(64) std::uint8_t* main = nullptr;
  std::uint8_t* back = nullptr;
  std::uint64_t region_bytes = 0;  // bytes per copy (a multiple of 64)
};
static_assert(offsetof(RomulusRoot, state) == 0);
static_assert(offsetof(RomulusRoot, main) == 64);
static_assert(offsetof(RomulusRoot, back) == 72);
static_assert(offsetof(RomulusRoot, region_bytes) == 80);
static_assert(sizeof(RomulusRoot) == 128);

// The header at offset 0 of each copy (main's is live, back's a copy of it).
struct RomulusRegion {
  static constexpr std::uint64_t kMagic = 0x524F'4D55'4C55'5331;  // "ROMULUS1"
  static constexpr int kFreeLists = 6;
  std::uint64_t magic;
  std::uint64_t used;          // bytes [0, used) of the copy are allocated
  void* object;                // the root of the object the region holds, or null
  std::uint64_t object_tag;    // its Root::kTypeTag
  struct FreeList {
    std::uint64_t size;        // block size (0: unused list)
    void* head;                // first free block; its first word links the next
  } free[kFreeLists];
};
inline constexpr std::uint64_t kRomulusHeaderBytes = 128;
static_assert(sizeof(RomulusRegion) == kRomulusHeaderBytes);
static_assert(offsetof(RomulusRegion, used) == 8);
static_assert(offsetof(RomulusRegion, free) == 32);

namespace romulus_internal {

// Copies [0, n) of `from` over `to` and writes `to` back. Multi-word,
// not failure-atomic (declared): a crash inside it leaves the state word
// unchanged, so recovery redoes the copy.
inline void copy_region(std::uint8_t* to, const std::uint8_t* from, std::uint64_t n) {
  std::memcpy(to, from, n);
  persist::declare_store(to, n);
  // PERSIST: the copied lines; the caller's psync makes them durable before
  // the state word changes.
  persist::pwb(to, n);
}

// The used bytes of a consistent copy, checked against the region size (a
// corrupt image fails recovery instead of copying past the block).
inline std::uint64_t used_of(const RomulusRoot& r, const std::uint8_t* copy) {
  const auto* h = reinterpret_cast<const RomulusRegion*>(copy);
  if (h->magic != RomulusRegion::kMagic || h->used < kRomulusHeaderBytes || h->used > r.region_bytes)
    throw std::runtime_error("RomulusLog: corrupt region header");
  return h->used;
}

}  // namespace romulus_internal

// Recovery of the twin copies from the durable state word (see the top).
// Idempotent; relies only on the pool's contents.
inline void romulus_recover(RomulusRoot* r) {
  namespace ri = romulus_internal;
  const std::uint64_t s = r->state;
  if (s == RomulusRoot::kIdle) return;
  if (s == RomulusRoot::kMutating) {
    // CRASH: in R1–R5: main may hold any part of an uncommitted
    // transaction; back is the last committed state. Roll main back.
    ri::copy_region(r->main, r->back, ri::used_of(*r, r->back));
  } else if (s == RomulusRoot::kCopying) {
    // CRASH: in R5–R9: main is committed and durable; back may be partly
    // copied. Roll back forward.
    ri::copy_region(r->back, r->main, ri::used_of(*r, r->main));
  } else {
    throw std::runtime_error("RomulusLog: corrupt state word " + std::to_string(s));
  }
  // PERSIST: the repaired copy is durable before the state says IDLE (a
  // crash before this psync finds the old state and copies again).
  persist::psync();
  r->state = RomulusRoot::kIdle;
  // PERSIST: IDLE durable before the pool is used. Not needed for
  // correctness (the copies agree now: losing IDLE costs another copy at
  // the next open), but it makes a recovered pool's state plain.
  persist::pwb(&r->state);
  persist::psync();
}

// The pool's recover hook: repair the copies, keep both blocks (everything
// the region holds is inside main: the pool never sees its nodes).
inline void romulus_recover_root(pmem::Pool&, RomulusRoot* r, const std::function<void(void*)>& mark) {
  if (r->main == nullptr || r->back == nullptr) return;
  romulus_recover(r);
  mark(r->main);
  mark(r->back);
}
inline const bool kRomulusRootRegistered = pmem::register_root_type<RomulusRoot>(&romulus_recover_root);

struct RomulusParams {
  int max_threads = 8;
  std::size_t region_bytes = std::size_t{1} << 20;  // per copy; two are allocated
};

template <unsigned Faults = kNoFaults>
class RomulusLog {
 public:
  static constexpr int kMaxThreads = 256;

  // Attaches to the RomulusLog under root `name` (the pool recovered it when
  // it opened), or creates one with two copies of p.region_bytes.
  RomulusLog(pmem::Pool& pool, std::string_view name, const RomulusParams& p)
      : fc_(p.max_threads, "RomulusLog"), max_(fc_.max_threads()), readers_(static_cast<std::size_t>(max_)) {
    if (pool.has_root(name)) {
      root_ = pool.root<RomulusRoot>(name);
      romulus_recover(root_);  // done by the pool's hook already: idempotent
    } else {
      const std::size_t bytes = std::max<std::size_t>((p.region_bytes + 63) & ~std::size_t{63}, 4096);
      auto* m = static_cast<std::uint8_t*>(pool.heap().alloc(bytes, 0));
      auto* b = static_cast<std::uint8_t*>(pool.heap().alloc(bytes, 0));
      if ((reinterpret_cast<std::uintptr_t>(m) | reinterpret_cast<std::uintptr_t>(b)) % 64 != 0)
        throw std::logic_error("RomulusLog: region blocks are not line aligned");
      auto* h = reinterpret_cast<RomulusRegion*>(m);
      std::memset(h, 0, sizeof(RomulusRegion));
      h->magic = RomulusRegion::kMagic;
      h->used = kRomulusHeaderBytes;
      std::memcpy(b, m, sizeof(RomulusRegion));
      // PERSIST: both headers before the root naming the blocks
      // (create_root's pfence orders them; its publish makes all durable).
      // CRASH: before the root is published the blocks are not marked by
      // any root: the pool's recovery frees them.
      persist::pwb(m, sizeof(RomulusRegion));
      persist::pwb(b, sizeof(RomulusRegion));
      root_ = pool.create_root<RomulusRoot>(name, m, b, static_cast<std::uint64_t>(bytes));
    }
    main_ = root_->main;
    back_ = root_->back;
    bytes_ = root_->region_bytes;
    if (romulus_internal::used_of(*root_, main_) > bytes_) throw std::runtime_error("RomulusLog: corrupt region");
    dirty_bits_.assign((bytes_ / 64 + 63) / 64, 0);
  }
  RomulusLog(const RomulusLog&) = delete;
  RomulusLog& operator=(const RomulusLog&) = delete;

  // A write transaction: fn() runs inside a durable transaction (possibly
  // combined with other threads' into one); returns once it is durable.
  // An exception thrown by fn (or by any transaction of the same batch)
  // rolls the batch back and is rethrown here.
  template <class F>
  void update(int tid, F&& fn) {
    check_tid(tid, max_, "RomulusLog");
    Request req{&invoke<F>, &fn, {}};
    // Served by a combiner (R6 released it: fn's effects and req.error are
    // visible), or we hold the writer lock and serve every announced one.
    fc_.submit(tid, &req, [this](Request* const* reqs, std::size_t n) { run_batch(reqs, n); });
  }

  // A read-only transaction on main (C-RW-WP reader side).
  template <class F>
  void read(int tid, F&& fn) {
    check_tid(tid, max_, "RomulusLog");
    std::atomic<std::uint64_t>& ri = readers_[static_cast<std::size_t>(tid)].value;
    std::uint32_t spins = 0;
    for (;;) {
      // ORDER: seq_cst store then seq_cst load, against the writer's
      // seq_cst lock CAS then seq_cst loads of the indicators (Dekker): a
      // reader inside main is seen by the writer, or sees the writer.
      ri.store(1, std::memory_order_seq_cst);
      if (!fc_.flag().load(std::memory_order_seq_cst)) break;
      ri.store(0, std::memory_order_relaxed);  // relaxed: we read nothing yet
      while (fc_.flag().load(std::memory_order_acquire)) backoff(spins);
    }
    struct Depart {
      std::atomic<std::uint64_t>& ri;
      // ORDER: release: our loads of main happen before the writer's stores.
      ~Depart() { ri.store(0, std::memory_order_release); }
    } depart{ri};
    fn();
  }

  // A write transaction run by the caller alone (creation, tests): takes
  // the writer lock, no combining.
  template <class F>
  void transaction(F&& fn) {
    Request req{&invoke<F>, &fn, {}};
    fc_.alone(&req, [this](Request* const* reqs, std::size_t n) { run_batch(reqs, n); });
  }

  // ---- inside a write transaction only (the writer-lock holder)
  // Store interposition: the lines of [p, p+n) are modified by this
  // transaction (logged once per transaction).
  void log(const void* p, std::size_t n) {
    const auto off = static_cast<std::uint64_t>(static_cast<const std::uint8_t*>(p) - main_);
    if (static_cast<const std::uint8_t*>(p) < main_ || off + n > bytes_)
      throw std::logic_error("RomulusLog: a logged store outside the region");
    for (std::uint64_t l = off / 64, last = (off + n - 1) / 64; l <= last; ++l) {
      std::uint64_t& w = dirty_bits_[l / 64];
      const std::uint64_t bit = std::uint64_t{1} << (l % 64);
      if ((w & bit) != 0) continue;
      w |= bit;
      dirty_.push_back(static_cast<std::uint32_t>(l));
    }
  }
  template <class T>
  void store(T* p, const T& v) {
    log(p, sizeof(T));
    *p = v;
  }
  // In-region allocation of n bytes aligned to `align` (<= 64); contents
  // undefined (the caller logs what it initialises).
  void* alloc(std::size_t n, std::size_t align = 16) {
    n = (n + 15) & ~std::size_t{15};
    RomulusRegion& h = header();
    for (auto& f : h.free)
      if (f.size == n && f.head != nullptr && reinterpret_cast<std::uintptr_t>(f.head) % align == 0) {
        void* p = f.head;
        store(&f.head, *static_cast<void**>(p));
        return p;
      }
    const std::uint64_t at = (h.used + align - 1) & ~static_cast<std::uint64_t>(align - 1);
    if (at + n > bytes_)
      throw std::runtime_error("RomulusLog: region full (" + std::to_string(bytes_) + " bytes per copy)");
    store(&h.used, at + n);
    return main_ + at;
  }
  // Gives back a block of n bytes (as passed to alloc). A size with no free
  // list left is leaked (the objects free one node size only).
  void free(void* p, std::size_t n) {
    n = (n + 15) & ~std::size_t{15};
    RomulusRegion& h = header();
    RomulusRegion::FreeList* list = nullptr;
    for (auto& f : h.free)
      if (f.size == n) list = &f;
    if (list == nullptr)
      for (auto& f : h.free)
        if (f.size == 0) {
          list = &f;
          store(&f.size, static_cast<std::uint64_t>(n));
          break;
        }
    if (list == nullptr) return;
    store(static_cast<void**>(p), list->head);
    store(&list->head, p);
  }
  // The one object the region holds (its root), tagged with its type.
  void* object(std::uint32_t tag) const {
    const RomulusRegion& h = header();
    if (h.object != nullptr && h.object_tag != tag)
      throw std::runtime_error("RomulusLog: the region holds an object of another type");
    return h.object;
  }
  void set_object(void* o, std::uint32_t tag) {
    store(&header().object, o);
    store(&header().object_tag, static_cast<std::uint64_t>(tag));
  }

  // ---- for tests and tools
  std::uint64_t state() const { return root_->state; }
  std::uint64_t used() const { return header().used; }
  RomulusRoot* root() const { return root_; }
  // IDLE and quiescent: the copies agree on the used bytes.
  bool copies_agree() const { return std::memcmp(main_, back_, header().used) == 0; }
  // Transactions per batch (flat combining), since creation in this process.
  double combining_degree() const { return fc_.combining_degree(); }

 private:
  struct Request {
    void (*run)(void*);
    void* fn;
    std::exception_ptr error;
  };
  template <class F>
  static void invoke(void* f) {
    (*static_cast<std::remove_reference_t<F>*>(f))();
  }
  static void backoff(std::uint32_t& spins) { FlatCombining<Request>::backoff(spins); }
  RomulusRegion& header() const { return *reinterpret_cast<RomulusRegion*>(main_); }

  // R1–R9 for `n` requests (the writer-lock holder; the flat combining's
  // unlock releases main and the state to the next holder and to readers).
  void run_batch(Request* const* reqs, std::size_t n) {
    auto get = [&](std::size_t i) -> Request& { return *reqs[i]; };
    // R1. PERSIST: MUTATING is durable before any store to main can reach
    // the media. CRASH: after it, recovery rolls main back to back.
    root_->state = RomulusRoot::kMutating;
    persist::pwb(&root_->state);
    if constexpr ((Faults & kRomulusNoMutatingFence) == 0) persist::pfence();
    // R2. ORDER: seq_cst, after the seq_cst lock CAS (Dekker with read());
    // it also acquires a departing reader's release.
    for (auto& r : readers_) {
      std::uint32_t spins = 0;
      while (r.value.load(std::memory_order_seq_cst) != 0) backoff(spins);
    }
    // R3.
    std::exception_ptr failed;
    for (std::size_t i = 0; i < n && !failed; ++i) {
      try {
        get(i).run(get(i).fn);
      } catch (...) {
        failed = std::current_exception();
      }
    }
    if (failed) {
      abort_batch();
      for (std::size_t i = 0; i < n; ++i) get(i).error = failed;
      fc_.release(reqs, n);
      return;
    }
    // R4. PERSIST: main's modified lines, ordered before COPYING.
    for (std::uint32_t l : dirty_) persist::pwb(main_ + std::uint64_t{l} * 64);
    persist::pfence();
    // R5. PERSIST: the commit point: after this psync the batch is durable.
    // CRASH: between R5 and R9 recovery copies main to back.
    root_->state = RomulusRoot::kCopying;
    persist::pwb(&root_->state);
    persist::psync();
    // R6.
    fc_.release(reqs, n);
    // R7. back := main on the logged lines. CRASH: a torn or partial copy
    // is repaired by recovery (COPYING is durable: main is copied again).
    for (std::uint32_t l : dirty_) {
      const std::uint64_t off = std::uint64_t{l} * 64;
      std::memcpy(back_ + off, main_ + off, 64);
      persist::declare_store(back_ + off, 64);
      // PERSIST: ordered before IDLE and the next MUTATING by R8.
      persist::pwb(back_ + off);
      dirty_bits_[l / 64] = 0;  // every set bit is a logged line: the whole word goes
    }
    dirty_.clear();
    // R8. PERSIST: back is durable before IDLE is stored, and before the
    // next lock holder's MUTATING (another thread: a pfence orders only this
    // thread's write-backs under the abstract model, hence publish_fence).
    if constexpr ((Faults & kRomulusEarlyIdle) == 0) persist::publish_fence();
    // R9. No pwb: IDLE persists by eviction or with the next R1; until then
    // a crash finds COPYING and recopies main to back (harmless).
    root_->state = RomulusRoot::kIdle;
  }

  // An exception inside a batch: main := back on the logged lines (R3
  // undone), then IDLE. Durable before the lock is released.
  void abort_batch() {
    for (std::uint32_t l : dirty_) {
      const std::uint64_t off = std::uint64_t{l} * 64;
      std::memcpy(main_ + off, back_ + off, 64);
      // CRASH: MUTATING is durable: recovery would restore these lines too.
      persist::pwb(main_ + off);
      dirty_bits_[l / 64] = 0;
    }
    dirty_.clear();
    // PERSIST: main restored before the state leaves MUTATING.
    persist::psync();
    root_->state = RomulusRoot::kIdle;
    // PERSIST: IDLE durable before the announcers learn of the failure.
    persist::pwb(&root_->state);
    persist::psync();
  }

  FlatCombining<Request> fc_;  // announcements and the writer lock
  int max_;
  RomulusRoot* root_ = nullptr;
  std::uint8_t* main_ = nullptr;
  std::uint8_t* back_ = nullptr;
  std::uint64_t bytes_ = 0;
  std::vector<sync::CachePadded<std::atomic<std::uint64_t>>> readers_;  // C-RW-WP reader indicators
  // Lock holder only: the volatile log (one bit per line of the region, and
  // the lines in the order first logged) and the batch being combined.
  std::vector<std::uint64_t> dirty_bits_;
  std::vector<std::uint32_t> dirty_;
};

// The storage policy of seq_objects.h for objects inside a RomulusLog
// region: stores logged, allocation in the region, frees inside the
// transaction, persistence by the transaction (the objects' own pwb/pfence/
// psync are no-ops).
template <unsigned Faults = kNoFaults>
class RomulusStorage {
 public:
  using Context = RomulusLog<Faults>;
  static constexpr bool kTransactional = true;
  RomulusStorage(Context& ptm, const SeqParams& p, bool nodes)
      : ptm_(ptm), node_size_(nodes ? sizeof(PNode) + (p.value_size > 8 ? p.value_size - 8 : 0) : 0) {
    if (nodes && p.value_size < 8) throw std::invalid_argument("value_size must be >= 8");
  }
  template <class Root>
  Root* find_root(std::string_view) {
    return static_cast<Root*>(ptm_.object(Root::kTypeTag));
  }
  template <class Root>
  Root* create_root(std::string_view) {
    void* mem = ptm_.alloc(sizeof(Root), alignof(Root));
    ptm_.log(mem, sizeof(Root));
    auto* r = new (mem) Root;
    ptm_.set_object(r, Root::kTypeTag);
    return r;
  }
  template <class T>
  void set(T& dst, T v) {
    ptm_.store(&dst, v);
  }
  void set_next(PNode* n, PNode* v) {
    ptm_.log(&n->next, sizeof(PNode*));
    n->next.store(v, std::memory_order_relaxed);  // relaxed: inside the writer lock
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
    void* mem = ptm_.alloc(node_size_);
    ptm_.log(mem, node_size_);
    auto* n = new (mem) PNode;
    n->value = v;
    // The payload is written so value_size costs what it would for real
    // data (as NodeAlloc does).
    if (node_size_ > sizeof(PNode))
      std::memset(static_cast<char*>(mem) + sizeof(PNode), static_cast<int>(v & 0xff), node_size_ - sizeof(PNode));
    return n;
  }
  std::size_t node_size() const { return node_size_; }
  // Inside the transaction: no reader is in main, and the free is undone
  // with the rest if the transaction is.
  void release(int, PNode* n) { ptm_.free(n, node_size_); }
  void after_sync(int) {}
  void* alloc_array(std::size_t bytes, int) { return ptm_.alloc(bytes, 64); }

 private:
  Context& ptm_;
  std::size_t node_size_;
};

// A RomulusLog region holding one sequential object: the romulus-* technique.
// Seq is a seq_objects.h template (SeqStack, SeqQueue, SeqHeap, SeqFloat).
template <template <unsigned, class> class Seq, unsigned Faults = kNoFaults>
class RomulusObject {
 public:
  using Object = Seq<kNoFaults, RomulusStorage<Faults>>;
  RomulusObject(pmem::Pool& pool, std::string_view name, const SeqParams& p, std::size_t region_bytes)
      : max_(p.max_threads), ptm_(pool, name, RomulusParams{p.max_threads, region_bytes}) {
    // Creating or attaching the object is a transaction of its own: a crash
    // inside creation leaves the region without an object (rolled back).
    ptm_.transaction([&] { obj_.emplace(ptm_, name, p); });
  }
  // insert: push / enqueue / heap insert / float mul; remove: pop / dequeue
  // / delete-min / float read (a read-only transaction). Returns whether
  // *out holds a value. Durable on return.
  bool apply(int tid, bool insert, std::int64_t arg, std::int64_t* out) {
    check_tid(tid, max_, "RomulusObject");
    bool r = false;
    if constexpr (requires { Object::kReadOnlyRemove; }) {
      if (!insert) {
        ptm_.read(tid, [&] { r = obj_->apply(tid, false, arg, out); });
        return r;
      }
    }
    ptm_.update(tid, [&] { r = obj_->apply(tid, insert, arg, out); });
    return r;
  }
  std::vector<std::int64_t> snapshot(int tid = 0) {
    std::vector<std::int64_t> v;
    ptm_.read(tid, [&] { v = obj_->snapshot(); });
    return v;
  }
  RomulusLog<Faults>& ptm() { return ptm_; }
  double combining_degree() const { return ptm_.combining_degree(); }

 private:
  int max_;
  RomulusLog<Faults> ptm_;
  std::optional<Object> obj_;
};

}  // namespace ferrite::baselines
