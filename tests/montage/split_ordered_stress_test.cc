// Stress tests of the split-ordered hash table on nbMontage
// (montage/split_ordered.h): 2-4 threads resize the table from 2 buckets
// while they update it, with the background advancer on a short epoch and
// explicit syncs racing it (TSan runs these, `make test-tsan`). Each ends
// with the index checked (S1, S2) and a clean restart that must recover
// exactly the state after a final sync. Each runs on the transient original
// too (montage/transient_sys.h: DRAM payloads, plain CASes), without the
// restart (tests/montage/systems.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/montage/split_ordered.h"
#include "montage/systems.h"

namespace split_ordered_stress_test {  // this file's names, apart in a unity build

namespace fm = ferrite::montage;
using ferrite::test::scaled;
using ferrite::test::TempPool;
using ferrite::test::montage_systems::kPersistent;
using ferrite::test::montage_systems::make;
using ferrite::test::montage_systems::restart;

namespace {

fm::EpochOptions fast_epochs() {
  fm::EpochOptions o;
  o.epoch_length = std::chrono::microseconds{200};
  o.tbp_capacity = 8;  // the full-buffer path too
  return o;
}

// Each thread inserts its own keys (interleaved with the others' in hash
// order, so every bucket split moves keys of all threads), and reads them
// back while the table doubles under it: a get never misses a key its
// thread put and did not erase, whatever bucket initialization is racing.
template <class Map>
void threads_growing_the_table(int threads) {
  TempPool pool{"montage-so-stress", std::size_t{256} << 20};
  const int per_thread = scaled(20000, 600);
  fm::SplitOrderedOptions so;  // 2 buckets, max load 2
  so.value_bytes = 24;
  std::vector<std::map<std::int64_t, std::int64_t>> model(static_cast<std::size_t>(threads));
  std::atomic<int> mismatches{0};
  std::vector<std::pair<std::int64_t, std::int64_t>> final_state;
  {
    auto m = make<Map>(pool, "so", threads, fast_epochs(), so);
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        auto& mine = model[static_cast<std::size_t>(t)];
        auto check = [&](std::optional<std::int64_t> got, std::int64_t k) {
          auto it = mine.find(k);
          if (got != (it == mine.end() ? std::nullopt : std::optional<std::int64_t>(it->second))) ++mismatches;
        };
        std::uint64_t r = static_cast<std::uint64_t>(t) * 977 + 3;
        for (int i = 0; i < per_thread; ++i) {
          const std::int64_t k = static_cast<std::int64_t>(i) * threads + t;  // fresh key: the table grows
          const std::int64_t v = static_cast<std::int64_t>(t) << 40 | i;
          check(m->put(t, k, v), k);
          mine[k] = v;
          r = r * 6364136223846793005ull + 1442695040888963407ull;
          // An older key of this thread: read, replace or erase it.
          const std::int64_t old = static_cast<std::int64_t>((r >> 33) % (i + 1)) * threads + t;
          switch ((r >> 20) % 8) {
            case 0: check(m->erase(t, old), old); mine.erase(old); break;
            case 1: check(m->put(t, old, v + 1), old); mine[old] = v + 1; break;
            case 2: if ((r >> 50) % 16 == 0) m->sync(); break;
            default: check(m->get(t, old), old); break;
          }
        }
      });
    for (auto& th : ts) th.join();
    m->sync();
    final_state = m->contents();
    EXPECT_EQ(m->check_index(), "");
    std::size_t live = 0;
    for (auto& mm : model) live += mm.size();
    EXPECT_EQ(final_state.size(), live);
    EXPECT_EQ(m->approximate_size(), static_cast<std::int64_t>(live));
    EXPECT_GE(m->bucket_count() * 2 * so.max_load, live) << "the table did not grow";
  }
  EXPECT_EQ(mismatches.load(), 0);
  std::vector<std::pair<std::int64_t, std::int64_t>> want;
  for (auto& mm : model) want.insert(want.end(), mm.begin(), mm.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(final_state, want);
  if constexpr (kPersistent<Map>) {
    auto m = restart<Map>(pool, "so", threads, fast_epochs(), so);
    EXPECT_EQ(m->contents(), final_state);
    EXPECT_EQ(m->check_index(), "");
  }
}

class SplitOrderedResize : public ::testing::TestWithParam<int> {};

TEST_P(SplitOrderedResize, ThreadsGrowingTheTableNeverLoseOrMisreadAKey) {
  threads_growing_the_table<fm::SplitOrderedMap<>>(GetParam());
}
TEST_P(SplitOrderedResize, ThreadsGrowingTheTransientOriginalNeverLoseOrMisreadAKey) {
  threads_growing_the_table<fm::TransientSplitOrderedMap<>>(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Threads, SplitOrderedResize, ::testing::Values(2, 4),
                         [](const auto& i) { return std::to_string(i.param) + "Threads"; });

// Threads fight over few keys while the table grows (replace/erase races at
// one node, D6; bucket initialization racing updates in the same bucket):
// each key ends with one value someone put, and a restart recovers exactly
// the final state.
template <class Map>
class SplitOrderedStress : public ::testing::Test {};
using Maps = ::testing::Types<fm::SplitOrderedMap<>, fm::TransientSplitOrderedMap<>>;
TYPED_TEST_SUITE(SplitOrderedStress, Maps);

TYPED_TEST(SplitOrderedStress, SharedKeysDuringGrowthRecoverTheExactFinalState) {
  using Map = TypeParam;
  constexpr int kThreads = 4;
  TempPool pool{"montage-so-stress", std::size_t{256} << 20};
  const int ops = scaled(20000, 600);
  fm::SplitOrderedOptions so;
  so.max_load = 1;
  std::vector<std::pair<std::int64_t, std::int64_t>> final_state;
  {
    auto m = make<Map>(pool, "so", kThreads, fast_epochs(), so);
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t)
      ts.emplace_back([&, t] {
        std::uint64_t r = static_cast<std::uint64_t>(t) * 13 + 5;
        for (int i = 0; i < ops; ++i) {
          r = r * 6364136223846793005ull + 1442695040888963407ull;
          // Key range widening from 8 to 8 + ops / 8: growth while shared.
          const auto k = static_cast<std::int64_t>((r >> 33) % static_cast<std::uint64_t>(8 + i / 8));
          const auto c = (r >> 20) % 16;
          if (c == 0) m->sync();
          else if (c < 9) m->put(t, k, static_cast<std::int64_t>(t) << 40 | i);
          else if (c < 12) m->erase(t, k);
          else m->get(t, k);
        }
      });
    for (auto& th : ts) th.join();
    m->sync();
    final_state = m->contents();
    EXPECT_EQ(m->check_index(), "");
    for (std::size_t i = 1; i < final_state.size(); ++i) ASSERT_LT(final_state[i - 1].first, final_state[i].first);
    for (const auto& [k, v] : final_state) {
      EXPECT_EQ(m->get(0, k), v);
      EXPECT_LT(v >> 40, kThreads);
    }
    EXPECT_GT(m->bucket_count(), 2u);
  }
  if constexpr (kPersistent<Map>) {
    auto m = restart<Map>(pool, "so", kThreads, fast_epochs(), so);
    EXPECT_EQ(m->contents(), final_state);
    EXPECT_EQ(m->check_index(), "");
  }
}

}  // namespace

}  // namespace split_ordered_stress_test
