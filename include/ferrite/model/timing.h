// ferrite/model/timing.h — a trace-driven timing model of the persist
// hardware: what each persistency model's hardware costs a workload.
//
// What it is. The evaluation machinery of StrandWeaver (Vaibhav Gogte,
// William Wang, Stephan Diestelhorst, Peter M. Chen, Satish Narayanasamy,
// Thomas F. Wenisch, "Relaxed Persist Ordering Using Strand Persistency",
// ISCA 2020: §IV the hardware, §VI the evaluation, Table I the parameters)
// and of HOPS+ (Swapnil Haria, Pratyush Mahapatra, Mark D. Hill, Michael M.
// Swift, "Efficient Durability for Lock-based Code", Figure 2), which both
// used gem5, replaced by a discrete-event model of N cores' store path and
// persist hardware that replays a persistence event trace (model/trace.h)
// — one core per traced thread. docs/timing.md maps each rule to the papers
// and states every simplification.
//
// Designs (Design):
//   x86           stores, clwbs and sfences share the store queue in order;
//                 an sfence holds the queue's head until every earlier clwb
//                 is acknowledged by the memory controller (ADR), so later
//                 stores back up and the core stalls when the queue is full
//                 (StrandWeaver §II-B, §VI "Intel x86").
//   hops          per-core persist buffer: each store to PM enters it when it
//                 leaves the store queue and is written to the controller
//                 once every store of earlier epochs is acknowledged; ofence
//                 starts an epoch; dfence stalls the core until the buffer
//                 drains; a store to a line whose last PM write came from
//                 another core waits for that write (the cross-thread
//                 dependency HOPS tracks through coherence).
//   hops+         the hops hardware on a HOPS+-instrumented trace (its
//                 hardware history replaces the software history entries,
//                 which the trace then lacks).
//   no-persist-queue  StrandWeaver's strand buffer unit, with clwbs, persist
//                 barriers, NewStrand and JoinStrand in the store queue.
//   strandweaver  persist queue beside the store queue + strand buffer unit
//                 (§IV): a persist barrier orders earlier stores before later
//                 clwbs (issue) and earlier clwbs' issue before later stores;
//                 within a strand buffer, clwbs after a barrier wait for the
//                 acknowledgement of every entry before it; NewStrand moves
//                 to the next buffer (round robin); JoinStrand holds later
//                 clwbs and stores until earlier clwbs and stores complete.
//   non-atomic    the strandweaver hardware with persist barriers ignored:
//                 undo entries unordered with their updates (upper bound;
//                 not crash consistent).
//   non-atomic-paper  §VI "NON-ATOMIC" as the paper defines it: the
//                 strandweaver hardware with only the barriers between an
//                 undo entry and its in-place update ignored (the trace
//                 marks them, model/trace.h kBarrierUndo); the commit's
//                 orderings (the prune chain's barriers) stay. Between
//                 strandweaver and non-atomic; not crash consistent.
//   ideal         HOPS+ Figure 2's "ideal": the HOPS+-instrumented code with
//                 every write-back elided (stores reach the cache only, no
//                 fence waits) — its logging without any persist cost.
// Every design: each core has an L1 (Table I's 32 kB, 2-way) of the pool
// lines it stored to; a store that misses evicts the set's LRU line, a dirty
// one through the write-back buffer; a store to a line another core holds
// takes it away (read-exclusive). The strand designs add StrandWeaver §IV's
// two rules: a dirty eviction leaves the write-back buffer, and a
// read-exclusive request for a dirty line is answered from the snoop
// buffer, only once every strand buffer drained to its tail at that time.
// Every design: a lock acquire is a locked RMW that drains the store queue;
// a lock is available to the next acquirer when the release store leaves
// the store queue (Config::recorded_lock_order: who that acquirer is).
//
// Thread safety: a Simulator is single-threaded; distinct ones are
// independent.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ferrite/model/trace.h"

