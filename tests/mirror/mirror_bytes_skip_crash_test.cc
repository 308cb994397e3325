// Crash campaigns (crash/campaign.h) on mirror-bytes-skiplist, the ordered
// byte-string Mirror map (adapters/mirror_bytes_skiplist.cc,
// include/ferrite/mirror/bytes_skip_map.h), under every persistency model it
// claims (abstract and x86):
//   - correct, both placements: keys 1..64 B, values 1..4096 B (payloads of
//     many size classes, values spanning lines: a torn payload must fail its
//     check); one thread with every persistence verb a crash point (and
//     re-attach every 9 operations), 2 threads sampled; 0 violations and 0
//     inconclusive images; the checker compares keys and values byte for
//     byte and checks scans (point scans as gets, the whole map through a
//     scan: adapters/mirror_bytes_skiplist.cc);
//   - crashes inside pool and map creation and during the recovery that
//     follows (DRAM placement; the pool placement's creation is the heap's
//     InPool path, covered by mirror_crash_test.cc);
//   - each broken variant caught, replayed: payload-no-fence (a payload
//     published before its write-back), recover-no-mark-values,
//     recover-no-mark-keys;
//   - mutation testing: every persistence site of the map's own code
//     (bytes_skip_map.h) and of the payload blocks (src/pmem/payload.cc)
//     that the campaign reaches is caught.
// A payload freed while still reachable (kPayloadFreeNow) is a concurrency
// bug no crash image shows: mirror_bytes_skip_stress_test.cc.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "common/models.h"
#include "common/sanitizer.h"
#include "common/scale.h"
#include "common/subjects.h"
#include "ferrite/crash/campaign.h"
#include "ferrite/crash/model.h"
#include "ferrite/crash/mutate.h"

