// Unit tests of PBBytesQueue (combining/pb_bytes_queue.h): byte strings of
// every size in FIFO order, byte for byte across a close and reopen, the
// root type kept apart from the int64 queue's, reclamation (no payload
// leaked beyond one per thread, none freed early), validation of damaged
// payloads (read and recovery), and the typed convenience.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ferrite/combining/pb_bytes_queue.h"
#include "ferrite/combining/pb_queue.h"
#include "ferrite/pmem/payload.h"
#include "common/temp_pool.h"

namespace pb_bytes_queue_test {  // this file's names, apart in a unity build

namespace fc = ferrite::combining;
namespace pm = ferrite::pmem;
using ferrite::test::TempPool;

namespace {

using BQ = fc::PBBytesQueue<>;

// Deterministic bytes of job i with n bytes (every byte value occurs).
std::string job(int i, std::size_t n) {
  std::string s(n, '\0');
  std::uint64_t x = 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(i + 1);
  for (std::size_t k = 0; k < n; ++k) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s[k] = static_cast<char>(x & 0xff);
  }
  return s;
}

const std::vector<std::size_t> kSizes = {0, 1, 7, 8, 100, 4096, 65536};

TEST(PBBytesQueue, EverySizeComesBackByteForByteInFifoOrder) {
  TempPool tp("bq-sizes");
  auto q = BQ::create(*tp, "q", 2);
  EXPECT_EQ(q->dequeue(0), std::nullopt);
  for (std::size_t i = 0; i < kSizes.size(); ++i) q->enqueue(0, job(static_cast<int>(i), kSizes[i]));
  const auto vals = q->values();
  ASSERT_EQ(vals.size(), kSizes.size());
  for (std::size_t i = 0; i < kSizes.size(); ++i) EXPECT_EQ(vals[i], job(static_cast<int>(i), kSizes[i]));
  for (std::size_t i = 0; i < kSizes.size(); ++i) {
    auto b = q->dequeue(1);
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(b->size(), kSizes[i]);
    EXPECT_EQ(*b, job(static_cast<int>(i), kSizes[i]));
  }
  EXPECT_EQ(q->dequeue(1), std::nullopt);
  // The empty string is a job, not "empty".
  q->enqueue(0, "");
  auto e = q->dequeue(0);
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(e->empty());
}

TEST(PBBytesQueue, RestartKeepsEveryJobAndReclaimsAllButOnePayloadPerThread) {
  TempPool tp("bq-restart", std::size_t{64} << 20);
  constexpr int kThreads = 2;
  const auto base = tp->heap().stats();
  {
    auto q = BQ::create(*tp, "q", kThreads);
    for (int r = 0; r < 3; ++r)
      for (std::size_t i = 0; i < kSizes.size(); ++i) q->enqueue(r % kThreads, job(r * 10 + static_cast<int>(i), kSizes[i]));
    // Dequeue a few by each thread: each holds one payload (its response's).
    for (int i = 0; i < 2; ++i) EXPECT_EQ(*q->dequeue(0), job(i, kSizes[static_cast<std::size_t>(i)]));
    EXPECT_EQ(*q->dequeue(1), job(2, kSizes[2]));
    EXPECT_EQ(q->held_payloads(), 2u);
  }
  tp.reopen();  // the pool recovers: the hook keeps queued and responded payloads
  const auto* rep = tp->recovery_report();
  ASSERT_NE(rep, nullptr);
  EXPECT_TRUE(rep->failed_roots.empty()) << rep->failed_roots.front();
  auto q = BQ::attach(*tp, "q", kThreads);
  EXPECT_EQ(q->held_payloads(), 2u) << "each thread's recovered response names its last job";
  std::vector<std::string> want;
  for (int r = 0; r < 3; ++r)
    for (std::size_t i = 0; i < kSizes.size(); ++i)
      if (r > 0 || i >= 3) want.push_back(job(r * 10 + static_cast<int>(i), kSizes[i]));
  EXPECT_EQ(q->values(), want);
  for (const auto& w : want) EXPECT_EQ(*q->dequeue(0), w);
  EXPECT_EQ(q->dequeue(0), std::nullopt);
  EXPECT_EQ(q->dequeue(1), std::nullopt);  // frees thread 1's recovered payload
  EXPECT_EQ(q->held_payloads(), 0u);
  // Nothing leaked: after another restart the live blocks are those of an
  // int64 queue of the same capacity that was filled and drained (records
  // and the dummy): no payload survives a drain (the responses are empty).
  q.reset();
  tp.reopen();
  q = BQ::attach(*tp, "q", kThreads);
  EXPECT_EQ(q->held_payloads(), 0u);
  const auto after = tp->heap().stats();
  TempPool tp2("bq-restart-ref", std::size_t{64} << 20);
  {
    auto ref = fc::PBQueue<>::create(*tp2, "q", kThreads);
    for (int i = 1; i <= 21; ++i) ref->enqueue(0, i);
    for (int i = 1; i <= 21; ++i) ref->dequeue(0);
  }
  tp2.reopen();
  const auto ref_stats = tp2->heap().stats();
  (void)base;
  EXPECT_EQ(after.blocks_live, ref_stats.blocks_live) << "payload blocks leaked";
  EXPECT_EQ(after.bytes_live, ref_stats.bytes_live) << "payload bytes leaked";
}

TEST(PBBytesQueue, LiveBytesReturnToTheirLevelAfterDrainingWithSeveralThreads) {
  TempPool tp("bq-live", std::size_t{128} << 20);
  constexpr int kThreads = 3;
  auto q = BQ::create(*tp, "q", kThreads);
  // Warm-up round so every node the steady state needs is allocated.
  for (int t = 0; t < kThreads; ++t) q->enqueue(t, job(t, 100));
  for (int t = 0; t < kThreads; ++t) ASSERT_TRUE(q->dequeue(t).has_value());
  for (int t = 0; t < kThreads; ++t) q->dequeue(t);  // empty: frees each thread's held payload
  const auto level = tp->heap().stats().bytes_live;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        q->enqueue(t, job(t * 1000 + i, static_cast<std::size_t>(i * 37 % 5000)));
        (void)q->dequeue(t);
      }
    });
  for (auto& th : ts) th.join();
  while (q->dequeue(0)) {
  }
  for (int t = 0; t < kThreads; ++t) q->dequeue(t);
  EXPECT_EQ(q->held_payloads(), 0u);
  // Nodes recycle through the free lists (allocated once), payloads are
  // all freed: only nodes beyond the warm-up's may remain live.
  const auto now = tp->heap().stats().bytes_live;
  EXPECT_LE(now, level + 16 * 900) << "payload bytes leaked";
  EXPECT_GE(now, level);
}

