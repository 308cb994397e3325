// Unit tests of PBBytesStack (combining/pb_bytes_stack.h): byte strings of
// every size (0 B .. 64 KiB and the maximum) in LIFO order, byte for byte
// across a close and reopen, the root type kept apart from the int64
// stack's, reclamation (at most one payload held per thread, none freed
// early, none leaked), detection of pending pushes and pops, validation of
// damaged payloads (read and recovery), all stack options.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "ferrite/combining/pb_bytes_stack.h"
#include "ferrite/combining/pb_stack.h"
#include "ferrite/pmem/payload.h"
#include "common/temp_pool.h"

namespace pb_bytes_stack_test {  // this file's names, apart in a unity build

namespace fc = ferrite::combining;
namespace pm = ferrite::pmem;
using ferrite::test::TempPool;

namespace {

using BS = fc::PBBytesStack<>;

std::string elem(int i, std::size_t n) {
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

class PBBytesStackOptions : public ::testing::TestWithParam<fc::PBStackOptions> {};

TEST_P(PBBytesStackOptions, EverySizeComesBackByteForByteInLifoOrder) {
  TempPool tp("bs-sizes");
  auto s = BS::create(*tp, "s", 2, GetParam());
  EXPECT_EQ(s->pop(0), std::nullopt);
  for (std::size_t i = 0; i < kSizes.size(); ++i) s->push(i % 2, elem(static_cast<int>(i), kSizes[i]));
  const auto vals = s->values();
  ASSERT_EQ(vals.size(), kSizes.size());
  for (std::size_t i = 0; i < kSizes.size(); ++i) EXPECT_EQ(vals[kSizes.size() - 1 - i], elem(static_cast<int>(i), kSizes[i]));
  for (std::size_t i = kSizes.size(); i-- > 0;) {
    auto b = s->pop(1);
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(*b, elem(static_cast<int>(i), kSizes[i]));
  }
  EXPECT_EQ(s->pop(1), std::nullopt);
  s->push(0, "");  // the empty string is an element, not "empty"
  auto e = s->pop(0);
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(e->empty());
}

INSTANTIATE_TEST_SUITE_P(PB, PBBytesStackOptions,
                         ::testing::Values(fc::PBStackOptions{true, true}, fc::PBStackOptions{false, false}),
                         [](const auto& i) { return i.param.elimination ? std::string("elim_rec") : std::string("plain"); });

TEST(PBBytesStack, TheLargestPayloadFitsAndOneMoreByteIsRefused) {
  TempPool tp("bs-max", std::size_t{64} << 20);
  auto s = BS::create(*tp, "s", 1);
  const std::string big = elem(9, pm::kMaxPayloadBytes);
  s->push(0, big);
  const auto live = tp->heap().stats().blocks_live;
  EXPECT_ANY_THROW(s->push(0, std::string(pm::kMaxPayloadBytes + 1, 'x')));
  EXPECT_EQ(tp->heap().stats().blocks_live, live) << "a refused push allocated";
  EXPECT_EQ(*s->pop(0), big);
}

TEST(PBBytesStack, RestartKeepsEveryElementAndReclaimsAllButOnePayloadPerThread) {
  TempPool tp("bs-restart", std::size_t{64} << 20);
  constexpr int kThreads = 2;
  std::vector<std::string> want;
  {
    auto s = BS::create(*tp, "s", kThreads);
    for (int i = 0; i < 12; ++i) {
      want.push_back(elem(i, kSizes[static_cast<std::size_t>(i) % kSizes.size()]));
      s->push(i % kThreads, want.back());
    }
    EXPECT_EQ(*s->pop(0), want.back());
    want.pop_back();
    EXPECT_EQ(*s->pop(1), want.back());
    want.pop_back();
    EXPECT_EQ(s->held_payloads(), 2u);
  }
  tp.reopen();
  const auto* rep = tp->recovery_report();
  ASSERT_NE(rep, nullptr);
  EXPECT_TRUE(rep->failed_roots.empty()) << rep->failed_roots.front();
  EXPECT_TRUE(rep->heap_rebuilt);
  auto s = BS::attach(*tp, "s", kThreads);
  EXPECT_EQ(s->held_payloads(), 2u) << "each thread's recovered response names its last element";
  std::vector<std::string> top_first(want.rbegin(), want.rend());
  EXPECT_EQ(s->values(), top_first);
  for (const auto& w : top_first) EXPECT_EQ(*s->pop(0), w);
  EXPECT_EQ(s->pop(0), std::nullopt);
  s->push(1, "x");  // a push also ends thread 1's hold (its response is an ack now)
  EXPECT_EQ(s->held_payloads(), 0u);
  EXPECT_EQ(*s->pop(1), "x");
  EXPECT_EQ(s->pop(1), std::nullopt);
  // Nothing leaked: after another restart the live blocks are an int64
  // stack's of the same capacity that was filled and drained.
  s.reset();
  tp.reopen();
  s = BS::attach(*tp, "s", kThreads);
  EXPECT_EQ(s->held_payloads(), 0u);
  const auto after = tp->heap().stats();
  TempPool tp2("bs-restart-ref", std::size_t{64} << 20);
  {
    auto ref = fc::PBStack<>::create(*tp2, "s", kThreads);
    for (int i = 1; i <= 12; ++i) ref->push(0, i);
    while (ref->pop(0)) {
    }
  }
  tp2.reopen();
  EXPECT_EQ(after.blocks_live, tp2->heap().stats().blocks_live) << "payload blocks leaked";
  EXPECT_EQ(after.bytes_live, tp2->heap().stats().bytes_live) << "payload bytes leaked";
}

TEST(PBBytesStack, LiveBytesReturnToTheirLevelAfterDrainingWithSeveralThreads) {
  TempPool tp("bs-live", std::size_t{128} << 20);
  constexpr int kThreads = 3;
  auto s = BS::create(*tp, "s", kThreads);
  for (int t = 0; t < kThreads; ++t) s->push(t, elem(t, 100));
  for (int t = 0; t < kThreads; ++t) ASSERT_TRUE(s->pop(t).has_value());
  for (int t = 0; t < kThreads; ++t) s->pop(t);
  const auto level = tp->heap().stats().bytes_live;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        s->push(t, elem(t * 1000 + i, static_cast<std::size_t>(i * 37 % 5000)));
        if (i % 3 != 0) (void)s->pop(t);
      }
    });
  for (auto& th : ts) th.join();
  while (s->pop(0)) {
  }
  for (int t = 0; t < kThreads; ++t) s->pop(t);
  EXPECT_EQ(s->held_payloads(), 0u);
  const auto now = tp->heap().stats().bytes_live;
  EXPECT_LE(now, level + 16 * 900) << "payload bytes leaked";  // nodes only
  EXPECT_GE(now, level);
}

