// Crash campaigns on the reference structure (adapters/plog.h via
// tools/subjects/reference_log.cc): the correct variant survives every crash
// point and image; each broken variant is caught and its replay reproduces
// the violation.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "common/sanitizer.h"
#include "common/scale.h"
#include "ferrite/crash/campaign.h"

namespace fc = ferrite::crash;

namespace {

using ferrite::test::scaled;

const fc::SubjectInfo& subject(const std::string& variant) {
  const auto* s = fc::find_subject("reference-log", variant);
  if (s == nullptr) throw std::runtime_error("reference-log/" + variant + " not registered");
  return *s;
}

std::string describe(const fc::CampaignResult& r) {
  std::string s = r.error;
  for (const auto& v : r.details)
    s += "\n  k=" + std::to_string(v.k) + " image " + std::to_string(v.image) + " " + v.property + " [" + v.engine +
         "] " + v.reason + " (" + v.image_how + ")\n  " + v.replay;
  return s;
}

TEST(Campaign, ReferenceLogSurvivesEveryCrashPointOfASingleThreadRun) {
  fc::CampaignConfig cfg;
  cfg.ops = scaled(200, 10);
  cfg.images = 4;
  cfg.seed = 7;
  auto r = fc::run_campaign(subject("correct"), cfg);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.violations, 0u) << describe(r);
  // Every verb is a crash point, plus the end of the run. An append issues
  // pwb, pfence, pwb, psync (the record may straddle two lines: 5 verbs).
  EXPECT_GE(r.verbs, 4 * cfg.ops);
  EXPECT_EQ(r.crash_points, r.verbs + 1);
  EXPECT_GT(r.images_checked, r.crash_points) << "random images must add distinct states";
  EXPECT_EQ(r.images_built, r.crash_points * (cfg.images + 2));
  EXPECT_EQ(r.engines.count("exact"), 1u);
  EXPECT_EQ(r.inconclusive, 0u);
}

class BrokenVariant : public ::testing::TestWithParam<const char*> {};

TEST_P(BrokenVariant, IsCaughtAndItsReplayReproducesTheViolation) {
  const auto& s = subject(GetParam());
  EXPECT_TRUE(s.expect_violation);
  fc::CampaignConfig cfg;
  cfg.ops = scaled(60, 10);
  cfg.images = 4;
  cfg.seed = 3;
  auto r = fc::run_campaign(s, cfg);
  ASSERT_TRUE(r.error.empty()) << r.error;
  ASSERT_GE(r.violations, 1u);
  ASSERT_FALSE(r.details.empty());
  const auto& v = r.details.front();
  EXPECT_NE(v.replay.find("--replay " + std::to_string(v.k) + ":" + std::to_string(v.image)), std::string::npos)
      << v.replay;
  fc::CampaignConfig again = cfg;
  again.replay = fc::CampaignConfig::Replay{v.k, v.image};
  auto rr = fc::run_campaign(s, again);
  EXPECT_TRUE(rr.replay_reached);
  EXPECT_EQ(rr.crash_points, 1u);
  EXPECT_EQ(rr.images_checked, 1u);
  ASSERT_EQ(rr.violations, 1u) << "replay of " << v.replay << " did not reproduce";
  EXPECT_EQ(rr.details.front().reason, v.reason);
  // The correct variant at the same crash point and image is fine.
  auto ok = fc::run_campaign(subject("correct"), again);
  EXPECT_EQ(ok.violations, 0u) << describe(ok);
}

INSTANTIATE_TEST_SUITE_P(ReferenceLog, BrokenVariant, ::testing::Values("no-pfence", "no-psync", "no-record-pwb"));

TEST(Campaign, MultiThreadedCampaignOnTheCorrectVariant) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  fc::CampaignConfig cfg;
  cfg.threads = 3;
  cfg.ops = scaled(1200, 40);
  cfg.images = 10;
  cfg.crash_points = scaled(400, 10);
  cfg.seed = 11;
  auto r = fc::run_campaign(subject("correct"), cfg);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.violations, 0u) << describe(r);
  EXPECT_GE(r.crash_points, cfg.crash_points / 2);
  EXPECT_GE(r.images_checked, scaled<std::uint64_t>(1000, 20));
}

TEST(Campaign, MultiThreadedCampaignCatchesABrokenVariant) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  fc::CampaignConfig cfg;
  cfg.threads = 2;
  cfg.ops = scaled(200, 20);
  cfg.images = 4;
  cfg.crash_points = scaled(100, 10);
  cfg.seed = 5;
  auto r = fc::run_campaign(subject("no-psync"), cfg);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_GE(r.violations, 1u);
}

TEST(Campaign, BadConfigurationIsRejected) {
  fc::CampaignConfig cfg;
  cfg.threads = 0;
  EXPECT_THROW(fc::run_campaign(subject("correct"), cfg), std::invalid_argument);
  cfg.threads = 1;
  cfg.replay = fc::CampaignConfig::Replay{0, 99};
  EXPECT_THROW(fc::run_campaign(subject("correct"), cfg), std::invalid_argument);
  cfg.replay.reset();
  cfg.pool_dir = "/nonexistent-dir-for-ferrite";
  auto r = fc::run_campaign(subject("correct"), cfg);
  EXPECT_FALSE(r.error.empty());
  EXPECT_FALSE(r.ok());
}

}  // namespace
