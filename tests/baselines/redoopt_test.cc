// RedoOpt (include/ferrite/baselines/redoopt.h): the sequential semantics of
// the four objects on its replicas, the verbs of one update and of a read,
// replica reuse by redo logs (no whole copy in steady state), pointers
// rebased across replicas, a failed batch, a clean restart, and restarts
// from hand-made images (the crash campaigns in redoopt_crash_test.cc cover
// the crashes themselves).
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "common/temp_pool.h"
#include "ferrite/baselines/redoopt.h"
#include "ferrite/baselines/romulus.h"
#include "ferrite/baselines/seq_objects.h"

namespace redoopt_test {  // this file's names, apart in a unity build

namespace fb = ferrite::baselines;
namespace fp = ferrite::persist;
using ferrite::test::TempPool;

namespace {

constexpr std::size_t kRegion = std::size_t{1} << 20;
fb::SeqParams params() { return {4, 16, 1024}; }
std::int64_t bits(double d) { return std::bit_cast<std::int64_t>(d); }

using Stack = fb::RedoOptObject<fb::SeqStack>;
using Queue = fb::RedoOptObject<fb::SeqQueue>;
using Heap = fb::RedoOptObject<fb::SeqHeap>;
using Float = fb::RedoOptObject<fb::SeqFloat>;

struct Verbs {
  std::uint64_t pwb, pfence, psync;
};
template <class F>
Verbs count(F&& f) {
  const auto before = fp::thread_counters();
  f();
  const auto d = fp::thread_counters() - before;
  return {d[fp::Verb::kPwb], d[fp::Verb::kPfence], d[fp::Verb::kPsync]};
}

}  // namespace

TEST(RedoOpt, StackIsLastInFirstOut) {
  TempPool pool("redo-stack");
  Stack s(*pool, "s", params(), kRegion);
  std::int64_t v = 0;
  EXPECT_FALSE(s.apply(0, false, 0, &v));
  for (std::int64_t x : {5, 1, 4, 2, 3}) EXPECT_FALSE(s.apply(1, true, x, &v));
  EXPECT_EQ(s.snapshot(), (std::vector<std::int64_t>{3, 2, 4, 1, 5}));
  std::vector<std::int64_t> out;
  while (s.apply(2, false, 0, &v)) out.push_back(v);
  EXPECT_EQ(out, (std::vector<std::int64_t>{3, 2, 4, 1, 5}));
}

TEST(RedoOpt, QueueIsFirstInFirstOutOnEveryReplica) {
  TempPool pool("redo-queue");
  Queue q(*pool, "q", params(), kRegion);
  std::int64_t v = 0;
  // Enough operations that every replica serves many batches: each keeps
  // its own pointers (rebased from the redo logs).
  std::vector<std::int64_t> want;
  for (int i = 0; i < 200; ++i) {
    q.apply(0, true, i, &v);
    want.push_back(i);
    if (i % 3 == 0) {
      ASSERT_TRUE(q.apply(1, false, 0, &v));
      EXPECT_EQ(v, want.front());
      want.erase(want.begin());
    }
    EXPECT_EQ(q.snapshot(), want);
  }
}

TEST(RedoOpt, HeapRemovesTheMinimumAndRefusesWhenFull) {
  TempPool pool("redo-heap");
  fb::SeqParams p = params();
  p.heap_capacity = 8;
  Heap h(*pool, "h", p, kRegion);
  std::int64_t v = 0;
  EXPECT_FALSE(h.apply(0, false, 0, &v));
  for (std::int64_t x : {50, 10, 40, 20, 30, 70, 60, 0}) h.apply(0, true, x, &v);
  h.apply(0, true, -5, &v);  // full: refused
  std::vector<std::int64_t> out;
  while (h.apply(1, false, 0, &v)) out.push_back(v);
  EXPECT_EQ(out, (std::vector<std::int64_t>{0, 10, 20, 30, 40, 50, 60, 70}));
}

TEST(RedoOpt, AReadRunsOnTheCurrentReplicaWithoutAVerb) {
  TempPool pool("redo-float");
  Float f(*pool, "f", params(), kRegion);
  std::int64_t v = 0;
  ASSERT_TRUE(f.apply(0, true, bits(2.0), &v));
  EXPECT_EQ(std::bit_cast<double>(v), 1.0);
  ASSERT_TRUE(f.apply(1, true, bits(1.5), &v));
  EXPECT_EQ(std::bit_cast<double>(v), 2.0);
  const Verbs d = count([&] { ASSERT_TRUE(f.apply(0, false, 0, &v)); });
  EXPECT_EQ(std::bit_cast<double>(v), 3.0);
  EXPECT_EQ(d.pwb + d.pfence + d.psync, 0u);
}

// Steady state, one thread, 2N = 8 replicas (N = 4; at one thread two of
// them alternate: C2 prefers the most recent): each update brings the replica
// up to date with the logs of the batches it missed (no whole copy), writes
// back every line changed in that replica once, one pfence, and curComb with
// one psync.
TEST(RedoOpt, AnUpdateCostsOnePfenceOnePsyncAndAPwbPerChangedLine) {
  TempPool pool("redo-verbs");
  Stack s(*pool, "s", params(), kRegion);
  Float f(*pool, "f", params(), kRegion);
  Heap h(*pool, "h", params(), kRegion);
  std::int64_t v = 0;
  for (int i = 0; i < 10; ++i) {
    s.apply(0, true, i, &v);
    f.apply(0, true, bits(1.0), &v);
    h.apply(0, true, 100 - i, &v);
  }
  const auto copies = s.ptm().copies();
  EXPECT_LE(copies, 2u);  // the two replicas that started invalid, once each
  Verbs push{}, pop{}, mul{}, ins{};
  constexpr int kOps = 40;
  for (int i = 0; i < kOps; ++i) {
    const Verbs a = count([&] { s.apply(0, true, i, &v); });
    const Verbs b = count([&] { s.apply(0, false, 0, &v); });
    const Verbs c = count([&] { f.apply(0, true, bits(1.0), &v); });
    const Verbs d = count([&] { h.apply(0, true, 50 + (i * 7) % 13, &v); });
    for (const Verbs* x : {&a, &b, &c, &d}) {
      EXPECT_EQ(x->pfence, 1u);
      EXPECT_EQ(x->psync, 1u);
    }
    push.pwb += a.pwb;
    pop.pwb += b.pwb;
    mul.pwb += c.pwb;
    ins.pwb += d.pwb;
  }
  EXPECT_EQ(s.ptm().copies(), copies);  // replica reuse: logs only
  EXPECT_GT(s.ptm().lines_replayed(), 0u);
  std::printf("[redoopt] pwb per op (1 thread, %d replicas): stack push %.2f, pop %.2f; float mul %.2f; "
              "heap insert (1k keys) %.2f\n",
              s.ptm().replicas(), static_cast<double>(push.pwb) / kOps, static_cast<double>(pop.pwb) / kOps,
              static_cast<double>(mul.pwb) / kOps, static_cast<double>(ins.pwb) / kOps);
  // The float: its value line and curComb, twice the value line at most
  // (the missed batch's line is the same line).
  EXPECT_EQ(mul.pwb, 2u * kOps);
  EXPECT_LE(push.pwb, 10u * kOps);
  EXPECT_LE(pop.pwb, 10u * kOps);
}

TEST(RedoOpt, FreedNodesAreReusedInsideTheReplica) {
  TempPool pool("redo-reuse");
  Queue q(*pool, "q", params(), kRegion);
  std::int64_t v = 0;
  for (int i = 0; i < 10; ++i) q.apply(0, true, i, &v);
  for (int i = 0; i < 10; ++i) q.apply(0, false, 0, &v);
  const std::uint64_t used = q.ptm().used(q.ptm().current());
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 10; ++i) q.apply(0, true, i, &v);
    for (int i = 0; i < 10; ++i) q.apply(0, false, 0, &v);
  }
  EXPECT_LE(q.ptm().used(q.ptm().current()), used + 64);
}

