// src/model/timing.cc — the timing model (model/timing.h; docs/timing.md).
//
// How it computes. Every queue of the modelled core drains in order, so
// the time an entry issues and retires is known when it is inserted: it
// depends only on earlier entries and on the shared memory controller.
// Each queue is then a ring of retire times: entry k may enter once entry
// k - capacity has retired (ring.oldest()). The cores are advanced one
// event at a time, always the core whose clock is earliest, so the
// controller's slots are reserved in (nearly) time order and a lock is
// handed over only after its holder's release has been simulated.
//
// Each core also has an L1 (Table I) of the pool lines it stores to, with
// the write-back buffer its dirty victims leave through and, in the strand
// designs, StrandWeaver §IV's two ordering rules for cache writebacks and
// coherence requests (evict(), snoop()).
#include "ferrite/model/timing.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ferrite::model {

const char* design_name(Design d) {
  switch (d) {
    case Design::kX86: return "x86";
    case Design::kHops: return "hops";
    case Design::kHopsPlus: return "hops+";
    case Design::kNoPersistQueue: return "no-persist-queue";
    case Design::kStrandWeaver: return "strandweaver";
    case Design::kNonAtomic: return "non-atomic";
    case Design::kIdeal: return "ideal";
    case Design::kNonAtomicPaper: return "non-atomic-paper";
    case Design::kCount: break;
  }
  return "?";
}
bool parse_design(std::string_view name, Design* out) {
  for (int i = 0; i < kDesigns; ++i)
    if (name == design_name(static_cast<Design>(i))) {
      *out = static_cast<Design>(i);
      return true;
    }
  return false;
}
const char* design_instrumentation(Design d) {
  switch (d) {
    case Design::kX86: return "x86";
    case Design::kHops: return "hops";
    case Design::kHopsPlus:
    case Design::kIdeal: return "hops+";
    default: return "strand";
  }
}
bool design_replays(Design d, std::string_view instrumentation) {
  return instrumentation == design_instrumentation(d) ||
         (d == Design::kX86 &&
          (instrumentation == "hops" || instrumentation == "hops+" || instrumentation == "strand")) ||
         (d == Design::kHops && instrumentation == "strand");
}
const char* stall_name(Stall s) {
  switch (s) {
    case Stall::kStoreQueue: return "store-queue-full";
    case Stall::kPersistQueue: return "persist-queue-full";
    case Stall::kDurability: return "durability-fence";
    case Stall::kAtomicDrain: return "atomic-drain";
    case Stall::kLock: return "lock-wait";
    case Stall::kCount: break;
  }
  return "?";
}

namespace {
struct Param {
  const char* name;
  double Config::*field;
  bool size;  // an entry count (>= 1) rather than a latency (>= 0)
};
constexpr Param kParams[] = {
    {"freq_ghz", &Config::freq_ghz, false},
    {"store_queue", &Config::store_queue, true},
    {"persist_queue", &Config::persist_queue, true},
    {"strand_buffers", &Config::strand_buffers, true},
    {"strand_entries", &Config::strand_entries, true},
    {"persist_buffer", &Config::persist_buffer, true},
    {"writeback_buffer", &Config::writeback_buffer, true},
    {"snoop_buffer", &Config::snoop_buffer, true},
    {"l1_kb", &Config::l1_kb, true},
    {"l1_ways", &Config::l1_ways, true},
    {"wpq", &Config::wpq, true},
    {"media_banks", &Config::media_banks, true},
    {"pm_read_ns", &Config::pm_read_ns, false},
    {"write_to_controller_ns", &Config::write_to_controller_ns, false},
    {"media_write_ns", &Config::media_write_ns, false},
    {"l1_ns", &Config::l1_ns, false},
    {"l2_ns", &Config::l2_ns, false},
    {"recorded_lock_order", &Config::recorded_lock_order, false},
    {"op_compute_cycles", &Config::op_compute_cycles, false},
    {"x86_sync_flush", &Config::x86_sync_flush, false},
};
}  // namespace

