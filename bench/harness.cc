// bench/harness.cc — see harness.h.
#include "harness.h"

#include <pthread.h>
#include <sched.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "ferrite/pmem/pool.h"
#include "ferrite/sync/cache_padded.h"

namespace ferrite::bench {

// ------------------------------------------------------------------ workloads

std::string workload_name(Workload w) {
  switch (w) {
    case Workload::kPairs: return "pairs";
    case Workload::kMix: return "mix";
    case Workload::kPrefilled: return "prefilled";
    case Workload::kHeapPairs: return "heap-pairs";
    case Workload::kMultiply: return "multiply";
  }
  return "?";
}

bool parse_workload(const std::string& text, Workload* out) {
  for (Workload w : {Workload::kPairs, Workload::kMix, Workload::kPrefilled, Workload::kHeapPairs,
                     Workload::kMultiply})
    if (workload_name(w) == text) { *out = w; return true; }
  return false;
}

Workload default_workload(Structure s) {
  switch (s) {
    case Structure::kAtomicFloat: return Workload::kMultiply;
    case Structure::kHeap: return Workload::kHeapPairs;
    default: return Workload::kPairs;
  }
}

std::string check_workload(Structure s, Workload w) {
  if (s == Structure::kAtomicFloat && w != Workload::kMultiply)
    return "atomic-float supports only the 'multiply' workload (every operation is a multiply)";
  if (s != Structure::kAtomicFloat && w == Workload::kMultiply)
    return "the 'multiply' workload is for atomic-float only";
  if (w == Workload::kHeapPairs && s != Structure::kHeap)
    return "the 'heap-pairs' workload is for the heap only";
  if (s == Structure::kSet || s == Structure::kMap)
    return "set/map workloads (get:insert:remove mixes) are not implemented yet";
  return {};
}

namespace {

// xorshift64*: cheap per-thread randomness for local work and keys.
struct Rng {
  std::uint64_t s;
  explicit Rng(std::uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull) {
    if (s == 0) s = 1;
  }
  std::uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
  }
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }
};

// The PBcomb paper's local work: a loop of dummy iterations the compiler
// cannot remove (an empty volatile asm per iteration).
inline void local_work(std::uint64_t iterations) {
  for (std::uint64_t i = 0; i < iterations; ++i) asm volatile("");
}

using Clock = std::chrono::steady_clock;

void pin_to_cpu(int tid) {
  const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<int>(static_cast<unsigned>(tid) % n), &set);
  // Best effort: a failure (e.g. restricted cpuset) leaves the thread unpinned.
  (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

std::string fresh_pool_path(const std::string& dir) {
  static std::atomic<std::uint64_t> counter{0};
  return fmt::format("{}/ferrite-bench-{}-{}.pool", dir, ::getpid(),
                     counter.fetch_add(1, std::memory_order_relaxed));
}

struct alignas(sync::kPadding) WorkerOut {
  std::uint64_t ops = 0, empty = 0;
  std::exception_ptr error;
};

}  // namespace

// ------------------------------------------------------------------ one rep

