// tests/combining/thread_api_test.cc — the user-facing API of every PB and
// PWF structure: structures opened by name with Pool::open_or_create<T>,
// operations through ThreadRegistry handles (no raw ids, no seq kept by the
// caller), std::optional responses, and the same calls working after a
// restart (the seq-less calls continue from the durable state: PWFcomb
// refuses a reused seq, so a wrong restart would throw). And the thread
// capacity (issue 39): a structure created for n threads attaches for any
// 1..n, its pending detectable operations of every id below n stay
// recoverable, and an attach for more than n throws naming both numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/temp_pool.h"
#include "ferrite/combining/atomic_float.h"
#include "ferrite/combining/pb_bytes_queue.h"
#include "ferrite/combining/pb_bytes_stack.h"
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

// ---- Thread capacity: created for kCapacity, attached for fewer --------

constexpr int kCapacity = 8;

// The structure's contents, quiescent (front to back, top to bottom, the
// heap's array or sorted keys, the float's bits).
template <class S>
std::vector<std::int64_t> content_of(const S& s) {
  if constexpr (requires { s.values(); }) return s.values();
  else if constexpr (requires { s.contents(); }) return s.contents();
  else if constexpr (requires { s.sorted(); }) return s.sorted();
  else if constexpr (requires { s.value(); }) return {std::bit_cast<std::int64_t>(s.value())};
  else return {std::bit_cast<std::int64_t>(s.read())};
}

template <class F>
std::string what_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

// An attach above the capacity and one for -1 threads throw; the first
// names both numbers and what to do. kAsCreated (0, attach's default)
// attaches for the whole capacity.
template <class S, class... A>
void expect_attach_bounds(ferrite::pmem::Pool& pool, const char* name, A... args) {
  const std::string w = what_of([&] { (void)S::attach(pool, name, kCapacity + 1, args...); });
  EXPECT_NE(w.find("at most 8 threads"), std::string::npos) << w;
  EXPECT_NE(w.find("asked for 9"), std::string::npos) << w;
  EXPECT_NE(w.find("larger capacity"), std::string::npos) << w;
  EXPECT_NE(what_of([&] { (void)S::attach(pool, name, -1, args...); }), "(no exception)");
  EXPECT_EQ(what_of([&] { (void)S::attach(pool, name, ferrite::kAsCreated, args...); }), "(no exception)");
}