TEST(PBBytesStack, APayloadHeldByAResponseIsNotFreedEarly) {
  TempPool tp("bs-early");
  auto s = BS::create(*tp, "s", 1);
  s->push(0, elem(1, 100));
  s->push(0, elem(2, 100));
  const auto offs = s->payload_offsets();  // top first
  ASSERT_EQ(offs.size(), 2u);
  ASSERT_EQ(*s->pop(0), elem(2, 100));
  // The response names offs[0] until the next operation: the next push's
  // payload must not get its block (the push then ends the hold).
  s->push(0, elem(3, 100));
  for (auto o : s->payload_offsets()) EXPECT_NE(o, offs[0]);
  EXPECT_TRUE(pm::payload_problem(*tp, offs[0]).empty()) << "the held payload was overwritten";
  s->push(0, elem(4, 100));
  EXPECT_EQ(s->payload_offsets().front(), offs[0]) << "the freed block is reused (the arena's free list)";
}

TEST(PBBytesStack, RootTypesAreKeptApart) {
  TempPool tp("bs-types");
  BS::create(*tp, "bytes", 1);
  fc::PBStack<>::create(*tp, "ints", 1);
  EXPECT_THROW(fc::PBStack<>::attach(*tp, "bytes", 1), pm::PoolError);
  EXPECT_THROW(BS::attach(*tp, "ints", 1), pm::PoolError);
  EXPECT_NO_THROW(BS::attach(*tp, "bytes", 1));
}

