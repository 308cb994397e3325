// ferrite/persist/persist.h — the persistence vocabulary.
//
// Every algorithm in Ferrite expresses durability with these verbs and
// nothing else; no write-back or fence instruction appears outside persist/.
//
//   pwb(p), pwb(p, n)   write back the cache line(s) holding [p, p+n)
//   pfence()            order earlier pwbs before later pwbs and stores
//   psync()             wait until earlier pwbs are durable
//   ofence(), dfence()  HOPS ordering / durability fence
//   persist_barrier(), new_strand(), join_strand()   strand persistency
//   store(p, v), store_bytes(p, src, n)   an annotated store (for the HOPS
//                       and strand models, in which stores persist)
//   publish_fence()     pfence where it makes write-backs durable before
//                       later stores are visible (x86), else psync
//   declare_store(p, n) not a verb: an annotation for the crash simulator
//                       ("n bytes at p were stored as one non-atomic,
//                       multi-word unit"); free on real backends
//
// Backends. The verbs dispatch through a small table of function pointers
// (as libpmem does; the indirect call is noise next to a write-back). The
// table in force is process-wide: `install(backend)` switches it. Pools are
// opened with a backend and install it (pmem/pool.h); a process that opens
// several pools at once must open them with the same backend — the pool
// refuses otherwise. Built-in backends:
//   hardware      clwb, else clflushopt, else clflush (CPUID, once); sfence
//   off           no instructions: synchronization cost alone
//   emulated(ns)  hardware + a calibrated spin per psync/dfence/join_strand
//                 (and optionally per pwb) to emulate slower media
//   sim           the crash simulator (crash/sim.h) installs its own table
//
// Call sites. Every verb takes a defaulted std::source_location: the line
// that issued it (for wrappers such as persist_range and LineWriteback, the
// wrapper's caller). Hardware backends ignore it — it costs one not-taken
// branch per verb (bench/micro_verbs.cc measures it). The crash simulator
// records each site and can suppress one at run time: the mutation testing
// of `ferrite crashtest --mutate` (crash/sites.h).
//
// Counters. Every verb is counted per thread in a cache-padded slot (one pwb
// per cache line written back), whatever the backend — including `off`, so
// a benchmark with persistence off still reports what it would have issued.
// `counters()` sums all slots; `reset_counters()` zeroes them.
//
// Thread safety: the verbs are safe from any thread. `install` must not race
// with verbs issued on behalf of a pool that uses the previous backend.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <source_location>
#include <string>
#include <string_view>
#include <type_traits>

