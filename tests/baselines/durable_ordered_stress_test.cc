// Stress (and TSan) test of the competitor BSTs and skip lists
// (include/ferrite/baselines/nm_bst.h, hs_skip_list.h) and the one-bucket
// Harris list under all three policies: 4 threads, each owning the keys k
// with k % 4 == tid among 128 keys, cycling them through put / get / put /
// erase (answers checked) while reading the others' keys (races on the same
// edges and towers are the point). At the end the structure is empty and
// the nodes went through EBR.
#include <gtest/gtest.h>

#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/baselines/harris_hash.h"
#include "ferrite/baselines/hs_skip_list.h"
#include "ferrite/baselines/nm_bst.h"
#include "set_checks.h"

namespace durable_ordered_stress_test {  // this file's names, apart in a unity build

namespace fb = ferrite::baselines;
using ferrite::test::scaled;

namespace {

constexpr int kThreads = 4;
void hammer(auto& t, int rounds) { ferrite::test::hammer_owned_keys(t, kThreads, rounds); }

TEST(OrderedCompetitorStress, TransientBstAndSkipListSurviveFourThreads) {
  fb::TransientNmBst bst(kThreads);
  hammer(bst, scaled(20000, 2000));
  fb::TransientHsSkipList skip(kThreads);
  hammer(skip, scaled(20000, 2000));
}

TEST(OrderedCompetitorStress, IzraelevitzBstAndSkipListSurviveFourThreads) {
  ferrite::test::TempPool pool("ordered-stress-izr", std::size_t{32} << 20);
  auto bst = fb::IzraelevitzNmBst<>::create(*pool, "bst", kThreads);
  hammer(*bst, scaled(4000, 400));
  auto skip = fb::IzraelevitzHsSkipList<>::create(*pool, "skip", kThreads);
  hammer(*skip, scaled(3000, 300));
}

TEST(OrderedCompetitorStress, NVTraverseBstSkipListAndListSurviveFourThreads) {
  ferrite::test::TempPool pool("ordered-stress-nvt", std::size_t{32} << 20);
  auto bst = fb::NVTraverseNmBst<>::create(*pool, "bst", kThreads);
  hammer(*bst, scaled(8000, 800));
  auto skip = fb::NVTraverseHsSkipList<>::create(*pool, "skip", kThreads);
  hammer(*skip, scaled(8000, 800));
  auto list = fb::NVTraverseHashTable<>::create(*pool, "list", kThreads, 1);
  hammer(*list, scaled(4000, 400));
}

}  // namespace

}  // namespace durable_ordered_stress_test
