// Real-process kill test of the nbMontage hash map (montage/hash_map.h).
//
// A child process (this binary re-executed, see tests/common/process.h)
// opens the pool on /dev/shm (which recovers itself), attaches the map (or
// creates it), and runs two worker threads with the background advancer on
// (1 ms epochs). Worker t puts keys t*1e6 + 1, + 2, ... in order (value
// derived from the key) and erases every 5th key it put, and calls sync()
// every 16 operations; after each returned sync it reports, through a pipe,
// how far it got. The parent SIGKILLs the child at random moments, many
// times. After each kill the parent opens the pool, attaches, and checks:
//   - every operation acknowledged by a returned sync is there (buffered
//     durable linearizability's guarantee);
//   - each worker's keys form a prefix of its own program order (keys
//     1..m present except the erased ones), and every value is the one put:
//     nothing is present that was never inserted, nothing erased comes
//     back, nothing is lost from the middle.
// The next child continues where the recovered state ends.
//
// What it covers: process crashes (DRAM state lost mid-operation, the
// descriptors, buffers and mindicator gone). On /dev/shm a killed process's
// stores survive in the page cache; lost cache lines are the crash
// simulator's job (montage_crash_test.cc).
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/process.h"
#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/montage/hash_map.h"

namespace fm = ferrite::montage;
using ferrite::pmem::Pool;

namespace {

constexpr int kWorkers = 2;
constexpr std::int64_t kSpan = 1000000;

std::int64_t key_of(int t, std::int64_t i) { return t * kSpan + i; }
std::int64_t value_of(std::int64_t key) { return key * 7 + 3; }
bool erased(std::int64_t i) { return i % 5 == 0; }  // put i, then erase it (i = 5, 10, ...)

fm::HashMapOptions map_options() {
  fm::HashMapOptions o;
  o.buckets = 1 << 12;
  o.value_bytes = 24;
  return o;
}
fm::EpochOptions epochs() {
  fm::EpochOptions o;
  o.epoch_length = std::chrono::microseconds{1000};
  return o;
}

// Per worker: the highest i such that keys 1..i are in their final state
// (put, and erased if erased(i)) in the map, checking that everything else
// of the worker is absent and every value is right. Fails the test (and
// returns -1) on a hole or a wrong value.
std::int64_t prefix_of(const std::vector<std::pair<std::int64_t, std::int64_t>>& contents, int t) {
  std::vector<std::int64_t> mine;
  for (auto& [k, v] : contents) {
    if (k / kSpan != t) continue;
    EXPECT_EQ(v, value_of(k)) << "key " << k << " holds a value never put";
    mine.push_back(k - t * kSpan);
  }
  if (mine.empty()) return 0;
  // Present: every non-erased i <= m, and possibly m itself if m is an
  // erased key whose erase did not persist yet.
  const std::int64_t m = mine.back();
  std::size_t j = 0;
  for (std::int64_t i = 1; i <= m; ++i) {
    const bool want = !erased(i) || i == m;
    const bool have = j < mine.size() && mine[j] == i;
    if (want != have) {
      ADD_FAILURE() << "worker " << t << ": key " << i << (have ? " present (erased before a later persisted op)" : " missing (a later op persisted)");
      return -1;
    }
    if (have) ++j;
  }
  return erased(m) ? m - 1 : m;  // m itself might still have to be erased
}

}  // namespace

