// lock-persist, fc-inplace (over the in-place sequential objects) and
// pmdk-tx: sequential behaviour, multithreaded conservation, restart.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "common/conservation.h"
#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/baselines/fc_inplace.h"
#include "ferrite/baselines/lock_persist.h"
#include "ferrite/baselines/pmdk_tx.h"
#include "ferrite/baselines/seq_objects.h"

namespace lockbased_test {  // this file's names, apart in a unity build

namespace fb = ferrite::baselines;
using ferrite::test::TempPool;

namespace {
int per_thread() { return static_cast<int>(10000 * ferrite::test::scale()); }
fb::SeqParams params() { return {4, 16, 1 << 16}; }
}  // namespace

TEST(LockPersist, StackQueueHeapFloatSequential) {
  TempPool pool("lp-seq");
  fb::LockPersist<fb::SeqStack<>> s(*pool, "s", params());
  fb::LockPersist<fb::SeqQueue<>> q(*pool, "q", params());
  fb::LockPersist<fb::SeqHeap<>> h(*pool, "h", params());
  fb::LockPersist<fb::SeqFloat<>> f(*pool, "f", params());
  std::int64_t v = 0;
  for (std::int64_t x : {5, 1, 4, 2, 3}) {
    s.apply(0, true, x, &v);
    q.apply(1, true, x, &v);
    h.apply(2, true, x, &v);
  }
  EXPECT_EQ(s.snapshot(), (std::vector<std::int64_t>{3, 2, 4, 1, 5}));
  EXPECT_EQ(q.snapshot(), (std::vector<std::int64_t>{5, 1, 4, 2, 3}));
  std::vector<std::int64_t> mins;
  while (h.apply(0, false, 0, &v)) mins.push_back(v);
  EXPECT_EQ(mins, (std::vector<std::int64_t>{1, 2, 3, 4, 5}));
  ASSERT_TRUE(f.apply(0, true, std::bit_cast<std::int64_t>(2.0), &v));
  EXPECT_EQ(std::bit_cast<double>(v), 1.0);
  ASSERT_TRUE(f.apply(0, false, 0, &v));
  EXPECT_EQ(std::bit_cast<double>(v), 2.0);
}

TEST(LockPersist, StateSurvivesACleanRestart) {
  TempPool pool("lp-restart");
  std::int64_t v = 0;
  {
    fb::LockPersist<fb::SeqQueue<>> q(*pool, "q", params());
    fb::LockPersist<fb::SeqHeap<>> h(*pool, "h", params());
    for (int i = 1; i <= 4; ++i) q.apply(0, true, i, &v);
    for (int i : {9, 7, 8}) h.apply(0, true, i, &v);
    q.apply(0, false, 0, &v);
  }
  pool.reopen();
  fb::LockPersist<fb::SeqQueue<>> q(*pool, "q", params());
  fb::LockPersist<fb::SeqHeap<>> h(*pool, "h", params());
  EXPECT_EQ(q.snapshot(), (std::vector<std::int64_t>{2, 3, 4}));
  EXPECT_EQ(h.snapshot(), (std::vector<std::int64_t>{7, 8, 9}));
}

TEST(LockPersist, ConcurrentConservation) {
  TempPool pool("lp-mt");
  fb::LockPersist<fb::SeqQueue<>> q(*pool, "q", params());
  ferrite::test::run_conservation(
      4, per_thread(), [&](int t, std::uint64_t, std::int64_t x) { std::int64_t i; q.apply(t, true, x, &i); },
      [&](int t, std::uint64_t, std::int64_t* x) { return q.apply(t, false, 0, x); }, true);
  fb::LockPersist<fb::SeqHeap<>> h(*pool, "h", params());
  ferrite::test::run_conservation(
      4, per_thread(), [&](int t, std::uint64_t, std::int64_t x) { std::int64_t i; h.apply(t, true, x, &i); },
      [&](int t, std::uint64_t, std::int64_t* x) { return h.apply(t, false, 0, x); }, false);
}

TEST(FcInplace, ConcurrentConservationStackQueueHeap) {
  TempPool pool("fc-mt");
  fb::FcInplace<fb::SeqStack<>> s(*pool, "s", params());
  ferrite::test::run_conservation(
      4, per_thread(), [&](int t, std::uint64_t q, std::int64_t x) { std::int64_t i; s.apply(t, q, true, x, &i); },
      [&](int t, std::uint64_t q, std::int64_t* x) { return s.apply(t, q, false, 0, x); }, false);
  fb::FcInplace<fb::SeqQueue<>> q(*pool, "q", params());
  ferrite::test::run_conservation(
      4, per_thread(), [&](int t, std::uint64_t n, std::int64_t x) { std::int64_t i; q.apply(t, n, true, x, &i); },
      [&](int t, std::uint64_t n, std::int64_t* x) { return q.apply(t, n, false, 0, x); }, true);
  fb::FcInplace<fb::SeqHeap<>> h(*pool, "h", params());
  ferrite::test::run_conservation(
      4, per_thread(), [&](int t, std::uint64_t n, std::int64_t x) { std::int64_t i; h.apply(t, n, true, x, &i); },
      [&](int t, std::uint64_t n, std::int64_t* x) { return h.apply(t, n, false, 0, x); }, false);
  EXPECT_GE(q.combining_degree(), 1.0);
}

TEST(FcInplace, FloatMultipliesExactlyOncePerCall) {
  TempPool pool("fc-float");
  fb::FcInplace<fb::SeqFloat<>> f(*pool, "f", params());
  const int n = static_cast<int>(500 * ferrite::test::scale()) + 10;
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      std::int64_t v;
      for (int i = 0; i < n; ++i) f.apply(t, static_cast<std::uint64_t>(i + 1), true, std::bit_cast<std::int64_t>(2.0), &v);
    });
  for (auto& th : ts) th.join();
  std::int64_t v = 0;
  f.apply(0, 1u << 30, false, 0, &v);
  EXPECT_EQ(std::bit_cast<double>(v), std::ldexp(1.0, 4 * n));
}

