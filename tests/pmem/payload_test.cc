// Payload blocks (pmem/payload.h): every byte string round-trips (empty,
// odd sizes, a whole chunk, a chunk run); every damage is named, never
// returned as bytes; the limits are clear errors; a root's hook that marks
// its payloads keeps them across a restart while unmarked ones are freed;
// a damaged payload pointer fails the hook (every block kept) instead of
// marking a stranger's block.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/temp_pool.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/payload.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"

namespace payload_test {  // this file's names, apart in a unity build

namespace {

using namespace ferrite::pmem;
using ferrite::test::TempPath;

constexpr std::size_t kMiB = std::size_t{1} << 20;

std::string pattern(std::size_t n, std::uint64_t seed) {
  std::string s(n, '\0');
  std::mt19937_64 r(seed);
  for (auto& c : s) c = static_cast<char>(r());
  return s;
}

// A root naming up to 64 payloads.
struct Bag {
  static constexpr std::uint32_t kTypeTag = 0x7E5A0101;
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "test::Bag";
  std::uint64_t n = 0;
  std::uint64_t off[64] = {};
};
void recover_bag(Pool& pool, Bag* b, const std::function<void(void*)>& mark) {
  for (std::uint64_t i = 0; i < b->n; ++i) mark_payload(pool, b->off[i], mark);
}
const bool kBagRegistered = register_root_type<Bag>(&recover_bag);

}  // namespace

TEST(Payload, EveryByteStringRoundTripsIncludingEmptyAndChunkRuns) {
  ASSERT_TRUE(kBagRegistered);
  TempPath p;
  auto pool = Pool::create(p, 16 * kMiB);
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{9},
                              std::size_t{100}, std::size_t{4095}, std::size_t{65536 - 16}, std::size_t{65536},
                              std::size_t{1} << 20}) {
    SCOPED_TRACE(n);
    const std::string s = pattern(n, n);
    const std::uint64_t off = write_payload(*pool, 0, s);
    EXPECT_NE(off, 0u);
    EXPECT_EQ(off % 16, 0u);
    EXPECT_EQ(payload_problem(*pool, off), "");
    EXPECT_EQ(read_payload(*pool, off), s);
    free_payload(*pool, 0, off);
  }
  struct Pt {
    double x, y;
  };
  const std::uint64_t off = write_payload_as(*pool, 0, Pt{1.5, -2.25});
  EXPECT_EQ(read_payload_as<Pt>(*pool, off).y, -2.25);
  EXPECT_THROW(read_payload_as<std::uint64_t>(*pool, off), PoolError);
}

TEST(Payload, WriteIssuesOneWriteBackPerLineAndNoFence) {
  TempPath p;
  auto pool = Pool::create(p, 4 * kMiB);
  namespace fps = ferrite::persist;
  // The class's first block assigns its chunk (a chunk map pwb + psync,
  // the heap's, not the payload's): take it first.
  (void)write_payload(*pool, 0, pattern(200, 2));
  const auto before = fps::counters();
  (void)write_payload(*pool, 0, pattern(200, 1));  // 216 bytes from a 256-byte block: 4 lines
  const auto d = fps::counters() - before;
  EXPECT_EQ(d[fps::Verb::kPwb], 4u);
  EXPECT_EQ(d[fps::Verb::kPfence], 0u);
  EXPECT_EQ(d[fps::Verb::kPsync], 0u);
}

TEST(Payload, EveryFlippedBitIsNamedNotReturned) {
  TempPath p;
  auto pool = Pool::create(p, 4 * kMiB);
  const std::string s = pattern(37, 3);
  const std::uint64_t off = write_payload(*pool, 0, s);
  auto* blk = pool->at<unsigned char>(off);
  for (std::size_t byte = 0; byte < kPayloadHeader + s.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      blk[byte] ^= static_cast<unsigned char>(1u << bit);
      const std::string why = payload_problem(*pool, off);
      EXPECT_NE(why, "") << "byte " << byte << " bit " << bit;
      EXPECT_NE(why.find("payload at offset 0x"), std::string::npos) << why;
      try {
        (void)read_payload(*pool, off);
        ADD_FAILURE() << "a damaged payload was read (byte " << byte << ")";
      } catch (const PoolError& e) {
        EXPECT_EQ(e.code(), Errc::kCorrupt);
      }
      blk[byte] ^= static_cast<unsigned char>(1u << bit);
    }
  }
  EXPECT_EQ(read_payload(*pool, off), s);
}

TEST(Payload, APayloadCopiedToAnotherBlockOrAPointerOffItsStartDoesNotValidate) {
  TempPath p;
  auto pool = Pool::create(p, 4 * kMiB);
  const std::uint64_t a = write_payload(*pool, 0, "alpha");
  const std::uint64_t b = write_payload(*pool, 0, "bravo");
  std::memcpy(pool->at<char>(b), pool->at<char>(a), kPayloadHeader + 5);  // a's payload in b's block (adjacent: no overlap)
  EXPECT_NE(payload_problem(*pool, b).find("fails its check"), std::string::npos) << payload_problem(*pool, b);
  EXPECT_NE(payload_problem(*pool, a + 16).find("not the start of a heap block"), std::string::npos);
  EXPECT_NE(payload_problem(*pool, 0), "");
  EXPECT_NE(payload_problem(*pool, pool->size() + 4096).find("outside"), std::string::npos);
  EXPECT_NE(payload_problem(*pool, 4096).find("not the start"), std::string::npos);  // inside the header
}

