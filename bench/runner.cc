// bench/runner.cc — the runner: workloads, one repetition (threads,
// barriers, timing), the points of an experiment, the reference technique
// and the ratios. See harness.h for how a run works.
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "ferrite/pmem/pool.h"
#include "ferrite/sync/cache_padded.h"
#include "harness.h"

namespace ferrite::bench {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string fresh_pool_path(const std::string& dir) {
  static std::atomic<std::uint64_t> counter{0};
  return fmt::format("{}/ferrite-bench-{}-{}.pool", dir, ::getpid(),
                     counter.fetch_add(1, std::memory_order_relaxed));
}

// ------------------------------------------------------------------ workloads

std::string workload_name(Workload w) {
  switch (w) {
    case Workload::kPairs: return "pairs";
    case Workload::kMix: return "mix";
    case Workload::kPrefilled: return "prefilled";
    case Workload::kHeapPairs: return "heap-pairs";
    case Workload::kMultiply: return "multiply";
    case Workload::kKeyMix: return "key-mix";
  }
  return "?";
}

bool parse_workload(const std::string& text, Workload* out) {
  for (Workload w : {Workload::kPairs, Workload::kMix, Workload::kPrefilled, Workload::kHeapPairs,
                     Workload::kMultiply, Workload::kKeyMix})
    if (workload_name(w) == text) { *out = w; return true; }
  return false;
}

namespace {
bool keyed(Structure s) { return s == Structure::kSet || s == Structure::kMap; }
}  // namespace

Workload default_workload(Structure s) {
  switch (s) {
    case Structure::kRegister: return Workload::kMultiply;
    case Structure::kPriorityQueue: return Workload::kHeapPairs;
    case Structure::kSet:
    case Structure::kMap: return Workload::kKeyMix;
    default: return Workload::kPairs;
  }
}

std::string check_workload(Structure s, Workload w) {
  if (s == Structure::kRegister && w != Workload::kMultiply)
    return "atomic-float supports only the 'multiply' workload (every operation is a multiply)";
  if (s != Structure::kRegister && w == Workload::kMultiply)
    return "the 'multiply' workload is for atomic-float only";
  if (w == Workload::kHeapPairs && s != Structure::kPriorityQueue)
    return "the 'heap-pairs' workload is for the heap only";
  if (keyed(s) && w != Workload::kKeyMix)
    return "set and map support only the 'key-mix' workload (get:insert:remove, see --mix)";
  if (!keyed(s) && w == Workload::kKeyMix)
    return "the 'key-mix' workload is for set and map only";
  if (s == Structure::kLog) return "the log has no benchmark workload";
  return {};
}

std::string KeyMix::to_string() const { return fmt::format("{}:{}:{}", get, insert, remove); }

std::string parse_key_mix(const std::string& text, KeyMix* out) {
  int v[3];
  std::size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    const std::size_t end = i < 2 ? text.find(':', pos) : text.size();
    if (end == std::string::npos || end == pos)
      return "'" + text + "' is not G:I:R (get:insert:remove percentages, e.g. 50:25:25)";
    const std::string part = text.substr(pos, end - pos);
    if (part.find_first_not_of("0123456789") != std::string::npos || part.size() > 3)
      return "'" + text + "': '" + part + "' is not a percentage (0-100)";
    v[i] = std::stoi(part);
    pos = end + 1;
  }
  if (v[0] > 100 || v[1] > 100 || v[2] > 100 || v[0] + v[1] + v[2] != 100)
    return fmt::format("'{}': get:insert:remove percentages must sum to 100 (they sum to {}); "
                       "e.g. 50:25:25 (nbMontage's 2:1:1), 90:5:5 (18:1:1), 80:10:10 (Mirror)",
                       text, v[0] + v[1] + v[2]);
  *out = KeyMix{v[0], v[1], v[2]};
  return {};
}

std::string key_mix_from_read_pct(int read_pct, KeyMix* out) {
  if (read_pct < 0 || read_pct > 100) return fmt::format("read percentage {} is not in [0, 100]", read_pct);
  const int rest = 100 - read_pct;
  *out = KeyMix{read_pct, rest - rest / 2, rest / 2};
  return {};
}

