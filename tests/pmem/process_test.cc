// Real processes: an appender SIGKILLed at random moments and restarted
// many times (every committed record must survive, the heap must never hand
// out a committed block again), and a second process refused by the lock.
//
// Children are this test binary re-executed (fork + exec of /proc/self/exe)
// running only PmemChild.Entry, which dispatches on FERRITE_PMEM_CHILD.
// Coordination is by pipes; the only sleep is the random delay before a
// SIGKILL — the kill time IS the randomness, never synchronization.
#include <signal.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <set>
#include <thread>

#include "common/process.h"
#include "common/scale.h"
#include "common/temp_pool.h"

namespace process_test {  // this file's names, apart in a unity build

namespace {

using namespace ferrite::pmem;
using ferrite::test::TempPath;
namespace fps = ferrite::persist;

constexpr std::size_t kMiB = std::size_t{1} << 20;

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

struct Record {
  std::uint64_t i, h, not_h, magic;
};
constexpr std::uint64_t kRecordMagic = 0x5245434f52440a00ull;

// Record offsets; `count` is the commit point.
struct Log {
  static constexpr std::uint32_t kTypeTag = 0x106;
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "test::Log";
  static constexpr std::uint64_t kCap = 1 << 15;
  std::uint64_t count = 0;
  std::uint64_t runs = 0;
  std::uint64_t rec[kCap] = {};
};

void recover_log(Pool& pool, Log* log) {
  pool.heap().recover_by_trace([&](const std::function<void(void*)>& mark) {
    for (std::uint64_t i = 0; i < log->count; ++i) mark(pool.at<void>(log->rec[i]));
  });
}

// Child: open, recover, say "ready", append until killed (or full).
int run_appender(const std::string& path, int ready_fd) {
  auto pool = Pool::open(path, {.recover = false});
  Log* log = pool->root<Log>("log");
  recover_log(*pool, log);
  log->runs++;
  fps::persist_range(&log->runs, 8);
  const char b = 'R';
  if (::write(ready_fd, &b, 1) != 1) return 3;
  ::close(ready_fd);
  for (;;) {
    const std::uint64_t i = log->count;
    if (i == Log::kCap) return 0;
    auto* r = static_cast<Record*>(pool->heap().alloc(sizeof(Record), 0));
    r->i = i;
    r->h = mix(i);
    r->not_h = ~r->h;
    r->magic = kRecordMagic;
    fps::pwb(r, sizeof *r);
    fps::pfence();  // PERSIST: the record before the slot that names it
    log->rec[i] = pool->offset_of(r);
    fps::pwb(&log->rec[i], 8);
    fps::pfence();  // PERSIST: the slot before the count that commits it
    log->count = i + 1;
    fps::pwb(&log->count, 8);
    fps::psync();
  }
}

// Child with a deliberately broken recovery: marks nothing live, so the
// heap hands committed blocks out again.
int run_broken_appender(const std::string& path, int ready_fd) {
  {
    auto pool = Pool::open(path, {.recover = false});
    pool->heap().recover_by_trace([](const std::function<void(void*)>&) {});
    // Overwrite what the heap now believes free (a correct recovery would
    // never hand these out).
    for (int k = 0; k < 64; ++k) {
      auto* r = static_cast<Record*>(pool->heap().alloc(sizeof(Record), 0));
      r->i = ~std::uint64_t{0};
      fps::persist_range(r, sizeof *r);
    }
  }
  return run_appender(path, ready_fd);
}

// Child: hold the pool open until the parent closes the release pipe.
int run_holder(const std::string& path, int ready_fd, int release_fd) {
  auto pool = Pool::open(path);
  const char b = 'R';
  if (::write(ready_fd, &b, 1) != 1) return 3;
  char c;
  while (::read(release_fd, &c, 1) > 0) {
  }
  return 0;
}

TEST(PmemChild, Entry) {
  const char* role = std::getenv("FERRITE_PMEM_CHILD");
  if (role == nullptr) GTEST_SKIP() << "child-process entry point; runs only when re-executed";
  const std::string path = std::getenv("FERRITE_PMEM_POOL");
  const int ready = std::atoi(std::getenv("FERRITE_PMEM_READY_FD"));
  int rc = 2;
  try {
    if (std::string(role) == "append") rc = run_appender(path, ready);
    if (std::string(role) == "append-broken") rc = run_broken_appender(path, ready);
    if (std::string(role) == "hold") rc = run_holder(path, ready, std::atoi(std::getenv("FERRITE_PMEM_RELEASE_FD")));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child %s: %s\n", role, e.what());
    rc = 4;
  }
  std::fflush(stderr);
  ::_exit(rc);
}

// Checks the log: every committed record intact, every block distinct.
// Returns "" or the first problem.
std::string verify_log(Pool& pool, Log* log) {
  std::set<std::uint64_t> seen;
  if (log->count > Log::kCap) return "count " + std::to_string(log->count) + " exceeds the capacity";
  for (std::uint64_t i = 0; i < log->count; ++i) {
    const std::uint64_t off = log->rec[i];
    const std::string at = "record " + std::to_string(i) + " of " + std::to_string(log->count) + ": ";
    if (!pool.contains(pool.at<void>(off), sizeof(Record))) return at + "offset outside the pool";
    const Record* r = pool.at<Record>(off);
    if (!seen.insert(off).second) return at + "shares its block with another record";
    if (r->i != i || r->h != mix(i) || r->not_h != ~mix(i) || r->magic != kRecordMagic)
      return at + "damaged (holds index " + std::to_string(r->i) + ")";
  }
  return "";
}

// Spawns an appender, kills it after a random delay; returns whether it
// was killed (false: it filled the log and exited 0).
bool run_and_kill(const std::string& role, const std::string& path, std::mt19937_64& rng, bool wait_ready) {
  int fds[2];
  EXPECT_TRUE(ferrite::test::child_pipe(fds, 1));
  const pid_t pid = ferrite::test::spawn_self(
      "PmemChild.Entry", {"FERRITE_PMEM_CHILD=" + role, "FERRITE_PMEM_POOL=" + path, "FERRITE_PMEM_READY_FD=" + std::to_string(fds[1])});
  EXPECT_GT(pid, 0);
  ::close(fds[1]);
  if (wait_ready) {
    char c;
    EXPECT_EQ(::read(fds[0], &c, 1), 1) << "child died before it was ready";
  }
  const auto delay = std::chrono::microseconds(rng() % 4000);
  std::this_thread::sleep_for(delay);  // the randomness of the kill time, not a synchronization
  ::kill(pid, SIGKILL);
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  ::close(fds[0]);
  if (WIFSIGNALED(status)) {
    EXPECT_EQ(WTERMSIG(status), SIGKILL);
    return true;
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child failed";
  return false;
}

TEST(PmemRestart, KilledAppenderNeverLosesCommittedRecords) {
  TempPath p("restart");
  {
    auto pool = Pool::create(p, 16 * kMiB);
    pool->create_root<Log>("log");
  }
  const int kills = std::max(30, ferrite::test::scaled(200));
  const std::uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  int killed = 0, finished = 0, early = 0;
  std::uint64_t appended = 0, verified = 0, compactions = 0;
  for (int k = 0; k < kills && !HasFailure(); ++k) {
    // One run in five is killed without waiting for "ready": a crash
    // during open or recovery (which rewrites chunk-map entries).
    const bool wait_ready = rng() % 5 != 0;
    early += wait_ready ? 0 : 1;
    if (run_and_kill("append", p.path, rng, wait_ready)) ++killed;
    else ++finished;  // the log filled up before the kill
    const auto rep = check_pool(p);
    ASSERT_TRUE(rep.ok) << rep.message;
    auto pool = Pool::open(p);
    Log* log = pool->root<Log>("log");
    ASSERT_EQ(verify_log(*pool, log), "") << "after kill " << k;
    appended += log->count >= verified ? log->count - verified : 0;
    verified = log->count;
    recover_log(*pool, log);
    if (log->count > Log::kCap / 2) {  // make room: the parent is a user too
      for (std::uint64_t i = 0; i < log->count; ++i) pool->heap().free(pool->at<void>(log->rec[i]), 0);
      log->count = 0;
      fps::persist_range(&log->count, 8);
      verified = 0;
      ++compactions;
    }
  }
  std::printf("[ restart ] seed %llu: %d kills (%d before ready), %d runs ended full, %llu records "
              "committed and verified, %llu compactions\n",
              static_cast<unsigned long long>(seed), killed, early, finished,
              static_cast<unsigned long long>(appended), static_cast<unsigned long long>(compactions));
  EXPECT_GE(killed + finished, 30);
  EXPECT_GT(appended, 0u) << "the children never committed anything";
}

// The checker must be able to fail: an appender whose recovery forgets the
// committed records gets caught.
TEST(PmemRestart, BrokenRecoveryIsCaught) {
  TempPath p("broken");
  {
    auto pool = Pool::create(p, 16 * kMiB);
    pool->create_root<Log>("log");
  }
  std::mt19937_64 rng(42);
  std::string problem;
  for (int k = 0; k < 10 && problem.empty(); ++k) {
    run_and_kill(k == 0 ? "append" : "append-broken", p.path, rng, true);
    auto pool = Pool::open(p);
    problem = verify_log(*pool, pool->root<Log>("log"));
  }
  EXPECT_NE(problem, "") << "a broken recovery went unnoticed";
  std::printf("[ restart ] broken recovery caught: %s\n", problem.c_str());
}

TEST(PmemLock, SecondProcessIsRefused) {
  TempPath p("lock");
  { auto pool = Pool::create(p, 2 * kMiB); }
  int ready[2], release[2];
  ASSERT_TRUE(ferrite::test::child_pipe(ready, 1));
  ASSERT_TRUE(ferrite::test::child_pipe(release, 0));
  const pid_t pid = ferrite::test::spawn_self(
      "PmemChild.Entry", {"FERRITE_PMEM_CHILD=hold", "FERRITE_PMEM_POOL=" + p.path, "FERRITE_PMEM_READY_FD=" + std::to_string(ready[1]),
               "FERRITE_PMEM_RELEASE_FD=" + std::to_string(release[0])});
  ASSERT_GT(pid, 0);
  ::close(ready[1]);
  ::close(release[0]);
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1) << "holder did not open the pool";
  try {
    Pool::open(p);
    ADD_FAILURE() << "open succeeded while another process holds the pool";
  } catch (const PoolError& e) {
    EXPECT_EQ(e.code(), Errc::kLocked) << e.what();
    EXPECT_NE(std::string(e.what()).find(p.path), std::string::npos);
  }
  EXPECT_TRUE(check_pool(p).ok);  // read-only check works meanwhile
  ::close(release[1]);            // let the holder go
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ::close(ready[0]);
  auto pool = Pool::open(p);  // the lock died with the holder
  EXPECT_NE(pool, nullptr);
}

}  // namespace

}  // namespace process_test
