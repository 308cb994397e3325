// Real-process crash test of Mirror: a hash map, a BST map and a skip-list
// map survive repeated SIGKILLs.
//
// A pool on /dev/shm holds a mirror::HashMap (or a mirror::Bst, a mirror::SkipList) used as a map. A forked child
// opens the pool (which recovers itself), attaches (Mirror's recovery: the
// volatile replica and the allocator rebuilt by tracing, §4.3.3) and runs a
// deterministic stream of operations from index n: op i is erase(key) when
// i % 5 == 4, else put(key, i), with key = (i * 7) % 97. After each
// operation returns it writes one byte to a pipe. The parent kills the child
// (SIGKILL) after a random number of acknowledgements, counts every byte
// that made it, re-opens the pool and checks the map is exactly the model
// after n acknowledged operations or after n + 1 (the one that may have
// been in flight, or done but not yet acknowledged). Then it restarts the
// child from there. Placements: DRAM replica (gone with the process: each
// restart rebuilds it) and both replicas in the pool.
//
// What it covers: process crashes — the DRAM replica, the allocator's free
// lists, EBR's retired nodes are lost mid-operation. Power failure (lost
// cache lines) is the crash simulator's job (mirror_crash_test.cc): on
// /dev/shm a killed process's stores all survive in the page cache.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/mirror/bst.h"
#include "ferrite/mirror/hash_map.h"
#include "ferrite/mirror/skip_list.h"

namespace mirror_process_test {  // this file's names, apart in a unity build

namespace fm = ferrite::mirror;
using ferrite::pmem::Pool;

namespace {

std::int64_t key_of(std::uint64_t i) { return static_cast<std::int64_t>((i * 7) % 97); }
bool is_erase(std::uint64_t i) { return i % 5 == 4; }

std::vector<std::pair<std::int64_t, std::int64_t>> model(std::uint64_t n) {
  std::map<std::int64_t, std::int64_t> m;
  for (std::uint64_t i = 0; i < n; ++i) {
    if (is_erase(i)) m.erase(key_of(i));
    else m[key_of(i)] = static_cast<std::int64_t>(i);
  }
  return {m.begin(), m.end()};
}

// A fresh map of either kind under root "m".
template <class M>
void create_map(Pool& pool) {
  if constexpr (requires { M::create(pool, "m", 1, 16, std::size_t{1}); })
    M::create(pool, "m", 1, 16, std::size_t{1} << 20);  // a hash table of 16 buckets
  else
    M::create(pool, "m", 1, std::size_t{1} << 20);
}

template <class M>
[[noreturn]] void child_main(const std::string& path, std::uint64_t start, int ack_fd) {
  try {
    auto pool = Pool::open(path);
    auto h = M::attach(*pool, "m", 1);
    for (std::uint64_t i = start;; ++i) {
      if (is_erase(i)) h->erase(key_of(i), 0);
      else h->put(key_of(i), static_cast<std::int64_t>(i), 0);
      const char b = 1;
      if (::write(ack_fd, &b, 1) != 1) ::_exit(3);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child: %s\n", e.what());
    ::_exit(2);
  }
}

template <class M>
void survives_repeated_kills(const char* tag) {
  ferrite::test::TempPath path(tag);
  {
    auto pool = Pool::create(path.path, std::size_t{16} << 20);
    create_map<M>(*pool);
  }
  std::mt19937_64 rng(7);
  std::uint64_t n = 0;  // operations known to have taken effect
  const int rounds = ferrite::test::scaled(12, 3);
  int ambiguous_took_effect = 0;
  for (int round = 0; round < rounds; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      child_main<M>(path.path, n, fds[1]);
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
    // The restarted machine: open (pool recovery), attach (Mirror recovery).
    auto pool = Pool::open(path.path);
    auto h = M::attach(*pool, "m", 1);
    const auto got = h->items(true);
    EXPECT_TRUE(h->replicas_equal());
    if (got == model(n + 1) && got != model(n)) {
      ++n;  // the operation in flight (or unacknowledged) took effect
      ++ambiguous_took_effect;
    } else {
      ASSERT_EQ(got, model(n)) << "round " << round << ": the map is neither the state after " << n
                               << " acknowledged operations nor after " << n + 1;
    }
    // Post-recovery operations in this process, then leave the pool to the
    // next child in the state the model says.
    h->put(1000, 1, 0);
    EXPECT_EQ(h->get(1000, 0), 1);
    EXPECT_EQ(h->erase(1000, 0), 1);
    EXPECT_EQ(h->items(true), model(n));
  }
  std::printf("[mirror] %s: %d kills, %llu operations survived, %d in-flight operations took effect\n", tag, rounds,
              static_cast<unsigned long long>(n), ambiguous_took_effect);
}

TEST(MirrorProcess, AHashMapWithItsReplicaInDramSurvivesRepeatedSigkill) {
  survives_repeated_kills<fm::HashMap<fm::Config<fm::InDram>>>("kill-dram");
}
TEST(MirrorProcess, AHashMapWithBothReplicasInThePoolSurvivesRepeatedSigkill) {
  survives_repeated_kills<fm::HashMap<fm::Config<fm::InPool>>>("kill-pool");
}
TEST(MirrorProcess, ABstMapWithItsReplicaInDramSurvivesRepeatedSigkill) {
  survives_repeated_kills<fm::Bst<fm::Config<fm::InDram>>>("kill-bst-dram");
}
TEST(MirrorProcess, ABstMapWithBothReplicasInThePoolSurvivesRepeatedSigkill) {
  survives_repeated_kills<fm::Bst<fm::Config<fm::InPool>>>("kill-bst-pool");
}

TEST(MirrorProcess, ASkipListMapWithItsReplicaInDramSurvivesRepeatedSigkill) {
  survives_repeated_kills<fm::SkipList<fm::Config<fm::InDram>>>("kill-sl-dram");
}
TEST(MirrorProcess, ASkipListMapWithBothReplicasInThePoolSurvivesRepeatedSigkill) {
  survives_repeated_kills<fm::SkipList<fm::Config<fm::InPool>>>("kill-sl-pool");
}

}  // namespace

}  // namespace mirror_process_test
