// `ferrite trace` and `ferrite sim` — persistence event traces of the
// logging workloads, and the timing model that replays them (model/trace.h,
// model/timing.h, docs/timing.md).
//
//   ferrite trace --list
//   ferrite trace WORKLOAD [--instrumentation x86|hops|hops+|strand]
//                 [--threads N] [--ops N] [--seed S] [--max-gap CYCLES]
//                 [--ops-per-region K] [--key-range N] -o FILE
//   ferrite sim TRACE [--design D]... [--config k=v]... [--json]
//   ferrite sim --paper strandweaver|hops [--plot DIR] [--threads N] [--ops N] [--json]
//
// A WORKLOAD is a logging workload registered with the crash campaigns
// (adapters/logging_workloads.cc, logging_store_models.cc): <language>-<structure>,
// e.g. txn-queue; its x86 instrumentation is subject logging-<workload>
// (variant correct), the others logging-store-<workload>
// (correct-<instrumentation>). A workload registered there is traceable here.
// Exit: 0 success, 2 usage or a file error.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "adapters/logging_options.h"
#include "ferrite/cli.h"
#include "harness.h"
#include "ferrite/crash/subject.h"
#include "ferrite/model/timing.h"
#include "ferrite/model/trace.h"
#include "ferrite/pmem/pool.h"

namespace {

namespace fm = ferrite::model;
namespace fc = ferrite::crash;
using Json = nlohmann::json;

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "ferrite: %s\n", msg.c_str());
  throw ferrite::cli::Exit{2};
}

// ------------------------------------------------------------- workloads
const char* const kInstrumentations[] = {"x86", "hops", "hops+", "strand"};

// (structure, variant) of the crash subject that runs WORKLOAD with
// `instr`.
std::pair<std::string, std::string> subject_of(const std::string& workload, const std::string& instr) {
  if (instr == "x86") return {"logging-" + workload, "correct"};
  return {"logging-store-" + workload, "correct-" + instr};
}

// Every logging workload with an x86 subject: <language>-<structure>.
std::vector<std::string> workloads() {
  std::set<std::string> out;
  const std::string p = "logging-", store = "logging-store-";
  for (const auto& s : fc::subjects())
    if (s.family == "logging" && s.variant == "correct" && s.structure.rfind(p, 0) == 0 &&
        s.structure.rfind(store, 0) != 0)
      out.insert(s.structure.substr(p.size()));
  return {out.begin(), out.end()};
}

// --key-range's bound: the largest workload (the N-Store table) must fit
// the 512 MiB trace pool.
constexpr std::uint64_t kMaxKeyRange = std::uint64_t{1} << 20;
void check_key_range(const char* cmd, std::uint64_t n) {
  if (n > kMaxKeyRange)
    usage_error(std::string(cmd) + ": --key-range must be at most " + std::to_string(kMaxKeyRange) +
                " (the trace pool is 512 MiB)");
}

struct TraceParams {
  std::string workload, instrumentation = "x86";
  int threads = 8;
  std::uint64_t ops = 50000;  // in total, split over the threads
  std::uint64_t seed = 1;
  std::uint32_t max_gap = fm::RecordOptions{}.max_gap;
  // Operations per failure-atomic region (> 1: logging::Group through the
  // subject's apply_group; the StrandWeaver paper's Figure 10).
  int ops_per_region = 1;
  // > 0: the structure and its keys sized as a benchmark's (keys, array
  // elements, TPC-C items in [1, key_range]; crash::Subject::size_for_bench);
  // 0: the crash campaigns' small sizes (a 16-element array, 16 map keys).
  std::uint64_t key_range = 0;
};

// --commit-batch of trace and sim --paper (adapters/logging_options.h): the
// option, range-checked by CLI11, stored in *n.
void add_commit_batch(CLI::App* sub, std::size_t* n, const std::string& prefix) {
  sub->add_option("--commit-batch", *n, prefix + ferrite::adapters::kCommitBatchHelp)
      ->check(CLI::Range(std::size_t{1}, ferrite::adapters::kMaxCommitBatch));
}
// relaxed: set before any workload is built
void set_commit_batch(std::size_t n) { ferrite::adapters::logging_commit_batch().store(n, std::memory_order_relaxed); }

