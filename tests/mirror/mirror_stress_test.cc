// Stress tests of Mirror (TSan-able: label tsan): many threads on one
// patomic and on one Harris list / hash map / NM BST / skip list, then checks at quiescence.
//   * fetch_add by every thread: the old values returned are exactly
//     0 .. N-1 (each update linearized once), and concurrent loads never go
//     backwards (a load reads rep_v, which only moves forward);
//   * CAS increments racing with loads and failed CASes;
//   * both replicas of every field equal at quiescence, and the sequence
//     number equals the number of successful updates;
//   * set conservation: per key, successful inserts - successful removes is
//     0 or 1 and equals membership at the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/mirror/bst.h"
#include "ferrite/mirror/hash_map.h"
#include "ferrite/mirror/heap.h"
#include "ferrite/mirror/list.h"
#include "ferrite/mirror/patomic.h"
#include "ferrite/mirror/skip_list.h"

namespace mirror_stress_test {  // this file's names, apart in a unity build

namespace fm = ferrite::mirror;
using ferrite::test::scaled;
using ferrite::test::TempPool;

namespace {

constexpr int kThreads = 4;
// Room for what EBR holds back: a thread preempted while pinned (2 cores,
// 4 threads, other work) stops reclamation while the others keep retiring.
// 1 MiB (16,384 nodes) ran out under load.
constexpr std::size_t kRegion = std::size_t{8} << 20;

struct Counter {
  fm::patomic<std::uint64_t> v{0};
};

TEST(MirrorStress, ConcurrentFetchAddsAreEachLinearizedOnceAndLoadsNeverGoBack) {
  TempPool pool("mstress", std::size_t{16} << 20);
  fm::Heap<> heap(*pool, std::size_t{64} << 10, kThreads + 1);
  auto* c = heap.make<Counter>(0);
  const auto per = static_cast<std::uint64_t>(scaled(20000, 500));
  std::vector<std::vector<std::uint64_t>> got(kThreads);
  std::atomic<bool> stop{false}, backwards{false};
  std::thread reader([&] {
    std::uint64_t last = 0;
    while (!stop.load(std::memory_order_acquire)) {
      const std::uint64_t v = c->v.load();
      if (v < last) backwards.store(true);
      last = v;
    }
  });
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      for (std::uint64_t i = 0; i < per; ++i) got[static_cast<std::size_t>(t)].push_back(c->v.fetch_add(1));
    });
  for (auto& t : ts) t.join();
  stop.store(true, std::memory_order_release);
  reader.join();
  EXPECT_FALSE(backwards.load());
  std::vector<std::uint64_t> all;
  for (auto& g : got) all.insert(all.end(), g.begin(), g.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), kThreads * per);
  for (std::uint64_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], i) << "an update was lost or duplicated";
  const auto r = c->v.replicas();
  EXPECT_EQ(r.p, r.v);
  EXPECT_EQ(r.v.val, kThreads * per);
  EXPECT_EQ(r.v.seq, kThreads * per);  // one sequence number per successful CAS
}

TEST(MirrorStress, CasIncrementsRaceWithFailingCasesAndStayExact) {
  TempPool pool("mstress-cas", std::size_t{16} << 20);
  fm::Heap<> heap(*pool, std::size_t{64} << 10, kThreads + 1);
  auto* c = heap.make<Counter>(0);
  const auto per = static_cast<std::uint64_t>(scaled(20000, 500));
  std::atomic<std::uint64_t> successes{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&] {
      std::uint64_t mine = 0;
      for (std::uint64_t i = 0; i < per; ++i) {
        std::uint64_t e = c->v.load();
        if (c->v.compare_exchange_strong(e, e + 1)) ++mine;
        std::uint64_t stale = e + 1000000;  // never the current value: must fail and report it
        if (c->v.compare_exchange_strong(stale, 0)) ADD_FAILURE() << "CAS succeeded on a wrong expected value";
      }
      successes.fetch_add(mine);
    });
  for (auto& t : ts) t.join();
  const auto r = c->v.replicas();
  EXPECT_EQ(r.p, r.v);
  EXPECT_EQ(r.v.val, successes.load());
  EXPECT_EQ(r.v.seq, successes.load());
}