// Run 1 (attached for the capacity, 8): threads 0 and 1 enqueue 200 values
// each concurrently; tid 5 completes a detectable dequeue; tid 6 begins an
// enqueue of 666 (durable in the OpLog) and "crashes" before invoking it.
// Run 2 (attached for 4): the content is intact; recover(5) answers run
// 1's dequeue again without dequeuing; recover(6) completes the enqueue
// (as combiner 6: its free list and scratch exist though no handle of this
// run has id 6); four threads drain the queue in order; id 4 is refused.
// Run 3 (attached for 1): the content is intact; recover_unattached()
// answers ids 5 and 6 again and changes nothing. An attach for 9 throws.
template <class Q>
void queue_capacity_test() {
  namespace op = ferrite::op;
  TempPool pool("thread-cap-q");
  std::vector<std::int64_t> before;
  op::Response r5;
  {
    auto q = pool->open_or_create<Q>("q", kCapacity);
    auto log = ferrite::OpLog::open_or_create(*pool, "q.log", kCapacity);
    ferrite::Detectable<Q> d(*q, log);
    ferrite::sync::ThreadRegistry reg(2);
    std::vector<ferrite::Thread> hs;  // acquired here: ids 0 and 1 (a thread that
    for (int i = 0; i < 2; ++i) hs.push_back(reg.acquire());  // finished early would free its id)
    std::vector<std::thread> ts;
    for (auto& h : hs)
      ts.emplace_back([&d, &h] {
        for (std::int64_t v = 1; v <= 200; ++v) d.run(h, {op::kEnqueue, 1000 * (h.id() + 1) + v});
      });
    for (auto& t : ts) t.join();
    const std::uint64_t seq5 = log.begin(5, {op::kDequeue});
    r5 = q->apply(5, seq5, {op::kDequeue});
    ASSERT_TRUE(r5.value == 1001 || r5.value == 2001) << r5.value;
    log.begin(6, {op::kEnqueue, 666});
    before = content_of(*q);
    ASSERT_EQ(before.size(), 399u);
    // Each producer's values in its order, none lost.
    std::map<std::int64_t, std::int64_t> last;
    for (const std::int64_t v : before) {
      EXPECT_GT(v % 1000, last[v / 1000]) << v;
      last[v / 1000] = v % 1000;
    }
    EXPECT_EQ(last[1], 200);
    EXPECT_EQ(last[2], 200);
  }
  pool.reopen();
  {
    auto q = pool->open_or_create<Q>("q", 4);
    auto log = ferrite::OpLog::open_or_create(*pool, "q.log", 4);
    EXPECT_EQ(log.threads(), 4);
    EXPECT_EQ(log.max_threads(), kCapacity);
    ferrite::Detectable<Q> d(*q, log);
    EXPECT_EQ(content_of(*q), before);
    // tid 5's dequeue had completed: answered again, nothing dequeued.
    auto rec5 = d.recover(5);
    ASSERT_TRUE(rec5.has_value());
    EXPECT_EQ(rec5->op.kind, op::kDequeue);
    EXPECT_EQ(rec5->response, r5);
    EXPECT_EQ(content_of(*q), before);
    // tid 6's enqueue never ran: recover completes it, once.
    auto rec6 = d.recover(6);
    ASSERT_TRUE(rec6.has_value());
    EXPECT_EQ(rec6->response, op::Response::ack());
    std::vector<std::int64_t> want = before;
    want.push_back(666);
    EXPECT_EQ(content_of(*q), want);
    EXPECT_EQ(d.recover(6)->response, op::Response::ack());
    EXPECT_EQ(d.recover(5)->response, r5);
    EXPECT_EQ(content_of(*q), want);
    EXPECT_FALSE(d.recover(7).has_value());  // never began anything
    // Ids at or above the attach's 4 are refused by the operations.
    EXPECT_THROW(q->apply(4, 1, {op::kEnqueue, 1}), std::out_of_range);
    EXPECT_THROW(log.begin(4, {op::kEnqueue, 1}), std::out_of_range);
    EXPECT_THROW(d.recover(kCapacity), std::out_of_range);
    // Four threads drain it: each sees the queue's order, together all of it.
    ferrite::sync::ThreadRegistry reg(4);
    std::vector<ferrite::Thread> hs;
    for (int i = 0; i < 4; ++i) hs.push_back(reg.acquire());
    std::vector<std::vector<std::int64_t>> got(4);
    std::vector<std::thread> ts;
    for (auto& h : hs)
      ts.emplace_back([&d, &h, &got] {
        for (int k = 0; k < 100; ++k) {
          const auto r = d.run(h, {op::kDequeue});
          if (r.has_value) got[static_cast<std::size_t>(h.id())].push_back(r.value);
        }
      });
    for (auto& t : ts) t.join();
    std::map<std::int64_t, std::size_t> pos;
    for (std::size_t i = 0; i < want.size(); ++i) pos[want[i]] = i;
    std::vector<std::int64_t> all;
    for (const auto& g : got) {
      for (std::size_t i = 1; i < g.size(); ++i) EXPECT_LT(pos.at(g[i - 1]), pos.at(g[i]));
      all.insert(all.end(), g.begin(), g.end());
    }
    std::sort(all.begin(), all.end());
    std::vector<std::int64_t> sorted_want = want;
    std::sort(sorted_want.begin(), sorted_want.end());
    EXPECT_EQ(all, sorted_want);
    EXPECT_TRUE(content_of(*q).empty());
    d.run(hs[3], {op::kEnqueue, 7});
    d.run(hs[3], {op::kEnqueue, 8});
  }
  pool.reopen();
  auto q = pool->open_or_create<Q>("q", 1);
  auto log = ferrite::OpLog::open_or_create(*pool, "q.log", 1);
  ferrite::Detectable<Q> d(*q, log);
  EXPECT_EQ(content_of(*q), (std::vector<std::int64_t>{7, 8}));
  // Ids 1..3 (run 2's, now beyond the attach: their last ops completed),
  // 5 and 6: answered again, nothing re-run.
  std::map<int, typename ferrite::Detectable<Q>::Recovered> rec;
  for (const auto& [tid, r] : d.recover_unattached()) rec.emplace(tid, r);
  ASSERT_EQ(rec.size(), 5u);
  for (const int tid : {1, 2, 3, 5, 6}) EXPECT_EQ(rec.count(tid), 1u) << tid;
  EXPECT_EQ(rec.at(5).response, r5);
  EXPECT_EQ(rec.at(6).op.arg, 666);
  EXPECT_EQ(rec.at(6).response, op::Response::ack());
  EXPECT_EQ(rec.at(3).op.arg, 8);
  EXPECT_EQ(content_of(*q), (std::vector<std::int64_t>{7, 8}));
  ferrite::sync::ThreadRegistry reg(1);
  auto t = reg.acquire();
  EXPECT_EQ(d.run(t, {op::kDequeue}), op::Response::of(7));
  EXPECT_EQ(d.run(t, {op::kDequeue}), op::Response::of(8));
  EXPECT_EQ(d.run(t, {op::kDequeue}), op::Response::none());
  expect_attach_bounds<Q>(*pool, "q");
  const std::string w = what_of([&] { (void)ferrite::OpLog::attach(*pool, "q.log", 9); });
  EXPECT_NE(w.find("at most 8 threads"), std::string::npos) << w;
  EXPECT_NE(w.find("asked for 9"), std::string::npos) << w;
}

