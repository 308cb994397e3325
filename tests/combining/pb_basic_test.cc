// Sequential and restart tests of PBcomb and the structures on it:
// semantics against a reference, persistence across close/reopen,
// detectable recovery answers, error handling, persistence-verb counts.
#include <gtest/gtest.h>

#include <bit>
#include <cstdio>
#include <deque>
#include <fstream>
#include <iterator>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ferrite/combining/atomic_float.h"
#include "ferrite/combining/detectable.h"
#include "ferrite/combining/pb_heap.h"
#include "ferrite/combining/pb_queue.h"
#include "ferrite/combining/pb_stack.h"
#include "common/temp_pool.h"

namespace pb_basic_test {  // this file's names, apart in a unity build

namespace fc = ferrite::combining;
using fc::OpCode;
using ferrite::test::TempPool;

TEST(PBCombFloat, MulReturnsOldValueAndSurvivesReopen) {
  TempPool tp("float");
  {
    auto f = fc::PBAtomicFloat<>::create(*tp, "f", 2);
    EXPECT_EQ(f->mul(0, 1, 2.0), 1.0);
    EXPECT_EQ(f->mul(1, 1, 3.0), 2.0);
    EXPECT_EQ(f->mul(0, 2, 0.5), 6.0);
    EXPECT_EQ(f->value(), 3.0);
  }
  tp.reopen();
  auto f = fc::PBAtomicFloat<>::attach(*tp, "f", 2);
  EXPECT_EQ(f->value(), 3.0);
  // Detectable recovery: (0, 2) took effect -> same response, not re-applied.
  EXPECT_EQ(f->recover(0, 2, OpCode::kMul, 0.5), 6.0);
  EXPECT_EQ(f->value(), 3.0);
  // (1, 2) never ran -> recover runs it.
  EXPECT_EQ(f->recover(1, 2, OpCode::kMul, 10.0), 3.0);
  EXPECT_EQ(f->value(), 30.0);
  // The handle's own seq continues after the recovered one.
  EXPECT_EQ(f->mul(1, 1.0), 30.0);
}

TEST(PBCombFloat, RejectsBadArguments) {
  TempPool tp("floatbad");
  auto f = fc::PBAtomicFloat<>::create(*tp, "f", 2);
  EXPECT_THROW(f->mul(2, 1, 2.0), std::out_of_range);
  EXPECT_THROW(f->mul(-1, 1, 2.0), std::out_of_range);
  f->mul(0, 1, 2.0);
  // Same parity twice in a row: the request would look served already.
  EXPECT_THROW(f->mul(0, 3, 2.0), std::invalid_argument);
  f.reset();
  EXPECT_THROW(fc::PBAtomicFloat<>::attach(*tp, "f", 3), std::invalid_argument);
  EXPECT_THROW(fc::PBAtomicFloat<>::attach(*tp, "nope", 2), ferrite::pmem::PoolError);
  EXPECT_THROW(fc::PBStack<>::attach(*tp, "f", 2), ferrite::pmem::PoolError);  // wrong type
}

TEST(PBCombFloat, PersistenceVerbsPerRound) {
  TempPool tp("floatcount");
  auto f = fc::PBAtomicFloat<>::create(*tp, "f", 4);
  ferrite::persist::reset_counters();
  const auto before = ferrite::persist::thread_counters();
  for (std::uint64_t s = 1; s <= 100; ++s) f->mul(0, s, 1.5);
  const auto d = ferrite::persist::thread_counters() - before;
  // One stamped round per op single-threaded: pwb(rec) (the 16-byte stamp,
  // responses, tags and state: 16 + 32 + 4 -> 56 + 8 = 64 bytes, one line),
  // no pfence (no node), one psync. The paper's round: pwb(rec), pfence,
  // pwb(MIndex), psync.
  EXPECT_EQ(d[ferrite::persist::Verb::kPwb], 100u);
  EXPECT_EQ(d[ferrite::persist::Verb::kPfence], 0u);
  EXPECT_EQ(d[ferrite::persist::Verb::kPsync], 100u);
  auto paper = fc::PBAtomicFloat<fc::kPaperRound>::create(*tp, "paper", 4);
  const auto before_paper = ferrite::persist::thread_counters();
  for (std::uint64_t s = 1; s <= 100; ++s) paper->mul(0, s, 1.5);
  const auto dp = ferrite::persist::thread_counters() - before_paper;
  EXPECT_EQ(dp[ferrite::persist::Verb::kPwb], 200u);
  EXPECT_EQ(dp[ferrite::persist::Verb::kPfence], 100u);
  EXPECT_EQ(dp[ferrite::persist::Verb::kPsync], 100u);
  EXPECT_DOUBLE_EQ(f->combining_degree(), 1.0);
}

// Layout v3: a round writes back the head line (stamp, state) and only the
// entry lines it changed. An 8-thread PBQueue's record: head + state in
// line 0 with threads 0-1's (response, tag) pairs, threads 2-5 in line 1,
// 6-7 in line 2. A dequeue touches no node.
TEST(PBQueue, RoundWritesBackOnlyTheLinesItChanged) {
  TempPool tp("qlines");
  auto q = fc::PBQueue<>::create(*tp, "q", 8);
  std::uint64_t seq0 = 0, seq7 = 0;
  for (int i = 1; i <= 200; ++i) q->enqueue(0, ++seq0, i);
  auto lines_per_dequeue = [&](int tid, std::uint64_t& seq) {
    q->dequeue(tid, ++seq);  // warm: both records hold this thread's last pair
    q->dequeue(tid, ++seq);
    const auto before = ferrite::persist::thread_counters();
    for (int i = 0; i < 50; ++i) q->dequeue(tid, ++seq);
    const auto d = ferrite::persist::thread_counters() - before;
    EXPECT_EQ(d[ferrite::persist::Verb::kPsync], 50u);
    return d[ferrite::persist::Verb::kPwb];
  };
  EXPECT_EQ(lines_per_dequeue(0, seq0), 50u);   // line 0 only
  EXPECT_EQ(lines_per_dequeue(7, seq7), 100u);  // line 0 (stamp, head) + line 2 (thread 7's pair)
  // The paper's round writes back the whole record and MIndex: 3 + 1 lines.
  auto paper = fc::PBQueue<fc::kPaperRound>::create(*tp, "paper", 8);
  std::uint64_t ps = 0;
  for (int i = 1; i <= 10; ++i) paper->enqueue(0, ++ps, i);
  const auto before = ferrite::persist::thread_counters();
  for (int i = 0; i < 5; ++i) paper->dequeue(0, ++ps);
  EXPECT_EQ((ferrite::persist::thread_counters() - before)[ferrite::persist::Verb::kPwb], 20u);
}

TEST(PBStack, LifoAndReopen) {
  TempPool tp("stack");
  {
    auto s = fc::PBStack<>::create(*tp, "s", 2);
    for (int i = 1; i <= 100; ++i) s->push(0, static_cast<std::uint64_t>(i), i * 10);
    for (int i = 100; i > 50; --i) EXPECT_EQ(s->pop(1, static_cast<std::uint64_t>(101 - i)), i * 10);
    EXPECT_EQ(s->values().size(), 50u);
  }
  tp.reopen();
  auto s = fc::PBStack<>::attach(*tp, "s", 2);
  auto v = s->values();
  ASSERT_EQ(v.size(), 50u);
  EXPECT_EQ(v.front(), 500);
  EXPECT_EQ(v.back(), 10);
  EXPECT_EQ(tp->heap().stats().blocks_live >= 50u, true);
  for (int i = 50; i >= 1; --i) EXPECT_EQ(s->pop(1), i * 10);
  EXPECT_EQ(s->pop(1), std::nullopt);
}

// The top cache holds the topmost value: 8 pushes create 7 nodes (the
// paper's state, kNoTopCache: 8). Popped nodes come back in allocation order.
template <unsigned F>
void recycling_reuses_nodes_in_allocation_order(std::size_t nodes) {
  TempPool tp("stackrec");
  auto s = fc::PBStack<F>::create(*tp, "s", 1);
  std::uint64_t seq = 0;
  for (int i = 0; i < 8; ++i) s->push(0, ++seq, i);
  std::vector<const fc::PBStackNode*> first;
  for (const auto* n = s->top(); n != nullptr; n = n->next) first.push_back(n);
  EXPECT_EQ(first.size(), nodes);
  EXPECT_EQ(s->values(), (std::vector<std::int64_t>{7, 6, 5, 4, 3, 2, 1, 0}));
  for (int i = 0; i < 8; ++i) s->pop(0, ++seq);
  EXPECT_EQ(s->object().recycled(), nodes);
  for (int i = 0; i < 8; ++i) s->push(0, ++seq, 100 + i);
  std::vector<const fc::PBStackNode*> second;
  for (const auto* n = s->top(); n != nullptr; n = n->next) second.push_back(n);
  EXPECT_EQ(first, second);  // same nodes at the same depths
  EXPECT_EQ(s->object().recycled(), 0u);
  // Consecutive allocation: ascending addresses from bottom to top.
  for (std::size_t i = 1; i < second.size(); ++i) EXPECT_GT(second[i - 1], second[i]);
}
TEST(PBStack, RecyclingReusesNodesInAllocationOrder) { recycling_reuses_nodes_in_allocation_order<0>(7); }
TEST(PBStack, RecyclingReusesNodesInAllocationOrderWithoutTheTopCache) {
  recycling_reuses_nodes_in_allocation_order<fc::kNoTopCache>(8);
}

// The top cache: at one thread, push/pop pairs write back the record's one
// line per operation and fence nothing (the paper's state: a push also
// writes back its node and fences: 1.5 pwb and 0.5 pfence per operation).
TEST(PBStack, PushPopPairsWriteBackOneLinePerOperation) {
  TempPool tp("stacklines");
  auto count = [&](auto& s) {
    std::uint64_t seq = 0;
    s->push(0, ++seq, 1);  // a value below the pairs: pops never find the stack empty
    s->push(0, ++seq, 2);
    s->pop(0, ++seq);
    const auto before = ferrite::persist::thread_counters();
    for (int i = 0; i < 50; ++i) {
      s->push(0, ++seq, 10 + i);
      EXPECT_EQ(s->pop(0, ++seq), 10 + i);
    }
    return ferrite::persist::thread_counters() - before;
  };
  auto cached = fc::PBStack<>::create(*tp, "c", 2);
  const auto c = count(cached);
  EXPECT_EQ(c[ferrite::persist::Verb::kPwb], 100u);
  EXPECT_EQ(c[ferrite::persist::Verb::kPfence], 0u);
  EXPECT_EQ(c[ferrite::persist::Verb::kPsync], 100u);
  EXPECT_EQ(cached->values(), std::vector<std::int64_t>{1});
  auto plain = fc::PBStack<fc::kNoTopCache>::create(*tp, "p", 2);
  const auto p = count(plain);
  EXPECT_EQ(p[ferrite::persist::Verb::kPwb], 150u);
  EXPECT_EQ(p[ferrite::persist::Verb::kPfence], 50u);
  EXPECT_EQ(p[ferrite::persist::Verb::kPsync], 100u);
}

// A pool written with one stack state layout refuses the other's attach
// with a clear error (the state size is in the persistent root).
TEST(PBStack, TheTopCacheAndThePapersStateDoNotAttachToEachOther) {
  TempPool tp("stackkinds");
  fc::PBStack<>::create(*tp, "c", 2)->push(0, 1, 5);
  fc::PBStack<fc::kNoTopCache>::create(*tp, "p", 2);
  EXPECT_THROW(fc::PBStack<fc::kNoTopCache>::attach(*tp, "c", 2), std::invalid_argument);
  EXPECT_THROW(fc::PBStack<>::attach(*tp, "p", 2), std::invalid_argument);
  EXPECT_EQ(fc::PBStack<>::attach(*tp, "c", 2)->values(), std::vector<std::int64_t>{5});
}

TEST(PBStack, RecoverAnswersPendingOps) {
  TempPool tp("stackrecov");
  {
    auto s = fc::PBStack<>::create(*tp, "s", 2);
    s->push(0, 1, 7);
    s->push(0, 2, 8);
    EXPECT_EQ(s->pop(1, 1), 8);
  }
  tp.reopen();
  auto s = fc::PBStack<>::attach(*tp, "s", 2);
  EXPECT_EQ(s->recover(1, 1, OpCode::kPop, 0), fc::value_word(8));  // took effect
  EXPECT_EQ(s->values(), std::vector<std::int64_t>{7});
  EXPECT_EQ(s->recover(1, 2, OpCode::kPop, 0), fc::value_word(7));  // did not: runs now
  EXPECT_EQ(s->recover(1, 2, OpCode::kPop, 0), fc::value_word(7));  // idempotent
  EXPECT_TRUE(s->values().empty());
  EXPECT_EQ(s->recover(0, 3, OpCode::kPush, 9), fc::kAckWord);
  EXPECT_EQ(s->values(), std::vector<std::int64_t>{9});
  EXPECT_THROW(s->push(0, 4, fc::kMinValue - 1), std::invalid_argument);
}

TEST(PBQueue, FifoReopenAndRecover) {
  TempPool tp("queue");
  {
    auto q = fc::PBQueue<>::create(*tp, "q", 2);
    std::uint64_t seq = 0;
    for (int i = 1; i <= 100; ++i) q->enqueue(0, ++seq, i);
    std::uint64_t seq1 = 0;
    for (int i = 1; i <= 40; ++i) EXPECT_EQ(q->dequeue(1, ++seq1), i);
    // Interleaving enqueue/dequeue on one thread: seq parity per instance
    // does not alternate, full-seq tags handle it.
    q->enqueue(1, ++seq1, 101);
    EXPECT_EQ(q->dequeue(1, ++seq1), 41);
    q->enqueue(1, ++seq1, 102);
    q->enqueue(1, ++seq1, 103);
    EXPECT_EQ(q->dequeue(1, ++seq1), 42);
  }
  tp.reopen();
  auto q = fc::PBQueue<>::attach(*tp, "q", 2);
  auto v = q->values();
  ASSERT_EQ(v.size(), 61u);
  EXPECT_EQ(v.front(), 43);
  EXPECT_EQ(v.back(), 103);
  // Thread 1's last op (seq 45) was a dequeue answering 42.
  EXPECT_EQ(q->recover(1, 45, OpCode::kDequeue, 0), fc::value_word(42));
  EXPECT_EQ(q->recover(1, 46, OpCode::kDequeue, 0), fc::value_word(43));
  EXPECT_EQ(q->recover(0, 101, OpCode::kEnqueue, 104), fc::kAckWord);
  v = q->values();
  EXPECT_EQ(v.size(), 61u);
  EXPECT_EQ(v.back(), 104);
  for (int i = 44; i <= 104; ++i) EXPECT_EQ(q->dequeue(1), i);
  EXPECT_EQ(q->dequeue(1), std::nullopt);
  EXPECT_EQ(q->head(), q->tail());
}

TEST(PBQueue, FreeListReusesDequeuedNodesButNotTheDummy) {
  TempPool tp("queuefree");
  auto q = fc::PBQueue<>::create(*tp, "q", 1);
  std::uint64_t seq = 0;
  for (int i = 0; i < 4; ++i) q->enqueue(0, ++seq, i);
  const auto live0 = tp->heap().stats().blocks_live;
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 4; ++i) EXPECT_EQ(q->dequeue(0, ++seq), i);
    for (int i = 0; i < 4; ++i) q->enqueue(0, ++seq, i);
  }
  // Steady state: nodes come from the free list, the heap does not grow.
  EXPECT_LE(tp->heap().stats().blocks_live, live0 + 1);
  EXPECT_EQ(q->values(), (std::vector<std::int64_t>{0, 1, 2, 3}));
}