TEST(Payload, LimitsAreClearErrors) {
  TempPath p;
  auto pool = Pool::create(p, 2 * kMiB);
  try {
    (void)write_payload(*pool, 0, std::string(kMaxPayloadBytes + 1, 'x'));
    ADD_FAILURE() << "an oversized payload was written";
  } catch (const PoolError& e) {
    EXPECT_EQ(e.code(), Errc::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("16 MiB payload limit"), std::string::npos) << e.what();
  }
  try {
    (void)write_payload(*pool, 0, std::string(4 * kMiB, 'x'));  // more than the pool
    ADD_FAILURE() << "a payload larger than the pool was written";
  } catch (const PoolError& e) {
    EXPECT_EQ(e.code(), Errc::kFull);
    EXPECT_NE(std::string(e.what()).find("chunks"), std::string::npos) << e.what();
  }
}

TEST(Payload, MarkedPayloadsSurviveARestartAndUnmarkedOnesAreFreed) {
  TempPath p;
  std::vector<std::string> kept;
  std::uint64_t garbage = 0;
  {
    auto pool = Pool::create(p, 8 * kMiB);
    Bag* bag = pool->create_root<Bag>("bag");
    for (int i = 0; i < 20; ++i) {
      kept.push_back(pattern(static_cast<std::size_t>(i * 997 % 5000), static_cast<std::uint64_t>(i)));
      const std::uint64_t off = write_payload(*pool, 0, kept.back());
      ferrite::persist::psync();  // P1: durable before the root names it
      bag->off[bag->n] = off;
      bag->n++;
      ferrite::persist::persist_range(bag, sizeof *bag);
    }
    garbage = write_payload(*pool, 0, pattern(3000, 99));  // never published
  }
  auto pool = Pool::open(p);
  ASSERT_TRUE(pool->recovery_report()->heap_rebuilt);
  Bag* bag = pool->root<Bag>("bag");
  ASSERT_EQ(bag->n, kept.size());
  for (std::size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(read_payload(*pool, bag->off[i]), kept[i]);
  // The unpublished payload's block was freed by recovery: the next 3000-byte
  // allocations reuse it (and never a kept one).
  bool reused = false;
  for (int i = 0; i < 64 && !reused; ++i) reused = write_payload(*pool, 0, pattern(3000, 7)) == garbage;
  EXPECT_TRUE(reused);
  for (std::size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(read_payload(*pool, bag->off[i]), kept[i]);
}

TEST(Payload, ADamagedPayloadPointerFailsTheHookAndKeepsEveryBlock) {
  TempPath p;
  std::uint64_t first = 0;
  {
    auto pool = Pool::create(p, 4 * kMiB);
    Bag* bag = pool->create_root<Bag>("bag");
    bag->off[0] = first = write_payload(*pool, 0, "one");
    bag->off[1] = write_payload(*pool, 0, "two");
    ferrite::persist::psync();
    bag->n = 2;
    bag->off[1] += 64;  // damage: a pointer to the next block, not a payload
    ferrite::persist::persist_range(bag, sizeof *bag);
  }
  auto pool = Pool::open(p);
  const auto& rep = *pool->recovery_report();
  EXPECT_FALSE(rep.heap_rebuilt) << "a hook that met a damaged payload must keep every block";
  ASSERT_EQ(rep.failed_roots.size(), 1u);
  EXPECT_NE(rep.failed_roots[0].find("bag"), std::string::npos) << rep.failed_roots[0];
  EXPECT_NE(rep.failed_roots[0].find("payload at offset"), std::string::npos) << rep.failed_roots[0];
  // The damaged root stays closed (PoolOptions::damaged_roots: kLeaveClosed),
  // its blocks kept: the undamaged payload is still intact in place.
  try {
    (void)pool->root<Bag>("bag");
    ADD_FAILURE() << "a root whose recovery failed was attached";
  } catch (const PoolError& e) {
    EXPECT_EQ(e.code(), Errc::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("left closed"), std::string::npos) << e.what();
  }
  EXPECT_EQ(payload_problem(*pool, first), "");
  // Asked to refuse, open fails naming the root.
  pool.reset();
  PoolOptions strict;
  strict.damaged_roots = PoolOptions::DamagedRoots::kRefuseOpen;
  try {
    (void)Pool::open(p, strict);
    ADD_FAILURE() << "open accepted a damaged structure with kRefuseOpen";
  } catch (const PoolError& e) {
    EXPECT_EQ(e.code(), Errc::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("bag: "), std::string::npos) << e.what();
  }
}

}  // namespace payload_test