template <class Table, class Make>
void set_conservation(Make make) {
  TempPool pool("mstress-set", std::size_t{64} << 20);
  auto s = make(*pool);
  constexpr int kKeys = 32;
  const auto per = scaled(20000, 500);
  std::vector<std::vector<std::int64_t>> net(kThreads, std::vector<std::int64_t>(kKeys, 0));
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      std::uint64_t rng = 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(t + 1);
      for (int i = 0; i < per; ++i) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        const auto key = static_cast<std::int64_t>((rng >> 33) % kKeys);
        const auto c = (rng >> 20) % 3;
        if (c == 0) net[static_cast<std::size_t>(t)][static_cast<std::size_t>(key)] += s->insert(key, t) ? 1 : 0;
        else if (c == 1) net[static_cast<std::size_t>(t)][static_cast<std::size_t>(key)] -= s->remove(key, t) ? 1 : 0;
        else (void)s->contains(key, t);
      }
    });
  for (auto& t : ts) t.join();
  std::vector<bool> present(kKeys, false);
  for (const auto& [k, v] : s->items(false)) present[static_cast<std::size_t>(k)] = true;
  for (int k = 0; k < kKeys; ++k) {
    std::int64_t n = 0;
    for (int t = 0; t < kThreads; ++t) n += net[static_cast<std::size_t>(t)][static_cast<std::size_t>(k)];
    EXPECT_TRUE(n == 0 || n == 1) << "key " << k << ": net " << n;
    EXPECT_EQ(n == 1, present[static_cast<std::size_t>(k)]) << "key " << k;
  }
  EXPECT_TRUE(s->replicas_equal());
}

TEST(MirrorStress, ListInsertsAndRemovesConserveEveryKey) {
  set_conservation<fm::List<>>(
      [](ferrite::pmem::Pool& p) { return fm::List<>::create(p, "l", kThreads, kRegion); });
}
TEST(MirrorStress, HashSetInsertsAndRemovesConserveEveryKey) {
  set_conservation<fm::HashMap<>>(
      [](ferrite::pmem::Pool& p) { return fm::HashMap<>::create(p, "h", kThreads, 4, kRegion); });
}

TEST(MirrorStress, BstInsertsAndRemovesConserveEveryKey) {
  set_conservation<fm::Bst<>>([](ferrite::pmem::Pool& p) { return fm::Bst<>::create(p, "t", kThreads, kRegion); });
}

TEST(MirrorStress, SkipListInsertsAndRemovesConserveEveryKey) {
  set_conservation<fm::SkipList<>>(
      [](ferrite::pmem::Pool& p) { return fm::SkipList<>::create(p, "s", kThreads, kRegion); });
}

template <class Make>
void map_old_values(Make make) {
  TempPool pool("mstress-map", std::size_t{64} << 20);
  auto m = make(*pool);
  constexpr int kKeys = 16;
  const auto per = scaled(20000, 500);
  // Values are unique per (thread, i): every value is written once, and each
  // value a put or erase returns as "old" was written by some put and is
  // returned at most once (it is replaced or erased exactly once).
  std::vector<std::vector<std::int64_t>> olds(kThreads);
  std::atomic<std::size_t> puts{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      std::uint64_t rng = 77 + static_cast<std::uint64_t>(t);
      try {
      for (int i = 0; i < per; ++i) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        const auto key = static_cast<std::int64_t>((rng >> 33) % kKeys);
        const std::int64_t val = (std::int64_t{t} + 1) << 32 | i;
        std::optional<std::int64_t> old;
        if ((rng >> 20) % 2 == 0) {
          old = m->put(key, val, t);
          puts.fetch_add(1, std::memory_order_relaxed);
        } else {
          old = m->erase(key, t);
        }
        if (old) olds[static_cast<std::size_t>(t)].push_back(*old);
        (void)m->get(key, t);
      }
      } catch (const std::exception& e) {
        ADD_FAILURE() << "thread " << t << ": " << e.what() << " (free units " << m->heap().free_units() << " of " << m->heap().units() << ")";
      }
    });
  for (auto& t : ts) t.join();
  std::vector<std::int64_t> all;
  for (auto& o : olds) all.insert(all.end(), o.begin(), o.end());
  for (const auto& [k, v] : m->items(true)) all.push_back(v);  // the survivors
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "a value was returned twice";
  EXPECT_EQ(all.size(), puts.load()) << "every value put is replaced, erased or present exactly once";
  EXPECT_TRUE(m->replicas_equal());
}

TEST(MirrorStress, MapPutsAndErasesAgreeWithTheirOldValues) {
  map_old_values([](ferrite::pmem::Pool& p) { return fm::HashMap<>::create(p, "m", kThreads, 4, kRegion); });
}
TEST(MirrorStress, BstMapPutsAndErasesAgreeWithTheirOldValues) {
  map_old_values([](ferrite::pmem::Pool& p) { return fm::Bst<>::create(p, "m", kThreads, kRegion); });
}

TEST(MirrorStress, SkipListMapPutsAndErasesAgreeWithTheirOldValues) {
  map_old_values([](ferrite::pmem::Pool& p) { return fm::SkipList<>::create(p, "m", kThreads, kRegion); });
}

}  // namespace

}  // namespace mirror_stress_test
