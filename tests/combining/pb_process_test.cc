// Real-process crash test of PBqueue with detectable operations.
//
// A pool on /dev/shm holds a PBqueue, an OpLog (combining/detectable.h) and
// a ledger. A forked child runs kThreads threads; thread t's operation with
// seq s is fixed by (t, s): odd s enqueues job (t, (s-1)/2), even s
// dequeues. Before each operation the child persists (seq, op, arg) in the
// OpLog; after a dequeue answers a job it records "consumed by (t, s)" in
// the ledger (idempotent: the same (t, s) may record it again after a
// restart; another consumer finding it recorded is a duplicate). The parent
// SIGKILLs the child at random moments, many times; each restart opens the
// pool (which recovers itself: the queue's, the OpLog's and the ledger's
// registered hooks), re-attaches, calls recover() on every thread's pending
// operation, handles its answer exactly like a normal answer, and continues.
// At the end every job must be consumed exactly once or still be in the
// queue — no loss, no duplicate.
//
// What it covers: process crashes (the volatile Lock, Request array,
// oldTail, free lists are lost mid-operation). Power failure (lost cache
// lines) is the crash simulator's job (pb_crash_test.cc): on /dev/shm a
// killed process's stores all survive in the page cache.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "ferrite/combining/detectable.h"
#include "ferrite/combining/pb_queue.h"
#include "ferrite/pmem/root_registry.h"
#include "common/scale.h"
#include "common/temp_pool.h"

namespace pb_process_test {  // this file's names, apart in a unity build

namespace fc = ferrite::combining;
using ferrite::pmem::Pool;

namespace {

constexpr int kThreads = 3;
constexpr int kJobs = 2500;  // enqueues per thread (the ledger root fits one 64 KiB chunk)
constexpr std::uint64_t kOpsPerThread = 2 * kJobs;

struct Ledger {
  static constexpr std::uint32_t kTypeTag = 0x4c454447;  // "LEDG"
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "test::Ledger";
  std::uint64_t error;                           // first duplicate seen (job + 1)
  std::uint64_t consumer[kThreads][kJobs];       // 0, or (tid << 32 | seq) + 1
};
// The ledger is its root object alone: its recover hook marks nothing (so
// the pool, recovering at open, knows every root and rebuilds its heap).
const bool kLedgerRegistered = ferrite::pmem::register_root_type<Ledger>(
    +[](Pool&, Ledger*, const std::function<void(void*)>&) {});

std::int64_t job_value(int t, std::uint64_t j) { return (static_cast<std::int64_t>(t) + 1) << 32 | static_cast<std::int64_t>(j); }

void record_consumed(Ledger* l, int tid, std::uint64_t seq, std::int64_t v) {
  const auto producer = static_cast<std::size_t>((v >> 32) - 1);
  const auto job = static_cast<std::size_t>(v & 0xffffffff);
  const std::uint64_t me = (static_cast<std::uint64_t>(tid) << 32 | seq) + 1;
  if (producer >= kThreads || job >= kJobs) {
    l->error = 1;
    ferrite::persist::persist_range(&l->error, 8);
    return;
  }
  std::atomic_ref<std::uint64_t> slot(l->consumer[producer][job]);
  std::uint64_t expected = 0;
  if (!slot.compare_exchange_strong(expected, me) && expected != me) {
    l->error = static_cast<std::uint64_t>(v) + 1;  // consumed twice
  }
  ferrite::persist::pwb(&l->consumer[producer][job]);
  ferrite::persist::pwb(&l->error);
  ferrite::persist::psync();
}

// The child: recover, then run every thread to the end of its operations.
[[noreturn]] void child_main(const std::string& path) {
  try {
    // Emulated media (3 us per psync) so a run lasts long enough to be
    // killed at many different moments.
    ferrite::pmem::PoolOptions opts;
    ferrite::persist::parse_backend("emulated:3000", &opts.backend);
    auto pool = Pool::open(path, opts);
    // The pool recovered itself when it opened: every root's type is known.
    const auto* rep = pool->recovery_report();
    if (rep == nullptr || !rep->heap_rebuilt || rep->roots_traced != 3)
      throw std::runtime_error("pool recovery did not rebuild the heap from the 3 roots");
    auto q = fc::PBQueue<>::attach(*pool, "q", kThreads);
    auto log = fc::OpLog::attach(*pool, "log", kThreads);
    auto* ledger = pool->root<Ledger>("ledger");
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t) {
      ts.emplace_back([&, t] {
        std::uint64_t seq = 0;
        if (auto rec = log.pending(t)) {
          // Detectable recovery of the operation pending at the kill.
          const auto w = q->recover(t, rec->seq, static_cast<fc::OpCode>(rec->op), rec->arg);
          if (static_cast<fc::OpCode>(rec->op) == fc::OpCode::kDequeue && fc::is_value_word(w))
            record_consumed(ledger, t, rec->seq, fc::word_value(w));
          seq = rec->seq;
        }
        while (seq < kOpsPerThread) {
          const std::uint64_t s = seq + 1;
          if (s % 2 == 1) {
            const auto v = job_value(t, (s - 1) / 2);
            log.begin(t, fc::OpCode::kEnqueue, v);
            q->enqueue(t, s, v);
          } else {
            log.begin(t, fc::OpCode::kDequeue, 0);
            if (auto v = q->dequeue(t, s)) record_consumed(ledger, t, s, *v);
          }
          seq = s;
        }
      });
    }
    for (auto& th : ts) th.join();
    ::_exit(0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child: %s\n", e.what());
    ::_exit(2);
  }
}

}  // namespace

TEST(PBProcess, QueueSurvivesRepeatedSigkillWithExactlyOnceJobs) {
  const std::string path = ferrite::test::temp_pool_path("proc");
  {
    auto pool = Pool::create(path, 32u << 20);
    fc::PBQueue<>::create(*pool, "q", kThreads);
    fc::OpLog::create(*pool, "log", kThreads);
    auto* l = pool->create_root<Ledger>("ledger");
    ASSERT_EQ(l->error, 0u);
  }
  std::mt19937 rng(12345);
  const int max_kills = ferrite::test::scaled(60, 10);
  int kills = 0, runs = 0;
  bool finished = false;
  while (!finished) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) child_main(path);
    ++runs;
    int status = 0;
    if (kills < max_kills) {
      // Kill after a random delay (the crash moment; not synchronization).
      const auto delay = std::chrono::microseconds(50 + rng() % 2000);
      const auto deadline = std::chrono::steady_clock::now() + delay;
      pid_t done = 0;
      while (done == 0 && std::chrono::steady_clock::now() < deadline) {
        done = ::waitpid(pid, &status, WNOHANG);
        if (done == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      if (done == 0) {
        ::kill(pid, SIGKILL);
        ASSERT_EQ(::waitpid(pid, &status, 0), pid);
      }
    } else {
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    }
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
      ++kills;
      continue;
    }
    ASSERT_TRUE(WIFEXITED(status)) << "child died of signal " << WTERMSIG(status);
    ASSERT_EQ(WEXITSTATUS(status), 0) << "child failed (see stderr)";
    finished = true;
  }
  std::printf("[pb-process] %d runs, %d SIGKILLs\n", runs, kills);
  EXPECT_GE(kills, std::min(max_kills, 5)) << "the child finished too fast to be killed";