TEST(ThreadApi, PBQueueAttachesForFewerThreadsThanItsCapacity) { queue_capacity_test<fc::PBQueue<>>(); }
TEST(ThreadApi, PWFQueueAttachesForFewerThreadsThanItsCapacity) { queue_capacity_test<fc::PWFQueue<>>(); }

// The other structures, through the op vocabulary: run 1 (capacity 8)
// updates from ids 0, 1 and 6 (6's last op completed) and leaves id 5's
// update begun but not invoked; run 2 (attached for 2) sees the content
// intact, recover(6) answers run 1's response and changes nothing,
// recover(5) applies the update once; ids >= 2 are refused by the
// operations; run 3 (attached for 1) sees the same content and answers 5
// and 6 again. `upd(i)` is the i-th update op.
template <class S, class Upd, class... A>
void capacity_test(const char* name, Upd upd, A... args) {
  namespace op = ferrite::op;
  TempPool pool("thread-cap");
  op::Response r6;
  std::vector<std::int64_t> after1;
  {
    auto s = pool->open_or_create<S>(name, kCapacity, args...);
    auto log = ferrite::OpLog::open_or_create(*pool, "log", kCapacity);
    ferrite::Detectable<S> d(*s, log);
    for (int i = 0; i < 3; ++i)
      for (const int tid : {0, 1, 6}) {
        const auto o = upd(10 * tid + i);
        const std::uint64_t seq = log.begin(tid, o);
        r6 = s->apply(tid, seq, o);
      }
    log.begin(5, upd(55));
    after1 = content_of(*s);
  }
  pool.reopen();
  std::vector<std::int64_t> after2;
  op::Response r5;
  {
    auto s = pool->open_or_create<S>(name, 2, args...);
    auto log = ferrite::OpLog::open_or_create(*pool, "log", 2);
    ferrite::Detectable<S> d(*s, log);
    EXPECT_EQ(content_of(*s), after1);
    EXPECT_EQ(d.recover(6)->response, r6);
    EXPECT_EQ(content_of(*s), after1);
    r5 = d.recover(5)->response;
    after2 = content_of(*s);
    EXPECT_NE(after2, after1);  // the update took effect...
    EXPECT_EQ(d.recover(5)->response, r5);
    EXPECT_EQ(content_of(*s), after2);  // ...once
    EXPECT_THROW(s->apply(2, 1, upd(1)), std::out_of_range);
    EXPECT_THROW(s->recover(kCapacity, 1, upd(1)), std::out_of_range);
    // Both attached ids work.
    ferrite::sync::ThreadRegistry reg(2);
    auto t0 = reg.acquire();
    auto t1 = reg.acquire();
    d.run(t0, upd(100));
    d.run(t1, upd(101));
    EXPECT_NE(content_of(*s), after2);
    after2 = content_of(*s);
  }
  pool.reopen();
  auto s = pool->open_or_create<S>(name, 1, args...);
  auto log = ferrite::OpLog::open_or_create(*pool, "log", 1);
  ferrite::Detectable<S> d(*s, log);
  EXPECT_EQ(content_of(*s), after2);
  const auto rec = d.recover_unattached();
  ASSERT_EQ(rec.size(), 3u);  // ids 1 (now beyond the attach), 5, 6
  EXPECT_EQ(rec[1].first, 5);
  EXPECT_EQ(rec[1].second.response, r5);
  EXPECT_EQ(rec[2].first, 6);
  EXPECT_EQ(rec[2].second.response, r6);
  EXPECT_EQ(content_of(*s), after2);
  ferrite::sync::ThreadRegistry reg(1);
  auto t = reg.acquire();
  d.run(t, upd(200));
  EXPECT_NE(content_of(*s), after2);
  expect_attach_bounds<S>(*pool, name, args...);
}

