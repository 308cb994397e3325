// Izraelevitz-transformed MS queue / Treiber stack and the Friedman queues:
// sequential behaviour, multithreaded conservation, clean restart.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/conservation.h"
#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/baselines/friedman.h"
#include "ferrite/baselines/izraelevitz.h"

namespace lockfree_test {  // this file's names, apart in a unity build

namespace fb = ferrite::baselines;
using ferrite::test::TempPool;

namespace {
int per_thread() { return static_cast<int>(20000 * ferrite::test::scale()); }
}  // namespace

TEST(IzraelevitzQueue, FifoAndRestart) {
  TempPool pool("iz-ms");
  {
    fb::IzraelevitzQueue<> q(*pool, "q", 2, 24);
    std::int64_t v;
    EXPECT_FALSE(q.try_dequeue(0, &v));
    for (int i = 1; i <= 5; ++i) q.enqueue(0, i);
    ASSERT_TRUE(q.try_dequeue(1, &v));
    EXPECT_EQ(v, 1);
    EXPECT_EQ(q.snapshot(), (std::vector<std::int64_t>{2, 3, 4, 5}));
  }
  pool.reopen();
  fb::IzraelevitzQueue<> q(*pool, "q", 2, 24);
  EXPECT_EQ(q.snapshot(), (std::vector<std::int64_t>{2, 3, 4, 5}));
  q.enqueue(0, 6);
  std::int64_t v;
  ASSERT_TRUE(q.try_dequeue(0, &v));
  EXPECT_EQ(v, 2);
}

TEST(IzraelevitzQueue, ConcurrentConservationAndFifo) {
  TempPool pool("iz-ms-mt");
  fb::IzraelevitzQueue<> q(*pool, "q", 4);
  ferrite::test::run_conservation(
      4, per_thread(), [&](int t, std::uint64_t, std::int64_t v) { q.enqueue(t, v); },
      [&](int t, std::uint64_t, std::int64_t* v) { return q.try_dequeue(t, v); }, true);
}

TEST(IzraelevitzStack, LifoAndRestart) {
  TempPool pool("iz-tr");
  {
    fb::IzraelevitzStack<> s(*pool, "s", 2);
    std::int64_t v;
    EXPECT_FALSE(s.try_pop(0, &v));
    for (int i = 1; i <= 4; ++i) s.push(1, i);
    ASSERT_TRUE(s.try_pop(0, &v));
    EXPECT_EQ(v, 4);
  }
  pool.reopen();
  fb::IzraelevitzStack<> s(*pool, "s", 2);
  EXPECT_EQ(s.snapshot(), (std::vector<std::int64_t>{3, 2, 1}));
}

TEST(IzraelevitzStack, ConcurrentConservation) {
  TempPool pool("iz-tr-mt");
  fb::IzraelevitzStack<> s(*pool, "s", 4);
  ferrite::test::run_conservation(
      4, per_thread(), [&](int t, std::uint64_t, std::int64_t v) { s.push(t, v); },
      [&](int t, std::uint64_t, std::int64_t* v) { return s.try_pop(t, v); }, false);
}

template <class Q>
void friedman_basic(const char* tag) {
  TempPool pool(tag);
  {
    Q q(*pool, "q", 2);
    std::int64_t v;
    EXPECT_FALSE(q.try_dequeue(0, 1, &v));
    for (int i = 1; i <= 5; ++i) q.enqueue(0, static_cast<std::uint64_t>(i + 1), i);
    ASSERT_TRUE(q.try_dequeue(1, 1, &v));
    EXPECT_EQ(v, 1);
  }
  pool.reopen();
  Q q(*pool, "q", 2);
  EXPECT_EQ(q.snapshot(), (std::vector<std::int64_t>{2, 3, 4, 5}));
}

TEST(FriedmanQueue, DurableFifoAndRestart) { friedman_basic<fb::FriedmanDurableQueue>("fr-d"); }
TEST(FriedmanQueue, LogFifoAndRestart) { friedman_basic<fb::FriedmanLogQueue>("fr-l"); }

TEST(FriedmanQueue, DurableConcurrentConservationAndFifo) {
  TempPool pool("fr-d-mt");
  fb::FriedmanDurableQueue q(*pool, "q", 4);
  ferrite::test::run_conservation(
      4, per_thread(), [&](int t, std::uint64_t s, std::int64_t v) { q.enqueue(t, s, v); },
      [&](int t, std::uint64_t s, std::int64_t* v) { return q.try_dequeue(t, s, v); }, true);
}

TEST(FriedmanQueue, LogConcurrentConservationAndFifo) {
  TempPool pool("fr-l-mt");
  fb::FriedmanLogQueue q(*pool, "q", 4);
  ferrite::test::run_conservation(
      4, per_thread(), [&](int t, std::uint64_t s, std::int64_t v) { q.enqueue(t, s, v); },
      [&](int t, std::uint64_t s, std::int64_t* v) { return q.try_dequeue(t, s, v); }, true);
}

TEST(FriedmanQueue, LogRecoverOpAnswersFromTheLog) {
  TempPool pool("fr-l-rec");
  {
    fb::FriedmanLogQueue q(*pool, "q", 2);
    q.enqueue(0, 7, 70);
    q.enqueue(0, 8, 80);
    std::int64_t v;
    ASSERT_TRUE(q.try_dequeue(1, 3, &v));
    EXPECT_EQ(v, 70);
  }
  pool.reopen();
  fb::FriedmanLogQueue q(*pool, "q", 2);
  std::int64_t v = 0;
  // Completed operations: answered, not re-executed.
  EXPECT_TRUE(q.recover_op(1, 3, false, 0, &v));
  EXPECT_EQ(v, 70);
  EXPECT_TRUE(q.recover_op(0, 8, true, 80, &v));
  EXPECT_EQ(q.snapshot(), (std::vector<std::int64_t>{80}));
  // An operation the log does not know: executed now.
  EXPECT_TRUE(q.recover_op(1, 4, false, 0, &v));
  EXPECT_EQ(v, 80);
  EXPECT_TRUE(q.snapshot().empty());
}

}  // namespace lockfree_test