bool Config::set(std::string_view name, double value) {
  for (const auto& p : kParams) {
    if (name != p.name) continue;
    if (!std::isfinite(value) || (p.size && (value < 1 || value > 1 << 20)) || value < 0) return false;
    if (name == "freq_ghz" && value <= 0) return false;
    if ((name == "recorded_lock_order" || name == "x86_sync_flush") && value != 0 && value != 1) return false;
    this->*(p.field) = p.size ? std::floor(value) : value;
    return true;
  }
  return false;
}
std::vector<std::string> Config::names() {
  std::vector<std::string> v;
  for (const auto& p : kParams) v.emplace_back(p.name);
  return v;
}
double Config::get(std::string_view name) const {
  for (const auto& p : kParams)
    if (name == p.name) return this->*(p.field);
  return NAN;
}

std::uint64_t Result::stall_total() const {
  std::uint64_t s = 0;
  for (auto x : stalls) s += x;
  return s;
}
double Result::throughput(double freq_ghz) const {
  const double s = seconds(freq_ghz);
  return s > 0 ? static_cast<double>(ops) / s : 0.0;
}

namespace {

using Cycle = std::uint64_t;

// In-order queue of `cap` entries: retire times of the last `cap` entries.
class Ring {
 public:
  explicit Ring(std::size_t cap = 1) : v_(std::max<std::size_t>(cap, 1), 0) {}
  // When the entry `cap` places before the next one retired (0: none yet).
  Cycle oldest() const { return v_[i_]; }
  void push(Cycle retire) {
    v_[i_] = retire;
    if (++i_ == v_.size()) i_ = 0;
  }

 private:
  std::vector<Cycle> v_;
  std::size_t i_ = 0;
};

// The PM controller, shared by every core: writes are acknowledged
// write_to_controller after they enter its write pending queue (ADR: in
// the persistent domain); the queue drains to the media, media_banks
// writes at a time, each taking media_write.
class Controller {
 public:
  Controller(const Config& c, double cyc_per_ns)
      : wpq_(static_cast<std::size_t>(c.wpq)),
        ack_(static_cast<Cycle>(std::llround(c.write_to_controller_ns * cyc_per_ns))),
        media_(static_cast<Cycle>(std::llround(c.media_write_ns * cyc_per_ns))),
        interval_(static_cast<Cycle>(std::llround(c.media_write_ns * cyc_per_ns / c.media_banks))) {}
  // A line written at `arrive`; returns when the controller acknowledges.
  Cycle write(Cycle arrive) {
    ++writes_;
    const Cycle enter = std::max(arrive, wpq_.oldest());  // a free WPQ slot
    const Cycle done = std::max(enter + media_, last_done_ + interval_);
    last_done_ = done;
    wpq_.push(done);
    return enter + ack_;
  }
  std::uint64_t writes() const { return writes_; }

 private:
  Ring wpq_;
  Cycle ack_, media_, interval_;
  Cycle last_done_ = 0;
  std::uint64_t writes_ = 0;
};

// Which core last wrote each line, and when its last PM write (HOPS) was
// acknowledged: open addressing, linear probing.
class LineTable {
 public:
  struct Slot {
    std::uint64_t line = kEmpty;
    std::int32_t owner = -1;
    Cycle persisted = 0;
  };
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  LineTable() : slots_(1 << 16) {}
  // The slot of `line`; `fresh` says it was not there (a cold miss).
  Slot& find(std::uint64_t line, bool* fresh) {
    if ((used_ + 1) * 2 > slots_.size()) grow();
    std::size_t i = hash(line) & (slots_.size() - 1);
    while (slots_[i].line != kEmpty && slots_[i].line != line) i = (i + 1) & (slots_.size() - 1);
    *fresh = slots_[i].line == kEmpty;
    if (*fresh) {
      slots_[i].line = line;
      ++used_;
    }
    return slots_[i];
  }

 private:
  static std::size_t hash(std::uint64_t x) { return static_cast<std::size_t>((x * 0x9E3779B97F4A7C15ull) >> 20); }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    used_ = 0;
    for (const Slot& s : old) {
      if (s.line == kEmpty) continue;
      bool fresh;
      Slot& n = find(s.line, &fresh);
      n = s;
    }
  }
  std::vector<Slot> slots_;
  std::size_t used_ = 0;
};

