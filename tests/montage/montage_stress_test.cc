// Stress tests of the nbMontage structures (montage/ms_queue.h,
// montage/hash_map.h) with many threads, the background advancer running
// with a short epoch and explicit syncs racing it — the test TSan runs
// (`make test-tsan`). Each ends with a clean restart that must recover
// exactly the state after a final sync. The same tests run the transient
// originals (montage/transient_sys.h: DRAM payloads, plain CASes, payloads
// reused as soon as EBR frees them), without the restart.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <thread>
#include <vector>

#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/montage/hash_map.h"
#include "ferrite/montage/ms_queue.h"
#include "montage/systems.h"

namespace montage_stress_test {  // this file's names, apart in a unity build

namespace fm = ferrite::montage;
using ferrite::test::scaled;
using ferrite::test::TempPool;
using ferrite::test::montage_systems::kPersistent;
using ferrite::test::montage_systems::make;
using ferrite::test::montage_systems::restart;

namespace {

constexpr int kThreads = 4;

fm::EpochOptions fast_epochs() {
  fm::EpochOptions o;
  o.epoch_length = std::chrono::microseconds{200};
  o.tbp_capacity = 8;  // the full-buffer path too
  return o;
}

template <class Q>
class MontageQueueStress : public ::testing::Test {};
using Queues = ::testing::Types<fm::MSQueue<>, fm::TransientMSQueue>;
TYPED_TEST_SUITE(MontageQueueStress, Queues);
template <class M>
class MontageHashMapStress : public ::testing::Test {};
using HashMaps = ::testing::Types<fm::HashMap<>, fm::TransientHashMap<>>;
TYPED_TEST_SUITE(MontageHashMapStress, HashMaps);

TYPED_TEST(MontageQueueStress, QueueLosesNothingDuplicatesNothingAndKeepsEachProducersOrder) {
  using Q = TypeParam;
  TempPool pool{"montage-stress", std::size_t{256} << 20};
  const int per_thread = scaled(20000, 500);
  std::vector<std::vector<std::int64_t>> got(kThreads);
  std::vector<std::int64_t> left;
  {
    auto q = make<Q>(pool, "q", kThreads, fast_epochs());
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t)
      ts.emplace_back([&, t] {
        std::uint64_t r = static_cast<std::uint64_t>(t) * 7 + 1;
        int next = 0;
        for (int i = 0; i < 2 * per_thread; ++i) {
          r = r * 6364136223846793005ull + 1442695040888963407ull;
          if ((r >> 40) % 64 == 0) q->sync();
          if (next < per_thread && ((r >> 33) % 2 == 0 || i >= per_thread)) {
            q->enqueue(t, static_cast<std::int64_t>(t) << 32 | next++);
          } else if (auto v = q->dequeue(t)) {
            got[t].push_back(*v);
          }
        }
        while (next < per_thread) q->enqueue(t, static_cast<std::int64_t>(t) << 32 | next++);
      });
    for (auto& th : ts) th.join();
    q->sync();
    left = q->contents();
  }
  // Conservation and per-producer FIFO (as seen by each consumer).
  std::vector<int> seen(static_cast<std::size_t>(kThreads) * per_thread, 0);
  for (int c = 0; c < kThreads; ++c) {
    std::vector<std::int64_t> last(kThreads, -1);
    for (auto v : got[c]) {
      const int p = static_cast<int>(v >> 32), n = static_cast<int>(v & 0xffffffff);
      ASSERT_LT(p, kThreads);
      ASSERT_LT(n, per_thread);
      EXPECT_GT(n, last[p]) << "consumer " << c << " saw producer " << p << " out of order";
      last[p] = n;
      ++seen[static_cast<std::size_t>(p) * per_thread + n];
    }
  }
  for (auto v : left) ++seen[static_cast<std::size_t>(v >> 32) * per_thread + (v & 0xffffffff)];
  for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "value " << i;
  if constexpr (kPersistent<Q>) {
    auto q = restart<Q>(pool, "q", kThreads, fast_epochs());
    EXPECT_EQ(q->contents(), left);
  }
}

TYPED_TEST(MontageHashMapStress, HashMapAgreesWithAPerThreadModelOnPrivateKeysAndSurvivesSharedOnes) {
  using M = TypeParam;
  TempPool pool{"montage-stress", std::size_t{256} << 20};
  const int ops = scaled(20000, 500);
  fm::HashMapOptions hm;
  hm.buckets = 64;
  hm.value_bytes = 40;
  std::vector<std::map<std::int64_t, std::int64_t>> model(kThreads);
  std::vector<std::pair<std::int64_t, std::int64_t>> final_state;
  std::atomic<int> mismatches{0};
  {
    auto m = make<M>(pool, "h", kThreads, fast_epochs(), hm);
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t)
      ts.emplace_back([&, t] {
        std::uint64_t r = static_cast<std::uint64_t>(t) * 13 + 5;
        auto& mine = model[t];
        for (int i = 0; i < ops; ++i) {
          r = r * 6364136223846793005ull + 1442695040888963407ull;
          const bool shared = (r >> 60) % 2 == 0;
          // Private keys: 1000 * (t + 1) + [0, 32); shared: [0, 16).
          const auto k = shared ? static_cast<std::int64_t>((r >> 33) % 16)
                                : static_cast<std::int64_t>(1000 * (t + 1) + (r >> 33) % 32);
          const auto c = (r >> 20) % 16;
          const std::int64_t v = static_cast<std::int64_t>(t) << 40 | i;
          if (c == 0) {
            m->sync();
          } else if (c < 7) {
            auto old = m->put(t, k, v);
            if (!shared) {
              auto it = mine.find(k);
              if (old != (it == mine.end() ? std::nullopt : std::optional<std::int64_t>(it->second))) ++mismatches;
              mine[k] = v;
            }
          } else if (c < 12) {
            auto old = m->erase(t, k);
            if (!shared) {
              auto it = mine.find(k);
              if (old != (it == mine.end() ? std::nullopt : std::optional<std::int64_t>(it->second))) ++mismatches;
              mine.erase(k);
            }
          } else {
            auto got = m->get(t, k);
            if (!shared) {
              auto it = mine.find(k);
              if (got != (it == mine.end() ? std::nullopt : std::optional<std::int64_t>(it->second))) ++mismatches;
            }
          }
        }
      });
    for (auto& th : ts) th.join();
    m->sync();
    final_state = m->contents();
  }
  EXPECT_EQ(mismatches.load(), 0);
  for (int t = 0; t < kThreads; ++t)
    for (auto& [k, v] : model[t])
      EXPECT_TRUE(std::binary_search(final_state.begin(), final_state.end(), std::make_pair(k, v))) << k;
  for (std::size_t i = 1; i < final_state.size(); ++i) ASSERT_LT(final_state[i - 1].first, final_state[i].first);
  if constexpr (kPersistent<M>) {
    auto m = restart<M>(pool, "h", kThreads, fast_epochs(), hm);
    EXPECT_EQ(m->contents(), final_state);
  }
}

}  // namespace

}  // namespace montage_stress_test
