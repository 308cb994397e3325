// Crash campaigns (crash/campaign.h) on the Mirror structures through their
// adapters (adapters/mirror_list.cc, adapters/mirror_hashmap.cc,
// adapters/mirror_bst.cc, adapters/mirror_skiplist.cc), under every
// persistency model they claim
// (abstract and x86):
//   - one thread: every persistence verb is a crash point (single-thread
//     runs also re-attach, i.e. run Mirror's recovery, every 9 operations);
//   - 2 and 3 threads: sampled crash points;
//   - both placements: the volatile replica in DRAM (correct) and both
//     replicas in the pool (correct-nvm-replica);
//   - correct variants: 0 violations and 0 inconclusive images;
//   - each broken variant caught (include/ferrite/mirror/internal/faults.h);
//   - mutation testing of mirror-list: every persistence site of
//     include/ferrite/mirror/ the campaign reaches is caught.
// Every image is recovered in a worker process forked before the pool
// existed (docs/crash.md §2): the DRAM replica of the crashed run is not
// there, and recover-no-copy shows that a recovery that does not rebuild it
// is caught.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/models.h"
#include "common/sanitizer.h"
#include "common/scale.h"
#include "common/subjects.h"
#include "ferrite/crash/campaign.h"
#include "ferrite/crash/model.h"
#include "ferrite/crash/mutate.h"

