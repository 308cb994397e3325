// Crash campaigns of Mirror's growing region chain (include/ferrite/mirror/
// heap.h, "Growth"), through adapters/mirror_hashmap.cc's growth variants:
// regions of 256 B (3 nodes each; a test hook, TinyRegions), so the chain
// grows many times inside a campaign of a few dozen operations, and the
// single-thread runs re-attach (Mirror's recovery over the whole chain)
// every 9 operations. Under every model the subject claims (abstract, x86):
//   - grow and grow-nvm-replica: one thread at every crash point, 2 and 3
//     threads sampled — 0 violations, 0 inconclusive;
//   - grow-link-first (a region linked before its header is durable) and
//     recover-no-mark-grown (the pool hook marks region 0 only) caught;
//   - mutation: every persistence site of mirror/heap.h the growth
//     campaign reaches (region 0's header pwb, the growth's header pwb,
//     pfence and link pwb, make's pwb/psync) is caught; the growth's psync
//     is needed only with several threads (justified at the instruction).
// GrowthHappens checks, outside the simulator, that the campaign's workload
// (16 keys, puts and erases) does grow a 256-byte-region chain.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "common/models.h"
#include "common/sanitizer.h"
#include "common/scale.h"
#include "common/subjects.h"
#include "common/temp_pool.h"
#include "ferrite/crash/campaign.h"
#include "ferrite/crash/model.h"
#include "ferrite/crash/mutate.h"
#include "ferrite/mirror/hash_map.h"
#include "ferrite/persist/persist.h"

namespace mirror_growth_crash_test {  // this file's names, apart in a unity build

namespace fc = ferrite::crash;
namespace fm = ferrite::mirror;
using ferrite::test::describe;
using ferrite::test::scaled;
using ferrite::test::subject;

namespace {

struct TinyRegions {
  static constexpr std::size_t kMinRegionBytes = 256;
};

void print(const char* what, const std::string& variant, const std::string& model, const fc::CampaignResult& r) {
  std::printf("[mirror-growth] %s %s [%s]: %llu crash points, %llu images, %llu violations, %llu inconclusive, %.1fs\n",
              variant.c_str(), what, model.c_str(), static_cast<unsigned long long>(r.crash_points),
              static_cast<unsigned long long>(r.images_checked), static_cast<unsigned long long>(r.violations),
              static_cast<unsigned long long>(r.inconclusive), r.seconds);
}

}  // namespace

// The campaign's workload shape (16 keys over 2 buckets, puts and erases,
// EBR holding retired nodes) in 256-byte regions: the chain grows.
TEST(MirrorGrowthCampaign, GrowthHappensWithTheCampaignsWorkload) {
  ferrite::test::TempPool pool("mgc", std::size_t{1} << 20);
  auto m = fm::HashMap<fm::Config<fm::InDram, 0, TinyRegions>>::create(*pool, "m", 1, 2, 256);
  EXPECT_EQ(m->heap().regions(), 1u);
  std::uint64_t x = 7;
  for (int i = 0; i < 40; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const auto k = static_cast<std::int64_t>((x >> 33) % 16);
    if ((x >> 20) % 3 == 0) m->erase(k, 0);
    else m->put(k, i, 0);
  }
  EXPECT_GE(m->heap().regions(), 2u);
}

class MirrorGrowthCorrect : public ::testing::TestWithParam<const char*> {};

TEST_P(MirrorGrowthCorrect, OneThreadEveryCrashPoint) {
  const auto& s = subject("mirror-hashmap", GetParam());
  ASSERT_FALSE(s.expect_violation);
  for (const auto& model : ferrite::test::claimed_models(s)) {
    fc::CampaignConfig cfg;
    cfg.model = model;
    cfg.threads = 1;
    cfg.ops = scaled(100, 20);
    cfg.images = 3;
    cfg.seed = 13;
    cfg.pool_size = std::size_t{1} << 20;
    const auto r = ferrite::test::expect_every_point_clean(s, cfg, "mirror-growth");
    print("1 thread, every point", GetParam(), model, r);
  }
}

TEST_P(MirrorGrowthCorrect, SeveralThreadsSampled) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  const auto& s = subject("mirror-hashmap", GetParam());
  for (const auto& model : ferrite::test::claimed_models(s))
    for (int threads : {2, 3}) {
      fc::CampaignConfig cfg;
      cfg.model = model;
      cfg.threads = threads;
      cfg.ops = scaled(200, 40);
      cfg.crash_points = scaled(100, 20);
      cfg.images = 8;
      cfg.seed = 21 + static_cast<std::uint64_t>(threads);
      cfg.pool_size = std::size_t{1} << 20;
      auto r = fc::run_campaign(s, cfg);
      ASSERT_TRUE(r.error.empty()) << r.error;
      EXPECT_GT(r.images_checked, 0u);
      EXPECT_EQ(r.violations, 0u) << describe(r);
      EXPECT_EQ(r.inconclusive, 0u) << describe(r);
      print((std::to_string(threads) + " threads, sampled").c_str(), GetParam(), model, r);
    }
}

