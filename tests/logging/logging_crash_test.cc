// Crash campaigns (crash/campaign.h, simulator backend) on the workloads of
// the failure-atomic logging library (adapters/logging_workloads.cc): queue
// and hash map × transactions, ATLAS sections and SFRs, under every model
// each variant claims (tests/common/models.h):
//  * single-threaded: every crash point of a run, 0 violations, 0
//    inconclusive — failure atomicity per operation: every operation is one
//    region, so "the recovered state is the state after a prefix of the
//    completed regions (plus, or not, the one in flight)" is exactly durable
//    linearizability of the queue / map, which the exact checkers decide;
//  * 2 and 3 threads: sampled crash points, 0 violations, 0 inconclusive;
//  * crashes during recovery: recovery crashed at its own verbs and run
//    again (idempotence);
//  * every registered broken variant is caught under every model it claims.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <tuple>
#include <utility>

#include "adapters/logging_options.h"
#include "campaign_checks.h"
#include "undo_log_sites.h"
#include "common/models.h"
#include "common/sanitizer.h"
#include "common/scale.h"
#include "common/subjects.h"
#include "ferrite/crash/campaign.h"
#include "ferrite/crash/sites.h"

namespace logging_crash_test {  // this file's names, apart in a unity build

namespace cr = ferrite::crash;
using ferrite::test::describe;
using ferrite::test::scaled;
using ferrite::test::subject;
using ferrite::test::logging::expect_clean;
using ferrite::test::logging::ull;

class LoggingCrash : public ::testing::TestWithParam<const char*> {};

TEST_P(LoggingCrash, SurvivesEveryCrashPointOfASingleThreadRunUnderEveryClaimedModel) {
  // The strand instrumentation of stores does not depend on the structure:
  // its campaigns run on the queues (two stores per region), not the maps.
  const bool queue = std::string(GetParam()).ends_with("-queue");
  for (const char* variant : {"correct", "correct-strand"}) {
    if (!queue && std::string(variant) == "correct-strand") continue;
    const auto& s = subject(GetParam(), variant);
    for (const auto& model : ferrite::test::claimed_models(s)) {
      cr::CampaignConfig cfg;
      cfg.model = model;
      cfg.ops = scaled<std::size_t>(8, 4);
      cfg.images = 4;
      cfg.seed = 31;
      cfg.pool_size = std::size_t{2} << 20;
      const auto r = cr::run_campaign(s, cfg);
      expect_clean(r, std::string(variant) + " [" + model + "]");
      EXPECT_EQ(r.crash_points, r.verbs + 1);
      EXPECT_GT(r.images_checked, r.crash_points);
      std::printf("[logging-crash] %s/%s 1 thread [%s]: %zu ops, %llu crash points, %llu images, %llu violations, "
                  "%llu inconclusive\n",
                  GetParam(), variant, model.c_str(), cfg.ops, ull(r.crash_points), ull(r.images_checked),
                  ull(r.violations), ull(r.inconclusive));
    }
  }
}

TEST_P(LoggingCrash, SurvivesSampledCrashesOfTwoAndThreeThreadRuns) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  const auto& s = subject(GetParam(), "correct");
  int round = 0;
  for (const auto& model : ferrite::test::claimed_models(s)) {
    {
      const int threads = 2 + round++ % 2;  // 2 threads under one model, 3 under the next
      cr::CampaignConfig cfg;
      cfg.model = model;
      cfg.threads = threads;
      cfg.ops = scaled<std::size_t>(120, 40);
      cfg.images = 6;
      cfg.crash_points = scaled<std::size_t>(24, 8);
      cfg.seed = 700 + static_cast<std::uint64_t>(threads);
      cfg.pool_size = std::size_t{2} << 20;
      const auto r = cr::run_campaign(s, cfg);
      expect_clean(r, std::to_string(threads) + " threads [" + model + "]");
      EXPECT_GT(r.images_checked, 0u);
      std::printf("[logging-crash] %s/correct %d threads [%s]: %llu crash points, %llu images, %llu violations, "
                  "%llu inconclusive\n",
                  GetParam(), threads, model.c_str(), ull(r.crash_points), ull(r.images_checked), ull(r.violations),
                  ull(r.inconclusive));
    }
  }
}

// Recovery (recover_area, in the root hook) crashed at its own verbs, and
// the images of those crashes recovered again: it is idempotent. One
// library function recovers every subject: the transaction queue under
// abstract, the ATLAS queue (acquire and release entries) under x86.
TEST(LoggingRecoveryCrash, RecoveryCrashedAtItsOwnVerbsRecoversAgain) {
  for (const auto& [name, model] : {std::pair<const char*, const char*>{"logging-txn-queue", "abstract"},
                                    std::pair<const char*, const char*>{"logging-atlas-queue", "x86"}}) {
    const auto& s = subject(name, "correct");
    cr::CampaignConfig cfg;
    cfg.model = model;
    cfg.ops = scaled<std::size_t>(4, 3);
    cfg.images = 2;
    cfg.seed = 41;
    cfg.pool_size = std::size_t{2} << 20;
    cfg.recovery_crash_depth = 1;
    cfg.recovery_crash_points = 4;
    cfg.recovery_crash_every = 12;
    const auto r = cr::run_campaign(s, cfg);
    expect_clean(r, std::string(name) + " crash during recovery [" + model + "]");
    EXPECT_GT(r.nested_images, 0u) << "no recovery was crashed";
    std::printf("[logging-crash] %s/correct crash-recovery [%s]: %llu crash points, %llu images, %llu nested "
                "images, %llu violations, %llu inconclusive\n",
                name, model, ull(r.crash_points), ull(r.images_checked), ull(r.nested_images), ull(r.violations),
                ull(r.inconclusive));
  }
}

