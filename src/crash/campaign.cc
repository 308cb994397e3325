// Crash campaigns (crash/campaign.h).
#include "ferrite/crash/campaign.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

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

#include "ferrite/crash/history.h"
#include "ferrite/crash/sim.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"

namespace ferrite::crash {

namespace {

using Clock = std::chrono::steady_clock;

// ------------------------------------------- stopping the other threads
// While a crashed child (and its grandchildren) run, the parent's other
// worker threads would only spin (e.g. on a lock held by the crashing
// thread) and starve the children of CPU. After the fork they are stopped
// with a signal whose handler sleeps until released. The child's snapshot is
// taken already, so this has no effect on what is checked.
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

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// ------------------------------------------------------ pipe serialization

class Writer {
 public:
  void u64(std::uint64_t v) { buf_.append(reinterpret_cast<const char*>(&v), 8); }
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void str(const std::string& s) {
    u64(s.size());
    buf_ += s;
  }
  void vec(const std::vector<std::int64_t>& v) {
    u64(v.size());
    for (auto x : v) i64(x);
  }
  // Writes everything; in children only (no exceptions needed).
  void flush(int fd) {
    const char* p = buf_.data();
    std::size_t left = buf_.size();
    while (left > 0) {
      const ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    buf_.clear();
  }

 private:
  std::string buf_;
};

class Reader {
 public:
  explicit Reader(std::string s) : s_(std::move(s)) {}
  bool ok() const { return ok_; }
  std::uint64_t u64() {
    std::uint64_t v = 0;
    if (pos_ + 8 > s_.size()) { ok_ = false; return 0; }
    std::memcpy(&v, s_.data() + pos_, 8);
    pos_ += 8;
    return v;
  }
  std::int64_t i64() { return static_cast<std::int64_t>(u64()); }
  std::string str() {
    const auto n = u64();
    if (!ok_ || pos_ + n > s_.size()) { ok_ = false; return {}; }
    std::string r = s_.substr(pos_, n);
    pos_ += n;
    return r;
  }
  std::vector<std::int64_t> vec() {
    const auto n = u64();
    std::vector<std::int64_t> v;
    if (!ok_ || n > (s_.size() - pos_) / 8) { ok_ = false; return v; }
    v.reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) v.push_back(i64());
    return v;
  }

