// Stress tests of the StrandWeaver paper's Table II workloads on the
// logging library (run under TSan by the tsan preset): several threads
// through the array swap, the red-black tree, TPCC New-Order and the
// N-Store-like key-value store in every language-level model. Each ends in
// a state its invariants allow (a permutation; a valid red-black tree with
// each thread's last writes; contiguous order ids per district with every
// order accounted for; whole tuples with each thread's last writes), and
// with every log empty (all regions pruned).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/logging/array_swap.h"
#include "ferrite/logging/handoff.h"
#include "ferrite/logging/kv_store.h"
#include "ferrite/logging/rb_tree.h"
#include "ferrite/logging/tpcc.h"

namespace table2_stress_test {  // this file's names, apart in a unity build

namespace fl = ferrite::logging;
using ferrite::test::scaled;

namespace {

constexpr int kThreads = 4;

// Runs body(t) on kThreads threads. A thread that is done keeps pruning
// its deferred regions (ATLAS / SFR: a region waits for the regions of
// other threads it acquired from) until none is left, as an application
// thread must before it leaves: only a log's owner prunes it, and another
// thread's regions may wait for this one's.
template <class F>
void run_threads(fl::Logger& lg, F&& body) {
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&body, &lg, t] {
      body(t);
      while (lg.deferred(t) > 0) lg.drain(t);
    });
  for (auto& th : ts) th.join();
}



std::uint64_t step(std::uint64_t& r) {
  r = r * 6364136223846793005ull + 1442695040888963407ull;
  return r >> 33;
}

// Each thread's own keys (t * 1000 + [0, 50)): put / erase / get, with the
// answers checked against the thread's own view; returns the union.
template <class M>
std::vector<std::pair<std::int64_t, std::int64_t>> own_keys_workload(M& m, int ops) {
  std::vector<std::map<std::int64_t, std::int64_t>> want(kThreads);
  run_threads(m.logger(), [&](int t) {
    auto& w = want[static_cast<std::size_t>(t)];
    std::uint64_t r = 77 + static_cast<std::uint64_t>(t);
    for (int i = 0; i < ops; ++i) {
      const std::uint64_t x = step(r);
      const std::int64_t k = t * 1000 + static_cast<std::int64_t>(x % 50);
      if ((x >> 20) % 3 == 0) {
        EXPECT_EQ(m.erase(t, k).has_value(), w.count(k) == 1);
        w.erase(k);
      } else {
        EXPECT_EQ(m.put(t, k, i).has_value(), w.count(k) == 1);
        w[k] = i;
      }
      EXPECT_EQ(m.get(t, k).has_value(), w.count(k) == 1);
    }
  });
  std::vector<std::pair<std::int64_t, std::int64_t>> all;
  for (const auto& w : want) all.insert(all.end(), w.begin(), w.end());
  std::sort(all.begin(), all.end());
  return all;
}

}  // namespace

class TableTwoStress : public ::testing::TestWithParam<fl::Language> {};

TEST_P(TableTwoStress, ArraySwapsLeaveAPermutation) {
  ferrite::test::TempPool pool("lg-stress-as", std::size_t{64} << 20);
  fl::LoggedArraySwap a(*pool, "a", kThreads, {.language = GetParam()}, 64);
  const int ops = scaled(3000, 300);
  run_threads(a.logger(), [&](int t) {
    std::uint64_t r = 5 + static_cast<std::uint64_t>(t);
    for (int i = 0; i < ops; ++i) {
      const std::uint64_t x = step(r);
      a.swap(t, x % 64, (x >> 8) % 64);
      const std::int64_t v = a.get(t, (x >> 16) % 64);
      EXPECT_TRUE(v >= 1 && v <= 64) << v;
    }
  });
  auto got = a.snapshot();
  std::sort(got.begin(), got.end());
  std::vector<std::int64_t> want(64);
  std::iota(want.begin(), want.end(), 1);
  EXPECT_EQ(got, want);
  EXPECT_EQ(fl::recover_area(&pool->root<fl::LoggedArraySwap::Root>("a")->log).live_entries, 0u);
}