// A core's L1 D-cache (Table I: 32 kB, 2-way, 64-B lines), holding the
// pool lines the core stored to (the trace has no loads and no volatile
// lines: they take no ways here). LRU within a set. A way remembers until
// when its line is dirty: a store makes it dirty for good, a clwb clean
// from the moment it flushes the line (StrandWeaver §IV: "it flushes the
// dirty cache block to PM and retains a clean copy in the cache").
class L1 {
 public:
  static constexpr Cycle kDirty = ~Cycle{0};
  struct Way {
    std::uint64_t line = LineTable::kEmpty;
    Cycle dirty_until = 0;  // dirty at t iff t < dirty_until
    std::uint64_t used = 0;  // LRU stamp
    bool dirty_at(Cycle t) const { return line != LineTable::kEmpty && t < dirty_until; }
  };
  L1(std::size_t sets, std::size_t ways)
      : sets_(std::max<std::size_t>(sets, 1)), ways_(std::max<std::size_t>(ways, 1)), w_(sets_ * ways_),
        mask_((sets_ & (sets_ - 1)) == 0 ? sets_ - 1 : 0) {}
  // The way holding `line`, or nullptr.
  Way* find(std::uint64_t line) {
    Way* set = &w_[index(line)];
    for (std::size_t i = 0; i < ways_; ++i)
      if (set[i].line == line) return &set[i];
    return nullptr;
  }
  // Touches `line` (a store): returns its way; on a miss (`*hit` false)
  // `*victim` is the way's previous content (line kEmpty: a free way).
  Way* touch(std::uint64_t line, bool* hit, Way* victim) {
    Way* set = &w_[index(line)];
    Way* lru = &set[0];
    *hit = false;
    for (std::size_t i = 0; i < ways_; ++i) {
      if (set[i].line == line) {
        set[i].used = ++clock_;
        *hit = true;
        return &set[i];
      }
      if (set[i].used < lru->used) lru = &set[i];
    }
    *victim = *lru;
    *lru = Way{line, 0, ++clock_};
    return lru;
  }

 private:
  // The set's first way (a mask when the set count is a power of two).
  std::size_t index(std::uint64_t line) const {
    return static_cast<std::size_t>(mask_ != 0 || sets_ == 1 ? line & mask_ : line % sets_) * ways_;
  }
  std::size_t sets_, ways_;
  std::vector<Way> w_;
  std::size_t mask_;
  std::uint64_t clock_ = 0;
};

struct Lock {
  bool held = false;
  std::uint64_t released = 0;  // hand-offs done: the next acquire's seq (recorded order)
  Cycle free_at = 0;
  int last_core = -1;
};

struct StrandBuffer {
  Ring ring;            // retire times of its entries (clwbs and barriers)
  Cycle last_retire = 0;
  Cycle barrier = 0;    // later clwbs issue after this (the last barrier's completion)
  Cycle max_ack = 0;    // latest acknowledgement of a clwb in the buffer
};

struct Core {
  const Event* ev = nullptr;
  std::size_t n = 0, i = 0;
  Cycle t = 0;
  bool blocked = false;
  bool gap_taken = false;  // the next event's gap is already in t
  std::uint32_t waits_for = 0;  // the lock a blocked core waits for
  // store queue (and, without a persist queue, the persist operations)
  Ring sq;
  Cycle sq_last = 0;       // retire of the youngest store-queue entry
  Cycle store_floor = 0;   // later stores issue no earlier (sfence, barrier, join)
  // The L1 and its write-back and snoop buffers
  L1 l1{1, 1};
  Ring wb;                 // write-back buffer: x86 clwbs, dirty evictions
  Ring snoop;              // snoop buffer (strand designs)
  Cycle max_ack = 0;       // latest acknowledgement of any write-back
  // StrandWeaver
  Ring pq;
  Cycle pq_issue = 0;      // issue of the youngest persist-queue entry
  Cycle pq_retire = 0;
  Cycle clwb_floor = 0;    // later clwbs issue no earlier (barrier, join)
  Cycle last_clwb_issue = 0;
  std::vector<StrandBuffer> sb;
  std::size_t cur = 0;
  std::array<std::pair<std::uint64_t, Cycle>, 64> line_store{};  // line -> its last store's retire
  // HOPS
  Ring pb;
  Cycle pb_last = 0;
  Cycle epoch_floor = 0;   // stores of this epoch are written after this
  Cycle epoch_max_ack = 0;
  std::array<std::uint64_t, kStalls> stalls{};
  std::uint64_t ops = 0;
};