// Runs the workload under the trace backend on a fresh pool in /dev/shm.
fm::Trace record(const TraceParams& p) {
  const auto [structure, variant] = subject_of(p.workload, p.instrumentation);
  const fc::SubjectInfo* info = fc::find_subject(structure, variant);
  if (info == nullptr)
    usage_error("no logging workload '" + p.workload + "' with instrumentation '" + p.instrumentation +
                "' (crash subject " + structure + "/" + variant + "); see `ferrite trace --list`");
  const std::string path = "/dev/shm/ferrite-trace-" + std::to_string(::getpid()) + ".pool";
  ferrite::pmem::PoolOptions po;
  po.backend.kind = ferrite::persist::BackendConfig::Kind::kOff;
  po.reserve = false;  // 512 MiB that a recording mostly never touches: reserving it was most of a short run's time
  fm::Trace t;
  {
    auto pool = ferrite::pmem::Pool::create(path, std::size_t{512} << 20, po);
    std::filesystem::remove(path);  // the mapping stays; nothing to clean up
    auto subject = info->make();
    if (p.ops_per_region > 1 && !subject->groups())
      usage_error("trace: workload '" + p.workload + "' cannot run several operations per region");
    if (p.key_range > 0 && !subject->size_for_bench(p.key_range))
      usage_error("trace: workload '" + p.workload + "' cannot be sized by --key-range");
    subject->create(*pool, p.threads);
    fm::RecordOptions ro;
    ro.max_gap = p.max_gap;
    ro.max_threads = p.threads;
    fm::start_recording(ro);
    std::vector<std::thread> ts;
    std::vector<std::string> errors(static_cast<std::size_t>(p.threads));
    for (int tid = 0; tid < p.threads; ++tid)
      ts.emplace_back([&, tid] {
        fm::set_thread(tid);
        std::uint64_t rng = p.seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(tid) * 7919 + 1;
        const std::uint64_t n = p.ops / static_cast<std::uint64_t>(p.threads) +
                                (static_cast<std::uint64_t>(tid) < p.ops % static_cast<std::uint64_t>(p.threads));
        try {
          const auto k = static_cast<std::uint64_t>(std::max(p.ops_per_region, 1));
          std::vector<ferrite::crash::Op> group;
          for (std::uint64_t i = 0; i < n;) {
            if (k == 1) {
              const auto o = subject->next_op(tid, rng);
              subject->apply(tid, i, o);
              fm::note_op_end();
              ++i;
              continue;
            }
            group.clear();
            for (std::uint64_t j = 0; j < k && i + j < n; ++j) group.push_back(subject->next_op(tid, rng));
            subject->apply_group(tid, i, group);
            for (std::size_t j = 0; j < group.size(); ++j) fm::note_op_end();
            i += group.size();
          }
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(tid)] = e.what();
        }
      });
    for (auto& th : ts) th.join();
    t = fm::stop_recording();
    for (const auto& e : errors)
      if (!e.empty()) usage_error("trace: the workload failed: " + e);
  }
  t.workload = p.workload;
  t.instrumentation = p.instrumentation;
  return t;
}

