// bench/harness.h — the benchmark harness behind `ferrite bench` (and the
// benchmark step of `ferrite demo`).
//
// An Experiment is one structure × workload × backend with a list of
// techniques and thread counts; the harness runs every (technique, threads)
// point `warmup + reps` times, each repetition on a fresh Instance (and, for
// techniques with needs_pool, a fresh pool file on pool_dir that is deleted
// afterwards), and produces one Record per point.
//
// A repetition: workers start, pin (optional), thread_init, perform their
// share of the prefill, then meet at a barrier whose completion resets the
// persistence counters and reads the clock; they run the timed loop (an
// operation, then uniform random local work in [0, work] dummy iterations,
// as in the PBcomb paper §6), and meet at a second barrier whose completion
// reads the clock and the counters. Throughput = all operations of all
// threads / (t_end - t_start). Every operation counts as one (a push/pop pair
// is two operations; an unsuccessful pop is still one).
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

enum class Workload {
  kPairs,      // push/pop (enqueue/dequeue, insert/delete-min) pairs from empty
  kMix,        // random 50/50 insert/remove (from --prefill elements)
  kPrefilled,  // pairs starting from --prefill elements
  kHeapPairs,  // insert/delete-min pairs on a heap prefilled to half its capacity
  kMultiply,   // atomic-float: every operation is a multiply
};
std::string workload_name(Workload w);
bool parse_workload(const std::string& text, Workload* out);
// The workload a structure uses when none is named.
Workload default_workload(Structure s);
// Empty when `w` suits `s`, else why not.
std::string check_workload(Structure s, Workload w);

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
  int reps = 5;
  int warmup = 1;
  std::string pool_dir = "/dev/shm";
  bool pin = false;
  std::string reference;                  // empty: choose (see choose_reference)
  std::uint64_t prefill = 0;
  int heap_size = 1024;
  std::uint64_t seed = 1;
};

// One measured point (technique × threads) of an experiment.
struct Record {
  std::string experiment, structure, technique, description, workload, backend, media;
  bool persistent = false;
  int threads = 0;
  int reps = 0;
  std::uint64_t ops_per_thread = 0;  // requested (0 in duration mode)
  double duration_s = 0.0;           // requested (0 in ops mode)
  std::uint64_t ops_total = 0;       // operations of all measured reps
  std::uint64_t empty_removes = 0;   // of which unsuccessful removes
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
  int heap_size = 0;
  std::uint64_t prefill = 0;
  bool pinned = false;
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
// Human-readable reasons the numbers may be unrepresentative (empty: none).
std::vector<std::string> build_warnings();

// Progress lines (stderr in the CLI). May be empty.
using ProgressFn = std::function<void(const std::string&)>;

// Runs one repetition; throws std::exception on failure (pool creation,
// technique error). Exposed for tests.
struct RepResult {
  double seconds = 0;
  std::uint64_t ops = 0, empty_removes = 0;
  persist::Counters counters{};
  double combining_degree = 0;
  std::string media = "none";
};
RepResult run_rep(const Technique& t, const Experiment& e, int threads, std::uint64_t seed);

std::vector<Record> run_experiment(const Experiment& e, const ProgressFn& progress = {});
std::vector<Record> run_experiments(const std::vector<Experiment>& es, const ProgressFn& progress = {});

// Registered techniques of `s`, in display order: Ferrite's own (pb-*, pwf-*,
// pbcomb*, pwfcomb*),
// then persistent competitors, then transient ones; by name within a group.
std::vector<const Technique*> techniques_for(Structure s);
bool is_ferrite_technique(const std::string& name);
// The reference of an experiment's records: `wanted` when present, else the
// best (highest mean median throughput) persistent non-Ferrite technique,
// else the first technique. Empty when `records` has no successful point.
std::string choose_reference(const std::vector<Record>& records, const std::string& wanted);
// Fills reference/ratio of records of one experiment.
void assign_ratios(std::vector<Record>& records, const std::string& wanted);

// Output.
nlohmann::ordered_json to_json(const std::vector<Record>& records, const Machine& m);
std::string to_csv(const std::vector<Record>& records, const Machine& m);
std::string format_table(const std::vector<Record>& records);

// Plots: runs bench/plot.py on a JSON file, writing PNGs into `dir`.
// Returns true on success; `message` says where the files went or why not.
bool make_plots(const std::string& json_path, const std::string& dir, std::string* message);

// The canned plans.
std::vector<Experiment> quick_plan();  // <= ~2 minutes on 2 cores
std::vector<Experiment> full_plan();   // the PBcomb paper's Figures 1-7

}  // namespace ferrite::bench
