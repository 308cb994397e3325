// Crash campaigns (crash/campaign.h): the runner — the process that runs
// the workload on the simulated pool and stops it at crash points. The
// restarted machine is the farm's (farm.h: zygote and guard; restart.cc:
// the workers); their messages are wire.h's.
#include "ferrite/crash/campaign.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <optional>
#include <utility>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "farm.h"
#include "ferrite/crash/sites.h"
#include "schedule.h"
#include "ferrite/crash/history.h"
#include "ferrite/crash/model.h"
#include "ferrite/crash/sim.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/layout.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/sync/backoff.h"
#include "wire.h"

namespace ferrite::crash {

namespace {

using Clock = std::chrono::steady_clock;

// ------------------------------------------- stopping the other threads
// At a crash point the crashing thread holds the simulator lock; the other
// workload threads are stopped with a signal whose handler sleeps until
// released, so the working memory is still while the crash state is
// captured (a real crash stops every thread wherever it is), and they do
// not spin on the CPU the farm's workers need. The crashing thread only
// captures, builds images and talks to the farm meanwhile; it takes no lock
// a stopped thread could hold except malloc's (glibc gives each of a few
// threads its own arena).
std::atomic<bool> g_stop{false};
std::atomic<int> g_stopped{0};
constexpr int kStopSignal = SIGUSR2;

void stop_handler(int) {
  const int saved = errno;
  g_stopped.fetch_add(1);
  sigset_t mask;
  ::sigprocmask(SIG_SETMASK, nullptr, &mask);
  ::sigdelset(&mask, kStopSignal);
  while (g_stop.load()) ::sigsuspend(&mask);
  g_stopped.fetch_sub(1);
  errno = saved;
}

using wire::mix;

// The threshold that samples about `want` of `verbs` crash points: k is
// sampled iff a mix of k is <= it (every point when want >= verbs).
std::uint64_t threshold_for(std::uint64_t want, std::uint64_t verbs) {
  const double p = verbs == 0 ? 1.0 : std::min(1.0, static_cast<double>(want) / static_cast<double>(verbs));
  return p >= 1.0 ? ~std::uint64_t{0} : static_cast<std::uint64_t>(p * 18446744073709551615.0);
}

// ------------------------------------------------------------ the campaign

struct Campaign {
  const SubjectInfo& info;
  const CampaignConfig& cfg;
  pmem::Pool* pool = nullptr;
  Subject* subject = nullptr;
  Spec spec = Spec::kQueue;
  bool detectable = false, buffered = false;
  State initial;
  History history;
  std::uint64_t sample_threshold = ~std::uint64_t{0};  // k sampled iff mix(seed^k) <= threshold
  // Inside creation (cfg.create_crash_points): k sampled iff its own mix <= this.
  std::uint64_t create_threshold = ~std::uint64_t{0};
  bool all_points = true;
  Clock::time_point start;

  std::atomic<std::uint64_t> ops_done{0};

  CampaignResult result;
  std::unordered_set<std::uint64_t> seen_k;
  internal::Farm* farm = nullptr;
  internal::Scheduler* sched = nullptr;  // scheduled multi-threaded run
  internal::Phase phase = internal::Phase::kRun;
  std::size_t nested_counter = 0;
  std::size_t post_crash_counter = 0;

  Campaign(const SubjectInfo& i, const CampaignConfig& c) : info(i), cfg(c) {}

  bool selected(std::uint64_t k) const {
    if (cfg.replay) return k == cfg.replay->k;
    if (phase != internal::Phase::kRun &&
        (!cfg.check_create_points || mix(cfg.seed ^ mix(k + 0x5eed)) > create_threshold))
      return false;
    if (all_points) return true;
    return mix(cfg.seed ^ mix(k + 1)) <= sample_threshold;
  }

  static void hook(void* ctx, std::uint64_t k, persist::Verb) {
    auto* c = static_cast<Campaign*>(ctx);
    if (c->sched == nullptr) return c->crash_point(k);
    c->sched->issued(k);
    struct Done {
      internal::Scheduler* s;
      ~Done() { s->point_done(); }
    } done{c->sched};
    c->crash_point(k);
  }

