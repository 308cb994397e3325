// Real-process crash test of OptUnlinkedQ and OptLinkedQ
// (include/ferrite/baselines/sela_petrank.h): a queue survives repeated
// SIGKILLs.
//
// A pool on /dev/shm holds the queue. A forked child opens the pool (the
// pool's recovery marks the queue's slabs), attaches (the queue rebuilds
// itself from its persistent nodes) and runs a deterministic stream from
// operation n: op i is a dequeue when i % 3 == 2, else enqueue(i). After
// each operation returns it writes one byte to a pipe. The parent kills the
// child after a random number of acknowledgements, re-opens the pool and
// checks that the queue is exactly the model after n acknowledged operations
// or after n + 1 (the one in flight). Then it restarts the child from there.
//
// What it covers: process crashes — the volatile queue, EBR's retired nodes
// and the slab free lists are lost mid-operation; recovery must rebuild the
// queue from the persistent nodes alone. Lost cache lines (power failure)
// are the crash simulator's job (sela_petrank_crash_test.cc): on /dev/shm a
// killed process's stores all survive in the page cache.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/baselines/sela_petrank.h"

namespace sela_petrank_process_test {  // this file's names, apart in a unity build

namespace fb = ferrite::baselines;
using ferrite::pmem::Pool;

namespace {

bool is_dequeue(std::uint64_t i) { return i % 3 == 2; }

std::vector<std::int64_t> model(std::uint64_t n) {
  std::deque<std::int64_t> q;
  for (std::uint64_t i = 0; i < n; ++i) {
    if (!is_dequeue(i)) q.push_back(static_cast<std::int64_t>(i));
    else if (!q.empty()) q.pop_front();
  }
  return {q.begin(), q.end()};
}

template <class Q>
[[noreturn]] void child_main(const std::string& path, std::uint64_t start, int ack_fd) {
  try {
    auto pool = Pool::open(path);
    Q q(*pool, "q", 1);
    for (std::uint64_t i = start;; ++i) {
      std::int64_t v;
      if (is_dequeue(i)) (void)q.try_dequeue(0, &v);
      else q.enqueue(0, static_cast<std::int64_t>(i));
      const char b = 1;
      if (::write(ack_fd, &b, 1) != 1) ::_exit(3);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child: %s\n", e.what());
    ::_exit(2);
  }
}

template <class Q>
void survives_repeated_kills(const char* tag) {
  ferrite::test::TempPath path(tag);
  {
    auto pool = Pool::create(path.path, std::size_t{16} << 20);
    Q q(*pool, "q", 1);
  }
  std::mt19937_64 rng(11);
  std::uint64_t n = 0;  // operations known to have taken effect
  const int rounds = ferrite::test::scaled(10, 3);
  int in_flight_took_effect = 0;
  for (int round = 0; round < rounds; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      child_main<Q>(path.path, n, fds[1]);
    }
    ::close(fds[1]);
    const std::uint64_t wait_for = 200 + rng() % 3000;
    std::uint64_t acked = 0;
    char buf[256];
    while (acked < wait_for) {
      const ssize_t r = ::read(fds[0], buf, sizeof buf);
      if (r <= 0) break;
      acked += static_cast<std::uint64_t>(r);
    }
    ::kill(pid, SIGKILL);
    for (;;) {  // bytes written before the kill are completed operations
      const ssize_t r = ::read(fds[0], buf, sizeof buf);
      if (r <= 0) break;
      acked += static_cast<std::uint64_t>(r);
    }
    ::close(fds[0]);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the child exited by itself (status " << status << ") in round " << round;
    n += acked;
    auto pool = Pool::open(path.path);  // the restarted machine
    ASSERT_NE(pool->recovery_report(), nullptr);
    EXPECT_TRUE(pool->recovery_report()->failed_roots.empty());
    Q q(*pool, "q", 1);
    const auto got = q.snapshot();
    if (got == model(n + 1) && got != model(n)) {
      ++n;  // the operation in flight (or unacknowledged) took effect
      ++in_flight_took_effect;
    } else {
      ASSERT_EQ(got, model(n)) << "round " << round << ": the queue is neither the state after " << n
                               << " acknowledged operations nor after " << n + 1;
    }
  }
  std::printf("[sela-petrank-process] %s: %d kills, %llu operations survived, %d in-flight operations took effect\n",
              tag, rounds, static_cast<unsigned long long>(n), in_flight_took_effect);
}

TEST(SelaPetrankProcess, OptUnlinkedQSurvivesRepeatedSigkill) {
  survives_repeated_kills<fb::OptUnlinkedQ<>>("kill-optunlinkedq");
}
TEST(SelaPetrankProcess, OptLinkedQSurvivesRepeatedSigkill) {
  survives_repeated_kills<fb::OptLinkedQ<>>("kill-optlinkedq");
}

}  // namespace

}  // namespace sela_petrank_process_test
