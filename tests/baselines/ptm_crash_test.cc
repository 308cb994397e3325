// Crash campaigns of the PTM / universal-construction competitors that run
// the sequential objects of seq_objects.h: RomulusLog (romulus-float,
// -stack, -queue, -heap; include/ferrite/baselines/romulus.h,
// adapters/romulus.cc) and RedoOpt (redoopt-*; redoopt.h, adapters/
// redoopt.cc) and OneFile-LF and OneFile-WF (onefile-*, onefile-wf-*;
// onefile.h, adapters/onefile.cc), under both write-back models (abstract,
// x86):
//  * every crash point of a 150-op 1-thread run, 0 violations, 0 inconclusive;
//  * 2 and 3 threads: >= 5,000 sampled images per thread count and model
//    (>= 10,000 per structure and model, as the PBcomb campaigns), half the
//    rounds on a used pool (heap blocks come back with durable garbage);
//  * crashes during recovery (a second crash inside it), 0 violations;
//  * crashes during pool and structure creation, 0 violations;
//  * every registered broken variant is caught under every model.
// The campaigns shrink under FERRITE_TEST_SCALE (tests/common/scale.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <tuple>

#include "common/models.h"
#include "common/sanitizer.h"
#include "common/scale.h"
#include "common/subjects.h"
#include "ferrite/crash/campaign.h"
#include "ferrite/crash/model.h"