std::uint64_t effective_prefill(const Experiment& e) {
  if (e.workload == Workload::kHeapPairs) return static_cast<std::uint64_t>(e.heap_size / 2);
  if (e.workload == Workload::kKeyMix) return e.prefill.value_or(e.key_range / 2);
  return e.prefill.value_or(0);
}

std::string check_experiment(const Experiment& e) {
  if (e.threads.empty()) return "no thread counts";
  for (int t : e.threads)
    if (t <= 0) return fmt::format("thread count {} is not > 0", t);
  if ((e.duration_s > 0) == (e.ops_per_thread > 0)) return "exactly one of ops_per_thread and duration_s must be > 0";
  if (e.reps <= 0) return "reps must be > 0";
  if (auto why = check_workload(e.structure, e.workload); !why.empty()) return why;
  if (e.workload == Workload::kKeyMix) {
    if (e.mix.get < 0 || e.mix.insert < 0 || e.mix.remove < 0 || e.mix.get + e.mix.insert + e.mix.remove != 100)
      return fmt::format("get:insert:remove {} must be percentages summing to 100", e.mix.to_string());
    if (e.key_range == 0 || e.key_range > (std::uint64_t{1} << 40))
      return fmt::format("key range {} is not in [1, 2^40]", e.key_range);
    if (effective_prefill(e) > e.key_range)
      return fmt::format("prefill {} exceeds the key range {} (the prefill inserts distinct keys)",
                         effective_prefill(e), e.key_range);
  } else if (e.sync_every > 0) {
    return "sync_every applies to the set and map key-mix workload only";
  }
  if (e.key_size == 0 || e.key_size > (std::size_t{16} << 20))
    return fmt::format("key size {} is not in [1, 16 MiB]", e.key_size);
  if (e.key_size != 8 && !(e.structure == Structure::kMap && e.workload == Workload::kKeyMix))
    return "keys other than 8 bytes apply to the map key-mix workload only";
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


// The key-mix prefill inserts `prefill` distinct keys of [1, range]: the
// i-th is 1 + (i * stride) mod range with stride coprime to range (a
// permutation, so no duplicates), spread over the range rather than its
// first half.
std::uint64_t prefill_stride(std::uint64_t range) {
  std::uint64_t s = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(static_cast<double>(range) * 0.6180339887));
  while (std::gcd(s, range) != 1) ++s;
  return s;
}

// One thread's counts. Padded: workers update them in the timed loop.
struct alignas(sync::kPadding) WorkerOut : KeyMixCounts {
  std::uint64_t ops = 0, empty = 0;
  std::uint64_t prefill_added = 0;
  std::vector<double> sync_ns;
  std::exception_ptr error;
};

// Did a keyed operation find its key (lookup, remove) / add one (insert)?
// Sets answer booleans; a map's get/erase answer the value when present,
// its put the old value when the key was there.
bool key_found(Structure s, const op::Response& r) {
  return s == Structure::kSet ? r.has_value && r.value != 0 : r.has_value;
}
bool key_added(Structure s, const op::Response& r) {
  return s == Structure::kSet ? r.has_value && r.value != 0 : !r.has_value;
}

}  // namespace

// ------------------------------------------------------------------ one rep

