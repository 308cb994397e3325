// tools/ferrite/demo_kill.cc — step 1 of the tour: real crashes.
//
// Part 1: exactly-once across real crashes.
// The worker is the example program `exactly-once` (examples/exactly_once.cc,
// built next to this binary): it consumes jobs from a detectable PBqueue in
// a pool on /dev/shm and records each job's result in a persistent ledger.
// This step creates the pool (`exactly-once init`), starts the worker
// (`exactly-once run`), SIGKILLs it at a random moment, many times, lets a
// last run finish, and has `exactly-once verify` prove from the pool alone
// that no job was lost and none was done twice.
//
// Part 2: a Mirror map survives SIGKILL. The worker is the example program
// `mirror-kv` (examples/mirror_kv.cc): puts and erases on a Mirror hash map,
// one acknowledgement byte per returned operation. The tour kills it after a
// random number of acknowledgements, restarts it where it stopped, and after
// every kill `mirror-kv verify` re-opens the pool (Mirror's recovery rebuilds
// the DRAM replica from the persistent one) and checks the map is exactly
// the acknowledged state, or that plus the operation in flight.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/ferrite/demo.h"

namespace ferrite::tools::demo {
namespace {

constexpr const char* kExample = "exactly-once";
constexpr const char* kMirrorExample = "mirror-kv";
constexpr long kMaxJobs = 8192;  // the example ledger's capacity

// An example program: next to this executable (a build tree), or in
// ../libexec/ferrite/ (an installed tree). "" if neither; *where then says
// where it was looked for.
std::string find_example(const char* name, std::string* where) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    *where = "(cannot read /proc/self/exe)";
    return "";
  }
  const auto dir = self.parent_path();
  for (const auto& p : {dir / name, dir.parent_path() / "libexec" / "ferrite" / name})
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  *where = (dir / name).string();
  return "";
}

std::vector<char*> argv_of(std::vector<std::string>& args) {
  std::vector<char*> v;
  for (auto& a : args) v.push_back(a.data());
  v.push_back(nullptr);
  return v;
}

// Runs `args` to completion; returns its exit status (-1: did not run or
// died of a signal) and its stdout in *out. stderr goes to ours.
int run_to_end(std::vector<std::string> args, std::string* out) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return -1;
  std::fflush(stdout);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    auto argv = argv_of(args);
    ::execv(argv[0], argv.data());
    std::_Exit(127);
  }
  ::close(fds[1]);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) out->append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  if (pid < 0) return -1;
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Starts `exactly-once run` and waits (up to 20 s) until it has opened the
// pool, or exited. Returns -1 when fork or pipe fails.
pid_t spawn_worker(const std::string& exe, const std::string& pool, int job_us, bool skip_recovery) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;  // the write end is inherited by the worker
  ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  std::vector<std::string> args = {exe, "run", pool, "--job-us", std::to_string(job_us), "--ready-fd",
                                   std::to_string(fds[1])};
  if (skip_recovery) args.push_back("--skip-recovery");
  std::fflush(stdout);
  const pid_t pid = ::fork();
  if (pid == 0) {
    auto argv = argv_of(args);
    ::execv(argv[0], argv.data());
    std::_Exit(127);
  }
  ::close(fds[1]);
  if (pid > 0) {
    // The kill clock starts once the worker has the pool open, so the random
    // delay lands in recovery or work however long the process took to
    // start (sanitizer builds start slowly).
    pollfd p{fds[0], POLLIN, 0};
    while (::poll(&p, 1, 20000) < 0 && errno == EINTR) {
    }
  }
  ::close(fds[0]);
  return pid;
}

// `exactly-once verify --json`; false (with a message) if it did not answer.
bool verify(const std::string& exe, const std::string& pool, nlohmann::json* j, int* code) {
  std::string out;
  *code = run_to_end({exe, "verify", pool, "--json"}, &out);
  try {
    *j = nlohmann::json::parse(out);
    return true;
  } catch (const std::exception&) {
    std::printf("  `%s verify` gave no result (exit status %d)\n", kExample, *code);
    return false;
  }
}