namespace ferrite::persist {

inline constexpr std::size_t kCacheLine = 64;

enum class Verb : int {
  kPwb = 0,
  kPfence,
  kPsync,
  kOfence,
  kDfence,
  kPersistBarrier,
  kNewStrand,
  kJoinStrand,
  kCount
};
inline constexpr int kVerbCount = static_cast<int>(Verb::kCount);
std::string_view verb_name(Verb v);

// The write-back instruction a `hardware` backend uses.
enum class Flush : int { kNone = 0, kClflush, kClflushopt, kClwb };
std::string_view flush_name(Flush f);
// Best instruction this CPU supports (CPUID leaf 7 / leaf 1), detected once.
Flush detect_flush();

// The role of a verb, as annotated for the timing model (note_next below).
enum class Mark : std::uint8_t {
  kUndoBarrier = 1,   // a persist_barrier: undo entry before its update
  kOrderingJoin = 2,  // a join_strand that only orders (HOPS: an ofence)
};

// A backend: one function per verb. `pwb_line` receives a 64-byte aligned
// line address; the front end splits ranges and counts. `declare_store` is
// not a verb (not counted, no crash point): nullptr on every backend but the
// crash simulator's, which forwards it to its persistency model.
struct Backend {
  const char* name;
  void (*pwb_line)(const void* line);
  void (*pfence)();
  void (*psync)();
  void (*ofence)();
  void (*dfence)();
  void (*persist_barrier)();
  void (*new_strand)();
  void (*join_strand)();
  void (*declare_store)(const void* p, std::size_t n);  // nullptr: ignore
  // nullptr on every backend but the crash simulator's: sees the call site
  // of each verb before it is issued; false suppresses the verb (neither
  // counted nor issued).
  bool (*site)(const std::source_location& where, Verb v) = nullptr;
  // nullptr on every backend but the crash simulator's: an annotated store
  // (persist::store) for persistency models in which stores, not
  // write-backs, are what persists (HOPS, strand persistency).
  void (*stored)(const void* p, std::size_t n) = nullptr;
  // Does a pfence make this thread's earlier write-backs durable before
  // any later store of it becomes visible to other threads? nullptr: yes —
  // x86, where pfence is an sfence that waits for earlier clwbs (hardware,
  // emulated, nosync, off). The crash simulator answers per model (no
  // under `abstract`, whose pfence only orders this thread's write-backs).
  bool (*pfence_durable)() = nullptr;
  // nullptr on every backend but the trace recorder's (model/trace.h) and
  // the crash simulator's: a lock of the persistent code was acquired (true)
  // or is being released (false) — the timing model replays lock hand-offs
  // between threads; the hops+ crash model orders critical sections by them
  // (crash/model.h LockEvent).
  void (*lock_event)(const void* lock, bool acquired) = nullptr;
  // nullptr on every backend but the trace recorder's: the thread's next
  // verb of the mark's kind plays the role the mark names (Mark, above), so
  // that the timing model can replay designs that treat that role apart.
  void (*mark_next)(Mark m) = nullptr;
};

// Configuration a pool (or a benchmark) asks for. Parsed from text by
// `parse_backend`: "hardware", "hardware:clflush", "hardware:clflushopt",
// "off", "nosync" (hardware with psync/dfence/join as no-ops), "emulated:NS",
// "emulated:NS:PWB_NS", "sim".
struct BackendConfig {
  enum class Kind { kHardware, kOff, kNoSync, kEmulated, kSim } kind = Kind::kHardware;
  Flush force_flush = Flush::kNone;  // kNone: detect
  std::uint32_t sync_delay_ns = 0;   // emulated: per psync/dfence/join_strand
  std::uint32_t pwb_delay_ns = 0;    // emulated: per line written back
  std::string to_string() const;
  friend bool operator==(const BackendConfig&, const BackendConfig&) = default;
};
// Returns false (and leaves `out` untouched) on malformed text.
bool parse_backend(std::string_view text, BackendConfig* out);

// Builds the table for a non-sim config (sim tables come from crash/).
// The returned pointer lives for the process.
const Backend* make_backend(const BackendConfig& cfg);

// The crash simulator plugs in here (persist/ knows nothing of crash/): a
// pool opened with Kind::kSim asks the registered hooks for a table that
// simulates the pool's range [base, base+size), and detaches on close.
struct SimHooks {
  const Backend* (*attach)(void* base, std::size_t size);
  void (*detach)(void* base);
  // True when the simulator already holds a mapping of exactly [base,
  // base+size) with the pool file's contents (a crash worker's reusable
  // image view): the pool then maps and unmaps nothing itself. May be null.
  bool (*maps)(void* base, std::size_t size) = nullptr;
  // A crash worker's reusable volatile replica (Mirror's, pmem::Pool::
  // map_volatile_replica): `keep` offers the simulator the replica mapping
  // [at, at+size) a closing pool would unmap (true: the simulator owns it
  // now); `replica` hands a kept one back, zero-filled, to a pool opening at
  // the same place (nullptr: none kept; map one). May be null.
  bool (*keep_replica)(void* at, std::size_t size) = nullptr;
  void* (*replica)(void* at, std::size_t size) = nullptr;
};
void set_sim_hooks(const SimHooks& hooks);
// Throws std::logic_error when no simulator registered its hooks.
const Backend* sim_attach(void* base, std::size_t size);
void sim_detach(void* base);
bool sim_maps(void* base, std::size_t size);
bool sim_keep_replica(void* at, std::size_t size);
void* sim_replica(void* at, std::size_t size);

// The table in force. Default: hardware with the detected instruction.
void install(const Backend* backend);
const Backend* installed();
// Flush instruction the hardware backends currently use (after overrides).
Flush active_flush();

// ---------------------------------------------------------------- counters

struct Counters {
  std::array<std::uint64_t, kVerbCount> n{};
  std::uint64_t operator[](Verb v) const { return n[static_cast<int>(v)]; }
  Counters& operator+=(const Counters& o) {
    for (int i = 0; i < kVerbCount; ++i) n[i] += o.n[i];
    return *this;
  }
  Counters operator-(const Counters& o) const {
    Counters r;
    for (int i = 0; i < kVerbCount; ++i) r.n[i] = n[i] - o.n[i];
    return r;
  }
};
Counters counters();          // sum over all threads
Counters thread_counters();   // the calling thread's slot only
void reset_counters();

namespace detail {
inline constexpr int kMaxCounterSlots = 1024;
struct alignas(128) CounterSlot {
  // Single writer (the owning thread); readers sum with relaxed loads. A
  // relaxed load+store (not an RMW) suffices because only the owner writes.
  std::array<std::atomic<std::uint64_t>, kVerbCount> n{};
};
CounterSlot* this_thread_slot();
extern std::atomic<const Backend*> g_backend;

inline void count(Verb v, std::uint64_t k = 1) {
  auto& c = this_thread_slot()->n[static_cast<int>(v)];
  c.store(c.load(std::memory_order_relaxed) + k, std::memory_order_relaxed);
}
}  // namespace detail

// --------------------------------------------------------------- the verbs

using Site = std::source_location;

inline void pwb(const void* p, std::size_t n, const Site& where = Site::current()) {
  if (n == 0) return;
  auto a = reinterpret_cast<std::uintptr_t>(p) & ~(kCacheLine - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(p) + n;
  const Backend* b = detail::g_backend.load(std::memory_order_relaxed);
  if (b->site != nullptr && !b->site(where, Verb::kPwb)) [[unlikely]]
    return;
  std::uint64_t lines = 0;
  for (; a < end; a += kCacheLine, ++lines) b->pwb_line(reinterpret_cast<const void*>(a));
  detail::count(Verb::kPwb, lines);
}
inline void pwb(const void* p, const Site& where = Site::current()) { pwb(p, 1, where); }
template <class T>
inline void pwb_object(const T* p, const Site& where = Site::current()) { pwb(p, sizeof(T), where); }

#define FERRITE_PERSIST_VERB(fn, verb)                                \
  inline void fn(const Site& where = Site::current()) {               \
    const Backend* b = detail::g_backend.load(std::memory_order_relaxed); \
    if (b->site != nullptr && !b->site(where, Verb::verb)) [[unlikely]]   \
      return;                                                         \
    detail::count(Verb::verb);                                        \
    b->fn();                                                          \
  }
FERRITE_PERSIST_VERB(pfence, kPfence)
FERRITE_PERSIST_VERB(psync, kPsync)
FERRITE_PERSIST_VERB(ofence, kOfence)
FERRITE_PERSIST_VERB(dfence, kDfence)
FERRITE_PERSIST_VERB(persist_barrier, kPersistBarrier)
FERRITE_PERSIST_VERB(new_strand, kNewStrand)
FERRITE_PERSIST_VERB(join_strand, kJoinStrand)
#undef FERRITE_PERSIST_VERB

// Annotation: the code has just stored (or is about to store, with no verb
// in between) the n bytes at p as one multi-word unit that is not
// failure-atomic — a memcpy of a record, a 16-byte CAS. A crash may leave
// any mix of old and new aligned 8-byte words of it. Ordinary stores need no
// annotation. Only the crash simulator looks at it (crash/model.h: under the
// x86 model, only declared words of a line may tear); on other backends it
// is a load and a not-taken branch.
inline void declare_store(const void* p, std::size_t n) {
  const Backend* b = detail::g_backend.load(std::memory_order_relaxed);
  if (b->declare_store != nullptr) [[unlikely]]
    b->declare_store(p, n);
}

// Annotations: the lock at `lock` has just been acquired / is about to be
// released. Not verbs (not counted, no crash point); the trace backend (the
// timing model orders lock hand-offs by them) and the crash simulator (the
// hops+ model's hardware history) look at them. On other backends a load
// and a not-taken branch.
inline void note_acquired(const void* lock) {
  const Backend* b = detail::g_backend.load(std::memory_order_relaxed);
  if (b->lock_event != nullptr) [[unlikely]]
    b->lock_event(lock, true);
}
inline void note_releasing(const void* lock) {
  const Backend* b = detail::g_backend.load(std::memory_order_relaxed);
  if (b->lock_event != nullptr) [[unlikely]]
    b->lock_event(lock, false);
}

// Annotations of a verb's role, for the timing model's replay (not verbs:
// not counted, no crash point; only the trace backend looks, and marks the
// thread's next verb of that kind; on other backends a load and a
// not-taken branch):
//   note_undo_barrier()   the next persist_barrier orders an undo entry
//                         before its in-place update (StrandWeaver Fig. 5
//                         log_store) — the ordering the paper's NON-ATOMIC
//                         design drops, keeping every other;
//   note_ordering_join()  the next join_strand only orders (Fig. 5
//                         log_end's JoinStrand before the end entry): the
//                         same code for HOPS issues an ofence there, where
//                         every other JoinStrand of the logging library is
//                         a durability point (HOPS: a dfence). The hops
//                         design replays a strand recording by this mark
//                         (model/timing.h design_replays).
inline void note_next(Mark m) {
  const Backend* b = detail::g_backend.load(std::memory_order_relaxed);
  if (b->mark_next != nullptr) [[unlikely]]
    b->mark_next(m);
}
inline void note_undo_barrier() { note_next(Mark::kUndoBarrier); }
inline void note_ordering_join() { note_next(Mark::kOrderingJoin); }

// Annotated stores: code written for a persistency model in which stores
// persist by themselves (HOPS's persist buffers, StrandWeaver's strand
// buffers) stores to the pool through these, so the crash simulator's model
// sees each store in program order. On real backends a plain store (and a
// load and a not-taken branch): under x86 the same code still needs its
// pwbs. The store is a single-writer store to the pool, not an atomic.
inline void store_bytes(void* dst, const void* src, std::size_t n) {
  __builtin_memcpy(dst, src, n);
  const Backend* b = detail::g_backend.load(std::memory_order_relaxed);
  if (b->stored != nullptr) [[unlikely]]
    b->stored(dst, n);
}
template <class T>
inline void store(T* dst, const T& v) {
  static_assert(std::is_trivially_copyable_v<T>, "persist::store copies bytes");
  store_bytes(dst, &v, sizeof(T));
}

// An algorithm that needs its write-backs durable before a store that
// another thread may act on (PWFcomb Alg. 4 l.29: a helper may write back
// S as soon as it reads it) issues `publish_fence()`: the paper's pfence
// where a pfence already gives that (x86), a psync where it does not. The
// verb counted and charged is then the one the hardware executes, so each
// backend treats the technique like every other: `nosync` keeps it (as it
// keeps PBcomb's pfence) and `emulated:NS` does not charge it a media delay.
inline bool pfence_is_durable() {
  const Backend* b = detail::g_backend.load(std::memory_order_relaxed);
  return b->pfence_durable == nullptr || b->pfence_durable();
}
inline void publish_fence(const Site& where = Site::current()) {
  if (pfence_is_durable()) pfence(where);
  else psync(where);
}

// Convenience: pwb over the range, then psync.
// Both verbs carry the caller's site.
inline void persist_range(const void* p, std::size_t n, const Site& where = Site::current()) {
  pwb(p, n, where);
  psync(where);
}

}  // namespace ferrite::persist