TEST_P(TableTwoStress, TheRedBlackTreeStaysValidAndEndsWithEachThreadsLastWrites) {
  ferrite::test::TempPool pool("lg-stress-rb", std::size_t{64} << 20);
  fl::LoggedRbTree m(*pool, "m", kThreads, {.language = GetParam()});
  const auto all = own_keys_workload(m, scaled(2000, 200));
  EXPECT_EQ(m.check(), "");
  EXPECT_EQ(m.items(), all);
  EXPECT_EQ(fl::recover_area(&pool->root<fl::LoggedRbTree::Root>("m")->log).live_entries, 0u);
}

TEST_P(TableTwoStress, NewOrdersGetContiguousIdsPerDistrictAndEveryOrderIsLinked) {
  ferrite::test::TempPool pool("lg-stress-tc", std::size_t{64} << 20);
  fl::LoggedTpcc tp(*pool, "t", kThreads, {.language = GetParam()}, 4, 32);
  const int ops = scaled(1500, 150);
  std::vector<std::vector<std::set<std::int64_t>>> ids(kThreads, std::vector<std::set<std::int64_t>>(4));
  run_threads(tp.logger(), [&](int t) {
    std::uint64_t r = 11 + static_cast<std::uint64_t>(t);
    for (int i = 0; i < ops; ++i) {
      const std::uint64_t x = step(r);
      const std::uint64_t d = x % 4;
      ids[static_cast<std::size_t>(t)][d].insert(tp.new_order(t, d, x));
    }
  });
  const auto snap = tp.snapshot();
  ASSERT_EQ(snap[0], 4);
  ASSERT_EQ(snap[1], 32);
  std::int64_t total = 0;
  for (std::size_t d = 0; d < 4; ++d) {
    std::set<std::int64_t> all;
    for (const auto& per : ids) all.insert(per[d].begin(), per[d].end());
    const auto n = static_cast<std::int64_t>(all.size());
    total += n;
    EXPECT_EQ(snap[2 + d], n + 1) << "district " << d;  // next_o_id: every id handed out once
    if (!all.empty()) {
      EXPECT_EQ(*all.begin(), 1);
      EXPECT_EQ(*all.rbegin(), n);
    }
  }
  EXPECT_EQ(total, static_cast<std::int64_t>(kThreads) * ops);
  for (std::size_t i = 0; i < 32; ++i) EXPECT_GT(snap[2 + 4 + i], 0) << "stock of item " << i;
  // The order lists: district d's count, then ids 1..n in order.
  std::size_t p = 2 + 4 + 32;
  for (std::size_t d = 0; d < 4; ++d) {
    const auto n = snap[p];
    EXPECT_EQ(n, snap[2 + d] - 1) << "district " << d;
    for (std::int64_t k = 0; k < n; ++k) EXPECT_EQ(snap[p + 1 + 2 * static_cast<std::size_t>(k)], k + 1);
    p += 1 + 2 * static_cast<std::size_t>(n);
  }
  EXPECT_EQ(fl::recover_area(&pool->root<fl::LoggedTpcc::Root>("t")->log).live_entries, 0u);
}

TEST_P(TableTwoStress, TheKeyValueStoreKeepsWholeTuplesAndEachThreadsLastWrites) {
  ferrite::test::TempPool pool("lg-stress-kv", std::size_t{64} << 20);
  fl::LoggedKvStore m(*pool, "m", kThreads, {.language = GetParam()}, 64);
  const auto all = own_keys_workload(m, scaled(3000, 300));
  std::size_t torn = 1;
  EXPECT_EQ(m.items(&torn), all);
  EXPECT_EQ(torn, 0u);
  EXPECT_EQ(fl::recover_area(&pool->root<fl::LoggedKvStore::Root>("m")->log).live_entries, 0u);
}

