// `ferrite bench` — run the benchmark harness (bench/harness.h) from the
// command line. Documentation: docs/bench.md; JSON schema: docs/bench-schema.md.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/harness.h"
#include "bench_recovery.h"
#include "ferrite/cli.h"

namespace ferrite::tools {
namespace {

using bench::Experiment;
using bench::Structure;

struct BenchArgs {
  std::string structure;  // comma list, or "all"
  std::string techniques;
  std::vector<int> threads;
  std::uint64_t ops = 0;
  double duration = 0;
  int work = 512;
  std::vector<std::size_t> value_sizes{8};  // --value-size 100,1024: one experiment per size
  std::size_t key_size = 8;
  std::string backend = "hardware";
  int reps = 5;
  int warmup = 1;
  std::string pool_dir = "/dev/shm";
  bool pin = false;
  std::string reference;
  std::string workload;
  std::uint64_t prefill = 0;
  int heap_size = 1024;
  std::uint64_t seed = 1;
  std::string mix;               // key-mix: "G:I:R" percent
  int read_pct = 50;             // key-mix: shorthand for --mix
  std::uint64_t key_range = 1000000;
  std::vector<std::uint64_t> sync_every;  // key-mix: one experiment per value
  std::string json, csv, plot;
  bool quick = false, full = false, list = false;
  bool recovery = false;                  // --recovery: recovery time vs live size
  std::vector<std::uint64_t> live_mib{64, 256, 1024};
  std::vector<int> recovery_threads{1, 2};
};

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "ferrite bench: %s\n", msg.c_str());
  throw cli::Exit{2};
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

void list_techniques() {
  for (Structure s : {Structure::kRegister, Structure::kStack, Structure::kQueue, Structure::kPriorityQueue,
                      Structure::kSet, Structure::kMap}) {
    auto ts = bench::techniques_for(s);
    if (ts.empty()) continue;
    std::printf("%s:\n", bench::structure_name(s).c_str());
    for (const auto* t : ts)
      std::printf("  %-22s %-10s %-12s %s%s\n", t->name.c_str(), bench::technique_kind(t->ferrite, t->persistent).c_str(),
                  t->family.empty() ? "-" : t->family.c_str(), t->description.c_str(),
                  t->ablation ? " [ablation]" : "");
  }
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  return static_cast<bool>(out);
}

// --recovery: nbMontage's recovery time against live size (bench_recovery.h).
void run_recovery(const BenchArgs& a, CLI::App* app) {
  auto given = [&](const char* name) { return app->count(name) > 0; };
  for (const char* opt : {"--structure", "--threads", "--ops", "--duration", "--work", "--warmup", "--pin", "--key-size",
                          "--reference", "--workload", "--prefill", "--mix", "--read-pct", "--key-range",
                          "--sync-every", "--heap-size", "--csv", "--plot", "--quick", "--full"})
    if (given(opt)) usage_error(std::string(opt) + " does not apply to --recovery");
  RecoveryBenchArgs r;
  const auto& known = recovery_bench_techniques();
  r.techniques = a.techniques.empty() ? std::vector<std::string>{"montage-hashmap", "montage-splitorder"}
                                      : split(a.techniques);
  for (const auto& t : r.techniques)
    if (std::find(known.begin(), known.end(), t) == known.end()) {
      std::string all;
      for (const auto& k : known) all += (all.empty() ? "" : ", ") + k;
      usage_error("--recovery --techniques: '" + t + "' is not one of " + all);
    }
  for (std::uint64_t m : a.live_mib)
    if (m == 0 || m > (std::uint64_t{64} << 10)) usage_error("--live-mib: each size must be in [1, 65536]");
  for (int t : a.recovery_threads)
    if (t <= 0 || t > 64) usage_error(fmt::format("--recovery-threads: {} is not in [1, 64]", t));
  r.live_mib = a.live_mib;
  r.recovery_threads = a.recovery_threads;
  if (given("--value-size")) {
    if (a.value_sizes.size() != 1) usage_error("--value-size takes one size with --recovery");
    r.value_size = a.value_sizes.front();
  }
  if (r.value_size < 8 || r.value_size > 4000) usage_error("--value-size must be in [8, 4000] with --recovery");
  r.reps = given("--reps") ? a.reps : 3;
  if (given("--pool-dir") && !std::filesystem::is_directory(a.pool_dir))
    usage_error("--pool-dir: " + a.pool_dir + " is not a directory");
  r.pool_dir = a.pool_dir;
  const auto backends = split(a.backend);
  if (backends.size() != 1) usage_error("--recovery takes one --backend");
  if (!persist::parse_backend(backends[0], &r.backend) || r.backend.kind == persist::BackendConfig::Kind::kSim)
    usage_error("--backend: '" + backends[0] + "' is not a hardware, off, nosync or emulated backend");
  r.json = a.json;
  for (const auto& w : bench::build_warnings()) std::fprintf(stderr, "ferrite bench: WARNING: %s\n", w.c_str());
  if (const int rc = run_recovery_bench(r); rc != 0) throw cli::Exit{rc};
}

void run(const BenchArgs& a, CLI::App* app) {
  if (a.list) {
    list_techniques();
    return;
  }
  if (a.recovery) {
    run_recovery(a, app);
    return;
  }
  auto given = [&](const char* name) { return app->count(name) > 0; };
  for (const char* opt : {"--live-mib", "--recovery-threads"})
    if (given(opt)) usage_error(std::string(opt) + " applies to --recovery only");
  if (a.quick && a.full) usage_error("--quick and --full are exclusive");
  if (given("--ops") && given("--duration")) usage_error("--ops and --duration are exclusive");
  if (given("--ops") && a.ops == 0) usage_error("--ops must be > 0");
  if (given("--duration") && !(a.duration > 0)) usage_error("--duration must be > 0");
  if (a.reps <= 0) usage_error("--reps must be > 0");
  if (a.warmup < 0) usage_error("--warmup must be >= 0");
  if (a.work < 0) usage_error("--work must be >= 0");
  for (std::size_t v : a.value_sizes)
    if (v < 8 || v > (std::size_t{16} << 20)) usage_error("--value-size: each size must be in [8, 16777216]");
  if (a.key_size == 0 || a.key_size > 65536) usage_error("--key-size must be in [1, 65536]");
  if (a.heap_size < 2 || a.heap_size > (1 << 20)) usage_error("--heap-size must be in [2, 1048576]");
  for (int t : a.threads)
    if (t <= 0 || t > 1024) usage_error(fmt::format("--threads: {} is not in [1, 1024]", t));
  if (given("--pool-dir") && !std::filesystem::is_directory(a.pool_dir))
    usage_error("--pool-dir: " + a.pool_dir + " is not a directory");
  // The key-mix workload's proportions (set, map).
  if (given("--mix") && given("--read-pct")) usage_error("--mix and --read-pct are exclusive");
  bench::KeyMix mix;
  if (given("--mix"))
    if (auto why = bench::parse_key_mix(a.mix, &mix); !why.empty()) usage_error("--mix: " + why);
  if (given("--read-pct"))
    if (auto why = bench::key_mix_from_read_pct(a.read_pct, &mix); !why.empty()) usage_error("--read-pct: " + why);
  if (given("--key-range") && (a.key_range == 0 || a.key_range > (std::uint64_t{1} << 40)))
    usage_error("--key-range must be in [1, 2^40]");
  for (std::uint64_t n : a.sync_every)
    if (n == 0) usage_error("--sync-every: operations per sync must be > 0");

  // Backends.
  std::vector<std::pair<std::string, persist::BackendConfig>> backends;
  for (const auto& b : split(a.backend)) {
    persist::BackendConfig cfg;
    if (!persist::parse_backend(b, &cfg))
      usage_error("--backend: '" + b +
                  "' is not one of hardware, hardware:clflush, hardware:clflushopt, hardware:clwb, off, "
                  "nosync, emulated:NS, emulated:NS:PWB_NS");
    if (cfg.kind == persist::BackendConfig::Kind::kSim)
      usage_error("--backend sim is the crash simulator; use `ferrite crashtest`");
    backends.emplace_back(b, cfg);
  }
  if (backends.empty()) usage_error("--backend: empty");

  // The plan.
  std::vector<Experiment> plan;
  const bool quick = a.quick || (!a.full && a.structure.empty());
  if (a.full && !a.structure.empty()) usage_error("--full runs every structure; drop --structure");
  if (a.full) {
    plan = bench::full_plan();
  } else if (quick && a.structure.empty()) {
    plan = bench::quick_plan();
  } else {
    std::vector<Structure> structures;
    for (const auto& name : split(a.structure)) {
      if (name == "all") {
        for (Structure s : {Structure::kRegister, Structure::kStack, Structure::kQueue, Structure::kPriorityQueue})
          structures.push_back(s);
        continue;
      }
      Structure s;
      if (!bench::parse_structure(name, &s))
        usage_error("--structure: '" + name + "' is not one of atomic-float, stack, queue, heap, set, map, all");
      structures.push_back(s);
    }
    if (structures.empty()) usage_error("--structure: empty");
    const auto base = quick ? bench::quick_plan() : std::vector<Experiment>{};
    for (Structure s : structures) {
      Experiment e;
      e.structure = s;
      e.workload = bench::default_workload(s);
      for (const auto* t : bench::techniques_for(s)) e.techniques.push_back(t->name);
      e.threads = {1, 2, 4, 8};
      e.ops_per_thread = 500000;
      if (quick) {  // --quick --structure X: the quick settings for X only
        e.label = "quick";
        e.threads = {1, 2};
        e.ops_per_thread = 0;
        e.duration_s = 0.2;
        e.reps = 3;
        e.warmup = 0;
        e.heap_size = 256;
      }
      plan.push_back(std::move(e));
    }
  }
  if (plan.empty()) usage_error("no technique is registered for the selected structures");

  // Explicit options override the plan's settings.
  std::vector<Experiment> expanded;
  std::set<std::string> matched;
  const auto wanted_techniques = split(a.techniques);
  for (auto e : plan) {
    if (given("--threads")) e.threads = a.threads;
    if (given("--ops")) { e.ops_per_thread = a.ops; e.duration_s = 0; }
    if (given("--duration")) { e.duration_s = a.duration; e.ops_per_thread = 0; }
    if (given("--work")) e.work = a.work;
    if (given("--key-size") && e.structure == Structure::kMap) e.key_size = a.key_size;
    if (given("--reps")) e.reps = a.reps;
    if (given("--warmup")) e.warmup = a.warmup;
    if (given("--pool-dir")) e.pool_dir = a.pool_dir;
    if (given("--pin")) e.pin = a.pin;
    if (given("--reference")) e.reference = a.reference;
    if (given("--prefill")) e.prefill = a.prefill;
    if (given("--heap-size")) e.heap_size = a.heap_size;
    if (given("--seed")) e.seed = a.seed;
    if (given("--workload")) {
      bench::Workload w;
      if (!bench::parse_workload(a.workload, &w))
        usage_error("--workload: '" + a.workload +
                    "' is not one of pairs, mix, prefilled, heap-pairs, multiply, key-mix");
      // atomic-float, set and map have one workload each; keep it when
      // several structures run.
      const bool single = e.structure == Structure::kRegister || e.structure == Structure::kSet ||
                          e.structure == Structure::kMap;
      // (A set or map run alone with another workload is an error below.)
      if (!single || w == bench::default_workload(e.structure) ||
          (plan.size() == 1 && e.structure != Structure::kRegister))
        e.workload = w;
      if (e.workload == bench::Workload::kPrefilled && !given("--prefill")) e.prefill = 1000;
    }
    if (e.workload == bench::Workload::kKeyMix) {
      if (given("--mix") || given("--read-pct")) e.mix = mix;
      if (given("--key-range")) e.key_range = a.key_range;
    }
    if (auto why = bench::check_workload(e.structure, e.workload); !why.empty())
      usage_error(bench::structure_name(e.structure) + ": " + why);
    if (auto why = bench::check_experiment(e); !why.empty())
      usage_error(bench::structure_name(e.structure) + ": " + why);
    if (!wanted_techniques.empty()) {
      std::vector<std::string> keep;
      for (const auto& n : wanted_techniques)
        if (bench::find_technique(e.structure, n) != nullptr) {
          keep.push_back(n);
          matched.insert(n);
        }
      e.techniques = keep;
    } else if (e.key_size != 8) {
      // A key size the 64-bit-key techniques cannot take: run those that can
      // (byte-string engines; 32-byte keys also the wide-key techniques), and
      // say which were left out — never run them silently with other keys.
      std::vector<std::string> keep, left;
      for (const auto& n : e.techniques)
        (bench::find_technique(e.structure, n)->takes_key_size(e.key_size) ? keep : left).push_back(n);
      if (!left.empty())
        std::fprintf(stderr, "ferrite bench: --key-size %zu: %zu technique(s) without %zu-byte keys left out\n",
                     e.key_size, left.size(), e.key_size);
      e.techniques = keep;
    }
    if (e.techniques.empty()) continue;
    // --sync-every: one experiment per period (key-mix only; checked below).
    std::vector<std::uint64_t> periods{e.sync_every};
    if (given("--sync-every") && e.workload == bench::Workload::kKeyMix) periods = a.sync_every;
    // --value-size: one experiment per size.
    std::vector<std::size_t> sizes{e.value_size};
    if (given("--value-size")) sizes = a.value_sizes;
    for (std::size_t size : sizes)
    for (std::uint64_t period : periods) {
      e.value_size = size;
      e.sync_every = period;
      if (given("--backend") || !a.full) {
        for (const auto& [text, cfg] : backends) {
          Experiment b = e;
          b.backend_text = text;
          b.backend = cfg;
          expanded.push_back(b);
        }
      } else {
        expanded.push_back(e);
      }
    }
  }
  for (const auto& n : wanted_techniques)
    if (!matched.count(n)) {
      std::string known;
      for (const auto& e : plan)
        for (const auto* t : bench::techniques_for(e.structure))
          known += (known.empty() ? "" : ", ") + bench::structure_name(e.structure) + "/" + t->name;
      usage_error("--techniques: '" + n + "' is not registered for the selected structures (known: " + known + ")");
    }
  if (expanded.empty()) usage_error("nothing to run");
  {
    bool keyed = false;
    for (const auto& e : expanded) keyed = keyed || e.workload == bench::Workload::kKeyMix;
    for (const char* opt : {"--mix", "--read-pct", "--key-range", "--sync-every"})
      if (given(opt) && !keyed) usage_error(std::string(opt) + " applies to the set and map structures only");
  }
  if (a.key_size != 8) {
    // Other key sizes: maps only, and only techniques that take them (never
    // silently run with 8-byte keys).
    std::string takes;
    for (const auto* t : bench::techniques_for(Structure::kMap))
      if (t->takes_key_size(a.key_size)) takes += (takes.empty() ? "" : ", ") + t->name;
    const std::string ks = "--key-size " + std::to_string(a.key_size);
    if (expanded.empty()) usage_error(ks + ": no map technique takes " + std::to_string(a.key_size) + "-byte keys");
    for (const auto& e : expanded) {
      if (e.structure != Structure::kMap) usage_error(ks + " applies to the map structure only (-s map)");
      if (e.workload != bench::Workload::kKeyMix) usage_error(ks + " applies to the map key-mix workload only");
      for (const auto& n : e.techniques)
        if (!bench::find_technique(e.structure, n)->takes_key_size(a.key_size))
          usage_error(ks + ": map technique '" + n + "' does not take " + std::to_string(a.key_size) +
                      "-byte keys (those that do: " + takes + "; choose them with -t)");
    }
  }

  for (const auto& w : bench::build_warnings()) std::fprintf(stderr, "ferrite bench: WARNING: %s\n", w.c_str());
  std::fprintf(stderr, "ferrite bench: %zu experiment(s)%s\n", expanded.size(),
               a.full ? " (--full: the PBcomb paper's Figures 1-7; this takes a while)" : "");

  const auto records = bench::run_experiments(expanded, [](const std::string& line) {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  });
  const bench::Machine machine = bench::machine_info();
  std::printf("Ferrite bench — %s, %d CPUs, write-back %s, %s build, commit %s\n", machine.cpu_model.c_str(),
              machine.cores, machine.flush.c_str(), machine.build_type.c_str(), machine.git_commit.c_str());
  std::printf("Mops/s: median over reps (min, max); verbs per operation (a pair counts as 2 ops);\n"
              "comb: requests served per combining round; ratio: vs the reference at the same thread count.\n\n");
  std::fputs(bench::format_table(records).c_str(), stdout);
  std::fflush(stdout);

  if (given("--reference")) {
    std::set<std::string> fell_back;
    for (const auto& r : records)
      if (r.reference != a.reference && !r.reference.empty())
        fell_back.insert(r.structure + " (using " + r.reference + ")");
    for (const auto& f : fell_back)
      std::fprintf(stderr, "ferrite bench: warning: --reference %s did not run for %s\n", a.reference.c_str(),
                   f.c_str());
  }
  int rc = 0;
  for (const auto& r : records)
    if (!r.error.empty()) rc = 1;
  const std::string json_text = bench::to_json(records, machine).dump(2) + "\n";
  if (!a.json.empty()) {
    if (!write_file(a.json, json_text)) {
      std::fprintf(stderr, "ferrite bench: cannot write %s\n", a.json.c_str());
      rc = 1;
    } else {
      std::fprintf(stderr, "ferrite bench: wrote %s\n", a.json.c_str());
    }
  }
  if (!a.csv.empty()) {
    if (!write_file(a.csv, bench::to_csv(records, machine))) {
      std::fprintf(stderr, "ferrite bench: cannot write %s\n", a.csv.c_str());
      rc = 1;
    } else {
      std::fprintf(stderr, "ferrite bench: wrote %s\n", a.csv.c_str());
    }
  }
  if (!a.plot.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.plot, ec);
    const std::string json_path = a.json.empty() ? a.plot + "/bench.json" : a.json;
    if (a.json.empty() && !write_file(json_path, json_text)) {
      std::fprintf(stderr, "ferrite bench: cannot write %s\n", json_path.c_str());
      throw cli::Exit{1};
    }
    std::string msg;
    const bool ok = bench::make_plots(json_path, a.plot, &msg);
    std::fprintf(stderr, "ferrite bench: %s\n", msg.c_str());
    if (!ok) rc = 1;
  }
  if (rc != 0) throw cli::Exit{rc};
}