TEST(PmdkTx, AllFourStructuresAndConservation) {
  std::int64_t v = 0;
  {
    fb::PmdkTx s("/dev/shm", fb::PmdkTx::Kind::kStack, 16);
    for (int i = 1; i <= 3; ++i) s.apply(true, i, &v);
    EXPECT_EQ(s.snapshot(), (std::vector<std::int64_t>{3, 2, 1}));
    ASSERT_TRUE(s.apply(false, 0, &v));
    EXPECT_EQ(v, 3);
  }
  {
    fb::PmdkTx f("/dev/shm", fb::PmdkTx::Kind::kFloat);
    f.apply(true, std::bit_cast<std::int64_t>(3.0), &v);
    f.apply(false, 0, &v);
    EXPECT_EQ(std::bit_cast<double>(v), 3.0);
  }
  {
    fb::PmdkTx h("/dev/shm", fb::PmdkTx::Kind::kHeap, 8, 64);
    for (int x : {4, 2, 9, 1}) h.apply(true, x, &v);
    std::vector<std::int64_t> mins;
    while (h.apply(false, 0, &v)) mins.push_back(v);
    EXPECT_EQ(mins, (std::vector<std::int64_t>{1, 2, 4, 9}));
  }
  fb::PmdkTx q("/dev/shm", fb::PmdkTx::Kind::kQueue, 8, 1024, std::size_t{64} << 20);
  const std::string path = q.path();
  EXPECT_TRUE(std::filesystem::exists(path));
  ferrite::test::run_conservation(
      4, per_thread() / 4, [&](int, std::uint64_t, std::int64_t x) { std::int64_t i; q.apply(true, x, &i); },
      [&](int, std::uint64_t, std::int64_t* x) { return q.apply(false, 0, x); }, true);
}

TEST(PmdkTx, BadDirectoryIsAClearError) {
  EXPECT_THROW(fb::PmdkTx("/nonexistent-dir-ferrite", fb::PmdkTx::Kind::kQueue), std::runtime_error);
  EXPECT_FALSE(fb::pmdk_version().empty());
}

}  // namespace lockbased_test
