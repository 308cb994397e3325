// Real-process crash test of mirror::BytesHashMap (mirror/bytes_map.h):
// every acknowledged put survives SIGKILL, byte for byte.
//
// As mirror_process_test.cc: a forked child opens the pool (pool recovery:
// BytesRoot's hook marks every payload the map names, the rest is freed),
// attaches (Mirror's recovery) and runs a deterministic stream from index n —
// op i is remove(key) when i % 5 == 4, else put(key, value(i)) with key
// (i * 7) % 97 as a byte string of 1..80 bytes and value(i) of 0..3000
// bytes — acknowledging each returned operation with one byte on a pipe.
// The parent kills it after a random number of acknowledgements, reopens
// and checks the map is the model after n or n + 1 operations (the one in
// flight), then restarts the child from there. A put after each recovery
// reuses blocks pool recovery freed: a payload it wrongly freed would show.
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
#include "ferrite/mirror/bytes_map.h"

namespace mirror_bytes_process_test {  // this file's names, apart in a unity build

namespace fm = ferrite::mirror;
using ferrite::pmem::Pool;

namespace {

std::string fill(std::size_t n, std::uint64_t seed) {
  std::string s(n, '\0');
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ull + 7;
  for (auto& c : s) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    c = static_cast<char>(x >> 56);
  }
  return s;
}
std::string key_of(std::uint64_t i) {
  const std::uint64_t k = (i * 7) % 97;
  return std::to_string(k) + ":" + fill(k % 80, k);
}
std::string value_of(std::uint64_t i) { return fill((i * 131) % 3001, i); }
bool is_remove(std::uint64_t i) { return i % 5 == 4; }

std::vector<std::pair<std::string, std::string>> model(std::uint64_t n) {
  std::map<std::string, std::string> m;
  for (std::uint64_t i = 0; i < n; ++i) {
    if (is_remove(i)) m.erase(key_of(i));
    else m[key_of(i)] = value_of(i);
  }
  return {m.begin(), m.end()};
}

ferrite::MapOptions opts() {
  ferrite::MapOptions o;
  o.threads = 1;
  o.buckets = 16;
  return o;
}

template <class C>
[[noreturn]] void child_main(const std::string& path, std::uint64_t start, int ack_fd) {
  try {
    auto pool = Pool::open(path);
    auto h = fm::BytesHashMap<C>::attach(*pool, "m", opts());
    for (std::uint64_t i = start;; ++i) {
      if (is_remove(i)) h->remove(0, key_of(i));
      else h->put(0, key_of(i), value_of(i));
      const char b = 1;
      if (::write(ack_fd, &b, 1) != 1) ::_exit(3);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child: %s\n", e.what());
    ::_exit(2);
  }
}

template <class C>
void survives_repeated_kills(const char* tag) {
  ferrite::test::TempPath path(tag);
  {
    auto pool = Pool::create(path.path, std::size_t{32} << 20);
    fm::BytesHashMap<C>::create(*pool, "m", opts(), std::size_t{1} << 20);
  }
  std::mt19937_64 rng(11);
  std::uint64_t n = 0;
  const int rounds = ferrite::test::scaled(10, 3);
  int in_flight_took_effect = 0;
  for (int round = 0; round < rounds; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      child_main<C>(path.path, n, fds[1]);
    }
    ::close(fds[1]);
    const std::uint64_t wait_for = 100 + rng() % 1500;
    std::uint64_t acked = 0;
    char buf[256];
    while (acked < wait_for) {
      const ssize_t r = ::read(fds[0], buf, sizeof buf);
      if (r <= 0) break;
      acked += static_cast<std::uint64_t>(r);
    }
    ::kill(pid, SIGKILL);
    for (;;) {
      const ssize_t r = ::read(fds[0], buf, sizeof buf);
      if (r <= 0) break;
      acked += static_cast<std::uint64_t>(r);
    }
    ::close(fds[0]);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the child exited by itself (status " << status << ") in round " << round;
    n += acked;
    auto pool = Pool::open(path.path);
    ASSERT_TRUE(pool->recovery_report()->failed_roots.empty());
    auto h = fm::BytesHashMap<C>::attach(*pool, "m", opts());
    const auto got = h->items();
    EXPECT_TRUE(h->replicas_equal());
    if (got == model(n + 1) && got != model(n)) {
      ++n;
      ++in_flight_took_effect;
    } else {
      ASSERT_EQ(got, model(n)) << "round " << round << ": neither the state after " << n
                               << " acknowledged operations nor after " << n + 1;
    }
    EXPECT_EQ(h->size(), got.size());
    // Post-recovery puts reuse what pool recovery freed; the content stays.
    for (int j = 0; j < 20; ++j) h->put(0, "post" + std::to_string(j), fill(2000, 99 + j));
    for (int j = 0; j < 20; ++j) EXPECT_TRUE(h->remove(0, "post" + std::to_string(j)));
    ASSERT_EQ(h->items(), model(n));
  }
  std::printf("[mirror] %s: %d kills, %llu operations survived, %d in-flight operations took effect\n", tag, rounds,
              static_cast<unsigned long long>(n), in_flight_took_effect);
}

TEST(MirrorBytesProcess, AByteMapWithItsReplicaInDramSurvivesRepeatedSigkill) {
  survives_repeated_kills<fm::Config<fm::InDram>>("kill-bytes-dram");
}
TEST(MirrorBytesProcess, AByteMapWithBothReplicasInThePoolSurvivesRepeatedSigkill) {
  survives_repeated_kills<fm::Config<fm::InPool>>("kill-bytes-pool");
}

}  // namespace

}  // namespace mirror_bytes_process_test
