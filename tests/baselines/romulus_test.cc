// RomulusLog (include/ferrite/baselines/romulus.h): the sequential
// semantics of the four objects inside its transactions, the twin copies,
// the in-region allocator, rollback of a failed batch, a clean restart, and
// recovery from each value of the state word (the crash campaigns in
// ptm_crash_test.cc cover the crashes themselves).
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "common/temp_pool.h"
#include "ferrite/baselines/romulus.h"
#include "ferrite/baselines/seq_objects.h"
#include "ferrite/pmem/root_registry.h"

namespace romulus_test {  // this file's names, apart in a unity build

namespace fb = ferrite::baselines;
using ferrite::test::TempPool;

namespace {

constexpr std::size_t kRegion = std::size_t{1} << 20;
fb::SeqParams params() { return {4, 16, 1024}; }
std::int64_t bits(double d) { return std::bit_cast<std::int64_t>(d); }

using Stack = fb::RomulusObject<fb::SeqStack>;
using Queue = fb::RomulusObject<fb::SeqQueue>;
using Heap = fb::RomulusObject<fb::SeqHeap>;
using Float = fb::RomulusObject<fb::SeqFloat>;

}  // namespace

TEST(RomulusLog, StackIsLastInFirstOut) {
  TempPool pool("rom-stack");
  Stack s(*pool, "s", params(), kRegion);
  std::int64_t v = 0;
  EXPECT_FALSE(s.apply(0, false, 0, &v));  // empty
  for (std::int64_t x : {5, 1, 4, 2, 3}) EXPECT_FALSE(s.apply(1, true, x, &v));
  EXPECT_EQ(s.snapshot(), (std::vector<std::int64_t>{3, 2, 4, 1, 5}));
  std::vector<std::int64_t> out;
  while (s.apply(2, false, 0, &v)) out.push_back(v);
  EXPECT_EQ(out, (std::vector<std::int64_t>{3, 2, 4, 1, 5}));
  EXPECT_TRUE(s.snapshot().empty());
}

TEST(RomulusLog, QueueIsFirstInFirstOut) {
  TempPool pool("rom-queue");
  Queue q(*pool, "q", params(), kRegion);
  std::int64_t v = 0;
  EXPECT_FALSE(q.apply(0, false, 0, &v));
  for (std::int64_t x : {5, 1, 4, 2, 3}) q.apply(0, true, x, &v);
  EXPECT_EQ(q.snapshot(), (std::vector<std::int64_t>{5, 1, 4, 2, 3}));
  std::vector<std::int64_t> out;
  while (q.apply(3, false, 0, &v)) out.push_back(v);
  EXPECT_EQ(out, (std::vector<std::int64_t>{5, 1, 4, 2, 3}));
  // The sentinel moved on: the queue still works after draining.
  q.apply(0, true, 9, &v);
  ASSERT_TRUE(q.apply(0, false, 0, &v));
  EXPECT_EQ(v, 9);
}

TEST(RomulusLog, HeapRemovesTheMinimumAndRefusesWhenFull) {
  TempPool pool("rom-heap");
  fb::SeqParams p = params();
  p.heap_capacity = 8;
  Heap h(*pool, "h", p, kRegion);
  std::int64_t v = 0;
  EXPECT_FALSE(h.apply(0, false, 0, &v));
  for (std::int64_t x : {50, 10, 40, 20, 30, 70, 60, 0}) h.apply(0, true, x, &v);
  EXPECT_EQ(h.snapshot().size(), 8u);
  h.apply(0, true, -5, &v);  // full: refused
  EXPECT_EQ(h.snapshot().size(), 8u);
  std::vector<std::int64_t> out;
  while (h.apply(1, false, 0, &v)) out.push_back(v);
  EXPECT_EQ(out, (std::vector<std::int64_t>{0, 10, 20, 30, 40, 50, 60, 70}));
}

TEST(RomulusLog, FloatMultipliesAndReadsWithoutAWriteTransaction) {
  TempPool pool("rom-float");
  Float f(*pool, "f", params(), kRegion);
  std::int64_t v = 0;
  ASSERT_TRUE(f.apply(0, false, 0, &v));
  EXPECT_EQ(std::bit_cast<double>(v), 1.0);
  ASSERT_TRUE(f.apply(0, true, bits(2.0), &v));
  EXPECT_EQ(std::bit_cast<double>(v), 1.0);  // the old value
  ASSERT_TRUE(f.apply(1, true, bits(1.5), &v));
  EXPECT_EQ(std::bit_cast<double>(v), 2.0);
  const auto persist_before = ferrite::persist::thread_counters();
  ASSERT_TRUE(f.apply(0, false, 0, &v));
  EXPECT_EQ(std::bit_cast<double>(v), 3.0);
  // A read is a read-only transaction: no state cycle, no verb.
  const auto d = ferrite::persist::thread_counters() - persist_before;
  EXPECT_EQ(d[ferrite::persist::Verb::kPwb] + d[ferrite::persist::Verb::kPfence] + d[ferrite::persist::Verb::kPsync], 0u);
}

TEST(RomulusLog, AWriteTransactionCostsFourFencesAndLeavesTheCopiesEqual) {
  TempPool pool("rom-fences");
  Stack s(*pool, "s", params(), kRegion);
  std::int64_t v = 0;
  s.apply(0, true, 1, &v);
  const auto before = ferrite::persist::thread_counters();
  s.apply(0, true, 2, &v);
  const auto d = ferrite::persist::thread_counters() - before;
  // R1 pfence, R4 pfence, R5 psync, R8 publish_fence (a pfence on hardware).
  EXPECT_EQ(d[ferrite::persist::Verb::kPfence] + d[ferrite::persist::Verb::kPsync], 4u);
  EXPECT_EQ(d[ferrite::persist::Verb::kPsync], 1u);
  EXPECT_EQ(s.ptm().state(), fb::RomulusRoot::kIdle);
  EXPECT_TRUE(s.ptm().copies_agree());
}

TEST(RomulusLog, FreedNodesAreReusedInsideTheRegion) {
  TempPool pool("rom-reuse");
  Queue q(*pool, "q", params(), kRegion);
  std::int64_t v = 0;
  for (int i = 0; i < 10; ++i) q.apply(0, true, i, &v);
  for (int i = 0; i < 10; ++i) q.apply(0, false, 0, &v);
  const std::uint64_t used = q.ptm().used();
  for (int round = 0; round < 100; ++round) {
    for (int i = 0; i < 10; ++i) q.apply(0, true, i, &v);
    for (int i = 0; i < 10; ++i) q.apply(0, false, 0, &v);
  }
  EXPECT_LE(q.ptm().used(), used + 64);  // at most the free list's slack, not 1000 nodes
  EXPECT_TRUE(q.ptm().copies_agree());
}

TEST(RomulusLog, AFullRegionFailsTheOperationAndRollsItBack) {
  TempPool pool("rom-full");
  Stack s(*pool, "s", params(), 4096);  // the minimum: room for ~100 nodes
  std::int64_t v = 0;
  int pushed = 0;
  try {
    for (;; ++pushed) s.apply(0, true, pushed, &v);
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("region full"), std::string::npos) << e.what();
  }
  ASSERT_GT(pushed, 10);
  EXPECT_EQ(s.ptm().state(), fb::RomulusRoot::kIdle);
  EXPECT_TRUE(s.ptm().copies_agree());
  EXPECT_EQ(s.snapshot().size(), static_cast<std::size_t>(pushed));
  ASSERT_TRUE(s.apply(0, false, 0, &v));  // still usable, and room again
  EXPECT_EQ(v, pushed - 1);
  s.apply(0, true, 77, &v);
  ASSERT_TRUE(s.apply(0, false, 0, &v));
  EXPECT_EQ(v, 77);
}

