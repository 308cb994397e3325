// bench/report.cc — what a run produces: the table (stdout), the JSON and
// CSV records (schema: docs/bench-schema.md), and the plots (bench/plot.py).
// See harness.h.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness.h"
#include "shell.h"

namespace ferrite::bench {

// ------------------------------------------------------------------ JSON

namespace {

nlohmann::ordered_json machine_json(const Machine& m) {
  return {{"cpu_model", m.cpu_model},   {"cores", m.cores},
          {"flush", m.flush},           {"compiler", m.compiler},
          {"cxx_flags", m.cxx_flags},   {"build_type", m.build_type},
          {"git_commit", m.git_commit}, {"ferrite_version", m.ferrite_version},
          {"hostname", m.hostname},     {"kernel", m.kernel},
          {"sanitized", m.sanitized},   {"assertions", m.assertions},
          {"optimized", m.optimized},   {"timestamp_utc", m.timestamp_utc}};
}

}  // namespace

nlohmann::ordered_json to_json(const std::vector<Record>& records, const Machine& m) {
  using J = nlohmann::ordered_json;
  J list = J::array();
  const J mj = machine_json(m);
  for (const auto& r : records) {
    J j = {
        {"schema", "ferrite-bench/1"},
        {"experiment", r.experiment},
        {"structure", r.structure},
        {"technique", r.technique},
        {"description", r.description},
        {"persistent", r.persistent},
        {"family", r.family},
        {"ferrite", r.ferrite},
        {"ablation", r.ablation},
        {"map_semantics", r.map_semantics},
        {"workload", r.workload},
        {"threads", r.threads},
        {"backend", r.backend},
        {"media", r.media},
        {"reps", r.reps},
        {"ops_per_thread", r.ops_per_thread},
        {"duration_s", r.duration_s},
        {"ops_total", r.ops_total},
        {"empty_removes", r.empty_removes},
        {"seconds_total", r.seconds_total},
        {"mops", r.mops},
        {"mops_median", r.mops_median},
        {"mops_min", r.mops_min},
        {"mops_max", r.mops_max},
        {"pwb_per_op", r.pwb_per_op},
        {"pfence_per_op", r.pfence_per_op},
        {"psync_per_op", r.psync_per_op},
        {"verbs_per_op", r.verbs_per_op},
        {"combining_degree", r.combining_degree},
        {"reference", r.reference},
        {"ratio", r.ratio ? J(*r.ratio) : J(nullptr)},
        {"work", r.work},
        {"value_size", r.value_size},
        {"key_size", r.key_size},
        {"heap_size", r.heap_size},
        {"prefill", r.prefill},
        {"pinned", r.pinned},
        {"mix", r.mix},
        {"key_range", r.key_range},
        {"lookups", r.lookups},
        {"lookup_hits", r.lookup_hits},
        {"hit_rate", r.hit_rate ? J(*r.hit_rate) : J(nullptr)},
        {"inserts", r.inserts},
        {"keys_added", r.keys_added},
        {"removes", r.removes},
        {"sync_every", r.sync_every},
        {"syncs", r.syncs},
        {"sync_us_mean", r.sync_us_mean ? J(*r.sync_us_mean) : J(nullptr)},
        {"sync_us_median", r.sync_us_median ? J(*r.sync_us_median) : J(nullptr)},
        {"sync_us_p99", r.sync_us_p99 ? J(*r.sync_us_p99) : J(nullptr)},
        {"sync_us_max", r.sync_us_max ? J(*r.sync_us_max) : J(nullptr)},
        {"error", r.error.empty() ? J(nullptr) : J(r.error)},
        {"machine", mj},
    };
    list.push_back(std::move(j));
  }
  return list;
}

// ------------------------------------------------------------------ CSV

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += "\"\"";
    else q += c;
  }
  return q + "\"";
}

}  // namespace

