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
#include "common/temp_pool.h"
#include "ferrite/baselines/harris_hash.h"
#include "ferrite/baselines/pmdk_hashmap.h"

namespace fb = ferrite::baselines;
using ferrite::test::scaled;

namespace {

std::uint64_t next(std::uint64_t& r) {
  r = r * 6364136223846793005ull + 1442695040888963407ull;
  return r >> 33;
}

// Random put/get/erase (map) and insert/remove/contains (set) on `t`
// (a table with the member functions `call` adapts), checked op by op
// against std::map.
// `set`: the table is a set; the answer is 0 for "present" (nullopt absent).
template <class Call>
void matches_std_map(Call&& call, int ops, std::int64_t keys, bool set = false) {
  std::map<std::int64_t, std::int64_t> ref;
  std::uint64_t r = 42;
  for (int i = 0; i < ops; ++i) {
    const auto k = static_cast<std::int64_t>(next(r) % static_cast<std::uint64_t>(keys)) + 1;
    const auto v = static_cast<std::int64_t>(i) + 1;
    const int c = static_cast<int>(next(r) % 3);
    std::optional<std::int64_t> want;
    const auto it = ref.find(k);
    if (it != ref.end()) want = set ? 0 : it->second;
    if (c == 0) ref[k] = v;
    if (c == 2 && it != ref.end()) ref.erase(it);
    ASSERT_EQ(call(c, k, v), want) << "op " << i << " kind " << c << " key " << k;
  }
}

template <class T>
std::optional<std::int64_t> map_op(T& t, int c, std::int64_t k, std::int64_t v, int tid) {
  if (c == 0) return t.put(k, v, tid);
  if (c == 1) return t.get(k, tid);
  return t.erase(k, tid);
}

// Each thread owns keys k with k % threads == tid (so the final state is
// known) but the lists are shared (few buckets): inserts and removes race
// on the same links.
template <class T>
void threads_conserve_their_keys(T& t, int threads, int rounds) {
  std::vector<std::thread> ts;
  for (int tid = 0; tid < threads; ++tid)
    ts.emplace_back([&, tid] {
      for (int i = 0; i < rounds; ++i) {
        const std::int64_t k = static_cast<std::int64_t>(i % 64) * threads + tid + 1;
        ASSERT_FALSE(t.put(k, i + 1, tid).has_value());
        ASSERT_EQ(t.get(k, tid), std::optional<std::int64_t>(i + 1));
        ASSERT_EQ(t.put(k, -k, tid), std::optional<std::int64_t>(i + 1));
        ASSERT_EQ(t.erase(k, tid), std::optional<std::int64_t>(-k));
        ASSERT_FALSE(t.get(k, tid).has_value());
      }
    });
  for (auto& th : ts) th.join();
  EXPECT_TRUE(t.items(true).empty());
}

TEST(HarrisHashTable, TransientMapAndSetAgreeWithStdMap) {
  fb::TransientHarrisHashTable m(1, 4);
  matches_std_map([&](int c, std::int64_t k, std::int64_t v) { return map_op(m, c, k, v, 0); }, scaled(20000, 2000), 64);
  fb::TransientHarrisHashTable s(1, 4);
  matches_std_map(
      [&](int c, std::int64_t k, std::int64_t) -> std::optional<std::int64_t> {
        // A set: present <=> value 0 in the reference.
        const bool present = s.contains(k, 0);
        if (c == 0) {
          EXPECT_EQ(s.insert(k, 0), !present);
        }
        if (c == 2) {
          EXPECT_EQ(s.remove(k, 0), present);
        }
        return present ? std::optional<std::int64_t>(0) : std::nullopt;
      },
      scaled(20000, 2000), 64, /*set=*/true);
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