// The HOPS+ paper's Figure 1 under contention (ATLAS only): early releases,
// deferred prunes of the sections that depend on them.
TEST(TableTwoStressHandoff, CountsEveryProduceAndFlagsOnlyProducedValues) {
  ferrite::test::TempPool pool("lg-stress-hf", std::size_t{64} << 20);
  fl::LoggedHandoff h(*pool, "h", kThreads, {.language = fl::Language::kAtlas});
  const int ops = scaled(3000, 300);
  std::vector<int> produced(kThreads, 0);
  run_threads(h.logger(), [&](int t) {
    std::uint64_t r = 3 + static_cast<std::uint64_t>(t);
    for (int i = 0; i < ops; ++i) {
      const std::uint64_t x = step(r);
      if (x % 2 == 0) {
        h.produce(t, (static_cast<std::int64_t>(t) + 1) << 32 | (i + 1));
        ++produced[static_cast<std::size_t>(t)];
      } else {
        const std::int64_t v = h.consume(t, x >> 8);
        EXPECT_TRUE(v == 0 || ((v >> 32) >= 1 && (v >> 32) <= kThreads)) << v;
      }
      h.logger().flush_deferred(t);
    }
  });
  const auto snap = h.snapshot();
  EXPECT_EQ(snap[1], std::accumulate(produced.begin(), produced.end(), 0));
  for (int k = 0; k < fl::LoggedHandoff::kSlots; ++k) {
    const std::int64_t v = snap[2 + static_cast<std::size_t>(k)];
    EXPECT_TRUE(v == 0 || ((v >> 32) >= 1 && (v >> 32) <= kThreads)) << "slot " << k << ": " << v;
  }
}

// 8 threads with unequal shares that leave without draining (as the
// `ferrite trace` and crash-campaign drivers do): a thread that is done
// leaves deferred sections behind, and every section that acquires from
// them waits for them. The others must still finish — before the fix the
// logs filled, append threw inside a section with its locks held, and the
// rest hung in Logger::acquire. Runs in a child process with a deadline
// (alarm): a hang is a failed test, not a stuck one.
namespace {

constexpr int kLeavers = 8;

template <class Body>
void run_leavers(Body&& body) {
  std::vector<std::thread> ts;
  std::vector<std::string> errors(kLeavers);
  for (int t = 0; t < kLeavers; ++t)
    ts.emplace_back([&, t] {
      try {
        body(t);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(t)] = e.what();
      }
    });
  for (auto& th : ts) th.join();
  for (const auto& e : errors)
    if (!e.empty()) throw std::runtime_error(e);
}

