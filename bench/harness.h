// bench/harness.h — the benchmark harness behind `ferrite bench` (and the
// benchmark step of `ferrite demo`). Its public header; the code is split by
// job:
//
//   runner.cc   workloads, one repetition (threads, barriers, timing), the
//               points of an experiment, the reference and the ratios
//   report.cc   the table, JSON, CSV, and running bench/plot.py
//   machine.cc  what the numbers were measured on (and build warnings)
//   plans.cc    the canned plans: --quick (the tour, CI) and --full (the
//               PBcomb paper's Figures 1-7)
//   shell.h/.cc running a shell command (git, python) for machine.cc/report.cc
//
// How a run works
// ---------------
// An Experiment is one structure × workload × backend with a list of
// techniques (bench/technique.h: one adapter registration each) and thread
// counts. run_experiment runs every (technique, threads) point `warmup +
// reps` times, each repetition on a fresh Instance (and, for techniques with
// needs_pool, a fresh pool file on pool_dir that is deleted afterwards), and
// produces one Record per point: median/min/max Mops/s over the measured
// repetitions, persistence verbs per operation pooled over them, the
// combining degree, and for the keyed workloads the lookups' hit rate.
//
// One repetition (run_rep): `threads` workers start, pin (optional), call
// thread_init, and perform their share of the prefill (untimed); then they
// meet at a barrier whose completion step resets the persistence counters
// and reads the clock. Each worker runs the timed loop — an operation
// through Instance::apply (the pair workloads through insert/remove), then
// uniform random local work in [0, work] dummy iterations, as in the PBcomb
// paper §6 — until it has done ops_per_thread operations or duration_s has
// passed (checked every 32 operations). A second barrier's completion reads
// the clock and the counters. Throughput = all operations of all threads /
// (t_end - t_start). Every operation counts as one (a push/pop pair is two;
// an unsuccessful pop, a lookup that misses, are still one). A worker that
// throws leaves the barriers it still owes, so the others never hang; the
// repetition then fails and the point's record carries the error.
//
// Workloads. Queue/stack/heap/atomic-float run the PBcomb paper's pairs (or
// a 50/50 insert/remove mix, or pairs on a prefilled structure); set and map
// run the key-mix workload of the nbMontage and Mirror papers: each
// operation is a lookup, an insert or a remove (set: contains / insert /
// remove; map: get / put / erase) of a uniformly random key in
// [1, key_range], in the proportions of `mix` (get:insert:remove percent),
// on a structure prefilled with `prefill` distinct keys (default: half the
// key range). Keys start at 1 so no technique meets a reserved key 0.
//
// Thread safety: run_experiments is not reentrant (it installs persistence
// backends process-wide); call it from one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "technique.h"

