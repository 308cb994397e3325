// tests/bench/transient_stress_test.cc — the transient competitors are correct:
// Michael–Scott queue (per-producer FIFO, conservation), Treiber stack
// (LIFO, conservation), the mutex-std containers and the AtomicFloats.
// Multi-threaded; loops shrink under FERRITE_TEST_SCALE.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include "common/scale.h"
#include "ferrite/baselines/transient_locked.h"
#include "ferrite/baselines/transient_ms_queue.h"
#include "ferrite/baselines/transient_treiber_stack.h"

namespace ferrite::baselines {
namespace {

std::uint64_t scaled(std::uint64_t n) { return test::scaled<std::uint64_t>(n, 16); }

constexpr std::int64_t value_of(int producer, std::uint64_t i) {
  return (static_cast<std::int64_t>(producer) << 32) | static_cast<std::int64_t>(i);
}

template <class Q>
void check_queue_mpmc() {
  constexpr int kProducers = 2, kConsumers = 2;
  const std::uint64_t per_producer = scaled(20000);
  Q q(kProducers + kConsumers);
  std::atomic<std::uint64_t> consumed{0};
  std::vector<std::vector<std::int64_t>> got(kConsumers);
  std::barrier start(kProducers + kConsumers);
  std::vector<std::thread> ts;
  for (int p = 0; p < kProducers; ++p)
    ts.emplace_back([&, p] {
      start.arrive_and_wait();
      for (std::uint64_t i = 0; i < per_producer; ++i) q.enqueue(p, value_of(p, i));
    });
  for (int c = 0; c < kConsumers; ++c)
    ts.emplace_back([&, c] {
      const int tid = kProducers + c;
      start.arrive_and_wait();
      std::int64_t v;
      while (consumed.load(std::memory_order_relaxed) < kProducers * per_producer) {
        if (q.try_dequeue(tid, &v)) {
          got[static_cast<std::size_t>(c)].push_back(v);
          consumed.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  for (auto& t : ts) t.join();
  std::int64_t v;
  EXPECT_FALSE(q.try_dequeue(0, &v));
  EXPECT_TRUE(q.empty_unsafe());
  // FIFO per producer: each consumer sees one producer's values in order.
  std::vector<std::int64_t> all;
  for (const auto& g : got) {
    std::vector<std::int64_t> last(kProducers, -1);
    for (std::int64_t x : g) {
      const int p = static_cast<int>(x >> 32);
      ASSERT_GE(p, 0);
      ASSERT_LT(p, kProducers);
      EXPECT_GT(x & 0xffffffff, last[static_cast<std::size_t>(p)]) << "FIFO violated for producer " << p;
      last[static_cast<std::size_t>(p)] = x & 0xffffffff;
    }
    all.insert(all.end(), g.begin(), g.end());
  }
  // Conservation: every value exactly once.
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), kProducers * per_producer);
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "a value was dequeued twice";
  for (int p = 0; p < kProducers; ++p)
    for (std::uint64_t i = 0; i < per_producer; i += per_producer / 7 + 1)
      EXPECT_TRUE(std::binary_search(all.begin(), all.end(), value_of(p, i)));
}

TEST(MsQueue, SequentialFifo) {
  MsQueue<std::int64_t> q(1);
  std::int64_t v = 0;
  EXPECT_FALSE(q.try_dequeue(0, &v));
  for (int i = 0; i < 100; ++i) q.enqueue(0, i);
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(q.try_dequeue(0, &v));
    EXPECT_EQ(v, i);
  }
  EXPECT_FALSE(q.try_dequeue(0, &v));
}

TEST(MsQueue, ConcurrentFifoPerProducerAndConservationWithEbr) { check_queue_mpmc<MsQueue<std::int64_t>>(); }
TEST(MsQueue, ConcurrentFifoPerProducerAndConservationDeferred) {
  check_queue_mpmc<MsQueue<std::int64_t, DeferredReclaimer>>();
}

template <class S>
void check_stack_conservation() {
  constexpr int kThreads = 4;
  const std::uint64_t per_thread = scaled(20000);
  S s(kThreads);
  std::vector<std::vector<std::int64_t>> popped(kThreads);
  std::barrier start(kThreads);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      start.arrive_and_wait();
      std::int64_t v;
      for (std::uint64_t i = 0; i < per_thread; ++i) {
        s.push(t, value_of(t, i));
        if (i % 3 != 0 && s.try_pop(t, &v)) popped[static_cast<std::size_t>(t)].push_back(v);
      }
    });
  for (auto& t : ts) t.join();
  std::vector<std::int64_t> all;
  for (const auto& p : popped) all.insert(all.end(), p.begin(), p.end());
  std::int64_t v;
  while (s.try_pop(0, &v)) all.push_back(v);
  EXPECT_TRUE(s.empty_unsafe());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), kThreads * per_thread) << "values lost or duplicated";
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "a value was popped twice";
  std::vector<std::int64_t> expected;
  for (int t = 0; t < kThreads; ++t)
    for (std::uint64_t i = 0; i < per_thread; ++i) expected.push_back(value_of(t, i));
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(all, expected);
}

