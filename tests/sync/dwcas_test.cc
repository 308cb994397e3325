// Unit tests of sync/dwcas.h: the 16-byte CAS, its CAS-based load, and the
// shared (non-writing) load nbMontage's CASObj reads with. The concurrent
// test can fail: a load made of two 8-byte reads would return a torn value
// (one half of each of two pairs) within a few thousand reads while a
// writer flips the word between two pairs whose halves differ.
#include "ferrite/sync/dwcas.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "common/scale.h"

namespace dwcas_test {  // this file's names, apart in a unity build

namespace fs = ferrite::sync;

namespace {

struct alignas(16) Pair {
  std::uint64_t a;
  std::uint64_t b;
  friend bool operator==(const Pair&, const Pair&) = default;
};

TEST(DwCas, CasLoadAndSharedLoadAgree) {
  Pair w{1, 2};
  EXPECT_EQ(fs::dwload(&w), (Pair{1, 2}));
  EXPECT_EQ(fs::dwload_shared(&w), (Pair{1, 2}));
  EXPECT_FALSE(fs::dwcas(&w, Pair{1, 3}, Pair{5, 6}));
  EXPECT_EQ(fs::dwload_shared(&w), (Pair{1, 2}));
  EXPECT_TRUE(fs::dwcas(&w, Pair{1, 2}, Pair{5, 6}));
  EXPECT_EQ(fs::dwload_shared(&w), (Pair{5, 6}));
  fs::dwstore(&w, Pair{~0ull, 0});
  EXPECT_EQ(fs::dwload(&w), (Pair{~0ull, 0}));
  EXPECT_EQ(fs::dwload_shared(&w), (Pair{~0ull, 0}));
}

// One writer CASes the word back and forth between {x, x} and {~x, ~x}
// (x changing every round); two readers check that every value they load
// has equal halves. The writer keeps writing until both readers have made
// kMinReads loads, so the loads overlap the writes even when the scheduler
// starts the readers late (a loaded CI machine once let the writer finish
// first, and no load was made at all).
TEST(DwCas, SharedLoadNeverTearsUnderConcurrentCas) {
  constexpr std::uint64_t kMinReads = 1u << 16;
  Pair w{0, 0};
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> torn{0}, reads{0};
  std::atomic<std::uint64_t> progress[2] = {0, 0};  // each reader's loads so far, published every 1,024
  const auto rounds = static_cast<std::uint64_t>(200000 * ferrite::test::scale()) + 1000;
  std::uint64_t written = 0;
  std::thread writer([&] {
    Pair cur{0, 0};
    for (std::uint64_t i = 1;
         i <= rounds || progress[0].load(std::memory_order_relaxed) < kMinReads ||
         progress[1].load(std::memory_order_relaxed) < kMinReads;
         ++i) {
      const std::uint64_t x = (i & 1) ? ~(i * 0x9e3779b97f4a7c15ull) : i * 0x9e3779b97f4a7c15ull;
      const Pair next{x, x};
      EXPECT_TRUE(fs::dwcas(&w, cur, next));
      cur = next;
      written = i;
    }
    stop.store(true);
  });
  auto reader = [&](int me) {
    std::uint64_t n = 0, bad = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const Pair v = fs::dwload_shared(&w);
      bad += v.a != v.b ? 1 : 0;
      if ((++n & 1023) == 0) progress[me].store(n, std::memory_order_relaxed);
    }
    torn.fetch_add(bad);
    reads.fetch_add(n);
  };
  std::thread r1(reader, 0), r2(reader, 1);
  writer.join();
  r1.join();
  r2.join();
  EXPECT_EQ(torn.load(), 0u) << "of " << reads.load() << " reads";
  EXPECT_GE(reads.load(), 2 * kMinReads);
  EXPECT_GE(written, rounds);
}

}  // namespace

}  // namespace dwcas_test