RepResult run_rep(const Technique& t, const Experiment& e, int threads, std::uint64_t seed) {
  if (threads <= 0) throw std::invalid_argument("threads must be > 0");
  RunParams params;
  params.threads = threads;
  params.max_threads = std::max(threads, *std::max_element(e.threads.begin(), e.threads.end()));
  params.value_size = e.value_size;
  params.heap_capacity = e.heap_size;
  params.prefill = e.workload == Workload::kHeapPairs ? static_cast<std::uint64_t>(e.heap_size / 2)
                                                      : e.prefill;
  params.pool_dir = e.pool_dir;
  params.backend = e.backend;
  params.seed = seed;

  RepResult res;
  std::string path;
  std::unique_ptr<pmem::Pool> pool;
  struct Cleanup {  // the pool file goes away whatever happens
    std::string* path;
    std::unique_ptr<pmem::Pool>* pool;
    ~Cleanup() {
      pool->reset();
      if (!path->empty()) std::remove(path->c_str());
    }
  } cleanup{&path, &pool};

  if (t.needs_pool) {
    path = fresh_pool_path(e.pool_dir);
    pmem::PoolOptions opts;
    opts.backend = e.backend;
    opts.arenas = std::max(64, params.max_threads);
    pool = pmem::Pool::create(path, t.pool_size, opts);
    res.media = std::string(pmem::media_name(pool->media()));
  } else {
    persist::install(persist::make_backend(e.backend));
  }
  std::unique_ptr<Instance> inst = t.make(params, pool.get());
  if (!inst) throw std::runtime_error("technique " + t.name + " returned no instance");

  const bool by_time = e.duration_s > 0;
  const std::uint64_t ops_target = e.ops_per_thread;
  const auto duration = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(e.duration_s));
  Clock::time_point t_start, t_end;
  persist::Counters c_end{};

  // Completion functions run on one thread while all others wait at the
  // barrier, so their writes happen-before every worker's next step.
  auto on_start = [&]() noexcept {
    persist::reset_counters();
    t_start = Clock::now();
  };
  auto on_end = [&]() noexcept {
    t_end = Clock::now();
    c_end = persist::counters();
  };
  std::barrier start_barrier(threads, on_start);
  std::barrier end_barrier(threads, on_end);
  std::vector<WorkerOut> out(static_cast<std::size_t>(threads));

  auto worker = [&](int tid) {
    WorkerOut& o = out[static_cast<std::size_t>(tid)];
    int phase = 0;  // 0: before start barrier, 1: timed, 2: done
    try {
      if (e.pin) pin_to_cpu(tid);
      Rng rng(seed * 1000003ull + static_cast<std::uint64_t>(tid));
      std::uint64_t seq = 0;
      std::int64_t counter = 0;
      const auto unique_value = [&]() {
        return static_cast<std::int64_t>((static_cast<std::uint64_t>(tid) + 1) << 40) + (++counter);
      };
      const bool heap = e.structure == Structure::kHeap;
      const auto next_value = [&]() -> std::int64_t {
        return heap ? static_cast<std::int64_t>(rng.below(1u << 20)) : unique_value();
      };
      inst->thread_init(tid);
      // This thread's share of the prefill (threads split it evenly).
      const std::uint64_t share = params.prefill / static_cast<std::uint64_t>(threads) +
                                  (static_cast<std::uint64_t>(tid) < params.prefill % static_cast<std::uint64_t>(threads) ? 1 : 0);
      for (std::uint64_t i = 0; i < share; ++i) inst->insert(tid, ++seq, next_value());

      phase = 1;
      start_barrier.arrive_and_wait();
      const Clock::time_point deadline = t_start + duration;
      const std::uint64_t work_bound = static_cast<std::uint64_t>(std::max(0, e.work)) + 1;
      std::uint64_t ops = 0, empty = 0;
      std::int64_t got = 0;
      const auto do_remove = [&]() {
        if (!inst->remove(tid, ++seq, &got)) ++empty;
      };
      for (;;) {
        if (by_time) {
          if ((ops & 31) == 0 && Clock::now() >= deadline) break;
        } else if (ops >= ops_target) {
          break;
        }
        switch (e.workload) {
          case Workload::kMultiply:
            inst->insert(tid, ++seq, static_cast<std::int64_t>(rng.next() >> 1));
            local_work(rng.below(work_bound));
            ops += 1;
            break;
          case Workload::kMix:
            if (rng.next() & 1) inst->insert(tid, ++seq, next_value());
            else do_remove();
            local_work(rng.below(work_bound));
            ops += 1;
            break;
          case Workload::kPairs:
          case Workload::kPrefilled:
          case Workload::kHeapPairs:
            inst->insert(tid, ++seq, next_value());
            local_work(rng.below(work_bound));
            do_remove();
            local_work(rng.below(work_bound));
            ops += 2;
            break;
        }
      }
      o.ops = ops;
      o.empty = empty;
      phase = 2;
      end_barrier.arrive_and_wait();
      inst->thread_exit(tid);
    } catch (...) {
      o.error = std::current_exception();
      // Leave the barriers we still owe so the other workers do not hang.
      if (phase == 0) start_barrier.arrive_and_drop();
      if (phase <= 1) end_barrier.arrive_and_drop();
    }
  };

  std::vector<std::thread> pool_threads;
  pool_threads.reserve(static_cast<std::size_t>(threads));
  for (int i = 0; i < threads; ++i) pool_threads.emplace_back(worker, i);
  for (auto& th : pool_threads) th.join();
  for (auto& o : out)
    if (o.error) std::rethrow_exception(o.error);

  res.seconds = std::chrono::duration<double>(t_end - t_start).count();
  for (auto& o : out) {
    res.ops += o.ops;
    res.empty_removes += o.empty;
  }
  res.counters = c_end;
  res.combining_degree = inst->combining_degree();
  inst.reset();
  return res;
}

