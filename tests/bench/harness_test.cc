// tests/bench/harness_test.cc — the benchmark harness: every registered
// technique runs a tiny benchmark and yields sane records; JSON/CSV carry the
// schema fields; failures are reported, never hang.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <unistd.h>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/harness.h"
#include "common/scale.h"
#include "ferrite/pmem/pool.h"

namespace ferrite::bench {
namespace {

std::uint64_t scaled(std::uint64_t n) { return test::scaled<std::uint64_t>(n, 8); }

// A technique made here (registered ones come from adapters/adapter.h).
Technique test_technique(std::string name, Structure s, bool persistent, Technique::MakeFn make) {
  Technique t;
  t.name = std::move(name);
  t.structure = s;
  t.persistent = persistent;
  t.description = "test";
  t.make = std::move(make);
  t.family = "test";
  return t;
}

Experiment tiny(Structure s, std::vector<std::string> techniques, std::uint64_t ops) {
  Experiment e;
  e.label = "test";
  e.structure = s;
  e.workload = default_workload(s);
  e.techniques = std::move(techniques);
  e.threads = {1, 2};
  e.ops_per_thread = ops;
  e.work = 16;
  e.reps = 1;
  e.warmup = 0;
  e.heap_size = 64;
  e.pool_cap = std::size_t{16} << 20;  // a few hundred operations per technique: 256 MiB pools only cost time
  return e;
}

const std::vector<Structure> kStructures = {Structure::kRegister, Structure::kStack, Structure::kQueue,
                                            Structure::kPriorityQueue};

TEST(BenchHarness, TransientCompetitorsAreRegistered) {
  EXPECT_NE(find_technique(Structure::kQueue, "transient-ms"), nullptr);
  EXPECT_NE(find_technique(Structure::kStack, "transient-treiber"), nullptr);
  for (Structure s : kStructures) EXPECT_NE(find_technique(s, "mutex-std"), nullptr) << structure_name(s);
#ifdef FERRITE_HAVE_LIBCDS
  EXPECT_NE(find_technique(Structure::kQueue, "libcds-msqueue"), nullptr);
  EXPECT_NE(find_technique(Structure::kStack, "libcds-treiber"), nullptr);
#endif
}

// Every technique of every structure: a few hundred operations on 1 and 2
// threads must produce a record with coherent numbers.
TEST(BenchHarness, EveryRegisteredTechniqueProducesSaneRecords) {
  const std::uint64_t ops = scaled(300);
  std::size_t checked = 0;
  for (Structure s : kStructures) {
    std::vector<std::string> names;
    for (const Technique* t : techniques_for(s)) names.push_back(t->name);
    if (names.empty()) continue;
    const auto records = run_experiment(tiny(s, names, ops));
    ASSERT_EQ(records.size(), names.size() * 2) << structure_name(s);
    for (const Record& r : records) {
      SCOPED_TRACE(r.structure + "/" + r.technique + " threads=" + std::to_string(r.threads));
      const Technique* t = find_technique(s, r.technique);
      ASSERT_NE(t, nullptr);
      EXPECT_TRUE(r.error.empty()) << r.error;
      // Pairs do an even number of operations per thread; multiply exactly N.
      const std::uint64_t per_thread = s == Structure::kRegister ? ops : (ops + 1) / 2 * 2;
      EXPECT_EQ(r.ops_total, per_thread * static_cast<std::uint64_t>(r.threads));
      EXPECT_LE(r.empty_removes, r.ops_total);
      if (s == Structure::kRegister) {
        EXPECT_EQ(r.empty_removes, 0u);
      }
      ASSERT_EQ(r.mops.size(), 1u);
      EXPECT_GT(r.mops_median, 0.0);
      EXPECT_LE(r.mops_min, r.mops_median);
      EXPECT_LE(r.mops_median, r.mops_max);
      EXPECT_GT(r.seconds_total, 0.0);
      EXPECT_GE(r.pwb_per_op, 0.0);
      EXPECT_GE(r.pfence_per_op, 0.0);
      EXPECT_GE(r.psync_per_op, 0.0);
      EXPECT_GE(r.combining_degree, 0.0);
      EXPECT_EQ(r.verbs_per_op.at("pwb"), r.pwb_per_op);
      if (!t->persistent) {
        // Transient techniques issue no persistence verb at all.
        EXPECT_EQ(r.pwb_per_op, 0.0);
        EXPECT_EQ(r.psync_per_op, 0.0);
        EXPECT_EQ(r.media, "none");
      } else if (t->needs_pool) {
        // A durable technique on a Ferrite pool must write something back.
        EXPECT_GT(r.pwb_per_op, 0.0);
        EXPECT_NE(r.media, "none");
      }
      ASSERT_TRUE(r.ratio.has_value());
      EXPECT_GT(*r.ratio, 0.0);
      EXPECT_FALSE(r.reference.empty());
      ++checked;
    }
  }
  EXPECT_GE(checked, 2u * 8u);  // at least the transient competitors ran
}

TEST(BenchHarness, MixAndPrefilledWorkloadsCountEveryOperation) {
  for (Workload w : {Workload::kMix, Workload::kPrefilled}) {
    Experiment e = tiny(Structure::kQueue, {"transient-ms", "mutex-std"}, scaled(400));
    e.workload = w;
    e.prefill = 50;
    const auto records = run_experiment(e);
    for (const Record& r : records) {
      EXPECT_TRUE(r.error.empty()) << r.error;
      EXPECT_EQ(r.ops_total, e.ops_per_thread * static_cast<std::uint64_t>(r.threads));
      EXPECT_EQ(r.prefill, 50u);
      // Prefilled pairs never find the queue empty.
      if (w == Workload::kPrefilled) {
        EXPECT_EQ(r.empty_removes, 0u) << r.technique;
      }
    }
  }
}

TEST(BenchHarness, DurationModeStopsAndCounts) {
  Experiment e = tiny(Structure::kStack, {"transient-treiber"}, 0);
  e.duration_s = 0.02;
  const auto records = run_experiment(e);
  for (const Record& r : records) {
    EXPECT_TRUE(r.error.empty()) << r.error;
    EXPECT_GT(r.ops_total, 0u);
    EXPECT_GE(r.seconds_total, 0.02);
    EXPECT_LT(r.seconds_total, 5.0);  // it stopped (generous bound for a loaded machine)
  }
}

TEST(BenchHarness, RejectsInconsistentExperiments) {
  Experiment e = tiny(Structure::kQueue, {"transient-ms"}, 10);
  e.duration_s = 1.0;  // both ops and duration
  EXPECT_THROW(run_experiment(e), std::invalid_argument);
  e = tiny(Structure::kQueue, {"no-such-technique"}, 10);
  EXPECT_THROW(run_experiment(e), std::invalid_argument);
  e = tiny(Structure::kQueue, {"transient-ms"}, 10);
  e.workload = Workload::kMultiply;
  EXPECT_THROW(run_experiment(e), std::invalid_argument);
  EXPECT_FALSE(check_workload(Structure::kRegister, Workload::kPairs).empty());
  EXPECT_TRUE(check_workload(Structure::kPriorityQueue, Workload::kHeapPairs).empty());
}

// A technique whose instance fails in one worker must surface the error,
// not hang the other workers at a barrier.
class FailingInstance final : public Instance {
 public:
  explicit FailingInstance(int where) : Instance(Structure::kQueue), where_(where) {}
  void thread_init(int tid) override {
    if (where_ == 0 && tid == 1) throw std::runtime_error("init failed");
  }
  op::Response apply(int tid, std::uint64_t seq, const op::Op& o) override {
    if (o.kind == op::kEnqueue && where_ == 1 && tid == 1 && seq > 5) throw std::runtime_error("insert failed");
    return op::Response::none();
  }