ferrite::op::Op push_op(int i) { return {ferrite::op::kPush, i + 1}; }
ferrite::op::Op insert_op(int i) { return {ferrite::op::kInsert, 1000 - i}; }
ferrite::op::Op mul_op(int i) { return {ferrite::op::kMul, std::bit_cast<std::int64_t>(1.0 + (i + 1) / 64.0)}; }

TEST(ThreadApi, PBStackAttachesForFewerThreadsThanItsCapacity) { capacity_test<fc::PBStack<>>("s", push_op); }
TEST(ThreadApi, PWFStackAttachesForFewerThreadsThanItsCapacity) {
  capacity_test<fc::PWFStack<true, true, fc::pwf_fault::kNone>>("s", push_op);
}
TEST(ThreadApi, PBHeapAttachesForFewerThreadsThanItsCapacity) { capacity_test<fc::PBHeap<>>("h", insert_op, 64); }
TEST(ThreadApi, PWFHeapAttachesForFewerThreadsThanItsCapacity) { capacity_test<fc::PWFHeap<>>("h", insert_op, 64); }
TEST(ThreadApi, PBAtomicFloatAttachesForFewerThreadsThanItsCapacity) {
  capacity_test<fc::PBAtomicFloat<>>("f", mul_op);
}
TEST(ThreadApi, PWFAtomicFloatAttachesForFewerThreadsThanItsCapacity) {
  capacity_test<fc::PWFAtomicFloat<>>("f", mul_op);
}