namespace ferrite::model {

enum class Design { kX86 = 0, kHops, kHopsPlus, kNoPersistQueue, kStrandWeaver, kNonAtomic, kIdeal, kNonAtomicPaper, kCount };
inline constexpr int kDesigns = static_cast<int>(Design::kCount);
const char* design_name(Design d);
// Returns false on an unknown name.
bool parse_design(std::string_view name, Design* out);
// The instrumentation a design's trace comes from (model/trace.h header).
const char* design_instrumentation(Design d);
// Can `d` replay a trace of `instrumentation`? Its own, and x86 every
// instrumentation's: the logging library's x86 code is its HOPS code under
// persist.h's Intel mapping (each store followed by a clwb of its line,
// ofence and dfence sfences; the x86 design issues those clwbs itself) and
// its strand code under the same mapping (persist barrier and JoinStrand
// sfences, NewStrand nothing) — the same events as an x86 recording, in
// the same order (measured). So each design can be compared with x86 on
// one recorded interleaving (docs/timing.md, "One recording per
// comparison"). hops replays a strand recording too: the library's HOPS
// code is its strand code without write-backs and NewStrands, barriers and
// ordering joins (trace kJoinOrdering, format version 3) ofences, the
// other joins dfences — so hops and strandweaver share one recording.
bool design_replays(Design d, std::string_view instrumentation);

// Table I of the StrandWeaver paper, each parameter sweepable by name
// (`ferrite sim --config name=value`). Latencies in ns, sizes in entries.
struct Config {
  double freq_ghz = 2.0;          // core clock
  double store_queue = 64;        // Table I: 72/64-entry load/store queue
  double persist_queue = 16;      // §VI-A: 16-entry persist queue
  double strand_buffers = 4;      // §VI-A: four strand buffers ...
  double strand_entries = 4;      // ... of four entries
  double persist_buffer = 32;     // HOPS persist buffer entries per core
  // The L1's write-back buffer (StrandWeaver §IV "Managing cache
  // writebacks", Fig. 3 "WB"): in-flight writebacks of dirty lines — x86
  // clwb flushes and, in every design, dirty lines evicted from the L1
  // (to the L2). A full buffer holds the fill that would evict. Its size is
  // not in Table I.
  double writeback_buffer = 16;
  // StrandWeaver §IV "Enabling inter-thread persist order", Fig. 3: incoming
  // read-exclusive requests for dirty L1 lines wait here (strand designs)
  // until the strand buffers drain to the tails recorded on arrival. A full
  // buffer holds later requests. Not in Table I.
  double snoop_buffer = 8;
  double l1_kb = 32;              // Table I: D-cache 32 kB, 2-way, 64-B lines
  double l1_ways = 2;
  double wpq = 64;                // Table I: 64-entry PM write queue (ADR domain)
  // Writes the media performs at once: not in Table I. Its model [58] is
  // Izraelevitz et al.'s Optane characterization, whose six interleaved
  // DIMMs write about 13 GB/s: a line every ~5 ns at 500 ns each, ~96 at
  // once. (16 makes every design media-bound: docs/timing.md.)
  double media_banks = 96;
  double pm_read_ns = 346;        // Table I: PM read latency
  double write_to_controller_ns = 96;  // Table I: write latency to the controller
  double media_write_ns = 500;    // Table I: write latency to PM
  double l1_ns = 2;               // Table I: D-cache hit
  double l2_ns = 16;              // Table I: L2 hit (a line or lock from another core)
  // 0: a free lock goes to the first core (in modelled time) that asks for
  // it; 1: locks are handed over in the recorded run's order (that order
  // is the 2-core recording machine's schedule, not the modelled one's).
  double recorded_lock_order = 0;
  // Application work between operations (cycles added at each operation's
  // end, outside any lock): the recorded loop does nothing between
  // operations; the papers' benchmark harnesses did.
  double op_compute_cycles = 0;
  // 1: x86's fences stall the core (not only the store queue) until every
  // earlier clwb is acknowledged — the HOPS+ paper's x86 baseline, whose
  // log flushes are synchronous clflushes ("CLFLUSH Log", its Table 1;
  // "most flushes ... must be synchronous"). 0 (default): StrandWeaver's
  // Intel baseline, an sfence that holds later stores in the store queue.
  // Only the x86 design reads it.
  double x86_sync_flush = 0;
  // Sets `name` (a member above); false on an unknown name or a value out
  // of range (sizes >= 1, latencies >= 0, freq > 0).
  bool set(std::string_view name, double value);
  static std::vector<std::string> names();
  double get(std::string_view name) const;
};

// Figure 8's breakdown: why the core stalled.
enum class Stall { kStoreQueue = 0, kPersistQueue, kDurability, kAtomicDrain, kLock, kCount };
inline constexpr int kStalls = static_cast<int>(Stall::kCount);
const char* stall_name(Stall s);

struct Result {
  Design design = Design::kX86;
  std::uint64_t cycles = 0;  // until the last core finishes (its stores drained)
  std::array<std::uint64_t, kStalls> stalls{};  // summed over cores
  std::uint64_t stall_total() const;
  std::uint64_t writebacks = 0;  // lines sent to the memory controller
  // The L1 (docs/timing.md "Evictions and snoops"): dirty lines evicted
  // through the write-back buffer; of those, the ones whose writeback
  // waited for the strand buffers; coherence requests for dirty lines that
  // waited in the owner's snoop buffer for its strand buffers.
  std::uint64_t evictions = 0;
  std::uint64_t ordered_evictions = 0;
  std::uint64_t snoop_waits = 0;
  std::uint64_t events = 0;
  std::uint64_t ops = 0;
  double seconds(double freq_ghz) const { return static_cast<double>(cycles) / (freq_ghz * 1e9); }
  double throughput(double freq_ghz) const;  // ops per second of simulated time
};

// Replays `t` under `d`. Throws std::runtime_error when the trace's lock
// hand-offs cannot be replayed (a malformed trace).
Result simulate(const Trace& t, Design d, const Config& c = {});

}  // namespace ferrite::model
