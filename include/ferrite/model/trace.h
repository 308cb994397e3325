// ferrite/model/trace.h — persistence event traces: the input of the timing
// model (model/timing.h).
//
// What it is. A trace is, per thread, the sequence of events the persistent
// code issued — annotated stores to the pool (persist::store), write-backs
// (one per cache line), the fences (pfence, psync, ofence, dfence), the
// strand verbs (persist_barrier, new_strand, join_strand), lock acquires and
// releases (persist::note_acquired / note_releasing), and operation ends —
// each with the compute gap since the thread's previous event, in cycles of
// the modelled core. The `trace` persist backend (src/persist/trace.cc)
// records it; `ferrite trace` runs a logging workload under it and writes
// the file; `ferrite sim` replays it under each hardware design.
//
// Gaps. Measured with rdtsc, converted to cycles of a `freq_ghz` core
// (Header::freq_mhz), minus the recorder's own cost per event (calibrated
// when recording starts), and clamped at Header::max_gap: a thread that the
// OS descheduled, or that waited for a lock, would otherwise charge the wait
// as compute (the model charges lock waits itself). Loads are not recorded
// (the logging library's loads are not annotated): their cost is in the
// gaps, at the speed of this machine's caches.
//
// File layout (little-endian; Header is the on-media layout, versioned):
//   Header | u64 event_count[threads] | events of thread 0 | thread 1 | ...
// An event is one u64 (Event): kind in bits 0..3, gap in bits 4..23
// (cycles, < 2^20), payload in bits 24..63: a cache-line number (address
// >> 6, low 40 bits) for stores and write-backs; for lock events the lock's
// index in the trace (bits 24..39) and, for an acquire, the number of
// earlier acquires of that lock in the recorded run (bits 40..63) — the
// order in which the model hands the lock over; for a persist barrier,
// kBarrierUndo if it is the barrier between an undo entry and its update
// (persist::note_undo_barrier; format version 2 — a version-1 file marks
// none and is still read), else 0; for a JoinStrand, kJoinOrdering if it
// only orders (persist::note_ordering_join: HOPS code has an ofence there;
// format version 3 — older files mark none and are still read), else 0.
//
// Thread safety: recording (start / stop) is process-wide; the recorded
// verbs may be issued from any thread (one buffer per thread). Reading and
// writing files is single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ferrite::model {

enum class EventKind : std::uint8_t {
  kStore = 0,
  kPwb,
  kPfence,
  kPsync,
  kOfence,
  kDfence,
  kPersistBarrier,
  kNewStrand,
  kJoinStrand,
  kAcquire,
  kRelease,
  kOpEnd,
  kCount
};
inline constexpr int kEventKinds = static_cast<int>(EventKind::kCount);
const char* event_kind_name(EventKind k);

inline constexpr std::uint32_t kMaxGap = (1u << 20) - 1;
inline constexpr std::uint64_t kPayloadMask = (std::uint64_t{1} << 40) - 1;
inline constexpr std::uint32_t kMaxLocks = 1u << 16;
inline constexpr std::uint64_t kMaxLockSeq = (std::uint64_t{1} << 24) - 1;
// Payload of a persist barrier that orders an undo entry before its in-place
// update (StrandWeaver Fig. 5 log_store).
inline constexpr std::uint64_t kBarrierUndo = 1;
// Payload of a JoinStrand that only orders (StrandWeaver Fig. 5 log_end's,
// before the end entry), where the logging library's HOPS code issues an
// ofence; an unmarked one is a durability point (HOPS: a dfence).
inline constexpr std::uint64_t kJoinOrdering = 1;