// The default capacity (issue 39: "at least 64 where the layout allows"):
// a structure created with no thread count takes kDefaultThreads ids, and
// one attached with none (open_or_create<S>(name)) takes every id it was
// created for — 64 on a default structure, 8 on one created for 8 (id 8 is
// refused there, with the attach's range in the message).
template <class S, class Put, class Take>
void default_capacity_test(Put put, Take take) {
  static_assert(ferrite::kDefaultThreads >= 64);
  TempPool pool("thread-default");
  ferrite::sync::ThreadRegistry reg(ferrite::kDefaultThreads);
  std::vector<ferrite::Thread> hs;
  for (int i = 0; i < ferrite::kDefaultThreads; ++i) hs.push_back(reg.acquire());
  {
    auto s = pool->open_or_create<S>("all");
    put(*s, hs.back(), 63);
    auto few = pool->open_or_create<S>("eight", kCapacity);
    put(*few, hs[kCapacity - 1], 7);
    auto log = ferrite::OpLog::open_or_create(*pool, "log");
    EXPECT_EQ(log.threads(), ferrite::kDefaultThreads);
  }
  pool.reopen();
  auto s = pool->open_or_create<S>("all");
  EXPECT_EQ(take(*s, hs.back()), std::optional<std::int64_t>(63));
  put(*s, hs[40], 40);
  EXPECT_EQ(take(*s, hs[40]), std::optional<std::int64_t>(40));
  auto few = pool->open_or_create<S>("eight");
  EXPECT_EQ(take(*few, hs[kCapacity - 1]), std::optional<std::int64_t>(7));
  const std::string w = what_of([&] { put(*few, hs[kCapacity], 8); });
  EXPECT_NE(w.find("8"), std::string::npos) << w;
  EXPECT_NE(w, "(no exception)");
  const std::string wa = what_of([&] { (void)S::attach(*pool, "all", ferrite::kDefaultThreads + 1); });
  EXPECT_NE(wa.find("at most 64 threads"), std::string::npos) << wa;
  auto log = ferrite::OpLog::open_or_create(*pool, "log");
  EXPECT_EQ(log.threads(), ferrite::kDefaultThreads);
}

auto queue_put = [](auto& q, const ferrite::Thread& t, std::int64_t v) { q.enqueue(t, v); };
auto queue_take = [](auto& q, const ferrite::Thread& t) { return q.dequeue(t); };
auto stack_put = [](auto& q, const ferrite::Thread& t, std::int64_t v) { q.push(t, v); };
auto stack_take = [](auto& q, const ferrite::Thread& t) { return q.pop(t); };
auto bytes_queue_put = [](auto& q, const ferrite::Thread& t, std::int64_t v) { q.enqueue(t, std::to_string(v)); };
auto bytes_queue_take = [](auto& q, const ferrite::Thread& t) -> std::optional<std::int64_t> {
  auto b = q.dequeue(t);
  return b ? std::optional<std::int64_t>(std::stoll(*b)) : std::nullopt;
};
auto bytes_stack_put = [](auto& q, const ferrite::Thread& t, std::int64_t v) { q.push(t, std::to_string(v)); };
auto bytes_stack_take = [](auto& q, const ferrite::Thread& t) -> std::optional<std::int64_t> {
  auto b = q.pop(t);
  return b ? std::optional<std::int64_t>(std::stoll(*b)) : std::nullopt;
};

TEST(ThreadApi, PBQueueDefaultsToSixtyFourThreads) { default_capacity_test<fc::PBQueue<>>(queue_put, queue_take); }
TEST(ThreadApi, PWFQueueDefaultsToSixtyFourThreads) { default_capacity_test<fc::PWFQueue<>>(queue_put, queue_take); }
TEST(ThreadApi, PBStackDefaultsToSixtyFourThreads) { default_capacity_test<fc::PBStack<>>(stack_put, stack_take); }
TEST(ThreadApi, PWFStackDefaultsToSixtyFourThreads) {
  default_capacity_test<fc::PWFStack<true, true, fc::pwf_fault::kNone>>(stack_put, stack_take);
}
TEST(ThreadApi, PBBytesQueueDefaultsToSixtyFourThreads) {
  default_capacity_test<fc::PBBytesQueue<>>(bytes_queue_put, bytes_queue_take);
}
TEST(ThreadApi, PBBytesStackDefaultsToSixtyFourThreads) {
  default_capacity_test<fc::PBBytesStack<>>(bytes_stack_put, bytes_stack_take);
}

}  // namespace

}  // namespace thread_api_test
