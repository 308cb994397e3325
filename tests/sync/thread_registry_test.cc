#include "ferrite/sync/thread_registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "ferrite/sync/backoff.h"
#include "ferrite/sync/cache_padded.h"

namespace thread_registry_test {  // this file's names, apart in a unity build

namespace fs = ferrite::sync;

TEST(ThreadRegistry, HandsOutDenseIdsAndReusesReleasedOnes) {
  fs::ThreadRegistry reg(4);
  auto a = reg.acquire();
  auto b = reg.acquire();
  EXPECT_EQ(a.id(), 0);
  EXPECT_EQ(b.id(), 1);
  a.release();
  EXPECT_FALSE(a);
  auto c = reg.acquire();
  EXPECT_EQ(c.id(), 0);  // lowest free id
  EXPECT_EQ(reg.in_use(), 2);
}

TEST(ThreadRegistry, ExhaustionIsAnErrorNotUndefinedBehaviour) {
  fs::ThreadRegistry reg(2);
  auto a = reg.acquire();
  auto b = reg.acquire();
  EXPECT_THROW(reg.acquire(), fs::RegistryFull);
  {
    auto moved = std::move(b);
    EXPECT_EQ(moved.id(), 1);
    EXPECT_EQ(b.id(), -1);
  }  // moved-to handle releases id 1
  EXPECT_EQ(reg.acquire().id(), 1);
  EXPECT_THROW(fs::ThreadRegistry(0), std::invalid_argument);
}

TEST(ThreadRegistry, ConcurrentAcquireGivesDistinctIds) {
  constexpr int kThreads = 8;
  fs::ThreadRegistry reg(kThreads);
  std::vector<int> ids(kThreads, -1);
  std::atomic<int> ready{0};
  std::vector<fs::ThreadRegistry::Handle> handles(kThreads);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      ready.fetch_add(1);
      fs::spin_until([&] { return ready.load() == kThreads; });
      handles[t] = reg.acquire();
      ids[t] = handles[t].id();
    });
  for (auto& t : ts) t.join();
  std::set<int> distinct(ids.begin(), ids.end());
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kThreads));
  EXPECT_EQ(*distinct.begin(), 0);
  EXPECT_EQ(*distinct.rbegin(), kThreads - 1);
  EXPECT_THROW(reg.acquire(), fs::RegistryFull);
}

TEST(CachePadded, OccupiesItsOwnLines) {
  fs::CachePadded<int> a[2];
  EXPECT_EQ(sizeof(a[0]), fs::kPadding);
  EXPECT_EQ(reinterpret_cast<char*>(&a[1].value) - reinterpret_cast<char*>(&a[0].value),
            static_cast<std::ptrdiff_t>(fs::kPadding));
  *a[0] = 7;
  EXPECT_EQ(a[0].value, 7);
}

TEST(Backoff, GrowsToItsCapAndResets) {
  fs::Backoff b(1, 8);
  EXPECT_EQ(b.current(), 1u);
  b.pause(); b.pause(); b.pause();
  EXPECT_EQ(b.current(), 8u);
  b.pause();  // at cap: yields, stays
  EXPECT_EQ(b.current(), 8u);
  b.reset();
  EXPECT_EQ(b.current(), 1u);
}

}  // namespace thread_registry_test
