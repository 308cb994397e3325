// Single-threaded behaviour of PWFcomb and the structures on it: sequential
// semantics, detectable recovery (Alg. 3 l.4–7), re-attach, clear errors.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <optional>
#include <vector>

#include "ferrite/combining/pwf_atomic_float.h"
#include "ferrite/combining/pwf_stack.h"
#include "common/temp_pool.h"

namespace fc = ferrite::combining;
using ferrite::test::TempPool;

namespace {

TEST(PWFFloat, MulReturnsOldValueAndSurvivesReopen) {
  TempPool tp("float");
  {
    auto f = fc::PWFAtomicFloat<>::create(*tp, "f", 2);
    EXPECT_EQ(f->mul(0, 1, 2.0), 1.0);
    EXPECT_EQ(f->mul(1, 1, 3.0), 2.0);
    EXPECT_EQ(f->mul(0, 2, 0.5), 6.0);
    EXPECT_EQ(f->read(), 3.0);
    EXPECT_GT(f->combining_degree(), 0.0);
  }
  tp.reopen();
  auto f = fc::PWFAtomicFloat<>::attach(*tp, "f", 2);
  EXPECT_EQ(f->read(), 3.0);
  // Thread 0's last op (seq 2) was applied: recover returns its response
  // without re-applying it.
  EXPECT_EQ(f->recover_mul(0, 2, 0.5), 6.0);
  EXPECT_EQ(f->read(), 3.0);
  // A pending op that did not take effect is applied by recover.
  EXPECT_EQ(f->recover_mul(1, 2, 10.0), 3.0);
  EXPECT_EQ(f->read(), 30.0);
}

TEST(PWFFloat, ClearErrors) {
  TempPool tp("floaterr");
  EXPECT_THROW(fc::PWFAtomicFloat<>::create(*tp, "f", 0), std::invalid_argument);
  EXPECT_THROW(fc::PWFAtomicFloat<>::create(*tp, "g", 65), std::invalid_argument);
  auto f = fc::PWFAtomicFloat<>::create(*tp, "f", 2);
  EXPECT_THROW(f->mul(2, 1, 2.0), std::out_of_range);
  f->mul(0, 1, 2.0);
  EXPECT_THROW(f->mul(0, 3, 2.0), std::logic_error);  // same parity as the served seq 1
  f.reset();
  EXPECT_THROW(fc::PWFAtomicFloat<>::attach(*tp, "f", 3), ferrite::pmem::PoolError);
}

template <class S>
void stack_sequential(const char* tag) {
  TempPool tp(tag);
  auto s = S::create(*tp, "s", 2);
  std::uint64_t seq = 0;
  EXPECT_EQ(s->pop(0, ++seq), std::nullopt);
  for (int i = 0; i < 100; ++i) s->push(0, ++seq, i);
  for (int i = 99; i >= 50; --i) EXPECT_EQ(s->pop(0, ++seq), i);
  for (int i = 0; i < 10; ++i) s->push(0, ++seq, 1000 + i);  // reuses recycled nodes
  auto c = s->contents();
  ASSERT_EQ(c.size(), 60u);
  EXPECT_EQ(c.front(), 1009);
  EXPECT_EQ(c.back(), 0);
  EXPECT_THROW(s->push(0, ++seq, static_cast<std::int64_t>(fc::kEmptyWord)), std::invalid_argument);
}
TEST(PWFStack, SequentialLifo) { stack_sequential<fc::PWFStack<>>("stack"); }
TEST(PWFStack, SequentialLifoNoElimNoRec) { stack_sequential<fc::PWFStack<false, false>>("stacknn"); }

TEST(PWFStack, RecycledNodesAreReused) {
  TempPool tp("stackrec");
  auto s = fc::PWFStack<>::create(*tp, "s", 1);
  std::uint64_t seq = 0;
  s->push(0, ++seq, 1);
  s->pop(0, ++seq);
  EXPECT_EQ(s->object().free_nodes(0), 1u);
  s->push(0, ++seq, 2);
  EXPECT_EQ(s->object().free_nodes(0), 0u);
}

TEST(PWFStack, ReopenTracesNodesAndRecovers) {
  TempPool tp("stackreopen");
  {
    auto s = fc::PWFStack<>::create(*tp, "s", 2);
    for (int i = 1; i <= 20; ++i) s->push(i % 2, static_cast<std::uint64_t>((i + 1) / 2), i);
  }
  tp.reopen();
  auto s = fc::PWFStack<>::attach(*tp, "s", 2);
  EXPECT_EQ(s->contents().size(), 20u);
  // Thread 1's last push (seq 10, value 19) took effect: not re-applied.
  s->recover_push(1, 10, 19);
  EXPECT_EQ(s->contents().size(), 20u);
  EXPECT_EQ(s->recover_pop(0, 11), 20);
  for (int i = 19; i >= 1; --i) EXPECT_EQ(s->pop(0, 12 + static_cast<std::uint64_t>(19 - i)), i);
}

}  // namespace

#include "ferrite/combining/pwf_heap.h"
#include "ferrite/combining/pwf_queue.h"

