// Crash campaigns (crash/campaign.h) on nbMontage's ordered byte-string map
// and byte-string queue through their adapters (adapters/montage_bytes_
// skiplist.cc, montage_bytes_queue.cc: each workload integer an encoded
// byte string, every byte checked on the way back; the map's gets alternate
// with point scans and its observed state is a full scan checked against
// the level-0 walk), checked for buffered durable linearizability, recovery
// in a fresh process:
//   - one thread, every persistence verb a crash point, keys of 1..64 and
//     values of 1..4096 bytes, both models;
//   - three threads, scheduled, sampled crash points, the adapters' default
//     sizes (keys 1..64, values 8..512);
//   - crashes during recovery; a crash during creation on a dirty heap;
//   - the broken variants (map: no-payload-writeback, free-on-detach,
//     accept-uncommitted; queue: no-payload-writeback, free-on-detach,
//     ignore-anti) caught under both models.
// Pools of 8 MiB (a 64 KiB slab per thread and size class). Every correct
// campaign: 0 violations AND 0 inconclusive images. Loop sizes scale with
// FERRITE_TEST_SCALE.
//
// Mutation: the two structures issue no persistence instruction of their
// own (their payloads are written back by the epoch system, whose sites are
// mutated by montage_crash_test.cc's MontageMutation tests); there is no new
// site for --mutate to remove.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "common/models.h"
#include "common/sanitizer.h"
#include "common/scale.h"
#include "common/subjects.h"
#include "ferrite/crash/campaign.h"

namespace montage_bytes_structures_crash_test {  // this file's names, apart in a unity build

namespace fc = ferrite::crash;
using ferrite::test::describe;
using ferrite::test::scaled;
using ferrite::test::subject;

namespace {

constexpr const char* kMap = "montage-bytes-skiplist";
constexpr const char* kQueue = "montage-bytes-queue";
const char* const kStructures[] = {kMap, kQueue};
const char* const kModels[] = {"abstract", "x86"};
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif

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
void report(const char* structure, const char* what, const char* model, const fc::CampaignResult& r) {
  std::printf("[montage-bytes] %s/%s %s [%s]: %zu ops, %llu crash points, %llu images, %llu violations, %llu "
              "inconclusive, %.1fs\n",
              structure, r.variant.c_str(), what, model, r.ops, static_cast<unsigned long long>(r.crash_points),
              static_cast<unsigned long long>(r.images_checked), static_cast<unsigned long long>(r.violations),
              static_cast<unsigned long long>(r.inconclusive), r.seconds);
}
void expect_clean(const char* structure, const char* what, const char* model, const fc::CampaignResult& r) {
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_GT(r.images_checked, 0u);
  EXPECT_EQ(r.violations, 0u) << describe(r);
  EXPECT_EQ(r.inconclusive, 0u) << describe(r);
  report(structure, what, model, r);
}

TEST(MontageBytesStructuresCrash, OneThreadEveryCrashPointWideSizes) {
  for (const char* s : kStructures)
    for (const char* model : kModels) {
      SCOPED_TRACE(std::string(s) + " " + model);
      auto cfg = config(model, 1);
      wide_sizes(cfg);
      cfg.ops = scaled(30, 15);
      cfg.images = 1;
      expect_clean(s, "1 thread, sizes 1..64/1..4096", model, fc::run_campaign(subject(s, "correct"), cfg));
    }
}

TEST(MontageBytesStructuresCrash, ThreeThreadsSampledCrashPoints) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  for (const char* s : kStructures)
    for (const char* model : kModels) {
      SCOPED_TRACE(std::string(s) + " " + model);
      auto cfg = config(model, 3);
      cfg.ops = scaled(300, 150);
      cfg.crash_points = scaled(100, 60);
      cfg.images = 4;
      cfg.seed = 2;
      expect_clean(s, "3 threads", model, fc::run_campaign(subject(s, "correct"), cfg));
    }
}

TEST(MontageBytesStructuresCrash, RecoveryCrashedAgainAndCrashCreate) {
  for (const char* s : kStructures)
    for (const char* model : kModels) {
      SCOPED_TRACE(std::string(s) + " " + model);
      auto cfg = config(model, 1);
      cfg.ops = scaled(20, 10);
      cfg.images = 2;
      cfg.seed = 4;
      cfg.recovery_crash_depth = 1;
      cfg.recovery_crash_points = 4;
      cfg.recovery_crash_every = 16;
      expect_clean(s, "crashed recovery", model, fc::run_campaign(subject(s, "correct"), cfg));
      auto cc = config(model, 1);
      cc.ops = scaled(10, 6);
      cc.images = 2;
      cc.crash_create = true;
      cc.create_crash_points = scaled(80, 40);  // sampled: the pool's own creation is tests/pmem's
      cc.dirty_heap = true;
      expect_clean(s, "crash-create, dirty heap", model, fc::run_campaign(subject(s, "correct"), cc));
    }
}

// accept-uncommitted needs several threads: with one, an attempt whose
// descriptor is not committed at the crash is the one pending operation,
// which the checker may linearize (as the int maps' maps_crash_test.cc).
struct Broken {
  const char* structure;
  const char* variant;
  int threads;
};
const Broken kBroken[] = {{kMap, "no-payload-writeback", 1},   {kMap, "free-on-detach", 1},
                          {kMap, "accept-uncommitted", 3},     {kQueue, "no-payload-writeback", 1},
                          {kQueue, "free-on-detach", 1},       {kQueue, "ignore-anti", 1}};

TEST(MontageBytesStructuresCrash, BrokenVariantsAreCaught) {
  for (const Broken& b : kBroken) {
    if (b.threads > 1 && kAsan) continue;  // FERRITE_SKIP_THREADED_FORK_UNDER_ASAN's reason, per variant
    const auto& s = subject(b.structure, b.variant);
    ASSERT_TRUE(s.expect_violation);
    for (const std::string& m : ferrite::test::claimed_models(s)) {
      const char* model = m.c_str();
      SCOPED_TRACE(std::string(b.structure) + " " + b.variant + " " + model);
      auto cfg = config(model, b.threads);
      cfg.ops = b.threads == 1 ? 100 : scaled(600, 200);
      if (b.threads > 1) cfg.crash_points = scaled(600, 200);
      cfg.images = 6;
      cfg.seed = 1;
      cfg.stop_after_violations = 1;
      const auto r = ferrite::test::catch_with_seeds(s, cfg);
      ASSERT_TRUE(r.error.empty()) << r.error;
      EXPECT_GT(r.violations, 0u) << b.structure << "/" << b.variant << " not caught under " << model;
      report(b.structure, "broken", model, r);
    }
  }
}

}  // namespace

}  // namespace montage_bytes_structures_crash_test