// Exit status of `body` run in a child under a `seconds` alarm: 0 done, 1
// threw (message on stderr), -SIGALRM hung.
int in_child_with_deadline(unsigned seconds, const std::function<void()>& body) {
  const pid_t pid = ::fork();
  if (pid < 0) return -1000;
  if (pid == 0) {
    ::alarm(seconds);
    int rc = 0;
    try {
      body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      rc = 1;
    }
    std::_Exit(rc);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace

class LeaversDoNotStall : public ::testing::TestWithParam<fl::Language> {};

TEST_P(LeaversDoNotStall, ArraySwapsTpccAndHandoffWithEightThreadsThatLeaveWithoutDraining) {
  const fl::Language lang = GetParam();
  const int ops = scaled(1200, 200);  // per thread at most; thread t runs (t + 1) / 8 of it
  auto share = [&](int t) { return ops * (t + 1) / kLeavers; };
  const int rc = in_child_with_deadline(20, [&] {
    {
      ferrite::test::TempPool pool("lg-leave-as", std::size_t{64} << 20);
      fl::LoggedArraySwap a(*pool, "a", kLeavers, {.language = lang}, 16);
      run_leavers([&](int t) {
        std::uint64_t r = 5 + static_cast<std::uint64_t>(t);
        for (int i = 0; i < share(t); ++i) {
          const std::uint64_t x = step(r);
          a.swap(t, x % 16, (x >> 8) % 16);
        }
      });
      auto got = a.snapshot();
      std::sort(got.begin(), got.end());
      for (std::size_t i = 0; i < got.size(); ++i)
        if (got[i] != static_cast<std::int64_t>(i + 1)) throw std::runtime_error("swap: not a permutation");
    }
    {
      ferrite::test::TempPool pool("lg-leave-tc", std::size_t{64} << 20);
      fl::LoggedTpcc tp(*pool, "t", kLeavers, {.language = lang}, 4, 4);
      run_leavers([&](int t) {
        std::uint64_t r = 11 + static_cast<std::uint64_t>(t);
        for (int i = 0; i < share(t); ++i) {
          const std::uint64_t x = step(r);
          tp.new_order(t, x % 4, x);
        }
      });
    }
    if (lang == fl::Language::kAtlas) {
      ferrite::test::TempPool pool("lg-leave-hf", std::size_t{64} << 20);
      fl::LoggedHandoff h(*pool, "h", kLeavers, {.language = lang});
      run_leavers([&](int t) {
        std::uint64_t r = 3 + static_cast<std::uint64_t>(t);
        for (int i = 0; i < share(t); ++i) {
          const std::uint64_t x = step(r);
          if (x % 2 == 0) h.produce(t, i + 1);
          else h.consume(t, x >> 8);
        }
      });
    }
  });
  EXPECT_EQ(rc, 0) << (rc == -SIGALRM ? "hung (deadline passed)" : rc == 1 ? "a thread threw" : "abnormal exit");
}

// Groups of swaps (several operations in one region, logging::Group) among
// single swaps on 8 threads: the group takes its stripes in the order the
// single swaps do, so nothing deadlocks (a hang fails at the deadline), and
// the array stays a permutation.
TEST_P(LeaversDoNotStall, GroupsOfSwapsAmongSingleSwapsLeaveAPermutation) {
  const fl::Language lang = GetParam();
  const int ops = scaled(1200, 200);
  const int rc = in_child_with_deadline(20, [&] {
    ferrite::test::TempPool pool("lg-group-as", std::size_t{64} << 20);
    fl::LoggedArraySwap a(*pool, "a", kLeavers, {.language = lang}, 16);
    run_leavers([&](int t) {
      std::uint64_t r = 7 + static_cast<std::uint64_t>(t);
      const int k = 1 + t % 4;  // 1 (single swaps), 2, 3 or 4 per region
      for (int i = 0; i < ops; i += k) {
        std::vector<std::pair<std::uint64_t, std::uint64_t>> sw;
        std::vector<fl::Lock*> locks;
        for (int j = 0; j < k; ++j) {
          const std::uint64_t x = step(r);
          sw.emplace_back(x % 16, (x >> 8) % 16);
          a.locks_of(sw.back().first, sw.back().second, locks);
        }
        if (k == 1) {
          a.swap(t, sw[0].first, sw[0].second);
          continue;
        }
        fl::Group g(a.logger(), t, locks);
        for (const auto& [x, y] : sw) a.swap(t, x, y);
        (void)a.get(t, sw[0].first);
        g.end();
      }
    });
    auto got = a.snapshot();
    std::sort(got.begin(), got.end());
    for (std::size_t i = 0; i < got.size(); ++i)
      if (got[i] != static_cast<std::int64_t>(i + 1)) throw std::runtime_error("swap: not a permutation");
  });
  EXPECT_EQ(rc, 0) << (rc == -SIGALRM ? "hung (deadline passed)" : rc == 1 ? "a thread threw" : "abnormal exit");
}

INSTANTIATE_TEST_SUITE_P(Languages, LeaversDoNotStall,
                         ::testing::Values(fl::Language::kTxn, fl::Language::kAtlas, fl::Language::kSfr),
                         [](const auto& i) { return std::string(fl::language_name(i.param)); });

INSTANTIATE_TEST_SUITE_P(Languages, TableTwoStress,
                         ::testing::Values(fl::Language::kTxn, fl::Language::kAtlas, fl::Language::kSfr),
                         [](const auto& i) { return std::string(fl::language_name(i.param)); });

}  // namespace table2_stress_test