void setup_trace(CLI::App* sub) {
  struct Opts {
    TraceParams p;
    std::string out;
    bool list = false;
    std::size_t commit_batch = 1;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("workload", o->p.workload, "Logging workload, <language>-<structure> (see --list)");
  sub->add_flag("--list", o->list, "List the traceable workloads");
  sub->add_option("--instrumentation,-i", o->p.instrumentation, "x86 | hops | hops+ | strand (default x86)");
  sub->add_option("--threads", o->p.threads, "Threads (default 8)");
  sub->add_option("--ops", o->p.ops, "Operations in total (default 50000)");
  sub->add_option("--seed", o->p.seed, "Workload seed (default 1)");
  sub->add_option("--max-gap", o->p.max_gap, "Clamp each compute gap at this many cycles (default 2000)");
  sub->add_option("--key-range", o->p.key_range,
                  "Size the workload as a benchmark: keys, array elements and TPC-C items drawn from [1, N] "
                  "(default 0: the crash campaigns' sizes, a 16-element array and 16 map keys, where every "
                  "operation contends with every other)");
  sub->add_option("--ops-per-region", o->p.ops_per_region,
                  "Operations per failure-atomic region (default 1; > 1: queue, map and swap workloads)");
  add_commit_batch(sub, &o->commit_batch, "");
  sub->add_option("-o,--output", o->out, "Trace file to write");
  sub->footer("The trace backend records annotated stores, write-backs, fences, strand verbs and lock hand-offs "
              "per thread with the compute gap between them (docs/timing.md); `ferrite sim` replays it.");
  sub->callback([o] {
    if (o->list) {
      for (const auto& w : workloads()) std::printf("%s\n", w.c_str());
      return;
    }
    if (o->p.workload.empty() || o->out.empty()) usage_error("trace: WORKLOAD and -o FILE are required");
    if (o->p.threads < 1 || o->p.threads > 64) usage_error("trace: --threads must be in [1, 64]");
    if (o->p.ops_per_region < 1 || o->p.ops_per_region > 16) usage_error("trace: --ops-per-region must be in [1, 16]");
    check_key_range("trace", o->p.key_range);
    set_commit_batch(o->commit_batch);
    const auto t0 = std::chrono::steady_clock::now();
    const fm::Trace t = record(o->p);
    try {
      fm::write_trace(o->out, t);
    } catch (const std::exception& e) {
      usage_error(e.what());
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s: %s/%s, %zu threads, %llu ops, %llu events (%llu gaps clamped at %u cycles), %.2f s\n",
                o->out.c_str(), t.workload.c_str(), t.instrumentation.c_str(), t.threads.size(),
                static_cast<unsigned long long>(t.ops), static_cast<unsigned long long>(t.events()),
                static_cast<unsigned long long>(t.clamped_gaps), t.max_gap, s);
  });
}

// -------------------------------------------------------------------- sim
Json result_json(const fm::Result& r, const fm::Config& c) {
  Json j;
  j["design"] = fm::design_name(r.design);
  j["cycles"] = r.cycles;
  j["ops"] = r.ops;
  j["events"] = r.events;
  j["writebacks"] = r.writebacks;
  j["evictions"] = r.evictions;
  j["ordered_evictions"] = r.ordered_evictions;
  j["snoop_waits"] = r.snoop_waits;
  j["throughput_ops_per_s"] = r.throughput(c.freq_ghz);
  Json st;
  for (int s = 0; s < fm::kStalls; ++s) st[fm::stall_name(static_cast<fm::Stall>(s))] = r.stalls[static_cast<std::size_t>(s)];
  j["stalls"] = st;
  j["stall_total"] = r.stall_total();
  return j;
}

void parse_configs(const std::vector<std::string>& kvs, fm::Config* c) {
  for (const auto& kv : kvs) {
    const auto eq = kv.find('=');
    char* end = nullptr;
    const double v = eq == std::string::npos ? 0 : std::strtod(kv.c_str() + eq + 1, &end);
    if (eq == std::string::npos || end == nullptr || *end != '\0' || !c->set(kv.substr(0, eq), v)) {
      std::string names;
      for (const auto& n : fm::Config::names()) names += " " + n;
      usage_error("sim: bad --config '" + kv + "' (name=value; names:" + names + ")");
    }
  }
}

// ------------------------------------------------------- the evaluations
struct PaperOpts {
  int threads = 8;
  std::uint64_t ops = 50000;
  std::string plot;
  bool json = false;
  std::size_t commit_batch = 1;
  // TraceParams::key_range of every recording: the papers ran their
  // workloads at benchmark sizes, not at the campaigns' (docs/results.md,
  // "Bench-sized traces"); 0 = the campaigns' sizes (claims measured
  // before stop 36).
  std::uint64_t key_range = 65536;
  // Recordings per workload for the directions (docs/timing.md, "Several
  // recordings per workload"): recording 0 gives every figure;
  // recordings 1..N-1 (workload seeds 2..N) only the ratios the issue's
  // directions compare, since two recordings of one workload differ by up
  // to a few percent in the ratios (compute gaps, lock order, helped
  // prunes) — as much as the designs differ on some workloads.
  int recordings = 5;
};

// One trace per (workload, instrumentation), recorded once.
class Traces {
 public:
  explicit Traces(const PaperOpts& o) : o_(o) {}
  const fm::Trace& get(const std::string& w, const std::string& instr, int ops_per_region = 1) {
    auto& slot = cache_[{w, instr, ops_per_region}];
    if (!slot) slot = std::make_unique<fm::Trace>(fresh(w, instr, ops_per_region, 1));
    return *slot;
  }
  // Recording `r` >= 1 of (w, instr): workload seed 1 + r, not cached.
  fm::Trace again(const std::string& w, const std::string& instr, int r) {
    return fresh(w, instr, 1, 1 + static_cast<std::uint64_t>(r));
  }
  std::uint64_t events() const { return events_; }

 private:
  fm::Trace fresh(const std::string& w, const std::string& instr, int ops_per_region, std::uint64_t seed) {
    TraceParams p;
    p.workload = w;
    p.instrumentation = instr;
    p.threads = o_.threads;
    p.ops = o_.ops;
    p.seed = seed;
    p.ops_per_region = ops_per_region;
    p.key_range = o_.key_range;
    fm::Trace t = record(p);
    events_ += t.events();
    return t;
  }
  const PaperOpts& o_;
  std::map<std::tuple<std::string, std::string, int>, std::unique_ptr<fm::Trace>> cache_;
  std::uint64_t events_ = 0;
};

// fm::simulate, its time and events added to *sim_s and *sim_events.
fm::Result simulate_timed(const fm::Trace& t, fm::Design d, const fm::Config& c, double* sim_s,
                          std::uint64_t* sim_events) {
  const auto t0 = std::chrono::steady_clock::now();
  fm::Result r = fm::simulate(t, d, c);
  *sim_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  *sim_events += r.events;
  return r;
}
// `instr`: the trace to replay (default: the design's own instrumentation).
fm::Result run(Traces& tr, const std::string& w, fm::Design d, const fm::Config& c, double* sim_s,
               std::uint64_t* sim_events, int ops_per_region = 1, const char* instr = nullptr) {
  const fm::Trace& t = tr.get(w, instr != nullptr ? instr : fm::design_instrumentation(d), ops_per_region);
  return simulate_timed(t, d, c, sim_s, sim_events);
}

// One interleaving per comparison (docs/timing.md, "One recording per
// comparison"): a design's speedup is over x86 replaying the design's own
// recording (model::design_replays: x86 replays every instrumentation's
// trace under persist.h's Intel mapping), so the two runs share the
// recording's lock interleaving, helped prunes and compute gaps, which
// differ between two recordings by more than the effects measured.
class VsX86 {
 public:
  VsX86(Traces& tr, double* sim_s, std::uint64_t* sim_events) : tr_(tr), sim_s_(sim_s), sim_events_(sim_events) {}
  fm::Result design(const std::string& w, fm::Design d, const fm::Config& c, int k = 1) {
    return run(tr_, w, d, c, sim_s_, sim_events_, k);
  }
  // x86 on the recording `d` replays (memoized: the strand designs share one).
  const fm::Result& x86_on(const std::string& w, fm::Design d, const fm::Config& c, int k = 1) {
    const std::string instr = fm::design_instrumentation(d);
    auto& slot = x86_[{w, instr, k, c.op_compute_cycles, c.x86_sync_flush}];
    if (!slot) slot = run(tr_, w, fm::Design::kX86, c, sim_s_, sim_events_, k, instr.c_str());
    return *slot;
  }
  double speedup(const std::string& w, const fm::Result& r, const fm::Config& c, int k = 1) {
    return static_cast<double>(x86_on(w, r.design, c, k).cycles) / static_cast<double>(r.cycles);
  }
  // One figure row: each design's result and speedup (also into *rs, *sp,
  // and, unless null, (*speedups)[design name]); the first design must be x86, whose
  // own recording gives speedup_over_x86_own_recording (the comparison
  // before stop 25).
  template <std::size_t N>
  Json row(const std::string& w, const fm::Design (&designs)[N], const fm::Config& c, std::map<fm::Design, fm::Result>* rs,
           std::map<fm::Design, double>* sp, std::map<std::string, std::vector<double>>* speedups) {
    Json out = Json::array();
    for (fm::Design d : designs) {
      (*rs)[d] = design(w, d, c);
      (*sp)[d] = speedup(w, (*rs)[d], c);
    }
    const double own = static_cast<double>(rs->at(fm::Design::kX86).cycles);
    for (fm::Design d : designs) {
      Json j = result_json((*rs)[d], c);
      j["speedup_over_x86"] = (*sp)[d];
      j["speedup_over_x86_own_recording"] = own / static_cast<double>((*rs)[d].cycles);
      if (speedups != nullptr) (*speedups)[fm::design_name(d)].push_back((*sp)[d]);
      out.push_back(j);
    }
    return out;
  }

 private:
  Traces& tr_;
  double* sim_s_;
  std::uint64_t* sim_events_;
  std::map<std::tuple<std::string, std::string, int, double, double>, std::optional<fm::Result>> x86_;
};

double geomean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(x);
  return v.empty() ? 0 : std::exp(s / static_cast<double>(v.size()));
}
// {name: geometric mean of its values} (e.g. design -> speedups per workload).
template <class K>
Json geomeans(const std::map<K, std::vector<double>>& m) {
  Json j;
  for (const auto& [k, v] : m) j[std::string(k)] = geomean(v);
  return j;
}

