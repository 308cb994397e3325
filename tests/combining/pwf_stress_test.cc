// Concurrent stress of the PWFcomb structures (4–8 threads on a 2-core
// machine: oversubscribed, so combiners are preempted mid-round). Checks
// conservation (every value inserted is removed or still present exactly
// once), per-producer FIFO for the queue, heap order of each consumer's
// deletions under a no-insert phase, and the exact AtomicFloat product.
// TSan-clean by construction: all shared words are atomics. Loop sizes scale
// with FERRITE_TEST_SCALE.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "ferrite/combining/pwf_atomic_float.h"
#include "ferrite/combining/pwf_heap.h"
#include "ferrite/combining/pwf_queue.h"
#include "ferrite/combining/pwf_stack.h"
#include "common/scale.h"
#include "common/temp_pool.h"

namespace pwf_stress_test {  // this file's names, apart in a unity build

namespace fc = ferrite::combining;
using ferrite::test::scaled;
using ferrite::test::TempPool;

namespace {

std::int64_t val(int tid, int i) { return (static_cast<std::int64_t>(tid) + 1) << 32 | i; }
std::int64_t key(int tid, int i) {
  return static_cast<std::int64_t>((static_cast<std::uint64_t>(val(tid, i)) * 2654435761u) & 0x7fffffffffffull);
}

template <class F>
void run_threads(int n, F&& f) {
  std::vector<std::thread> ts;
  for (int t = 0; t < n; ++t) ts.emplace_back([&f, t] { f(t); });
  for (auto& t : ts) t.join();
}

TEST(PWFStress, AtomicFloatProductIsExact) {
  for (int threads : {4, 8}) {
    TempPool tp("sfloat");
    auto f = fc::PWFAtomicFloat<>::create(*tp, "f", threads);
    const int per = scaled(3000, 100);
    // Each thread multiplies by 2 then by 0.5: exact in binary, so the final
    // value is exactly 1 and every old value is a power of two.
    std::atomic<int> bad{0};
    run_threads(threads, [&](int t) {
      for (int i = 0; i < per; ++i) {
        const double old = f->mul(t, static_cast<std::uint64_t>(i) + 1, (i % 2) == 0 ? 2.0 : 0.5);
        int e;
        if (std::frexp(old, &e) != 0.5) bad.fetch_add(1);
      }
    });
    EXPECT_EQ(bad.load(), 0);
    EXPECT_EQ(f->read(), 1.0);
    EXPECT_GE(f->combining_degree(), 1.0);
  }
}

template <class S>
void stack_conservation(const char* tag) {
  for (int threads : {4, 8}) {
    TempPool tp(tag);
    auto s = S::create(*tp, "s", threads);
    const int per = scaled(4000, 100);
    std::vector<std::vector<std::int64_t>> popped(static_cast<std::size_t>(threads));
    run_threads(threads, [&](int t) {
      std::uint64_t seq = 0;
      for (int i = 0; i < per; ++i) {
        s->push(t, ++seq, val(t, i));
        if (i % 3 != 2) {
          auto v = s->pop(t, ++seq);
          if (v) popped[static_cast<std::size_t>(t)].push_back(*v);
        }
      }
    });
    std::multiset<std::int64_t> all;
    for (auto& v : popped) all.insert(v.begin(), v.end());
    for (auto v : s->contents()) all.insert(v);
    ASSERT_EQ(all.size(), static_cast<std::size_t>(threads) * static_cast<std::size_t>(per));
    for (int t = 0; t < threads; ++t)
      for (int i = 0; i < per; ++i) ASSERT_EQ(all.count(val(t, i)), 1u) << "value lost or duplicated";
    // Per-producer LIFO in what is left: a thread's values lower in the stack
    // were pushed earlier.
    std::map<int, std::int64_t> last;
    for (auto v : s->contents()) {
      const int t = static_cast<int>(v >> 32);
      if (last.count(t)) {
        EXPECT_LT(v, last[t]);
      }
      last[t] = v;
    }
  }
}
TEST(PWFStress, StackConservation) { stack_conservation<fc::PWFStack<>>("sstack"); }
TEST(PWFStress, StackConservationNoElim) { stack_conservation<fc::PWFStack<false, true>>("sstackne"); }
TEST(PWFStress, StackConservationNoRec) { stack_conservation<fc::PWFStack<true, false>>("sstacknr"); }

template <class Q>
void queue_conservation(const char* tag) {
  for (int threads : {4, 8}) {
    TempPool tp(tag);
    auto q = Q::create(*tp, "q", threads);
    const int per = scaled(4000, 100);
    std::vector<std::vector<std::int64_t>> got(static_cast<std::size_t>(threads));
    run_threads(threads, [&](int t) {
      std::uint64_t seq = 0;
      for (int i = 0; i < per; ++i) {
        q->enqueue(t, ++seq, val(t, i));
        if (i % 3 != 2) {
          auto v = q->dequeue(t, ++seq);
          if (v) got[static_cast<std::size_t>(t)].push_back(*v);
        }
      }
    });
    // Per-producer FIFO: each consumer sees each producer's values in order.
    for (auto& g : got) {
      std::map<int, std::int64_t> last;
      for (auto v : g) {
        const int t = static_cast<int>(v >> 32);
        if (last.count(t)) {
          ASSERT_GT(v, last[t]) << "per-producer FIFO violated";
        }
        last[t] = v;
      }
    }
    std::multiset<std::int64_t> all;
    for (auto& g : got) all.insert(g.begin(), g.end());
    auto rest = q->contents();
    all.insert(rest.begin(), rest.end());
    ASSERT_EQ(all.size(), static_cast<std::size_t>(threads) * static_cast<std::size_t>(per));
    for (int t = 0; t < threads; ++t)
      for (int i = 0; i < per; ++i) ASSERT_EQ(all.count(val(t, i)), 1u);
    std::map<int, std::int64_t> last;
    for (auto v : rest) {
      const int t = static_cast<int>(v >> 32);
      if (last.count(t)) {
        ASSERT_GT(v, last[t]);
      }
      last[t] = v;
    }
  }
}

TEST(PWFStress, QueueConservationAndPerProducerFifo) { queue_conservation<fc::PWFQueue<>>("squeue"); }
// Every dequeue round reads IE through a probe (pwf_queue.h Q3).
TEST(PWFStress, QueueConservationWithProbes) { queue_conservation<fc::PWFQueue<fc::pwf_fault::kProbeAlways>>("squeuep"); }

TEST(PWFStress, HeapConservationAndOrder) {
  for (int threads : {4, 8}) {
    TempPool tp("sheap");
    auto h = fc::PWFHeap<>::create(*tp, "h", threads, 1024);
    const int per = scaled(1500, 60);
    std::vector<std::vector<std::int64_t>> got(static_cast<std::size_t>(threads));
    std::vector<std::uint64_t> seqs(static_cast<std::size_t>(threads), 0);
    run_threads(threads, [&](int t) {
      auto& seq = seqs[static_cast<std::size_t>(t)];
      for (int i = 0; i < per; ++i) {
        ASSERT_TRUE(h->insert(t, ++seq, key(t, i)));
        if (i >= 64) {  // 64 per thread stay (<= 8 * 64 + 8 keys <= capacity)
          auto v = h->delete_min(t, ++seq);
          if (v) got[static_cast<std::size_t>(t)].push_back(*v);
        }
      }
    });
    EXPECT_TRUE(h->well_formed());
    // Drain phase with no inserts: each thread's deletions are ascending.
    std::vector<std::vector<std::int64_t>> drained(static_cast<std::size_t>(threads));
    run_threads(threads, [&](int t) {
      auto& seq = seqs[static_cast<std::size_t>(t)];
      for (;;) {
        auto v = h->delete_min(t, ++seq);
        if (!v) break;
        drained[static_cast<std::size_t>(t)].push_back(*v);
      }
    });
    for (auto& d : drained) EXPECT_TRUE(std::is_sorted(d.begin(), d.end()));
    std::multiset<std::int64_t> all, expect;
    for (auto& g : got) all.insert(g.begin(), g.end());
    for (auto& d : drained) all.insert(d.begin(), d.end());
    for (int t = 0; t < threads; ++t)
      for (int i = 0; i < per; ++i) expect.insert(key(t, i));
    EXPECT_EQ(all, expect);
  }
}

}  // namespace

}  // namespace pwf_stress_test