std::string to_csv(const std::vector<Record>& records, const Machine& m) {
  std::ostringstream o;
  // New columns go at the end: scripts that read columns by position keep working.
  o << "experiment,structure,technique,persistent,workload,threads,backend,media,reps,ops_per_thread,"
       "duration_s,ops_total,empty_removes,mops_median,mops_min,mops_max,pwb_per_op,pfence_per_op,"
       "psync_per_op,combining_degree,reference,ratio,work,value_size,heap_size,prefill,pinned,error,"
       "cpu_model,cores,flush,compiler,cxx_flags,build_type,git_commit,timestamp_utc,"
       "family,ferrite,ablation,mix,key_range,lookups,lookup_hits,hit_rate,inserts,keys_added,removes,"
       "sync_every,syncs,sync_us_mean,sync_us_median,sync_us_p99,sync_us_max\n";
  const auto opt = [](const std::optional<double>& v) { return v ? fmt::format("{:.3f}", *v) : std::string(); };
  for (const auto& r : records) {
    o << csv_field(r.experiment) << ',' << r.structure << ',' << r.technique << ',' << (r.persistent ? 1 : 0)
      << ',' << r.workload << ',' << r.threads << ',' << csv_field(r.backend) << ',' << r.media << ','
      << r.reps << ',' << r.ops_per_thread << ',' << r.duration_s << ',' << r.ops_total << ','
      << r.empty_removes << ',' << fmt::format("{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.3f}",
                                               r.mops_median, r.mops_min, r.mops_max, r.pwb_per_op,
                                               r.pfence_per_op, r.psync_per_op, r.combining_degree)
      << ',' << r.reference << ',' << (r.ratio ? fmt::format("{:.4f}", *r.ratio) : std::string()) << ','
      << r.work << ',' << r.value_size << ',' << r.heap_size << ',' << r.prefill << ',' << (r.pinned ? 1 : 0)
      << ',' << csv_field(r.error) << ',' << csv_field(m.cpu_model) << ',' << m.cores << ',' << m.flush << ','
      << csv_field(m.compiler) << ',' << csv_field(m.cxx_flags) << ',' << m.build_type << ',' << m.git_commit
      << ',' << m.timestamp_utc << ',' << csv_field(r.family) << ',' << (r.ferrite ? 1 : 0) << ','
      << (r.ablation ? 1 : 0) << ',' << r.mix << ',' << r.key_range << ',' << r.lookups << ',' << r.lookup_hits
      << ',' << (r.hit_rate ? fmt::format("{:.6f}", *r.hit_rate) : std::string()) << ',' << r.inserts << ','
      << r.keys_added << ',' << r.removes << ',' << r.sync_every << ',' << r.syncs << ',' << opt(r.sync_us_mean)
      << ',' << opt(r.sync_us_median) << ',' << opt(r.sync_us_p99) << ',' << opt(r.sync_us_max) << '\n';
  }
  return o.str();
}

// ------------------------------------------------------------------ table