namespace mirror_crash_test {  // this file's names, apart in a unity build

namespace fc = ferrite::crash;
using ferrite::test::scaled;

namespace {

using ferrite::test::Case;
using ferrite::test::describe;
using ferrite::test::subject;
constexpr auto name = &ferrite::test::case_name;

// ------------------------------------------------------------ correct variants
class MirrorCorrect : public ::testing::TestWithParam<Case> {};

// CI budget. The BST's and the skip list's pool placement (an ablation of
// the paper's main mode) build >= 1,000 images per (model, threads) here
// instead of 5,000; their full campaigns (>= 10,000 per model) are run with
// FERRITE_MIRROR_FULL_CAMPAIGNS=1 set in the environment, and recorded in
// docs/mirror.md. A map's creation and
// recovery are its set's (Bst / SkipList ::create/attach), so only the set
// runs the crash-create campaign (see create_covered_elsewhere).
bool reduced_images(const Case& c) {
  if (std::getenv("FERRITE_MIRROR_FULL_CAMPAIGNS") != nullptr) return false;  // the by-hand full runs
  const std::string s = c.structure;
  // The maps' CAS paths are their sets' plus a value CAS: in CI the maps
  // build >= 1,000 images per thread count too.
  if (s == "mirror-bstmap" || s == "mirror-skiplistmap" || s == "mirror-bytes-hashmap") return true;
  return (s.rfind("mirror-bst", 0) == 0 || s.rfind("mirror-skiplist", 0) == 0) &&
         std::string(c.variant) == "correct-nvm-replica";
}
// The set and the map of the hash table are one HarrisTable (one create,
// one recovery): the map runs the crash-create campaign. Both-in-pool
// creation is the heap's InPool path, whatever the structure: the list and
// the hash table run it in that placement, the BST and skip list in DRAM.
bool create_covered_elsewhere(const Case& c) {
  const std::string s = c.structure, v = c.variant;
  return s == "mirror-bstmap" || s == "mirror-skiplistmap" || s == "mirror-hashset" ||
         ((s == "mirror-bst" || s == "mirror-skiplist") && v == "correct-nvm-replica");
}

// The byte-string map's payloads take pool heap chunks per thread and size
// class (keys 1..64 and values 8..512 bytes span a dozen classes): its
// campaigns run on a 4 MiB simulated pool (`crashtest --pool-size 4194304`).
std::size_t pool_for(const Case& c) {
  return std::string(c.structure) == "mirror-bytes-hashmap" ? std::size_t{4} << 20 : std::size_t{1} << 20;
}

TEST_P(MirrorCorrect, OneThreadEveryCrashPoint) {
  const auto& s = subject(GetParam().structure, GetParam().variant);
  ASSERT_FALSE(s.expect_violation);
  for (const auto& model : ferrite::test::claimed_models(s)) {
    fc::CampaignConfig cfg;
    cfg.model = model;
    cfg.threads = 1;
    cfg.ops = scaled(120, 20);
    cfg.images = 3;
    cfg.seed = 11;
    cfg.pool_size = pool_for(GetParam());
    const auto r = ferrite::test::expect_every_point_clean(s, cfg, "mirror");
    EXPECT_GE(r.verbs, cfg.ops / 2);  // updates write back and psync
  }
}

TEST_P(MirrorCorrect, SeveralThreadsSampledImages) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  const auto& s = subject(GetParam().structure, GetParam().variant);
  // >= 10,000 images built over 2 and 3 threads, per model, at full scale.
  const auto want = scaled<std::uint64_t>(reduced_images(GetParam()) ? 1000 : 5000, 50);
  for (const auto& model : ferrite::test::claimed_models(s))
    for (int threads : {2, 3}) {
      fc::CampaignConfig cfg;
      cfg.threads = threads;
      cfg.ops = scaled(300, 40);
      cfg.crash_points = scaled(200, 20);
      cfg.images = 18;  // + 2 fixed
      cfg.seed = 5 + static_cast<std::uint64_t>(threads);
      cfg.pool_size = pool_for(GetParam());
      cfg.model = model;
      ferrite::test::expect_sampled_clean(s, cfg, want, "mirror");
    }
}

// Crashes inside pool and structure creation, and during the recovery that
// follows some of them (every 50th crash point's images). Mirror's own
// recovery (Heap::recover) issues no verb and writes nothing to rep_p, so it
// is idempotent by construction; the recovery crash points are the pool's —
// and, for the BST, those of the CASes that finish flagged deletes.
TEST_P(MirrorCorrect, SurvivesCrashesDuringCreateAndRecovery) {
  if (create_covered_elsewhere(GetParam())) GTEST_SKIP() << "the same create and recovery as the set";
  const auto& s = subject(GetParam().structure, GetParam().variant);
  for (const auto& model : ferrite::test::claimed_models(s)) {
    SCOPED_TRACE("model " + model);
    fc::CampaignConfig cfg;
    cfg.ops = 12;
    cfg.images = 2;
    cfg.seed = 31;
    cfg.pool_size = pool_for(GetParam());
    cfg.model = model;
    cfg.crash_create = true;
    cfg.create_crash_points = ferrite::test::create_points();
    cfg.recovery_crash_depth = 1;
    cfg.recovery_crash_every = 50;
    auto r = fc::run_campaign(s, cfg);
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_GT(r.create_points, 0u);
    EXPECT_EQ(r.violations, 0u) << describe(r);
    EXPECT_EQ(r.inconclusive, 0u) << describe(r);
    std::printf("[mirror] %s/%s crash-create + recovery crashes [%s]: %llu create points, %llu crash points, "
                "%llu images, %llu nested images, %llu violations, %llu inconclusive, %.1fs\n",
                GetParam().structure, GetParam().variant, model.c_str(),
                static_cast<unsigned long long>(r.create_points), static_cast<unsigned long long>(r.crash_points),
                static_cast<unsigned long long>(r.images_checked), static_cast<unsigned long long>(r.nested_images),
                static_cast<unsigned long long>(r.violations), static_cast<unsigned long long>(r.inconclusive),
                r.seconds);
  }
}

INSTANTIATE_TEST_SUITE_P(Mirror, MirrorCorrect,
                         ::testing::Values(Case{"mirror-list", "correct"}, Case{"mirror-list", "correct-nvm-replica"},
                                           Case{"mirror-hashmap", "correct"},
                                           Case{"mirror-hashmap", "correct-nvm-replica"},
                                           Case{"mirror-hashset", "correct"},
                                           Case{"mirror-hashset", "correct-nvm-replica"},
                                           Case{"mirror-bst", "correct"}, Case{"mirror-bst", "correct-nvm-replica"},
                                           Case{"mirror-bstmap", "correct"},
                                           Case{"mirror-bstmap", "correct-nvm-replica"},
                                           Case{"mirror-skiplist", "correct"},
                                           Case{"mirror-skiplist", "correct-nvm-replica"},
                                           Case{"mirror-skiplistmap", "correct"},
                                           Case{"mirror-skiplistmap", "correct-nvm-replica"},
                                           Case{"mirror-bytes-hashmap", "correct"},
                                           Case{"mirror-bytes-hashmap", "correct-nvm-replica"}),
                         name);

// The byte-string map with values of 1..4096 bytes (keys 1..64): payloads of
// many size classes, values spanning lines (a torn payload must fail its
// check), one thread at every crash point and 2 threads sampled.
TEST(MirrorBytesCampaign, LargeValuesOneAndTwoThreads) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  for (const char* variant : {"correct", "correct-nvm-replica"}) {
    const auto& s = subject("mirror-bytes-hashmap", variant);
    for (const auto& model : ferrite::test::claimed_models(s))
      for (int threads : {1, 2}) {
        SCOPED_TRACE(std::string(variant) + " model " + model + " threads " + std::to_string(threads));
        fc::CampaignConfig cfg;
        cfg.model = model;
        cfg.threads = threads;
        cfg.ops = scaled(100, 20);
        cfg.images = 3;
        cfg.seed = 17;
        cfg.pool_size = std::size_t{4} << 20;
        cfg.sizes.key_min = 1, cfg.sizes.key_max = 64;
        cfg.sizes.value_min = 1, cfg.sizes.value_max = 4096;
        if (threads > 1) cfg.crash_points = scaled(150, 20);
        auto r = fc::run_campaign(s, cfg);
        ASSERT_TRUE(r.error.empty()) << r.error;
        EXPECT_GT(r.images_checked, 0u);
        EXPECT_EQ(r.violations, 0u) << describe(r);
        EXPECT_EQ(r.inconclusive, 0u) << describe(r);
        std::printf("[mirror] mirror-bytes-hashmap/%s values 1..4096 [%s] %d thread(s): %llu crash points, %llu images, "
                    "%llu violations, %llu inconclusive, %.1fs\n",
                    variant, model.c_str(), threads, static_cast<unsigned long long>(r.crash_points),
                    static_cast<unsigned long long>(r.images_checked), static_cast<unsigned long long>(r.violations),
                    static_cast<unsigned long long>(r.inconclusive), r.seconds);
      }
  }
}