TEST(TreiberStack, SequentialLifo) {
  TreiberStack<std::int64_t> s(1);
  std::int64_t v = 0;
  EXPECT_FALSE(s.try_pop(0, &v));
  for (int i = 0; i < 100; ++i) s.push(0, i);
  for (int i = 99; i >= 0; --i) {
    ASSERT_TRUE(s.try_pop(0, &v));
    EXPECT_EQ(v, i);
  }
  EXPECT_FALSE(s.try_pop(0, &v));
}

TEST(TreiberStack, ConcurrentConservationWithEbr) { check_stack_conservation<TreiberStack<std::int64_t>>(); }
TEST(TreiberStack, ConcurrentConservationDeferred) {
  check_stack_conservation<TreiberStack<std::int64_t, DeferredReclaimer>>();
}

TEST(LockedContainers, SequentialSemantics) {
  LockedQueue<int> q;
  LockedStack<int> s;
  LockedMinHeap<int> h;
  int v = 0;
  EXPECT_FALSE(q.try_dequeue(&v));
  EXPECT_FALSE(s.try_pop(&v));
  EXPECT_FALSE(h.try_delete_min(&v));
  for (int x : {5, 1, 4, 2, 3}) {
    q.enqueue(x);
    s.push(x);
    h.insert(x);
  }
  std::vector<int> qo, so, ho;
  while (q.try_dequeue(&v)) qo.push_back(v);
  while (s.try_pop(&v)) so.push_back(v);
  while (h.try_delete_min(&v)) ho.push_back(v);
  EXPECT_EQ(qo, (std::vector<int>{5, 1, 4, 2, 3}));
  EXPECT_EQ(so, (std::vector<int>{3, 2, 4, 1, 5}));
  EXPECT_EQ(ho, (std::vector<int>{1, 2, 3, 4, 5}));
}

// Each thread alternates *2 and *0.5: products of powers of two are exact,
// so any lost update leaves the final value != 1.
template <class F>
void check_atomic_float() {
  constexpr int kThreads = 4;
  const std::uint64_t pairs = scaled(20000);
  F f(1.0);
  std::barrier start(kThreads);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&] {
      start.arrive_and_wait();
      for (std::uint64_t i = 0; i < pairs; ++i) {
        f.fetch_mul(2.0);
        f.fetch_mul(0.5);
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(f.load(), 1.0);
  EXPECT_EQ(f.fetch_mul(3.0), 1.0);  // returns the value read
  EXPECT_EQ(f.load(), 3.0);
}

TEST(AtomicFloat, LockedNoLostUpdates) { check_atomic_float<LockedAtomicFloat>(); }
TEST(AtomicFloat, CasNoLostUpdates) { check_atomic_float<CasAtomicFloat>(); }

}  // namespace
}  // namespace ferrite::baselines