TEST(RomulusLog, AnExceptionInsideATransactionUndoesItsStores) {
  TempPool pool("rom-abort");
  fb::RomulusLog<> ptm(*pool, "r", {2, kRegion});
  std::uint64_t* cell = nullptr;
  ptm.transaction([&] {
    cell = static_cast<std::uint64_t*>(ptm.alloc(sizeof(std::uint64_t)));
    ptm.store(cell, std::uint64_t{41});
  });
  EXPECT_THROW(ptm.update(1, [&] {
    ptm.store(cell, std::uint64_t{42});
    throw std::runtime_error("abort");
  }),
               std::runtime_error);
  EXPECT_EQ(*cell, 41u);
  EXPECT_EQ(ptm.state(), fb::RomulusRoot::kIdle);
  EXPECT_TRUE(ptm.copies_agree());
}

TEST(RomulusLog, AStoreOutsideTheRegionIsRefused) {
  TempPool pool("rom-outside");
  fb::RomulusLog<> ptm(*pool, "r", {1, kRegion});
  std::uint64_t local = 0;
  EXPECT_THROW(ptm.transaction([&] { ptm.store(&local, std::uint64_t{1}); }), std::logic_error);
  EXPECT_EQ(ptm.state(), fb::RomulusRoot::kIdle);
}

TEST(RomulusLog, StateSurvivesACleanRestart) {
  TempPool pool("rom-restart");
  std::int64_t v = 0;
  {
    Queue q(*pool, "q", params(), kRegion);
    Heap h(*pool, "h", params(), kRegion);
    Float f(*pool, "f", params(), kRegion);
    for (int i = 1; i <= 4; ++i) q.apply(0, true, i, &v);
    for (int i : {9, 7, 8}) h.apply(0, true, i, &v);
    f.apply(0, true, bits(4.0), &v);
    q.apply(0, false, 0, &v);
  }
  pool.reopen();
  Queue q(*pool, "q", params(), kRegion);
  Heap h(*pool, "h", params(), kRegion);
  Float f(*pool, "f", params(), kRegion);
  EXPECT_EQ(q.snapshot(), (std::vector<std::int64_t>{2, 3, 4}));
  EXPECT_EQ(h.snapshot(), (std::vector<std::int64_t>{7, 8, 9}));
  ASSERT_TRUE(f.apply(0, false, 0, &v));
  EXPECT_EQ(std::bit_cast<double>(v), 4.0);
  EXPECT_TRUE(q.ptm().copies_agree());
}

