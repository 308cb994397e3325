// Crash campaigns (crash/campaign.h, simulator backend) on the durable
// Harris-list hash tables (include/ferrite/baselines/harris_hash.h) through
// adapters/durable_sets.cc: the Izraelevitz transform and NVTraverse, each
// as a map and as a set, under every model each subject claims
// (tests/common/models.h):
//   * one thread: every persistence verb is a crash point, 0 violations,
//     0 inconclusive;
//   * three threads: sampled crash points, 0 violations, 0 inconclusive;
//     >= 10,000 images built per model (full scale) for the maps (the sets
//     run the same code without the value CAS: one smaller campaign);
//   * crashes during creation and during the recovery that follows (one
//     subject: every durable table has the same root and trace);
//   * each broken variant caught (no-cas-pwb: one thread; no-make-persistent:
//     only another thread's CAS read before its write-back exposes it, so 3
//     threads, every crash point until the first catch).
// Every image is recovered in a worker process that never saw the crashed
// run (docs/crash.md §2): recovery is the pool's trace from the root.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "common/models.h"
#include "common/sanitizer.h"
#include "common/scale.h"
#include "common/subjects.h"
#include "broken_checks.h"
#include "ferrite/crash/campaign.h"

namespace durable_sets_crash_test {  // this file's names, apart in a unity build

namespace fc = ferrite::crash;
using ferrite::test::Case;
using ferrite::test::describe;
using ferrite::test::scaled;
using ferrite::test::subject;

namespace {

class DurableSetCorrect : public ::testing::TestWithParam<Case> {};

TEST_P(DurableSetCorrect, SurvivesEveryCrashPointOfASingleThreadRun) {
  const auto& s = subject(GetParam().structure, GetParam().variant);
  ASSERT_FALSE(s.expect_violation);
  for (const auto& model : ferrite::test::claimed_models(s)) {
    fc::CampaignConfig cfg;
    cfg.model = model;
    cfg.threads = 1;
    cfg.ops = scaled(80, 20);
    cfg.images = 3;
    cfg.seed = 11;
    cfg.pool_size = 2u << 20;
    ferrite::test::expect_every_point_clean(s, cfg, "durable-sets");
  }
}

TEST_P(DurableSetCorrect, SurvivesSampledCrashesOfThreeThreadRuns) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  const auto& s = subject(GetParam().structure, GetParam().variant);
  // Maps: >= 10,000 images built per model at full scale.
  const bool map = s.structure.find("hashmap") != std::string::npos;
  for (const auto& model : ferrite::test::claimed_models(s)) {
    fc::CampaignConfig cfg;
    cfg.threads = 3;
    cfg.ops = scaled(400, 40);
    cfg.crash_points = scaled(520, 20);
    cfg.images = 18;  // + 2 fixed
    cfg.seed = 7;
    cfg.pool_size = 2u << 20;
    cfg.model = model;
    ferrite::test::expect_sampled_clean(s, cfg, scaled<std::uint64_t>(map ? 10000 : 2000, 50), "durable-sets");
  }
}

INSTANTIATE_TEST_SUITE_P(HarrisHash, DurableSetCorrect,
                         ::testing::Values(Case{"izraelevitz-hashmap", "correct"},
                                           Case{"izraelevitz-hashset", "correct"},
                                           Case{"nvtraverse-hashmap", "correct"},
                                           Case{"nvtraverse-hashset", "correct"}),
                         ferrite::test::case_name);

// Crashes inside pool and table creation (the bucket array is durable
// before the root names it), and during the recovery that follows (the
// trace writes nothing: the recovery crash points are the pool's).
TEST(DurableSetRecovery, SurvivesCrashesDuringCreationAndDuringRecovery) {
  const auto& s = subject("nvtraverse-hashmap", "correct");
  for (const auto& model : ferrite::test::claimed_models(s)) {
    SCOPED_TRACE("model " + model);
    fc::CampaignConfig cfg;
    cfg.ops = 8;
    cfg.images = 1;
    cfg.seed = 31;
    cfg.pool_size = 2u << 20;
    cfg.model = model;
    cfg.crash_create = true;
    cfg.create_crash_points = ferrite::test::create_points();
    cfg.recovery_crash_depth = 1;
    cfg.recovery_crash_every = 100;
    auto r = fc::run_campaign(s, cfg);
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_GT(r.create_points, 0u);
    EXPECT_EQ(r.violations, 0u) << describe(r);
    EXPECT_EQ(r.inconclusive, 0u) << describe(r);
    ferrite::test::print_recovery_campaign("[durable-sets]", s, model, r);
  }
}

// ------------------------------------------------------------ broken variants
using ferrite::test::BrokenCase;
class DurableSetBroken : public ::testing::TestWithParam<BrokenCase> {};

TEST_P(DurableSetBroken, IsCaughtUnderEveryClaimedModel) {
  if (GetParam().threads > 1) FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  ferrite::test::expect_broken_caught(GetParam(), "[durable-sets]");
}

INSTANTIATE_TEST_SUITE_P(HarrisHash, DurableSetBroken,
                         ::testing::Values(BrokenCase{"izraelevitz-hashmap", "no-cas-pwb", 1},
                                           BrokenCase{"nvtraverse-hashmap", "no-cas-pwb", 1},
                                           BrokenCase{"nvtraverse-hashset", "no-make-persistent", 3}),
                         ferrite::test::broken_case_name);

}  // namespace

}  // namespace durable_sets_crash_test