TEST(RedoOpt, AFailedBatchLeavesTheStateAndTheReplicaIsCopiedAnew) {
  TempPool pool("redo-abort");
  Stack s(*pool, "s", params(), 8192);  // the minimum: room for ~50 nodes
  std::int64_t v = 0;
  int pushed = 0;
  // Copies before the failing push: its batch's replica is copied anew
  // when next taken — by the retry that applies the push as failed (the
  // wait-free election records the exception as the operation's result),
  // or by a later push.
  std::uint64_t copies = 0;
  try {
    for (;; ++pushed) {
      copies = s.ptm().copies();
      s.apply(0, true, pushed, &v);
    }
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("region full"), std::string::npos) << e.what();
  }
  ASSERT_GT(pushed, 10);
  EXPECT_EQ(s.snapshot().size(), static_cast<std::size_t>(pushed));
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(s.apply(0, false, 0, &v));
    EXPECT_EQ(v, pushed - 1 - i);
  }
  for (int i = 0; i < 4; ++i) s.apply(0, true, 77 + i, &v);  // on the freed nodes
  EXPECT_GE(s.ptm().copies(), copies + 1);  // the failed batch's replica
  ASSERT_TRUE(s.apply(0, false, 0, &v));
  EXPECT_EQ(v, 80);
  EXPECT_EQ(s.snapshot().size(), static_cast<std::size_t>(pushed - 2));
}

TEST(RedoOpt, AStoreOutsideTheReplicaIsRefused) {
  TempPool pool("redo-outside");
  fb::RedoOpt<> ptm(*pool, "r", {1, kRegion, 2});
  std::uint64_t local = 0;
  const auto seq = ptm.seq();
  EXPECT_THROW(ptm.transaction([&](int k) { ptm.store(k, &local, std::uint64_t{1}); }), std::logic_error);
  EXPECT_EQ(ptm.seq(), seq);
}