// One incarnation of `mirror-kv run` from operation `from`: killed after
// `kill_after` acknowledgements (or when it exits). Returns the operations it
// acknowledged (bytes on its ack pipe, counted to the last one written
// before the kill); *status gets its wait status.
std::uint64_t run_mirror_until_killed(const std::string& exe, const std::string& pool, std::uint64_t from,
                                      std::uint64_t kill_after, int* status) {
  int fds[2];
  if (::pipe(fds) != 0) return 0;
  ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  std::vector<std::string> args = {exe, "run", pool, "--from", std::to_string(from), "--ack-fd", std::to_string(fds[1])};
  std::fflush(stdout);
  const pid_t pid = ::fork();
  if (pid == 0) {
    auto argv = argv_of(args);
    ::execv(argv[0], argv.data());
    std::_Exit(127);
  }
  ::close(fds[1]);
  std::uint64_t acked = 0;
  char buf[4096];
  // The kill lands after a random number of acknowledged operations: the
  // count, not a clock, is the "when" (sanitizer builds start slowly).
  while (acked < kill_after) {
    const ssize_t n = ::read(fds[0], buf, std::min<std::size_t>(sizeof buf, kill_after - acked));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // it exited by itself
    acked += static_cast<std::uint64_t>(n);
  }
  if (pid > 0) ::kill(pid, SIGKILL);
  for (;;) {  // bytes written before the kill are operations that returned
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    acked += static_cast<std::uint64_t>(n);
  }
  ::close(fds[0]);
  *status = 0;
  if (pid > 0) ::waitpid(pid, status, 0);
  return acked;
}

}  // namespace

StepResult step_mirror_kills(const Options& o, std::mt19937_64& rng) {
  std::string where;
  const std::string exe = find_example(kMirrorExample, &where);
  if (exe.empty()) {
    std::printf("  the Mirror worker is missing: %s (examples/mirror_kv.cc; `make demo` builds it)\n", where.c_str());
    return StepResult::kFailed;
  }
  const std::string path = fmt::format("{}/ferrite-demo-mirror-{}.pool", o.pool_dir, ::getpid());
  std::remove(path.c_str());
  struct Remove {
    std::string p;
    ~Remove() { std::remove(p.c_str()); }
  } remove_pool{path};
  std::string out;
  if (const int rc = run_to_end({exe, "init", path}, &out); rc != 0) {
    std::printf("  `%s init %s` failed (exit status %d)\n", kMirrorExample, path.c_str(), rc);
    return StepResult::kFailed;
  }
  const int kills = std::min(o.kills, 20);
  std::printf("  pool %s: a Mirror hash map (patomic<T>: a persistent replica in the pool, a volatile one in DRAM)\n",
              path.c_str());
  std::printf("  worker: %s (examples/mirror_kv.cc): puts and erases, one acknowledgement per returned operation\n",
              exe.c_str());
  std::uniform_int_distribution<std::uint64_t> after(100, 3000);
  std::uint64_t survived = 0;  // operations known to be in the map
  int in_flight_took_effect = 0;
  for (int k = 1; k <= kills; ++k) {
    int status = 0;
    const std::uint64_t acked = run_mirror_until_killed(exe, path, survived, after(rng), &status);
    if (!WIFSIGNALED(status)) {
      std::printf("  worker exited by itself (status %d) before kill %d: FAILED\n", status, k);
      return StepResult::kFailed;
    }
    // The restarted machine: open the pool, re-attach (Mirror's recovery
    // traces the persistent replica and rebuilds the DRAM one), compare.
    out.clear();
    const int rc = run_to_end({exe, "verify", path, "--acked", std::to_string(survived + acked), "--json"}, &out);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(out);
    } catch (const std::exception&) {
      std::printf("  `%s verify` gave no result (exit status %d): FAILED\n", kMirrorExample, rc);
      return StepResult::kFailed;
    }
    if (rc != 0 || !j.value("ok", false)) {
      std::printf("  SIGKILL %d after %llu acknowledged operations: the recovered map is %s, replicas %s: FAILED\n", k,
                  static_cast<unsigned long long>(acked),
                  j.value("state", std::string("?")) == "neither" ? "not the acknowledged state" : "as expected",
                  j.value("replicas_equal", false) ? "equal" : "differ");
      return StepResult::kFailed;
    }
    in_flight_took_effect += j.value("state", std::string()) == "acked+1";
    survived = j.value("survived", survived + acked);
    if (k <= 3 || k == kills)
      std::printf("  SIGKILL %2d after %4llu acknowledged operations: recovered map = the acknowledged state%s (%llu keys)\n",
                  k, static_cast<unsigned long long>(acked),
                  j.value("state", std::string()) == "acked+1" ? " + the operation in flight" : "",
                  static_cast<unsigned long long>(j.value("keys", std::uint64_t{0})));
    else if (k == 4)
      std::printf("  ...\n");
    std::fflush(stdout);
  }
  std::printf("  PROVED: a Mirror map survived %d SIGKILLs: %llu acknowledged operations all present, nothing else"
              " (%d in-flight operations had taken effect), replicas equal after every recovery.\n",
              kills, static_cast<unsigned long long>(survived), in_flight_took_effect);
  return StepResult::kPassed;
}