RepResult run_rep(const Technique& t, const Experiment& e, int threads, std::uint64_t seed) {
  if (threads <= 0) throw std::invalid_argument("threads must be > 0");
  RunParams params;
  params.threads = threads;
  params.max_threads = std::max(threads, *std::max_element(e.threads.begin(), e.threads.end()));
  params.value_size = e.value_size;
  params.key_size = e.structure == Structure::kMap && e.workload == Workload::kKeyMix ? e.key_size : 8;
  params.heap_capacity = e.heap_size;
  params.prefill = effective_prefill(e);
  params.key_range = e.workload == Workload::kKeyMix ? e.key_range : 0;
  params.pool_dir = e.pool_dir;
  params.backend = e.backend;
  params.seed = seed;
  params.sync_every = e.workload == Workload::kKeyMix && t.buffered ? e.sync_every : 0;

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
    pool = pmem::Pool::create(path, e.pool_cap != 0 ? std::min(t.pool_size, e.pool_cap) : t.pool_size, opts);
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

  const Structure s = e.structure;
  const bool keyed_workload = e.workload == Workload::kKeyMix;
  const std::uint64_t key_range = e.key_range;
  const std::uint64_t stride = keyed_workload ? prefill_stride(key_range) : 1;
  // Thresholds of the key-mix draw in [0, 100).
  const std::uint64_t get_below = static_cast<std::uint64_t>(e.mix.get);
  const std::uint64_t insert_below = get_below + static_cast<std::uint64_t>(e.mix.insert);
  const op::Kind lookup = op::lookup_kind(s), add = op::insert_kind(s), take = op::remove_kind(s);
  const std::uint64_t sync_every = params.sync_every;

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
      const bool heap = s == Structure::kPriorityQueue;
      const auto next_value = [&]() -> std::int64_t {
        return heap ? static_cast<std::int64_t>(rng.below(1u << 20)) : unique_value();
      };
      inst->thread_init(tid);
      // This thread's share of the prefill (threads split it evenly).
      const std::uint64_t n = static_cast<std::uint64_t>(threads), id = static_cast<std::uint64_t>(tid);
      const std::uint64_t share = params.prefill / n + (id < params.prefill % n ? 1 : 0);
      if (keyed_workload) {
        // Elements [first, first + share) of the prefill permutation.
        const std::uint64_t first = id * (params.prefill / n) + std::min(id, params.prefill % n);
        for (std::uint64_t i = first; i < first + share; ++i) {
          const auto key = static_cast<std::int64_t>(1 + static_cast<std::uint64_t>(
                                                             (static_cast<unsigned __int128>(i) * stride) % key_range));
          if (key_added(s, inst->apply(tid, ++seq, op::Op{add, key, unique_value()}))) ++o.prefill_added;
        }
      } else {
        for (std::uint64_t i = 0; i < share; ++i) inst->insert(tid, ++seq, next_value());
      }

      phase = 1;
      start_barrier.arrive_and_wait();
      const Clock::time_point deadline = t_start + duration;
      const std::uint64_t work_bound = static_cast<std::uint64_t>(std::max(0, e.work)) + 1;
      std::uint64_t ops = 0, empty = 0;
      std::uint64_t lookups = 0, hits = 0, inserts = 0, added = 0, removes = 0;
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
          case Workload::kKeyMix: {
            const std::uint64_t draw = rng.below(100);
            const auto key = static_cast<std::int64_t>(1 + rng.below(key_range));
            if (draw < get_below) {
              ++lookups;
              if (key_found(s, inst->apply(tid, ++seq, op::Op{lookup, key, 0}))) ++hits;
            } else if (draw < insert_below) {
              ++inserts;
              if (key_added(s, inst->apply(tid, ++seq, op::Op{add, key, unique_value()}))) ++added;
            } else {
              ++removes;
              if (!key_found(s, inst->apply(tid, ++seq, op::Op{take, key, 0}))) ++empty;
            }
            local_work(rng.below(work_bound));
            ops += 1;
            if (sync_every != 0 && ops % sync_every == 0) {
              // Timed alone; not an operation (see Experiment::sync_every).
              const Clock::time_point t0 = Clock::now();
              inst->apply(tid, ++seq, op::Op{op::kSync, 0, 0});
              o.sync_ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
            }
            break;
          }
        }
      }
      o.ops = ops;
      o.empty = empty;
      o.lookups = lookups;
      o.lookup_hits = hits;
      o.inserts = inserts;
      o.keys_added = added;
      o.removes = removes;
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
    res += static_cast<const KeyMixCounts&>(o);
    res.prefill_added += o.prefill_added;
    res.sync_ns.insert(res.sync_ns.end(), o.sync_ns.begin(), o.sync_ns.end());
  }
  res.counters = c_end;
  res.combining_degree = inst->combining_degree();
  inst.reset();
  if (keyed_workload && res.prefill_added != params.prefill)
    throw std::runtime_error(fmt::format("{}: the prefill added {} of {} distinct keys (lost or refused inserts)",
                                         t.name, res.prefill_added, params.prefill));
  return res;
}

// ------------------------------------------------------------------ points

std::string technique_kind(bool ferrite, bool persistent) {
  return ferrite ? "ferrite" : persistent ? "persistent" : "transient";
}