TEST(PBHeap, MatchesReferenceAndPersistsUsedPrefixOnly) {
  TempPool tp("heap");
  const int cap = 256;
  {
    auto h = fc::PBHeap<>::create(*tp, "h", 1, cap);
    std::priority_queue<std::int64_t, std::vector<std::int64_t>, std::greater<>> ref;
    std::mt19937_64 rng(7);
    std::uint64_t seq = 0;
    for (int i = 0; i < 5000; ++i) {
      const auto r = rng() % 3;
      if (r < 2) {
        const std::int64_t k = static_cast<std::int64_t>(rng() % 1000) - 500;
        const bool ok = h->insert(0, ++seq, k);
        EXPECT_EQ(ok, ref.size() < static_cast<std::size_t>(cap));
        if (ok) ref.push(k);
      } else {
        auto m = h->delete_min(0, ++seq);
        if (ref.empty()) {
          EXPECT_EQ(m, std::nullopt);
        } else {
          EXPECT_EQ(m, ref.top());
          ref.pop();
        }
      }
      ASSERT_EQ(h->size(), ref.size());
    }
    EXPECT_TRUE(h->heap_ordered());
    // Drain to 3 keys, then count lines per round: stamp + responses + tags +
    // size + 3 keys fit in one line; the whole array would be 33 lines.
    while (h->size() > 3) h->delete_min(0, ++seq);
    const auto before = ferrite::persist::thread_counters();
    h->get_min(0, ++seq);
    const auto d = ferrite::persist::thread_counters() - before;
    EXPECT_EQ(d[ferrite::persist::Verb::kPwb], 1u);  // the stamp + the StateRec prefix: one line, no MIndex
  }
  tp.reopen();
  auto h = fc::PBHeap<>::attach(*tp, "h", 1);
  EXPECT_EQ(h->size(), 3u);
  EXPECT_TRUE(h->heap_ordered());
  EXPECT_THROW(fc::PBHeap<>::create(*tp, "h2", 1, 63), std::invalid_argument);
  EXPECT_THROW(fc::PBHeap<>::create(*tp, "h3", 1, 1025), std::invalid_argument);
}