StepResult step_exactly_once(const Options& o, std::mt19937_64& rng) {
  if (o.jobs <= 0 || o.jobs > kMaxJobs) {
    std::printf("  --jobs must be in [1, %ld]\n", kMaxJobs);
    return StepResult::kFailed;
  }
  std::string where;
  const std::string exe = find_example(kExample, &where);
  if (exe.empty()) {
    std::printf("  the worker program is missing: %s\n"
                "  (it is examples/exactly_once.cc, built next to `ferrite` as target\n"
                "  ferrite_example_exactly_once; `make demo` builds it). Nothing was proved in this step.\n",
                where.c_str());
    return StepResult::kFailed;
  }
  const std::string path = fmt::format("{}/ferrite-demo-{}.pool", o.pool_dir, ::getpid());
  std::remove(path.c_str());
  struct Remove {
    std::string p;
    ~Remove() { std::remove(p.c_str()); }
  } remove_pool{path};
  {
    std::string out;
    const int rc = run_to_end({exe, "init", path, "--jobs", std::to_string(o.jobs), "--threads",
                               std::to_string(o.threads)},
                              &out);
    if (rc != 0) {
      std::printf("  `%s init %s` failed (exit status %d)\n", kExample, path.c_str(), rc);
      return StepResult::kFailed;
    }
  }
  std::printf("  pool %s: a PBqueue with %d jobs, a per-thread OpLog, a ledger; worker: %d threads, ~%d us/job\n",
              path.c_str(), o.jobs, o.threads, o.job_us);
  std::printf("  worker: %s (examples/exactly_once.cc)\n", exe.c_str());
  if (o.break_recovery)
    std::printf("  DELIBERATELY BROKEN: workers skip detectable recovery; this step must fail\n");

  std::uniform_int_distribution<int> delay_ms(2, 30);
  int kills = 0, mid_run_kills = 0;
  bool finished_early = false;
  std::uint64_t last_done = 0;
  for (int i = 0; i < o.kills; ++i) {
    const pid_t pid = spawn_worker(exe, path, o.job_us, o.break_recovery);
    if (pid < 0) {
      std::printf("  fork failed\n");
      return StepResult::kFailed;
    }
    const int ms = delay_ms(rng);
    // The crash moment is random on purpose: this sleep, counted from the
    // moment the worker had the pool open, is the "when", not a
    // synchronization.
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::printf("  worker exited with status %d before the kill: FAILED\n", status);
        return StepResult::kFailed;
      }
      finished_early = true;  // the queue drained before this kill
      break;
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    ++kills;
    nlohmann::json j;
    int code = 0;
    if (!verify(exe, path, &j, &code)) return StepResult::kFailed;
    const auto done = j.value("recorded", std::uint64_t{0});
    if (done > last_done && done < static_cast<std::uint64_t>(o.jobs)) ++mid_run_kills;
    std::printf("  SIGKILL %2d after %2d ms: %5llu/%d jobs recorded\n", kills, ms,
                static_cast<unsigned long long>(done), o.jobs);
    std::fflush(stdout);
    last_done = done;
  }
  if (finished_early) std::printf("  the queue drained before kill %d; a last worker checks the empty queue\n", kills + 1);
  // The last run goes to the end.
  const pid_t pid = spawn_worker(exe, path, o.job_us, o.break_recovery);
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::printf("  final worker failed (status %d)\n", status);
    return StepResult::kFailed;
  }

  // The proof, from the pool alone.
  nlohmann::json j;
  int code = 0;
  if (!verify(exe, path, &j, &code)) return StepResult::kFailed;
  const auto n = [&](const char* k) { return static_cast<unsigned long long>(j.value(k, std::uint64_t{0})); };
  // (A worker killed during exec/startup never opens the pool, so runs can
  // be lower than kills + 1.)
  std::printf("  after %d SIGKILLs (%d while jobs were in progress) and %llu worker runs that opened the pool:\n",
              kills, mid_run_kills, n("runs"));
  std::printf("    jobs recorded: %llu/%llu, missing: %llu, wrong result: %llu, delivered twice: %llu,\n"
              "    one dequeue answering two jobs: %llu, left in the queue: %llu\n",
              n("recorded"), n("jobs"), n("missing"), n("wrong_result"), n("duplicates"), n("shared_tags"),
              n("left_in_queue"));
  std::printf("    pending dequeues at a kill: %llu completed by recovery (job not yet recorded),"
              " %llu answered again (already recorded)\n",
              n("rescued"), n("answered_again"));
  const bool ok = code == 0 && j.value("exactly_once", false);
  if (ok)
    std::printf("  PROVED: every one of %d jobs was done exactly once across %d real crashes (SIGKILL).\n",
                o.jobs, kills);
  else
    std::printf("  FAILED: exactly-once does not hold (see the counts above).\n");
  if (mid_run_kills == 0)
    std::printf("  note: no kill landed while jobs were in progress; rerun with more --jobs or --job-us.\n");
  return ok ? StepResult::kPassed : StepResult::kFailed;
}

}  // namespace ferrite::tools::demo