// The map's regions store one word each, whose lost undo entry no state can
// show: its broken variants are registered for the queue only.
TEST_P(LoggingCrash, EveryBrokenVariantIsCaught) {
  int variants = 0;
  for (const auto& s : cr::subjects()) {
    if (s.structure != GetParam() || !s.expect_violation) continue;
    ++variants;
    for (const auto& model : ferrite::test::claimed_models(s))
      ferrite::test::logging::expect_caught(s, model, scaled<std::size_t>(40, 20), 6, "logging-crash");
  }
  if (std::string(GetParam()).ends_with("-queue")) {
    EXPECT_EQ(variants, 2) << "no-log-fence and no-barrier";
  }
}

// Batched commits (LoggerOptions::commit_batch, `--commit-batch`): ATLAS
// and SFR regions pruned four at a time after the unlock, one batch's three
// ordering points for all four. Every crash point of a 1-thread run under
// every claimed model (write-back and store models; the campaigns above run
// commit_batch 1), sampled 3-thread runs, and the batch's ordering point
// suppressed (order_prune: every end entry invalidated with the other
// entries, unordered) caught; site_of finds the site's line in undo_log.h
// under FERRITE_SOURCE_DIR (which CMake defines for this file).
class BatchedCommits : public ::testing::Test {
 protected:
  void SetUp() override { ferrite::adapters::logging_commit_batch().store(4); }
  void TearDown() override { ferrite::adapters::logging_commit_batch().store(1); }
};

TEST_F(BatchedCommits, SurviveEveryCrashPointOfASingleThreadRunUnderEveryClaimedModel) {
  const std::pair<const char*, const char*> subjects[] = {
      {"logging-atlas-queue", "correct"},          {"logging-sfr-queue", "correct-strand"},
      {"logging-store-atlas-queue", "correct-hops"}, {"logging-store-sfr-queue", "correct-hops+"},
      {"logging-store-sfr-queue", "correct-strand"}};
  for (const auto& [name, variant] : subjects) {
    const auto& s = subject(name, variant);
    for (const auto& model : ferrite::test::claimed_models(s)) {
      // three batches (two at a tenth)
      const cr::CampaignConfig cfg = ferrite::test::logging::config(model, scaled<std::size_t>(12, 9), 4, 37);
      const auto r = cr::run_campaign(s, cfg);
      expect_clean(r, std::string(name) + "/" + variant + " commit batch 4 [" + model + "]");
      EXPECT_EQ(r.crash_points, r.verbs + 1);
      std::printf("[logging-batch] %s/%s 1 thread [%s]: %zu ops, %llu crash points, %llu images, 0/0\n", name, variant,
                  model.c_str(), cfg.ops, ull(r.crash_points), ull(r.images_checked));
    }
  }
}

TEST_F(BatchedCommits, SurviveSampledCrashesOfThreeThreadRuns) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  const std::tuple<const char*, const char*, const char*> runs[] = {
      {"logging-atlas-handoff", "correct", "x86"},  // early releases: regions deferred behind others
      {"logging-sfr-map", "correct", "abstract"},
      {"logging-store-atlas-swap", "correct-strand", "strand"},
      {"logging-store-atlas-tpcc", "correct-hops", "hops"}};
  for (const auto& [name, variant, model] : runs) {
    cr::CampaignConfig cfg = ferrite::test::logging::config(model, 60, 4, 43);
    cfg.threads = 3;
    cfg.crash_points = scaled<std::size_t>(150, 30);
    const auto r = cr::run_campaign(subject(name, variant), cfg);
    expect_clean(r, std::string(name) + "/" + variant + " 3 threads, commit batch 4 [" + model + "]");
    std::printf("[logging-batch] %s/%s 3 threads [%s]: %llu crash points, %llu images, 0/0\n", name, variant, model,
                ull(r.crash_points), ull(r.images_checked));
  }
}

TEST_F(BatchedCommits, ABatchWithoutItsOrderingPointIsCaught) {
  ferrite::test::logging::Unsuppress unsuppress;
  cr::CampaignConfig cfg = ferrite::test::logging::config("x86", 12, 4, 37);
  cfg.stop_after_violations = 1;
  cfg.mutate_sites = {ferrite::test::logging::site_of("order-prune-pfence", "pfence")};
  cr::sites::clear_hits();
  const auto r = cr::run_campaign(subject("logging-atlas-queue", "correct"), cfg);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_GT(cr::sites::suppressed_count(), 0u) << "the site was never reached";
  EXPECT_GE(r.violations, 1u) << "a batch pruned without its ordering point went unnoticed" << describe(r);
  std::printf("[logging-batch] order-prune-pfence suppressed, commit batch 4: %llu violation(s) in %llu crash points\n",
              ull(r.violations), ull(r.crash_points));
}

INSTANTIATE_TEST_SUITE_P(Workloads, LoggingCrash,
                         ::testing::Values("logging-txn-queue", "logging-atlas-queue", "logging-sfr-queue",
                                           "logging-txn-map", "logging-atlas-map", "logging-sfr-map"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace logging_crash_test