namespace mirror_bytes_skip_crash_test {  // this file's names, apart in a unity build

namespace fc = ferrite::crash;
using ferrite::test::describe;
using ferrite::test::scaled;
using ferrite::test::subject;

namespace {

constexpr const char* kSubject = "mirror-bytes-skiplist";

fc::CampaignConfig sized(fc::CampaignConfig cfg) {
  cfg.pool_size = std::size_t{4} << 20;
  cfg.sizes.key_min = 1, cfg.sizes.key_max = 64;
  cfg.sizes.value_min = 1, cfg.sizes.value_max = 4096;
  return cfg;
}

class BytesSkipCorrect : public ::testing::TestWithParam<const char*> {};

TEST_P(BytesSkipCorrect, OneThreadEveryCrashPointValues1To4096) {
  const auto& s = subject(kSubject, GetParam());
  ASSERT_FALSE(s.expect_violation);
  for (const auto& model : ferrite::test::claimed_models(s)) {
    fc::CampaignConfig cfg = sized({});
    cfg.model = model;
    cfg.threads = 1;
    // CI budget (the file's campaigns together stay under ~30 s): the pool
    // placement (an ablation) runs fewer operations; its CAS paths are the
    // DRAM placement's.
    cfg.ops = scaled(std::string(GetParam()) == "correct" ? 50 : 30, 20);
    cfg.images = 2;
    cfg.seed = 17;
    const auto r = ferrite::test::expect_every_point_clean(s, cfg, "mirror-bytes-skip");
    EXPECT_GE(r.verbs, cfg.ops / 2);
  }
}

TEST_P(BytesSkipCorrect, TwoThreadsSampledValues1To4096) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  const auto& s = subject(kSubject, GetParam());
  for (const auto& model : ferrite::test::claimed_models(s)) {
    fc::CampaignConfig cfg = sized({});
    cfg.model = model;
    cfg.threads = 2;
    cfg.ops = scaled(150, 40);
    cfg.crash_points = scaled(100, 20);
    cfg.images = 8;
    cfg.seed = 23;
    ferrite::test::expect_sampled_clean(s, cfg, scaled<std::uint64_t>(400, 30), "mirror-bytes-skip");
  }
}

INSTANTIATE_TEST_SUITE_P(Mirror, BytesSkipCorrect, ::testing::Values("correct", "correct-nvm-replica"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string n = i.param;
                           for (auto& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

TEST(BytesSkipCampaign, SurvivesCrashesDuringCreateAndRecovery) {
  const auto& s = subject(kSubject, "correct");
  for (const auto& model : ferrite::test::claimed_models(s)) {
    SCOPED_TRACE("model " + model);
    fc::CampaignConfig cfg = sized({});
    cfg.ops = 12;
    cfg.images = 2;
    cfg.seed = 31;
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
    std::printf("[mirror-bytes-skip] crash-create + recovery crashes [%s]: %llu create points, %llu crash points, "
                "%llu images, %llu nested images, %llu violations, %llu inconclusive, %.1fs\n",
                model.c_str(), static_cast<unsigned long long>(r.create_points),
                static_cast<unsigned long long>(r.crash_points), static_cast<unsigned long long>(r.images_checked),
                static_cast<unsigned long long>(r.nested_images), static_cast<unsigned long long>(r.violations),
                static_cast<unsigned long long>(r.inconclusive), r.seconds);
  }
}

class BytesSkipBroken : public ::testing::TestWithParam<const char*> {};

TEST_P(BytesSkipBroken, IsCaughtUnderEveryModelAndReplays) {
  const auto& s = subject(kSubject, GetParam());
  ASSERT_TRUE(s.expect_violation);
  for (const auto& model : ferrite::test::claimed_models(s)) {
    SCOPED_TRACE("model " + model);
    fc::CampaignConfig cfg = sized({});
    cfg.threads = 1;
    cfg.ops = scaled(120, 60);
    cfg.images = 6;
    cfg.seed = 3;
    cfg.model = model;
    cfg.stop_after_violations = 1;
    cfg.recovery_timeout_s = 1;
    cfg.recovery_cpu_s = 0.2;
    auto r = fc::run_campaign(s, cfg);
    ASSERT_TRUE(r.error.empty()) << r.error;
    ASSERT_GE(r.violations, 1u) << kSubject << "/" << GetParam() << " not caught under " << model;
    const auto& v = r.details.front();
    std::printf("[mirror-bytes-skip] %s [%s] caught: %s %s\n  replay: %s\n", GetParam(), model.c_str(),
                v.property.c_str(), v.reason.c_str(), v.replay.c_str());
    fc::CampaignConfig again = cfg;
    again.replay = fc::CampaignConfig::Replay{v.k, v.image};
    auto rr = fc::run_campaign(s, again);
    EXPECT_TRUE(rr.replay_reached);
    EXPECT_EQ(rr.violations, 1u) << "replay did not reproduce: " << v.replay;
  }
}

INSTANTIATE_TEST_SUITE_P(Mirror, BytesSkipBroken,
                         ::testing::Values("payload-no-fence", "recover-no-mark-values", "recover-no-mark-keys"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string n = i.param;
                           for (auto& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// Every broken variant registered for the subject is one of the above (a
// new one must be added to the list).
TEST(BytesSkipCampaign, TheBrokenVariantsAreTheTestedOnes) {
  int broken = 0;
  for (const auto& s : fc::subjects())
    if (s.structure == kSubject && s.expect_violation) ++broken;
  EXPECT_EQ(broken, 3);
}

// docs/crash.md §6's mutation testing, restricted to the sites of the map's
// own code and of the payload blocks: each reached site's suppression is
// caught (the before_value_cas psync; write_payload's write-backs).
TEST(BytesSkipMutation, EveryPayloadAndMapSiteIsCaught) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  const auto& s = subject(kSubject, "correct");
  fc::CampaignConfig cfg = sized({});
  cfg.threads = 1;
  cfg.ops = 40;
  cfg.images = 2;
  auto mine = [](const ferrite::crash::sites::Site& site) {
    return site.file.find("mirror/bytes_skip_map.h") != std::string::npos ||
           site.file.find("pmem/payload.cc") != std::string::npos;
  };
  const auto m = fc::run_mutation(s, cfg, {}, /*seeds=*/2, mine);
  ASSERT_TRUE(m.error.empty()) << m.error;
  std::size_t sites = 0, caught = 0;
  std::string report;
  for (const auto& v : m.sites) {
    if (!mine(v.site)) continue;
    report += "\n  " + v.site.id() + " (" + v.site.function + "): " + v.how;
    ++sites;
    caught += v.caught ? 1 : 0;
    EXPECT_TRUE(v.caught) << v.site.id() << " (" << v.site.function << ") is not caught";
  }
  EXPECT_GE(sites, 2u) << report;  // before_value_cas's psync; write_payload's pwb(s)
  std::printf("[mirror-bytes-skip] mutation: %zu/%zu payload and map sites caught, %.1fs%s\n", caught, sites,
              m.seconds, report.c_str());
}

}  // namespace

}  // namespace mirror_bytes_skip_crash_test
