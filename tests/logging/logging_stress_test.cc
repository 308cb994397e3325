// Stress tests of the logging workloads (run under TSan by the tsan preset):
// several threads through the queue and the hash map in every language-level
// model; the queue conserves its values in per-producer FIFO order, the map
// ends with each thread's own keys as that thread last wrote them, and every
// log is empty (all regions pruned) at the end.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/conservation.h"
#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/logging/workloads.h"

namespace logging_stress_test {  // this file's names, apart in a unity build

namespace fl = ferrite::logging;
using ferrite::test::scaled;

class LoggingStress : public ::testing::TestWithParam<fl::Language> {};

TEST_P(LoggingStress, TheQueueConservesItsValuesInFifoOrderPerProducer) {
  constexpr int kThreads = 4;
  ferrite::test::TempPool pool("lg-stress-q", std::size_t{64} << 20);
  fl::LoggedQueue q(*pool, "q", kThreads, {.language = GetParam()});
  ferrite::test::run_conservation(
      kThreads, scaled(2000, 200), [&](int tid, std::uint64_t, std::int64_t v) { q.enqueue(tid, v); },
      [&](int tid, std::uint64_t, std::int64_t* out) {
        auto v = q.dequeue(tid);
        if (v) *out = *v;
        return v.has_value();
      },
      true);
  EXPECT_EQ(fl::recover_area(&pool->root<fl::LoggedQueue::Root>("q")->log).live_entries, 0u);
}

TEST_P(LoggingStress, TheMapEndsWithEachThreadsLastWrites) {
  constexpr int kThreads = 4;
  ferrite::test::TempPool pool("lg-stress-m", std::size_t{64} << 20);
  fl::LoggedMap m(*pool, "m", kThreads, {.language = GetParam()}, 64);
  const int ops = scaled(3000, 300);
  std::vector<std::map<std::int64_t, std::int64_t>> want(kThreads);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      auto& w = want[static_cast<std::size_t>(t)];
      std::uint64_t r = 77 + static_cast<std::uint64_t>(t);
      for (int i = 0; i < ops; ++i) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        const std::int64_t k = t * 1000 + static_cast<std::int64_t>((r >> 33) % 50);
        if ((r >> 20) % 3 == 0) {
          const auto got = m.erase(t, k);
          EXPECT_EQ(got.has_value(), w.count(k) == 1);
          w.erase(k);
        } else {
          const auto got = m.put(t, k, i);
          EXPECT_EQ(got.has_value(), w.count(k) == 1);
          w[k] = i;
        }
        EXPECT_EQ(m.get(t, k).has_value(), w.count(k) == 1);
      }
    });
  }
  for (auto& th : ts) th.join();
  std::vector<std::pair<std::int64_t, std::int64_t>> all;
  for (const auto& w : want) all.insert(all.end(), w.begin(), w.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(m.items(), all);
  EXPECT_EQ(fl::recover_area(&pool->root<fl::LoggedMap::Root>("m")->log).live_entries, 0u);
}

INSTANTIATE_TEST_SUITE_P(Languages, LoggingStress,
                         ::testing::Values(fl::Language::kTxn, fl::Language::kAtlas, fl::Language::kSfr),
                         [](const auto& i) { return std::string(fl::language_name(i.param)); });

}  // namespace logging_stress_test