// Layout v5: a 1024-key heap's round copies, writes back and rehashes only
// the state lines its sifts stored to (and the previous round's: the record
// it writes is two rounds old), not the whole used prefix as the paper's
// round does. Both records must verify after every round (the incremental
// checksum equals the full one), the current one must hold the reference's
// keys, and a reopen must find the newest round.
TEST(PBHeap, RoundWritesBackOnlyTheLinesItsSiftsStoredTo) {
  TempPool tp("heaplines");
  const int cap = 1024;
  std::vector<std::int64_t> want;
  {
    auto h = fc::PBHeap<>::create(*tp, "h", 1, cap);
    const fc::RecLayout l{1, fc::TagKind::kBit, fc::PBHeapObject(cap).state_bytes()};
    std::multiset<std::int64_t> ref;
    std::mt19937_64 rng(11);
    std::uint64_t seq = 0;
    for (int i = 0; i < 600; ++i) {
      const auto k = static_cast<std::int64_t>(rng() % 100000);
      ASSERT_TRUE(h->insert(0, ++seq, k));
      ref.insert(k);
    }
    std::uint64_t pwb = 0, ops = 0;
    for (int i = 0; i < 3000; ++i) {
      const auto before = ferrite::persist::thread_counters();
      if (rng() % 2 == 0) {
        const auto k = static_cast<std::int64_t>(rng() % 100000);
        ASSERT_TRUE(h->insert(0, ++seq, k));
        ref.insert(k);
      } else {
        ASSERT_EQ(h->delete_min(0, ++seq), *ref.begin());
        ref.erase(ref.begin());
      }
      pwb += (ferrite::persist::thread_counters() - before)[ferrite::persist::Verb::kPwb];
      ++ops;
      ASSERT_TRUE(fc::rec_valid(static_cast<const char*>(h->comb().rec(0)), l)) << "op " << i;
      ASSERT_TRUE(fc::rec_valid(static_cast<const char*>(h->comb().rec(1)), l)) << "op " << i;
      if (i % 97 == 0) {
        ASSERT_EQ(h->sorted(), std::vector<std::int64_t>(ref.begin(), ref.end())) << "op " << i;
      }
    }
    // ~600 keys: the used prefix is ~76 lines, what the paper's round writes
    // back; a sift path touches ~10 lines, two rounds' paths ~20.
    const double per_op = static_cast<double>(pwb) / static_cast<double>(ops);
    EXPECT_LT(per_op, 20.0);
    EXPECT_GT(per_op, 2.0);
    std::printf("[pb-heap] 1024 keys, ~600 used: %.2f pwb per round\n", per_op);
    want.assign(ref.begin(), ref.end());
    EXPECT_EQ(h->sorted(), want);
  }
  tp.reopen();
  auto h = fc::PBHeap<>::attach(*tp, "h", 1);
  EXPECT_EQ(h->sorted(), want);
  EXPECT_TRUE(h->heap_ordered());
}

