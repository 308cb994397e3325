// Concurrent stress tests of the PBcomb structures (run them under TSan:
// the tsan preset). Checks: conservation (every pushed/enqueued/inserted
// value removed exactly once), FIFO per producer for the queue, heap order
// of delete-min answers for a single consumer and of the final drain, and
// the AtomicFloat product. Oversubscribed runs (8 threads on 2 cores) check
// that waiting yields (sync::spin_until) instead of starving the combiner.
// Select with `ctest -R PBStress`.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <map>
#include <thread>
#include <vector>

#include "ferrite/combining/atomic_float.h"
#include "ferrite/combining/pb_heap.h"
#include "ferrite/combining/pb_queue.h"
#include "ferrite/combining/pb_stack.h"
#include "common/scale.h"
#include "common/temp_pool.h"

namespace pb_stress_test {  // this file's names, apart in a unity build

namespace fc = ferrite::combining;
using ferrite::test::scaled;
using ferrite::test::TempPool;

namespace {

std::int64_t value_of(int tid, int i) { return (static_cast<std::int64_t>(tid) + 1) << 32 | i; }

template <class F>
void run_threads(int n, F&& f) {
  std::vector<std::thread> ts;
  for (int t = 0; t < n; ++t) ts.emplace_back([&f, t] { f(t); });
  for (auto& t : ts) t.join();
}

// Each value must appear exactly once in `got` and `got` only holds pushed values.
void expect_conserved(int threads, int per_thread, std::vector<std::int64_t> got) {
  std::sort(got.begin(), got.end());
  std::vector<std::int64_t> want;
  for (int t = 0; t < threads; ++t)
    for (int i = 0; i < per_thread; ++i) want.push_back(value_of(t, i));
  std::sort(want.begin(), want.end());
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(got, want);
}

}  // namespace

TEST(PBStressFloat, ProductOfAllFactorsIsOne) {
  for (int threads : {2, 4, 8}) {
    TempPool tp("sfloat");
    auto f = fc::PBAtomicFloat<>::create(*tp, "f", threads);
    const int ops = scaled(20000, 500);
    std::atomic<int> bad{0};
    run_threads(threads, [&](int t) {
      for (int i = 1; i <= ops; ++i) {
        // Alternate x2 and x0.5: the value stays a power of two in
        // [2^-threads, 2^threads] whatever the interleaving.
        const double old = f->mul(t, static_cast<std::uint64_t>(i), i % 2 ? 2.0 : 0.5);
        if (!(old >= std::ldexp(1.0, -threads) && old <= std::ldexp(1.0, threads))) bad.fetch_add(1);
      }
    });
    EXPECT_EQ(bad.load(), 0);
    EXPECT_EQ(f->value(), 1.0);
    EXPECT_GE(f->combining_degree(), 1.0);
  }
}

class PBStressStack : public ::testing::TestWithParam<fc::PBStackOptions> {};

TEST_P(PBStressStack, EveryPushedValuePoppedExactlyOnce) {
  for (int threads : {2, 4, 8}) {
    TempPool tp("sstack");
    auto s = fc::PBStack<>::create(*tp, "s", threads, GetParam());
    const int per = scaled(10000, 200);
    std::vector<std::vector<std::int64_t>> popped(static_cast<std::size_t>(threads));
    run_threads(threads, [&](int t) {
      std::uint64_t seq = 0;
      for (int i = 0; i < per; ++i) {
        s->push(t, ++seq, value_of(t, i));
        if (auto v = s->pop(t, ++seq)) popped[static_cast<std::size_t>(t)].push_back(*v);
      }
    });
    std::vector<std::int64_t> all;
    for (auto& p : popped) all.insert(all.end(), p.begin(), p.end());
    for (auto v = s->pop(0); v; v = s->pop(0)) all.push_back(*v);
    expect_conserved(threads, per, all);
    EXPECT_TRUE(s->values().empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, PBStressStack,
                         ::testing::Values(fc::PBStackOptions{true, true}, fc::PBStackOptions{false, true},
                                           fc::PBStackOptions{true, false}),
                         [](const auto& i) {
                           return std::string(i.param.elimination ? "elim" : "noelim") +
                                  (i.param.recycling ? "_rec" : "_norec");
                         });

TEST(PBStressQueue, ConservationAndPerProducerFifo) {
  for (int threads : {2, 4, 8}) {
    TempPool tp("squeue");
    auto q = fc::PBQueue<>::create(*tp, "q", threads);
    const int per = scaled(10000, 200);
    std::vector<std::vector<std::int64_t>> got(static_cast<std::size_t>(threads));
    run_threads(threads, [&](int t) {
      std::uint64_t seq = 0;
      for (int i = 0; i < per; ++i) {
        q->enqueue(t, ++seq, value_of(t, i));
        if (auto v = q->dequeue(t, ++seq)) got[static_cast<std::size_t>(t)].push_back(*v);
      }
    });
    std::vector<std::int64_t> drained;
    for (auto v = q->dequeue(0); v; v = q->dequeue(0)) drained.push_back(*v);
    // FIFO per producer: each consumer sees a producer's values in order,
    // and so does the final drain.
    got.push_back(drained);
    for (const auto& seen : got) {
      std::map<std::int64_t, std::int64_t> last;
      for (auto v : seen) {
        const auto producer = v >> 32;
        auto it = last.find(producer);
        if (it != last.end()) {
          EXPECT_LT(it->second, v) << "producer " << producer << " out of order";
        }
        last[producer] = v;
      }
    }
    std::vector<std::int64_t> all;
    for (auto& g : got) all.insert(all.end(), g.begin(), g.end());
    expect_conserved(threads, per, all);
    EXPECT_EQ(q->head(), q->tail());
  }
}

TEST(PBStressQueue, SeparateProducersAndConsumers) {
  const int producers = 2, consumers = 2, threads = producers + consumers;
  TempPool tp("squeue2");
  auto q = fc::PBQueue<>::create(*tp, "q", threads);
  const int per = scaled(20000, 500);
  std::atomic<int> done{0};
  std::vector<std::vector<std::int64_t>> got(consumers);
  run_threads(threads, [&](int t) {
    if (t < producers) {
      for (int i = 0; i < per; ++i) q->enqueue(t, value_of(t, i));
      done.fetch_add(1);
    } else {
      auto& mine = got[static_cast<std::size_t>(t - producers)];
      for (;;) {
        const bool finished = done.load() == producers;  // read before the dequeue
        if (auto v = q->dequeue(t)) mine.push_back(*v);
        else if (finished) break;
      }
    }
  });
  std::vector<std::int64_t> all;
  for (const auto& g : got) {
    std::map<std::int64_t, std::int64_t> last;
    for (auto v : g) {
      auto it = last.find(v >> 32);
      if (it != last.end()) {
        EXPECT_LT(it->second, v);
      }
      last[v >> 32] = v;
    }
    all.insert(all.end(), g.begin(), g.end());
  }
  expect_conserved(producers, per, all);
}

TEST(PBStressHeap, ConservationAndOrder) {
  for (int threads : {2, 4, 8}) {
    TempPool tp("sheap");
    auto h = fc::PBHeap<>::create(*tp, "h", threads, 1024);
    const int per = scaled(5000, 200);
    std::vector<std::vector<std::int64_t>> got(static_cast<std::size_t>(threads));
    std::atomic<int> rejected{0};
    run_threads(threads, [&](int t) {
      std::uint64_t seq = 0;
      for (int i = 0; i < per; ++i) {
        // Keys not in insertion order.
        const auto v = value_of(t, (i * 7919) % per);
        if (!h->insert(t, ++seq, v)) rejected.fetch_add(1);
        if (i % 50 != 0)
          if (auto m = h->delete_min(t, ++seq)) got[static_cast<std::size_t>(t)].push_back(*m);
      }
    });
    EXPECT_EQ(rejected.load(), 0);  // at most threads * per / 50 <= 1024 keys remain
    EXPECT_TRUE(h->heap_ordered());
    std::vector<std::int64_t> drained;
    std::uint64_t seq = h->comb().next_seq(0);
    for (auto m = h->delete_min(0, seq++); m; m = h->delete_min(0, seq++)) drained.push_back(*m);
    EXPECT_TRUE(std::is_sorted(drained.begin(), drained.end()));
    std::vector<std::int64_t> all = drained;
    for (auto& g : got) all.insert(all.end(), g.begin(), g.end());
    // (per * 7919) % per is a permutation only when gcd(7919, per) == 1.
    std::sort(all.begin(), all.end());
    EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "a key removed twice";
    EXPECT_EQ(all.size(), static_cast<std::size_t>(threads) * static_cast<std::size_t>(per));
  }
}

TEST(PBStressHeap, SingleConsumerSeesNonDecreasingMinimaWithoutInserts) {
  TempPool tp("sheap2");
  const int threads = 4;
  auto h = fc::PBHeap<>::create(*tp, "h", threads, 1024);
  for (int i = 0; i < 1000; ++i) h->insert(0, (i * 37) % 1000);
  std::vector<std::vector<std::int64_t>> got(threads);
  run_threads(threads, [&](int t) {
    for (auto m = h->delete_min(t); m; m = h->delete_min(t)) got[static_cast<std::size_t>(t)].push_back(*m);
  });
  std::vector<std::int64_t> all;
  for (const auto& g : got) {
    EXPECT_TRUE(std::is_sorted(g.begin(), g.end()));  // minima only grow
    all.insert(all.end(), g.begin(), g.end());
  }
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(all[static_cast<std::size_t>(i)], i);
}

}  // namespace pb_stress_test
