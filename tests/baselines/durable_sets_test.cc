// The Harris-list hash tables (include/ferrite/baselines/harris_hash.h,
// transient / Izraelevitz / NVTraverse) and pmdk-hashmap
// (include/ferrite/baselines/pmdk_hashmap.h): sequential behaviour against
// std::map, concurrent conservation, and (durable tables) a clean restart
// that keeps the contents and frees nothing live. Crash consistency of the
// durable tables: durable_sets_crash_test.cc.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "common/scale.h"
#include "set_checks.h"
#include "common/temp_pool.h"
#include "ferrite/baselines/harris_hash.h"
#include "ferrite/baselines/pmdk_hashmap.h"

namespace durable_sets_test {  // this file's names, apart in a unity build

namespace fb = ferrite::baselines;
using ferrite::test::map_op;
using ferrite::test::matches_std_map;
using ferrite::test::scaled;
using ferrite::test::threads_conserve_their_keys;

namespace {

TEST(HarrisHashTable, TransientMapAndSetAgreeWithStdMap) {
  fb::TransientHarrisHashTable m(1, 4);
  matches_std_map([&](int c, std::int64_t k, std::int64_t v) { return map_op(m, c, k, v, 0); }, scaled(20000, 2000), 64);
  fb::TransientHarrisHashTable s(1, 4);
  ferrite::test::set_matches_std_map(s, scaled(20000, 2000), 64);
}

TEST(HarrisHashTable, ConcurrentThreadsOnSharedListsKeepEveryKeyTheyOwn) {
  fb::TransientHarrisHashTable t(4, 2);
  threads_conserve_their_keys(t, 4, scaled(20000, 1000));
}

TEST(HarrisHashTable, DurableTablesAgreeWithStdMapAndSurviveACleanRestart) {
  ferrite::test::TempPool pool("harris", std::size_t{32} << 20);
  {
    auto izr = fb::IzraelevitzHashTable<>::create(*pool, "izr", 1, 8);
    auto nvt = fb::NVTraverseHashTable<>::create(*pool, "nvt", 1, 8);
    matches_std_map([&](int c, std::int64_t k, std::int64_t v) { return map_op(*izr, c, k, v, 0); }, scaled(5000, 500), 64);
    matches_std_map([&](int c, std::int64_t k, std::int64_t v) { return map_op(*nvt, c, k, v, 0); }, scaled(5000, 500), 64);
  }
  // Snapshot, restart, compare; the pool's recovery traced both roots.
  std::vector<std::pair<std::int64_t, std::int64_t>> before_izr, before_nvt;
  {
    auto izr = fb::IzraelevitzHashTable<>::attach(*pool, "izr", 1);
    auto nvt = fb::NVTraverseHashTable<>::attach(*pool, "nvt", 1);
    before_izr = izr->items(true);
    before_nvt = nvt->items(true);
  }
  pool.reopen();
  const auto* report = pool->recovery_report();
  ASSERT_NE(report, nullptr);
  EXPECT_TRUE(report->failed_roots.empty());
  EXPECT_TRUE(report->unknown_roots.empty());
  EXPECT_TRUE(report->heap_rebuilt);
  auto izr = fb::IzraelevitzHashTable<>::attach(*pool, "izr", 1);
  auto nvt = fb::NVTraverseHashTable<>::attach(*pool, "nvt", 1);
  EXPECT_EQ(izr->items(true), before_izr);
  EXPECT_EQ(nvt->items(true), before_nvt);
  // Live nodes were kept: allocating after recovery never hands one out.
  for (std::int64_t k = 1000; k < 1200; ++k) ASSERT_FALSE(nvt->put(k, k, 0).has_value());
  EXPECT_EQ(izr->items(true), before_izr);
}

TEST(HarrisHashTable, DurableConcurrentThreadsKeepEveryKeyTheyOwn) {
  ferrite::test::TempPool pool("harris-mt", std::size_t{32} << 20);
  auto nvt = fb::NVTraverseHashTable<>::create(*pool, "nvt", 4, 2);
  threads_conserve_their_keys(*nvt, 4, scaled(4000, 400));
  auto izr = fb::IzraelevitzHashTable<>::create(*pool, "izr", 4, 2);
  threads_conserve_their_keys(*izr, 4, scaled(2000, 200));
}

// pmdk-hashmap: the same checks (tid-less API).
struct PmdkTid {
  fb::PmdkHashMap& m;
  std::optional<std::int64_t> put(std::int64_t k, std::int64_t v, int) { return m.put(k, v); }
  std::optional<std::int64_t> get(std::int64_t k, int) { return m.get(k); }
  std::optional<std::int64_t> erase(std::int64_t k, int) { return m.erase(k); }
  std::vector<std::pair<std::int64_t, std::int64_t>> items(bool) { return m.items(); }
};

TEST(PmdkHashMap, MapAndSetAgreeWithStdMap) {
  fb::PmdkHashMap m("/dev/shm", 16);
  PmdkTid t{m};
  matches_std_map([&](int c, std::int64_t k, std::int64_t v) { return map_op(t, c, k, v, 0); }, scaled(5000, 500), 64);
  fb::PmdkHashMap s("/dev/shm", 16);
  matches_std_map(
      [&](int c, std::int64_t k, std::int64_t) -> std::optional<std::int64_t> {
        const bool present = s.contains(k);
        if (c == 0) {
          EXPECT_EQ(s.insert(k), !present);
        }
        if (c == 2) {
          EXPECT_EQ(s.remove(k), present);
        }
        return present ? std::optional<std::int64_t>(0) : std::nullopt;
      },
      scaled(5000, 500), 64, /*set=*/true);
}

TEST(PmdkHashMap, ConcurrentThreadsKeepEveryKeyTheyOwn) {
  fb::PmdkHashMap m("/dev/shm", 2);
  PmdkTid t{m};
  threads_conserve_their_keys(t, 4, scaled(4000, 400));
}

}  // namespace

}  // namespace durable_sets_test