// ------------------------------------------------------------------ points

bool is_ferrite_technique(const std::string& name) {
  for (const char* prefix : {"pb-", "pwf-", "pbcomb", "pwfcomb"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

std::vector<const Technique*> techniques_for(Structure s) {
  std::vector<const Technique*> v;
  for (const auto& t : techniques())
    if (t.structure == s) v.push_back(&t);
  auto group = [](const Technique* t) { return is_ferrite_technique(t->name) ? 0 : t->persistent ? 1 : 2; };
  std::sort(v.begin(), v.end(), [&](const Technique* a, const Technique* b) {
    if (group(a) != group(b)) return group(a) < group(b);
    return a->name < b->name;
  });
  return v;
}

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Record base_record(const Experiment& e, const Technique& t, int threads) {
  Record r;
  r.experiment = e.label;
  r.structure = structure_name(e.structure);
  r.technique = t.name;
  r.description = t.description;
  r.persistent = t.persistent;
  r.workload = workload_name(e.workload);
  r.backend = e.backend.to_string();
  r.media = "none";
  r.threads = threads;
  r.reps = e.reps;
  r.ops_per_thread = e.duration_s > 0 ? 0 : e.ops_per_thread;
  r.duration_s = e.duration_s;
  r.work = e.work;
  r.value_size = e.value_size;
  r.heap_size = e.structure == Structure::kHeap ? e.heap_size : 0;
  r.prefill = e.workload == Workload::kHeapPairs ? static_cast<std::uint64_t>(e.heap_size / 2) : e.prefill;
  r.pinned = e.pin;
  return r;
}

}  // namespace

std::vector<Record> run_experiment(const Experiment& e, const ProgressFn& progress) {
  if (e.threads.empty()) throw std::invalid_argument("no thread counts");
  if ((e.duration_s > 0) == (e.ops_per_thread > 0))
    throw std::invalid_argument("exactly one of ops_per_thread and duration_s must be > 0");
  if (e.reps <= 0) throw std::invalid_argument("reps must be > 0");
  if (auto why = check_workload(e.structure, e.workload); !why.empty()) throw std::invalid_argument(why);

  std::vector<Record> records;
  const std::size_t points = e.techniques.size() * e.threads.size();
  std::size_t point = 0;
  for (const std::string& name : e.techniques) {
    const Technique* t = find_technique(e.structure, name);
    if (t == nullptr)
      throw std::invalid_argument("unknown technique '" + name + "' for " + structure_name(e.structure));
    for (int threads : e.threads) {
      ++point;
      Record r = base_record(e, *t, threads);
      persist::Counters total{};
      double degree_sum = 0;
      try {
        for (int rep = 0; rep < e.warmup + e.reps; ++rep) {
          const bool measured = rep >= e.warmup;
          RepResult rr = run_rep(*t, e, threads, e.seed + static_cast<std::uint64_t>(rep));
          r.media = rr.media;
          if (!measured) continue;
          const double mops = rr.seconds > 0 ? static_cast<double>(rr.ops) / rr.seconds / 1e6 : 0.0;
          r.mops.push_back(mops);
          r.ops_total += rr.ops;
          r.empty_removes += rr.empty_removes;
          r.seconds_total += rr.seconds;
          total += rr.counters;
          degree_sum += rr.combining_degree;
          if (progress)
            progress(fmt::format("[{}/{}] {} {} {} threads={} backend={} rep {}/{}: {:.3f} Mops/s",
                                 point, points, e.label.empty() ? "" : e.label, r.structure, t->name,
                                 threads, r.backend, rep - e.warmup + 1, e.reps, mops));
        }
        r.mops_median = median(r.mops);
        r.mops_min = *std::min_element(r.mops.begin(), r.mops.end());
        r.mops_max = *std::max_element(r.mops.begin(), r.mops.end());
        const double ops = std::max<double>(1.0, static_cast<double>(r.ops_total));
        for (int v = 0; v < persist::kVerbCount; ++v)
          r.verbs_per_op[std::string(persist::verb_name(static_cast<persist::Verb>(v)))] =
              static_cast<double>(total.n[static_cast<std::size_t>(v)]) / ops;
        r.pwb_per_op = static_cast<double>(total[persist::Verb::kPwb]) / ops;
        r.pfence_per_op = static_cast<double>(total[persist::Verb::kPfence]) / ops;
        r.psync_per_op = static_cast<double>(total[persist::Verb::kPsync]) / ops;
        r.combining_degree = degree_sum / e.reps;
      } catch (const std::exception& ex) {
        r.error = ex.what();
        r.mops.clear();
        if (progress)
          progress(fmt::format("[{}/{}] {} {} threads={}: FAILED: {}", point, points, r.structure, t->name,
                               threads, ex.what()));
      }
      records.push_back(std::move(r));
    }
  }
  assign_ratios(records, e.reference);
  return records;
}

std::vector<Record> run_experiments(const std::vector<Experiment>& es, const ProgressFn& progress) {
  std::vector<Record> all;
  for (const auto& e : es) {
    auto r = run_experiment(e, progress);
    all.insert(all.end(), std::make_move_iterator(r.begin()), std::make_move_iterator(r.end()));
  }
  return all;
}

std::string choose_reference(const std::vector<Record>& records, const std::string& wanted) {
  std::vector<std::string> order;  // techniques with at least one good point
  std::map<std::string, std::vector<double>> mops;
  std::map<std::string, bool> competitor;
  for (const auto& r : records) {
    if (!r.error.empty()) continue;
    if (!mops.count(r.technique)) order.push_back(r.technique);
    mops[r.technique].push_back(r.mops_median);
    competitor[r.technique] = r.persistent && !is_ferrite_technique(r.technique);
  }
  if (order.empty()) return {};
  if (!wanted.empty() && mops.count(wanted)) return wanted;
  std::string best;
  double best_score = -1;
  for (const auto& name : order) {
    if (!competitor[name]) continue;
    // Geometric mean over the thread counts: no single point dominates.
    double log_sum = 0;
    for (double m : mops[name]) log_sum += std::log(std::max(m, 1e-9));
    const double score = std::exp(log_sum / static_cast<double>(mops[name].size()));
    if (score > best_score) { best_score = score; best = name; }
  }
  return best.empty() ? order.front() : best;
}

void assign_ratios(std::vector<Record>& records, const std::string& wanted) {
  const std::string ref = choose_reference(records, wanted);
  for (auto& r : records) {
    r.reference = ref;
    r.ratio.reset();
    if (ref.empty() || !r.error.empty()) continue;
    for (const auto& q : records)
      if (q.technique == ref && q.threads == r.threads && q.error.empty() && q.mops_median > 0)
        r.ratio = r.mops_median / q.mops_median;
  }
}

// ------------------------------------------------------------------ machine

namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// Output of a shell command, or nullopt when it fails.
std::optional<std::string> command_output(const std::string& cmd) {
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) return std::nullopt;
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, f) != nullptr) out += buf;
  const int status = ::pclose(f);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

}  // namespace

