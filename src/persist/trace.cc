// src/persist/trace.cc — the `trace` persist backend: records every verb,
// annotated store and lock hand-off per thread, with the compute gap since
// the thread's previous event, for the timing model (model/trace.h has the
// format and the recording API). It issues no write-back or fence: the
// gaps are the code's own compute, not this machine's persistence cost.
#include <x86intrin.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "ferrite/model/trace.h"
#include "ferrite/persist/persist.h"

namespace ferrite::model {

const char* event_kind_name(EventKind k) {
  static constexpr const char* kNames[kEventKinds] = {"store",   "pwb",        "pfence",      "psync",
                                                      "ofence",  "dfence",     "persist_barrier",
                                                      "new_strand", "join_strand", "acquire", "release",
                                                      "op_end"};
  const int i = static_cast<int>(k);
  return i >= 0 && i < kEventKinds ? kNames[i] : "?";
}

std::uint64_t Trace::events() const {
  std::uint64_t n = 0;
  for (const auto& t : threads) n += t.size();
  return n;
}

void write_trace(const std::string& path, const Trace& t) {
  Header h{};
  std::memcpy(h.magic, Header::kMagic, sizeof h.magic);
  h.version = Header::kVersion;
  h.threads = static_cast<std::uint32_t>(t.threads.size());
  h.freq_mhz = t.freq_mhz;
  h.max_gap = t.max_gap;
  h.ops = t.ops;
  h.clamped_gaps = t.clamped_gaps;
  std::strncpy(h.workload, t.workload.c_str(), sizeof h.workload - 1);
  std::strncpy(h.instrumentation, t.instrumentation.c_str(), sizeof h.instrumentation - 1);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("trace: cannot create " + path);
  out.write(reinterpret_cast<const char*>(&h), sizeof h);
  for (const auto& th : t.threads) {
    const std::uint64_t n = th.size();
    out.write(reinterpret_cast<const char*>(&n), sizeof n);
  }
  for (const auto& th : t.threads)
    out.write(reinterpret_cast<const char*>(th.data()), static_cast<std::streamsize>(th.size() * sizeof(Event)));
  if (!out) throw std::runtime_error("trace: write failed: " + path);
}

Trace read_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("trace: cannot open " + path);
  Header h{};
  if (!in.read(reinterpret_cast<char*>(&h), sizeof h)) throw std::runtime_error("trace: truncated header: " + path);
  if (std::memcmp(h.magic, Header::kMagic, sizeof h.magic) != 0)
    throw std::runtime_error("trace: not a Ferrite trace (bad magic): " + path);
  if (h.version < Header::kOldestVersion || h.version > Header::kVersion)
    throw std::runtime_error("trace: unknown format version " + std::to_string(h.version) + ": " + path);
  if (h.threads == 0 || h.threads > 1024) throw std::runtime_error("trace: bad thread count: " + path);
  Trace t;
  t.workload.assign(h.workload, strnlen(h.workload, sizeof h.workload));
  t.instrumentation.assign(h.instrumentation, strnlen(h.instrumentation, sizeof h.instrumentation));
  t.version = h.version;
  t.freq_mhz = h.freq_mhz;
  t.max_gap = h.max_gap;
  t.ops = h.ops;
  t.clamped_gaps = h.clamped_gaps;
  std::vector<std::uint64_t> counts(h.threads);
  if (!in.read(reinterpret_cast<char*>(counts.data()), static_cast<std::streamsize>(counts.size() * 8)))
    throw std::runtime_error("trace: truncated: " + path);
  t.threads.resize(h.threads);
  for (std::uint32_t i = 0; i < h.threads; ++i) {
    if (counts[i] > (std::uint64_t{1} << 36)) throw std::runtime_error("trace: bad event count: " + path);
    t.threads[i].resize(counts[i]);
    if (!in.read(reinterpret_cast<char*>(t.threads[i].data()), static_cast<std::streamsize>(counts[i] * 8)))
      throw std::runtime_error("trace: truncated events: " + path);
  }
  return t;
}

// ------------------------------------------------------------- recording
namespace {

struct Recorder {
  RecordOptions opt;
  double cycles_per_tick = 1.0;
  double overhead_cycles = 0.0;  // the recorder's own cost between two events
  std::vector<std::vector<Event>> bufs;
  std::vector<std::uint64_t> clamped;
  std::mutex locks_mu;  // the lock table: lock address -> index, acquires so far
  struct LockInfo {
    std::uint32_t index;
    std::uint64_t acquires;
  };
  std::unordered_map<const void*, LockInfo> locks;
  const persist::Backend* previous = nullptr;
  bool on = false;
};
Recorder& rec() {
  static Recorder r;
  return r;
}

struct ThreadState {
  int tid = -1;
  std::uint64_t last = 0;  // tsc at the end of the previous event
  std::uint8_t marks = 0;  // persist::note_next: Marks for the next barrier / join
};
thread_local ThreadState t_state;

void record(EventKind k, std::uint64_t payload, bool lock = false, std::uint32_t lock_index = 0,
            std::uint64_t lock_seq = 0) {
  ThreadState& ts = t_state;
  if (ts.tid < 0) return;
  Recorder& r = rec();
  const std::uint64_t now = __rdtsc();
  double g = static_cast<double>(now - ts.last) * r.cycles_per_tick - r.overhead_cycles;
  if (g < 0) g = 0;
  std::uint32_t gap = static_cast<std::uint32_t>(g);
  if (gap > r.opt.max_gap) {
    gap = r.opt.max_gap;
    ++r.clamped[static_cast<std::size_t>(ts.tid)];
  }
  auto& buf = r.bufs[static_cast<std::size_t>(ts.tid)];
  buf.push_back(lock ? Event::lock_event(k, gap, lock_index, lock_seq) : Event::make(k, gap, payload));
  ts.last = __rdtsc();
}

std::uint64_t line_of(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) >> 6) & kPayloadMask; }