namespace ptm_crash_test {  // this file's names, apart in a unity build

namespace cr = ferrite::crash;
using ferrite::test::describe;
using ferrite::test::scaled;
using ferrite::test::subject;

namespace {

constexpr std::size_t kPool = std::size_t{1} << 20;  // the default; every restart compares the pool page by page (docs/crash.md)

cr::CampaignResult clean(const char* structure, const cr::CampaignConfig& cfg, const char* variant = "correct") {
  auto r = cr::run_campaign(subject(structure, variant), cfg);
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.violations, 0u) << structure << " threads " << cfg.threads << " seed " << cfg.seed << describe(r);
  // An inconclusive image is never a pass.
  EXPECT_EQ(r.inconclusive, 0u) << structure << " threads " << cfg.threads << " seed " << cfg.seed << describe(r);
  return r;
}

void report(const char* structure, const std::string& what, const std::string& model, const cr::CampaignResult& r,
            double seconds) {
  std::printf("[ptm-crash] %s %s [%s]: %llu crash points, %llu images, %llu nested images, %llu create points, "
              "%llu violations, %llu inconclusive, %.1f s\n",
              structure, what.c_str(), model.c_str(), static_cast<unsigned long long>(r.crash_points),
              static_cast<unsigned long long>(r.images_checked), static_cast<unsigned long long>(r.nested_images),
              static_cast<unsigned long long>(r.create_points), static_cast<unsigned long long>(r.violations),
              static_cast<unsigned long long>(r.inconclusive), seconds);
}

std::string name_of(std::string s) {
  for (char& c : s)
    if (c == '-') c = '_';
  return s;
}

bool is_romulus(const std::string& s) { return s.rfind("romulus-", 0) == 0; }

class PtmCrash : public ::testing::TestWithParam<const char*> {};

TEST_P(PtmCrash, SurvivesEveryCrashPointOfASingleThreadRun) {
  for (const auto& model : cr::writeback_model_names()) {
    cr::CampaignConfig cfg;
    cfg.model = model;
    cfg.ops = scaled(150, 20);
    cfg.images = 4;
    cfg.seed = 23;
    cfg.pool_size = kPool;
    auto r = clean(GetParam(), cfg);
    EXPECT_EQ(r.crash_points, r.verbs + 1);
    EXPECT_GT(r.images_checked, r.crash_points);
    // RomulusLog: four fences per transaction at least (R1, R4, R5, R8).
    // RedoOpt: a pwb, a pfence, curComb's pwb and a psync per update (C5,
    // C7); the float's reads issue none. OneFile: the log's pwb, a psync,
    // curTx's pwb, a psync, a word's pwb, a psync per update (T4, H1-H5).
    EXPECT_GE(r.verbs, (is_romulus(GetParam()) ? 4 : 2) * cfg.ops);
    report(GetParam(), "1 thread", model, r, r.seconds);
  }
}

// A second crash inside recovery (2 sampled recovery verbs of the images of
// every 16th crash point, the queue's every 32nd). RomulusLog's recovery
// from MUTATING or COPYING copies the used part of a copy: a crash inside
// the copy leaves the state word as it was, and recovery runs again.
// RedoOpt's recovery repairs nothing (the pool's own recovery verbs are
// crashed).
TEST_P(PtmCrash, SurvivesCrashesDuringRecovery) {
  for (const auto& model : cr::writeback_model_names()) {
    cr::CampaignConfig cfg;
    cfg.model = model;
    cfg.ops = scaled(8, 6);
    cfg.images = 1;
    cfg.seed = 41;
    cfg.pool_size = kPool;
    cfg.recovery_crash_depth = 1;
    // A nested image costs ~0.05 s; the queue's x86 images nest most.
    cfg.recovery_crash_every = std::string(GetParam()).ends_with("-queue") ? 32 : 16;
    cfg.recovery_crash_points = 2;
    auto r = clean(GetParam(), cfg);
    EXPECT_GT(r.nested_images, 0u);
    report(GetParam(), "recovery crashed", model, r, r.seconds);
  }
}

// Every broken variant registered for this structure is caught.
TEST_P(PtmCrash, EveryBrokenVariantIsCaught) {
  cr::CampaignConfig cfg;
  cfg.ops = scaled(150, 30);
  cfg.images = 4;
  cfg.seed = 29;
  cfg.pool_size = kPool;
  cfg.max_details = 1;
  cfg.stop_after_violations = 1;  // the verdict is the first catch
  EXPECT_GE(ferrite::test::expect_every_broken_variant_caught(GetParam(), cfg, "ptm-crash"), 1)
      << "no broken variant registered for " << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Romulus, PtmCrash,
                         ::testing::Values("romulus-float", "romulus-stack", "romulus-queue", "romulus-heap"),
                         [](const auto& i) { return name_of(i.param); });
INSTANTIATE_TEST_SUITE_P(RedoOpt, PtmCrash,
                         ::testing::Values("redoopt-float", "redoopt-stack", "redoopt-queue", "redoopt-heap"),
                         [](const auto& i) { return name_of(i.param); });
INSTANTIATE_TEST_SUITE_P(OneFile, PtmCrash,
                         ::testing::Values("onefile-float", "onefile-stack", "onefile-queue", "onefile-heap"),
                         [](const auto& i) { return name_of(i.param); });
INSTANTIATE_TEST_SUITE_P(OneFileWF, PtmCrash,
                         ::testing::Values("onefile-wf-float", "onefile-wf-stack", "onefile-wf-queue",
                                           "onefile-wf-heap"),
                         [](const auto& i) { return name_of(i.param); });

// 2 and 3 threads, one model per test (each stays well inside 30 s).
using MT = std::tuple<const char*, int, const char*>;
class PtmCrashMT : public ::testing::TestWithParam<MT> {};

TEST_P(PtmCrashMT, SurvivesSampledCrashesOfMultiThreadedRuns) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  const auto [structure, threads, model] = GetParam();
  const std::uint64_t want = static_cast<std::uint64_t>(scaled(5000, 100));
  std::uint64_t images = 0, points = 0;
  double seconds = 0;
  std::uint64_t seed = 700 + static_cast<std::uint64_t>(threads) * 1000;
  for (int round = 0; images < want && round < 40; ++round) {
    cr::CampaignConfig cfg;
    cfg.model = model;
    cfg.threads = threads;
    cfg.ops = scaled(600, 60);
    cfg.images = 8;
    cfg.crash_points = scaled(300, 20);
    cfg.seed = seed++;
    cfg.pool_size = kPool;
    cfg.dirty_heap = round % 2 == 1;
    auto r = clean(structure, cfg);
    if (r.violations != 0 || r.inconclusive != 0 || !r.error.empty()) return;
    images += r.images_checked;
    points += r.crash_points;
    seconds += r.seconds;
  }
  EXPECT_GE(images, want);
  std::printf("[ptm-crash] %s %d threads [%s]: %llu crash points, %llu images, 0 violations, 0 inconclusive, "
              "%.1f s\n",
              structure, threads, model, static_cast<unsigned long long>(points),
              static_cast<unsigned long long>(images), seconds);
}