namespace ferrite::bench {

// ------------------------------------------------------------------ workloads

enum class Workload {
  kPairs,      // push/pop (enqueue/dequeue, insert/delete-min) pairs from empty
  kMix,        // random 50/50 insert/remove (from --prefill elements)
  kPrefilled,  // pairs starting from --prefill elements
  kHeapPairs,  // insert/delete-min pairs on a heap prefilled to half its capacity
  kMultiply,   // atomic-float: every operation is a multiply
  kKeyMix,     // set/map: get:insert:remove mix of random keys in [1, key_range]
};
std::string workload_name(Workload w);
bool parse_workload(const std::string& text, Workload* out);
// The workload a structure uses when none is named.
Workload default_workload(Structure s);
// Empty when `w` suits `s`, else why not.
std::string check_workload(Structure s, Workload w);

// The key-mix proportions, in percent of the operations.
struct KeyMix {
  int get = 50, insert = 25, remove = 25;  // the nbMontage paper's 2:1:1
  std::string to_string() const;            // "50:25:25"
  friend bool operator==(const KeyMix&, const KeyMix&) = default;
};
// Parses "G:I:R" (percentages summing to 100). Empty on success, else why not.
std::string parse_key_mix(const std::string& text, KeyMix* out);
// The mix with `read_pct` percent lookups, the rest split evenly between
// inserts and removes (the odd percent, if any, goes to inserts).
// Empty on success, else why not.
std::string key_mix_from_read_pct(int read_pct, KeyMix* out);

// ------------------------------------------------------------------ experiments

struct Experiment {
  std::string label;                      // e.g. "fig4" (may be empty)
  Structure structure = Structure::kQueue;
  Workload workload = Workload::kPairs;
  std::vector<std::string> techniques;    // run in this order
  std::vector<int> threads{1, 2};
  std::string backend_text = "hardware";  // as the user wrote it
  persist::BackendConfig backend{};
  std::uint64_t ops_per_thread = 0;       // fixed work per thread...
  double duration_s = 0.0;                // ...or fixed time (exactly one is > 0)
  int work = 512;                         // local work bound (dummy iterations)
  std::size_t value_size = 8;
  std::size_t key_size = 8;               // map key-mix: 8, or 32 (ferrite/key32.h)
  int reps = 5;
  int warmup = 1;
  std::string pool_dir = "/dev/shm";
  // Caps every technique's pool at this many bytes (0: each technique's
  // own size, Technique::pool_size). For tests that run many techniques
  // for a few hundred operations: a pool's file is reserved whole when it
  // is created (posix_fallocate), which for the default 256 MiB on tmpfs
  // took most of such a test's time (the kernel allocating and zeroing
  // pages), per technique and repetition.
  std::size_t pool_cap = 0;
  bool pin = false;
  std::string reference;                  // empty: choose (see choose_reference)
  // Elements (keys) inserted before timing; unset: the workload's default
  // (see effective_prefill).
  std::optional<std::uint64_t> prefill;
  int heap_size = 1024;
  std::uint64_t seed = 1;
  // key-mix only.
  KeyMix mix{};
  std::uint64_t key_range = 1000000;      // keys are 1..key_range (nbMontage: 1M)
  // key-mix only: each worker calls sync after every `sync_every` of its
  // operations (0: never), timed one by one; the syncs are not operations
  // (throughput counts the map operations, over a time that includes the
  // syncs). Only buffered techniques (Technique::buffered) are sent syncs,
  // and they run without background persistence (nbMontage's advancer is
  // off: the paper's §5.3, Figures 5 and 6). Others run as without it.
  std::uint64_t sync_every = 0;
};

// Elements inserted before timing: heap-pairs: half the heap size (prefill
// is ignored); key-mix: `prefill`, else half the key range; others:
// `prefill`, else 0.
std::uint64_t effective_prefill(const Experiment& e);
// Empty when `e` can run, else why not (thread counts, ops/duration, reps,
// workload vs structure, key range and prefill).
std::string check_experiment(const Experiment& e);

// One measured point (technique × threads) of an experiment.
// key-mix counts: timed operations by kind and outcome. One type for a
// worker, a repetition and a record, summed with += at each level.
struct KeyMixCounts {
  std::uint64_t lookups = 0, lookup_hits = 0;  // gets / contains, and how many found the key
  std::uint64_t inserts = 0, keys_added = 0;   // inserts / puts, and how many added a new key
  std::uint64_t removes = 0;                   // removes / erases (failed ones: empty_removes)
  KeyMixCounts& operator+=(const KeyMixCounts& o) {
    lookups += o.lookups;
    lookup_hits += o.lookup_hits;
    inserts += o.inserts;
    keys_added += o.keys_added;
    removes += o.removes;
    return *this;
  }
};

struct Record : KeyMixCounts {
  std::string experiment, structure, technique, description, workload, backend, media;
  bool persistent = false;
  std::string family;                // the technique's family ("pbcomb", "transient", ...)
  bool ferrite = false;              // Ferrite's own technique
  bool ablation = false;             // an ablation of another technique
  bool map_semantics = true;         // keyed: answers follow the set/map semantics (Technique)
  int threads = 0;
  int reps = 0;
  std::uint64_t ops_per_thread = 0;  // requested (0 in duration mode)
  double duration_s = 0.0;           // requested (0 in ops mode)
  std::uint64_t ops_total = 0;       // operations of all measured reps
  std::uint64_t empty_removes = 0;   // of which unsuccessful removes (key-mix: key absent)
  double seconds_total = 0.0;        // timed seconds of all measured reps
  std::vector<double> mops;          // per measured rep
  double mops_median = 0, mops_min = 0, mops_max = 0;
  // Persistence verbs per operation (all measured reps pooled).
  std::map<std::string, double> verbs_per_op;  // every verb, by persist::verb_name
  double pwb_per_op = 0, pfence_per_op = 0, psync_per_op = 0;
  double combining_degree = 0;       // mean over reps; 0: not a combining technique
  std::string reference;             // technique this record's ratio is against
  std::optional<double> ratio;       // mops_median / reference's, same threads
  int work = 0;
  std::size_t value_size = 0;
  std::size_t key_size = 0;          // map key-mix: bytes per key (0 otherwise)
  int heap_size = 0;
  std::uint64_t prefill = 0;
  bool pinned = false;
  // key-mix only (0 / "" / unset otherwise); counts are over all measured reps.
  std::string mix;                   // "50:25:25" (get:insert:remove percent)
  std::uint64_t key_range = 0;
  // (+ KeyMixCounts: lookups, lookup_hits, inserts, keys_added, removes)
  std::optional<double> hit_rate;              // lookup_hits / lookups
  // Syncs (Experiment::sync_every): requested period, syncs called in all
  // measured reps, and their latency in microseconds (unset without syncs).
  std::uint64_t sync_every = 0;
  std::uint64_t syncs = 0;
  std::optional<double> sync_us_mean, sync_us_median, sync_us_p99, sync_us_max;
  std::string error;                 // non-empty: the point failed (no numbers)
};

struct Machine {
  std::string cpu_model;
  int cores = 0;                 // online logical CPUs
  std::string flush;             // write-back instruction of the hardware backends
  std::string compiler, cxx_flags, build_type, git_commit, ferrite_version, hostname, kernel;
  bool sanitized = false, assertions = false, optimized = false;
  std::string timestamp_utc;
};
Machine machine_info();
// The median of v (the mean of the middle two for an even count; 0 if empty).
double median(std::vector<double> v);
// A pool file name in dir no other run of this process uses.
std::string fresh_pool_path(const std::string& dir);
// Human-readable reasons the numbers may be unrepresentative (empty: none).
std::vector<std::string> build_warnings();

// Progress lines (stderr in the CLI). May be empty.
using ProgressFn = std::function<void(const std::string&)>;

// Runs one repetition; throws std::exception on failure (pool creation,
// technique error, a keyed prefill that did not reach its key count).
// Exposed for tests.
struct RepResult : KeyMixCounts {
  double seconds = 0;
  std::uint64_t ops = 0, empty_removes = 0;
  persist::Counters counters{};
  double combining_degree = 0;
  std::string media = "none";
  // key-mix: the KeyMixCounts base, and the keys the prefill added
  // (== effective_prefill, or run_rep throws).
  std::uint64_t prefill_added = 0;
  std::vector<double> sync_ns;  // each sync's latency (Experiment::sync_every)
};
RepResult run_rep(const Technique& t, const Experiment& e, int threads, std::uint64_t seed);

std::vector<Record> run_experiment(const Experiment& e, const ProgressFn& progress = {});
std::vector<Record> run_experiments(const std::vector<Experiment>& es, const ProgressFn& progress = {});

// Registered techniques of `s`, in display order: Ferrite's own
// (Technique::ferrite), then persistent competitors, then transient ones; by
// name within a group.
std::vector<const Technique*> techniques_for(Structure s);
// "ferrite", "persistent" or "transient": the table's and --list's kind.
std::string technique_kind(bool ferrite, bool persistent);
// The reference of an experiment's records: `wanted` when present, else the
// best (highest mean median throughput) persistent non-Ferrite technique,
// else the first technique. Empty when `records` has no successful point.
std::string choose_reference(const std::vector<Record>& records, const std::string& wanted);
// Fills reference/ratio of records of one experiment.
void assign_ratios(std::vector<Record>& records, const std::string& wanted);

// Output (report.cc).
nlohmann::ordered_json to_json(const std::vector<Record>& records, const Machine& m);
std::string to_csv(const std::vector<Record>& records, const Machine& m);
std::string format_table(const std::vector<Record>& records);

// Plots: runs bench/plot.py on a JSON file, writing PNGs into `dir`.
// Returns true on success; `message` says where the files went or why not.
// `script`: a plotting script in bench/ (timing_plot.py plots `ferrite sim
// --paper` results).
bool make_plots(const std::string& json_path, const std::string& dir, std::string* message,
                const std::string& script_name = "plot.py");

// The canned plans (plans.cc).
std::vector<Experiment> quick_plan();  // <= ~2 minutes on 2 cores
std::vector<Experiment> full_plan();   // the PBcomb paper's Figures 1-7
// Names of the registered techniques of `s` in display order; main_only
// leaves out ablations (Technique::ablation).
std::vector<std::string> technique_names(Structure s, bool main_only);

}  // namespace ferrite::bench
