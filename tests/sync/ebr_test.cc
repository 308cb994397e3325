#include "ferrite/sync/ebr.h"

#include "common/scale.h"
#include "ferrite/sync/backoff.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace ebr_test {  // this file's names, apart in a unity build

namespace fs = ferrite::sync;

namespace {


struct Counted {
  static inline std::atomic<int> live{0};
  Counted() { live.fetch_add(1); }
  ~Counted() { live.fetch_sub(1); }
};

struct FreeLog {
  std::vector<std::pair<void*, int>> freed;  // (pointer, freeing tid)
  static void fn(void* ctx, void* p, int tid) { static_cast<FreeLog*>(ctx)->freed.emplace_back(p, tid); }
};

}  // namespace

TEST(Ebr, RejectsBadThreadIds) {
  EXPECT_THROW(fs::Ebr(0), std::invalid_argument);
  fs::Ebr ebr(2);
  EXPECT_THROW((void)ebr.pin(2), std::out_of_range);
  EXPECT_THROW((void)ebr.pin(-1), std::out_of_range);
  int x = 0;
  EXPECT_THROW(ebr.retire(5, &x, FreeLog::fn, nullptr), std::out_of_range);
}

TEST(Ebr, RetiredNodeIsFreedOnlyAfterTwoEpochs) {
  FreeLog log;
  fs::Ebr ebr(2, /*collect_threshold=*/1000);
  int a = 0;
  const auto e0 = ebr.epoch();
  ebr.retire(0, &a, FreeLog::fn, &log);
  EXPECT_EQ(ebr.pending(0), 1u);
  ebr.collect(0);
  EXPECT_TRUE(log.freed.empty());  // same epoch: not yet
  ASSERT_TRUE(ebr.try_advance());
  ebr.collect(0);
  EXPECT_TRUE(log.freed.empty());  // one epoch later: still not
  ASSERT_TRUE(ebr.try_advance());
  ebr.collect(0);
  ASSERT_EQ(log.freed.size(), 1u);  // r + 2
  EXPECT_EQ(log.freed[0].first, &a);
  EXPECT_EQ(log.freed[0].second, 0);  // the collecting thread's tid
  EXPECT_EQ(ebr.epoch(), e0 + 2);
  EXPECT_EQ(ebr.pending(0), 0u);
}

TEST(Ebr, APinnedThreadBlocksReclamationUntilItUnpins) {
  FreeLog log;
  fs::Ebr ebr(2, 1000);
  int a = 0;
  {
    auto g = ebr.pin(1);
    {
      auto inner = ebr.pin(1);  // nesting: only the outer guard matters
    }
    ebr.retire(0, &a, FreeLog::fn, &log);
    EXPECT_FALSE(ebr.drain(0));  // thread 1 still pinned at an old epoch
    EXPECT_TRUE(log.freed.empty());
  }
  EXPECT_TRUE(ebr.drain(0));
  ASSERT_EQ(log.freed.size(), 1u);
  EXPECT_EQ(log.freed[0].first, &a);
}

TEST(Ebr, DestructorFreesEverythingStillRetired) {
  Counted::live = 0;
  {
    fs::Ebr ebr(3, 1000);
    for (int t = 0; t < 3; ++t)
      for (int i = 0; i < 10; ++i) ebr.retire(t, new Counted);
    EXPECT_EQ(Counted::live.load(), 30);
  }
  EXPECT_EQ(Counted::live.load(), 0);
}

TEST(Ebr, GuardMovesAndResets) {
  fs::Ebr ebr(1, 1000);
  FreeLog log;
  int a = 0;
  auto g = ebr.pin(0);
  fs::Ebr::Guard h = std::move(g);
  EXPECT_FALSE(g);
  EXPECT_TRUE(h);
  ebr.retire(0, &a, FreeLog::fn, &log);
  h.reset();
  EXPECT_TRUE(ebr.drain(0));
  EXPECT_EQ(log.freed.size(), 1u);
}

// Reclamation safety under concurrency: writers swap a shared pointer and
// retire the old node; the deleter poisons the node before freeing it.
// Readers pin, load the pointer and check the canary. A premature free is
// seen as a poisoned canary (plain build), a heap-use-after-free (ASan) or a
// data race on `canary` (TSan).
TEST(Ebr, ConcurrentReadersNeverSeeAFreedNode) {
  struct Node {
    std::uint64_t canary;
    std::uint64_t value;
  };
  constexpr std::uint64_t kAlive = 0xA11FEA11FEull, kDead = 0xDEADDEADull;
  constexpr int kThreads = 4;
  const int iters = static_cast<int>(20000 * ferrite::test::scale());

  fs::Ebr ebr(kThreads, 2);
  std::atomic<Node*> shared{new Node{kAlive, 0}};
  std::atomic<long> allocated{1}, freed{0};
  std::atomic<int> bad{0};
  struct Ctx {
    std::atomic<long>* freed;
  } ctx{&freed};
  auto free_fn = [](void* c, void* p, int) {
    auto* n = static_cast<Node*>(p);
    n->canary = kDead;  // a reader still holding n would race with this
    delete n;
    static_cast<Ctx*>(c)->freed->fetch_add(1, std::memory_order_relaxed);
  };

  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < iters; ++i) {
        if ((i + t) % 2 == 0) {  // writer step
          Node* fresh = new Node{kAlive, static_cast<std::uint64_t>(i)};
          allocated.fetch_add(1, std::memory_order_relaxed);
          Node* old;
          {
            auto g = ebr.pin(t);
            old = shared.exchange(fresh, std::memory_order_acq_rel);
          }
          ebr.retire(t, old, free_fn, &ctx);
        } else {  // reader step
          auto g = ebr.pin(t);
          Node* n = shared.load(std::memory_order_acquire);
          // Hold the node for a while so a premature free has a window.
          for (int k = 0; k < 200; ++k) {
            if (n->canary != kAlive) bad.fetch_add(1, std::memory_order_relaxed);
            fs::cpu_relax();
          }
        }
      }
    });
  }
  for (auto& th : ts) th.join();
  EXPECT_EQ(bad.load(), 0);
  // Reclamation actually happens while running (not only at destruction).
  EXPECT_GT(freed.load(), 0);
  for (int t = 0; t < kThreads; ++t) EXPECT_TRUE(ebr.drain(t));
  EXPECT_EQ(freed.load(), allocated.load() - 1);  // all but the current node
  delete shared.load();
}

}  // namespace ebr_test