Machine machine_info() {
  Machine m;
  {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("model name", 0) == 0) {
        const auto colon = line.find(':');
        if (colon != std::string::npos) m.cpu_model = trim(line.substr(colon + 1));
        break;
      }
    if (m.cpu_model.empty()) m.cpu_model = "unknown";
  }
  m.cores = static_cast<int>(std::thread::hardware_concurrency());
  m.flush = std::string(persist::flush_name(persist::active_flush()));
#if defined(__clang__)
  m.compiler = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  m.compiler = std::string("g++ ") + __VERSION__;
#else
  m.compiler = "unknown";
#endif
#ifdef FERRITE_CXX_FLAGS
  m.cxx_flags = trim(FERRITE_CXX_FLAGS);
#endif
#ifdef FERRITE_BUILD_TYPE
  m.build_type = FERRITE_BUILD_TYPE;
#endif
#ifdef FERRITE_VERSION
  m.ferrite_version = FERRITE_VERSION;
#endif
#ifdef FERRITE_SANITIZED
  m.sanitized = true;
#endif
#ifndef NDEBUG
  m.assertions = true;
#endif
#ifdef __OPTIMIZE__
  m.optimized = true;
#endif
  m.git_commit = "unknown";
#ifdef FERRITE_SOURCE_DIR
  if (auto rev = command_output("git -C " + shell_quote(FERRITE_SOURCE_DIR) + " rev-parse HEAD 2>/dev/null")) {
    m.git_commit = trim(*rev);
    if (auto st = command_output("git -C " + shell_quote(FERRITE_SOURCE_DIR) +
                                 " status --porcelain --untracked-files=no 2>/dev/null");
        st && !trim(*st).empty())
      m.git_commit += "-dirty";
  }