TEST(PBBytesStack, DetectsPendingPushesAndPops) {
  TempPool tp("bs-detect");
  {
    auto s = BS::create(*tp, "s", 2);
    s->push(0, 1, "a");  // seq parity alternates per thread (first odd)
    s->push(0, 2, "bb");
    s->push(1, 1, "ccc");
    EXPECT_EQ(*s->pop(1, 2), "ccc");
  }
  tp.reopen();
  auto s = BS::attach(*tp, "s", 2);
  // Applied before the "crash": recover answers without re-applying.
  s->recover_push(0, 2, "bb");
  EXPECT_EQ(*s->recover_pop(1, 2), "ccc");
  EXPECT_EQ(*s->recover_pop(1, 2), "ccc") << "idempotent";
  EXPECT_EQ(s->values(), (std::vector<std::string>{"bb", "a"}));
  // Not applied: recover completes them.
  s->recover_push(0, 3, "dddd");
  EXPECT_EQ(s->values(), (std::vector<std::string>{"dddd", "bb", "a"}));
  s->recover_push(0, 3, "dddd");  // idempotent
  EXPECT_EQ(s->values().size(), 3u);
  EXPECT_EQ(*s->recover_pop(1, 3), "dddd");
  EXPECT_EQ(*s->pop(1, 4), "bb");
  EXPECT_EQ(s->held_payloads(), 1u);
}

TEST(PBBytesStack, ADamagedPayloadThrowsOnReadAndFailsRecovery) {
  TempPool tp("bs-damage");
  {
    auto s = BS::create(*tp, "s", 1);
    s->push(0, elem(1, 64));
    s->push(0, elem(2, 64));
    const std::uint64_t off = s->payload_offsets().front();
    tp->at<char>(off)[pm::kPayloadHeader + 5] ^= 0x10;
    EXPECT_THROW(s->values(), pm::PoolError);
    try {
      (void)s->pop(0);
      ADD_FAILURE() << "a damaged payload was returned";
    } catch (const pm::PoolError& e) {
      EXPECT_EQ(e.code(), pm::Errc::kCorrupt);
      EXPECT_NE(std::string(e.what()).find("payload at offset"), std::string::npos) << e.what();
    }
    EXPECT_EQ(*s->pop(0), elem(1, 64));
    s->push(0, elem(3, 64));
    s->push(0, elem(4, 64));  // one in a node, one cached
    tp->at<char>(s->payload_offsets().back())[pm::kPayloadHeader] ^= 1;
  }
  tp.reopen();
  const auto* rep = tp->recovery_report();
  ASSERT_NE(rep, nullptr);
  ASSERT_EQ(rep->failed_roots.size(), 1u);
  EXPECT_FALSE(rep->heap_rebuilt) << "every block is kept when a hook fails";
  EXPECT_THROW(BS::attach(*tp, "s", 1), pm::PoolError);
}

TEST(PBBytesStack, RejectsThreadIdsOutsideTheAttachWithoutAllocating) {
  TempPool tp("bs-tid");
  auto s = BS::create(*tp, "s", 2);
  const auto live = tp->heap().stats().blocks_live;
  EXPECT_THROW(s->push(2, "x"), std::out_of_range);
  EXPECT_THROW(s->push(-1, "x"), std::out_of_range);
  EXPECT_THROW(s->pop(2), std::out_of_range);
  EXPECT_EQ(tp->heap().stats().blocks_live, live);
}

}  // namespace

}  // namespace pb_bytes_stack_test