  void crash_point(std::uint64_t k) {
    if (cfg.stop_after_violations != 0 && result.violations >= cfg.stop_after_violations) return;
    if (!selected(k) || !seen_k.insert(k).second) return;
    const bool others = cfg.threads > 1 && phase == internal::Phase::kRun;
    // CRASH: every other thread stops wherever it is — blocked on the
    // simulator lock, between two stores of an operation, spinning on a
    // lock — as a real crash would stop it. (The restarted machine is a
    // fresh process: it needs nothing those threads hold.)
    if (others) stop_others();
    try {
      check_point(k);
    } catch (...) {
      if (others) resume_others();
      throw;
    }
    if (others) resume_others();
    if (cfg.progress) {
      CampaignProgress p;
      p.k = k;
      p.crash_points = result.crash_points;
      p.images_checked = result.images_checked;
      p.violations = result.violations;
      p.ops_done = ops_done.load(std::memory_order_relaxed);
      p.seconds = std::chrono::duration<double>(Clock::now() - start).count();
      cfg.progress(p);
    }
  }

  // The machine is stopped (this thread holds the simulator lock, every
  // other one is stopped): capture, build the images, let the farm
  // recover and check them.
  void check_point(std::uint64_t k) {
    const CrashState cs = sim::capture_locked(k);
    const std::vector<HistoryOp> ops = history.snapshot();
    ImageOptions iopt;
    iopt.tearing = cfg.tearing;
    ImageSet set;
    if (cfg.replay) {
      auto img = image_at(cs, cfg.replay->image, cfg.seed, iopt);
      if (!img) return;
      set.images.push_back(std::move(*img));
      set.built = 1;
      set.possible = 1;
    } else {
      set = images_for(cs, cfg.images, cfg.seed, iopt);
    }
    ++result.crash_points;
    if (phase != internal::Phase::kRun) ++result.create_points;
    result.images_built += set.built;
    result.images_deduped += set.built - set.images.size();
    result.possible_images += set.possible;
    if (set.exhaustive) ++result.points_exhaustive;
    internal::Job job;
    job.k = k;
    job.phase = phase;
    job.nested_depth = cfg.recovery_crash_depth > 0 &&
                               (cfg.replay || (++nested_counter % std::max<std::size_t>(cfg.recovery_crash_every, 1)) == 0)
                           ? cfg.recovery_crash_depth
                           : 0;
    job.post_crash = cfg.post_crash_every > 0 && (cfg.replay || (++post_crash_counter % cfg.post_crash_every) == 0);
    job.ops = &ops;
    job.initial = &initial;
    job.offsets = &cs.lines;
    for (const auto& img : set.images) job.images.push_back(&img);
    job.media_fd = sim::media_fd();
    job.media_size = cs.size;
    const auto verdicts = farm->check(job);
    result.worker_restarts = farm->restarts();
    for (const auto& v : verdicts) {
      ++result.images_checked;
      result.lines_per_image += cs.lines.size();
      result.nested_images += v.nested;
      result.second_images += v.second;
      ++result.engines[v.check.engine];
      if (v.check.verdict == CheckResult::Verdict::kInconclusive) ++result.inconclusive;
      if (!v.check.violation()) continue;
      ++result.violations;
      if (result.details.size() >= cfg.max_details) continue;
      Violation d;
      d.k = k;
      d.image = v.index;
      d.property = v.check.property;
      d.engine = v.check.engine;
      d.reason = v.check.reason;
      if (phase != internal::Phase::kRun) d.reason = "crash during " + std::string(internal::phase_name(phase)) + ": " + d.reason;
      for (const auto& img : set.images)
        if (img.index == v.index) d.image_how = img.how;
      if (sched != nullptr && !sched->gave_up()) d.verb_order = sched->prefix(k);
      d.replay = replay_command(info, cfg, k, v.index, d.verb_order);
      result.details.push_back(std::move(d));
    }
  }

  std::vector<pthread_t> workers;
  std::atomic<bool> go{false};  // workers start once `workers` is filled
  std::mutex failure_mu;
  std::exception_ptr failure;
  std::vector<std::atomic<bool>> worker_done = std::vector<std::atomic<bool>>(64);

