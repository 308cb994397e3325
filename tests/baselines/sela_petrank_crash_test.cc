// Crash campaigns of OptUnlinkedQ and OptLinkedQ beyond the shared
// competitor suite (crash_test.cc: every crash point of a 1-thread run,
// sampled 2-3-thread runs, broken variants caught):
//  * crashes during creation and during recovery (a second crash at the
//    first verbs of the recovery), under both write-back models;
//  * FERRITE_SELA_PETRANK_FULL_CAMPAIGNS=1: the >= 10,000-image 2- and
//    3-thread campaigns of docs/baselines.md per model (minutes; not in CI).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/sanitizer.h"
#include "common/scale.h"
#include "common/subjects.h"
#include "ferrite/crash/campaign.h"
#include "ferrite/crash/model.h"

namespace cr = ferrite::crash;
using ferrite::test::describe;
using ferrite::test::scaled;
using ferrite::test::subject;

namespace {

class SelaPetrankCrash : public ::testing::TestWithParam<const char*> {};

TEST_P(SelaPetrankCrash, SurvivesCrashesDuringCreationAndDuringRecovery) {
  for (const auto& model : cr::writeback_model_names()) {
    SCOPED_TRACE("model " + model);
    cr::CampaignConfig cfg;
    cfg.model = model;
    cfg.ops = scaled(40, 12);
    cfg.images = 2;
    cfg.seed = 41;
    cfg.pool_size = std::size_t{1} << 20;
    cfg.crash_create = true;
    cfg.recovery_crash_depth = 1;
    cfg.recovery_crash_every = 4;
    auto r = cr::run_campaign(subject(GetParam(), "correct"), cfg);
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(r.violations, 0u) << describe(r);
    EXPECT_EQ(r.inconclusive, 0u) << describe(r);
    EXPECT_GT(r.create_points, 0u);
    EXPECT_GT(r.nested_images, 0u);
    std::printf("[sela-petrank-crash] %s create+recovery [%s]: %llu create points, %llu crash points, %llu images, "
                "%llu nested images, 0 violations\n",
                GetParam(), model.c_str(), static_cast<unsigned long long>(r.create_points),
                static_cast<unsigned long long>(r.crash_points), static_cast<unsigned long long>(r.images_checked),
                static_cast<unsigned long long>(r.nested_images));
  }
}

// >= 10,000 images per model over 2- and 3-thread runs (docs/baselines.md).
TEST_P(SelaPetrankCrash, FullMultiThreadedCampaigns) {
  if (std::getenv("FERRITE_SELA_PETRANK_FULL_CAMPAIGNS") == nullptr)
    GTEST_SKIP() << "set FERRITE_SELA_PETRANK_FULL_CAMPAIGNS=1 for the >= 10,000-image campaigns";
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  for (const auto& model : cr::writeback_model_names()) {
    std::uint64_t images = 0, points = 0;
    for (int round = 0; images < 10000 && round < 40; ++round) {
      cr::CampaignConfig cfg;
      cfg.model = model;
      cfg.threads = 2 + round % 2;
      cfg.ops = 600;
      cfg.images = 10;
      cfg.crash_points = 300;
      cfg.seed = 9000 + static_cast<std::uint64_t>(round);
      cfg.pool_size = std::size_t{1} << 20;
      auto r = cr::run_campaign(subject(GetParam(), "correct"), cfg);
      ASSERT_TRUE(r.error.empty()) << r.error;
      ASSERT_EQ(r.violations, 0u) << "threads " << cfg.threads << " seed " << cfg.seed << describe(r);
      ASSERT_EQ(r.inconclusive, 0u) << "threads " << cfg.threads << " seed " << cfg.seed << describe(r);
      images += r.images_checked;
      points += r.crash_points;
    }
    EXPECT_GE(images, 10000u);
    std::printf("[sela-petrank-crash] %s 2-3 threads [%s]: %llu crash points, %llu images, 0 violations, "
                "0 inconclusive\n",
                GetParam(), model.c_str(), static_cast<unsigned long long>(points),
                static_cast<unsigned long long>(images));
  }
}

INSTANTIATE_TEST_SUITE_P(Queues, SelaPetrankCrash, ::testing::Values("optunlinkedq", "optlinkedq"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