TEST(RomulusLog, ARegionOfAnotherObjectTypeIsRefused) {
  TempPool pool("rom-type");
  { Stack s(*pool, "x", params(), kRegion); }
  EXPECT_THROW(Queue(*pool, "x", params(), kRegion), std::runtime_error);
}

// Recovery from each state word value, on images made by hand: the stack
// holds {1, 2, 3} (committed), then a crash is staged.
class RomulusRecovery : public ::testing::Test {
 protected:
  TempPool pool{"rom-recover", std::size_t{16} << 20};
  std::vector<std::int64_t> committed{3, 2, 1};

  fb::RomulusRoot* fill() {
    Stack s(*pool, "s", params(), kRegion);
    std::int64_t v = 0;
    for (int i = 1; i <= 3; ++i) s.apply(0, true, i, &v);
    EXPECT_EQ(s.snapshot(), committed);
    return s.ptm().root();
  }
  // The staged image, as a restarted process sees it.
  std::vector<std::int64_t> restart() {
    pool.reopen();
    Stack s(*pool, "s", params(), kRegion);
    EXPECT_EQ(s.ptm().state(), fb::RomulusRoot::kIdle);
    EXPECT_TRUE(s.ptm().copies_agree());
    std::int64_t v = 0;
    s.apply(0, true, 4, &v);  // usable after recovery
    EXPECT_TRUE(s.ptm().copies_agree());
    return s.snapshot();
  }
  // Overwrites the used part of a copy (past its header) with garbage.
  static void scribble(std::uint8_t* copy, std::uint64_t used) {
    std::memset(copy + fb::kRomulusHeaderBytes, 0xA5, used - fb::kRomulusHeaderBytes);
  }
};

TEST_F(RomulusRecovery, IdleKeepsMain) {
  fb::RomulusRoot* r = fill();
  r->state = fb::RomulusRoot::kIdle;
  // Back is not read in IDLE: garbage there is never copied over main.
  const auto used = reinterpret_cast<fb::RomulusRegion*>(r->main)->used;
  scribble(r->back, used);
  fb::romulus_recover(r);
  EXPECT_EQ(r->state, fb::RomulusRoot::kIdle);
  EXPECT_NE(std::memcmp(r->main, r->back, used), 0);  // IDLE touched nothing
  std::memcpy(r->back, r->main, used);                // restore the invariant for the restart
  EXPECT_EQ(restart(), (std::vector<std::int64_t>{4, 3, 2, 1}));
}

TEST_F(RomulusRecovery, MutatingRollsMainBackToBack) {
  fb::RomulusRoot* r = fill();
  // A transaction was writing main (garbage) when the crash came.
  r->state = fb::RomulusRoot::kMutating;
  scribble(r->main, reinterpret_cast<fb::RomulusRegion*>(r->back)->used);
  EXPECT_EQ(restart(), (std::vector<std::int64_t>{4, 3, 2, 1}));
}

TEST_F(RomulusRecovery, CopyingRollsBackForwardToMain) {
  fb::RomulusRoot* r = fill();
  // The batch committed; the copy to back was cut short.
  r->state = fb::RomulusRoot::kCopying;
  scribble(r->back, reinterpret_cast<fb::RomulusRegion*>(r->main)->used);
  EXPECT_EQ(restart(), (std::vector<std::int64_t>{4, 3, 2, 1}));
}

TEST_F(RomulusRecovery, RecoveryIsIdempotent) {
  fb::RomulusRoot* r = fill();
  r->state = fb::RomulusRoot::kMutating;
  scribble(r->main, reinterpret_cast<fb::RomulusRegion*>(r->back)->used);
  fb::romulus_recover(r);
  r->state = fb::RomulusRoot::kMutating;  // as if the crash came before IDLE was durable
  fb::romulus_recover(r);
  EXPECT_EQ(restart(), (std::vector<std::int64_t>{4, 3, 2, 1}));
}

TEST_F(RomulusRecovery, ACorruptStateWordFailsRecoveryInsteadOfGuessing) {
  fb::RomulusRoot* r = fill();
  r->state = 7;
  EXPECT_THROW(fb::romulus_recover(r), std::runtime_error);
  // The pool's recovery reports the root as failed (keeps every block).
  pool.reopen();
  ASSERT_NE(pool->recovery_report(), nullptr);
  EXPECT_FALSE(pool->recovery_report()->failed_roots.empty());
}

}  // namespace romulus_test