class Sim {
 public:
  Sim(const Trace& t, Design d, const Config& c)
      : d_(d), c_(c), cyc_per_ns_(c.freq_ghz), ctrl_(c, cyc_per_ns_), cores_(t.threads.size()) {
    l1_ = cycles(c.l1_ns);
    l2_ = cycles(c.l2_ns);
    read_ = cycles(c.pm_read_ns);
    const auto sz = [](double v) { return static_cast<std::size_t>(v); };
    for (std::size_t k = 0; k < cores_.size(); ++k) {
      Core& co = cores_[k];
      co.ev = t.threads[k].data();
      co.n = t.threads[k].size();
      co.sq = Ring(sz(c.store_queue));
      co.wb = Ring(sz(c.writeback_buffer));
      co.snoop = Ring(sz(c.snoop_buffer));
      // 64-byte lines: l1_kb * 16 lines in l1_ways-way sets.
      co.l1 = L1(std::max<std::size_t>(sz(c.l1_kb * 16 / c.l1_ways), 1), sz(c.l1_ways));
      co.pq = Ring(sz(c.persist_queue));
      co.pb = Ring(sz(c.persist_buffer));
      co.sb.assign(sz(c.strand_buffers), StrandBuffer{Ring(sz(c.strand_entries))});
      for (auto& ls : co.line_store) ls.first = LineTable::kEmpty;
    }
    // Gaps are in cycles of the trace's clock; rescale to this core's.
    recorded_order_ = c.recorded_lock_order != 0;
    gap_scale_ = t.freq_mhz > 0 ? c.freq_ghz * 1000.0 / t.freq_mhz : 1.0;
    op_compute_ = static_cast<Cycle>(c.op_compute_cycles);
    sync_flush_ = c.x86_sync_flush != 0;
    // x86 on a HOPS-instrumented trace: persist.h's Intel mapping of that
    // code (design_replays; docs/timing.md, "One recording per comparison").
    clwb_each_store_ = d == Design::kX86 && (t.instrumentation == "hops" || t.instrumentation == "hops+");
  }

  Result run() {
    Result r;
    r.design = d_;
    for (;;) {
      Core* next = nullptr;
      Cycle second = ~Cycle{0};  // the next-earliest runnable core's clock
      bool pending = false;
      for (Core& co : cores_) {
        if (co.i >= co.n) continue;
        pending = true;
        if (co.blocked) continue;
        if (next == nullptr || co.t < next->t) {
          if (next != nullptr) second = next->t;
          next = &co;
        } else if (co.t < second) {
          second = co.t;
        }
      }
      if (!pending) break;
      if (next != nullptr) {
        // Run it while it stays the earliest (a release may wake a core
        // that is earlier: stop after each release).
        const int k = static_cast<int>(next - cores_.data());
        do {
          const bool release = next->ev[next->i].kind() == EventKind::kRelease;
          step(*next, k);
          if (release) break;
        } while (next->i < next->n && !next->blocked && next->t <= second);
        continue;
      }
      if (next == nullptr) throw std::runtime_error(
            "timing model: every remaining core waits for a lock (a malformed trace, or a lock-order cycle: "
            "try recorded_lock_order=1)");
    }
    for (const Core& co : cores_) {
      const Cycle end = std::max({co.t, co.sq_last, co.pq_retire});
      r.cycles = std::max<std::uint64_t>(r.cycles, end);
      for (int s = 0; s < kStalls; ++s) r.stalls[static_cast<std::size_t>(s)] += co.stalls[static_cast<std::size_t>(s)];
      r.ops += co.ops;
      r.events += co.n;
    }
    r.writebacks = ctrl_.writes();
    r.evictions = evictions_;
    r.ordered_evictions = ordered_evictions_;
    r.snoop_waits = snoop_waits_;
    return r;
  }