// ------------------------------------------------------------ broken variants
struct BrokenCase {
  const char* structure;
  const char* variant;
  int threads;  // the smallest run that exposes it
};
class MirrorBroken : public ::testing::TestWithParam<BrokenCase> {};

TEST_P(MirrorBroken, IsCaughtUnderEveryModel) {
  const auto& p = GetParam();
  const auto& s = subject(p.structure, p.variant);
  ASSERT_TRUE(s.expect_violation);
  if (p.threads > 1) FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  for (const auto& model : ferrite::test::claimed_models(s)) {
    SCOPED_TRACE("model " + model);
    fc::CampaignConfig cfg;
    cfg.threads = p.threads;
    cfg.ops = p.threads == 1 ? scaled(120, 60) : scaled(400, 200);
    cfg.images = 6;
    cfg.seed = 3;
    cfg.pool_size = 1u << 20;
    cfg.model = model;
    if (p.threads > 1) cfg.crash_points = scaled(400, 150);
    cfg.stop_after_violations = 1;
    // A broken recovery can leave the replicas inconsistent so that a CAS
    // spins forever (Fig. 4 l.29 never holds): a hang is a violation too.
    // An image (a 60-node recovery, 8 operations, the check) takes well
    // under a millisecond, under ASan too. The hang spins, so it is ended
    // after 0.2 s of its CPU time (a catch and its replay per model: the
    // recover-no-trace tests spent ~5 s each waiting on the 1 s wall
    // limit alone, and burned a core meanwhile); the wall limit stays 1 s
    // for a recovery that waits for a core on a loaded machine (at 0.5 s,
    // with a link running beside it, a hang test of the farm took 27 s
    // instead of 2 in some runs: docs/crash.md, "Worker deaths").
    cfg.recovery_timeout_s = 1;
    cfg.recovery_cpu_s = 0.2;
    auto r = ferrite::test::catch_with_seeds(s, cfg);
    ASSERT_TRUE(r.error.empty()) << r.error;
    ASSERT_GE(r.violations, 1u) << p.structure << "/" << p.variant << " not caught under " << model;
    const auto& v = r.details.front();
    std::printf("[mirror] %s/%s [%s] caught (seed %llu): %s %s\n  replay: %s\n", p.structure, p.variant,
                model.c_str(), static_cast<unsigned long long>(r.seed), v.property.c_str(), v.reason.c_str(),
                v.replay.c_str());
    if (p.threads == 1) {
      // One thread is deterministic: the replay reproduces the violation.
      fc::CampaignConfig again = cfg;
      again.seed = r.seed;
      again.replay = fc::CampaignConfig::Replay{v.k, v.image};
      auto rr = fc::run_campaign(s, again);
      EXPECT_TRUE(rr.replay_reached);
      EXPECT_EQ(rr.violations, 1u) << "replay did not reproduce: " << v.replay;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Mirror, MirrorBroken,
    ::testing::Values(BrokenCase{"mirror-list", "no-pwb-before-volatile", 1},
                      BrokenCase{"mirror-list", "helper-no-pwb", 3},
                      BrokenCase{"mirror-list", "recover-no-trace", 1},
                      BrokenCase{"mirror-list", "recover-no-copy", 1},
                      BrokenCase{"mirror-list", "nvm-recover-no-copy", 1},
                      BrokenCase{"mirror-hashmap", "no-pwb-before-volatile", 1},
                      BrokenCase{"mirror-hashmap", "helper-no-pwb", 3},
                      BrokenCase{"mirror-hashmap", "recover-no-trace", 1},
                      BrokenCase{"mirror-hashmap", "recover-no-copy", 1},
                      BrokenCase{"mirror-bst", "no-pwb-before-volatile", 1},
                      BrokenCase{"mirror-bst", "helper-no-pwb", 3},
                      BrokenCase{"mirror-bst", "recover-no-trace", 1},
                      BrokenCase{"mirror-bst", "recover-no-copy", 1},
                      BrokenCase{"mirror-bst", "recover-no-help", 1},
                      BrokenCase{"mirror-bstmap", "recover-no-trace", 1},
                      BrokenCase{"mirror-bstmap", "recover-no-copy", 1},
                      BrokenCase{"mirror-skiplist", "no-pwb-before-volatile", 1},
                      BrokenCase{"mirror-skiplist", "helper-no-pwb", 3},
                      BrokenCase{"mirror-skiplist", "recover-no-trace", 1},
                      BrokenCase{"mirror-skiplist", "recover-no-copy", 1},
                      BrokenCase{"mirror-skiplistmap", "recover-no-trace", 1},
                      BrokenCase{"mirror-skiplistmap", "recover-no-copy", 1},
                      BrokenCase{"mirror-bytes-hashmap", "payload-no-fence", 1},
                      BrokenCase{"mirror-bytes-hashmap", "recover-no-mark-values", 1}),
    [](const ::testing::TestParamInfo<BrokenCase>& i) {
      std::string s = std::string(i.param.structure) + "_" + i.param.variant;
      std::replace(s.begin(), s.end(), '-', '_');
      return s;
    });

// ------------------------------------------------------------ mutation testing
// docs/crash.md §6's standard campaign without --instance-threads (Mirror
// has no per-thread records) on a 1 MiB pool, four seeds per site: every
// persistence site of include/ferrite/mirror/ that mirror-list reaches —
// Heap::make's write-back and psync, region 0's header write-back, the CAS's
// l.41–42 and the helper's l.20–21 (reached only with several threads) — is
// caught.
TEST(MirrorMutation, EveryMirrorSiteOfTheListIsCaught) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  const auto& s = subject("mirror-list", "correct");
  fc::CampaignConfig cfg;
  cfg.threads = 3;
  cfg.ops = 40;
  cfg.crash_points = 2000;
  cfg.images = 2;
  cfg.crash_create = true;
  cfg.dirty_heap = true;
  // Mirror's own sites only (the pool's are mutated by tests/pmem).
  const auto m = fc::run_mutation(s, cfg, {}, /*seeds=*/4, [](const ferrite::crash::sites::Site& site) {
    return site.file.find("ferrite/mirror/") != std::string::npos;
  });
  ASSERT_TRUE(m.error.empty()) << m.error;
  std::size_t mirror_sites = 0, caught = 0;
  std::string report;
  for (const auto& v : m.sites) {
    report += "\n  " + v.site.id() + " (" + v.site.function + "): " + v.how;
    if (v.site.file.find("ferrite/mirror/") == std::string::npos) continue;
    ++mirror_sites;
    caught += v.caught ? 1 : 0;
    EXPECT_TRUE(v.caught) << v.site.id() << " (" << v.site.function << ") is not caught";
  }
  // make: pwb, psync; CAS l.41, l.42; helper l.20, l.21; region 0's header pwb (Heap's constructor;
  // the growth sites are mirror_growth_crash_test.cc's: this list never grows).
  EXPECT_EQ(mirror_sites, 7u) << report;
  std::printf("[mirror] mutation of mirror-list: %zu/%zu Mirror sites caught, %zu/%zu sites overall, %.1fs%s\n",
              caught, mirror_sites, m.caught, m.sites.size(), m.seconds, report.c_str());
}

}  // namespace

}  // namespace mirror_crash_test
