// Unit tests of mirror::SkipList (include/ferrite/mirror/skip_list.h): the
// Herlihy–Shavit lock-free skip list made durable by Mirror, as a set and as a map, in both
// placements; sequential agreement with std::set / std::map, restarts
// (recovery by tracing every level from head, §4.3.3), the allocator rebuilt from the
// live set, refusals, and recovery time against live size.
// Crash campaigns: mirror_crash_test.cc; concurrency: mirror_stress_test.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/mirror/skip_list.h"
#include "ferrite/mirror/bst.h"
#include "ferrite/mirror/hash_map.h"

namespace skiplist_test {  // this file's names, apart in a unity build

namespace fm = ferrite::mirror;
using ferrite::test::scaled;
using ferrite::test::TempPool;

namespace {

using Dram = fm::Config<fm::InDram>;
using Nvm = fm::Config<fm::InPool>;

std::vector<std::int64_t> keys_of(const std::vector<std::pair<std::int64_t, std::int64_t>>& items) {
  std::vector<std::int64_t> k;
  for (const auto& [key, v] : items) k.push_back(key);
  return k;
}

template <class C>
void set_agrees_with_std_set_and_survives_a_restart(const char* tag) {
  TempPool pool(tag, std::size_t{32} << 20);
  std::set<std::int64_t> model;
  std::uint64_t rng = 12345;
  const int ops = scaled(20000, 2000);
  {
    auto t = fm::SkipList<C>::create(*pool, "t", 2, std::size_t{2} << 20);
    for (int i = 0; i < ops; ++i) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      const auto key = static_cast<std::int64_t>((rng >> 33) % 512) - 100;  // negative keys too
      const int tid = i % 2;
      switch ((rng >> 20) % 3) {
        case 0: ASSERT_EQ(t->insert(key, tid), model.insert(key).second) << "insert " << key; break;
        case 1: ASSERT_EQ(t->remove(key, tid), model.erase(key) == 1) << "remove " << key; break;
        default: ASSERT_EQ(t->contains(key, tid), model.count(key) == 1) << "contains " << key;
      }
    }
    EXPECT_EQ(keys_of(t->items(false)), std::vector<std::int64_t>(model.begin(), model.end()));
    EXPECT_TRUE(t->replicas_equal());
  }
  pool.reopen();  // the DRAM replica is unmapped with the pool: recovery must rebuild it
  auto t = fm::SkipList<C>::attach(*pool, "t", 2);
  EXPECT_EQ(keys_of(t->items(false)), std::vector<std::int64_t>(model.begin(), model.end()));
  EXPECT_TRUE(t->replicas_equal());
  // The allocator was rebuilt from the live set: head (6 units) and at
  // least one unit per key are live.
  EXPECT_GE(t->heap().units() - t->heap().free_units(), 6 + model.size());
  EXPECT_LE(t->heap().units() - t->heap().free_units(), 6 + 6 * model.size());
  // The rebuilt free lists never hand out a live node: churn, then compare.
  for (int i = 0; i < ops; ++i) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    const auto key = static_cast<std::int64_t>((rng >> 33) % 1024);
    if ((rng >> 20) % 2 == 0) ASSERT_EQ(t->insert(key, 1), model.insert(key).second);
    else ASSERT_EQ(t->remove(key, 0), model.erase(key) == 1);
  }
  EXPECT_EQ(keys_of(t->items(false)), std::vector<std::int64_t>(model.begin(), model.end()));
}

TEST(MirrorSkipList, ASetAgreesWithStdSetAndSurvivesARestartWithItsReplicaInDram) {
  set_agrees_with_std_set_and_survives_a_restart<Dram>("sl-dram");
}
TEST(MirrorSkipList, ASetAgreesWithStdSetAndSurvivesARestartWithBothReplicasInThePool) {
  set_agrees_with_std_set_and_survives_a_restart<Nvm>("sl-pool");
}