 private:
  Cycle cycles(double ns) const { return static_cast<Cycle>(std::llround(ns * cyc_per_ns_)); }
  static void wait(Core& co, Cycle until, Stall why) {
    if (until > co.t) {
      co.stalls[static_cast<std::size_t>(why)] += until - co.t;
      co.t = until;
    }
  }
  bool strand() const {
    return d_ == Design::kNoPersistQueue || d_ == Design::kStrandWeaver || d_ == Design::kNonAtomic ||
           d_ == Design::kNonAtomicPaper;
  }
  bool hops() const { return d_ == Design::kHops || d_ == Design::kHopsPlus; }
  bool separate_pq() const {
    return d_ == Design::kStrandWeaver || d_ == Design::kNonAtomic || d_ == Design::kNonAtomicPaper;
  }

  // When the strand buffers of `co` have drained every entry they hold now:
  // the retire of each buffer's tail (entries retire in order).
  static Cycle strand_tails(const Core& co) {
    Cycle t = 0;
    for (const StrandBuffer& b : co.sb) t = std::max(t, b.last_retire);
    return t;
  }

  // A store of core k to `line` that issues at `issue`; returns when it has
  // written the L1. A hit costs the L1; a miss reads a cold line from PM
  // (write-allocate) and any other line from the L2 — from another core's
  // L1 through a read-exclusive snoop — and displaces the set's LRU line.
  Cycle access(Core& co, int k, std::uint64_t line, Cycle issue, LineTable::Slot** slot) {
    bool fresh;
    LineTable::Slot& s = lines_.find(line, &fresh);
    *slot = &s;
    L1::Way victim;
    bool hit;
    L1::Way* w = co.l1.touch(line, &hit, &victim);
    Cycle retire = issue + l1_;
    if (!hit) {
      const Cycle start = !fresh && s.owner != k && s.owner >= 0 ? snoop(cores_[static_cast<std::size_t>(s.owner)], line, issue)
                                                                : issue;
      retire = std::max(start + (fresh ? read_ : l2_), evict(co, victim, issue) + l1_);
    }
    w->dirty_until = L1::kDirty;
    s.owner = k;
    return retire;
  }

  // Core `owner` receives a read-exclusive request for `line` at `at` (a
  // store of another core); returns when it replies. The line leaves its
  // L1. StrandWeaver §IV, "Enabling inter-thread persist order": "On an
  // incoming read-exclusive coherence request, if the corresponding cache
  // line is dirty, we record the tail index of the strand buffer in the
  // snoop buffer. The read-exclusive request stalls until the strand
  // buffers drain to the recorded index" — so the owner's in-flight clwbs,
  // which may hold the persists the stolen line's stores are ordered after,
  // complete before another core can write (and persist) the line. The
  // request holds a snoop buffer entry until its data transfer (an L2
  // latency) ends; a full snoop buffer delays the request. The other designs
  // reply at once (x86 orders through sfence; HOPS through the line's last
  // persist, in store()).
  Cycle snoop(Core& owner, std::uint64_t line, Cycle at) {
    L1::Way* w = owner.l1.find(line);
    if (w == nullptr) return at;  // evicted: the L2 answers
    const bool dirty = w->dirty_at(at);
    w->line = LineTable::kEmpty;  // invalidated
    w->used = 0;
    if (!dirty || !strand()) return at;
    const Cycle enter = std::max(at, owner.snoop.oldest());
    const Cycle reply = std::max(enter, strand_tails(owner));
    if (reply > at) ++snoop_waits_;
    owner.snoop.push(reply + l2_);
    return reply;
  }

  // `victim` leaves the L1 of `co` at `at` to make room for a fill; returns
  // when the fill may use its way. A clean line is dropped. A dirty one
  // moves into the write-back buffer (waiting for a free entry: the fill
  // waits with it) and is written to the L2. StrandWeaver §IV, "Managing
  // cache writebacks": stores after a persist barrier wait only for earlier
  // clwbs to issue, not complete, "thus stores might inadvertently drain
  // from the cache before ongoing CLWBs in the strand buffer unit
  // complete"; the write-back buffer records each strand buffer's tail
  // when the writeback starts and "drains writebacks only after the strand
  // buffers drain operations beyond these recorded indexes" — so in the
  // strand designs the entry is held until then. (The L2 is 28 MB and not
  // modelled: the line then stays there.)
  Cycle evict(Core& co, const L1::Way& victim, Cycle at) {
    if (!victim.dirty_at(at)) return at;
    ++evictions_;
    const Cycle enter = std::max(at, co.wb.oldest());
    Cycle send = enter;
    if (strand()) {
      const Cycle tails = strand_tails(co);
      if (tails > enter) ++ordered_evictions_;
      send = std::max(send, tails);
    }
    co.wb.push(send + l2_);
    return enter;
  }

