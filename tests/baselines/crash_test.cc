// Crash campaigns (crash/campaign.h, simulator backend) on the persistent
// competitors through their adapters in tools/subjects/baseline_*.cc:
//  * single-threaded: every crash point of a run, 0 violations;
//  * 2-3 threads: sampled crash points, 0 violations;
//  * every registered broken variant of a competitor: >= 1 violation.
// pmdk-tx is not here: PMDK writes back with its own instructions, which
// the simulator cannot see (docs/baselines.md).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/subjects.h"
#include "common/sanitizer.h"
#include "common/models.h"
#include "common/scale.h"
#include "ferrite/crash/campaign.h"
#include "ferrite/crash/model.h"

namespace crash_test {  // this file's names, apart in a unity build

namespace cr = ferrite::crash;
using ferrite::test::scaled;

namespace {

using ferrite::test::describe;
using ferrite::test::subject;

}  // namespace

class BaselineCrash : public ::testing::TestWithParam<const char*> {};

TEST_P(BaselineCrash, SurvivesEveryCrashPointOfASingleThreadRun) {
  for (const auto& model : cr::writeback_model_names()) {
  SCOPED_TRACE("model " + model);
  cr::CampaignConfig cfg;
  cfg.model = model;
  cfg.ops = scaled(150, 20);
  cfg.images = 4;
  cfg.seed = 23;
  // 2 MiB holds every competitor's 150 operations, and a crash worker keeps
  // a pool this small mapped between restarts (src/crash/sim.cc).
  cfg.pool_size = std::size_t{2} << 20;
  auto r = cr::run_campaign(subject(GetParam(), "correct"), cfg);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.violations, 0u) << describe(r);
  EXPECT_EQ(r.inconclusive, 0u) << describe(r);  // an inconclusive image is never a pass
  EXPECT_EQ(r.crash_points, r.verbs + 1);
  EXPECT_GT(r.images_checked, r.crash_points);
  std::printf("[baseline-crash] %s/correct 1 thread [%s]: %zu ops, %llu crash points, %llu images, %llu violations\n",
              GetParam(), model.c_str(), cfg.ops, static_cast<unsigned long long>(r.crash_points),
              static_cast<unsigned long long>(r.images_checked),
              static_cast<unsigned long long>(r.violations));
  }
}

// The lock-free competitors write back lines other threads wrote (the
// transform flushes what it loads, FHMP helpers flush others' links): these
// campaigns depend on the simulator's per-line coherence (a stale copy never
// lands over a newer durable one; tests/crash/sim_test.cc).
TEST_P(BaselineCrash, SurvivesSampledCrashesOfMultiThreadedRuns) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  std::uint64_t images = 0, points = 0;
  for (int round = 0; round < 4; ++round) {
    cr::CampaignConfig cfg;
    cfg.model = cr::writeback_model_names()[static_cast<std::size_t>(round) % cr::writeback_model_names().size()];
    cfg.threads = 2 + round % 2;
    cfg.ops = scaled(600, 40);
    cfg.images = 6;
    cfg.crash_points = scaled(120, 10);
    cfg.seed = 500 + static_cast<std::uint64_t>(round);
    // 1 MiB (the minimum) holds these runs; each crash point scans the whole
    // pool for dirty lines in the forked child, so a larger pool only costs time.
    cfg.pool_size = std::size_t{1} << 20;
    auto r = cr::run_campaign(subject(GetParam(), "correct"), cfg);
    ASSERT_TRUE(r.error.empty()) << r.error;
    ASSERT_EQ(r.violations, 0u) << "threads " << cfg.threads << " seed " << cfg.seed << describe(r);
    EXPECT_EQ(r.inconclusive, 0u) << "threads " << cfg.threads << " seed " << cfg.seed << describe(r);
    images += r.images_checked;
    points += r.crash_points;
  }
  EXPECT_GT(images, 0u);
  std::printf("[baseline-crash] %s/correct 2-3 threads: %llu crash points, %llu images, 0 violations\n",
              GetParam(), static_cast<unsigned long long>(points), static_cast<unsigned long long>(images));
}

// Every broken variant registered for this competitor is caught.
TEST_P(BaselineCrash, EveryBrokenVariantIsCaught) {
  cr::CampaignConfig cfg;
  cfg.ops = scaled(150, 30);
  cfg.images = 6;
  cfg.seed = 29;
  cfg.pool_size = std::size_t{2} << 20;
  cfg.max_details = 1;
  cfg.stop_after_violations = 1;  // the verdict is the first catch
  EXPECT_GT(ferrite::test::expect_every_broken_variant_caught(GetParam(), cfg, "baseline-crash"), 0)
      << "no broken variant registered for " << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Competitors, BaselineCrash,
                         ::testing::Values("izraelevitz-ms", "izraelevitz-treiber", "friedman-durable",
                                           "friedman-log", "lock-persist-stack", "lock-persist-queue",
                                           "lock-persist-heap", "lock-persist-float", "fc-inplace-stack",
                                           "fc-inplace-queue", "fc-inplace-heap", "fc-inplace-float"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace crash_test
