// Crash campaigns (crash/campaign.h) on the ordered nbMontage maps through
// their adapters (adapters/montage_bst.cc, adapters/montage_skiplist.cc), checked for buffered durable
// linearizability (everything completed before the last completed sync's
// invocation survives; what survives is a real-time-consistent prefix),
// recovery in a fresh process, under every model the subject claims:
//   - one thread: every persistence verb is a crash point;
//   - three threads, scheduled: >= 3,000 images per model in CI, >= 10,000
//     with FERRITE_MONTAGE_FULL_CAMPAIGNS=1;
//   - crashes during recovery (idempotence of the scan and of the rebuild);
//   - the epoch system's broken variants, registered for each map: caught.
// Every correct campaign must have 0 violations AND 0 inconclusive images.
// Loop sizes scale with FERRITE_TEST_SCALE.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <string>

#include "common/models.h"
#include "common/sanitizer.h"
#include "common/scale.h"
#include "common/subjects.h"
#include "ferrite/crash/campaign.h"

namespace maps_crash_test {  // this file's names, apart in a unity build

namespace fc = ferrite::crash;
using ferrite::test::claimed_models;
using ferrite::test::describe;
using ferrite::test::scaled;
using ferrite::test::subject;

namespace {

void report(const char* what, const std::string& structure, const std::string& model, const fc::CampaignResult& r) {
  std::printf("[montage] %s/%s %s [%s]: %zu ops, %llu verbs, %llu crash points, %llu images, %llu violations, %llu "
              "inconclusive, %.1fs\n",
              structure.c_str(), r.variant.c_str(), what, model.c_str(), r.ops, static_cast<unsigned long long>(r.verbs),
              static_cast<unsigned long long>(r.crash_points), static_cast<unsigned long long>(r.images_checked),
              static_cast<unsigned long long>(r.violations), static_cast<unsigned long long>(r.inconclusive), r.seconds);
}

std::string param_name(const ::testing::TestParamInfo<const char*>& i) {
  std::string n = i.param;
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

class MontageMapCorrect : public ::testing::TestWithParam<const char*> {};

TEST_P(MontageMapCorrect, OneThreadEveryCrashPointUnderEveryClaimedModelLosesNothingSynced) {
  const auto& s = subject(GetParam(), "correct");
  ASSERT_FALSE(s.expect_violation);
  for (const auto& model : claimed_models(s)) {
    SCOPED_TRACE(model);
    fc::CampaignConfig cfg;
    cfg.model = model;
    cfg.threads = 1;
    cfg.ops = scaled(200, 40);
    cfg.images = 4;
    cfg.seed = 11;
    auto r = fc::run_campaign(s, cfg);
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(r.violations, 0u) << describe(r);
    EXPECT_EQ(r.inconclusive, 0u) << describe(r);
    EXPECT_EQ(r.crash_points, r.verbs + 1) << "every verb must be a crash point";
    EXPECT_GE(r.verbs, cfg.ops / 2);
    report("1 thread", GetParam(), model, r);
  }
}

TEST_P(MontageMapCorrect, ThreeThreadsTenThousandImagesUnderEveryClaimedModelLoseNothingSynced) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  const auto& s = subject(GetParam(), "correct");
  for (const auto& model : claimed_models(s)) {
    SCOPED_TRACE(model);
    fc::CampaignConfig cfg;
    cfg.model = model;
    cfg.threads = 3;
    cfg.ops = scaled(900, 60);
    // CI runs 400 crash points (>= 3,000 images per model); the >= 10,000
    // images per model of docs/montage.md §4 are this test with
    // FERRITE_MONTAGE_FULL_CAMPAIGNS=1 (1,000 points), run by hand: a
    // scheduled 3-thread crash point costs about 0.3 s here.
    const bool full = std::getenv("FERRITE_MONTAGE_FULL_CAMPAIGNS") != nullptr;
    cfg.crash_points = scaled(full ? 1000 : 400, 60);
    cfg.images = 10;
    cfg.seed = 5;
    auto r = fc::run_campaign(s, cfg);
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(r.violations, 0u) << describe(r);
    EXPECT_EQ(r.inconclusive, 0u) << describe(r);
    EXPECT_GE(r.images_checked, scaled<std::uint64_t>(full ? 10000 : 3000, 200));
    report("3 threads", GetParam(), model, r);
  }
}

// Recovery resets the blocks it rejects, moves the global epoch, and the
// map rebuilds its index: a crash anywhere in recovery must leave a pool
// that recovers to the same state.
TEST_P(MontageMapCorrect, RecoveryCrashedAgainAndAgainRecoversTheSameState) {
  const auto& s = subject(GetParam(), "correct");
  for (const auto& model : claimed_models(s)) {
    SCOPED_TRACE(model);
    fc::CampaignConfig cfg;
    cfg.model = model;
    cfg.threads = 1;
    cfg.ops = scaled(40, 20);
    cfg.images = 2;
    cfg.seed = 4;
    cfg.recovery_crash_depth = 2;
    cfg.recovery_crash_points = 2;
    cfg.recovery_crash_every = 8;
    auto r = fc::run_campaign(s, cfg);
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(r.violations, 0u) << describe(r);
    EXPECT_EQ(r.inconclusive, 0u) << describe(r);
    EXPECT_GT(r.nested_images, 0u) << "no recovery was crashed";
    report("crashed recovery", GetParam(), model, r);
  }
}

INSTANTIATE_TEST_SUITE_P(Maps, MontageMapCorrect, ::testing::Values("montage-bst", "montage-skiplist"), param_name);

// ------------------------------------------------------------ broken variants
struct Broken {
  const char* structure;
  const char* variant;
  int threads;
};
void PrintTo(const Broken& b, std::ostream* os) { *os << b.structure << "/" << b.variant << " " << b.threads << " thread(s)"; }
class MontageMapBroken : public ::testing::TestWithParam<Broken> {};

TEST_P(MontageMapBroken, IsCaughtUnderEveryClaimedModel) {
  if (GetParam().threads > 1) FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  const auto& s = subject(GetParam().structure, GetParam().variant);
  ASSERT_TRUE(s.expect_violation);
  for (const auto& model : claimed_models(s)) {
    SCOPED_TRACE(model);
    fc::CampaignConfig cfg;
    cfg.model = model;
    cfg.threads = GetParam().threads;
    cfg.ops = GetParam().threads == 1 ? 100 : scaled(600, 200);
    if (GetParam().threads > 1) cfg.crash_points = scaled(600, 200);
    cfg.images = 6;
    cfg.seed = 1;
    cfg.stop_after_violations = 1;
    auto r = ferrite::test::catch_with_seeds(s, cfg);
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_GT(r.violations, 0u) << GetParam().structure << "/" << GetParam().variant << " not caught under " << model;
    report("broken", GetParam().structure, model, r);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, MontageMapBroken,
                         ::testing::Values(Broken{"montage-bst", "no-tbp-writeback", 1},
                                           Broken{"montage-bst", "ignore-anti", 1},
                                           Broken{"montage-bst", "accept-uncommitted", 3},
                                           Broken{"montage-skiplist", "no-tbp-writeback", 1},
                                           Broken{"montage-skiplist", "ignore-anti", 1},
                                           Broken{"montage-skiplist", "accept-uncommitted", 3}),
                         [](const auto& i) {
                           std::string n = std::string(i.param.structure) + "_" + i.param.variant;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// "Recovery does not restore the global epoch" needs two crashes in a row
// (every map: the hash tables' other campaigns are montage_crash_test.cc's);
// in this recovery the durable resets of the rejected blocks make the
// restore itself redundant (docs/montage.md D14), so the variant the
// campaigns catch is the one that breaks the order between the two:
// the epoch moved past the crashed run's before the resets are durable. A
// crash during recovery in between leaves a pool whose next recovery finds
// the crashed run's last two epochs old enough (rule 1) and revives their
// unsynced, never-completed or rejected blocks.
class MontageRecoveryBroken : public ::testing::TestWithParam<const char*> {};

TEST_P(MontageRecoveryBroken, RestoringTheEpochBeforeTheResetsAreDurableIsCaughtByACrashDuringRecovery) {
  const auto& s = subject(GetParam(), "restore-before-reset");
  ASSERT_TRUE(s.expect_violation);
  for (const auto& model : claimed_models(s)) {
    SCOPED_TRACE(model);
    fc::CampaignConfig cfg;
    cfg.model = model;
    cfg.threads = 1;
    cfg.ops = 100;
    cfg.images = 2;
    cfg.seed = 4;
    cfg.recovery_crash_depth = 1;
    cfg.recovery_crash_points = 4;
    cfg.recovery_crash_every = 2;
    cfg.stop_after_violations = 1;
    auto r = fc::run_campaign(s, cfg);
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_GT(r.violations, 0u) << GetParam() << "/restore-before-reset not caught under " << model;
    report("broken, crashed recovery", GetParam(), model, r);
  }
}

INSTANTIATE_TEST_SUITE_P(Structures, MontageRecoveryBroken,
                         ::testing::Values("montage-hashmap", "montage-bst", "montage-skiplist", "montage-splitorder"),
                         param_name);

}  // namespace

}  // namespace maps_crash_test
