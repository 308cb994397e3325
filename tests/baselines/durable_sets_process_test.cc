// Real-process crash test of the durable Harris-list hash tables
// (include/ferrite/baselines/harris_hash.h), the Natarajan–Mittal BST
// (nm_bst.h), the skip list (hs_skip_list.h) and SOFT (soft_hash.h): a map
// survives repeated SIGKILLs.
//
// A pool on /dev/shm holds an izraelevitz-hashmap or an nvtraverse-hashmap
// (or one of the BSTs / the NVTraverse skip list).
// A forked child opens the pool (Pool::recover traces the table from its
// root), attaches, and runs a deterministic stream of operations from index
// n: op i is erase(key) when i % 5 == 4, else put(key, i), with key =
// (i * 7) % 97. After each operation returns it writes one byte to a pipe.
// The parent kills the child (SIGKILL) after a random number of
// acknowledgements, counts every byte that made it, re-opens the pool and
// checks the map is exactly the model after n acknowledged operations or
// after n + 1 (the one in flight, or done but not acknowledged). Then it
// restarts the child from there.
//
// What it covers: process crashes — EBR's retired nodes, the heap's free
// lists and marked-but-linked nodes are left mid-operation; the pool's
// recovery must keep every reachable node and free the rest. Lost cache
// lines (power failure) are the crash simulator's job
// (durable_sets_crash_test.cc): on /dev/shm a killed process's stores all
// survive in the page cache.
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
#include "ferrite/baselines/harris_hash.h"
#include "ferrite/baselines/hs_skip_list.h"
#include "ferrite/baselines/nm_bst.h"
#include "ferrite/baselines/soft_hash.h"

namespace durable_sets_process_test {  // this file's names, apart in a unity build

namespace fb = ferrite::baselines;
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

template <class T>
[[noreturn]] void child_main(const std::string& path, std::uint64_t start, int ack_fd) {
  try {
    auto pool = Pool::open(path);
    auto h = T::attach(*pool, "m", 1);
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

// `create(pool)` makes the structure under root "m".
template <class T, class Create>
void survives_repeated_kills(const char* tag, Create&& create) {
  ferrite::test::TempPath path(tag);
  {
    auto pool = Pool::create(path.path, std::size_t{16} << 20);
    create(*pool);
  }
  std::mt19937_64 rng(7);
  std::uint64_t n = 0;  // operations known to have taken effect
  const int rounds = ferrite::test::scaled(10, 3);
  int ambiguous_took_effect = 0;
  for (int round = 0; round < rounds; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      child_main<T>(path.path, n, fds[1]);
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
    auto pool = Pool::open(path.path);  // the restarted machine: pool recovery traces the table
    ASSERT_NE(pool->recovery_report(), nullptr);
    EXPECT_TRUE(pool->recovery_report()->failed_roots.empty());
    EXPECT_TRUE(pool->recovery_report()->heap_rebuilt);
    auto h = T::attach(*pool, "m", 1);
    const auto got = h->items(true);
    if (got == model(n + 1) && got != model(n)) {
      ++n;  // the operation in flight (or unacknowledged) took effect
      ++ambiguous_took_effect;
    } else {
      ASSERT_EQ(got, model(n)) << "round " << round << ": the map is neither the state after " << n
                               << " acknowledged operations nor after " << n + 1;
    }
    h->put(1000, 1, 0);
    EXPECT_EQ(h->get(1000, 0), 1);
    EXPECT_EQ(h->erase(1000, 0), 1);
    EXPECT_EQ(h->items(true), model(n));
  }
  std::printf("[durable-sets] %s: %d kills, %llu operations survived, %d in-flight operations took effect\n", tag,
              rounds, static_cast<unsigned long long>(n), ambiguous_took_effect);
}

// 8 buckets: lists of ~12 nodes.
template <class T>
void hash_kills(const char* tag) {
  survives_repeated_kills<T>(tag, [](Pool& pool) { T::create(pool, "m", 1, 8); });
}
template <class T>
void ordered_kills(const char* tag) {
  survives_repeated_kills<T>(tag, [](Pool& pool) { T::create(pool, "m", 1); });
}

TEST(DurableSetProcess, AnIzraelevitzHashMapSurvivesRepeatedSigkill) { hash_kills<fb::IzraelevitzHashTable<>>("kill-izr"); }
TEST(DurableSetProcess, AnNVTraverseHashMapSurvivesRepeatedSigkill) { hash_kills<fb::NVTraverseHashTable<>>("kill-nvt"); }
// SOFT: recovery scans the slabs; a kill leaves VNodes (DRAM) behind and
// PNodes mid-create, mid-destroy or mid-update.
TEST(DurableSetProcess, ASoftHashMapSurvivesRepeatedSigkill) { hash_kills<fb::SoftHashTable<>>("kill-soft"); }
// The BST's recovery finishes flagged deletes: a kill between a delete's
// flag and its cleanup is decided at attach.
TEST(DurableSetProcess, AnNVTraverseBstSurvivesRepeatedSigkill) { ordered_kills<fb::NVTraverseNmBst<>>("kill-nvt-bst"); }
TEST(DurableSetProcess, AnIzraelevitzBstSurvivesRepeatedSigkill) { ordered_kills<fb::IzraelevitzNmBst<>>("kill-izr-bst"); }
TEST(DurableSetProcess, AnNVTraverseSkipListSurvivesRepeatedSigkill) {
  ordered_kills<fb::NVTraverseHsSkipList<>>("kill-nvt-skip");
}

}  // namespace

}  // namespace durable_sets_process_test