TEST(PBBytesQueue, APayloadHeldByAResponseIsNotFreedEarly) {
  TempPool tp("bq-early");
  auto q = BQ::create(*tp, "q", 1);
  q->enqueue(0, job(1, 100));
  q->enqueue(0, job(2, 100));
  const auto offs = q->payload_offsets();
  ASSERT_EQ(offs.size(), 2u);
  ASSERT_EQ(*q->dequeue(0), job(1, 100));
  // The response names offs[0]: a new payload of the same size must not get
  // its block.
  q->enqueue(0, job(3, 100));
  for (auto o : q->payload_offsets()) EXPECT_NE(o, offs[0]);
  EXPECT_TRUE(pm::payload_problem(*tp, offs[0]).empty()) << "the held payload was overwritten";
  ASSERT_EQ(*q->dequeue(0), job(2, 100));  // now offs[0] is free, offs[1] held
  q->enqueue(0, job(4, 100));
  EXPECT_EQ(q->payload_offsets().back(), offs[0]) << "the freed block is reused (the arena's free list)";
}

TEST(PBBytesQueue, RootTypesAreKeptApart) {
  TempPool tp("bq-types");
  BQ::create(*tp, "bytes", 1);
  fc::PBQueue<>::create(*tp, "ints", 1);
  EXPECT_THROW(fc::PBQueue<>::attach(*tp, "bytes", 1), pm::PoolError);
  EXPECT_THROW(BQ::attach(*tp, "ints", 1), pm::PoolError);
  EXPECT_NO_THROW(BQ::attach(*tp, "bytes", 1));
}

TEST(PBBytesQueue, ADamagedPayloadThrowsOnReadAndFailsRecovery) {
  TempPool tp("bq-damage");
  std::uint64_t off = 0;
  {
    auto q = BQ::create(*tp, "q", 1);
    q->enqueue(0, job(1, 64));
    q->enqueue(0, job(2, 64));
    off = q->payload_offsets().front();
    tp->at<char>(off)[pm::kPayloadHeader + 5] ^= 0x10;  // one bit of the first job
    EXPECT_THROW(q->values(), pm::PoolError);
    try {
      (void)q->dequeue(0);
      ADD_FAILURE() << "a damaged payload was returned";
    } catch (const pm::PoolError& e) {
      EXPECT_EQ(e.code(), pm::Errc::kCorrupt);
      EXPECT_NE(std::string(e.what()).find("payload at offset"), std::string::npos) << e.what();
    }
    EXPECT_EQ(*q->dequeue(0), job(2, 64));  // the next job is intact
    q->enqueue(0, job(3, 64));
    // Damage a queued payload again: the pool's recovery hook must refuse it.
    tp->at<char>(q->payload_offsets().front())[pm::kPayloadHeader] ^= 1;
  }
  tp.reopen();
  const auto* rep = tp->recovery_report();
  ASSERT_NE(rep, nullptr);
  ASSERT_EQ(rep->failed_roots.size(), 1u);
  EXPECT_FALSE(rep->heap_rebuilt) << "every block is kept when a hook fails";
  EXPECT_THROW(BQ::attach(*tp, "q", 1), pm::PoolError);
}

TEST(PBBytesQueue, TypedValuesRoundTrip) {
  struct Job {
    std::uint32_t id;
    double weight;
    char tag[12];
  };
  TempPool tp("bq-typed");
  auto q = BQ::create(*tp, "q", 1);
  Job a{7, 2.5, "render"};
  q->enqueue_as(0, a);
  q->enqueue(0, "short");
  auto b = q->dequeue_as<Job>(0);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->id, 7u);
  EXPECT_EQ(b->weight, 2.5);
  EXPECT_STREQ(b->tag, "render");
  EXPECT_THROW(q->dequeue_as<Job>(0), pm::PoolError);  // 5 bytes are not a Job
  EXPECT_EQ(q->dequeue_as<Job>(0), std::nullopt);
}

TEST(PBBytesQueue, RejectsThreadIdsOutsideTheAttachWithoutAllocating) {
  TempPool tp("bq-tid");
  auto q = BQ::create(*tp, "q", 2);
  const auto live = tp->heap().stats().blocks_live;
  EXPECT_THROW(q->enqueue(2, "x"), std::out_of_range);
  EXPECT_THROW(q->enqueue(-1, "x"), std::out_of_range);
  EXPECT_EQ(tp->heap().stats().blocks_live, live);
}

}  // namespace

}  // namespace pb_bytes_queue_test