TEST(RedoOpt, StateSurvivesACleanRestartAndTheOtherReplicasAreIgnored) {
  TempPool pool("redo-restart");
  std::int64_t v = 0;
  {
    Queue q(*pool, "q", params(), kRegion);
    Heap h(*pool, "h", params(), kRegion);
    Float f(*pool, "f", params(), kRegion);
    for (int i = 1; i <= 4; ++i) q.apply(0, true, i, &v);
    for (int i : {9, 7, 8}) h.apply(0, true, i, &v);
    f.apply(0, true, bits(4.0), &v);
    q.apply(0, false, 0, &v);
    // Garbage in every replica but curComb's: a restart never reads them.
    auto& ptm = q.ptm();
    for (int k = 0; k < ptm.replicas(); ++k)
      if (k != ptm.current()) std::memset(ptm.base(k), 0xA5, 64 * 1024);
  }
  pool.reopen();
  Queue q(*pool, "q", params(), kRegion);
  Heap h(*pool, "h", params(), kRegion);
  Float f(*pool, "f", params(), kRegion);
  EXPECT_EQ(q.snapshot(), (std::vector<std::int64_t>{2, 3, 4}));
  for (int i = 5; i <= 12; ++i) q.apply(0, true, i, &v);  // every replica in use again
  EXPECT_EQ(q.snapshot(), (std::vector<std::int64_t>{2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(h.snapshot(), (std::vector<std::int64_t>{7, 8, 9}));
  ASSERT_TRUE(f.apply(0, false, 0, &v));
  EXPECT_EQ(std::bit_cast<double>(v), 4.0);
}

TEST(RedoOpt, ARegionOfAnotherObjectTypeOrARootOfAnotherStructureIsRefused) {
  TempPool pool("redo-type");
  { Stack s(*pool, "x", params(), kRegion); }
  EXPECT_THROW(Queue(*pool, "x", params(), kRegion), std::runtime_error);
  { fb::RomulusObject<fb::SeqStack> r(*pool, "rom", params(), kRegion); }
  EXPECT_THROW(Stack(*pool, "rom", params(), kRegion), std::exception);
}

// The root's layout is version 2 (room for 256 replicas); a version-1 root
// (8 replica pointers) is refused by the pool's type check, and a root
// whose replica count or replica pointers are corrupt by RedoOpt's own.
struct RedoOptRootV1 {
  static constexpr std::uint32_t kTypeTag = fb::RedoOptRoot::kTypeTag;
  static constexpr std::uint32_t kTypeVersion = 1;
  alignas(64) std::uint64_t words[24] = {};
};
TEST(RedoOpt, AnOldLayoutRootOrACorruptReplicaCountIsRefused) {
  TempPool pool("redo-layout");
  pool->create_root<RedoOptRootV1>("old");
  try {
    Stack s(*pool, "old", params(), kRegion);
    ADD_FAILURE() << "a version-1 root was opened";
  } catch (const std::exception& e) {
    std::printf("[redoopt] version-1 root: %s\n", e.what());
  }
  { Stack s(*pool, "s", params(), kRegion); s.ptm().root()->replicas = 300; }
  try {
    Stack s(*pool, "s", params(), kRegion);
    ADD_FAILURE() << "300 replicas accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt root"), std::string::npos) << e.what();
  }
  { Stack s(*pool, "t", params(), kRegion); s.ptm().root()->replica[1] = nullptr; }
  try {
    Stack s(*pool, "t", params(), kRegion);
    ADD_FAILURE() << "a null replica accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt root"), std::string::npos) << e.what();
  }
}

// The default replica count: 2N for the wait-free election, 3 for the lock.
TEST(RedoOpt, TheWaitFreeElectionGetsTwoReplicasPerThread) {
  TempPool pool("redo-count");
  Stack s(*pool, "s", params(), kRegion);
  EXPECT_EQ(s.ptm().replicas(), 8);
  fb::RedoOptObject<fb::SeqStack, fb::kNoFaults, fb::RedoOptElection::kLock> l(*pool, "l", params(), kRegion);
  EXPECT_EQ(l.ptm().replicas(), 3);
  EXPECT_THROW(fb::RedoOpt<>(*pool, "big", {129, kRegion}), std::invalid_argument);  // 258 > 256
}

TEST(RedoOpt, ACorruptCurCombFailsInsteadOfGuessing) {
  TempPool pool("redo-corrupt");
  { Stack s(*pool, "s", params(), kRegion); s.ptm().root()->cur_comb.store(7); }
  EXPECT_THROW(Stack(*pool, "s", params(), kRegion), std::runtime_error);
}

}  // namespace redoopt_test
