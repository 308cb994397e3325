// The competitor BSTs and skip lists written on a persistence policy
// (include/ferrite/baselines/nm_bst.h, hs_skip_list.h; transient /
// Izraelevitz / NVTraverse) and the Harris list (harris_hash.h with one
// bucket): sequential behaviour against std::map as a map and as a set,
// concurrent threads keeping the keys they own, and (durable ones) a clean
// restart that keeps the contents and frees nothing live. Crash
// consistency: durable_ordered_crash_test.cc.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/baselines/harris_hash.h"
#include "ferrite/baselines/hs_skip_list.h"
#include "ferrite/baselines/nm_bst.h"
#include "set_checks.h"

namespace durable_ordered_test {  // this file's names, apart in a unity build

namespace fb = ferrite::baselines;
using ferrite::test::map_op;
using ferrite::test::matches_std_map;
using ferrite::test::scaled;

namespace {

template <template <class> class S>
struct Kind {
  template <class P>
  static std::unique_ptr<S<P>> make(int threads) {
    return std::make_unique<S<P>>(threads);
  }
  template <class P>
  static std::unique_ptr<S<P>> create(ferrite::pmem::Pool& pool, const char* name, int threads) {
    return S<P>::create(pool, name, threads);
  }
  template <class P>
  static std::unique_ptr<S<P>> attach(ferrite::pmem::Pool& pool, const char* name, int threads) {
    return S<P>::attach(pool, name, threads);
  }
};
using BstKind = Kind<fb::NmBst>;
using SkipKind = Kind<fb::HsSkipList>;

template <class K>
class OrderedCompetitor : public ::testing::Test {};
using Kinds = ::testing::Types<BstKind, SkipKind>;
TYPED_TEST_SUITE(OrderedCompetitor, Kinds);

TYPED_TEST(OrderedCompetitor, TransientMapAndSetAgreeWithStdMap) {
  auto m = TypeParam::template make<fb::durable::Transient>(1);
  matches_std_map([&](int c, std::int64_t k, std::int64_t v) { return map_op(*m, c, k, v, 0); }, scaled(20000, 2000), 64);
  auto s = TypeParam::template make<fb::durable::Transient>(1);
  ferrite::test::set_matches_std_map(*s, scaled(20000, 2000), 64);
  // Ascending, every key once.
  const auto items = m->items(true);
  for (std::size_t i = 1; i < items.size(); ++i) ASSERT_LT(items[i - 1].first, items[i].first);
}

TYPED_TEST(OrderedCompetitor, ConcurrentThreadsKeepEveryKeyTheyOwn) {
  auto t = TypeParam::template make<fb::durable::Transient>(4);
  ferrite::test::threads_conserve_their_keys(*t, 4, scaled(20000, 1000));
}

TYPED_TEST(OrderedCompetitor, DurableOnesAgreeWithStdMapAndSurviveACleanRestart) {
  ferrite::test::TempPool pool("ordered", std::size_t{32} << 20);
  {
    auto izr = TypeParam::template create<fb::durable::Izraelevitz<>>(*pool, "izr", 1);
    auto nvt = TypeParam::template create<fb::durable::NVTraverse<>>(*pool, "nvt", 1);
    auto set = TypeParam::template create<fb::durable::NVTraverse<>>(*pool, "set", 1);
    matches_std_map([&](int c, std::int64_t k, std::int64_t v) { return map_op(*izr, c, k, v, 0); }, scaled(5000, 500), 64);
    matches_std_map([&](int c, std::int64_t k, std::int64_t v) { return map_op(*nvt, c, k, v, 0); }, scaled(5000, 500), 64);
    ferrite::test::set_matches_std_map(*set, scaled(5000, 500), 64);
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> before_izr, before_nvt, before_set;
  {
    before_izr = TypeParam::template attach<fb::durable::Izraelevitz<>>(*pool, "izr", 1)->items(true);
    before_nvt = TypeParam::template attach<fb::durable::NVTraverse<>>(*pool, "nvt", 1)->items(true);
    before_set = TypeParam::template attach<fb::durable::NVTraverse<>>(*pool, "set", 1)->items(false);
  }
  ASSERT_FALSE(before_nvt.empty());
  pool.reopen();
  const auto* report = pool->recovery_report();
  ASSERT_NE(report, nullptr);
  EXPECT_TRUE(report->failed_roots.empty());
  EXPECT_TRUE(report->unknown_roots.empty());
  EXPECT_TRUE(report->heap_rebuilt);
  auto izr = TypeParam::template attach<fb::durable::Izraelevitz<>>(*pool, "izr", 1);
  auto nvt = TypeParam::template attach<fb::durable::NVTraverse<>>(*pool, "nvt", 1);
  auto set = TypeParam::template attach<fb::durable::NVTraverse<>>(*pool, "set", 1);
  EXPECT_EQ(izr->items(true), before_izr);
  EXPECT_EQ(nvt->items(true), before_nvt);
  EXPECT_EQ(set->items(false), before_set);
  // Live nodes were kept: allocating after recovery never hands one out.
  for (std::int64_t k = 1000; k < 1200; ++k) ASSERT_FALSE(nvt->put(k, k, 0).has_value());
  EXPECT_EQ(izr->items(true), before_izr);
  EXPECT_EQ(set->items(false), before_set);
}

TYPED_TEST(OrderedCompetitor, DurableConcurrentThreadsKeepEveryKeyTheyOwn) {
  ferrite::test::TempPool pool("ordered-mt", std::size_t{32} << 20);
  auto nvt = TypeParam::template create<fb::durable::NVTraverse<>>(*pool, "nvt", 4);
  ferrite::test::threads_conserve_their_keys(*nvt, 4, scaled(4000, 400));
  auto izr = TypeParam::template create<fb::durable::Izraelevitz<>>(*pool, "izr", 4);
  ferrite::test::threads_conserve_their_keys(*izr, 4, scaled(2000, 200));
}

// The list is the hash table with one bucket: as a set, against std::map.
TEST(HarrisList, OneBucketSetsAgreeWithStdMap) {
  fb::TransientHarrisHashTable t(1, 1);
  ferrite::test::set_matches_std_map(t, scaled(20000, 2000), 64);
  ferrite::test::TempPool pool("harris-list", std::size_t{16} << 20);
  auto nvt = fb::NVTraverseHashTable<>::create(*pool, "nvt", 1, 1);
  ferrite::test::set_matches_std_map(*nvt, scaled(5000, 500), 64);
  EXPECT_EQ(nvt->buckets(), 1u);
}

}  // namespace

}  // namespace durable_ordered_test
