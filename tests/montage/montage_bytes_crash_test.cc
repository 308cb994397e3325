// Crash campaigns (crash/campaign.h) on nbMontage's byte-string hash map
// through its adapter (adapters/montage_bytes.cc: each workload integer an
// encoded byte string, every byte checked on the way back), checked for
// buffered durable linearizability, recovery in a fresh process:
//   - one thread, every persistence verb a crash point, keys of 1..64 and
//     values of 1..4096 bytes, both models;
//   - three threads, scheduled, sampled crash points, the adapter's default
//     sizes (keys 1..64, values 8..512);
//   - crashes during recovery;
//   - both broken variants (no-payload-writeback, free-on-detach) caught
//     under both models.
// Pools of 8 MiB: the epoch system keeps a 64 KiB slab per thread and size
// class, and sizes drawn from wide ranges use tens of classes (docs/montage.md
// "Byte-string keys and values"). Every correct campaign: 0 violations AND
// 0 inconclusive images. Loop sizes scale with FERRITE_TEST_SCALE.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "common/sanitizer.h"
#include "common/scale.h"
#include "common/subjects.h"
#include "ferrite/crash/campaign.h"

namespace montage_bytes_crash_test {  // this file's names, apart in a unity build

namespace fc = ferrite::crash;
using ferrite::test::describe;
using ferrite::test::scaled;
using ferrite::test::subject;

namespace {

constexpr const char* kStructure = "montage-bytes-hashmap";
const char* const kModels[] = {"abstract", "x86"};

fc::CampaignConfig config(const char* model, int threads) {
  fc::CampaignConfig cfg;
  cfg.model = model;
  cfg.threads = threads;
  cfg.pool_size = std::size_t{8} << 20;
  return cfg;
}
void wide_sizes(fc::CampaignConfig& cfg) {
  cfg.sizes.key_min = 1;
  cfg.sizes.key_max = 64;
  cfg.sizes.value_min = 1;
  cfg.sizes.value_max = 4096;
}
void report(const char* what, const char* model, const fc::CampaignResult& r) {
  std::printf("[montage-bytes] %s/%s %s [%s]: %zu ops, %llu crash points, %llu images, %llu violations, %llu "
              "inconclusive, %.1fs\n",
              kStructure, r.variant.c_str(), what, model, r.ops, static_cast<unsigned long long>(r.crash_points),
              static_cast<unsigned long long>(r.images_checked), static_cast<unsigned long long>(r.violations),
              static_cast<unsigned long long>(r.inconclusive), r.seconds);
}
void expect_clean(const char* what, const char* model, const fc::CampaignResult& r) {
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_GT(r.images_checked, 0u);
  EXPECT_EQ(r.violations, 0u) << describe(r);
  EXPECT_EQ(r.inconclusive, 0u) << describe(r);
  report(what, model, r);
}

TEST(MontageBytesCrash, OneThreadEveryCrashPointWideSizes) {
  for (const char* model : kModels) {
    SCOPED_TRACE(model);
    auto cfg = config(model, 1);
    wide_sizes(cfg);
    cfg.ops = scaled(40, 20);
    cfg.images = 2;
    expect_clean("1 thread, sizes 1..64/1..4096", model, fc::run_campaign(subject(kStructure, "correct"), cfg));
  }
}

TEST(MontageBytesCrash, ThreeThreadsSampledCrashPoints) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  for (const char* model : kModels) {
    SCOPED_TRACE(model);
    auto cfg = config(model, 3);
    cfg.ops = scaled(300, 150);
    cfg.crash_points = scaled(300, 120);
    cfg.images = 4;
    cfg.seed = 2;
    expect_clean("3 threads", model, fc::run_campaign(subject(kStructure, "correct"), cfg));
  }
}

TEST(MontageBytesCrash, RecoveryCrashedAgain) {
  for (const char* model : kModels) {
    SCOPED_TRACE(model);
    auto cfg = config(model, 1);
    cfg.ops = scaled(20, 10);
    cfg.images = 2;
    cfg.seed = 4;
    cfg.recovery_crash_depth = 1;
    cfg.recovery_crash_points = 4;
    cfg.recovery_crash_every = 16;
    expect_clean("crashed recovery", model, fc::run_campaign(subject(kStructure, "correct"), cfg));
  }
}

TEST(MontageBytesCrash, BrokenVariantsAreCaught) {
  for (const char* variant : {"no-payload-writeback", "free-on-detach"}) {
    const auto& s = subject(kStructure, variant);
    ASSERT_TRUE(s.expect_violation);
    for (const char* model : kModels) {
      SCOPED_TRACE(std::string(variant) + " " + model);
      auto cfg = config(model, 1);
      cfg.ops = 100;
      cfg.images = 6;
      cfg.stop_after_violations = 1;
      const auto r = fc::run_campaign(s, cfg);
      ASSERT_TRUE(r.error.empty()) << r.error;
      EXPECT_GT(r.violations, 0u) << variant << " not caught under " << model;
      report("broken", model, r);
    }
  }
}

}  // namespace

}  // namespace montage_bytes_crash_test