void tr_pwb(const void* line) { record(EventKind::kPwb, line_of(line)); }
void tr_pfence() { record(EventKind::kPfence, 0); }
void tr_psync() { record(EventKind::kPsync, 0); }
void tr_ofence() { record(EventKind::kOfence, 0); }
void tr_dfence() { record(EventKind::kDfence, 0); }
// The pending mark `m` of this thread, consumed: the event's payload bit.
std::uint64_t take_mark(persist::Mark m, std::uint64_t bit) {
  const auto mb = static_cast<std::uint8_t>(m);
  const bool marked = (t_state.marks & mb) != 0;
  t_state.marks = static_cast<std::uint8_t>(t_state.marks & ~mb);
  return marked ? bit : 0;
}
void tr_barrier() { record(EventKind::kPersistBarrier, take_mark(persist::Mark::kUndoBarrier, kBarrierUndo)); }
void tr_mark_next(persist::Mark m) {
  t_state.marks = static_cast<std::uint8_t>(t_state.marks | static_cast<std::uint8_t>(m));
}
void tr_new_strand() { record(EventKind::kNewStrand, 0); }
void tr_join() { record(EventKind::kJoinStrand, take_mark(persist::Mark::kOrderingJoin, kJoinOrdering)); }
void tr_stored(const void* p, std::size_t n) {
  if (n == 0) return;
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  for (std::uintptr_t l = a >> 6; l <= (a + n - 1) >> 6; ++l) record(EventKind::kStore, l & kPayloadMask);
}
void tr_lock(const void* lock, bool acquired) {
  if (t_state.tid < 0) return;
  Recorder& r = rec();
  std::uint32_t index;
  std::uint64_t seq = 0;
  {
    // The caller holds `lock` (acquired: just taken; released: not yet
    // given back), so the acquire count of one lock follows its hand-offs.
    std::lock_guard<std::mutex> g(r.locks_mu);
    auto [it, fresh] = r.locks.try_emplace(lock, Recorder::LockInfo{static_cast<std::uint32_t>(r.locks.size()), 0});
    index = it->second.index;
    if (acquired) seq = it->second.acquires++;
  }
  if (index >= kMaxLocks || seq > kMaxLockSeq) throw std::length_error("trace: too many locks or lock acquires");
  record(acquired ? EventKind::kAcquire : EventKind::kRelease, 0, true, index, seq);
}

const persist::Backend kTraceBackend{"trace",   &tr_pwb,     &tr_pfence,   &tr_psync, &tr_ofence,
                                     &tr_dfence, &tr_barrier, &tr_new_strand, &tr_join, nullptr,
                                     nullptr,   &tr_stored,  nullptr,      &tr_lock,
                                     &tr_mark_next};

// rdtsc ticks per second, against the steady clock (20 ms).
double tsc_hz() {
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t c0 = __rdtsc();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(20)) {
  }
  const std::uint64_t c1 = __rdtsc();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<double>(c1 - c0) / s;
}

}  // namespace

void start_recording(const RecordOptions& opt) {
  Recorder& r = rec();
  if (r.on) throw std::logic_error("trace: already recording");
  r.opt = opt;
  r.cycles_per_tick = static_cast<double>(opt.freq_mhz) * 1e6 / tsc_hz();
  r.bufs.assign(static_cast<std::size_t>(opt.max_threads), {});
  r.clamped.assign(static_cast<std::size_t>(opt.max_threads), 0);
  r.locks.clear();
  // Calibrate the recorder's own cost: back-to-back events with no work
  // between them; the median gap is subtracted from every gap.
  {
    r.overhead_cycles = 0;
    const ThreadState saved = t_state;
    t_state.tid = 0;
    t_state.last = __rdtsc();
    for (int i = 0; i < 2001; ++i) record(EventKind::kPfence, 0);
    std::vector<std::uint32_t> gaps;
    for (const auto& e : r.bufs[0]) gaps.push_back(e.gap());
    std::nth_element(gaps.begin(), gaps.begin() + static_cast<long>(gaps.size() / 2), gaps.end());
    r.overhead_cycles = gaps[gaps.size() / 2];
    r.bufs[0].clear();
    r.clamped[0] = 0;
    t_state = saved;
  }
  r.previous = persist::installed();
  r.on = true;
  persist::install(&kTraceBackend);
}

void set_thread(int tid) {
  if (tid < 0 || tid >= rec().opt.max_threads) throw std::out_of_range("trace: thread id out of range");
  t_state.tid = tid;
  t_state.last = __rdtsc();
}

void note_op_end() { record(EventKind::kOpEnd, 0); }

bool recording() { return rec().on && persist::installed() == &kTraceBackend; }

Trace stop_recording() {
  Recorder& r = rec();
  if (!r.on) throw std::logic_error("trace: not recording");
  persist::install(r.previous);
  r.on = false;
  t_state.tid = -1;
  Trace t;
  t.freq_mhz = r.opt.freq_mhz;
  t.max_gap = r.opt.max_gap;
  std::size_t used = 0;
  for (std::size_t i = 0; i < r.bufs.size(); ++i)
    if (!r.bufs[i].empty()) used = i + 1;
  t.threads.resize(std::max<std::size_t>(used, 1));
  for (std::size_t i = 0; i < used; ++i) {
    for (const Event& e : r.bufs[i]) t.ops += e.kind() == EventKind::kOpEnd;
    t.threads[i] = std::move(r.bufs[i]);
    t.clamped_gaps += r.clamped[i];
  }
  r.bufs.clear();
  return t;
}

}  // namespace ferrite::model