namespace pwf_basic_test {  // this file's names, apart in a unity build

namespace {

// Q3's probe: IE requests with seqs of their own (bit 61) interleave with
// the caller's seqs without a "reused seq" refusal or a wrong detection.
TEST(PWFQueue, ProbesKeepFifoAndTheCallersSeqs) {
  TempPool tp("queueprobe");
  using Q = fc::PWFQueue<fc::pwf_fault::kProbeAlways>;
  {
    auto q = Q::create(*tp, "q", 2);
    std::uint64_t seq = 0;
    EXPECT_EQ(q->dequeue(0, ++seq), std::nullopt);  // a probe on an empty queue
    for (int i = 0; i < 30; ++i) {
      q->enqueue(0, ++seq, i);
      if (i % 2 == 1) {
        EXPECT_EQ(q->dequeue(0, ++seq), i / 2);  // a probe after an enqueue of the same thread
      }
    }
    // The last enqueue's seq is still detected as applied (IE's tag may now
    // be a probe's seq, but recovery of a pending enqueue only happens
    // before the thread's next operation).
    q->enqueue(1, 1000, 77);
    q->recover_enqueue(1, 1000, 77);  // applied: not enqueued twice
    EXPECT_EQ(q->contents().size(), 16u);
    EXPECT_EQ(q->contents().back(), 77);
    EXPECT_EQ(q->dequeue(1, 1001), 15);
  }
  tp.reopen();
  auto q = Q::attach(*tp, "q", 2);
  EXPECT_EQ(q->contents().size(), 15u);
  EXPECT_EQ(q->dequeue(0, 5000), 16);
}

TEST(PWFQueue, SequentialFifoAndReopen) {
  TempPool tp("queue");
  {
    auto q = fc::PWFQueue<>::create(*tp, "q", 2);
    std::uint64_t seq = 0;
    EXPECT_EQ(q->dequeue(0, ++seq), std::nullopt);
    for (int i = 0; i < 50; ++i) q->enqueue(i % 2, ++seq, i);
    for (int i = 0; i < 20; ++i) EXPECT_EQ(q->dequeue(1, ++seq), i);
    EXPECT_EQ(q->contents().size(), 30u);
    EXPECT_EQ(q->contents().front(), 20);
    EXPECT_EQ(q->contents().back(), 49);
  }
  tp.reopen();
  auto q = fc::PWFQueue<>::attach(*tp, "q", 2);
  auto c = q->contents();
  ASSERT_EQ(c.size(), 30u);
  EXPECT_EQ(c.front(), 20);
  // seq 71 (thread 1's last dequeue, value 19) took effect.
  EXPECT_EQ(q->recover_dequeue(1, 71), 19);
  EXPECT_EQ(q->contents().size(), 30u);
  std::uint64_t seq = 100;
  q->enqueue(0, ++seq, 1000);  // nodes allocated after heap recovery
  for (int i = 20; i < 50; ++i) EXPECT_EQ(q->dequeue(1, ++seq), i);
  EXPECT_EQ(q->dequeue(1, ++seq), 1000);
  EXPECT_EQ(q->dequeue(1, ++seq), std::nullopt);
}

TEST(PWFQueue, SeqTagsAllowAnySeqProgression) {
  TempPool tp("queueseq");
  auto q = fc::PWFQueue<>::create(*tp, "q", 1);
  // One per-thread seq across both instances: parity does not alternate per
  // instance, which is why IE/ID use full tags.
  q->enqueue(0, 1, 7);
  EXPECT_EQ(q->dequeue(0, 2), 7);
  q->enqueue(0, 3, 8);
  q->enqueue(0, 4, 9);
  EXPECT_EQ(q->dequeue(0, 5), 8);
  EXPECT_THROW(q->enqueue(0, 4, 10), std::logic_error);  // reused seq
}

TEST(PWFHeap, SequentialOrderFullEmptyAndReopen) {
  TempPool tp("heap");
  {
    auto h = fc::PWFHeap<>::create(*tp, "h", 2, 64);
    std::uint64_t seq = 0;
    EXPECT_EQ(h->delete_min(0, ++seq), std::nullopt);
    for (int i = 0; i < 64; ++i) EXPECT_TRUE(h->insert(0, ++seq, (i * 37) % 64));
    EXPECT_FALSE(h->insert(0, ++seq, 5));  // full
    EXPECT_TRUE(h->well_formed());
    EXPECT_EQ(h->get_min(0, ++seq), 0);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(h->delete_min(0, ++seq), i);
  }
  tp.reopen();
  auto h = fc::PWFHeap<>::attach(*tp, "h", 2);
  EXPECT_EQ(h->capacity(), 64u);
  auto c = h->contents();
  ASSERT_EQ(c.size(), 54u);
  EXPECT_EQ(c.front(), 10);
  EXPECT_TRUE(h->well_formed());
  EXPECT_THROW(fc::PWFHeap<>::create(*tp, "bad", 2, 0), std::invalid_argument);
  EXPECT_THROW(fc::PWFHeap<>::create(*tp, "bad2", 2, 2000), std::invalid_argument);
}

}  // namespace

}  // namespace pwf_basic_test