std::vector<const Technique*> techniques_for(Structure s) {
  std::vector<const Technique*> v;
  for (const auto& t : techniques())
    if (t.structure == s) v.push_back(&t);
  auto group = [](const Technique* t) { return t->ferrite ? 0 : t->persistent ? 1 : 2; };
  std::sort(v.begin(), v.end(), [&](const Technique* a, const Technique* b) {
    if (group(a) != group(b)) return group(a) < group(b);
    return a->name < b->name;
  });
  return v;
}

namespace {

Record base_record(const Experiment& e, const Technique& t, int threads) {
  Record r;
  r.experiment = e.label;
  r.structure = structure_name(e.structure);
  r.technique = t.name;
  r.description = t.description;
  r.persistent = t.persistent;
  r.family = t.family;
  r.ferrite = t.ferrite;
  r.ablation = t.ablation;
  r.map_semantics = t.map_semantics;
  r.workload = workload_name(e.workload);
  r.backend = e.backend.to_string();
  r.media = "none";
  r.threads = threads;
  r.reps = e.reps;
  r.ops_per_thread = e.duration_s > 0 ? 0 : e.ops_per_thread;
  r.duration_s = e.duration_s;
  r.work = e.work;
  r.value_size = e.value_size;
  r.key_size = e.structure == Structure::kMap && e.workload == Workload::kKeyMix ? e.key_size : 0;
  r.heap_size = e.structure == Structure::kPriorityQueue ? e.heap_size : 0;
  r.prefill = effective_prefill(e);
  r.pinned = e.pin;
  if (e.workload == Workload::kKeyMix) {
    r.mix = e.mix.to_string();
    r.key_range = e.key_range;
    r.sync_every = e.sync_every;
  }
  return r;
}

}  // namespace

std::vector<Record> run_experiment(const Experiment& e, const ProgressFn& progress) {
  if (auto why = check_experiment(e); !why.empty()) throw std::invalid_argument(why);

  std::vector<Record> records;
  const std::size_t points = e.techniques.size() * e.threads.size();
  std::size_t point = 0;
  for (const std::string& name : e.techniques) {
    const Technique* t = find_technique(e.structure, name);
    if (t == nullptr)
      throw std::invalid_argument("unknown technique '" + name + "' for " + structure_name(e.structure));
    if (!t->takes_key_size(e.key_size))
      throw std::invalid_argument("technique '" + name + "' does not take " + std::to_string(e.key_size) +
                                  "-byte keys");
    for (int threads : e.threads) {
      ++point;
      Record r = base_record(e, *t, threads);
      persist::Counters total{};
      double degree_sum = 0;
      std::vector<double> sync_ns;  // all measured reps
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
          r += static_cast<const KeyMixCounts&>(rr);
          total += rr.counters;
          degree_sum += rr.combining_degree;
          sync_ns.insert(sync_ns.end(), rr.sync_ns.begin(), rr.sync_ns.end());
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
        if (r.lookups > 0) r.hit_rate = static_cast<double>(r.lookup_hits) / static_cast<double>(r.lookups);
        r.syncs = sync_ns.size();
        if (!sync_ns.empty()) {
          std::sort(sync_ns.begin(), sync_ns.end());
          r.sync_us_mean = std::accumulate(sync_ns.begin(), sync_ns.end(), 0.0) / static_cast<double>(sync_ns.size()) / 1e3;
          r.sync_us_median = median(sync_ns) / 1e3;
          // Nearest rank: the smallest latency >= 99% of them.
          const std::size_t rank = (sync_ns.size() * 99 + 99) / 100;
          r.sync_us_p99 = sync_ns[std::max<std::size_t>(rank, 1) - 1] / 1e3;
          r.sync_us_max = sync_ns.back() / 1e3;
        }
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

// ------------------------------------------------------------------ reference

std::string choose_reference(const std::vector<Record>& records, const std::string& wanted) {
  std::vector<std::string> order;  // techniques with at least one good point
  std::map<std::string, std::vector<double>> mops;
  std::map<std::string, bool> competitor;
  for (const auto& r : records) {
    if (!r.error.empty()) continue;
    if (!mops.count(r.technique)) order.push_back(r.technique);
    mops[r.technique].push_back(r.mops_median);
    competitor[r.technique] = r.persistent && !r.ferrite;
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

}  // namespace ferrite::bench