  // Signals every other live worker thread and waits until each one sleeps
  // in the stop handler (or has finished): the working memory is still.
  void stop_others() {
    g_stop.store(true);
    int signalled = 0;
    std::vector<std::size_t> who;
    for (std::size_t i = 0; i < workers.size(); ++i)
      if (!worker_done[i].load() && !pthread_equal(workers[i], pthread_self())) {
        ::pthread_kill(workers[i], kStopSignal);
        who.push_back(i);
        ++signalled;
      }
    for (;;) {
      int gone = 0;
      for (auto i : who) gone += worker_done[i].load() ? 1 : 0;
      if (g_stopped.load() + gone >= signalled) break;
      std::this_thread::yield();
    }
  }
  void resume_others() {
    g_stop.store(false);
    // Wake the sleepers; repeat until every handler has left (a signal may
    // arrive between the flag test and sigsuspend).
    // Every other thread, finished or not: one that finished its last
    // operation just as it was signalled sleeps in the handler on its way
    // out (its thread is not joined before the run ends, so the signal is
    // safe).
    while (g_stopped.load() > 0) {
      for (std::size_t i = 0; i < workers.size(); ++i)
        if (!pthread_equal(workers[i], pthread_self())) ::pthread_kill(workers[i], kStopSignal);
      std::this_thread::yield();
    }
  }

  void worker(int tid, std::size_t n) {
    std::uint64_t rng = mix(cfg.seed * 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(tid) + 1);
    for (std::size_t i = 0; i < n; ++i) {
      if (sched != nullptr) sched->op_start(tid);  // a scheduling point (operations start here)
      const Op op = subject->next_op(tid, rng);
      const std::uint64_t seq = i + 1;
      const std::size_t idx = history.invoke(tid, seq, op);
      const Response r = subject->apply(tid, seq, op);
      history.respond(tid, idx, r);
      ops_done.fetch_add(1, std::memory_order_relaxed);
    }
  }

  std::size_t share(int tid) const {
    const auto t = static_cast<std::size_t>(cfg.threads);
    return cfg.ops / t + (static_cast<std::size_t>(tid) < cfg.ops % t ? 1 : 0);
  }

  // Runs the workload under `s` (null: unscheduled); returns the verb count.
  std::uint64_t run_scheduled(internal::Scheduler* s) {
    if (s == nullptr) return run_workload();
    sched = s;
    sim::set_turnstile(&internal::Scheduler::turnstile, s);
    internal::Scheduler::active.store(s, std::memory_order_release);
    sync::g_spin_hook.store(&internal::Scheduler::spin_hook, std::memory_order_release);
    struct Uninstall {
      ~Uninstall() {
        sim::set_turnstile(nullptr, nullptr);
        sync::g_spin_hook.store(nullptr, std::memory_order_release);
        internal::Scheduler::active.store(nullptr, std::memory_order_release);
      }
    } uninstall;
    return run_workload();
  }

