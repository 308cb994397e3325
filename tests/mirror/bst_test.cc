// Unit tests of mirror::Bst (include/ferrite/mirror/bst.h): the
// Natarajan–Mittal BST made durable by Mirror, as a set and as a map, in both
// placements; sequential agreement with std::set / std::map, restarts
// (recovery by tracing from the root, §4.3.3), the allocator rebuilt from the
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
#include "ferrite/mirror/bst.h"
#include "ferrite/mirror/hash_map.h"

namespace bst_test {  // this file's names, apart in a unity build

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
    auto t = fm::Bst<C>::create(*pool, "t", 2, std::size_t{2} << 20);
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
  auto t = fm::Bst<C>::attach(*pool, "t", 2);
  EXPECT_EQ(keys_of(t->items(false)), std::vector<std::int64_t>(model.begin(), model.end()));
  EXPECT_TRUE(t->replicas_equal());
  // The allocator was rebuilt from the live set: the sentinels (5 nodes) and
  // two nodes per key are live, one 64-byte unit each.
  EXPECT_EQ(t->heap().units() - t->heap().free_units(), 5 + 2 * model.size());
  // The rebuilt free lists never hand out a live node: churn, then compare.
  for (int i = 0; i < ops; ++i) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    const auto key = static_cast<std::int64_t>((rng >> 33) % 1024);
    if ((rng >> 20) % 2 == 0) ASSERT_EQ(t->insert(key, 1), model.insert(key).second);
    else ASSERT_EQ(t->remove(key, 0), model.erase(key) == 1);
  }
  EXPECT_EQ(keys_of(t->items(false)), std::vector<std::int64_t>(model.begin(), model.end()));
}

TEST(MirrorBst, ASetAgreesWithStdSetAndSurvivesARestartWithItsReplicaInDram) {
  set_agrees_with_std_set_and_survives_a_restart<Dram>("bst-dram");
}
TEST(MirrorBst, ASetAgreesWithStdSetAndSurvivesARestartWithBothReplicasInThePool) {
  set_agrees_with_std_set_and_survives_a_restart<Nvm>("bst-pool");
}

template <class C>
void map_agrees_with_std_map_and_survives_a_restart(const char* tag) {
  TempPool pool(tag, std::size_t{32} << 20);
  std::map<std::int64_t, std::int64_t> model;
  std::uint64_t rng = 999;
  const int ops = scaled(20000, 2000);
  auto check = [&](fm::Bst<C>& t) {
    std::vector<std::pair<std::int64_t, std::int64_t>> want(model.begin(), model.end());
    EXPECT_EQ(t.items(true), want);
  };
  auto churn = [&](fm::Bst<C>& t) {
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
    auto t = fm::Bst<C>::create(*pool, "m", 2, std::size_t{2} << 20);
    churn(*t);
    check(*t);
    EXPECT_TRUE(t->replicas_equal());
  }
  pool.reopen();
  auto t = fm::Bst<C>::attach(*pool, "m", 2);
  check(*t);
  EXPECT_TRUE(t->replicas_equal());
  churn(*t);
  check(*t);
}

TEST(MirrorBst, AMapAgreesWithStdMapAndSurvivesARestartWithItsReplicaInDram) {
  map_agrees_with_std_map_and_survives_a_restart<Dram>("bstmap-dram");
}
TEST(MirrorBst, AMapAgreesWithStdMapAndSurvivesARestartWithBothReplicasInThePool) {
  map_agrees_with_std_map_and_survives_a_restart<Nvm>("bstmap-pool");
}

TEST(MirrorBst, KeysAtTheSentinelsAreRefusedAndTheLargestUserKeyWorks) {
  TempPool pool("bst-keys", std::size_t{16} << 20);
  auto t = fm::Bst<>::create(*pool, "t", 1);
  const std::int64_t top = fm::NmBst<>::kMaxKey;
  EXPECT_TRUE(t->insert(top, 0));
  EXPECT_TRUE(t->insert(INT64_MIN, 0));
  EXPECT_TRUE(t->contains(top, 0));
  EXPECT_THROW(t->insert(top + 1, 0), std::out_of_range);
  EXPECT_THROW(t->contains(INT64_MAX, 0), std::out_of_range);
  EXPECT_EQ(keys_of(t->items(false)), (std::vector<std::int64_t>{INT64_MIN, top}));
}

TEST(MirrorBst, AttachRefusesAnotherStructureAndTheOtherPlacement) {
  TempPool pool("bst-refuse", std::size_t{16} << 20);
  {
    auto t = fm::Bst<>::create(*pool, "t", 1);
    auto h = fm::HashMap<>::create(*pool, "h", 1, 4, std::size_t{64} << 10);
  }
  pool.reopen();
  EXPECT_THROW(fm::Bst<Nvm>::attach(*pool, "t", 1), ferrite::pmem::PoolError);
  EXPECT_THROW(fm::Bst<>::attach(*pool, "h", 1), ferrite::pmem::PoolError);
  EXPECT_THROW(fm::HashMap<>::attach(*pool, "t", 1), ferrite::pmem::PoolError);
}

// Recovery time against live size (§4.3.3): a BST traces 2n + 5 nodes.
TEST(MirrorBst, RecoveryTimeGrowsWithTheLiveSize) {
  for (std::int64_t n : {1000, 10000, 100000}) {
    TempPool pool("bst-time", std::size_t{64} << 20);
    {
      auto t = fm::Bst<>::create(*pool, "t", 1, static_cast<std::size_t>(64 * (2 * n + 64)));
      std::uint64_t rng = 5;
      for (std::int64_t k = 0; k < n; ++k) {  // random order: a tree of logarithmic depth
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        t->insert(static_cast<std::int64_t>(rng >> 1), 0);
      }
    }
    pool.reopen();
    const auto t0 = std::chrono::steady_clock::now();
    auto t = fm::Bst<>::attach(*pool, "t", 1);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(t->items(false).size(), static_cast<std::size_t>(n));
    std::printf("[mirror] recovery of a BST with %lld keys: %.2f ms\n", static_cast<long long>(n), ms);
  }
}

}  // namespace

}  // namespace bst_test