void setup_bench(CLI::App* app) {
  auto a = std::make_shared<BenchArgs>();
  app->description(
      "Benchmark techniques side by side (PBcomb paper §6 workloads). Without arguments: --quick.\n"
      "Output: a table on stdout, progress on stderr; --json/--csv/--plot for files. See docs/bench.md.");
  app->add_option("--structure,-s", a->structure,
                  "atomic-float|stack|queue|heap|set|map (comma list; all = the first four)");
  app->add_option("--techniques,-t", a->techniques, "comma list of technique names (default: all registered)");
  app->add_option("--threads", a->threads, "thread counts, e.g. 1,2,4,8")->delimiter(',');
  app->add_option("--ops", a->ops, "operations per thread per repetition (default 500000)");
  app->add_option("--duration", a->duration, "seconds per repetition (instead of --ops)");
  app->add_option("--work", a->work, "local work between operations: uniform in [0,N] dummy iterations")
      ->capture_default_str();
  app->add_option("--value-size", a->value_sizes,
                  "payload bytes per element (>= 8; map values of mutex-std/tbb-hashmap; byte-string engines store "
                  "exactly this many bytes); a comma list runs one experiment per size")
      ->delimiter(',')
      ->capture_default_str();
  app->add_option("--key-size", a->key_size,
                  "map: bytes per key — 8; 32 (a byte string derived from the 64-bit key, for the techniques with "
                  "32-byte keys); any other size runs the byte-string engines only; docs/bench.md")
      ->capture_default_str();
  app->add_option("--backend", a->backend,
                  "hardware|hardware:clflush|hardware:clflushopt|off|nosync|emulated:NS[:PWB_NS] (comma list)")
      ->capture_default_str();
  app->add_option("--reps", a->reps, "measured repetitions (median/min/max)")->capture_default_str();
  app->add_option("--warmup", a->warmup, "unmeasured repetitions before them")->capture_default_str();
  app->add_option("--pool-dir", a->pool_dir, "where fresh pools are created (and deleted)")->capture_default_str();
  app->add_flag("--pin", a->pin, "pin worker i to CPU i mod ncpu");
  app->add_option("--reference", a->reference,
                  "technique the ratio column is against (default: best persistent competitor, else first)");
  app->add_option("--workload", a->workload,
                  "pairs|mix|prefilled|heap-pairs (atomic-float: multiply; set, map: key-mix)");
  app->add_option("--prefill", a->prefill,
                  "elements inserted before timing (mix: default 0; prefilled: 1000; set, map: distinct keys, "
                  "default half the key range)");
  app->add_option("--mix", a->mix,
                  "set, map: get:insert:remove percentages summing to 100, e.g. 50:25:25 (default), 90:5:5, 80:10:10");
  app->add_option("--read-pct", a->read_pct,
                  "set, map: percent of lookups (get/contains), the rest split evenly between inserts and removes "
                  "(instead of --mix)");
  app->add_option("--key-range", a->key_range, "set, map: keys are drawn uniformly from 1..N")
      ->capture_default_str();
  app->add_option("--sync-every", a->sync_every,
                  "set, map: each worker calls sync every N of its operations, timed (comma list: one experiment "
                  "per N; buffered techniques only, without background persistence; nbMontage Figures 5 and 6)")
      ->delimiter(',');
  app->add_option("--heap-size", a->heap_size, "heap capacity (heap-pairs prefills half of it)")
      ->capture_default_str();
  app->add_option("--seed", a->seed, "random seed")->capture_default_str();
  app->add_option("--json", a->json, "write records as JSON (schema: docs/bench-schema.md)");
  app->add_option("--csv", a->csv, "write records as CSV");
  app->add_option("--plot", a->plot, "write PNG plots into this directory (python3 + matplotlib)");
  app->add_flag("--quick", a->quick, "about 2 minutes: every structure, 1 and 2 threads, main techniques");
  app->add_flag("--full", a->full, "the PBcomb paper's Figures 1-7: threads 1,2,4,8, all techniques");
  app->add_flag("--list", a->list, "list registered techniques and exit");
  app->add_flag("--recovery", a->recovery,
                "nbMontage recovery time against live size: fill, close, time open + attach (-t montage-hashmap,"
                "montage-splitorder,montage-skiplist,montage-bst; --value-size default 1024; docs/bench.md)");
  app->add_option("--live-mib", a->live_mib, "--recovery: live payload sizes in MiB (comma list)")
      ->delimiter(',')
      ->capture_default_str();
  app->add_option("--recovery-threads", a->recovery_threads, "--recovery: recovery thread counts (comma list)")
      ->delimiter(',')
      ->capture_default_str();
  app->callback([a, app] { run(*a, app); });
}

FERRITE_REGISTER_COMMAND(bench, "Benchmark techniques side by side (throughput, persistence verbs per op)",
                         setup_bench);

}  // namespace
}  // namespace ferrite::tools