INSTANTIATE_TEST_SUITE_P(Mirror, MirrorGrowthCorrect, ::testing::Values("correct-grow", "correct-grow-nvm-replica"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string n = i.param;
                           for (auto& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

class MirrorGrowthBroken : public ::testing::TestWithParam<const char*> {};

TEST_P(MirrorGrowthBroken, IsCaughtUnderEveryModel) {
  const auto& s = subject("mirror-hashmap", GetParam());
  ASSERT_TRUE(s.expect_violation);
  for (const auto& model : ferrite::test::claimed_models(s)) {
    SCOPED_TRACE("model " + model);
    fc::CampaignConfig cfg;
    cfg.threads = 1;
    cfg.ops = scaled(120, 60);
    cfg.images = 6;
    cfg.seed = 3;
    cfg.pool_size = std::size_t{1} << 20;
    cfg.model = model;
    cfg.stop_after_violations = 1;
    cfg.recovery_timeout_s = 1;
    cfg.recovery_cpu_s = 0.2;
    auto r = ferrite::test::catch_with_seeds(s, cfg);
    ASSERT_TRUE(r.error.empty()) << r.error;
    ASSERT_GE(r.violations, 1u) << GetParam() << " not caught under " << model;
    const auto& v = r.details.front();
    std::printf("[mirror-growth] %s [%s] caught (seed %llu): %s %s\n  replay: %s\n", GetParam(), model.c_str(),
                static_cast<unsigned long long>(r.seed), v.property.c_str(), v.reason.c_str(), v.replay.c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(Mirror, MirrorGrowthBroken, ::testing::Values("grow-link-first", "recover-no-mark-grown"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string n = i.param;
                           for (auto& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// docs/crash.md §6's mutation testing on the growth subject, restricted to
// the sites of mirror/heap.h: every one the campaign reaches is caught.
TEST(MirrorGrowthMutation, EveryHeapSiteTheGrowthReachesIsCaught) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  const auto& s = subject("mirror-hashmap", "correct-grow");
  fc::CampaignConfig cfg;
  cfg.threads = 1;
  cfg.ops = 60;
  cfg.images = 2;
  cfg.pool_size = std::size_t{1} << 20;
  cfg.crash_create = true;  // region 0's header pwb (the constructor's) is reached in creation
  cfg.dirty_heap = true;    // a lost header then reads as garbage, not as zeros
  const auto m = fc::run_mutation(s, cfg, {}, /*seeds=*/4, [](const ferrite::crash::sites::Site& site) {
    return site.file.find("ferrite/mirror/heap.h") != std::string::npos;
  });
  ASSERT_TRUE(m.error.empty()) << m.error;
  std::size_t heap_sites = 0, caught = 0;
  std::string report;
  for (const auto& v : m.sites) {
    report += "\n  " + v.site.id() + " (" + v.site.function + "): " + v.how;
    if (v.site.file.find("ferrite/mirror/heap.h") == std::string::npos) continue;
    ++heap_sites;
    caught += v.caught ? 1 : 0;
    // The growth's final psync is redundant with one thread (the grower's
    // next make psyncs before any CAS of its own can link an object of the
    // new region) and needed with several: justified at the instruction
    // (heap.h, Heap::grow), not asserted here.
    if (v.site.verb == ferrite::persist::Verb::kPsync && v.site.function.find("::grow(") != std::string::npos) continue;
    EXPECT_TRUE(v.caught) << v.site.id() << " (" << v.site.function << ") is not caught";
  }
  EXPECT_GE(heap_sites, 6u) << report;  // make: pwb, psync; growth: header pwb, pfence, link pwb, psync
  std::printf("[mirror-growth] mutation of mirror-hashmap/correct-grow: %zu/%zu heap.h sites caught, %.1fs%s\n", caught,
              heap_sites, m.seconds, report.c_str());
}

}  // namespace mirror_growth_crash_test
