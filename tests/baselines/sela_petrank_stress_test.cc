// Stress (and TSan) test of OptUnlinkedQ and OptLinkedQ
// (include/ferrite/baselines/sela_petrank.h): 4 threads enqueue and dequeue
// on one queue (conservation and per-producer FIFO order,
// tests/common/conservation.h), slots recycled through EBR; then the queue
// is re-attached after a clean close and must hold what the threads left.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/conservation.h"
#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/baselines/sela_petrank.h"

namespace sela_petrank_stress_test {  // this file's names, apart in a unity build

namespace fb = ferrite::baselines;
using ferrite::test::scaled;
using ferrite::test::TempPool;

namespace {

constexpr int kThreads = 4;

template <class Q>
void hammer(const char* tag) {
  TempPool pool(tag, std::size_t{64} << 20);
  {
    Q q(*pool, "q", kThreads);
    ferrite::test::run_conservation(
        kThreads, scaled(20000, 1000), [&](int t, std::uint64_t, std::int64_t v) { q.enqueue(t, v); },
        [&](int t, std::uint64_t, std::int64_t* v) { return q.try_dequeue(t, v); }, true);
    EXPECT_TRUE(q.snapshot().empty());
    for (int i = 1; i <= 100; ++i) q.enqueue(i % kThreads, i);
    std::int64_t v = 0;
    for (int i = 1; i <= 40; ++i) {
      ASSERT_TRUE(q.try_dequeue(i % kThreads, &v));
      EXPECT_EQ(v, i);
    }
  }
  pool.reopen();
  Q q(*pool, "q", 2);
  std::vector<std::int64_t> want;
  for (int i = 41; i <= 100; ++i) want.push_back(i);
  EXPECT_EQ(q.snapshot(), want);
  q.enqueue(1, 101);
  std::int64_t v = 0;
  ASSERT_TRUE(q.try_dequeue(0, &v));
  EXPECT_EQ(v, 41);
}

TEST(SelaPetrankStress, OptUnlinkedQConservesAndOrdersUnderFourThreadsAndRestarts) {
  hammer<fb::OptUnlinkedQ<>>("optunlinkedq-stress");
}

TEST(SelaPetrankStress, OptLinkedQConservesAndOrdersUnderFourThreadsAndRestarts) {
  hammer<fb::OptLinkedQ<>>("optlinkedq-stress");
}

}  // namespace

}  // namespace sela_petrank_stress_test