  // A clwb of `line` by `co` flushes it at `send`: clean from then on.
  static void flushed(Core& co, std::uint64_t line, Cycle send) {
    if (L1::Way* w = co.l1.find(line)) w->dirty_until = std::min(w->dirty_until, send);
  }

  // A store-queue entry of core `co` enters at co.t (stalling the core
  // while the queue is full); returns the earliest it may issue.
  Cycle sq_enter(Core& co) {
    wait(co, co.sq.oldest(), Stall::kStoreQueue);
    return std::max(co.t, co.sq_last);
  }
  void sq_retire(Core& co, Cycle retire) {
    co.sq_last = std::max(co.sq_last, retire);
    co.sq.push(co.sq_last);
  }

  void store(Core& co, int k, std::uint64_t line) {
    Cycle issue = std::max(sq_enter(co), co.store_floor);
    LineTable::Slot* slot;
    Cycle retire = access(co, k, line, issue, &slot);
    if (hops()) {
      // The store enters the persist buffer as it leaves the store queue.
      retire = std::max(retire, co.pb.oldest());
      // A line last persisted by another core orders this write after it
      // (HOPS's cross-thread dependency via coherence).
      const Cycle send = std::max({retire, co.epoch_floor, slot->persisted});
      const Cycle ack = ctrl_.write(send);
      slot->persisted = ack;
      co.epoch_max_ack = std::max(co.epoch_max_ack, ack);
      co.pb_last = std::max(co.pb_last, ack);
      co.pb.push(co.pb_last);
    }
    sq_retire(co, retire);
    auto& ls = co.line_store[line & 63];
    ls = {line, retire};
  }

  // x86: an sfence holds the store queue's head until every earlier clwb
  // is acknowledged.
  void sfence(Core& co) {
    const Cycle done = std::max({sq_enter(co), co.store_floor, co.max_ack});
    co.store_floor = done;
    sq_retire(co, done);
    // x86_sync_flush: a synchronous flush — the core itself waits.
    if (sync_flush_) wait(co, done, Stall::kDurability);
  }

  // x86: a clwb issues after the stores before it, takes a write-back
  // buffer entry until acknowledged and reaches the controller one L1
  // lookup later.
  void x86_clwb(Core& co, std::uint64_t line) {
    Cycle issue = std::max(sq_enter(co), co.store_floor);
    issue = std::max(issue, co.wb.oldest());  // a free write-back buffer entry
    const Cycle ack = ctrl_.write(issue + l1_);
    flushed(co, line, issue + l1_);
    co.max_ack = std::max(co.max_ack, ack);
    co.wb.push(ack);
    sq_retire(co, issue + 1);
  }

  void x86(Core& co, const Event& e) {
    switch (e.kind()) {
      case EventKind::kPwb: x86_clwb(co, e.line()); break;
      case EventKind::kPfence:
      case EventKind::kPsync:
      case EventKind::kOfence:
      case EventKind::kDfence:
      case EventKind::kPersistBarrier:
      case EventKind::kJoinStrand: sfence(co); break;  // persist.h's Intel mapping
      default: break;                                  // NewStrand: nothing on x86
    }
  }