#endif
  struct utsname u{};
  if (::uname(&u) == 0) {
    m.hostname = u.nodename;
    m.kernel = std::string(u.sysname) + " " + u.release;
  }
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  m.timestamp_utc = buf;
  return m;
}

std::vector<std::string> build_warnings() {
  std::vector<std::string> w;
#ifndef __OPTIMIZE__
  w.push_back("built without optimisation: numbers are not representative (use the release preset)");
#endif
#ifdef FERRITE_SANITIZED
  w.push_back("built with sanitizers (FERRITE_SANITIZED): numbers are not representative");
#endif
#ifndef NDEBUG
  w.push_back("built with assertions enabled (NDEBUG not defined): numbers may be pessimistic");
#endif
  return w;
}

// ------------------------------------------------------------------ output

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
        {"heap_size", r.heap_size},
        {"prefill", r.prefill},
        {"pinned", r.pinned},
        {"error", r.error.empty() ? J(nullptr) : J(r.error)},
        {"machine", mj},
    };
    list.push_back(std::move(j));
  }
  return list;
}

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
  o << "experiment,structure,technique,persistent,workload,threads,backend,media,reps,ops_per_thread,"
       "duration_s,ops_total,empty_removes,mops_median,mops_min,mops_max,pwb_per_op,pfence_per_op,"
       "psync_per_op,combining_degree,reference,ratio,work,value_size,heap_size,prefill,pinned,error,"
       "cpu_model,cores,flush,compiler,cxx_flags,build_type,git_commit,timestamp_utc\n";
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
      << ',' << m.timestamp_utc << '\n';
  }
  return o.str();
}

std::string format_table(const std::vector<Record>& records) {
  std::ostringstream o;
  // Group consecutive records of one experiment (structure/workload/backend).
  std::size_t i = 0;
  while (i < records.size()) {
    const Record& h = records[i];
    std::size_t j = i;
    while (j < records.size() && records[j].experiment == h.experiment && records[j].structure == h.structure &&
           records[j].workload == h.workload && records[j].backend == h.backend &&
           records[j].heap_size == h.heap_size)
      ++j;
    std::size_t width = 9;
    for (std::size_t k = i; k < j; ++k) width = std::max(width, records[k].technique.size());
    std::string title = fmt::format("== {}{} | workload {} | backend {}", h.experiment.empty() ? "" : h.experiment + ": ",
                                    h.structure, h.workload, h.backend);
    if (h.heap_size) title += fmt::format(" | heap size {}", h.heap_size);
    title += fmt::format(" | work {} | {} ==", h.work,
                         h.duration_s > 0 ? fmt::format("{:g} s/rep", h.duration_s)
                                          : fmt::format("{} ops/thread", h.ops_per_thread));
    o << title << '\n';
    o << fmt::format("{:<{}} {:>3} {:>9} {:>9} {:>9} {:>8} {:>9} {:>8} {:>6} {:>7}  {}\n", "technique", width,
                     "thr", "Mops/s", "min", "max", "pwb/op", "pfence/op", "psync/op", "comb", "ratio", "");
    for (std::size_t k = i; k < j; ++k) {
      const Record& r = records[k];
      if (!r.error.empty()) {
        o << fmt::format("{:<{}} {:>3} FAILED: {}\n", r.technique, width, r.threads, r.error);
        continue;
      }
      const std::string kind = is_ferrite_technique(r.technique) ? "ferrite" : r.persistent ? "persistent" : "transient";
      o << fmt::format("{:<{}} {:>3} {:>9.3f} {:>9.3f} {:>9.3f} {:>8.3f} {:>9.3f} {:>8.3f} {:>6} {:>7}  {}\n",
                       r.technique, width, r.threads, r.mops_median, r.mops_min, r.mops_max, r.pwb_per_op,
                       r.pfence_per_op, r.psync_per_op,
                       r.combining_degree > 0 ? fmt::format("{:.1f}", r.combining_degree) : std::string("-"),
                       r.ratio ? fmt::format("{:.2f}x", *r.ratio) : std::string("-"), kind);
    }
    if (!h.reference.empty()) o << "ratio: Mops/s relative to " << h.reference << " at the same thread count\n";
    o << '\n';
    i = j;
  }
  return o.str();
}