TEST(OpLog, BeginPersistsAndPendingReturnsLatest) {
  TempPool tp("oplog");
  {
    auto log = fc::OpLog::create(*tp, "log", 2);
    EXPECT_EQ(log.pending(0), std::nullopt);
    EXPECT_EQ(log.begin(0, OpCode::kEnqueue, 5), 1u);
    EXPECT_EQ(log.begin(0, OpCode::kDequeue, 0), 2u);
    EXPECT_EQ(log.begin(1, OpCode::kEnqueue, 9), 1u);
  }
  tp.reopen();
  auto log = fc::OpLog::attach(*tp, "log", 2);
  auto p0 = log.pending(0);
  ASSERT_TRUE(p0.has_value());
  EXPECT_EQ(p0->seq, 2u);
  EXPECT_EQ(p0->op, static_cast<std::uint32_t>(OpCode::kDequeue));
  auto p1 = log.pending(1);
  ASSERT_TRUE(p1.has_value());
  EXPECT_EQ(p1->arg, 9);
  EXPECT_THROW(fc::OpLog::attach(*tp, "log", 3), std::invalid_argument);
  EXPECT_THROW(log.begin(2, OpCode::kEnqueue, 1), std::out_of_range);
}

// The thread count at creation is a capacity: attach asks for any 1..n;
// begin takes the attach's ids, pending every id of the capacity (a wider
// run's pending operation stays readable); more than n throws naming both.
TEST(OpLog, AttachesForFewerThreadsThanItsCapacity) {
  TempPool tp("oplog-cap");
  {
    auto log = fc::OpLog::create(*tp, "log", 8);
    EXPECT_EQ(log.threads(), 8);
    EXPECT_EQ(log.max_threads(), 8);
    EXPECT_EQ(log.begin(0, OpCode::kEnqueue, 1), 1u);
    EXPECT_EQ(log.begin(5, OpCode::kEnqueue, 55), 1u);
    EXPECT_EQ(log.begin(5, OpCode::kDequeue, 0), 2u);
    EXPECT_EQ(log.begin(7, OpCode::kEnqueue, 77), 1u);
  }
  tp.reopen();
  for (const int n : {4, 1}) {
    auto log = fc::OpLog::attach(*tp, "log", n);
    EXPECT_EQ(log.threads(), n);
    EXPECT_EQ(log.max_threads(), 8);
    const auto p5 = log.pending(5);
    ASSERT_TRUE(p5.has_value());
    EXPECT_EQ(p5->seq, 2u);
    EXPECT_EQ(p5->op, static_cast<std::uint32_t>(OpCode::kDequeue));
    EXPECT_EQ(log.last_seq(7), 1u);
    EXPECT_EQ(log.pending(7)->arg, 77);
    EXPECT_EQ(log.pending(6), std::nullopt);
    EXPECT_THROW(log.begin(n, OpCode::kEnqueue, 1), std::out_of_range);
    EXPECT_THROW(log.begin(5, OpCode::kEnqueue, 1), std::out_of_range);
    EXPECT_THROW(log.pending(8), std::out_of_range);
    EXPECT_EQ(log.begin(0, OpCode::kEnqueue, n), n == 4 ? 2u : 3u);
  }
  try {
    (void)fc::OpLog::attach(*tp, "log", 9);
    ADD_FAILURE() << "attach for 9 threads of a log created for 8 did not throw";
  } catch (const std::invalid_argument& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("at most 8 threads"), std::string::npos) << w;
    EXPECT_NE(w.find("asked for 9"), std::string::npos) << w;
  }
  EXPECT_THROW(fc::OpLog::attach(*tp, "log", -1), std::invalid_argument);
  // kAsCreated (0, attach's default): every id of the capacity.
  EXPECT_EQ(fc::OpLog::attach(*tp, "log", ferrite::kAsCreated).threads(), 8);
  EXPECT_EQ(fc::OpLog::attach(*tp, "log").threads(), 8);
  // The limit of 64 (kMaxThreads) is a capacity too.
  EXPECT_THROW(fc::OpLog::create(*tp, "wide", 65), std::invalid_argument);
  {
    auto log = fc::OpLog::create(*tp, "wide", 64);
    EXPECT_EQ(log.begin(63, OpCode::kPush, 6), 1u);
  }
  auto wide = fc::OpLog::attach(*tp, "wide", 1);
  EXPECT_EQ(wide.pending(63)->arg, 6);
  EXPECT_THROW(fc::OpLog::attach(*tp, "wide", 65), std::invalid_argument);
}