// StrandWeaver's per-workload ratios over a set of workloads (all of them,
// or one of §VI's groups), and their averages in the JSON document's keys.
struct SwRatios {
  std::map<std::string, std::vector<double>> speedups;  // design -> over x86 on its recording
  // strandweaver over hops on the strand recording (one recording: T2) and
  // over hops on its own (each over x86 on its recording); cycles over
  // non-atomic(-paper).
  std::vector<double> over_hops, over_hops_own, vs_na, vs_nap;
  // `sw_over_hops_same`: over hops replaying the strand recording.
  void add(const std::map<fm::Design, fm::Result>& rs, const std::map<fm::Design, double>& sp,
           double sw_over_hops_same) {
    using D = fm::Design;
    for (const auto& [d, v] : sp) speedups[fm::design_name(d)].push_back(v);
    const auto sw = static_cast<double>(rs.at(D::kStrandWeaver).cycles);
    over_hops.push_back(sw_over_hops_same);
    over_hops_own.push_back(sp.at(D::kStrandWeaver) / sp.at(D::kHops));
    vs_na.push_back(sw / static_cast<double>(rs.at(D::kNonAtomic).cycles));
    vs_nap.push_back(sw / static_cast<double>(rs.at(D::kNonAtomicPaper).cycles));
  }
  void to_json(Json& j) const {
    j["average_speedup_over_x86"] = geomeans(speedups);
    j["strandweaver_over_hops"] = geomean(over_hops);
    j["strandweaver_over_hops_own_recording"] = geomean(over_hops_own);
    j["workloads_strandweaver_behind_hops"] =
        std::count_if(over_hops.begin(), over_hops.end(), [](double v) { return v < 1.0; });
    j["strandweaver_slowdown_vs_non_atomic"] = geomean(vs_na) - 1.0;
    // Against §VI's NON-ATOMIC as the paper defines it (only the undo
    // entry -> update barriers removed): the comparison T4 quotes.
    j["strandweaver_slowdown_vs_non_atomic_paper"] = geomean(vs_nap) - 1.0;
  }
};

// The ratios the directions compare (strandweaver over hops, hops
// over x86, hops+ over hops, ...) for one workload, one value per
// recording (recording 0 first; --recordings).
// A ratio over its recordings: geometric mean, lowest, highest.
struct Spread {
  double mean, lo, hi;
  explicit Spread(const std::vector<double>& v)
      : mean(geomean(v)), lo(*std::min_element(v.begin(), v.end())), hi(*std::max_element(v.begin(), v.end())) {}
};
double cycles(const fm::Result& r) { return static_cast<double>(r.cycles); }
struct Directions {
  std::map<std::string, std::vector<double>> by_name;
  void add(const std::map<std::string, double>& one) {
    for (const auto& [k, v] : one) by_name[k].push_back(v);
  }
  // {name: {recordings: [...], geomean, min, max}}
  Json to_json() const {
    Json j;
    for (const auto& [k, v] : by_name) {
      const Spread sp(v);
      j[k] = {{"recordings", v}, {"geomean", sp.mean}, {"min", sp.lo}, {"max", sp.hi}};
    }
    return j;
  }
};
// Directions over the workloads: per ratio, the geometric mean of the
// workloads' means over their recordings, and how many workloads are below
// 1 on that mean, in every recording, in at least one.
struct DirectionTotals {
  std::map<std::string, std::vector<double>> mean, lo, hi;
  void add(const Directions& d) {
    for (const auto& [k, v] : d.by_name) {
      const Spread sp(v);
      mean[k].push_back(sp.mean);
      lo[k].push_back(sp.lo);
      hi[k].push_back(sp.hi);
    }
  }
  Json to_json(int recordings) const {
    Json j;
    j["recordings"] = recordings;
    const auto below = [](const std::vector<double>& v) {
      return std::count_if(v.begin(), v.end(), [](double x) { return x < 1.0; });
    };
    for (const auto& [k, v] : mean)
      j[k] = {{"geomean", geomean(v)},
              {"workloads", v.size()},
              {"workloads_below_1_on_average", below(v)},
              {"workloads_below_1_in_every_recording", below(hi.at(k))},
              {"workloads_below_1_in_some_recording", below(lo.at(k))}};
    return j;
  }
};