// ------------------------------------------------------------------ plots

bool make_plots(const std::string& json_path, const std::string& dir, std::string* message) {
  std::string script;
#ifdef FERRITE_SOURCE_DIR
  script = std::string(FERRITE_SOURCE_DIR) + "/bench/plot.py";
#endif
  if (const char* s = std::getenv("FERRITE_PLOT_SCRIPT")) script = s;
  if (script.empty() || !std::filesystem::exists(script)) {
    *message = "plots skipped: bench/plot.py not found (set FERRITE_PLOT_SCRIPT to its path)";
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
    if (command_output(shell_quote(c) + " -c 'import matplotlib' >/dev/null 2>&1")) {
      python = c;
      break;
    }
  if (python.empty()) {
    *message =
        "plots skipped: no python3 with matplotlib found (tried $FERRITE_PYTHON, python3, /usr/bin/python3); "
        "install it with `apt-get install python3-matplotlib` or set FERRITE_PYTHON";
    return false;
  }
  const std::string cmd = shell_quote(python) + " " + shell_quote(script) + " " + shell_quote(json_path) +
                          " --out " + shell_quote(dir) + " 2>&1";
  auto out = command_output(cmd);
  if (!out) {
    *message = "plots failed: `" + cmd + "` did not succeed";
    return false;
  }
  *message = trim(*out);
  return true;
}

// ------------------------------------------------------------------ plans

namespace {

std::vector<std::string> names_for(Structure s, bool main_only) {
  std::vector<std::string> v;
  for (const Technique* t : techniques_for(s)) {
    // Ablation variants (e.g. pb-stack-no-elim) are not "main" techniques.
    if (main_only && t->name.find("-no-") != std::string::npos) continue;
    v.push_back(t->name);
  }
  return v;
}

}  // namespace

std::vector<Experiment> quick_plan() {
  std::vector<Experiment> plan;
  for (Structure s : {Structure::kAtomicFloat, Structure::kStack, Structure::kQueue, Structure::kHeap}) {
    Experiment e;
    e.label = "quick";
    e.structure = s;
    e.workload = default_workload(s);
    e.techniques = names_for(s, true);
    e.threads = {1, 2};
    e.duration_s = 0.2;
    e.reps = 3;
    e.warmup = 0;
    e.heap_size = 256;
    if (!e.techniques.empty()) plan.push_back(std::move(e));
  }
  return plan;
}

std::vector<Experiment> full_plan() {
  std::vector<Experiment> plan;
  auto add = [&](const std::string& label, Structure s, const std::string& backend, int heap_size = 1024) {
    Experiment e;
    e.label = label;
    e.structure = s;
    e.workload = default_workload(s);
    e.techniques = names_for(s, false);
    e.threads = {1, 2, 4, 8};
    e.backend_text = backend;
    if (!persist::parse_backend(backend, &e.backend)) throw std::logic_error("bad backend " + backend);
    e.duration_s = 1.0;
    e.reps = 3;
    e.warmup = 1;
    e.heap_size = heap_size;
    if (!e.techniques.empty()) plan.push_back(std::move(e));
  };
  add("fig1-2", Structure::kAtomicFloat, "hardware");  // throughput; pwb per op
  add("fig3", Structure::kAtomicFloat, "nosync");      // no psync
  add("fig4-5", Structure::kQueue, "hardware");        // throughput; pwb per op
  add("fig6", Structure::kQueue, "off");               // no pwb (synchronization alone)
  add("fig7a", Structure::kStack, "hardware");
  for (int size : {64, 128, 256, 512, 1024}) add("fig7b", Structure::kHeap, "hardware", size);
  return plan;
}

}  // namespace ferrite::bench