 private:
  int where_;
};

TEST(BenchHarness, WorkerFailuresAreReportedWithoutHanging) {
  for (int where : {0, 1}) {
    Technique t = test_technique("failing", Structure::kQueue, false,
                [where](const RunParams&, pmem::Pool*) { return std::make_unique<FailingInstance>(where); });
    t.needs_pool = false;
    Experiment e = tiny(Structure::kQueue, {}, 100);
    EXPECT_THROW(run_rep(t, e, 2, 1), std::runtime_error) << where;
  }
  Technique bad = test_technique("bad", Structure::kQueue, false,
                [](const RunParams&, pmem::Pool*) -> std::unique_ptr<Instance> { return nullptr; });
  bad.needs_pool = false;
  EXPECT_THROW(run_rep(bad, tiny(Structure::kQueue, {}, 10), 1, 1), std::runtime_error);
}

Record fake(const std::string& tech, bool persistent, int threads, double mops, bool ferrite = false) {
  Record r;
  r.technique = tech;
  r.persistent = persistent;
  r.ferrite = ferrite;
  r.threads = threads;
  r.mops_median = mops;
  return r;
}

TEST(BenchHarness, ReferenceIsBestPersistentCompetitorElseFirst) {
  // Ferrite's own technique is never the reference, whatever its name.
  std::vector<Record> rs = {fake("queue-a", true, 1, 10, true), fake("queue-a", true, 2, 12, true),
                            fake("fhmp", true, 1, 3),      fake("fhmp", true, 2, 4),
                            fake("pmdk-tx", true, 1, 1),   fake("pmdk-tx", true, 2, 1),
                            fake("transient-ms", false, 1, 50), fake("transient-ms", false, 2, 60)};
  EXPECT_EQ(choose_reference(rs, ""), "fhmp");
  EXPECT_EQ(choose_reference(rs, "pmdk-tx"), "pmdk-tx");
  EXPECT_EQ(choose_reference(rs, "absent"), "fhmp");  // falls back
  assign_ratios(rs, "");
  ASSERT_TRUE(rs[1].ratio.has_value());
  EXPECT_DOUBLE_EQ(*rs[1].ratio, 3.0);  // 12 / 4 at 2 threads
  EXPECT_DOUBLE_EQ(*rs[2].ratio, 1.0);
  std::vector<Record> only_transient = {fake("mutex-std", false, 1, 2), fake("transient-ms", false, 1, 4)};
  EXPECT_EQ(choose_reference(only_transient, ""), "mutex-std");
  rs[3].error = "boom";
  assign_ratios(rs, "");
  EXPECT_FALSE(rs[3].ratio.has_value());
  EXPECT_FALSE(rs[1].ratio.has_value());  // its reference point failed
}

TEST(BenchHarness, JsonAndCsvCarryTheSchema) {
  const auto records = run_experiment(tiny(Structure::kQueue, {"transient-ms", "mutex-std"}, scaled(100)));
  const Machine m = machine_info();
  EXPECT_FALSE(m.cpu_model.empty());
  EXPECT_GT(m.cores, 0);
  EXPECT_FALSE(m.git_commit.empty());
  const auto parsed = nlohmann::json::parse(to_json(records, m).dump());
  ASSERT_TRUE(parsed.is_array());
  ASSERT_EQ(parsed.size(), records.size());
  for (const auto& j : parsed) {
    for (const char* f : {"structure", "technique", "backend", "workload", "media", "reference", "experiment"})
      EXPECT_TRUE(j.at(f).is_string()) << f;
    for (const char* f : {"threads", "ops_total", "reps"}) EXPECT_TRUE(j.at(f).is_number_integer()) << f;
    for (const char* f : {"mops_median", "mops_min", "mops_max", "pwb_per_op", "pfence_per_op", "psync_per_op",
                          "combining_degree", "ratio"}) {
      EXPECT_TRUE(j.at(f).is_number()) << f;
      EXPECT_GE(j.at(f).get<double>(), 0.0) << f;
    }
    EXPECT_TRUE(j.at("persistent").is_boolean());
    EXPECT_TRUE(j.at("ferrite").is_boolean());
    EXPECT_TRUE(j.at("ablation").is_boolean());
    EXPECT_EQ(j.at("family").get<std::string>(), "transient");
    EXPECT_TRUE(j.at("hit_rate").is_null());  // not a keyed workload
    EXPECT_EQ(j.at("mix").get<std::string>(), "");
    EXPECT_TRUE(j.at("error").is_null());
    EXPECT_TRUE(j.at("verbs_per_op").is_object());
    const auto& mj = j.at("machine");
    for (const char* f : {"cpu_model", "flush", "compiler", "build_type", "git_commit", "timestamp_utc"})
      EXPECT_TRUE(mj.at(f).is_string()) << f;
    EXPECT_TRUE(mj.at("cores").is_number_integer());
  }
  const std::string csv = to_csv(records, m);
  std::size_t lines = 0;
  for (char c : csv) lines += c == '\n';
  EXPECT_EQ(lines, records.size() + 1);
  EXPECT_EQ(csv.rfind("experiment,structure,technique,", 0), 0u);
  const std::string table = format_table(records);
  EXPECT_NE(table.find("transient-ms"), std::string::npos);
  EXPECT_NE(table.find("Mops/s"), std::string::npos);
}

TEST(BenchHarness, PlansCoverThePaper) {
  const auto quick = quick_plan();
  std::set<std::string> structures;
  for (const auto& e : quick) {
    structures.insert(structure_name(e.structure));
    EXPECT_EQ(e.threads, (std::vector<int>{1, 2}));
    for (const auto& t : e.techniques) {
      const Technique* tech = find_technique(e.structure, t);
      ASSERT_NE(tech, nullptr) << t;
      EXPECT_FALSE(tech->ablation) << t << ": the quick plan runs main techniques only";
    }
  }
  EXPECT_EQ(structures, (std::set<std::string>{"atomic-float", "stack", "queue", "heap"}));
  std::set<std::string> labels, backends;
  for (const auto& e : full_plan()) {
    labels.insert(e.label);
    backends.insert(e.backend.to_string());
  }
  EXPECT_TRUE(labels.count("fig1-2") && labels.count("fig3") && labels.count("fig4-5") && labels.count("fig6") &&
              labels.count("fig7a") && labels.count("fig7b"));
  EXPECT_TRUE(backends.count("off") && backends.count("nosync"));
}

TEST(BenchHarness, PlotsAreWrittenWhenMatplotlibIsAvailable) {
  const auto records = run_experiment(tiny(Structure::kStack, {"transient-treiber", "mutex-std"}, scaled(100)));
  const auto dir = std::filesystem::temp_directory_path() / ("ferrite-plot-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto json_path = (dir / "bench.json").string();
  {
    std::ofstream out(json_path);
    out << to_json(records, machine_info()).dump();
  }
  std::string msg;
  const bool ok = make_plots(json_path, dir.string(), &msg);
  if (!ok && msg.find("no python3 with matplotlib") != std::string::npos) {
    std::filesystem::remove_all(dir);
    GTEST_SKIP() << msg;
  }
  EXPECT_TRUE(ok) << msg;
  EXPECT_TRUE(std::filesystem::exists(dir / "test-stack-pairs-hardware-throughput.png")) << msg;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ferrite::bench

namespace ferrite::bench {
namespace {

// A minimal "durable" counter living in the pool: insert writes a word and
// persists it (1 pwb, 1 pfence, 1 psync); remove issues nothing. Pairs must
// therefore report exactly 0.5 pwb per operation.
class PoolCounter final : public Instance {
 public:
  PoolCounter(const RunParams& p, pmem::Pool* pool) : Instance(Structure::kQueue) {
    if (pool == nullptr) throw std::logic_error("no pool");
    slots_ = static_cast<std::int64_t*>(pool->heap().alloc(64 * static_cast<std::size_t>(p.max_threads), 0));
  }
  op::Response apply(int tid, std::uint64_t, const op::Op& o) override {
    if (o.kind != op::kEnqueue) return op::Response::none();
    std::int64_t* w = slots_ + 8 * tid;  // one line per thread
    *w = o.arg;
    persist::pwb(w);
    persist::pfence();
    persist::psync();
    return op::Response::ack();
  }

 private:
  std::int64_t* slots_;
};

std::size_t bench_pool_files(const std::string& dir) {
  std::size_t n = 0;
  const std::string prefix = "ferrite-bench-" + std::to_string(::getpid()) + "-";
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) ++n;
  return n;
}

TEST(BenchHarness, PoolTechniquesGetAFreshPoolAndExactVerbCounts) {
  Technique t = test_technique("pool-counter", Structure::kQueue, true,
              [](const RunParams& p, pmem::Pool* pool) { return std::make_unique<PoolCounter>(p, pool); });
  t.pool_size = 16u << 20;
  for (const char* backend : {"hardware", "off"}) {
    Experiment e = tiny(Structure::kQueue, {}, 100);
    ASSERT_TRUE(persist::parse_backend(backend, &e.backend));
    const std::size_t before = bench_pool_files(e.pool_dir);
    const RepResult r = run_rep(t, e, 2, 1);
    EXPECT_EQ(r.ops, 2u * 100u);
    EXPECT_EQ(r.empty_removes, 100u);  // every remove "fails"
    // Counted over the timed region only (pool creation is excluded).
    EXPECT_EQ(r.counters[persist::Verb::kPwb], 100u) << backend;
    EXPECT_EQ(r.counters[persist::Verb::kPfence], 100u) << backend;
    EXPECT_EQ(r.counters[persist::Verb::kPsync], 100u) << backend;
    EXPECT_NE(r.media, "none");
    EXPECT_EQ(bench_pool_files(e.pool_dir), before) << "the pool file was not deleted";
  }
}

}  // namespace
}  // namespace ferrite::bench

// ------------------------------------------------------------------ keyed workloads

namespace ferrite::bench {
namespace {

Experiment keyed(Structure s, std::uint64_t ops) {
  Experiment e = tiny(s, technique_names(s, true), ops);
  e.workload = Workload::kKeyMix;
  e.key_range = 1000;
  return e;
}

// --sync-every (nbMontage Figures 5 and 6): a buffered technique's workers
// each sync after every N of their operations, each sync timed and not
// counted as an operation; a technique durable at each operation is sent
// none; the records, the JSON, the CSV and the table carry the latencies.
TEST(BenchHarness, SyncEveryTimesTheSyncsOfBufferedTechniquesOnly) {
  const Technique* montage = find_technique(Structure::kMap, "montage-hashmap");
  ASSERT_NE(montage, nullptr);
  EXPECT_TRUE(montage->buffered);
  const Technique* split = find_technique(Structure::kMap, "montage-splitorder");
  ASSERT_NE(split, nullptr);
  EXPECT_TRUE(split->buffered);
  const Technique* plain = find_technique(Structure::kMap, "mutex-std");
  ASSERT_NE(plain, nullptr);
  EXPECT_FALSE(plain->buffered);
  const std::uint64_t ops = 400;  // per thread; a multiple of the period
  Experiment e = keyed(Structure::kMap, ops);
  e.techniques = {"montage-hashmap", "montage-splitorder", "mutex-std"};
  e.sync_every = 10;
  e.reps = 2;
  const auto records = run_experiment(e);
  ASSERT_EQ(records.size(), 6u);
  for (const Record& r : records) {
    SCOPED_TRACE(r.technique + " threads=" + std::to_string(r.threads));
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(r.sync_every, 10u);
    EXPECT_EQ(r.ops_total, ops * static_cast<std::uint64_t>(r.threads) * 2) << "syncs are not operations";
    if (r.technique == "mutex-std") {
      EXPECT_EQ(r.syncs, 0u);
      EXPECT_FALSE(r.sync_us_median.has_value());
      continue;
    }
    EXPECT_EQ(r.syncs, r.ops_total / 10);
    ASSERT_TRUE(r.sync_us_mean && r.sync_us_median && r.sync_us_p99 && r.sync_us_max);
    EXPECT_GT(*r.sync_us_median, 0.0);
    EXPECT_LE(*r.sync_us_median, *r.sync_us_p99);
    EXPECT_LE(*r.sync_us_p99, *r.sync_us_max);
    EXPECT_LE(*r.sync_us_mean, *r.sync_us_max);
    // Every sync advances the epoch twice: two advances' psyncs at least.
    EXPECT_GE(r.psync_per_op, 2.0 / 10);
  }
  const Machine m = machine_info();
  const auto parsed = nlohmann::json::parse(to_json(records, m).dump());
  EXPECT_EQ(parsed[0].at("sync_every").get<std::uint64_t>(), 10u);
  EXPECT_TRUE(parsed[0].at("sync_us_median").is_number());
  EXPECT_TRUE(parsed[5].at("sync_us_median").is_null());
  const std::string csv = to_csv(records, m);
  EXPECT_NE(csv.substr(0, csv.find('\n')).find(",sync_every,syncs,sync_us_mean,sync_us_median,sync_us_p99,sync_us_max"),
            std::string::npos);
  const std::string table = format_table(records);
  EXPECT_NE(table.find("sync every 10 ops/thread"), std::string::npos) << table;
  EXPECT_NE(table.find("sync-us"), std::string::npos) << table;
  // Only the keyed workload has syncs.
  Experiment q = tiny(Structure::kQueue, {"transient-ms"}, 10);
  q.sync_every = 4;
  EXPECT_FALSE(check_experiment(q).empty());
}

TEST(BenchHarness, EveryTechniqueHasItsRegistrationFields) {
  for (const auto& t : techniques()) {
    EXPECT_FALSE(t.family.empty()) << structure_name(t.structure) << "/" << t.name;
    if (t.ferrite) {
      EXPECT_TRUE(t.persistent) << t.name;
    }
    // Only the logging library's swap and TPC-C drive the map vocabulary
    // without claiming a map's semantics.
    const bool own = t.name.rfind("logging-swap-", 0) == 0 || t.name.rfind("logging-tpcc-", 0) == 0;
    EXPECT_EQ(t.map_semantics, !own) << structure_name(t.structure) << "/" << t.name;
  }
  EXPECT_NE(find_technique(Structure::kMap, "logging-swap-atlas"), nullptr);
  EXPECT_NE(find_technique(Structure::kMap, "logging-tpcc-sfr"), nullptr);
  EXPECT_NE(find_technique(Structure::kSet, "mutex-std"), nullptr);
  EXPECT_NE(find_technique(Structure::kMap, "mutex-std"), nullptr);
#ifdef FERRITE_HAVE_LIBCDS
  EXPECT_NE(find_technique(Structure::kSet, "libcds-michael"), nullptr);
  EXPECT_NE(find_technique(Structure::kMap, "libcds-michael"), nullptr);
#endif
#ifdef FERRITE_HAVE_TBB
  EXPECT_NE(find_technique(Structure::kMap, "tbb-hashmap"), nullptr);
#endif
}

// Every set and map technique on the default 50:25:25 mix: operations add
// up, the prefill reached half the key range, rates are rates, and the
// number of keys present at the end is possible.
TEST(BenchHarness, SetAndMapWorkloadsAreConsistent) {
  const std::uint64_t ops = scaled(4000);
  for (Structure s : {Structure::kSet, Structure::kMap}) {
    Experiment e = keyed(s, ops);
    ASSERT_FALSE(e.techniques.empty()) << structure_name(s);
    EXPECT_EQ(default_workload(s), Workload::kKeyMix);
    EXPECT_EQ(effective_prefill(e), 500u);
    const auto records = run_experiment(e);
    ASSERT_EQ(records.size(), e.techniques.size() * 2);
    for (const Record& r : records) {
      SCOPED_TRACE(r.structure + "/" + r.technique + " threads=" + std::to_string(r.threads));
      ASSERT_TRUE(r.error.empty()) << r.error;
      EXPECT_EQ(r.workload, "key-mix");
      EXPECT_EQ(r.mix, "50:25:25");
      EXPECT_EQ(r.key_range, 1000u);
      EXPECT_EQ(r.prefill, 500u);
      EXPECT_EQ(r.ops_total, ops * static_cast<std::uint64_t>(r.threads));
      EXPECT_EQ(r.lookups + r.inserts + r.removes, r.ops_total);
      EXPECT_LE(r.lookup_hits, r.lookups);
      EXPECT_LE(r.keys_added, r.inserts);
      EXPECT_LE(r.empty_removes, r.removes);
      ASSERT_TRUE(r.hit_rate.has_value());
      EXPECT_GE(*r.hit_rate, 0.0);
      EXPECT_LE(*r.hit_rate, 1.0);
      const auto t = std::find_if(techniques().begin(), techniques().end(), [&](const Technique& x) {
        return x.name == r.technique && structure_name(x.structure) == r.structure;
      });
      ASSERT_NE(t, techniques().end());
      EXPECT_EQ(r.map_semantics, t->map_semantics);
      if (t->map_semantics) {
        if (r.lookups >= 400) {  // about half the keys are present throughout
          EXPECT_GT(*r.hit_rate, 0.2);
          EXPECT_LT(*r.hit_rate, 0.8);
        }
        // Keys present at the end of the (single) rep: prefill + added - removed.
        const auto removed = static_cast<std::int64_t>(r.removes - r.empty_removes);
        const auto present = static_cast<std::int64_t>(r.prefill + r.keys_added) - removed;
        EXPECT_GE(present, 0);
        EXPECT_LE(present, 1000);
      } else {
        // Timed through the map vocabulary, answering with its own semantics
        // (the logging array swap, TPC-C New-Order): only the logging
        // library's workloads say so.
        EXPECT_EQ(t->family, "logging");
        EXPECT_EQ(s, Structure::kMap);
      }
      // Transient maps write nothing back; durable ones on a Ferrite pool
      // (Mirror, nbMontage, NVTraverse, ...) write back some of their
      // updates through the counted verbs. A durable one on a pool of its
      // own (PMDK's) flushes with its library's instructions, which no
      // Ferrite counter sees: it must count nothing.
      if (r.persistent && t->needs_pool) EXPECT_GT(r.pwb_per_op, 0.0);
      else EXPECT_EQ(r.pwb_per_op, 0.0);
      EXPECT_GT(r.mops_median, 0.0);
      ASSERT_TRUE(r.ratio.has_value());
    }
    EXPECT_NE(format_table(records).find("hit%"), std::string::npos);
    const auto j = nlohmann::json::parse(to_json(records, machine_info()).dump());
    for (const auto& rec : j) {
      EXPECT_TRUE(rec.at("hit_rate").is_number());
      EXPECT_EQ(rec.at("key_range").get<std::uint64_t>(), 1000u);
      EXPECT_EQ(rec.at("mix").get<std::string>(), "50:25:25");
    }
  }
}

// Exact outcomes: with every key present, every lookup hits; with none,
// every lookup misses and every remove fails.
TEST(BenchHarness, KeyedPrefillIsReachedExactly) {
  for (Structure s : {Structure::kSet, Structure::kMap}) {
    for (const auto& name : technique_names(s, true)) {
      SCOPED_TRACE(structure_name(s) + "/" + name);
      const Technique* t = find_technique(s, name);
      Experiment e = keyed(s, scaled(500));
      e.key_range = 300;
      e.prefill = 300;
      e.mix = KeyMix{100, 0, 0};
      RepResult full = run_rep(*t, e, 2, 1);
      EXPECT_EQ(full.prefill_added, 300u);
      EXPECT_EQ(full.lookups, full.ops);
      EXPECT_EQ(full.lookup_hits, full.lookups);
      // An empty structure is a map's notion: the logging array swap and
      // TPC-C (map_semantics false) answer every get.
      if (!t->map_semantics) continue;
      e.prefill = 0;
      e.mix = KeyMix{50, 0, 50};
      RepResult empty = run_rep(*t, e, 2, 1);
      EXPECT_EQ(empty.prefill_added, 0u);
      EXPECT_EQ(empty.lookup_hits, 0u);
      EXPECT_EQ(empty.empty_removes, empty.removes);
      EXPECT_EQ(empty.lookups + empty.removes, empty.ops);
    }
  }
}

// A set that loses inserts cannot reach its prefill: the rep fails.
class LossySet final : public Instance {
 public:
  LossySet() : Instance(Structure::kSet) {}
  op::Response apply(int, std::uint64_t seq, const op::Op&) override { return op::Response::boolean(seq % 2 == 0); }
};

TEST(BenchHarness, KeyedPrefillShortfallFails) {
  Technique t = test_technique("lossy", Structure::kSet, false,
              [](const RunParams&, pmem::Pool*) { return std::make_unique<LossySet>(); });
  t.needs_pool = false;
  Experiment e = keyed(Structure::kSet, 10);
  try {
    run_rep(t, e, 1, 1);
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& ex) {
    EXPECT_NE(std::string(ex.what()).find("250 of 500"), std::string::npos) << ex.what();
  }
}

TEST(BenchHarness, BadKeyMixesAreRefused) {
  KeyMix m;
  const std::string why = parse_key_mix("50:50:50", &m);
  EXPECT_NE(why.find("sum to 100"), std::string::npos) << why;
  EXPECT_EQ(m, KeyMix{});  // untouched
  for (const char* bad : {"", "50:50", "50:25:25:0", "a:b:c", "50::50", "-10:60:50", "101:0:0", "50:25:24"})
    EXPECT_FALSE(parse_key_mix(bad, &m).empty()) << bad;
  EXPECT_TRUE(parse_key_mix("90:5:5", &m).empty());
  EXPECT_EQ(m, (KeyMix{90, 5, 5}));
  EXPECT_EQ(m.to_string(), "90:5:5");
  EXPECT_TRUE(key_mix_from_read_pct(80, &m).empty());
  EXPECT_EQ(m, (KeyMix{80, 10, 10}));
  EXPECT_TRUE(key_mix_from_read_pct(51, &m).empty());
  EXPECT_EQ(m, (KeyMix{51, 25, 24}));
  EXPECT_FALSE(key_mix_from_read_pct(101, &m).empty());

  Experiment e = keyed(Structure::kSet, 10);
  e.mix = KeyMix{50, 50, 50};
  try {
    run_experiment(e);
    ADD_FAILURE() << "50:50:50 accepted";
  } catch (const std::invalid_argument& ex) {
    EXPECT_NE(std::string(ex.what()).find("summing to 100"), std::string::npos) << ex.what();
  }
  e = keyed(Structure::kSet, 10);
  e.prefill = 1001;  // more distinct keys than the range holds
  EXPECT_FALSE(check_experiment(e).empty());
  EXPECT_THROW(run_experiment(e), std::invalid_argument);
  e = keyed(Structure::kMap, 10);
  e.key_range = 0;
  EXPECT_FALSE(check_experiment(e).empty());
  EXPECT_FALSE(check_workload(Structure::kSet, Workload::kPairs).empty());
  EXPECT_FALSE(check_workload(Structure::kQueue, Workload::kKeyMix).empty());
  EXPECT_TRUE(check_workload(Structure::kMap, Workload::kKeyMix).empty());
}

}  // namespace
}  // namespace ferrite::bench
