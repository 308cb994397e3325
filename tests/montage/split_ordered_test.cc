// Unit tests of the split-ordered hash table on nbMontage
// (montage/split_ordered.h): the split order itself, the map specification
// against std::map while the table resizes, the index invariants (S1, S2)
// after growth, and recovery: a clean restart keeps exactly the synced
// state (erased and replaced values stay gone), drops what no sync covered,
// rebuilds every bucket, and gives the same table with 1 and 2 recovery
// threads. The concurrent resizing tests are split_ordered_stress_test.cc.
// The tests without a restart run on the transient original too
// (montage/transient_sys.h, tests/montage/systems.h).
#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "common/temp_pool.h"
#include "ferrite/montage/hash_map.h"
#include "ferrite/montage/split_ordered.h"
#include "montage/systems.h"

namespace split_ordered_test {  // this file's names, apart in a unity build

namespace fm = ferrite::montage;
using ferrite::test::TempPool;
using ferrite::test::montage_systems::make;
using Map = fm::SplitOrderedMap<>;

namespace {

fm::EpochOptions manual() {
  fm::EpochOptions o;
  o.epoch_length = std::chrono::microseconds{0};
  return o;
}

std::vector<std::pair<std::int64_t, std::int64_t>> sorted(const std::map<std::int64_t, std::int64_t>& m) {
  return {m.begin(), m.end()};
}

TEST(SplitOrder, EachBucketsDummyPrecedesItsKeysAndItsChildBucketsAtEverySize) {
  EXPECT_EQ(Map::reverse_bits(1), std::uint64_t{1} << 63);
  EXPECT_EQ(Map::reverse_bits(0x00000000000000f1ull), 0x8f00000000000000ull);
  for (std::uint64_t x : {0ull, 1ull, 0x123456789abcdefull, ~0ull}) EXPECT_EQ(Map::reverse_bits(Map::reverse_bits(x)), x);
  for (std::int64_t k = -500; k < 500; ++k) {
    const std::uint64_t h = Map::hash(k);
    ASSERT_EQ(h >> 63, 0u);
    const std::uint64_t so = Map::so_regular(h);
    ASSERT_EQ(so & 1, 1u) << "regular keys are odd";
    for (std::uint64_t size = 1; size <= (1u << 16); size *= 2) {
      const std::uint64_t b = h & (size - 1);
      // The bucket's dummy comes before the key, and the next bucket's
      // dummy in split order (the key's bucket at 2*size, or another) after it.
      ASSERT_LT(Map::so_dummy(b), so) << k << " size " << size;
      ASSERT_EQ(Map::so_dummy(b) & 1, 0u);
      const std::uint64_t child = h & (2 * size - 1);
      ASSERT_LE(Map::so_dummy(b), Map::so_dummy(child)) << "a split bucket's dummy follows its parent's";
      ASSERT_LT(Map::so_dummy(child), so);
    }
  }
}

// On both systems: nbMontage's and the transient original's.
template <class M>
class SplitOrderedOn : public ::testing::Test {};
using Maps = ::testing::Types<fm::SplitOrderedMap<>, fm::TransientSplitOrderedMap<>>;
TYPED_TEST_SUITE(SplitOrderedOn, Maps);

TYPED_TEST(SplitOrderedOn, PutGetEraseFollowTheMapSpecificationWhileTheTableGrows) {
  using M = TypeParam;
  TempPool pool{"montage-so"};
  std::map<std::int64_t, std::int64_t> ref;
  auto expect = [&](std::int64_t k) {
    auto it = ref.find(k);
    return it == ref.end() ? std::nullopt : std::optional<std::int64_t>(it->second);
  };
  fm::SplitOrderedOptions so;  // 2 buckets, max load 2
  auto m = make<M>(pool, "m", 1, manual(), so);
  EXPECT_EQ(m->bucket_count(), 2u);
  std::uint64_t r = 1;
  for (int i = 0; i < 20000; ++i) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    // Negative keys, and a range that grows: the table doubles many times.
    const auto k = static_cast<std::int64_t>((r >> 33) % (200 + i / 10)) - 100;
    const auto c = (r >> 20) % 4;
    if (c < 2) {
      ASSERT_EQ(m->put(0, k, i), expect(k)) << "put " << k << " at op " << i;
      ref[k] = i;
    } else if (c == 2) {
      ASSERT_EQ(m->erase(0, k), expect(k)) << "erase " << k << " at op " << i;
      ref.erase(k);
    } else {
      ASSERT_EQ(m->get(0, k), expect(k)) << "get " << k << " at op " << i;
    }
    if (i % 64 == 0) m->sync();
  }
  EXPECT_EQ(m->contents(), sorted(ref));
  EXPECT_EQ(m->approximate_size(), static_cast<std::int64_t>(ref.size()));
  // Grew past max load 2 as keys were added (it never shrinks).
  EXPECT_GE(m->bucket_count() * 2 * 2, ref.size());
  EXPECT_GE(m->bucket_count(), 256u);
  std::uint64_t initialized = 0;
  EXPECT_EQ(m->check_index(&initialized), "");
  EXPECT_GT(initialized, 1u);
  EXPECT_LE(initialized, m->bucket_count());
}

TYPED_TEST(SplitOrderedOn, BucketsAreInitializedLazilyParentFirst) {
  using M = TypeParam;
  TempPool pool{"montage-so"};
  fm::SplitOrderedOptions so;
  so.initial_buckets = 1024;
  auto m = make<M>(pool, "m", 1, manual(), so);
  std::uint64_t initialized = 0;
  EXPECT_EQ(m->check_index(&initialized), "");
  EXPECT_EQ(initialized, 1u) << "only bucket 0 exists at creation";
  // One key: its bucket and every ancestor (its bucket minus top bits) only.
  m->put(0, 42, 1);
  const std::uint64_t b = M::hash(42) & 1023;
  EXPECT_EQ(m->check_index(&initialized), "");
  EXPECT_EQ(initialized, static_cast<std::uint64_t>(std::popcount(b)) + 1) << "bucket " << b << " and its ancestors";
  EXPECT_EQ(m->get(0, 42), 1);
  EXPECT_EQ(m->get(0, 43), std::nullopt);
}

TEST(SplitOrderedMap, ACleanRestartKeepsTheSyncedStateRebuildsEveryBucketAndKeepsWorking) {
  TempPool pool{"montage-so", std::size_t{128} << 20};
  std::map<std::int64_t, std::int64_t> ref;
  fm::SplitOrderedOptions so;
  so.value_bytes = 100;
  {
    auto m = Map::create(*pool, "m", 1, so, manual());
    for (std::int64_t k = 0; k < 3000; ++k) m->put(0, k, k), ref[k] = k;
    for (std::int64_t k = 0; k < 3000; k += 3) m->erase(0, k), ref.erase(k);  // anti-nodes
    for (std::int64_t k = 1; k < 3000; k += 3) m->put(0, k, -k), ref[k] = -k;  // replacements
    m->sync();
    // Not covered by any sync: a crash may drop them; recovery keeps
    // epochs <= e-2 only, so after this simulated crash (abandon: the
    // destructor syncs nothing; a clean close would keep them) it does.
    m->put(0, 1'000'000, 1);
    m->erase(0, 2);
    EXPECT_EQ(m->get(0, 1'000'000), 1);
    m->abandon();
  }
  for (const int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    pool.reopen();
    fm::EpochOptions o = manual();
    o.recovery_threads = threads;
    fm::RecoveryStats st;
    auto m = Map::attach(*pool, "m", 1, so, o, &st);
    EXPECT_EQ(m->contents(), sorted(ref));
    EXPECT_EQ(st.payloads_kept, ref.size());
    // The first recovery finds the erased and replaced payloads cancelled
    // by their anti-nodes and resets them durably (D9): the second finds
    // none left.
    if (threads == 1) EXPECT_GT(st.cancelled, 0u) << "erased and replaced payloads are cancelled by their anti-nodes";
    else EXPECT_EQ(st.cancelled, 0u) << "the first recovery's resets are durable";
    std::uint64_t initialized = 0;
    EXPECT_EQ(m->check_index(&initialized), "");
    EXPECT_EQ(initialized, m->bucket_count()) << "recovery builds every bucket's dummy";
    EXPECT_GE(m->bucket_count() * so.max_load, ref.size());
    EXPECT_EQ(m->approximate_size(), static_cast<std::int64_t>(ref.size()));
  }
  // The rebuilt index keeps working, and grows again.
  pool.reopen();
  auto m = Map::attach(*pool, "m", 1, so, manual());
  for (auto& [k, v] : ref) ASSERT_EQ(m->put(0, k, v + 1), v);
  for (std::int64_t k = 10'000; k < 20'000; ++k) ASSERT_EQ(m->put(0, k, k), std::nullopt);
  for (auto& [k, v] : ref) ASSERT_EQ(m->erase(0, k), v + 1);
  EXPECT_EQ(m->get(0, 1'000'000), std::nullopt);
  EXPECT_EQ(m->contents().size(), 10'000u);
  EXPECT_EQ(m->check_index(), "");
}

TEST(SplitOrderedMap, AnEmptyTableRecoversEmpty) {
  TempPool pool{"montage-so"};
  { auto m = Map::create(*pool, "m", 2, {}, manual()); }
  pool.reopen();
  auto m = Map::attach(*pool, "m", 2, {}, manual());
  EXPECT_TRUE(m->contents().empty());
  EXPECT_EQ(m->check_index(), "");
  EXPECT_EQ(m->put(1, 5, 6), std::nullopt);
  EXPECT_EQ(m->get(0, 5), 6);
}

TEST(SplitOrderedMap, AttachRefusesAnotherStructuresRoot) {
  TempPool pool{"montage-so"};
  { auto h = fm::HashMap<>::create(*pool, "h", 1, {}, manual()); }
  pool.reopen();
  EXPECT_THROW(Map::attach(*pool, "h", 1, {}, manual()), std::runtime_error);
}

}  // namespace

}  // namespace split_ordered_test