 private:
  std::string s_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

std::string read_all(int fd) {
  std::string out;
  char buf[1 << 14];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

int wait_child(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
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
  bool all_points = true;
  Clock::time_point start;

  // Parking of worker threads between ops while a crash point is processed.
  std::atomic<bool> park{false};
  std::atomic<int> parked{0}, finished{0};
  std::atomic<std::uint64_t> ops_done{0};

  CampaignResult result;
  std::unordered_set<std::uint64_t> seen_k;
  std::optional<CrashState> captured;  // taken by the parent (one thread)

  Campaign(const SubjectInfo& i, const CampaignConfig& c) : info(i), cfg(c) {}

  bool selected(std::uint64_t k) const {
    if (cfg.replay) return k == cfg.replay->k;
    if (all_points) return true;
    return mix(cfg.seed ^ mix(k + 1)) <= sample_threshold;
  }

  static void hook(void* ctx, std::uint64_t k, persist::Verb) { static_cast<Campaign*>(ctx)->crash_point(k); }

  void crash_point(std::uint64_t k) {
    if (cfg.stop_after_violations != 0 && result.violations >= cfg.stop_after_violations) return;
    if (!selected(k) || !seen_k.insert(k).second) return;
    if (cfg.threads > 1) {
      // Let the other threads reach a verb (blocked on the simulator lock) or
      // finish their current op, so none holds a volatile lock the crashed
      // child's recovery might need. Bounded: spinning waiters never arrive.
      park.store(true, std::memory_order_seq_cst);
      const auto deadline = Clock::now() + std::chrono::milliseconds(2);
      while (sim::threads_waiting() + parked.load() + finished.load() < cfg.threads - 1 && Clock::now() < deadline)
        std::this_thread::yield();
    }
    // With one thread nothing else runs: capture here, where the media
    // mapping is already faulted in (a child would re-fault every page of
    // it). With several threads the child captures from its atomic snapshot.
    if (cfg.threads == 1) captured = sim::capture_locked(k);
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("crash campaign: pipe failed");
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("crash campaign: fork failed: " + std::string(std::strerror(errno)));
    if (pid == 0) {
      ::close(fds[0]);
      sim::enter_child();
      Writer w;
      crashed_machine(k, w);
      w.flush(fds[1]);
      ::_exit(0);
    }
    ::close(fds[1]);
    captured.reset();
    if (cfg.threads > 1) stop_others();
    Reader r(read_all(fds[0]));
    ::close(fds[0]);
    const int status = wait_child(pid);
    merge_report(k, r, status);
    if (cfg.threads > 1) {
      resume_others();
      park.store(false, std::memory_order_seq_cst);
      park.notify_all();
    }
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

  std::vector<pthread_t> workers;
  std::atomic<bool> go{false};  // workers start once `workers` is filled
  std::mutex failure_mu;
  std::exception_ptr failure;
  std::vector<std::atomic<bool>> worker_done = std::vector<std::atomic<bool>>(64);

  void stop_others() {
    g_stop.store(true);
    for (std::size_t i = 0; i < workers.size(); ++i)
      if (!worker_done[i].load() && !pthread_equal(workers[i], pthread_self())) ::pthread_kill(workers[i], kStopSignal);
  }
  void resume_others() {
    g_stop.store(false);
    // Wake the sleepers; repeat until every handler has left (a signal may
    // arrive between the flag test and sigsuspend).
    while (g_stopped.load() > 0) {
      for (std::size_t i = 0; i < workers.size(); ++i)
        if (!worker_done[i].load() && !pthread_equal(workers[i], pthread_self())) ::pthread_kill(workers[i], kStopSignal);
      std::this_thread::yield();
    }
  }

  // --------------------------------------------------------- in the child

  struct Outcome {
    bool recovered = false;
    std::string error;
    State s0, s1;
    std::vector<Response> answers;
  };

  // The crash image file of the current crash point (in the child): the
  // working memory, into which each image's lines are written in turn.
  std::string image_path;
  int image_fd = -1;
  const CrashState* restore = nullptr;  // media lines to write back

  void create_image_file() {
    image_fd = sim::media_fd();
    if (image_fd < 0) throw std::runtime_error("the simulator has no media image");
    image_path = "/proc/self/fd/" + std::to_string(image_fd);
    // The working memory is not needed any more in this process; dropping it
    // keeps the per-image fork cheap and frees the base for Pool::open.
    ::munmap(pool->base(), pool->size());
    sim::set_child_backing_fd(image_fd);
  }

  // CRASH: the media image is shared with the parent (blocked in waitpid
  // under the simulator lock): images are written over it line by line and
  // the media lines are written back before this process exits.
  // Through the shared mapping of the memfd: a store per line, not a
  // pwrite system call per line (images differ in up to hundreds of lines).
  void write_lines(const CrashState& cs, const std::vector<Line>& lines) {
    std::uint8_t* media = sim::media_data();
    if (media == nullptr) throw std::runtime_error("cannot write the crash image: the simulator has no media image");
    for (std::size_t i = 0; i < cs.lines.size(); ++i)
      std::memcpy(media + cs.lines[i], lines[i].data(), persist::kCacheLine);
  }

  // In a grandchild: the restarted machine opens the image file as the pool
  // (header validation, then pool-level recovery unless cfg.recover_pool is
  // false); the sim maps it MAP_PRIVATE. The Pool is deliberately leaked
  // (the process ends with _exit).
  pmem::Pool& reopen_on_image() {
    pmem::PoolOptions opts;
    opts.backend.kind = persist::BackendConfig::Kind::kSim;
    opts.arenas = std::max(cfg.threads, 1) + 1;
    opts.recover = cfg.recover_pool;
    return *pmem::Pool::open(image_path, opts).release();
  }

  // One image, recovered in a grandchild.
  Outcome recover_image(const std::vector<std::size_t>& pending_idx, const std::vector<HistoryOp>& ops) {
    Outcome out;
    int fds[2];
    if (::pipe(fds) != 0) {
      out.error = "pipe failed";
      return out;
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
      out.error = "fork failed";
      ::close(fds[0]);
      ::close(fds[1]);
      return out;
    }
    if (pid == 0) {
      ::close(fds[0]);
      ::alarm(static_cast<unsigned>(cfg.recovery_timeout_s));
      Writer w;
      try {
        // The restarted machine: the pool file holds the crash image and is
        // opened afresh (header validation, pool-level recovery).
        pmem::Pool& restarted = reopen_on_image();
        subject->recover(restarted, cfg.threads);
        State s0 = subject->observe();
        std::vector<Response> answers;
        State s1;
        if (detectable && !buffered) {
          for (auto i : pending_idx) answers.push_back(subject->recover_op(ops[i].tid, ops[i].seq, ops[i].op));
          s1 = subject->observe();
        }
        w.u64(1);
        w.vec(s0);
        w.u64(answers.size());
        for (auto& a : answers) {
          w.u64(a.has_value);
          w.i64(a.value);
        }
        w.vec(s1);
      } catch (const std::exception& e) {
        w.u64(2);
        w.str(std::string("recovery threw: ") + e.what());
      } catch (...) {
        w.u64(2);
        w.str("recovery threw a non-standard exception");
      }
      w.flush(fds[1]);
      ::_exit(0);
    }
    ::close(fds[1]);
    Reader r(read_all(fds[0]));
    ::close(fds[0]);
    const int status = wait_child(pid);
    if (WIFSIGNALED(status)) {
      const int sig = WTERMSIG(status);
      out.error = sig == SIGALRM ? "recovery hung (no answer within " + std::to_string(cfg.recovery_timeout_s) + " s)"
                                 : "recovery crashed: " + std::string(strsignal(sig));
      return out;
    }
    const auto tag = r.u64();
    if (!r.ok() || (tag != 1 && tag != 2)) {
      out.error = "recovery exited without an answer (status " + std::to_string(WEXITSTATUS(status)) + ")";
      return out;
    }
    if (tag == 2) {
      out.error = r.str();
      return out;
    }
    out.s0 = r.vec();
    const auto n = r.u64();
    for (std::uint64_t i = 0; i < n && r.ok(); ++i) {
      Response a;
      a.has_value = r.u64() != 0;
      a.value = r.i64();
      out.answers.push_back(a);
    }
    out.s1 = r.vec();
    if (!r.ok()) out.error = "garbled answer from the recovery process";
    out.recovered = out.error.empty();
    return out;
  }

  // The crashed machine: builds, recovers and checks every image of crash
  // point k and writes a report for the parent.
  void crashed_machine(std::uint64_t k, Writer& w) {
    std::uint64_t built = 0, checked = 0, deduped = 0, violations = 0, inconclusive = 0, lines = 0;
    std::map<std::string, std::uint64_t> engines;
    std::vector<Violation> details;
    CrashState cs;
    try {
      cs = captured ? std::move(*captured) : sim::capture_locked(k);
      const std::vector<HistoryOp> ops = history.snapshot();
      std::vector<std::size_t> pending_idx;
      for (std::size_t i = 0; i < ops.size(); ++i)
        if (!ops[i].completed()) pending_idx.push_back(i);
      std::vector<int> indices;
      if (cfg.replay) {
        indices.push_back(cfg.replay->image);
      } else {
        for (int i = 0; i < cfg.images + 2; ++i) indices.push_back(i);
      }
      create_image_file();
      restore = nullptr;
      std::unordered_set<std::uint64_t> seen;
      std::unordered_map<std::uint64_t, CheckResult> cache;
      ImageOptions iopt;
      iopt.tearing = cfg.tearing;
      for (int index : indices) {
        const Image img = build_image(cs, index, cfg.seed, iopt);
        ++built;
        if (!cfg.replay && !seen.insert(img.hash).second) {
          ++deduped;
          continue;
        }
        ++checked;
        lines += cs.lines.size();
        write_lines(cs, img.lines);
        restore = &cs;
        Outcome o = recover_image(pending_idx, ops);
        CheckResult res;
        if (!o.recovered) {
          res.verdict = CheckResult::Verdict::kViolation;
          res.property = "recovery";
          res.engine = "-";
          res.reason = o.error;
        } else {
          std::uint64_t key = mix(o.s0.size());
          for (auto v : o.s0) key = mix(key ^ static_cast<std::uint64_t>(v));
          for (auto& a : o.answers) key = mix(key ^ (a.has_value ? 0x55 : 0xaa) ^ static_cast<std::uint64_t>(a.value) * 3);
          key = mix(key ^ o.s1.size());
          for (auto v : o.s1) key = mix(key ^ static_cast<std::uint64_t>(v));
          auto it = cache.find(key);
          if (it != cache.end()) {
            res = it->second;
          } else {
            CheckInput in;
            in.spec = spec;
            in.initial = initial;
            in.ops = ops;
            in.observed = o.s0;
            try {
              if (buffered) {
                res = check_buffered_durable_linearizability(in, cfg.check);
              } else {
                res = check_durable_linearizability(in, cfg.check);
                if (res.ok() && detectable) {
                  for (std::size_t j = 0; j < pending_idx.size() && j < o.answers.size(); ++j)
                    in.recovered.push_back({pending_idx[j], o.answers[j]});
                  in.observed_after = o.s1;
                  res = check_detectability(in, cfg.check);
                }
              }
            } catch (const std::exception& e) {
              res.verdict = CheckResult::Verdict::kViolation;
              res.property = "checker";
              res.engine = "-";
              res.reason = std::string("bad history or state: ") + e.what();
            }
            cache.emplace(key, res);
          }
        }
        ++engines[res.engine];
        if (res.verdict == CheckResult::Verdict::kInconclusive) ++inconclusive;
        if (res.violation()) {
          ++violations;
          if (details.size() < cfg.max_details) {
            Violation v;
            v.k = k;
            v.image = index;
            v.property = res.property;
            v.engine = res.engine;
            v.reason = res.reason;
            v.image_how = img.how;
            details.push_back(v);
          }
        }
      }
    } catch (const std::exception& e) {
      ++violations;
      ++checked;
      Violation v;
      v.k = k;
      v.property = "campaign";
      v.engine = "-";
      v.reason = std::string("crashed machine failed: ") + e.what();
      details.push_back(v);
    }
    if (restore != nullptr) {
      try {
        write_lines(*restore, restore->media);
      } catch (const std::exception&) {
        ::_exit(3);  // the parent reports the campaign as broken
      }
    }
    w.u64(built);
    w.u64(checked);
    w.u64(deduped);
    w.u64(violations);
    w.u64(inconclusive);
    w.u64(lines);
    w.u64(engines.size());
    for (auto& [e, n] : engines) {
      w.str(e);
      w.u64(n);
    }
    w.u64(details.size());
    for (auto& v : details) {
      w.u64(v.k);
      w.i64(v.image);
      w.str(v.property);
      w.str(v.engine);
      w.str(v.reason);
      w.str(v.image_how);
    }
  }

  // --------------------------------------------------------- in the parent

  void merge_report(std::uint64_t k, Reader& r, int status) {
    ++result.crash_points;
    const auto built = r.u64(), checked = r.u64(), deduped = r.u64(), violations = r.u64(), inconclusive = r.u64(),
               lines = r.u64();
    if (!r.ok() || !WIFEXITED(status)) {
      ++result.violations;
      if (result.details.size() < cfg.max_details) {
        Violation v;
        v.k = k;
        v.property = "campaign";
        v.engine = "-";
        v.reason = WIFSIGNALED(status) ? "crashed-machine process died: " + std::string(strsignal(WTERMSIG(status)))
                                       : "crashed-machine process sent no report";
        v.replay = replay_command(info, cfg, k, 0);
        result.details.push_back(v);
      }
      return;
    }
    result.images_built += built;
    result.images_checked += checked;
    result.images_deduped += deduped;
    result.violations += violations;
    result.inconclusive += inconclusive;
    result.lines_per_image += lines;
    const auto ne = r.u64();
    for (std::uint64_t i = 0; i < ne && r.ok(); ++i) {
      auto e = r.str();
      result.engines[e] += r.u64();
    }
    const auto nd = r.u64();
    for (std::uint64_t i = 0; i < nd && r.ok(); ++i) {
      Violation v;
      v.k = r.u64();
      v.image = static_cast<int>(r.i64());
      v.property = r.str();
      v.engine = r.str();
      v.reason = r.str();
      v.image_how = r.str();
      v.replay = replay_command(info, cfg, v.k, v.image);
      if (result.details.size() < cfg.max_details) result.details.push_back(std::move(v));
    }
  }

  void worker(int tid, std::size_t n) {
    std::uint64_t rng = mix(cfg.seed * 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(tid) + 1);
    for (std::size_t i = 0; i < n; ++i) {
      if (park.load(std::memory_order_seq_cst)) {
        parked.fetch_add(1);
        while (park.load(std::memory_order_seq_cst)) park.wait(true);
        parked.fetch_sub(1);
      }
      const Op op = subject->next_op(tid, rng);
      const std::uint64_t seq = i + 1;
      const std::size_t idx = history.invoke(tid, seq, op);
      const Response r = subject->apply(tid, seq, op);
      history.respond(tid, idx, r);
      ops_done.fetch_add(1, std::memory_order_relaxed);
    }
    finished.fetch_add(1);
  }

  std::size_t share(int tid) const {
    const auto t = static_cast<std::size_t>(cfg.threads);
    return cfg.ops / t + (static_cast<std::size_t>(tid) < cfg.ops % t ? 1 : 0);
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
          try {
            worker(t, share(t));
          } catch (...) {
            // Keep the first failure; the run goes on without this thread.
            std::lock_guard<std::mutex> g(failure_mu);
            if (!failure) failure = std::current_exception();
            finished.fetch_add(1);
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
    opts.arenas = std::max(cfg.threads, 1) + 1;
    pool = pmem::Pool::create(path, cfg.pool_size, opts);
  }
  ~PoolFile() {
    pool.reset();
    ::unlink(path.c_str());
  }
};

}  // namespace

std::string replay_command(const SubjectInfo& s, const CampaignConfig& cfg, std::uint64_t k, int image) {
  std::string c = "ferrite crashtest --structure " + s.structure + " --variant " + s.variant +
                  " --threads " + std::to_string(cfg.threads) + " --ops " + std::to_string(cfg.ops) +
                  " --seed " + std::to_string(cfg.seed);
  if (cfg.pool_size != CampaignConfig{}.pool_size) c += " --pool-size " + std::to_string(cfg.pool_size);
  if (!cfg.tearing) c += " --no-tearing";
  return c + " --replay " + std::to_string(k) + ":" + std::to_string(image);
}

CampaignResult run_campaign(const SubjectInfo& info, const CampaignConfig& cfg) {
  if (cfg.threads < 1 || cfg.threads > 64) throw std::invalid_argument("crash campaign: threads must be in [1, 64]");
  if (cfg.images < 0) throw std::invalid_argument("crash campaign: images must be >= 0");
  if (cfg.replay && (cfg.replay->image < 0 || cfg.replay->image >= cfg.images + 2))
    throw std::invalid_argument("crash campaign: replay image must be in [0, images+2)");
  enable_sim();
  Campaign c(info, cfg);
  c.result.structure = info.structure;
  c.result.variant = info.variant;
  c.result.threads = cfg.threads;
  c.result.ops = cfg.ops;
  c.result.seed = cfg.seed;
  c.start = Clock::now();
  try {
    const std::size_t points = cfg.crash_points != 0 ? cfg.crash_points : (cfg.threads > 1 ? 300 : 0);
    if (points != 0 && !cfg.replay) {
      // Dry run: how many verbs does the workload issue?
      PoolFile pf(cfg);
      auto subject = info.make();
      subject->create(*pf.pool, cfg.threads);
      sim::settle();
      c.pool = pf.pool.get();
      c.subject = subject.get();
      c.history.reset(cfg.threads, cfg.ops / static_cast<std::size_t>(cfg.threads) + 2);
      const std::uint64_t verbs = c.run_workload();
      c.all_points = false;
      const double p = verbs == 0 ? 1.0 : std::min(1.0, static_cast<double>(points) / static_cast<double>(verbs));
      c.sample_threshold = p >= 1.0 ? ~std::uint64_t{0} : static_cast<std::uint64_t>(p * 18446744073709551615.0);
      c.finished.store(0);
      c.ops_done.store(0);
    }
    PoolFile pf(cfg);
    auto subject = info.make();
    subject->create(*pf.pool, cfg.threads);
    c.pool = pf.pool.get();
    c.subject = subject.get();
    c.spec = subject->spec();
    c.detectable = subject->detectable();
    c.buffered = subject->buffered();
    c.initial = subject->observe();
    sim::settle();
    c.history.reset(cfg.threads, cfg.ops / static_cast<std::size_t>(cfg.threads) + 2);
    sim::set_crash_hook(&Campaign::hook, &c);
    try {
      c.result.verbs = c.run_workload();
      sim::crash_now();  // the end of the run is a crash point too
    } catch (...) {
      sim::set_crash_hook(nullptr, nullptr);
      throw;
    }
    sim::set_crash_hook(nullptr, nullptr);
    if (cfg.replay) c.result.replay_reached = c.result.crash_points > 0;
  } catch (const std::exception& e) {
    c.result.error = e.what();
  }
  auto& r = c.result;
  r.seconds = std::chrono::duration<double>(Clock::now() - c.start).count();
  r.images_per_second = r.seconds > 0 ? static_cast<double>(r.images_checked) / r.seconds : 0;
  if (r.images_checked > 0) r.lines_per_image /= r.images_checked;
  return r;
}

}  // namespace ferrite::crash
