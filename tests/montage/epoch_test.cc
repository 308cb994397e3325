// Unit tests of nbMontage's epoch system (montage/epoch_sys.h), mindicator
// and the two structures' crash-free behaviour and clean-restart recovery;
// the structures' tests run on their transient originals too
// (montage/transient_sys.h, tests/montage/systems.h), without the restart.
// Crash behaviour is montage_crash_test.cc's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <thread>
#include <vector>

#include "common/temp_pool.h"
#include "ferrite/montage/epoch_sys.h"
#include "ferrite/montage/hash_map.h"
#include "ferrite/montage/mindicator.h"
#include "ferrite/montage/ms_queue.h"
#include "montage/systems.h"

namespace epoch_test {  // this file's names, apart in a unity build

namespace fm = ferrite::montage;
using ferrite::test::TempPool;
using ferrite::test::montage_systems::kPersistent;
using ferrite::test::montage_systems::make;
using ferrite::test::montage_systems::restart;

namespace {

fm::EpochOptions manual() {
  fm::EpochOptions o;
  o.epoch_length = std::chrono::microseconds{0};
  return o;
}

// A bare epoch system on a root of its own, for the tests of the API.
struct Bare {
  TempPool pool{"montage"};
  std::unique_ptr<fm::EpochSys<>> es = fm::EpochSys<>::create(*pool, "m", fm::Kind::kTest, 2, manual());
  fm::MontageRoot* root = pool->root<fm::MontageRoot>("m");
  fm::CASObj obj{0};
};

struct Val {
  std::int64_t v;
};

}  // namespace

TEST(Mindicator, RootIsTheMinimumOfTheLeavesAndLeavesOnlyGrow) {
  fm::Mindicator m(5, 10);
  EXPECT_EQ(m.root(), 10u);
  EXPECT_EQ(m.find_below(11), 0);
  for (int t = 0; t < 5; ++t) m.raise(t, 12 + static_cast<std::uint64_t>(t));
  EXPECT_EQ(m.root(), 12u);
  m.raise(0, 3);  // never lowers
  EXPECT_EQ(m.leaf(0), 12u);
  EXPECT_EQ(m.find_below(13), 0);
  EXPECT_EQ(m.find_below(12), -1);
  EXPECT_FALSE(m.raise_from(1, 12, 20));  // leaf 1 is 13
  EXPECT_TRUE(m.raise_from(1, 13, 20));
  EXPECT_EQ(m.find_below(15), 0);
  m.raise(0, 30);
  EXPECT_EQ(m.find_below(15), 2);  // 14
  EXPECT_EQ(m.root(), 14u);
}

TEST(EpochSys, LinCasTagsPayloadsWithTheEpochAndCommits) {
  Bare b;
  const std::uint64_t e = b.es->epoch();
  fm::PBlk* p = b.es->pnew<Val>(0, Val{42});
  EXPECT_EQ(p->epoch.load(), 0u);
  ASSERT_TRUE(b.es->lin_cas(0, b.obj, 0, 7));
  EXPECT_EQ(b.es->load(b.obj), 7u);
  EXPECT_EQ(p->epoch.load(), e);
  EXPECT_EQ(p->tid_sn.load(), fm::make_tid_sn(0, b.es->serial(0)));
  EXPECT_EQ(p->type(), fm::kPayload);
  EXPECT_EQ(fm::status_of(b.root->descs[0].status.load()), fm::kCommitted);
  EXPECT_EQ(b.es->tbp_pending(0), 1u);
}

TEST(EpochSys, AConflictingLinCasFailsAndResetsItsPayload) {
  Bare b;
  fm::PBlk* p = b.es->pnew<Val>(0, Val{1});
  ASSERT_FALSE(b.es->lin_cas(0, b.obj, 5, 6));  // obj holds 0
  EXPECT_EQ(b.es->load(b.obj), 0u);
  EXPECT_EQ(p->epoch.load(), 0u);  // l.91–92: reset for the next attempt
  EXPECT_TRUE(b.es->owned(0, p));
  ASSERT_TRUE(b.es->lin_cas(0, b.obj, 0, 6));
  EXPECT_FALSE(b.es->owned(0, p));
}

TEST(EpochSys, SyncAdvancesTwoEpochsAndWritesBackEveryBuffer) {
  Bare b;
  const std::uint64_t e = b.es->epoch();
  b.es->pnew<Val>(0, Val{1});
  ASSERT_TRUE(b.es->lin_cas(0, b.obj, 0, 1));
  b.es->pnew<Val>(1, Val{2});
  ASSERT_TRUE(b.es->lin_cas(1, b.obj, 1, 2));
  EXPECT_EQ(b.es->tbp_pending(0) + b.es->tbp_pending(1), 2u);
  b.es->sync();
  EXPECT_EQ(b.es->epoch(), e + 2);
  EXPECT_EQ(b.es->tbp_pending(0) + b.es->tbp_pending(1), 0u);
  EXPECT_GE(b.es->leaf(0), e + 1);
  EXPECT_EQ(b.root->global_epoch.load(), e + 2);
}

TEST(EpochSys, TheBackgroundAdvancerMovesOnlyAfterCommits) {
  TempPool pool{"montage"};
  fm::EpochOptions o;
  o.epoch_length = std::chrono::microseconds{500};
  auto es = fm::EpochSys<>::create(*pool, "m", fm::Kind::kTest, 1, o);
  fm::CASObj obj{0};
  const std::uint64_t e0 = es->epoch();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // No operation committed in e-1 or e: no advance (l.105).
  EXPECT_EQ(es->epoch(), e0);
  std::uint64_t v = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (es->epoch() < e0 + 4 && std::chrono::steady_clock::now() < until) {
    es->pnew<Val>(0, Val{1});
    ASSERT_TRUE(es->lin_cas(0, obj, v, v + 1));
    ++v;
  }
  EXPECT_GE(es->epoch(), e0 + 4);
}

// The durable epoch may lag the in-memory one by one (P3): the payload goes
// three in-memory epochs after its pdelete, its anti-node four.
TEST(EpochSys, PdeleteFreesThePayloadOnlyWhenEveryRecoveryWouldDropIt) {
  Bare b;
  fm::PBlk* p = b.es->pnew<Val>(0, Val{1});
  ASSERT_TRUE(b.es->lin_cas(0, b.obj, 0, 1));
  b.es->pdetach(0, p);
  ASSERT_TRUE(b.es->lin_cas(0, b.obj, 1, 2));
  auto* anti = reinterpret_cast<fm::PBlk*>(p->anti.load());
  ASSERT_NE(anti, nullptr);
  EXPECT_EQ(anti->type(), fm::kAnti);
  EXPECT_EQ(anti->uid_seq.load(), p->uid_seq.load());
  b.es->pdelete(0, p);
  EXPECT_EQ(b.es->tbf_pending(0), 2u);
  std::uint64_t v = 2;
  for (int i = 1; i <= 4; ++i) {
    b.es->advance();
    ASSERT_TRUE(b.es->lin_cas(0, b.obj, v, v + 1));  // begin_op frees what is due
    ++v;
    SCOPED_TRACE(i);
    EXPECT_EQ(b.es->tbf_pending(0), i < 3 ? 2u : i == 3 ? 1u : 0u);
    EXPECT_EQ(p->epoch.load() == 0, i >= 3);
    EXPECT_EQ(anti->epoch.load() == 0, i >= 4);
  }
}

TEST(EpochSys, OpenWriteCopiesAnAttachedPayloadAndDetachesIt) {
  Bare b;
  fm::PBlk* p = b.es->pnew<Val>(0, Val{1});
  EXPECT_EQ(b.es->open_write(0, p), p);  // still ours
  ASSERT_TRUE(b.es->lin_cas(0, b.obj, 0, reinterpret_cast<std::uint64_t>(p)));
  fm::PBlk* c = b.es->open_write(0, p);
  ASSERT_NE(c, p);
  EXPECT_EQ(fm::EpochSys<>::get<Val>(c).v, 1);
  b.es->own<Val>(0, c).v = 2;
  EXPECT_EQ(fm::EpochSys<>::get<Val>(p).v, 1);  // attached payloads are immutable
  ASSERT_TRUE(b.es->lin_cas(0, b.obj, reinterpret_cast<std::uint64_t>(p), reinterpret_cast<std::uint64_t>(c)));
  EXPECT_NE(p->anti.load(), 0u);
  EXPECT_THROW(b.es->own<Val>(0, p), std::logic_error);
}

TEST(EpochSys, RecoveryKeepsSyncedPayloadsAndMovesTheEpochPastTheCrashedRun) {
  TempPool pool{"montage"};
  std::uint64_t old_epoch = 0;
  {
    auto es = fm::EpochSys<>::create(*pool, "m", fm::Kind::kTest, 1, manual());
    fm::CASObj obj{0};
    for (std::int64_t i = 1; i <= 3; ++i) {
      es->pnew<Val>(0, Val{i});
      ASSERT_TRUE(es->lin_cas(0, obj, static_cast<std::uint64_t>(i - 1), static_cast<std::uint64_t>(i)));
    }
    es->sync();
    es->pnew<Val>(0, Val{99});  // after the sync: not old enough to persist
    ASSERT_TRUE(es->lin_cas(0, obj, 3, 4));
    old_epoch = es->epoch();
    es->abandon();  // the "crash": the destructor syncs nothing
  }
  pool.reopen();
  auto* root = pool->root<fm::MontageRoot>("m");
  std::vector<fm::PBlk*> kept;
  fm::RecoveryStats st;
  auto es = fm::EpochSys<>::attach(*pool, root, 1, &kept, manual(), &st);
  std::vector<std::int64_t> vals;
  for (auto* p : kept) vals.push_back(fm::EpochSys<>::get<Val>(p).v);
  std::sort(vals.begin(), vals.end());
  EXPECT_EQ(vals, (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(st.crash_epoch, old_epoch);
  EXPECT_GE(es->epoch(), old_epoch + 2);
  EXPECT_EQ(st.rejected_epoch, 1u);
  // A second recovery (no new operation) keeps the same payloads.
  es.reset();
  pool.reopen();
  kept.clear();
  es = fm::EpochSys<>::attach(*pool, pool->root<fm::MontageRoot>("m"), 1, &kept, manual(), &st);
  EXPECT_EQ(kept.size(), 3u);
}

// The queue and the hash map on both systems: nbMontage's (EpochSys) and
// the transient original's (TransientSys).
template <class Q>
class MSQueueOn : public ::testing::Test {};
using Queues = ::testing::Types<fm::MSQueue<>, fm::TransientMSQueue>;
TYPED_TEST_SUITE(MSQueueOn, Queues);
template <class M>
class HashMapOn : public ::testing::Test {};
using HashMaps = ::testing::Types<fm::HashMap<>, fm::TransientHashMap<>>;
TYPED_TEST_SUITE(HashMapOn, HashMaps);

TYPED_TEST(MSQueueOn, IsFifoAndRecoversWhatWasSynced) {
  using Q = TypeParam;
  TempPool pool{"montage"};
  {
    auto q = make<Q>(pool, "q", 2, manual());
    for (std::int64_t i = 1; i <= 100; ++i) q->enqueue(static_cast<int>(i % 2), i);
    for (std::int64_t i = 1; i <= 40; ++i) EXPECT_EQ(q->dequeue(0), i);
    q->sync();
    q->enqueue(0, 1000);  // lost at the "crash" below (no sync)
    auto c = q->contents();
    ASSERT_EQ(c.size(), 61u);
    EXPECT_EQ(c.front(), 41);
    if constexpr (!kPersistent<Q>) {
      // Nothing to restart: the same checks on the live queue.
      for (std::size_t i = 0; i + 1 < c.size(); ++i) EXPECT_EQ(c[i], static_cast<std::int64_t>(41 + i));
      EXPECT_EQ(c.back(), 1000);
      q->enqueue(1, 7);
      for (std::int64_t i = 41; i <= 100; ++i) ASSERT_EQ(q->dequeue(0), i);
      EXPECT_EQ(q->dequeue(1), 1000);
      EXPECT_EQ(q->dequeue(1), 7);
      EXPECT_EQ(q->dequeue(1), std::nullopt);
    }
    q->abandon();  // the "crash": the destructor syncs nothing
  }
  if constexpr (kPersistent<Q>) {
    auto q = restart<Q>(pool, "q", 2, manual());
    auto c = q->contents();
    ASSERT_EQ(c.size(), 60u);
    for (std::size_t i = 0; i < c.size(); ++i) EXPECT_EQ(c[i], static_cast<std::int64_t>(41 + i));
    q->enqueue(1, 7);
    for (std::int64_t i = 41; i <= 100; ++i) ASSERT_EQ(q->dequeue(0), i);
    EXPECT_EQ(q->dequeue(1), 7);
    EXPECT_EQ(q->dequeue(1), std::nullopt);
  }
}

TYPED_TEST(HashMapOn, PutGetEraseFollowTheMapSpecificationAndRecover) {
  using M = TypeParam;
  TempPool pool{"montage"};
  std::map<std::int64_t, std::int64_t> ref;
  {
    fm::HashMapOptions hm;
    hm.buckets = 8;  // long chains
    auto m = make<M>(pool, "h", 1, manual(), hm);
    std::uint64_t r = 1;
    for (int i = 0; i < 3000; ++i) {
      r = r * 6364136223846793005ull + 1442695040888963407ull;
      const auto k = static_cast<std::int64_t>((r >> 33) % 64);
      const auto c = (r >> 20) % 3;
      if (c == 0) {
        auto old = m->put(0, k, i);
        auto it = ref.find(k);
        EXPECT_EQ(old, it == ref.end() ? std::nullopt : std::optional<std::int64_t>(it->second));
        ref[k] = i;
      } else if (c == 1) {
        auto old = m->erase(0, k);
        auto it = ref.find(k);
        EXPECT_EQ(old, it == ref.end() ? std::nullopt : std::optional<std::int64_t>(it->second));
        ref.erase(k);
      } else {
        auto it = ref.find(k);
        EXPECT_EQ(m->get(0, k), it == ref.end() ? std::nullopt : std::optional<std::int64_t>(it->second));
      }
    }
    m->sync();
    std::vector<std::pair<std::int64_t, std::int64_t>> want(ref.begin(), ref.end());
    EXPECT_EQ(m->contents(), want);
    if constexpr (!kPersistent<M>) {
      for (auto& [k, v] : ref) EXPECT_EQ(m->put(0, k, v + 1), v);  // and keeps working
    }
  }
  if constexpr (kPersistent<M>) {
    fm::HashMapOptions hm;
    hm.buckets = 8;
    auto m = restart<M>(pool, "h", 1, manual(), hm);
    std::vector<std::pair<std::int64_t, std::int64_t>> want(ref.begin(), ref.end());
    EXPECT_EQ(m->contents(), want);
    // The recovered map keeps working.
    for (auto& [k, v] : ref) EXPECT_EQ(m->put(0, k, v + 1), v);
  }
}

// Threads race (no crash); after a final sync, a clean restart must give
// back exactly the final state: every commit decision, anti-node and serial
// number made it into the pool.
TYPED_TEST(HashMapOn, AfterConcurrentUpdatesAndASyncARestartRecoversTheExactState) {
  using M = TypeParam;
  TempPool pool{"montage"};
  std::vector<std::pair<std::int64_t, std::int64_t>> final_state;
  fm::HashMapOptions hm;
  hm.buckets = 4;
  {
    auto m = make<M>(pool, "h", 3, manual(), hm);
    std::vector<std::thread> ts;
    for (int t = 0; t < 3; ++t)
      ts.emplace_back([&, t] {
        std::uint64_t r = static_cast<std::uint64_t>(t) + 1;
        for (int i = 0; i < 3000; ++i) {
          r = r * 6364136223846793005ull + 1442695040888963407ull;
          const auto k = static_cast<std::int64_t>((r >> 33) % 16);
          const auto c = (r >> 20) % 8;
          if (c < 3) m->put(t, k, i * 4 + t);
          else if (c < 6) m->erase(t, k);
          else if (c < 7) m->get(t, k);
          else m->sync();
        }
      });
    for (auto& th : ts) th.join();
    m->sync();
    final_state = m->contents();
    // One entry per key, each readable (on either system).
    for (std::size_t i = 1; i < final_state.size(); ++i) ASSERT_LT(final_state[i - 1].first, final_state[i].first);
    for (const auto& [k, v] : final_state) EXPECT_EQ(m->get(0, k), v);
  }
  if constexpr (kPersistent<M>) {
    auto m = restart<M>(pool, "h", 3, manual(), hm);
    EXPECT_EQ(m->contents(), final_state);
  }
}

TYPED_TEST(MSQueueOn, AfterConcurrentUpdatesAndASyncARestartRecoversTheExactState) {
  using Q = TypeParam;
  TempPool pool{"montage"};
  std::vector<std::int64_t> final_state;
  {
    auto q = make<Q>(pool, "q", 3, manual());
    std::vector<std::thread> ts;
    for (int t = 0; t < 3; ++t)
      ts.emplace_back([&, t] {
        std::uint64_t r = static_cast<std::uint64_t>(t) + 7;
        for (int i = 0; i < 3000; ++i) {
          r = r * 6364136223846793005ull + 1442695040888963407ull;
          const auto c = (r >> 20) % 8;
          if (c < 4) q->enqueue(t, i * 4 + t);
          else if (c < 7) q->dequeue(t);
          else q->sync();
        }
      });
    for (auto& th : ts) th.join();
    q->sync();
    final_state = q->contents();
    // What is left keeps each producer's order (on either system).
    std::int64_t last[4] = {-1, -1, -1, -1};
    for (const std::int64_t v : final_state) {
      EXPECT_GT(v, last[v % 4]) << "producer " << v % 4;
      last[v % 4] = v;
    }
  }
  if constexpr (kPersistent<Q>) {
    auto q = restart<Q>(pool, "q", 3, manual());
    EXPECT_EQ(q->contents(), final_state);
  }
}

}  // namespace epoch_test