// StrandWeaver Figures 7-10; HOPS+ Figure 2. Returns the JSON document.
Json paper(const std::string& which, const PaperOpts& o) {
  Traces tr(o);
  double sim_s = 0;
  std::uint64_t sim_events = 0;
  Json doc;
  doc["paper"] = which;
  doc["threads"] = o.threads;
  doc["ops"] = o.ops;
  doc["commit_batch"] = o.commit_batch;
  doc["key_range"] = o.key_range;
  doc["recordings"] = o.recordings;
  const fm::Config base;
  DirectionTotals totals;
  VsX86 vs(tr, &sim_s, &sim_events);
  // The StrandWeaver evaluation of docs/results.md (claims T1-T7) replays
  // every Table II workload under each language: the microbenchmarks
  // (queue, hash map, array swap, RB-tree and TPCC New-Order — §VI: "queue
  // and TPCC are the least write-intensive microbenchmarks") and N-Store.
  // §VI averages them apart ("3.1% slowdown in microbenchmarks and 5.7% in
  // N-Store"), so every average is also reported per group (`groups`).
  // The HOPS+ Figure 2 evaluation (T8-T11) replays the paper's three — a
  // queue, an array (the array swap) and a hash map — under ATLAS.
  // (atlas-handoff, a lock hand-off probe, is in neither.)
  std::vector<std::string> ws;
  for (const auto& w : workloads()) {
    if (w.ends_with("-handoff")) continue;
    if (which == "strandweaver" || w.ends_with("-queue") || w.ends_with("-map") || w.ends_with("-swap"))
      ws.push_back(w);
  }
  auto group_of = [](const std::string& w) { return std::string(w.ends_with("-nstore") ? "nstore" : "microbenchmarks"); };
  using D = fm::Design;
  if (which == "strandweaver") {
    const D designs[] = {D::kX86, D::kHops, D::kNoPersistQueue, D::kStrandWeaver, D::kNonAtomic, D::kNonAtomicPaper};
    Json fig7 = Json::array(), fig9 = Json::array(), fig10 = Json::array();
    std::map<int, std::map<std::string, std::vector<double>>> by_compute;  // op_compute -> design -> ...
    SwRatios all;                              // every workload
    std::map<std::string, SwRatios> by_group;  // §VI's groups
    std::map<int, std::vector<double>> by_ops_per_sfr;  // Figure 10: ops per SFR -> per workload
    for (const auto& w : ws) {
      Json row;
      row["workload"] = w;
      std::map<D, fm::Result> rs;
      std::map<D, double> sp;  // over x86 on the same recording
      row["designs"] = vs.row(w, designs, base, &rs, &sp, nullptr);
      row["ckc_non_atomic"] = 1000.0 * static_cast<double>(rs[D::kNonAtomic].writebacks) /
                              static_cast<double>(rs[D::kNonAtomic].cycles);
      // T2 on one recording: hops replaying the strand recording (the
      // library's HOPS code at the same points, design_replays), where
      // hops's own recording differs in its compute gaps, lock order and
      // helped prunes by more than the two designs differ (docs/results.md,
      // "Why strandweaver trails hops on the single-lock queue").
      const fm::Result hops_same = run(tr, w, D::kHops, base, &sim_s, &sim_events, 1, "strand");
      Json hj = result_json(hops_same, base);
      // Over x86 on the same (strand) recording, as strandweaver's.
      hj["speedup_over_x86"] = static_cast<double>(vs.x86_on(w, D::kStrandWeaver, base).cycles) /
                               static_cast<double>(hops_same.cycles);
      row["hops_on_strand_recording"] = hj;
      const double sw_over_hops =
          static_cast<double>(hops_same.cycles) / static_cast<double>(rs[D::kStrandWeaver].cycles);
      row["strandweaver_over_hops"] = sw_over_hops;
      // The directions on this recording and on the others (each replayed
      // by x86, hops, strandweaver and no-persist-queue; nothing else).
      {
        Directions dirs;
        const auto ratios = [](double x86, double hops, double sw, double npq) {
          return std::map<std::string, double>{{"strandweaver_over_hops", hops / sw},
                                               {"hops_over_x86", x86 / hops},
                                               {"strandweaver_over_x86", x86 / sw},
                                               {"strandweaver_over_no_persist_queue", npq / sw}};
        };
        dirs.add(ratios(cycles(vs.x86_on(w, D::kStrandWeaver, base)), cycles(hops_same),
                        cycles(rs[D::kStrandWeaver]), cycles(rs[D::kNoPersistQueue])));
        for (int r = 1; r < o.recordings; ++r) {
          const fm::Trace t = tr.again(w, "strand", r);
          const auto sim = [&](D d) { return cycles(simulate_timed(t, d, base, &sim_s, &sim_events)); };
          dirs.add(ratios(sim(D::kX86), sim(D::kHops), sim(D::kStrandWeaver), sim(D::kNoPersistQueue)));
        }
        row["directions"] = dirs.to_json();
        totals.add(dirs);
      }
      // The same traces with application work between operations (the
      // recorded loop has none): how the ratios move as persists weigh less.
      for (int oc : {1000, 4000}) {
        fm::Config c = base;
        c.set("op_compute_cycles", oc);
        Json s;
        for (D d : designs) {
          const double v = vs.speedup(w, vs.design(w, d, c), c);
          s[fm::design_name(d)] = v;
          by_compute[oc][fm::design_name(d)].push_back(v);
        }
        row["op_compute_" + std::to_string(oc)] = s;
      }
      all.add(rs, sp, sw_over_hops);
      by_group[group_of(w)].add(rs, sp, sw_over_hops);
      row["group"] = group_of(w);
      fig7.push_back(row);
      // Figure 10: operations per SFR (1, 2, 4, 8 operations of a thread in
      // one SFR, logging::Group), speedup of StrandWeaver over x86 at each
      // (both traces recorded with that grouping).
      // (Recorded with grouping for the workloads that take it: queue, map, swap.)
      const bool groups_ops = w.ends_with("-queue") || w.ends_with("-map") || w.ends_with("-swap");
      if (w.rfind("sfr-", 0) == 0 && groups_ops) {
        for (int k : {1, 2, 4, 8}) {
          const fm::Result sw = vs.design(w, D::kStrandWeaver, base, k);
          const fm::Result& x = vs.x86_on(w, D::kStrandWeaver, base, k);
          const double s10 = static_cast<double>(x.cycles) / static_cast<double>(sw.cycles);
          fig10.push_back({{"workload", w}, {"ops_per_sfr", k}, {"speedup_over_x86", s10},
                           {"x86_throughput_ops_per_s", x.throughput(base.freq_ghz)},
                           {"strandweaver_throughput_ops_per_s", sw.throughput(base.freq_ghz)}});
          by_ops_per_sfr[k].push_back(s10);
        }
      }
      // Figure 9 (the paper shows SFR only): strand buffers x entries.
      if (w.rfind("sfr-", 0) == 0) {
        for (int nb : {1, 2, 4, 8})
          for (int ne : {1, 2, 4, 8}) {
            fm::Config c = base;
            c.set("strand_buffers", nb);
            c.set("strand_entries", ne);
            const fm::Result r = vs.design(w, D::kStrandWeaver, c);
            fig9.push_back({{"workload", w}, {"buffers", nb}, {"entries", ne}, {"speedup_over_x86", vs.speedup(w, r, c)}});
          }
      }
    }
    for (const auto& [oc, m] : by_compute) doc["average_speedup_over_x86_op_compute_" + std::to_string(oc)] = geomeans(m);
    doc["figure7"] = fig7;
    doc["figure9"] = fig9;
    doc["figure10"] = fig10;
    Json f10;
    for (const auto& [k, v] : by_ops_per_sfr) f10[std::to_string(k)] = geomean(v);
    doc["figure10_average_speedup_over_x86"] = f10;
    all.to_json(doc);
    Json groups;
    for (const auto& [gname, r] : by_group) {
      Json gj;
      r.to_json(gj);
      gj["workloads"] = r.over_hops.size();
      groups[gname] = gj;
    }
    doc["groups"] = groups;
    doc["directions"] = totals.to_json(o.recordings);
  } else {
    const D designs[] = {D::kX86, D::kHops, D::kHopsPlus, D::kIdeal};
    Json fig2 = Json::array();
    std::map<std::string, std::vector<double>> speedups;
    std::vector<double> plus_over_hops, plus_vs_ideal, hops_vs_ideal;
    // The HOPS+ paper's x86 flushes its log synchronously ("CLFLUSH Log",
    // Table 1): the same comparison against x86 with x86_sync_flush=1.
    fm::Config sync = base;
    sync.set("x86_sync_flush", 1);
    std::map<std::string, std::vector<double>> sync_speedups;
    for (const auto& w : ws) {
      if (w.rfind("atlas-", 0) != 0) continue;  // the HOPS+ paper runs ATLAS (durable lock-based code)
      Json row;
      row["workload"] = w;
      std::map<D, fm::Result> rs;
      std::map<D, double> sp;  // over x86 on the same recording: hops on the HOPS one, hops+ and ideal on HOPS+'s
      row["designs"] = vs.row(w, designs, base, &rs, &sp, &speedups);
      Json srow;
      for (D d : designs) {
        const double v = vs.speedup(w, rs[d], sync);
        srow[fm::design_name(d)] = v;
        sync_speedups[fm::design_name(d)].push_back(v);
      }
      row["speedup_over_x86_sync_flush"] = srow;
      // HOPS and HOPS+ run different code (software history or not), so
      // two recordings: each normalised by x86 on its own.
      plus_over_hops.push_back(sp[D::kHopsPlus] / sp[D::kHops]);
      plus_vs_ideal.push_back(static_cast<double>(rs[D::kHopsPlus].cycles) / static_cast<double>(rs[D::kIdeal].cycles));
      hops_vs_ideal.push_back(sp[D::kIdeal] / sp[D::kHops]);
      // The directions on these recordings and on the others (a HOPS and a
      // HOPS+ recording each, replayed by x86 and their design).
      Directions dirs;
      const auto ratios = [](double x86_h, double x86_h_sync, double hops, double x86_p, double plus) {
        return std::map<std::string, double>{{"hops_over_x86", x86_h / hops},
                                             {"hops_over_x86_sync_flush", x86_h_sync / hops},
                                             {"hops_plus_over_x86", x86_p / plus},
                                             {"hops_plus_over_hops", (x86_p / plus) / (x86_h / hops)}};
      };
      dirs.add(ratios(cycles(vs.x86_on(w, D::kHops, base)), cycles(vs.x86_on(w, D::kHops, sync)), cycles(rs[D::kHops]),
                      cycles(vs.x86_on(w, D::kHopsPlus, base)), cycles(rs[D::kHopsPlus])));
      for (int r = 1; r < o.recordings; ++r) {
        const fm::Trace th = tr.again(w, "hops", r), tp = tr.again(w, "hops+", r);
        const auto sim = [&](const fm::Trace& t, D d, const fm::Config& cf) {
          return cycles(simulate_timed(t, d, cf, &sim_s, &sim_events));
        };
        dirs.add(ratios(sim(th, D::kX86, base), sim(th, D::kX86, sync), sim(th, D::kHops, base),
                        sim(tp, D::kX86, base), sim(tp, D::kHopsPlus, base)));
      }
      row["directions"] = dirs.to_json();
      totals.add(dirs);
      fig2.push_back(row);
    }
    doc["figure2"] = fig2;
    doc["average_speedup_over_x86"] = geomeans(speedups);
    doc["average_speedup_over_x86_sync_flush"] = geomeans(sync_speedups);
    doc["hops_plus_over_hops"] = geomean(plus_over_hops);
    doc["hops_plus_slowdown_vs_ideal"] = geomean(plus_vs_ideal) - 1.0;
    doc["hops_slowdown_vs_ideal"] = geomean(hops_vs_ideal) - 1.0;
    doc["directions"] = totals.to_json(o.recordings);
  }
  doc["trace_events"] = tr.events();
  doc["simulated_events"] = sim_events;
  doc["simulation_seconds"] = sim_s;
  doc["events_per_second"] = sim_s > 0 ? static_cast<double>(sim_events) / sim_s : 0.0;
  return doc;
}