// Open never follows a damaged pointer (issue: a flipped byte in a node's
// next pointer crashed the consumer with SIGSEGV): the queue's recovery hook
// validates every node it reaches, the pool keeps every block and leaves the
// queue closed with a message naming the offset, and the pool's other roots
// open as usual.
namespace damaged_queue {
struct Other {
  static constexpr std::uint32_t kTypeTag = 0x7E5A0201;
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "test::Other";
  std::uint64_t value = 0;
};
}  // namespace damaged_queue

TEST(PBQueueDamage, AFlippedNextPointerLeavesTheQueueClosedWithItsOffsetNamed) {
  using ferrite::pmem::Errc;
  using ferrite::pmem::Pool;
  using ferrite::pmem::PoolError;
  ferrite::test::TempPath p("pbq-damage");
  std::uintptr_t next_field = 0;
  {
    auto pool = Pool::create(p, std::size_t{4} << 20);
    auto q = fc::PBQueue<>::create(*pool, "jobs", 2);
    for (int i = 1; i <= 10; ++i) q->enqueue(0, i);
    pool->create_root<damaged_queue::Other>("other")->value = 7;
    ferrite::persist::persist_range(pool->root<damaged_queue::Other>("other"), 8);
    // The third node's next pointer.
    const auto* n = q->head()->next.load()->next.load()->next.load();
    next_field = reinterpret_cast<std::uintptr_t>(&n->next) - reinterpret_cast<std::uintptr_t>(pool->base());
  }
  for (const unsigned char flip : {0x01, 0x10, 0x80}) {
    SCOPED_TRACE(static_cast<int>(flip));
    {
      std::FILE* f = std::fopen(p.path.c_str(), "r+b");
      ASSERT_NE(f, nullptr);
      std::fseek(f, static_cast<long>(next_field + 1), SEEK_SET);
      const int c = std::fgetc(f);
      std::fseek(f, static_cast<long>(next_field + 1), SEEK_SET);
      std::fputc(c ^ flip, f);
      std::fclose(f);
    }
    // ferrite check's deep check names it too, and writes nothing.
    {
      std::ifstream before_f(p.path, std::ios::binary);
      const std::string before((std::istreambuf_iterator<char>(before_f)), std::istreambuf_iterator<char>());
      const auto shallow = ferrite::pmem::check_pool(p.path, false);
      EXPECT_TRUE(shallow.ok && !shallow.deep_ran && shallow.damaged_roots.empty());
      const auto deep = ferrite::pmem::check_pool(p.path, true);
      ASSERT_TRUE(deep.ok) << deep.message;
      EXPECT_TRUE(deep.deep_ran) << deep.deep_skipped;
      ASSERT_EQ(deep.damaged_roots.size(), 1u);
      EXPECT_EQ(deep.damaged_roots[0], std::string("jobs: ") + deep.damaged_roots[0].substr(6));
      EXPECT_NE(deep.damaged_roots[0].find("PBQueue: "), std::string::npos) << deep.damaged_roots[0];
      EXPECT_NE(deep.damaged_roots[0].find("the pointer at offset 0x"), std::string::npos) << deep.damaged_roots[0];
      std::ifstream after_f(p.path, std::ios::binary);
      const std::string after((std::istreambuf_iterator<char>(after_f)), std::istreambuf_iterator<char>());
      EXPECT_TRUE(before == after) << "the deep check wrote the pool file";
    }
    auto pool = Pool::open(p);
    const auto& rep = *pool->recovery_report();
    EXPECT_FALSE(rep.heap_rebuilt);
    ASSERT_EQ(rep.failed_roots.size(), 1u);
    EXPECT_EQ(rep.failed_roots[0].rfind("jobs: ", 0), 0u) << rep.failed_roots[0];
    EXPECT_NE(rep.failed_roots[0].find("offset 0x"), std::string::npos) << rep.failed_roots[0];
    try {
      (void)fc::PBQueue<>::attach(*pool, "jobs", 2);
      ADD_FAILURE() << "a damaged queue was attached";
    } catch (const PoolError& e) {
      EXPECT_EQ(e.code(), Errc::kCorrupt);
      EXPECT_NE(std::string(e.what()).find("left closed"), std::string::npos) << e.what();
    }
    EXPECT_EQ(pool->root<damaged_queue::Other>("other")->value, 7u) << "the other root opens as usual";
    // Undo the flip for the next round.
    pool.reset();
    std::FILE* f = std::fopen(p.path.c_str(), "r+b");
    std::fseek(f, static_cast<long>(next_field + 1), SEEK_SET);
    const int c = std::fgetc(f);
    std::fseek(f, static_cast<long>(next_field + 1), SEEK_SET);
    std::fputc(c ^ flip, f);
    std::fclose(f);
  }
  // Repaired, it opens, and holds all ten in order (and the deep check
  // checks both of its roots... the one it knows, the queue).
  const auto deep = ferrite::pmem::check_pool(p.path, true);
  EXPECT_TRUE(deep.deep_ran && deep.damaged_roots.empty() && deep.roots_checked == 1u) << deep.deep_skipped;
  auto pool = Pool::open(p);
  EXPECT_TRUE(pool->recovery_report()->failed_roots.empty());
  auto q = fc::PBQueue<>::attach(*pool, "jobs", 2);
  for (int i = 1; i <= 10; ++i) EXPECT_EQ(q->dequeue(0), i);
  EXPECT_EQ(q->dequeue(0), std::nullopt);
}

}  // namespace pb_basic_test
