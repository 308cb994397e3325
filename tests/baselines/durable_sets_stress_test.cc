// Stress (and TSan) test of the Harris-list hash tables
// (include/ferrite/baselines/harris_hash.h) under all three policies, and of
// SOFT (soft_hash.h) with both create orders: 4
// threads on 2 shared buckets. Each thread owns the keys k with
// k % 4 == tid and cycles them through put / get / put / erase (answers
// checked: nobody else touches them), while every thread also reads the
// other threads' keys (answers unchecked, races on the same links are the
// point). At the end the table is empty and the nodes went through EBR.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "common/scale.h"
#include "common/temp_pool.h"
#include "set_checks.h"
#include "ferrite/baselines/harris_hash.h"
#include "ferrite/baselines/soft_hash.h"

namespace durable_sets_stress_test {  // this file's names, apart in a unity build

namespace fb = ferrite::baselines;
using ferrite::test::scaled;

namespace {

constexpr int kThreads = 4;

void hammer(auto& t, int rounds) { ferrite::test::hammer_owned_keys(t, kThreads, rounds); }

TEST(HarrisHashStress, TransientTableSurvivesFourThreadsOnSharedLists) {
  fb::TransientHarrisHashTable t(kThreads, 2);
  hammer(t, scaled(40000, 2000));
}

TEST(HarrisHashStress, IzraelevitzTableSurvivesFourThreadsOnSharedLists) {
  ferrite::test::TempPool pool("harris-stress-izr", std::size_t{32} << 20);
  auto t = fb::IzraelevitzHashTable<>::create(*pool, "t", kThreads, 2);
  hammer(*t, scaled(10000, 500));
}

TEST(HarrisHashStress, NVTraverseTableSurvivesFourThreadsOnSharedLists) {
  ferrite::test::TempPool pool("harris-stress-nvt", std::size_t{32} << 20);
  auto t = fb::NVTraverseHashTable<>::create(*pool, "t", kThreads, 2);
  hammer(*t, scaled(20000, 1000));
}

// SOFT (soft_hash.h): the same, with the per-key lock of map updates and
// erases on top of the lock-free list.
TEST(SoftHashStress, ThePapersOrderSurvivesFourThreadsOnSharedLists) {
  ferrite::test::TempPool pool("soft-stress", std::size_t{32} << 20);
  auto t = fb::SoftHashTable<>::create(*pool, "t", kThreads, 2);
  hammer(*t, scaled(20000, 1000));
}

TEST(SoftHashStress, TheBodyFirstOrderSurvivesFourThreadsOnSharedLists) {
  ferrite::test::TempPool pool("soft-stress-bf", std::size_t{32} << 20);
  auto t = fb::SoftHashTable<fb::soft::Order::kBodyFirst>::create(*pool, "t", kThreads, 2);
  hammer(*t, scaled(20000, 1000));
}

}  // namespace

}  // namespace durable_sets_stress_test