template <class C>
void map_agrees_with_std_map_and_survives_a_restart(const char* tag) {
  TempPool pool(tag, std::size_t{32} << 20);
  std::map<std::int64_t, std::int64_t> model;
  std::uint64_t rng = 999;
  const int ops = scaled(20000, 2000);
  auto check = [&](fm::SkipList<C>& t) {
    std::vector<std::pair<std::int64_t, std::int64_t>> want(model.begin(), model.end());
    EXPECT_EQ(t.items(true), want);
  };
  auto churn = [&](fm::SkipList<C>& t) {
    for (int i = 0; i < ops; ++i) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      const auto key = static_cast<std::int64_t>((rng >> 33) % 300);
      const int tid = i % 2;
      const auto old = model.count(key) == 1 ? std::optional<std::int64_t>(model[key]) : std::nullopt;
      switch ((rng >> 20) % 3) {
        case 0:
          ASSERT_EQ(t.put(key, i, tid), old) << "put " << key;
          model[key] = i;
          break;
        case 1:
          ASSERT_EQ(t.erase(key, tid), old) << "erase " << key;
          model.erase(key);
          break;
        default: ASSERT_EQ(t.get(key, tid), old) << "get " << key;
      }
    }
  };
  {
    auto t = fm::SkipList<C>::create(*pool, "m", 2, std::size_t{2} << 20);
    churn(*t);
    check(*t);
    EXPECT_TRUE(t->replicas_equal());
  }
  pool.reopen();
  auto t = fm::SkipList<C>::attach(*pool, "m", 2);
  check(*t);
  EXPECT_TRUE(t->replicas_equal());
  churn(*t);
  check(*t);
}

TEST(MirrorSkipList, AMapAgreesWithStdMapAndSurvivesARestartWithItsReplicaInDram) {
  map_agrees_with_std_map_and_survives_a_restart<Dram>("slmap-dram");
}
TEST(MirrorSkipList, AMapAgreesWithStdMapAndSurvivesARestartWithBothReplicasInThePool) {
  map_agrees_with_std_map_and_survives_a_restart<Nvm>("slmap-pool");
}

TEST(MirrorSkipList, EveryInt64IsAKey) {
  TempPool pool("sl-keys", std::size_t{16} << 20);
  auto t = fm::SkipList<>::create(*pool, "t", 1);
  EXPECT_TRUE(t->insert(INT64_MAX, 0));
  EXPECT_TRUE(t->insert(INT64_MIN, 0));
  EXPECT_TRUE(t->insert(0, 0));
  EXPECT_TRUE(t->contains(INT64_MAX, 0));
  EXPECT_FALSE(t->insert(INT64_MIN, 0));
  EXPECT_EQ(keys_of(t->items(false)), (std::vector<std::int64_t>{INT64_MIN, 0, INT64_MAX}));
  EXPECT_TRUE(t->remove(INT64_MAX, 0));
  EXPECT_EQ(keys_of(t->items(false)), (std::vector<std::int64_t>{INT64_MIN, 0}));
}

TEST(MirrorSkipList, AttachRefusesAnotherStructureAndTheOtherPlacement) {
  TempPool pool("sl-refuse", std::size_t{16} << 20);
  {
    auto t = fm::SkipList<>::create(*pool, "t", 1);
    auto h = fm::HashMap<>::create(*pool, "h", 1, 4, std::size_t{64} << 10);
    auto b = fm::Bst<>::create(*pool, "b", 1, std::size_t{64} << 10);
  }
  pool.reopen();
  EXPECT_THROW(fm::SkipList<Nvm>::attach(*pool, "t", 1), ferrite::pmem::PoolError);
  EXPECT_THROW(fm::SkipList<>::attach(*pool, "h", 1), ferrite::pmem::PoolError);
  EXPECT_THROW(fm::HashMap<>::attach(*pool, "t", 1), ferrite::pmem::PoolError);
  EXPECT_THROW(fm::SkipList<>::attach(*pool, "b", 1), ferrite::pmem::PoolError);
}

// Recovery time against live size (§4.3.3): n nodes, every level traced.
TEST(MirrorSkipList, RecoveryTimeGrowsWithTheLiveSize) {
  for (std::int64_t n : {1000, 10000, 100000}) {
    TempPool pool("sl-time", std::size_t{64} << 20);
    {
      auto t = fm::SkipList<>::create(*pool, "t", 1, static_cast<std::size_t>(64 * (3 * n + 64)));
      std::uint64_t rng = 5;
      for (std::int64_t k = 0; k < n; ++k) {  // random keys
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        t->insert(static_cast<std::int64_t>(rng >> 1), 0);
      }
    }
    pool.reopen();
    const auto t0 = std::chrono::steady_clock::now();
    auto t = fm::SkipList<>::attach(*pool, "t", 1);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(t->items(false).size(), static_cast<std::size_t>(n));
    std::printf("[mirror] recovery of a skip list with %lld keys: %.2f ms\n", static_cast<long long>(n), ms);
  }
}

}  // namespace

}  // namespace skiplist_test
