// SOFT (include/ferrite/baselines/soft_hash.h): sequential behaviour
// against std::map (map and set, both create orders), concurrent
// conservation, and recovery of a closed pool — the paper's scan of the
// PNodes rebuilds exactly the contents, across several restarts (so PNodes
// are recycled with flipped validity bits), and a slab carved from dirty
// heap memory never shows stale PNodes. Crash consistency:
// soft_hash_crash_test.cc.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/baselines/soft_hash.h"
#include "set_checks.h"

namespace soft_hash_test {  // this file's names, apart in a unity build

namespace fb = ferrite::baselines;
namespace fs = ferrite::baselines::soft;
using ferrite::test::map_op;
using ferrite::test::matches_std_map;
using ferrite::test::scaled;

namespace {

using Items = std::vector<std::pair<std::int64_t, std::int64_t>>;
using Paper = fb::SoftHashTable<fs::Order::kOneFlush>;
using BodyFirst = fb::SoftHashTable<fs::Order::kBodyFirst>;

template <class T>
void map_and_set_agree_with_std_map(const char* tag) {
  ferrite::test::TempPool pool(tag, std::size_t{32} << 20);
  auto m = T::create(*pool, "map", 1, 4);
  matches_std_map([&](int c, std::int64_t k, std::int64_t v) { return map_op(*m, c, k, v, 0); }, scaled(20000, 2000), 64);
  auto s = T::create(*pool, "set", 1, 4);
  ferrite::test::set_matches_std_map(*s, scaled(20000, 2000), 64);
}

TEST(SoftHashTable, ThePapersOrderAgreesWithStdMapAsAMapAndAsASet) { map_and_set_agree_with_std_map<Paper>("soft-paper"); }
TEST(SoftHashTable, TheBodyFirstOrderAgreesWithStdMapAsAMapAndAsASet) { map_and_set_agree_with_std_map<BodyFirst>("soft-bf"); }

TEST(SoftHashTable, ConcurrentThreadsOnSharedListsKeepEveryKeyTheyOwn) {
  ferrite::test::TempPool pool("soft-mt", std::size_t{32} << 20);
  auto t = Paper::create(*pool, "t", 4, 2);
  ferrite::test::threads_conserve_their_keys(*t, 4, scaled(20000, 1000));
  auto b = BodyFirst::create(*pool, "b", 4, 2);
  ferrite::test::threads_conserve_their_keys(*b, 4, scaled(5000, 500));
}

TEST(SoftHashTable, UpdatesOfOneKeyAndItsEraseSerializeOnItsLock) {
  ferrite::test::TempPool pool("soft-upd", std::size_t{32} << 20);
  auto t = Paper::create(*pool, "t", 4, 1);
  ferrite::test::hammer_owned_keys(*t, 4, scaled(10000, 500));
}

// Random map operations against std::map, and a clean close + reopen +
// attach after every round: the rebuilt table has exactly the reference's
// contents, and the next round (which recycles the PNodes of erased keys,
// now with the opposite validity) keeps agreeing.
template <class T>
void survives_restarts(const char* tag) {
  ferrite::test::TempPool pool(tag, std::size_t{32} << 20);
  std::map<std::int64_t, std::int64_t> ref;
  T::create(*pool, "t", 2, 8);
  std::uint64_t r = 7;
  std::int64_t v = 1;
  for (int round = 0; round < 6; ++round) {
    {
      auto t = T::attach(*pool, "t", 2);
      const Items want(ref.begin(), ref.end());
      ASSERT_EQ(t->items(true), want) << "round " << round;
      for (int i = 0; i < scaled(3000, 300); ++i) {
        const auto k = static_cast<std::int64_t>(ferrite::test::next(r) % 48) + 1;
        const int c = static_cast<int>(ferrite::test::next(r) % 3);
        const int tid = static_cast<int>(ferrite::test::next(r) % 2);
        const auto it = ref.find(k);
        const std::optional<std::int64_t> want = it == ref.end() ? std::nullopt : std::optional<std::int64_t>(it->second);
        ++v;
        ASSERT_EQ(map_op(*t, c, k, v, tid), want) << "round " << round << " op " << i;
        if (c == 0) ref[k] = v;
        if (c == 2 && it != ref.end()) ref.erase(it);
      }
    }
    pool.reopen();
    const auto* report = pool->recovery_report();
    ASSERT_NE(report, nullptr);
    EXPECT_TRUE(report->failed_roots.empty());
    EXPECT_TRUE(report->unknown_roots.empty());
    EXPECT_TRUE(report->heap_rebuilt);
  }
}

TEST(SoftHashTable, ThePapersOrderRecoversAClosedPoolExactlyAcrossRestarts) { survives_restarts<Paper>("soft-rs-paper"); }
TEST(SoftHashTable, TheBodyFirstOrderRecoversAClosedPoolExactlyAcrossRestarts) { survives_restarts<BodyFirst>("soft-rs-bf"); }

TEST(SoftHashTable, ASetRecoversItsKeysAndRemovedKeysStayRemoved) {
  ferrite::test::TempPool pool("soft-set", std::size_t{32} << 20);
  {
    auto s = Paper::create(*pool, "s", 1, 16);
    for (std::int64_t k = 1; k <= 200; ++k) ASSERT_TRUE(s->insert(k, 0));
    for (std::int64_t k = 1; k <= 200; k += 2) ASSERT_TRUE(s->remove(k, 0));
  }
  pool.reopen();
  auto s = Paper::attach(*pool, "s", 1);
  for (std::int64_t k = 1; k <= 200; ++k) EXPECT_EQ(s->contains(k, 0), k % 2 == 0) << k;
  // Re-inserting a removed key reuses a PNode with flipped validity.
  for (std::int64_t k = 1; k <= 200; k += 2) ASSERT_TRUE(s->insert(k, 0));
  for (std::int64_t k = 1; k <= 200; ++k) EXPECT_TRUE(s->contains(k, 0)) << k;
  EXPECT_EQ(s->slabs(), 1u);  // 200 keys, recycled PNodes: one slab
}

// Small slabs (what the crash campaigns use): a thread takes a new one when
// its slab is used up, and recovery scans them all.
TEST(SoftHashTable, SmallSlabsAreChainedAndAllScannedByRecovery) {
  ferrite::test::TempPool pool("soft-small", std::size_t{32} << 20);
  {
    auto t = BodyFirst::create(*pool, "t", 1, 8, 4096);  // 63 PNodes per slab
    for (std::int64_t k = 1; k <= 500; ++k) ASSERT_FALSE(t->put(k, -k, 0).has_value());
    EXPECT_EQ(t->slabs(), 8u);
  }
  pool.reopen();
  auto t = BodyFirst::attach(*pool, "t", 1);
  Items want;
  for (std::int64_t k = 1; k <= 500; ++k) want.emplace_back(k, -k);
  EXPECT_EQ(t->items(true), want);
}

// P5: a slab is zeroed before it is linked. A heap block dressed as a slab
// full of valid PNodes, freed, is what the next 64 KiB allocation of the
// same arena returns: none of its fake PNodes may survive a restart.
TEST(SoftHashTable, ASlabCarvedFromDirtyHeapMemoryShowsNoStalePNodes) {
  ferrite::test::TempPool pool("soft-dirty", std::size_t{32} << 20);
  constexpr std::size_t kBytes = fs::kDefaultSlabBytes;
  void* junk = pool->heap().alloc(kBytes, 0);
  auto* fake = static_cast<fs::Slab*>(junk);
  std::memset(junk, 0, kBytes);
  fake->magic = fs::kSlabMagic;
  for (std::size_t i = 0; i < kBytes / 64 - 1; ++i) {
    fs::PNode& p = fake->nodes()[i];
    p.valid_start.store(1);
    p.valid_end.store(1);
    p.key.store(static_cast<std::int64_t>(i) + 1000);
    p.value0.store(7);
    p.value1.store(fs::kNoUpdate);
  }
  ferrite::persist::pwb(junk, kBytes);
  ferrite::persist::psync();
  pool->heap().free(junk, 0);
  {
    auto t = Paper::create(*pool, "t", 1, 8);
    ASSERT_FALSE(t->put(1, 11, 0).has_value());
    EXPECT_EQ(t->first_slab(), junk) << "the slab is not the dirty block: the test proves nothing";
  }
  pool.reopen();
  auto t = Paper::attach(*pool, "t", 1);
  EXPECT_EQ(t->items(true), (Items{{1, 11}}));
}

}  // namespace

}  // namespace soft_hash_test
