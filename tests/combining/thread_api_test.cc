// tests/combining/thread_api_test.cc — the user-facing API of every PB and
// PWF structure: structures opened by name with Pool::open_or_create<T>,
// operations through ThreadRegistry handles (no raw ids, no seq kept by the
// caller), std::optional responses, and the same calls working after a
// restart (the seq-less calls continue from the durable state: PWFcomb
// refuses a reused seq, so a wrong restart would throw).
#include <gtest/gtest.h>

#include <optional>

#include "common/temp_pool.h"
#include "ferrite/combining/atomic_float.h"
#include "ferrite/combining/pb_heap.h"
#include "ferrite/combining/pb_queue.h"
#include "ferrite/combining/pb_stack.h"
#include "ferrite/combining/pwf_atomic_float.h"
#include "ferrite/combining/pwf_heap.h"
#include "ferrite/combining/pwf_queue.h"
#include "ferrite/combining/pwf_stack.h"
#include "ferrite/detectable.h"
#include "ferrite/sync/thread_registry.h"

namespace thread_api_test {  // this file's names, apart in a unity build

namespace {

namespace fc = ferrite::combining;
using ferrite::test::TempPool;

constexpr int kThreads = 2;

template <class Q>
void queue_round(ferrite::pmem::Pool& pool, ferrite::Thread& t, std::int64_t base) {
  auto q = pool.open_or_create<Q>("q", kThreads);
  for (std::int64_t v = 1; v <= 5; ++v) q->enqueue(t, base + v);
  for (std::int64_t v = 1; v <= 5; ++v) EXPECT_EQ(q->dequeue(t), std::optional<std::int64_t>(base + v));
  EXPECT_EQ(q->dequeue(t), std::nullopt);
  q->enqueue(t, base + 100);  // left for the next round: durable across the restart
}

template <class Q>
void queue_test() {
  TempPool pool("thread-api-q");
  ferrite::sync::ThreadRegistry reg(kThreads);
  auto t = reg.acquire();
  queue_round<Q>(*pool, t, 0);
  pool.reopen();
  {
    auto q = pool->open_or_create<Q>("q", kThreads);
    EXPECT_EQ(q->dequeue(t), std::optional<std::int64_t>(100));
  }
  queue_round<Q>(*pool, t, 1000);
}

TEST(ThreadApi, PBQueueRunsOnHandlesAcrossARestart) { queue_test<fc::PBQueue<>>(); }
TEST(ThreadApi, PWFQueueRunsOnHandlesAcrossARestart) { queue_test<fc::PWFQueue<>>(); }

template <class S>
void stack_test() {
  TempPool pool("thread-api-s");
  ferrite::sync::ThreadRegistry reg(kThreads);
  auto t = reg.acquire();
  {
    auto s = pool->open_or_create<S>("s", kThreads);
    for (std::int64_t v = 1; v <= 4; ++v) s->push(t, v);
    EXPECT_EQ(s->pop(t), std::optional<std::int64_t>(4));
  }
  pool.reopen();
  auto s = pool->open_or_create<S>("s", kThreads);
  for (std::int64_t v = 3; v >= 1; --v) EXPECT_EQ(s->pop(t), std::optional<std::int64_t>(v));
  EXPECT_EQ(s->pop(t), std::nullopt);
  s->push(t, 9);
  EXPECT_EQ(s->pop(t), std::optional<std::int64_t>(9));
}

TEST(ThreadApi, PBStackRunsOnHandlesAcrossARestart) { stack_test<fc::PBStack<>>(); }
TEST(ThreadApi, PWFStackRunsOnHandlesAcrossARestart) {
  stack_test<fc::PWFStack<true, true, fc::pwf_fault::kNone>>();
}

template <class H>
void heap_test() {
  TempPool pool("thread-api-h");
  ferrite::sync::ThreadRegistry reg(kThreads);
  auto t = reg.acquire();
  {
    auto h = pool->open_or_create<H>("h", kThreads, 64);
    for (std::int64_t v : {5, 1, 4, 2, 3}) EXPECT_TRUE(h->insert(t, v));
    EXPECT_EQ(h->get_min(t), std::optional<std::int64_t>(1));
    EXPECT_EQ(h->delete_min(t), std::optional<std::int64_t>(1));
  }
  pool.reopen();
  auto h = pool->open_or_create<H>("h", kThreads, 64);
  for (std::int64_t v = 2; v <= 5; ++v) EXPECT_EQ(h->delete_min(t), std::optional<std::int64_t>(v));
  EXPECT_EQ(h->delete_min(t), std::nullopt);
}

TEST(ThreadApi, PBHeapRunsOnHandlesAcrossARestart) { heap_test<fc::PBHeap<>>(); }
TEST(ThreadApi, PWFHeapRunsOnHandlesAcrossARestart) { heap_test<fc::PWFHeap<>>(); }

template <class F>
void float_test() {
  TempPool pool("thread-api-f");
  ferrite::sync::ThreadRegistry reg(kThreads);
  auto t = reg.acquire();
  {
    auto f = pool->open_or_create<F>("f", kThreads);
    const double v0 = f->read(t);
    EXPECT_EQ(f->mul(t, 2.0), v0);
    EXPECT_EQ(f->read(t), 2.0 * v0);
  }
  pool.reopen();
  auto f = pool->open_or_create<F>("f", kThreads);
  const double v1 = f->read(t);
  EXPECT_EQ(f->mul(t, 0.5), v1);
  EXPECT_EQ(f->read(t), v1 * 0.5);
}

TEST(ThreadApi, PBAtomicFloatRunsOnHandlesAcrossARestart) { float_test<fc::PBAtomicFloat<>>(); }
TEST(ThreadApi, PWFAtomicFloatRunsOnHandlesAcrossARestart) { float_test<fc::PWFAtomicFloat<>>(); }

TEST(ThreadApi, AHandleWithoutAnIdIsRefusedByDetectable) {
  TempPool pool("thread-api-d");
  auto q = pool->open_or_create<fc::PBQueue<>>("q", kThreads);
  auto log = ferrite::OpLog::open_or_create(*pool, "q.log", kThreads);
  ferrite::Detectable<fc::PBQueue<>> d(*q, log);
  ferrite::Thread none;
  EXPECT_THROW(d.run(none, {ferrite::op::kEnqueue, 1}), std::invalid_argument);
  ferrite::sync::ThreadRegistry reg(kThreads);
  auto t = reg.acquire();
  EXPECT_EQ(d.run(t, {ferrite::op::kEnqueue, 7}), ferrite::op::Response::ack());
  const auto r = d.recover(t);  // the last op completed: recovery answers it again
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->op.kind, ferrite::op::kEnqueue);
  EXPECT_EQ(d.run(t, {ferrite::op::kDequeue}), ferrite::op::Response::of(7));
  EXPECT_EQ(d.recover(t)->response, ferrite::op::Response::of(7));
  EXPECT_THROW(d.run(t, {ferrite::op::kPush, 1}), std::invalid_argument);  // not a queue op
}

}  // namespace

}  // namespace thread_api_test