void setup_sim(CLI::App* sub) {
  struct Opts {
    std::string trace, paper;
    std::vector<std::string> designs, configs;
    bool json = false;
    PaperOpts po;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("trace", o->trace, "Trace file (ferrite trace)");
  std::string names;
  for (int d = 0; d < fm::kDesigns; ++d) names += std::string(d ? " | " : "") + fm::design_name(static_cast<fm::Design>(d));
  sub->add_option("--design", o->designs, "Design (repeatable; default: every design): " + names);
  sub->add_option("--config", o->configs, "Parameter name=value (repeatable), e.g. strand_entries=2");
  sub->add_flag("--json", o->json, "Machine-readable output");
  sub->add_option("--paper", o->paper, "Run a paper's evaluation: strandweaver | hops");
  sub->add_option("--plot", o->po.plot, "--paper: write results.json and PNG plots into this directory");
  sub->add_option("--threads", o->po.threads, "--paper: threads per trace (default 8)");
  sub->add_option("--ops", o->po.ops, "--paper: operations per trace (default 50000)");
  sub->add_option("--key-range", o->po.key_range,
                  "--paper: record every workload sized as a benchmark, keys in [1, N] (see `ferrite trace "
                  "--help`; default 65536; 0: the crash campaigns' sizes)");
  CLI::Option* recordings = sub->add_option("--recordings", o->po.recordings,
                  "--paper: recordings per workload for the directions (strandweaver over hops, hops over x86, "
                  "hops+ over hops, ...; default 5): recording 0 gives every figure, the others (workload seeds "
                  "2..N) only those ratios, reported per workload (each recording, mean, min, max) and counted "
                  "(workloads below 1 on the mean, in every recording, in some) under `directions`")
      ->check(CLI::Range(1, 20));
  add_commit_batch(sub, &o->po.commit_batch, "--paper: ");
  std::string params;
  for (const auto& n : fm::Config::names()) params += " " + n;
  sub->footer("Parameters (StrandWeaver Table I defaults):" + params +
              ". A design replays the trace of its instrumentation (x86: x86; hops, hops+: their own; "
              "no-persist-queue, strandweaver, non-atomic, non-atomic-paper: strand; ideal: hops+); x86 also replays every "
              "other trace under the Intel mapping, and --paper compares each design with x86 on the same "
              "recording; docs/timing.md.");
  sub->callback([o, names, recordings] {
    if (!o->paper.empty()) {
      if (o->paper != "strandweaver" && o->paper != "hops") usage_error("sim: --paper is strandweaver or hops");
      check_key_range("sim", o->po.key_range);
      set_commit_batch(o->po.commit_batch);
      const Json doc = paper(o->paper, o->po);
      if (!o->po.plot.empty()) {
        std::filesystem::create_directories(o->po.plot);
        const std::string f = o->po.plot + "/results.json";
        std::ofstream(f) << doc.dump(1) << "\n";
        std::string msg;
        const bool ok = ferrite::bench::make_plots(f, o->po.plot, &msg, "timing_plot.py");
        // With --json stdout is the document alone: the plots' list goes to stderr.
        std::fprintf(ok && !o->json ? stdout : stderr, "%s\n", msg.c_str());
      }
      if (o->json) {
        std::printf("%s\n", doc.dump(1).c_str());
      } else {
        std::printf("%s\n", doc["average_speedup_over_x86"].dump().c_str());
        for (const char* oc : {"1000", "4000"})
          if (doc.contains(std::string("average_speedup_over_x86_op_compute_") + oc))
            std::printf("op_compute_cycles=%s: %s\n", oc,
                        doc[std::string("average_speedup_over_x86_op_compute_") + oc].dump().c_str());
        if (doc.contains("average_speedup_over_x86_sync_flush"))
          std::printf("over x86 with synchronous log flushes (x86_sync_flush=1): %s\n",
                      doc["average_speedup_over_x86_sync_flush"].dump().c_str());
        if (doc.contains("figure10_average_speedup_over_x86"))
          std::printf("ops per SFR (figure 10): %s\n", doc["figure10_average_speedup_over_x86"].dump().c_str());
        for (const char* k : {"strandweaver_over_hops", "strandweaver_over_hops_own_recording",
                              "workloads_strandweaver_behind_hops", "strandweaver_slowdown_vs_non_atomic",
                              "strandweaver_slowdown_vs_non_atomic_paper", "hops_plus_over_hops",
                              "hops_plus_slowdown_vs_ideal", "hops_slowdown_vs_ideal", "events_per_second"})
          if (doc.contains(k)) std::printf("%s: %.4g\n", k, doc[k].get<double>());
        for (const auto& [k, v] : doc["directions"].items())
          if (v.is_object())
            std::printf("%s over %d recording(s): %.4g; workloads below 1 on the mean %d, in every recording %d, in "
                        "some %d (of %d)\n",
                        k.c_str(), doc["recordings"].get<int>(), v["geomean"].get<double>(),
                        v["workloads_below_1_on_average"].get<int>(), v["workloads_below_1_in_every_recording"].get<int>(),
                        v["workloads_below_1_in_some_recording"].get<int>(), v["workloads"].get<int>());
        if (doc.contains("groups"))
          for (const auto& [gname, g] : doc["groups"].items())
            std::printf("%s (%d workloads): over x86 %s; strandweaver_over_hops %.4g, slowdown vs non-atomic-paper %.4g, "
                        "vs non-atomic %.4g\n",
                        gname.c_str(), g["workloads"].get<int>(), g["average_speedup_over_x86"].dump().c_str(),
                        g["strandweaver_over_hops"].get<double>(),
                        g["strandweaver_slowdown_vs_non_atomic_paper"].get<double>(),
                        g["strandweaver_slowdown_vs_non_atomic"].get<double>());
      }
      return;
    }
    if (o->trace.empty()) usage_error("sim: a TRACE file or --paper is required");
    if (o->po.commit_batch != 1) usage_error("sim: --commit-batch is for --paper (a trace was recorded with its own)");
    if (recordings->count() > 0) usage_error("sim: --recordings is for --paper (a trace file is one recording)");
    fm::Config c;
    parse_configs(o->configs, &c);
    fm::Trace t;
    try {
      t = fm::read_trace(o->trace);
    } catch (const std::exception& e) {
      usage_error(e.what());
    }
    std::vector<fm::Design> ds;
    for (const auto& n : o->designs) {
      fm::Design d;
      if (!fm::parse_design(n, &d)) usage_error("sim: unknown design '" + n + "' (" + names + ")");
      ds.push_back(d);
    }
    if (ds.empty())
      for (int d = 0; d < fm::kDesigns; ++d)
        if (fm::design_replays(static_cast<fm::Design>(d), t.instrumentation)) ds.push_back(static_cast<fm::Design>(d));
    Json out = Json::array();
    for (fm::Design d : ds) {
      if (!fm::design_replays(d, t.instrumentation))
        std::fprintf(stderr, "ferrite sim: warning: design %s expects a %s-instrumented trace; this one is %s\n",
                     fm::design_name(d), fm::design_instrumentation(d), t.instrumentation.c_str());
      if (d == fm::Design::kHops && t.instrumentation == "strand" && t.version < 3)
        std::fprintf(stderr,
                     "ferrite sim: warning: a format-version-%u trace marks no ordering JoinStrand: hops replays "
                     "every JoinStrand as a dfence (record it again)\n",
                     t.version);
      if (d == fm::Design::kNonAtomicPaper && t.version < 2)
        std::fprintf(stderr,
                     "ferrite sim: warning: a format-version-%u trace marks no undo barrier: non-atomic-paper "
                     "replays it as strandweaver (record it again)\n",
                     t.version);
      const auto t0 = std::chrono::steady_clock::now();
      const fm::Result r = fm::simulate(t, d, c);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      Json j = result_json(r, c);
      j["trace"] = o->trace;
      j["workload"] = t.workload;
      j["events_per_second"] = s > 0 ? static_cast<double>(r.events) / s : 0.0;
      out.push_back(j);
      if (!o->json) {
        std::printf("%-17s %12llu cycles  %10.0f ops/s  %9llu write-backs  stalls:", fm::design_name(d),
                    static_cast<unsigned long long>(r.cycles), r.throughput(c.freq_ghz),
                    static_cast<unsigned long long>(r.writebacks));
        for (int k = 0; k < fm::kStalls; ++k)
          std::printf(" %s=%llu", fm::stall_name(static_cast<fm::Stall>(k)),
                      static_cast<unsigned long long>(r.stalls[static_cast<std::size_t>(k)]));
        std::printf("  evictions=%llu (ordered %llu) snoop-waits=%llu",
                    static_cast<unsigned long long>(r.evictions), static_cast<unsigned long long>(r.ordered_evictions),
                    static_cast<unsigned long long>(r.snoop_waits));
        std::printf("  (%.1f M events/s)\n", s > 0 ? static_cast<double>(r.events) / s / 1e6 : 0.0);
      }
    }
    if (o->json) std::printf("%s\n", out.dump(1).c_str());
  });
}

}  // namespace

FERRITE_REGISTER_COMMAND(trace, "Record a persistence event trace of a logging workload", setup_trace);
FERRITE_REGISTER_COMMAND(sim, "Replay a trace on the timing model of the persist hardware", setup_sim);
