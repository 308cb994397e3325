// Crash campaigns (crash/campaign.h, simulator backend) on pb-bytes-stack,
// the detectable PBstack of byte strings (adapters/pb_bytes_stack.cc),
// mirroring pb_bytes_crash_test.cc's on the byte queue: every value is
// a byte string of a size drawn from the campaign's range and is checked
// byte for byte when read back (adapters/bytes_codec.h).
//  * 1 thread, every crash point, default sizes (8..512) and 1..4096;
//  * 3 threads, sampled crash points;
//  * crashes during creation on a dirty heap, and crashes during recovery;
//  * the broken variants (no-payload-psync, free-at-return): caught under
//    every model the registration claims.
// Threaded runs use a 4 MiB pool: each thread's arena takes a chunk per
// payload size class (8 classes for 8..512), more than 1 MiB holds.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "ferrite/crash/campaign.h"
#include "ferrite/crash/model.h"
#include "common/models.h"
#include "common/sanitizer.h"
#include "common/scale.h"
#include "common/subjects.h"

namespace pb_bytes_stack_crash_test {  // this file's names, apart in a unity build

namespace cr = ferrite::crash;
using ferrite::test::describe;
using ferrite::test::scaled;
using ferrite::test::subject;

namespace {

constexpr const char* kStructure = "pb-bytes-stack";

void print(const char* what, const std::string& model, const cr::CampaignResult& r) {
  std::printf("[pb-bytes-stack-crash] %s [%s]: %llu crash points, %llu images, %llu violations, %llu inconclusive\n", what,
              model.c_str(), static_cast<unsigned long long>(r.crash_points),
              static_cast<unsigned long long>(r.images_checked), static_cast<unsigned long long>(r.violations),
              static_cast<unsigned long long>(r.inconclusive));
}

struct Sizes {
  std::size_t lo, hi;  // 0..0: the adapter's default (8..512)
};
class PBBytesStackOneThread : public ::testing::TestWithParam<Sizes> {};

TEST_P(PBBytesStackOneThread, SurvivesEveryCrashPoint) {
  for (const auto& model : cr::writeback_model_names()) {
    SCOPED_TRACE("model " + model);
    cr::CampaignConfig cfg;
    // Every crash point: 1..4096 has ~4x the verbs of 8..512 (larger
    // payloads, more lines), so it runs fewer operations.
    cfg.ops = static_cast<std::size_t>(scaled(GetParam().hi == 0 ? 80 : 30, 12));
    cfg.images = 4;
    cfg.seed = 19;
    cfg.model = model;
    cfg.sizes.value_min = GetParam().lo;
    cfg.sizes.value_max = GetParam().hi;
    cfg.pool_size = std::size_t{2} << 20;
    auto r = cr::run_campaign(subject(kStructure, "correct"), cfg);
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(r.violations, 0u) << describe(r);
    EXPECT_EQ(r.inconclusive, 0u) << describe(r);
    EXPECT_EQ(r.crash_points, r.verbs + 1);
    print(GetParam().hi == 0 ? "1 thread, 8..512" : "1 thread, 1..4096", model, r);
  }
}

INSTANTIATE_TEST_SUITE_P(PB, PBBytesStackOneThread, ::testing::Values(Sizes{0, 0}, Sizes{1, 4096}),
                         [](const auto& i) { return i.param.hi == 0 ? std::string("default") : std::string("to4096"); });

TEST(PBBytesStackCrash, SurvivesSampledCrashesOfAThreeThreadRun) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  for (const auto& model : cr::writeback_model_names()) {
    SCOPED_TRACE("model " + model);
    cr::CampaignConfig cfg;
    cfg.threads = 3;
    cfg.ops = static_cast<std::size_t>(scaled(400, 60));
    cfg.images = 8;
    cfg.crash_points = static_cast<std::size_t>(scaled(200, 20));
    cfg.seed = 3100;
    cfg.model = model;
    cfg.pool_size = std::size_t{4} << 20;
    auto r = cr::run_campaign(subject(kStructure, "correct"), cfg);
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(r.violations, 0u) << describe(r);
    EXPECT_EQ(r.inconclusive, 0u) << describe(r);
    print("3 threads, 8..512", model, r);
  }
}

TEST(PBBytesStackCrash, SurvivesCrashesDuringCreateOnADirtyHeapAndDuringRecovery) {
  for (const auto& model : cr::writeback_model_names()) {
    SCOPED_TRACE("model " + model);
    cr::CampaignConfig cfg;
    cfg.ops = 8;
    cfg.images = 1;  // every creation point, one image each (CI budget)
    cfg.seed = 31;
    cfg.model = model;
    cfg.crash_create = true;
    cfg.dirty_heap = true;
    cfg.create_crash_points = ferrite::test::create_points();
    auto r = cr::run_campaign(subject(kStructure, "correct"), cfg);
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_GT(r.create_points, 0u);
    EXPECT_EQ(r.violations, 0u) << describe(r);
    EXPECT_EQ(r.inconclusive, 0u) << describe(r);

    cr::CampaignConfig rc;
    rc.ops = static_cast<std::size_t>(scaled(12, 6));  // each crash point's recovery is crashed too
    rc.images = 2;
    rc.seed = 37;
    rc.model = model;
    rc.recovery_crash_depth = 1;
    auto rr = cr::run_campaign(subject(kStructure, "correct"), rc);
    ASSERT_TRUE(rr.error.empty()) << rr.error;
    EXPECT_EQ(rr.violations, 0u) << describe(rr);
    EXPECT_EQ(rr.inconclusive, 0u) << describe(rr);
    print("crash-recovery 1", model, rr);
  }
}

// no-payload-psync: at one thread a push onto the empty top cache fences
// nothing before the record, but three threads (another combiner) are the
// case the psync exists for; free-at-return needs a freed block to
// be reused while a durable response names it (one thread suffices: the
// arena's free list hands the block to the next same-class payload).
class PBBytesStackBroken : public ::testing::TestWithParam<const char*> {};

TEST_P(PBBytesStackBroken, IsCaughtUnderEveryClaimedModel) {
  const std::string variant = GetParam();
  const auto& s = subject(kStructure, variant);
  EXPECT_TRUE(s.expect_violation);
  cr::CampaignConfig cfg;
  cfg.ops = static_cast<std::size_t>(scaled(200, 60));
  cfg.images = 8;
  cfg.seed = 3;
  cfg.stop_after_violations = 1;
  if (variant == "no-payload-psync") {
    FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
    cfg.threads = 3;
    cfg.ops = static_cast<std::size_t>(scaled(600, 200));
    cfg.crash_points = static_cast<std::size_t>(scaled(300, 100));
    cfg.pool_size = std::size_t{4} << 20;
  }
  for (const auto& model : ferrite::test::claimed_models(s)) {
    cr::CampaignConfig m = cfg;
    m.model = model;
    auto r = ferrite::test::catch_with_seeds(s, m);
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_GE(r.violations, 1u) << kStructure << "/" << variant << " was not caught under the " << model
                                << " model";
    if (!r.details.empty())
      std::printf("[pb-bytes-stack-crash] %s [%s]: caught; first: %s\n", variant.c_str(), model.c_str(),
                  r.details.front().reason.c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(PB, PBBytesStackBroken, ::testing::Values("no-payload-psync", "free-at-return"),
                         [](const auto& i) {
                           std::string n = i.param;
                           for (char& c : n) if (c == '-') c = '_';
                           return n;
                         });

}  // namespace

}  // namespace pb_bytes_stack_crash_test
