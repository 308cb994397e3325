// tests/model/trace_test.cc — the trace backend (model/trace.h): what it
// records, the file format, and `ferrite trace` / `ferrite sim` end to end,
// with the sensitivity check of docs/timing.md (cycles move the expected
// way when each Table I parameter grows or shrinks).
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "common/scale.h"
#include "ferrite/logging/undo_log.h"
#include "ferrite/model/timing.h"
#include "ferrite/model/trace.h"
#include "ferrite/persist/persist.h"

namespace trace_test {  // this file's names, apart in a unity build

namespace {

namespace fm = ferrite::model;
namespace fp = ferrite::persist;
using K = fm::EventKind;

TEST(TraceBackend, RecordsVerbsStoresLocksAndOperationEndsInProgramOrder) {
  alignas(64) static std::uint64_t data[16];
  ferrite::logging::Lock lock;
  fm::start_recording({});
  ASSERT_TRUE(fm::recording());
  fm::set_thread(0);
  lock.lock_for_read();
  fp::store(&data[0], std::uint64_t{1});
  fp::store_bytes(&data[7], &data[0], 16);  // spans two lines
  fp::pwb(&data[0], 128);                    // two lines
  fp::pfence();
  fp::persist_barrier();
  fp::new_strand();
  fp::join_strand();
  fp::ofence();
  fp::dfence();
  fp::psync();
  lock.unlock_for_read();
  lock.lock_for_read();
  lock.unlock_for_read();
  fm::note_op_end();
  const fm::Trace t = fm::stop_recording();
  EXPECT_FALSE(fm::recording());
  ASSERT_EQ(t.threads.size(), 1u);
  const auto& ev = t.threads[0];
  const K want[] = {K::kAcquire, K::kStore, K::kStore, K::kStore, K::kPwb, K::kPwb, K::kPfence,
                    K::kPersistBarrier, K::kNewStrand, K::kJoinStrand, K::kOfence, K::kDfence, K::kPsync,
                    K::kRelease, K::kAcquire, K::kRelease, K::kOpEnd};
  ASSERT_EQ(ev.size(), std::size(want));
  for (std::size_t i = 0; i < ev.size(); ++i) EXPECT_EQ(ev[i].kind(), want[i]) << i;
  const std::uint64_t line = (reinterpret_cast<std::uintptr_t>(&data[0]) >> 6) & fm::kPayloadMask;
  EXPECT_EQ(ev[1].line(), line);
  EXPECT_EQ(ev[2].line(), line);      // data[7]
  EXPECT_EQ(ev[3].line(), line + 1);  // data[8]
  EXPECT_EQ(ev[5].line(), line + 1);
  EXPECT_EQ(ev[0].lock_seq(), 0u);
  EXPECT_EQ(ev[14].lock_seq(), 1u);  // the second acquire of the same lock
  EXPECT_EQ(ev[14].lock(), ev[0].lock());
  EXPECT_EQ(t.ops, 1u);
  for (const auto& e : ev) EXPECT_LE(e.gap(), t.max_gap);
}

// persist::note_undo_barrier marks the thread's next persist barrier, and
// only that one; a logging region under strand instrumentation marks one
// barrier per logged store (Fig. 5 log_store's) and none of its others.
TEST(TraceBackend, MarksTheBarrierBetweenAnUndoEntryAndItsUpdate) {
  fm::start_recording({});
  fm::set_thread(0);
  fp::persist_barrier();
  fp::note_undo_barrier();
  fp::persist_barrier();
  fp::persist_barrier();
  fm::Trace t = fm::stop_recording();
  ASSERT_EQ(t.threads.size(), 1u);
  ASSERT_EQ(t.threads[0].size(), 3u);
  EXPECT_FALSE(t.threads[0][0].undo_barrier());
  EXPECT_TRUE(t.threads[0][1].undo_barrier());
  EXPECT_FALSE(t.threads[0][2].undo_barrier());

  const std::string f = ::testing::TempDir() + "/undo-barriers.trace";
  const std::string cmd = std::string(FERRITE_CLI_PATH) + " trace txn-queue -i strand --threads 1 --ops 50 -o " + f;
  ASSERT_EQ(std::system((cmd + " >/dev/null 2>&1").c_str()), 0) << cmd;
  t = fm::read_trace(f);
  EXPECT_EQ(t.version, fm::Header::kVersion);
  std::uint64_t marked = 0, barriers = 0;
  for (const auto& e : t.threads[0]) {
    marked += e.undo_barrier();
    barriers += e.kind() == K::kPersistBarrier;
  }
  EXPECT_GE(marked, 50u);        // at least one logged store per queue operation
  EXPECT_LT(marked, barriers);  // the commit's prune chain keeps unmarked barriers
}

// persist::note_ordering_join marks the thread's next JoinStrand only. A
// strand recording, replayed by hops (model::design_replays), is the
// library's HOPS code at the same points: its barriers and ordering joins
// are HOPS's ofences and its other joins HOPS's dfences, its stores the
// same (a few more on HOPS) — checked against a HOPS recording of the same
// one-thread run (the same operations: one thread prunes only its own log).
TEST(TraceBackend, MarksTheJoinsThatOnlyOrderAsHopsCodeHasOfencesThere) {
  fm::start_recording({});
  fm::set_thread(0);
  fp::join_strand();
  fp::note_ordering_join();
  fp::persist_barrier();  // a mark waits for its own kind
  fp::join_strand();
  fp::join_strand();
  fm::Trace t = fm::stop_recording();
  ASSERT_EQ(t.threads[0].size(), 4u);
  EXPECT_FALSE(t.threads[0][0].ordering_join());
  EXPECT_FALSE(t.threads[0][1].ordering_join());
  EXPECT_FALSE(t.threads[0][1].undo_barrier());
  EXPECT_TRUE(t.threads[0][2].ordering_join());
  EXPECT_FALSE(t.threads[0][3].ordering_join());

  for (const char* w : {"txn-queue", "atlas-swap", "sfr-map", "txn-tpcc", "atlas-rbtree"}) {
    SCOPED_TRACE(w);
    std::map<std::string, std::array<std::uint64_t, fm::kEventKinds + 1>> n;  // kinds, + ordering joins
    for (const char* instr : {"strand", "hops"}) {
      const std::string f = ::testing::TempDir() + "/" + w + "-" + instr + ".trace";
      const std::string cmd = std::string(FERRITE_CLI_PATH) + " trace " + w + " -i " + instr +
                              " --threads 1 --ops 300 --key-range 4096 -o " + f;
      ASSERT_EQ(std::system((cmd + " >/dev/null 2>&1").c_str()), 0) << cmd;
      const fm::Trace tr = fm::read_trace(f);
      auto& c = n[instr];
      c.fill(0);
      for (const auto& e : tr.threads[0]) {
        ++c[static_cast<std::size_t>(e.kind())];
        c[fm::kEventKinds] += e.ordering_join();
      }
    }
    const auto& sw = n["strand"];
    const auto& h = n["hops"];
    auto at = [](const auto& c, K k) { return c[static_cast<std::size_t>(k)]; };
    EXPECT_GT(sw[fm::kEventKinds], 0u);
    EXPECT_LT(sw[fm::kEventKinds], at(sw, K::kJoinStrand));  // the end entries' joins stay unmarked
    EXPECT_EQ(at(sw, K::kOpEnd), at(h, K::kOpEnd));
    EXPECT_EQ(at(sw, K::kAcquire), at(h, K::kAcquire));
    EXPECT_EQ(at(sw, K::kJoinStrand) - sw[fm::kEventKinds], at(h, K::kDfence));
    EXPECT_EQ(at(sw, K::kPersistBarrier) + sw[fm::kEventKinds], at(h, K::kOfence));
    // HOPS logs a word again where the strand code skips the entry (a word
    // already logged in its region, undo_log.h write: the RB-tree's
    // fix-up), so its stores may exceed strand's (by 62 of 3,418 in this
    // RB-tree run), never fall short.
    EXPECT_GE(at(h, K::kStore), at(sw, K::kStore));
    EXPECT_LE(at(h, K::kStore), at(sw, K::kStore) + at(sw, K::kStore) / 25);
  }
}

TEST(TraceBackend, EventsOfAnUnregisteredThreadAreDropped) {
  alignas(64) static std::uint64_t x;
  fm::start_recording({});
  fp::pwb(&x, 8);  // this thread never called set_thread
  const fm::Trace t = fm::stop_recording();
  EXPECT_EQ(t.events(), 0u);
}

TEST(TraceFile, RoundTripsAndRejectsForeignFiles) {
  fm::Trace t;
  t.workload = "txn-queue";
  t.instrumentation = "strand";
  t.ops = 3;
  t.threads = {{fm::Event::make(K::kStore, 10, 77), fm::Event::make(K::kPwb, 0, 77)},
               {fm::Event::lock_event(K::kAcquire, 5, 3, 9)}};
  const std::string f = ::testing::TempDir() + "/roundtrip.trace";
  fm::write_trace(f, t);
  const fm::Trace u = fm::read_trace(f);
  EXPECT_EQ(u.workload, "txn-queue");
  EXPECT_EQ(u.instrumentation, "strand");
  EXPECT_EQ(u.ops, 3u);
  ASSERT_EQ(u.threads.size(), 2u);
  EXPECT_EQ(u.threads[0][0].bits, t.threads[0][0].bits);
  EXPECT_EQ(u.threads[1][0].lock(), 3u);
  EXPECT_EQ(u.threads[1][0].lock_seq(), 9u);
  EXPECT_EQ(u.threads[0][0].gap(), 10u);
  EXPECT_EQ(u.version, fm::Header::kVersion);
  // A version-1 file (before undo barriers were marked) is still read.
  {
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    const std::uint32_t v1 = 1;
    io.seekp(offsetof(fm::Header, version));
    io.write(reinterpret_cast<const char*>(&v1), sizeof v1);
  }
  EXPECT_EQ(fm::read_trace(f).version, 1u);
  {
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    const std::uint32_t future = fm::Header::kVersion + 1;
    io.seekp(offsetof(fm::Header, version));
    io.write(reinterpret_cast<const char*>(&future), sizeof future);
  }
  EXPECT_THROW(fm::read_trace(f), std::runtime_error);
  // Truncated, and not a trace at all.
  std::filesystem::resize_file(f, sizeof(fm::Header) + 8);
  EXPECT_THROW(fm::read_trace(f), std::runtime_error);
  std::ofstream(f, std::ios::trunc) << "not a trace, just some text that is long enough to fill a header......."
                                       "................................................................";
  EXPECT_THROW(fm::read_trace(f), std::runtime_error);
}

int run(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

// A small trace of one logging workload per instrumentation, via the CLI.
fm::Trace traced(const std::string& instr) {
  const std::string f = ::testing::TempDir() + "/txn-queue-" + instr + ".trace";
  const auto ops = ferrite::test::scaled<int>(4000, 400);
  const std::string cmd = std::string(FERRITE_CLI_PATH) + " trace txn-queue -i " + instr +
                          " --threads 2 --ops " + std::to_string(ops) + " -o " + f;
  EXPECT_EQ(run(cmd), 0) << cmd;
  return fm::read_trace(f);
}

TEST(TraceTool, TracesEveryInstrumentationOfALoggingWorkload) {
  const fm::Trace x = traced("x86");
  EXPECT_EQ(x.instrumentation, "x86");
  EXPECT_EQ(x.threads.size(), 2u);
  EXPECT_GT(x.ops, 0u);
  std::array<std::uint64_t, fm::kEventKinds> n{};
  for (const auto& th : x.threads)
    for (const auto& e : th) ++n[static_cast<std::size_t>(e.kind())];
  EXPECT_GT(n[static_cast<int>(K::kPwb)], 0u);
  EXPECT_GT(n[static_cast<int>(K::kAcquire)], 0u);
  EXPECT_EQ(n[static_cast<int>(K::kAcquire)], n[static_cast<int>(K::kRelease)]);
  EXPECT_EQ(n[static_cast<int>(K::kOfence)], 0u);
  const fm::Trace h = traced("hops");
  std::uint64_t pwbs = 0, ofences = 0;
  for (const auto& th : h.threads)
    for (const auto& e : th) {
      pwbs += e.kind() == K::kPwb;
      ofences += e.kind() == K::kOfence;
    }
  // HOPS instrumentation writes nothing back (the few pwbs are the pool
  // heap's, when an arena takes a fresh chunk).
  EXPECT_LT(pwbs * 100, n[static_cast<int>(K::kPwb)]);
  EXPECT_GT(ofences, 0u);
  EXPECT_NE(run(std::string(FERRITE_CLI_PATH) + " trace no-such-workload -o /dev/null"), 0);
}

// --ops-per-region K (StrandWeaver Fig. 10): the same operations, K of a
// thread per region — on the one-lock queue one acquire and one release per
// K operations (every op its own region: one each). A workload that cannot
// name its locks up front is refused.
TEST(TraceTool, GroupsSeveralOperationsPerRegion) {
  const auto ops = ferrite::test::scaled<int>(4000, 400);
  auto acquires = [&](int k) {
    const std::string f = ::testing::TempDir() + "/sfr-queue-k" + std::to_string(k) + ".trace";
    const std::string cmd = std::string(FERRITE_CLI_PATH) + " trace sfr-queue -i strand --threads 2 --ops " +
                            std::to_string(ops) + " --ops-per-region " + std::to_string(k) + " -o " + f;
    EXPECT_EQ(run(cmd), 0) << cmd;
    const fm::Trace t = fm::read_trace(f);
    EXPECT_EQ(t.ops, static_cast<std::uint64_t>(ops));
    std::uint64_t acq = 0, rel = 0;
    for (const auto& th : t.threads)
      for (const auto& e : th) {
        acq += e.kind() == K::kAcquire;
        rel += e.kind() == K::kRelease;
      }
    EXPECT_EQ(acq, rel);
    return acq;
  };
  EXPECT_EQ(acquires(1), static_cast<std::uint64_t>(ops));
  EXPECT_EQ(acquires(4), static_cast<std::uint64_t>(ops) / 4);
  EXPECT_NE(run(std::string(FERRITE_CLI_PATH) + " trace atlas-tpcc --ops 100 --ops-per-region 2 -o /dev/null"), 0);
  EXPECT_NE(run(std::string(FERRITE_CLI_PATH) + " trace sfr-queue --ops 100 --ops-per-region 0 -o /dev/null"), 0);
}

// The compute gap, in cycles, that CyclesMoveTheExpectedWayWithEachParameter
// gives every event.
constexpr std::uint32_t kFixedGap = 40;

TEST(TimingModel, CyclesMoveTheExpectedWayWithEachParameter) {
  using D = fm::Design;
  // The traces are recorded live, their compute gaps by rdtsc: under the
  // sanitizers, or on a loaded machine, every gap grows and a strand is
  // drained before the next one starts, so that one strand buffer costs
  // nothing (measured under ASan in CI: equal cycles). The model's response
  // to a parameter is a property of the model, not of the machine that
  // recorded the trace: every gap is set to one constant (a fast core's, well
  // under the persist latencies), so each check is strict where the model is
  // and the same in every build.
  const auto fixed_gaps = [](fm::Trace t) {
    for (auto& thread : t.threads)
      for (fm::Event& e : thread) e = fm::Event::make(e.kind(), kFixedGap, e.payload());
    return t;
  };
  const fm::Trace x86 = fixed_gaps(traced("x86")), hops = fixed_gaps(traced("hops")),
                  strand = fixed_gaps(traced("strand"));
  struct Case {
    const char* param;
    double value;  // the default is Table I's
    D design;
    bool strictly;  // more cycles, not only no fewer
    const char* with = nullptr;  // a parameter set in both runs
    double with_value = 0;
  };
  const Case cases[] = {
      {"pm_read_ns", 1384, D::kX86, true},           {"write_to_controller_ns", 384, D::kX86, true},
      {"write_to_controller_ns", 384, D::kHops, true}, {"write_to_controller_ns", 384, D::kStrandWeaver, true},
      {"l1_ns", 8, D::kX86, true},                   {"l2_ns", 64, D::kX86, true},
      {"media_write_ns", 4000, D::kX86, false},       {"store_queue", 2, D::kX86, true},
      {"writeback_buffer", 1, D::kX86, false},        {"persist_buffer", 1, D::kHops, true},
      {"persist_queue", 1, D::kStrandWeaver, true},   {"strand_entries", 1, D::kStrandWeaver, true},
      {"strand_buffers", 1, D::kStrandWeaver, true},  {"wpq", 1, D::kStrandWeaver, true},
      {"media_banks", 1, D::kStrandWeaver, true},     {"op_compute_cycles", 1000, D::kX86, false},  // hidden when the lock is the bottleneck
      // The L1 (a 1 kB one refetches lines from the L2) and StrandWeaver's
      // write-back and snoop buffers, on a 1 kB L1 so that lines are
      // evicted. The buffers are "never fewer" only: on these lock-based
      // traces every line is flushed and JoinStrand drains the strand
      // buffers before the lock that guards the line is released, so an
      // eviction or a steal rarely finds anything to wait for (the tiny
      // traces of timing_test.cc show each buffer's cost exactly).
      {"l1_kb", 1, D::kStrandWeaver, true},           {"l1_kb", 1, D::kX86, true},
      {"l1_ways", 1, D::kStrandWeaver, false, "l1_kb", 1},
      {"writeback_buffer", 1, D::kStrandWeaver, false, "l1_kb", 1},
      {"snoop_buffer", 1, D::kStrandWeaver, false, "l1_kb", 1},
  };
  for (const Case& c : cases) {
    const fm::Trace& t = c.design == D::kX86 ? x86 : c.design == D::kHops ? hops : strand;
    fm::Config unchanged;
    if (c.with != nullptr) {
      ASSERT_TRUE(unchanged.set(c.with, c.with_value)) << c.with;
    }
    fm::Config changed = unchanged;
    ASSERT_TRUE(changed.set(c.param, c.value)) << c.param;
    const auto base = fm::simulate(t, c.design, unchanged).cycles;
    const auto moved = fm::simulate(t, c.design, changed).cycles;
    if (c.strictly) EXPECT_GT(moved, base) << c.param << " on " << fm::design_name(c.design);
    else EXPECT_GE(moved, base) << c.param << " on " << fm::design_name(c.design);
  }
}

TEST(SimTool, ReplaysATraceUnderEveryDesignOfItsInstrumentation) {
  traced("strand");
  const std::string f = ::testing::TempDir() + "/txn-queue-strand.trace";
  const std::string out = ::testing::TempDir() + "/sim.json";
  ASSERT_EQ(std::system((std::string(FERRITE_CLI_PATH) + " sim " + f + " --json > " + out).c_str()), 0);
  std::ifstream in(out);
  const std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* d : {"\"no-persist-queue\"", "\"strandweaver\"", "\"non-atomic\"", "\"non-atomic-paper\""})
    EXPECT_NE(s.find(d), std::string::npos) << d;
  EXPECT_NE(run(std::string(FERRITE_CLI_PATH) + " sim " + f + " --config strand_entries=0"), 0);
  EXPECT_NE(run(std::string(FERRITE_CLI_PATH) + " sim " + f + " --design itanium"), 0);
  EXPECT_NE(run(std::string(FERRITE_CLI_PATH) + " sim " + f + " --recordings 2"), 0);  // --paper only
}

// `ferrite trace --key-range N` records the workload sized as a benchmark:
// the array swap over N elements instead of the campaigns' 16 (two cache
// lines, every swap contending with every other), so its stores reach many
// more lines; out of range is a usage error.
TEST(TraceTool, KeyRangeSizesTheWorkloadAsABenchmark) {
  auto lines = [](const std::string& extra) {
    const std::string out = ::testing::TempDir() + "/swap" + std::to_string(extra.size()) + ".trace";
    const std::string cmd = std::string(FERRITE_CLI_PATH) + " trace txn-swap -i x86 --threads 2 --ops 2000 " + extra +
                            " -o " + out + " 2>/dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::set<std::uint64_t> seen;
    for (const auto& th : fm::read_trace(out).threads)
      for (const auto& e : th)
        if (e.kind() == fm::EventKind::kStore) seen.insert(e.line());
    std::filesystem::remove(out);
    return seen.size();
  };
  const std::size_t small = lines(""), sized = lines("--key-range 4096");
  EXPECT_GT(small, 0u);
  // 1,600 swaps of two of 4,096 elements (512 lines) touch hundreds of
  // array lines; the 16-element array has two.
  EXPECT_GT(sized, small + 200) << small << " vs " << sized;
  const std::string bad = std::string(FERRITE_CLI_PATH) + " trace txn-swap --key-range 99999999 -o " +
                          ::testing::TempDir() + "/never.trace > /dev/null 2>&1";
  const int rc = std::system(bad.c_str());
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 2) << rc;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// `ferrite sim --paper` end to end on small traces: StrandWeaver's
// evaluation reports both non-atomic designs, and the paper's NON-ATOMIC
// (only the undo barriers dropped) lies between strandweaver and the
// unordered upper bound; HOPS+'s reports its speedups over both x86
// baselines, and the synchronous-flush x86 is the slower of the two.
TEST(SimTool, PaperEvaluationsReportBothNonAtomicDesignsAndBothX86Baselines) {
  const auto ops = ferrite::test::scaled<int>(1000, 200);
  auto paper = [&](const std::string& which, const std::string& extra = "") {
    const std::string out = ::testing::TempDir() + "/paper-" + which + ".json";
    const std::string cmd = std::string(FERRITE_CLI_PATH) + " sim --paper " + which + " --threads 2 --ops " +
                            std::to_string(ops) + extra + " --json > " + out;
    EXPECT_EQ(std::system((cmd + " 2>/dev/null").c_str()), 0) << cmd;
    std::ifstream in(out);
    return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  };
  const auto sw = paper("strandweaver", " --recordings 2");
  ASSERT_TRUE(sw.is_object());
  EXPECT_EQ(sw.at("recordings").get<int>(), 2);
  EXPECT_EQ(sw.at("key_range").get<std::uint64_t>(), 65536u);  // bench-sized by default
  const auto& a = sw.at("average_speedup_over_x86");
  const double strand = a.at("strandweaver"), nap = a.at("non-atomic-paper"), na = a.at("non-atomic");
  // Under the sanitizers the traces' compute gaps are rdtsc readings of
  // instrumented code (issue 44: not yet machine-independent), which put the
  // three designs within 1% of each other; an ASan run at stop 47 had
  // non-atomic-paper 1.00779 vs strandweaver 1.00780. There the order is
  // checked up to that noise (0.5%); release checks it exactly and with a
  // margin (below).
  const double noise = kSanitized ? 0.005 : 0.0;
  EXPECT_GE(nap, strand - noise);
  EXPECT_GE(na, nap - noise);
  EXPECT_GE(sw.at("strandweaver_slowdown_vs_non_atomic").get<double>(),
            sw.at("strandweaver_slowdown_vs_non_atomic_paper").get<double>() - noise);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  // Release: the undo barriers cost strandweaver measurably (5-6% on these
  // traces); under the sanitizers the gaps may hide them.
  EXPECT_GT(nap, strand * 1.01);
#endif
  // Every Table II structure under each language, averaged per §VI group
  // (microbenchmarks; N-Store) as well as over all of them.
  std::map<std::string, int> rows_of;
  std::set<std::string> structures;
  int behind = 0, behind_every = 0, behind_some = 0;
  for (const auto& row : sw.at("figure7")) {
    bool seen = false;
    for (const auto& d : row.at("designs")) seen |= d.at("design") == "non-atomic-paper";
    EXPECT_TRUE(seen) << row.at("workload");
    const std::string w = row.at("workload");
    structures.insert(w.substr(w.find('-') + 1));
    ++rows_of[row.at("group").get<std::string>()];
    EXPECT_EQ(row.at("group") == "nstore", w.ends_with("-nstore")) << w;
    // T2 on one recording: hops replays strandweaver's (design_replays).
    const auto& hs = row.at("hops_on_strand_recording");
    EXPECT_EQ(hs.at("design"), "hops") << w;
    std::uint64_t sw_cycles = 0;
    for (const auto& d : row.at("designs"))
      if (d.at("design") == "strandweaver") sw_cycles = d.at("cycles").get<std::uint64_t>();
    ASSERT_GT(sw_cycles, 0u) << w;
    EXPECT_DOUBLE_EQ(row.at("strandweaver_over_hops").get<double>(),
                     hs.at("cycles").get<double>() / static_cast<double>(sw_cycles))
        << w;
    behind += row.at("strandweaver_over_hops").get<double>() < 1.0;
    // The directions over two recordings: the first is the row's own.
    const auto& d = row.at("directions").at("strandweaver_over_hops");
    ASSERT_EQ(d.at("recordings").size(), 2u) << w;
    EXPECT_DOUBLE_EQ(d.at("recordings")[0].get<double>(), row.at("strandweaver_over_hops").get<double>()) << w;
    const double lo = d.at("min"), hi = d.at("max"), mean = d.at("geomean");
    EXPECT_LE(lo, mean * (1 + 1e-12)) << w;
    EXPECT_LE(mean, hi * (1 + 1e-12)) << w;
    EXPECT_DOUBLE_EQ(std::sqrt(d.at("recordings")[0].get<double>() * d.at("recordings")[1].get<double>()), mean) << w;
    behind_every += hi < 1.0;
    behind_some += lo < 1.0;
    // (x86 on the strand recording: the strandweaver entry's speedup.)
    double sw_speedup = 0;
    for (const auto& dj : row.at("designs"))
      if (dj.at("design") == "strandweaver") sw_speedup = dj.at("speedup_over_x86");
    EXPECT_DOUBLE_EQ(row.at("directions").at("strandweaver_over_x86").at("recordings")[0].get<double>(), sw_speedup)
        << w;
  }
  EXPECT_EQ(sw.at("workloads_strandweaver_behind_hops").get<int>(), behind);
  const auto& totals = sw.at("directions").at("strandweaver_over_hops");
  EXPECT_EQ(totals.at("workloads").get<int>(), 18);
  EXPECT_EQ(totals.at("workloads_below_1_in_every_recording").get<int>(), behind_every);
  EXPECT_EQ(totals.at("workloads_below_1_in_some_recording").get<int>(), behind_some);
  for (const char* k : {"hops_over_x86", "strandweaver_over_x86", "strandweaver_over_no_persist_queue"})
    EXPECT_TRUE(sw.at("directions").contains(k)) << k;
  EXPECT_GT(sw.at("strandweaver_over_hops_own_recording").get<double>(), 0.0);
  EXPECT_EQ(structures, (std::set<std::string>{"map", "nstore", "queue", "rbtree", "swap", "tpcc"}));
  ASSERT_TRUE(sw.contains("groups"));
  for (const char* g : {"microbenchmarks", "nstore"}) {
    const auto& grp = sw.at("groups").at(g);
    EXPECT_EQ(grp.at("workloads").get<int>(), rows_of[g]) << g;
    EXPECT_GT(grp.at("average_speedup_over_x86").at("strandweaver").get<double>(), 0.0) << g;
    // The order of the two non-atomic designs per group: on the 15
    // microbenchmarks. N-Store's three 2-thread traces put strandweaver and
    // both non-atomic designs within 1% of each other since stop 39 (its
    // prune ends without a barrier), inside the model's lock-arbitration
    // noise (a free lock goes to the core that asks first in modelled
    // time): measured slowdowns of -0.67% / -0.42% and 0.031% / 0.051%
    // (non-atomic / non-atomic-paper) in two runs. The whole evaluation's
    // order is checked above.
    if (std::string(g) == "microbenchmarks") {
      EXPECT_GE(grp.at("strandweaver_slowdown_vs_non_atomic").get<double>(),
                grp.at("strandweaver_slowdown_vs_non_atomic_paper").get<double>() - noise)
          << g;
    }
  }
  EXPECT_EQ(rows_of["nstore"], 3);
  // Two recordings and the plots (with --json the document alone on stdout).
  const auto plots = std::filesystem::path(::testing::TempDir()) / ("sim-plots-" + std::to_string(::getpid()));
  const auto hops = paper("hops", " --recordings 2 --plot " + plots.string());
  ASSERT_TRUE(hops.is_object());
  const bool matplotlib =
      std::system("python3 -c 'import matplotlib' 2>/dev/null || /usr/bin/python3 -c 'import matplotlib' 2>/dev/null") == 0;
  EXPECT_TRUE(std::filesystem::exists(plots / "results.json"));
  if (matplotlib) {
    EXPECT_TRUE(std::filesystem::exists(plots / "fig2-hops.png"));
    EXPECT_TRUE(std::filesystem::exists(plots / "directions.png"));
  }
  std::filesystem::remove_all(plots);
  const auto& plain = hops.at("average_speedup_over_x86");
  const auto& sync = hops.at("average_speedup_over_x86_sync_flush");
  EXPECT_GE(sync.at("x86").get<double>(), 1.0);  // x86 over the synchronous-flush x86
  for (const char* d : {"hops", "hops+", "ideal"}) EXPECT_GE(sync.at(d).get<double>(), plain.at(d).get<double>()) << d;
  for (const auto& row : hops.at("figure2")) {
    EXPECT_TRUE(row.contains("speedup_over_x86_sync_flush"));
    // Recording 0: hops+ over hops is the ratio of the row's speedups.
    double hops_sp = 0, plus_sp = 0;
    for (const auto& dj : row.at("designs")) {
      if (dj.at("design") == "hops") hops_sp = dj.at("speedup_over_x86");
      if (dj.at("design") == "hops+") plus_sp = dj.at("speedup_over_x86");
    }
    const auto& d = row.at("directions").at("hops_plus_over_hops").at("recordings");
    ASSERT_EQ(d.size(), 2u);
    EXPECT_DOUBLE_EQ(d[0].get<double>(), plus_sp / hops_sp);
  }
  EXPECT_EQ(hops.at("directions").at("recordings").get<int>(), 2);
  EXPECT_EQ(hops.at("directions").at("hops_plus_over_hops").at("workloads").get<int>(), 3);
}

}  // namespace

}  // namespace trace_test