struct Event {
  std::uint64_t bits;
  EventKind kind() const { return static_cast<EventKind>(bits & 0xF); }
  std::uint32_t gap() const { return static_cast<std::uint32_t>((bits >> 4) & kMaxGap); }
  std::uint64_t payload() const { return bits >> 24; }
  std::uint64_t line() const { return payload(); }
  std::uint32_t lock() const { return static_cast<std::uint32_t>(payload() & (kMaxLocks - 1)); }
  std::uint64_t lock_seq() const { return payload() >> 16; }
  bool undo_barrier() const { return kind() == EventKind::kPersistBarrier && (payload() & kBarrierUndo) != 0; }
  bool ordering_join() const { return kind() == EventKind::kJoinStrand && (payload() & kJoinOrdering) != 0; }
  static Event make(EventKind k, std::uint32_t gap, std::uint64_t payload) {
    const std::uint64_t g = gap > kMaxGap ? kMaxGap : gap;
    return Event{static_cast<std::uint64_t>(k) | g << 4 | (payload & ((std::uint64_t{1} << 40) - 1)) << 24};
  }
  static Event lock_event(EventKind k, std::uint32_t gap, std::uint32_t lock, std::uint64_t seq) {
    return make(k, gap, (seq & kMaxLockSeq) << 16 | lock);
  }
};
static_assert(sizeof(Event) == 8);

// On-media header of a trace file.
struct Header {
  static constexpr char kMagic[8] = {'F', 'R', 'T', 'T', 'R', 'A', 'C', 'E'};
  // 2: undo barriers marked (kBarrierUndo); 3: ordering joins (kJoinOrdering).
  static constexpr std::uint32_t kVersion = 3;
  static constexpr std::uint32_t kOldestVersion = 1;  // still read: no barrier marked
  char magic[8];
  std::uint32_t version;
  std::uint32_t threads;
  std::uint32_t freq_mhz;      // the modelled core's clock the gaps are in
  std::uint32_t max_gap;       // the clamp applied to gaps (cycles)
  std::uint64_t ops;           // operations run (sum of kOpEnd events)
  std::uint64_t clamped_gaps;  // gaps that hit max_gap
  char workload[64];           // NUL-terminated
  char instrumentation[16];    // x86 | hops | hops+ | strand
  std::uint64_t reserved;      // zero
};
static_assert(sizeof(Header) == 128);
static_assert(offsetof(Header, version) == 8);
static_assert(offsetof(Header, threads) == 12);
static_assert(offsetof(Header, freq_mhz) == 16);
static_assert(offsetof(Header, max_gap) == 20);
static_assert(offsetof(Header, ops) == 24);
static_assert(offsetof(Header, clamped_gaps) == 32);
static_assert(offsetof(Header, workload) == 40);
static_assert(offsetof(Header, instrumentation) == 104);

// A trace in memory.
struct Trace {
  std::uint32_t version = Header::kVersion;  // the file's (read_trace); written as Header::kVersion
  std::string workload;
  std::string instrumentation;
  std::uint32_t freq_mhz = 2000;
  std::uint32_t max_gap = 2000;
  std::uint64_t ops = 0;
  std::uint64_t clamped_gaps = 0;
  std::vector<std::vector<Event>> threads;
  std::uint64_t events() const;
};

// Throws std::runtime_error on an I/O error or a malformed file (wrong
// magic, unknown version, truncated).
void write_trace(const std::string& path, const Trace& t);
Trace read_trace(const std::string& path);

// ------------------------------------------------------------ recording
struct RecordOptions {
  std::uint32_t freq_mhz = 2000;
  std::uint32_t max_gap = 2000;  // cycles (1 us at 2 GHz)
  int max_threads = 64;
};
// start_recording installs the trace backend (persist::install) over the
// one in force (open the pool first: opening a pool installs its own);
// each worker thread calls set_thread(tid) before its first event;
// stop_recording() reinstalls the previous backend and returns the trace.
// Events of a thread that never called set_thread are dropped.
void start_recording(const RecordOptions& opt);
void set_thread(int tid);
// The calling thread finished one operation (ends a throughput unit).
void note_op_end();
Trace stop_recording();
// Was the trace backend's table installed (for tests)?
bool recording();

}  // namespace ferrite::model