  // Verify: every job consumed exactly once (ledger) or still queued.
  auto pool = Pool::open(path);
  auto q = fc::PBQueue<>::attach(*pool, "q", kThreads);
  auto log = fc::OpLog::attach(*pool, "log", kThreads);
  auto* l = pool->root<Ledger>("ledger");
  EXPECT_EQ(l->error, 0u) << "a job was consumed twice (value + 1 = " << l->error << ")";
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(log.last_seq(t), kOpsPerThread);
  std::set<std::int64_t> queued;
  for (auto v : q->values()) EXPECT_TRUE(queued.insert(v).second) << "duplicate in queue: " << v;
  std::size_t consumed = 0, lost = 0, twice = 0;
  for (int t = 0; t < kThreads; ++t)
    for (int j = 0; j < kJobs; ++j) {
      const bool c = l->consumer[t][j] != 0;
      const bool inq = queued.count(job_value(t, static_cast<std::uint64_t>(j))) != 0;
      consumed += c ? 1 : 0;
      lost += (!c && !inq) ? 1 : 0;
      twice += (c && inq) ? 1 : 0;
    }
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(twice, 0u);
  EXPECT_EQ(consumed + queued.size(), static_cast<std::size_t>(kThreads) * kJobs);
  std::printf("[pb-process] %zu jobs consumed, %zu still queued, 0 lost expected (%zu), 0 duplicated expected (%zu)\n",
              consumed, queued.size(), lost, twice);
  pool.reset();
  ::unlink(path.c_str());
}

}  // namespace pb_process_test