  // Runs the workload on `subject`; returns the verb count.
  std::uint64_t run_workload() {
    std::vector<std::thread> ts;
    if (cfg.threads == 1) {
      worker(0, share(0));
    } else {
      struct sigaction sa {}, old {};
      sa.sa_handler = &stop_handler;
      ::sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      ::sigaction(kStopSignal, &sa, &old);
      for (auto& d : worker_done) d.store(false);
      for (int t = 0; t < cfg.threads; ++t)
        ts.emplace_back([this, t] {
          while (!go.load()) go.wait(false);
          internal::Scheduler::set_thread(t);
          struct Finish {
            internal::Scheduler* s;
            int t;
            ~Finish() {
              if (s != nullptr) s->finish(t);
            }
          } finish{sched, t};
          try {
            worker(t, share(t));
          } catch (...) {
            // Keep the first failure; the run goes on without this thread.
            std::lock_guard<std::mutex> g(failure_mu);
            if (!failure) failure = std::current_exception();
          }
          worker_done[static_cast<std::size_t>(t)].store(true);
        });
      workers.clear();
      for (auto& t : ts) workers.push_back(t.native_handle());
      go.store(true);
      go.notify_all();
      for (auto& t : ts) t.join();
      go.store(false);
      workers.clear();
      ::sigaction(kStopSignal, &old, nullptr);
      if (failure) std::rethrow_exception(std::exchange(failure, nullptr));
    }
    return sim::verbs();
  }
};

std::atomic<std::uint64_t> g_pool_counter{0};

struct PoolFile {
  std::string path;
  std::unique_ptr<pmem::Pool> pool;
  PoolFile(const CampaignConfig& cfg) {
    path = cfg.pool_dir + "/ferrite-crash-" + std::to_string(::getpid()) + "-" +
           std::to_string(g_pool_counter.fetch_add(1)) + ".pool";
    ::unlink(path.c_str());
    pmem::PoolOptions opts;
    opts.backend.kind = persist::BackendConfig::Kind::kSim;
    opts.arenas = std::max(cfg.instance_size(), 1) + 1;
    // Deterministic: a replayed crash point sees the same addresses, and the
    // base is 1 GiB aligned (restart.cc keeps its page tables).
    opts.placement = pmem::BasePlacement::kFirstFree;
    pool = pmem::Pool::create(path, cfg.pool_size, opts);
    if (cfg.dirty_heap) {
      // A used pool: every heap chunk holds old bytes (a pattern no
      // structure writes), durable before anything is created in it. Only
      // the chunk area: the header and chunk map stay as create wrote them.
      auto* base = static_cast<unsigned char*>(pool->base());
      const std::uint64_t chunks = pmem::layout::heap_chunk_count(pool->size());
      const std::uint64_t off = pmem::layout::heap_offset_for(chunks);
      for (std::uint64_t i = off; i < off + chunks * pmem::layout::kChunkSize; i += 8) {
        const std::uint64_t garbage = mix(i ^ 0xd1e7d1e7d1e7d1e7ull) | 1;  // odd: never a valid offset or pointer
        std::memcpy(base + i, &garbage, 8);
      }
      sim::settle(/*keep_count=*/true);  // crash_create numbers its crash points from the pool's creation
    }
  }
  ~PoolFile() {
    pool.reset();
    ::unlink(path.c_str());
  }
};

}  // namespace

std::string replay_command(const SubjectInfo& s, const CampaignConfig& cfg, std::uint64_t k, int image,
                           const std::string& verb_order) {
  std::string c = "ferrite crashtest --structure " + s.structure + " --variant " + s.variant +
                  " --threads " + std::to_string(cfg.threads) + " --ops " + std::to_string(cfg.ops) +
                  " --seed " + std::to_string(cfg.seed);
  if (cfg.pool_size != CampaignConfig{}.pool_size) c += " --pool-size " + std::to_string(cfg.pool_size);
  if (!cfg.tearing) c += " --no-tearing";
  if (cfg.model != CampaignConfig{}.model) c += " --model " + cfg.model;
  if (cfg.crash_create) c += " --crash-create";
  if (cfg.crash_create && cfg.create_crash_points > 0) c += " --create-crash-points " + std::to_string(cfg.create_crash_points);
  if (cfg.threads > 1 && cfg.schedule == CampaignConfig::Schedule::kFree) c += " --schedule free";
  if (cfg.threads > 1 && cfg.schedule == CampaignConfig::Schedule::kPct)
    c += " --schedule pct" +
         (cfg.pct_depth != CampaignConfig{}.pct_depth ? " --pct-depth " + std::to_string(cfg.pct_depth) : std::string());
  if (!verb_order.empty()) c += " --verb-order " + verb_order;
  if (cfg.post_ops != CampaignConfig{}.post_ops) c += " --post-ops " + std::to_string(cfg.post_ops);
  if (cfg.recovery_crash_depth > 0)
    c += " --crash-recovery " + std::to_string(cfg.recovery_crash_depth) + " --recovery-crash-points " +
         std::to_string(cfg.recovery_crash_points) + " --recovery-crash-images " + std::to_string(cfg.recovery_crash_images);
  if (cfg.post_crash_every > 0)
    c += " --post-crash-every " + std::to_string(cfg.post_crash_every) + " --post-crash-points " + std::to_string(cfg.post_crash_points) +
         " --post-crash-images " + std::to_string(cfg.post_crash_images);
  if (cfg.instance_threads > cfg.threads) c += " --instance-threads " + std::to_string(cfg.instance_threads);
  if (cfg.dirty_heap) c += " --dirty-heap";
  for (const auto& m : cfg.mutate_sites) c += " --mutate-site " + m;
  if (!cfg.replay_extra.empty()) c += " " + cfg.replay_extra;
  return c + " --replay " + std::to_string(k) + ":" + std::to_string(image);
}

CampaignResult run_campaign(const SubjectInfo& info, const CampaignConfig& cfg_in) {
  CampaignConfig raised = cfg_in;
  raised.pool_size = std::max(raised.pool_size, info.min_pool_size);
  const CampaignConfig& cfg = raised;
  if (cfg.threads < 1 || cfg.threads > 64) throw std::invalid_argument("crash campaign: threads must be in [1, 64]");
  if (cfg.images < 0) throw std::invalid_argument("crash campaign: images must be >= 0");
  if (cfg.replay && cfg.replay->image < 0) throw std::invalid_argument("crash campaign: replay image must be >= 0");
  if (cfg.recovery_crash_depth < 0 || cfg.recovery_crash_depth > 2)
    throw std::invalid_argument("crash campaign: recovery crash depth must be 0, 1 or 2");
  if (cfg.recovery_crash_images < 0) throw std::invalid_argument("crash campaign: recovery crash images must be >= 0");
  if (cfg.post_crash_images < 0) throw std::invalid_argument("crash campaign: post crash images must be >= 0");
  if (cfg.post_crash_every > 0 && cfg.post_crash_points == 0)
    throw std::invalid_argument("crash campaign: post crash points must be >= 1 with post crash every > 0");
  if (cfg.post_crash_every > 0 && cfg.post_ops == 0)
    throw std::invalid_argument("crash campaign: a second crash during post-recovery ops needs post ops > 0");
  if (cfg.threads > 26 && (cfg.schedule != CampaignConfig::Schedule::kFree || !cfg.verb_order.empty()))
    throw std::invalid_argument("crash campaign: scheduled runs support at most 26 threads");
  if (cfg.pct_depth < 1) throw std::invalid_argument("crash campaign: pct depth must be >= 1");
  if (!cfg.verb_order.empty()) {
    for (auto e : internal::Scheduler::decode(cfg.verb_order))  // throws std::invalid_argument when malformed
      if (const int t = e & internal::Scheduler::kThread; t >= cfg.threads)
        throw std::invalid_argument("crash campaign: the verb order names thread " + std::to_string(t) + " of " +
                                    std::to_string(cfg.threads));
  }
  if (find_model(cfg.model) == nullptr) {
    std::string known;
    for (const auto& m : model_names()) known += (known.empty() ? "" : ", ") + m;
    throw std::invalid_argument("crash campaign: unknown persistency model '" + cfg.model + "' (known: " + known + ")");
  }
  if (cfg.crash_create)
    if (auto why = crash_create_needs_writeback(cfg.model); !why.empty()) throw std::invalid_argument(why);
  if (cfg.instance_threads < 0 || cfg.instance_threads > 64)
    throw std::invalid_argument("crash campaign: instance threads must be in [0, 64]");
  // Before the farm forks: its workers inherit the suppression (and record
  // into the shared call-site table when it is enabled).
  if (!cfg.mutate_sites.empty() || sites::enabled()) sites::set_suppressed(cfg.mutate_sites);  // throws on a bad spec
  enable_sim();
  sim::set_model(cfg.model);
  Campaign c(info, cfg);
  c.result.structure = info.structure;
  c.result.variant = info.variant;
  c.result.threads = cfg.threads;
  c.result.ops = cfg.ops;
  c.result.seed = cfg.seed;
  c.result.sizes = cfg.sizes;
  c.result.model = cfg.model;
  c.start = Clock::now();
  try {
    // The farm first: its zygote must never see the run's pool or threads.
    internal::Farm farm(info, cfg);
    c.farm = &farm;
    const std::size_t points = cfg.crash_points != 0 ? cfg.crash_points : (cfg.threads > 1 ? 300 : 0);
    std::uint64_t dry_verbs = 0;
    if (points != 0 && !cfg.replay) {
      // Dry run: how many verbs does the workload issue?
      sites::set_phase(sites::Phase::kCreate);
      PoolFile pf(cfg);
      auto subject = info.make();
      subject->set_data_sizes(cfg.sizes);
      subject->create(*pf.pool, cfg.instance_size());
      sites::set_phase(sites::Phase::kRun);
      sim::settle();
      c.pool = pf.pool.get();
      c.subject = subject.get();
      c.history.reset(cfg.threads, cfg.ops / static_cast<std::size_t>(cfg.threads) + 2);
      // A scheduled campaign schedules its dry run too (no change points:
      // the count is what the change points are spread over), so one seed
      // gives one run.
      std::optional<internal::Scheduler> dry_sched;
      if (cfg.threads > 1 && cfg.schedule != CampaignConfig::Schedule::kFree && cfg.verb_order.empty())
        dry_sched.emplace(cfg.schedule == CampaignConfig::Schedule::kRandom ? internal::Scheduler::Mode::kRandom
                                                                            : internal::Scheduler::Mode::kPct,
                          cfg.threads, cfg.seed, 1, 0);
      if (dry_sched)  // verbs are scheduling events: the scheduler hears of each (no crash points here)
        sim::set_crash_hook(
            [](void* s, std::uint64_t k, persist::Verb) {
              static_cast<internal::Scheduler*>(s)->issued(k);
              static_cast<internal::Scheduler*>(s)->point_done();
            },
            &*dry_sched);
      std::uint64_t verbs = 0;
      try {
        verbs = c.run_scheduled(dry_sched ? &*dry_sched : nullptr);
      } catch (...) {
        sim::set_crash_hook(nullptr, nullptr);
        c.sched = nullptr;
        throw;
      }
      sim::set_crash_hook(nullptr, nullptr);
      c.sched = nullptr;
      dry_verbs = verbs;
      c.all_points = false;
      c.sample_threshold = threshold_for(points, verbs);
      c.ops_done.store(0);
    }
    if (cfg.crash_create) {
      // The initial abstract state, for crash points inside create.
      sites::set_phase(sites::Phase::kCreate);
      PoolFile pf(cfg);
      auto subject = info.make();
      subject->set_data_sizes(cfg.sizes);
      subject->create(*pf.pool, cfg.instance_size());
      sites::set_phase(sites::Phase::kRun);
      c.initial = subject->observe();
      if (cfg.create_crash_points > 0) {
        // Creation is deterministic: this one issued as many verbs as the
        // crashed one will (k counts from the pool's creation).
        c.create_threshold = threshold_for(cfg.create_crash_points, sim::verbs());
      }
      c.history.reset(cfg.threads, 1);
      c.phase = internal::Phase::kCreatePool;
      sim::set_crash_hook(&Campaign::hook, &c);
    }
    std::optional<PoolFile> pf;
    std::unique_ptr<Subject> subject;
    try {
      sites::set_phase(sites::Phase::kCreate);
      pf.emplace(cfg);
      c.phase = internal::Phase::kCreateStructure;
      subject = info.make();
      subject->set_data_sizes(cfg.sizes);
      subject->create(*pf->pool, cfg.instance_size());
      sites::set_phase(sites::Phase::kRun);
      c.phase = internal::Phase::kRun;
    } catch (...) {
      sim::set_crash_hook(nullptr, nullptr);
      throw;
    }
    c.pool = pf->pool.get();
    c.subject = subject.get();
    c.spec = subject->spec();
    c.detectable = subject->detectable();
    c.buffered = subject->buffered();
    c.initial = subject->observe();
    if (!cfg.crash_create) sim::settle();
    c.history.reset(cfg.threads, cfg.ops / static_cast<std::size_t>(cfg.threads) + 2);
    std::optional<internal::Scheduler> sched;
    if (cfg.threads > 1 && (cfg.schedule != CampaignConfig::Schedule::kFree || !cfg.verb_order.empty())) {
      const auto mode = !cfg.verb_order.empty()                               ? internal::Scheduler::Mode::kReplay
                        : cfg.schedule == CampaignConfig::Schedule::kRandom ? internal::Scheduler::Mode::kRandom
                                                                            : internal::Scheduler::Mode::kPct;
      sched.emplace(mode,
                    cfg.threads, cfg.seed, cfg.pct_depth, dry_verbs,
                    cfg.verb_order.empty() ? std::vector<std::uint8_t>{} : internal::Scheduler::decode(cfg.verb_order));
      c.result.schedule = mode == internal::Scheduler::Mode::kReplay   ? "replay"
                          : mode == internal::Scheduler::Mode::kRandom ? "random"
                                                                       : "pct";
    }
    sim::set_crash_hook(&Campaign::hook, &c);
    try {
      c.result.verbs = c.run_scheduled(sched ? &*sched : nullptr);
      sim::crash_now();  // the end of the run is a crash point too
    } catch (...) {
      sim::set_crash_hook(nullptr, nullptr);
      c.sched = nullptr;
      throw;
    }
    sim::set_crash_hook(nullptr, nullptr);
    if (sched) {
      c.result.schedule_diverged = sched->diverged();
      c.result.schedule_stalls = sched->stalls();
    }
    c.sched = nullptr;
    c.farm = nullptr;
    if (cfg.replay) c.result.replay_reached = c.result.images_checked > 0;
  } catch (const std::exception& e) {
    c.result.error = e.what();
  }
  auto& r = c.result;
  r.seconds = std::chrono::duration<double>(Clock::now() - c.start).count();
  r.images_per_second = r.seconds > 0 ? static_cast<double>(r.images_checked) / r.seconds : 0;
  if (r.images_checked > 0) r.lines_per_image /= r.images_checked;
  r.coverage = r.possible_images > 0 ? std::min(1.0, static_cast<double>(r.images_checked) / r.possible_images) : 1.0;
  return r;
}

}  // namespace ferrite::crash