  // On a strand recording (design_replays) the logging library's HOPS code
  // is replayed: its strand code with every write-back and NewStrand
  // dropped (HOPS persists stores by itself), each persist barrier an
  // ofence, a JoinStrand that only orders (kJoinOrdering: log_end's, before
  // the end entry) an ofence, every other JoinStrand (the end entry's and
  // a prune's durability) a dfence — undo_log.h's HOPS cases at the same
  // points. Both designs then run one recording (docs/timing.md, "One
  // recording per comparison").
  void hops_verb(Core& co, const Event& e) {
    switch (e.ordering_join() ? EventKind::kOfence : e.kind()) {
      case EventKind::kOfence:
      case EventKind::kPfence:
      case EventKind::kPersistBarrier:
        // A new epoch: its stores are written after every earlier one is
        // acknowledged (a timestamp bump; no stall).
        co.epoch_floor = std::max(co.epoch_floor, co.epoch_max_ack);
        break;
      case EventKind::kDfence:
      case EventKind::kPsync:
      case EventKind::kJoinStrand:
        // The core waits until its stores left the store queue and the
        // persist buffer drained.
        wait(co, std::max(co.sq_last, co.pb_last), Stall::kDurability);
        co.epoch_floor = std::max(co.epoch_floor, co.epoch_max_ack);
        break;
      default: break;  // no write-backs on HOPS
    }
  }

  // StrandWeaver's persist operations: into the persist queue, or (no
  // persist queue) into the store queue, in order with the stores.
  // ORDER: §IV "Persist queue operation": "CLWBs, persist barriers, and
  // NewStrand operations in the persist queue are issued to the strand
  // buffer unit in order" — an entry issues no earlier than the one before
  // it (pq_issue), so a clwb waiting for a full strand buffer holds the
  // next strand's clwbs too (test
  // AFullStrandBufferHoldsTheNextStrandsClwbsInThePersistQueue).
  Cycle persist_enter(Core& co) {
    if (!separate_pq()) return sq_enter(co);
    wait(co, co.pq.oldest(), Stall::kPersistQueue);
    return std::max(co.t, co.pq_issue);
  }
  void persist_retire(Core& co, Cycle issue, Cycle retire) {
    if (!separate_pq()) {
      // It leaves the store queue once issued to the strand buffer unit.
      sq_retire(co, std::max(issue, retire));
      return;
    }
    co.pq_issue = issue;
    co.pq_retire = std::max(co.pq_retire, retire);
    co.pq.push(co.pq_retire);
  }

  void strand_verb(Core& co, const Event& e) {
    switch (e.kind()) {
      case EventKind::kPwb: {
        Cycle issue = std::max(persist_enter(co), co.clwb_floor);
        // After elder stores to the same line (the persist queue's lookup).
        const auto& ls = co.line_store[e.line() & 63];
        if (ls.first == e.line()) issue = std::max(issue, ls.second);
        StrandBuffer& b = co.sb[co.cur];
        issue = std::max(issue, b.ring.oldest());  // a free strand buffer entry
        const Cycle send = std::max(issue, b.barrier) + l1_;
        const Cycle ack = ctrl_.write(send);
        flushed(co, e.line(), send);
        b.max_ack = std::max(b.max_ack, ack);
        b.last_retire = std::max(b.last_retire, ack);
        b.ring.push(b.last_retire);
        co.max_ack = std::max(co.max_ack, ack);
        co.last_clwb_issue = issue;
        // In the persist queue until acknowledged; in the store queue
        // (no persist queue) until issued.
        persist_retire(co, issue, separate_pq() ? ack : issue + 1);
        break;
      }
      case EventKind::kPersistBarrier:
      case EventKind::kOfence:
      case EventKind::kPfence: {
        if (d_ == Design::kNonAtomic) break;
        // §VI NON-ATOMIC: "we remove the SFENCE between the log entry
        // creation and in-place update" — only those.
        if (d_ == Design::kNonAtomicPaper && e.undo_barrier()) break;
        // Earlier stores issue before later clwbs; earlier clwbs issue
        // before later stores.
        Cycle issue = persist_enter(co);
        StrandBuffer& b = co.sb[co.cur];
        issue = std::max(issue, b.ring.oldest());
        co.clwb_floor = std::max(co.clwb_floor, co.sq_last);
        co.store_floor = std::max(co.store_floor, co.last_clwb_issue);
        // In the strand buffer: later clwbs wait for every earlier entry.
        b.barrier = std::max(b.barrier, b.max_ack);
        b.last_retire = std::max(b.last_retire, b.barrier);
        b.ring.push(b.last_retire);
        persist_retire(co, issue, separate_pq() ? b.barrier : issue + 1);
        break;
      }
      case EventKind::kNewStrand: {
        const Cycle issue = persist_enter(co);
        co.cur = (co.cur + 1) % co.sb.size();
        persist_retire(co, issue, issue + 1);
        break;
      }
      case EventKind::kJoinStrand:
      case EventKind::kPsync:
      case EventKind::kDfence: {
        // Later clwbs and stores wait until earlier ones complete.
        const Cycle issue = persist_enter(co);
        const Cycle done = std::max({issue, co.max_ack, co.sq_last});
        co.clwb_floor = std::max(co.clwb_floor, done);
        co.store_floor = std::max(co.store_floor, done);
        persist_retire(co, done, done);
        break;
      }
      default: break;
    }
  }