std::string format_table(const std::vector<Record>& records) {
  std::ostringstream o;
  // Group consecutive records of one experiment (structure/workload/backend).
  std::size_t i = 0;
  while (i < records.size()) {
    const Record& h = records[i];
    std::size_t j = i;
    while (j < records.size() && records[j].experiment == h.experiment && records[j].structure == h.structure &&
           records[j].workload == h.workload && records[j].backend == h.backend &&
           records[j].heap_size == h.heap_size && records[j].mix == h.mix && records[j].key_range == h.key_range &&
           records[j].sync_every == h.sync_every && records[j].value_size == h.value_size &&
           records[j].key_size == h.key_size)
      ++j;
    const bool keyed = !h.mix.empty();
    const bool syncing = h.sync_every > 0;
    std::size_t width = 9;
    for (std::size_t k = i; k < j; ++k) width = std::max(width, records[k].technique.size());
    std::string title = fmt::format("== {}{} | workload {} | backend {}", h.experiment.empty() ? "" : h.experiment + ": ",
                                    h.structure, h.workload, h.backend);
    if (h.heap_size) title += fmt::format(" | heap size {}", h.heap_size);
    if (keyed)
      title += fmt::format(" | get:insert:remove {} | keys 1..{} | prefill {}", h.mix, h.key_range, h.prefill);
    if (syncing) title += fmt::format(" | sync every {} ops/thread", h.sync_every);
    if (h.value_size != 8) title += fmt::format(" | values {} B", h.value_size);
    if (h.key_size != 0 && h.key_size != 8) title += fmt::format(" | keys {} B", h.key_size);
    title += fmt::format(" | work {} | {} ==", h.work,
                         h.duration_s > 0 ? fmt::format("{:g} s/rep", h.duration_s)
                                          : fmt::format("{} ops/thread", h.ops_per_thread));
    o << title << '\n';
    // Keyed workloads add the lookups' hit rate before the kind column.
    std::string extra_head = keyed ? fmt::format(" {:>5}", "hit%") : std::string();
    // --sync-every: the syncs' latency (median, 99th percentile), in µs.
    if (syncing) extra_head += fmt::format(" {:>9} {:>9}", "sync-us", "sync-p99");
    o << fmt::format("{:<{}} {:>3} {:>9} {:>9} {:>9} {:>8} {:>9} {:>8} {:>6} {:>7}{}  {}\n", "technique", width,
                     "thr", "Mops/s", "min", "max", "pwb/op", "pfence/op", "psync/op", "comb", "ratio", extra_head,
                     "");
    for (std::size_t k = i; k < j; ++k) {
      const Record& r = records[k];
      if (!r.error.empty()) {
        o << fmt::format("{:<{}} {:>3} FAILED: {}\n", r.technique, width, r.threads, r.error);
        continue;
      }
      std::string extra;
      if (keyed)
        extra = fmt::format(" {:>5}", r.hit_rate ? fmt::format("{:.1f}", 100.0 * *r.hit_rate) : std::string("-"));
      if (syncing)
        extra += fmt::format(" {:>9} {:>9}", r.sync_us_median ? fmt::format("{:.2f}", *r.sync_us_median) : std::string("-"),
                             r.sync_us_p99 ? fmt::format("{:.2f}", *r.sync_us_p99) : std::string("-"));
      o << fmt::format("{:<{}} {:>3} {:>9.3f} {:>9.3f} {:>9.3f} {:>8.3f} {:>9.3f} {:>8.3f} {:>6} {:>7}{}  {}\n",
                       r.technique, width, r.threads, r.mops_median, r.mops_min, r.mops_max, r.pwb_per_op,
                       r.pfence_per_op, r.psync_per_op,
                       r.combining_degree > 0 ? fmt::format("{:.1f}", r.combining_degree) : std::string("-"),
                       r.ratio ? fmt::format("{:.2f}x", *r.ratio) : std::string("-"), extra,
                       technique_kind(r.ferrite, r.persistent));
    }
    if (!h.reference.empty()) o << "ratio: Mops/s relative to " << h.reference << " at the same thread count\n";
    if (keyed) o << "hit%: lookups (get/contains) that found their key\n";
    if (syncing)
      o << "sync-us, sync-p99: median and 99th-percentile latency of a sync (buffered techniques only; the others "
           "call none)\n";
    o << '\n';
    i = j;
  }
  return o.str();
}

// ------------------------------------------------------------------ plots

bool make_plots(const std::string& json_path, const std::string& dir, std::string* message,
                const std::string& script_name) {
  std::string script;
#ifdef FERRITE_SOURCE_DIR
  script = std::string(FERRITE_SOURCE_DIR) + "/bench/" + script_name;
#endif
  if (const char* s = std::getenv("FERRITE_PLOT_SCRIPT"); s != nullptr && script_name == "plot.py") script = s;
  if (script.empty() || !std::filesystem::exists(script)) {
    *message = "plots skipped: bench/" + script_name + " not found (set FERRITE_PLOT_SCRIPT to its path)";
    return false;
  }
  // A python with matplotlib: $FERRITE_PYTHON, else python3 on PATH, else the
  // system one (a pyenv/venv python3 often lacks Debian's python3-matplotlib).
  std::vector<std::string> candidates;
  if (const char* p = std::getenv("FERRITE_PYTHON")) candidates.emplace_back(p);
  candidates.emplace_back("python3");
  candidates.emplace_back("/usr/bin/python3");
  std::string python;
  for (const auto& c : candidates)
    if (shell::output(shell::quote(c) + " -c 'import matplotlib' >/dev/null 2>&1")) {
      python = c;
      break;
    }
  if (python.empty()) {
    *message =
        "plots skipped: no python3 with matplotlib found (tried $FERRITE_PYTHON, python3, /usr/bin/python3); "
        "install it with `apt-get install python3-matplotlib` or set FERRITE_PYTHON";
    return false;
  }
  const std::string cmd = shell::quote(python) + " " + shell::quote(script) + " " + shell::quote(json_path) +
                          " --out " + shell::quote(dir) + " 2>&1";
  auto out = shell::output(cmd);
  if (!out) {
    *message = "plots failed: `" + cmd + "` did not succeed";
    return false;
  }
  *message = shell::trim(*out);
  return true;
}

}  // namespace ferrite::bench
