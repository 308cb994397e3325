// Unit tests of nbMontage's byte-string queue (montage/bytes_queue.h, the
// MS queue of ms_queue.h over byte-string payloads): FIFO round trips of
// values of 0 to 65536 bytes (the empty value included) across a clean
// close, producers and consumers (every value dequeued once, each
// producer's in order), open_or_create and roots of another kind, a
// damaged payload (PoolError(kCorrupt) naming its offset), the size limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/temp_pool.h"
#include "ferrite/montage/bytes_queue.h"
#include "ferrite/montage/ms_queue.h"

namespace montage_bytes_queue_test {  // this file's names, apart in a unity build

namespace fm = ferrite::montage;
using ferrite::test::TempPool;
using Queue = fm::BytesQueue<>;

namespace {

fm::EpochOptions manual() {
  fm::EpochOptions o;
  o.epoch_length = std::chrono::microseconds{0};
  return o;
}
std::string bytes(std::size_t n, std::uint64_t seed) {
  std::string s(n, '\0');
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ull + n;
  for (std::size_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    s[i] = static_cast<char>(x >> 56);
  }
  return s;
}
const std::size_t kSizes[] = {0, 1, 7, 8, 100, 4096, 65536, 0};

TEST(MontageBytesQueue, FifoEverySizeAcrossACleanClose) {
  TempPool pool("bsq-rt", std::size_t{128} << 20);
  std::vector<std::string> want;
  {
    auto q = Queue::create(*pool, "q", 2, manual());
    EXPECT_EQ(q->dequeue(0), std::nullopt);
    for (int round = 0; round < 3; ++round)
      for (std::size_t n : kSizes) {
        want.push_back(bytes(n, want.size()));
        q->enqueue(0, want.back());
      }
    // Dequeue a few, byte for byte.
    for (int i = 0; i < 5; ++i) {
      const auto got = q->dequeue(1);
      ASSERT_TRUE(got.has_value());
      EXPECT_TRUE(*got == want.front()) << i;
      want.erase(want.begin());
    }
    EXPECT_EQ(q->contents(), want);
  }  // destruction syncs
  pool.reopen();
  auto q = Queue::attach(*pool, "q", 2, manual());
  EXPECT_EQ(q->contents(), want);
  q->enqueue(0, "after");  // the serial numbers continue past the recovered ones
  want.push_back("after");
  for (const std::string& w : want) {
    const auto got = q->dequeue(0);
    ASSERT_TRUE(got.has_value());
    EXPECT_TRUE(*got == w) << w.size();
  }
  EXPECT_EQ(q->dequeue(0), std::nullopt);
  q.reset();
  pool.reopen();
  q = Queue::attach(*pool, "q", 2, manual());
  EXPECT_EQ(q->dequeue(0), std::nullopt);  // dequeued values never come back
}

TEST(MontageBytesQueue, EmptyValuesAndThreadHandles) {
  TempPool pool("bsq-empty");
  auto q = Queue::create(*pool, "q", 2, manual());
  ferrite::sync::ThreadRegistry reg(2);
  const ferrite::Thread t = reg.acquire();
  q->enqueue(t, "");
  q->enqueue(t, "");
  q->enqueue(t, std::string("\0\0", 2));
  EXPECT_EQ(q->dequeue(t), std::optional<std::string>(""));
  EXPECT_EQ(q->dequeue(t), std::optional<std::string>(""));
  EXPECT_EQ(q->dequeue(t), std::optional<std::string>(std::string("\0\0", 2)));
  EXPECT_EQ(q->dequeue(t), std::nullopt);
}

// Two producers, two consumers: every value dequeued exactly once, each
// producer's values in its order; then what is left survives a restart.
TEST(MontageBytesQueue, ProducersAndConsumers) {
  TempPool pool("bsq-mt", std::size_t{256} << 20);
  auto q = Queue::create(*pool, "q", 4, manual());
  constexpr int kPer = 3000;
  std::vector<std::string> got[2];
  std::atomic<int> producing{2};
  auto produce = [&](int p) {
    for (int i = 0; i < kPer; ++i) {
      q->enqueue(p, std::to_string(p) + ":" + std::to_string(i) + ":" + bytes(static_cast<std::size_t>(i % 300), i));
      if (i % 700 == 0) q->sync();
    }
    --producing;
  };
  auto consume = [&](int c) {
    for (int i = 0; i < kPer * 2 / 3; ++i) {
      auto v = q->dequeue(2 + c);
      if (v) got[c].push_back(std::move(*v));
      else if (producing.load() == 0) break;
    }
  };
  std::thread p0(produce, 0), p1(produce, 1), c0(consume, 0), c1(consume, 1);
  p0.join();
  p1.join();
  c0.join();
  c1.join();
  std::vector<std::string> rest = q->contents();
  q.reset();
  pool.reopen();
  q = Queue::attach(*pool, "q", 4, manual());
  EXPECT_EQ(q->contents(), rest);
  // Every value once; per producer, each consumer's sequence and the rest ascend.
  std::vector<int> count(2 * kPer, 0);
  auto index = [&](const std::string& v, int& p) {
    p = v[0] - '0';
    const auto c1 = v.find(':', 2);
    const int i = std::stoi(v.substr(2, c1 - 2));
    EXPECT_TRUE(v == std::to_string(p) + ":" + std::to_string(i) + ":" + bytes(static_cast<std::size_t>(i % 300), i));
    return i;
  };
  for (const auto* seq : {&got[0], &got[1], &rest}) {
    int last[2] = {-1, -1};
    for (const std::string& v : *seq) {
      int p = 0;
      const int i = index(v, p);
      ASSERT_TRUE(p == 0 || p == 1);
      EXPECT_GT(i, last[p]);
      last[p] = i;
      ++count[static_cast<std::size_t>(p * kPer + i)];
    }
  }
  EXPECT_TRUE(std::all_of(count.begin(), count.end(), [](int c) { return c == 1; }));
}

TEST(MontageBytesQueue, OpenOrCreateAndOtherKinds) {
  TempPool pool("bsq-ooc");
  {
    auto q = pool->open_or_create<Queue>("q", 1, manual());
    q->enqueue(0, "job");
    auto iq = fm::MSQueue<>::create(*pool, "iq", 1, manual());
    iq->enqueue(0, 5);
  }
  pool.reopen();
  auto q = pool->open_or_create<Queue>("q", 1, manual());
  EXPECT_EQ(q->contents(), std::vector<std::string>{"job"});
  EXPECT_THROW(fm::MSQueue<>::attach(*pool, "q", 1), std::runtime_error);  // not an int64 queue
  EXPECT_THROW(Queue::attach(*pool, "iq", 1), std::runtime_error);
  EXPECT_THROW(Queue::attach(*pool, "q", 2), std::invalid_argument);  // above its capacity (1)
}

char* find_in_pool(ferrite::pmem::Pool& pool, std::string_view needle) {
  char* base = pool.at<char>(0);
  char* end = base + pool.size();
  for (char* p = base; p + needle.size() <= end; ++p)
    if (std::memcmp(p, needle.data(), needle.size()) == 0) return p;
  return nullptr;
}

// A damaged length (and, separately, a damaged padding word): recovery
// refuses with kCorrupt naming the block's offset, twice the same.
TEST(MontageBytesQueue, DamagedPayloadIsCorruptNamingItsOffset) {
  for (const int field : {0, 1}) {
    SCOPED_TRACE(field);
    TempPool pool("bsq-dmg", std::size_t{32} << 20);
    const std::string marker = "damage-me:" + bytes(24, 9);
    {
      auto q = Queue::create(*pool, "q", 1, manual());
      q->enqueue(0, "first");
      q->enqueue(0, marker);
      q->enqueue(0, "last");
    }
    char* v = find_in_pool(*pool, marker);
    ASSERT_NE(v, nullptr);
    std::uint32_t len = 0;
    std::memcpy(&len, v - 8, 4);
    ASSERT_EQ(len, marker.size());
    const std::uint32_t bad = field == 0 ? 70000 : 1;
    std::memcpy(v - 8 + 4 * field, &bad, 4);
    const std::uint64_t block = pool->offset_of(v - 16) - sizeof(fm::PBlkHeader);
    pool.reopen();
    try {
      auto q = Queue::attach(*pool, "q", 1, manual());
      FAIL() << "a damaged payload was accepted";
    } catch (const ferrite::pmem::PoolError& e) {
      EXPECT_EQ(e.code(), ferrite::pmem::Errc::kCorrupt);
      EXPECT_NE(std::string(e.what()).find("offset " + std::to_string(block)), std::string::npos) << e.what();
    }
    pool.reopen();
    EXPECT_THROW(Queue::attach(*pool, "q", 1, manual()), ferrite::pmem::PoolError);
  }
}

TEST(MontageBytesQueue, SizeLimit) {
  TempPool pool("bsq-lim", std::size_t{128} << 20);
  auto q = Queue::create(*pool, "q", 1, manual());
  const std::string big(Queue::kMaxValueBytes + 1, 'x');
  try {
    q->enqueue(0, big);
    FAIL() << "no throw";
  } catch (const ferrite::pmem::PoolError& e) {
    EXPECT_EQ(e.code(), ferrite::pmem::Errc::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(std::to_string(big.size())), std::string::npos) << e.what();
  }
  EXPECT_EQ(q->dequeue(0), std::nullopt);
  const std::string max = bytes(Queue::kMaxValueBytes, 4);
  q->enqueue(0, max);
  q->enqueue(0, "small");
  EXPECT_TRUE(q->dequeue(0) == max);
  EXPECT_EQ(q->dequeue(0), std::optional<std::string>("small"));
}

}  // namespace

}  // namespace montage_bytes_queue_test