  void step(Core& co, int k) {
    const Event& e = co.ev[co.i];
    const EventKind kind = e.kind();
    if (kind == EventKind::kAcquire) {
      // The core asks for the lock after its gap: take the gap first, so
      // the cores earlier than that ask first.
      if (!co.gap_taken) {
        co.gap_taken = true;
        co.t += static_cast<Cycle>(static_cast<double>(e.gap()) * gap_scale_);
        return;
      }
      Lock& l = lock(e.lock());
      // Held, or (recorded order) an earlier acquirer has not released yet.
      if (l.held || (recorded_order_ && l.released != e.lock_seq())) {
        co.blocked = true;
        co.waits_for = e.lock();
        return;
      }
    }
    if (!co.gap_taken) co.t += static_cast<Cycle>(static_cast<double>(e.gap()) * gap_scale_);
    co.gap_taken = false;
    ++co.i;
    switch (kind) {
      case EventKind::kStore:
        store(co, k, e.line());
        // The logging library's x86 instrumentation writes back every
        // persistent store right after it (undo_log.h: "ST A; pwb A"); on a
        // HOPS trace the x86 design issues that clwb itself.
        if (clwb_each_store_) x86_clwb(co, e.line());
        break;
      case EventKind::kAcquire: {
        // A locked RMW drains the store queue, then takes the lock when its
        // previous holder's release store is visible.
        wait(co, co.sq_last, Stall::kAtomicDrain);
        Lock& l = lock(e.lock());
        wait(co, l.free_at, Stall::kLock);
        co.t += l.last_core == k || l.last_core < 0 ? l1_ : l2_;
        l.last_core = k;
        l.held = true;
        break;
      }
      case EventKind::kRelease: {
        // The release is a store: visible when it leaves the store queue.
        const Cycle issue = std::max(sq_enter(co), co.store_floor);
        sq_retire(co, issue + l1_);
        Lock& l = lock(e.lock());
        l.free_at = co.sq_last;
        l.held = false;
        ++l.released;
        for (Core& o : cores_)  // its waiters re-check their turn
          if (o.blocked && o.waits_for == e.lock()) o.blocked = false;
        break;
      }
      case EventKind::kOpEnd:
        ++co.ops;
        co.t += op_compute_;
        break;
      default:
        if (d_ == Design::kIdeal) break;  // every write-back and fence elided
        if (hops()) hops_verb(co, e);
        else if (strand()) strand_verb(co, e);
        else x86(co, e);
        break;
    }
  }

  Lock& lock(std::uint32_t i) {
    if (i >= locks_.size()) locks_.resize(i + 1);
    return locks_[i];
  }

  Design d_;
  Config c_;
  double cyc_per_ns_;
  double gap_scale_ = 1.0;
  bool recorded_order_ = false;
  bool clwb_each_store_ = false;
  Cycle op_compute_ = 0;
  bool sync_flush_ = false;  // Config::x86_sync_flush
  Cycle l1_ = 0, l2_ = 0, read_ = 0;
  Controller ctrl_;
  LineTable lines_;
  std::vector<Core> cores_;
  std::vector<Lock> locks_;
  std::uint64_t evictions_ = 0, ordered_evictions_ = 0, snoop_waits_ = 0;
};

}  // namespace

Result simulate(const Trace& t, Design d, const Config& c) {
  if (t.threads.empty()) return Result{.design = d};
  Sim s(t, d, c);
  return s.run();
}

}  // namespace ferrite::model