// The child's body (runs only when spawned by the test below).
TEST(MontageProcessChild, Work) {
  const char* path = std::getenv("FERRITE_MONTAGE_POOL");
  const char* fd = std::getenv("FERRITE_MONTAGE_FD");
  if (path == nullptr || fd == nullptr) GTEST_SKIP() << "only run as the kill test's child";
  auto pool = Pool::open_or_create(path, std::size_t{256} << 20);
  std::unique_ptr<fm::HashMap<>> m = pool->has_root("h") ? fm::HashMap<>::attach(*pool, "h", kWorkers, map_options(), epochs())
                                                          : fm::HashMap<>::create(*pool, "h", kWorkers, map_options(), epochs());
  const auto start = m->contents();
  const int out = std::atoi(fd);
  std::vector<std::thread> ts;
  for (int t = 0; t < kWorkers; ++t)
    ts.emplace_back([&, t] {
      std::int64_t i = prefix_of(start, t);
      for (int n = 1;; ++n) {
        ++i;
        m->put(t, key_of(t, i), value_of(key_of(t, i)));
        if (erased(i)) m->erase(t, key_of(t, i));
        if (n % 16 == 0) {
          m->sync();
          const std::int64_t msg[2] = {t, i};  // worker t: 1..i acknowledged
          if (::write(out, msg, sizeof msg) != sizeof msg) std::_Exit(3);
        }
      }
    });
  for (auto& th : ts) th.join();
}

TEST(MontageProcess, HashMapKeepsEverySyncedOperationAcrossRepeatedSigkill) {
  ferrite::test::TempPath path("montage-kill");
  const int rounds = ferrite::test::scaled(25, 5);
  std::mt19937_64 rng(7);
  std::int64_t acked[kWorkers] = {0, 0};
  std::int64_t progress[kWorkers] = {0, 0};
  for (int round = 0; round < rounds; ++round) {
    int fds[2];
    ASSERT_TRUE(ferrite::test::child_pipe(fds, 1));
    const pid_t pid = ferrite::test::spawn_self(
        "MontageProcessChild.Work", {"FERRITE_MONTAGE_POOL=" + path.path, "FERRITE_MONTAGE_FD=" + std::to_string(fds[1])});
    ASSERT_GT(pid, 0);
    ::close(fds[1]);
    // The kill falls 20–100 ms after the child's first acknowledged sync
    // (waited for up to 30 s): a slow start (a sanitizer build, a loaded
    // machine) must not turn every round into a kill before the first sync.
    pollfd first{fds[0], POLLIN, 0};
    (void)::poll(&first, 1, 30'000);
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 80));
    ::kill(pid, SIGKILL);
    int st = 0;
    ::waitpid(pid, &st, 0);
    ASSERT_TRUE(WIFSIGNALED(st)) << "the child exited by itself (status " << st << ")";
    std::int64_t msg[2];
    while (::read(fds[0], msg, sizeof msg) == sizeof msg) acked[msg[0]] = std::max(acked[msg[0]], msg[1]);
    ::close(fds[0]);
    // Restart: the pool recovers itself, attach recovers the map. (A child
    // killed before it created the map leaves nothing to check.)
    if (::access(path.path.c_str(), F_OK) != 0) {
      ASSERT_EQ(acked[0] + acked[1], 0);
      continue;
    }
    auto pool = Pool::open(path.path);
    if (!pool->has_root("h")) {
      ASSERT_EQ(acked[0] + acked[1], 0);
      continue;
    }
    auto m = fm::HashMap<>::attach(*pool, "h", kWorkers, map_options(), epochs());
    const auto contents = m->contents();
    for (int t = 0; t < kWorkers; ++t) {
      const std::int64_t p = prefix_of(contents, t);
      ASSERT_GE(p, 0);
      // An acknowledged erased key i may read as "1..i-1" (put + erase of
      // i both persisted look like neither).
      EXPECT_GE(p, erased(acked[t]) ? acked[t] - 1 : acked[t]) << "round " << round << ": worker " << t << " had 1.." << acked[t]
                             << " acknowledged by a sync, recovered only 1.." << p;
      progress[t] = p;
    }
  }
  std::printf("[montage] kill test: %d SIGKILLs, worker prefixes %lld and %lld (acknowledged %lld, %lld)\n", rounds,
              static_cast<long long>(progress[0]), static_cast<long long>(progress[1]),
              static_cast<long long>(acked[0]), static_cast<long long>(acked[1]));
  EXPECT_GT(progress[0] + progress[1], 0) << "the workers never got anywhere";
}