std::string mt_name(const ::testing::TestParamInfo<MT>& i) {
  return name_of(std::string(std::get<0>(i.param)) + "_" + std::to_string(std::get<1>(i.param)) + "threads_" +
                 std::get<2>(i.param));
}
INSTANTIATE_TEST_SUITE_P(Romulus, PtmCrashMT,
                         ::testing::Combine(::testing::Values("romulus-float", "romulus-stack", "romulus-queue",
                                                              "romulus-heap"),
                                            ::testing::Values(2, 3), ::testing::Values("abstract", "x86")),
                         mt_name);
INSTANTIATE_TEST_SUITE_P(RedoOpt, PtmCrashMT,
                         ::testing::Combine(::testing::Values("redoopt-float", "redoopt-stack", "redoopt-queue",
                                                              "redoopt-heap"),
                                            ::testing::Values(2, 3), ::testing::Values("abstract", "x86")),
                         mt_name);
INSTANTIATE_TEST_SUITE_P(OneFile, PtmCrashMT,
                         ::testing::Combine(::testing::Values("onefile-float", "onefile-stack", "onefile-queue",
                                                              "onefile-heap"),
                                            ::testing::Values(2, 3), ::testing::Values("abstract", "x86")),
                         mt_name);
INSTANTIATE_TEST_SUITE_P(OneFileWF, PtmCrashMT,
                         ::testing::Combine(::testing::Values("onefile-wf-float", "onefile-wf-stack",
                                                              "onefile-wf-queue", "onefile-wf-heap"),
                                            ::testing::Values(2, 3), ::testing::Values("abstract", "x86")),
                         mt_name);

// RedoOpt's lock-elected ablation (redoopt-*-lock, crash variant
// correct-lock): every crash point of a single-thread run and sampled
// crashes of 2 threads, both models.
class RedoOptLockCrash : public ::testing::TestWithParam<const char*> {};
TEST_P(RedoOptLockCrash, SurvivesEveryCrashPointOfASingleThreadRun) {
  for (const auto& model : cr::writeback_model_names()) {
    cr::CampaignConfig cfg;
    cfg.model = model;
    cfg.ops = scaled(150, 20);
    cfg.images = 4;
    cfg.seed = 23;
    cfg.pool_size = kPool;
    auto r = clean(GetParam(), cfg, "correct-lock");
    EXPECT_EQ(r.crash_points, r.verbs + 1);
    report(GetParam(), "lock, 1 thread", model, r, r.seconds);
  }
}
TEST_P(RedoOptLockCrash, SurvivesSampledCrashesOfTwoThreadRuns) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  for (const auto& model : cr::writeback_model_names()) {
    cr::CampaignConfig cfg;
    cfg.model = model;
    cfg.threads = 2;
    cfg.ops = scaled(600, 60);
    cfg.images = 8;
    cfg.crash_points = scaled(300, 20);
    cfg.seed = 2700;
    cfg.pool_size = kPool;
    auto r = clean(GetParam(), cfg, "correct-lock");
    EXPECT_GT(r.images_checked, 0u);
    report(GetParam(), "lock, 2 threads", model, r, r.seconds);
  }
}
INSTANTIATE_TEST_SUITE_P(RedoOpt, RedoOptLockCrash,
                         ::testing::Values("redoopt-float", "redoopt-stack", "redoopt-queue", "redoopt-heap"),
                         [](const auto& i) { return name_of(i.param); });

// Crashes inside pool and structure creation (the PTM's blocks and root,
// then the object's creation transaction / batch): every image opens as no
// pool, a pool without the root, or the empty structure.
class PtmCreate : public ::testing::TestWithParam<const char*> {};
TEST_P(PtmCreate, SurvivesCrashesDuringCreation) {
  for (const auto& model : cr::writeback_model_names()) {
    if (ferrite::test::scale() < 1.0 && model != "abstract") continue;
    cr::CampaignConfig cfg;
    cfg.model = model;
    cfg.ops = 4;
    cfg.images = 1;
    cfg.seed = 31;
    cfg.pool_size = kPool;
    cfg.crash_create = true;
    cfg.create_crash_points = ferrite::test::create_points();
    auto r = clean(GetParam(), cfg);
    EXPECT_GT(r.create_points, 0u);
    report(GetParam(), "crash-create", model, r, r.seconds);
  }
}
INSTANTIATE_TEST_SUITE_P(Ptm, PtmCreate,
                         ::testing::Values("romulus-queue", "redoopt-queue", "onefile-queue", "onefile-wf-queue"),
                         [](const auto& i) { return name_of(i.param); });

}  // namespace

}  // namespace ptm_crash_test
