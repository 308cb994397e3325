// Crash campaigns (crash/campaign.h, simulator backend) of the failure-atomic
// logging library under the store models (docs/crash.md, "The store
// models"): each workload (queue, hash map) × language model (transactions,
// ATLAS sections, SFRs) with the instrumentation its persistency model
// needs (adapters/logging_store_models.cc): HOPS under `hops`, HOPS+ under
// `hops+`, strand (StrandWeaver Fig. 5) under `strand`.
//  * single-threaded: every crash point, 0 violations, 0 inconclusive —
//    every operation is one region, so failure atomicity ("the recovered
//    state is the state after a prefix of the completed regions, plus or
//    not the one in flight") is durable linearizability of the queue / map,
//    which the exact checkers decide;
//  * 2 and 3 threads: sampled crash points, 0 violations, 0 inconclusive;
//  * recovery crashed at its own verbs under a store model, then run again;
//  * broken variants caught under their model: strand without the persist
//    barrier between an undo entry and its update (`strand`), HOPS without
//    the dfence at a region's commit / release and without the ofence
//    between entry and update (`hops`);
//  * the models matter: the HOPS instrumentation, which issues no
//    write-back, is caught under the write-back model x86.
// The write-back instrumentations (x86, and strand under abstract / x86)
// are tests/logging/logging_crash_test.cc's.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "campaign_checks.h"
#include "common/models.h"
#include "common/sanitizer.h"
#include "common/scale.h"
#include "common/subjects.h"
#include "ferrite/crash/campaign.h"

namespace store_models_crash_test {  // this file's names, apart in a unity build

namespace cr = ferrite::crash;
using ferrite::test::describe;
using ferrite::test::scaled;
using ferrite::test::subject;
using ferrite::test::logging::expect_clean;
using ferrite::test::logging::ull;

namespace {


// Each correct instrumentation with the one store model it is written for.
struct Instrumented {
  const char* variant;
  const char* model;
  int threads;  // of the sampled campaign: 2 or 3
};
constexpr Instrumented kCorrect[] = {
    {"correct-hops", "hops", 3}, {"correct-hops+", "hops+", 2}, {"correct-strand", "strand", 3}};

}  // namespace

class LoggingStoreModelCrash : public ::testing::TestWithParam<const char*> {};

TEST_P(LoggingStoreModelCrash, EachInstrumentationClaimsExactlyItsStoreModel) {
  for (const auto& c : kCorrect) {
    const auto& s = subject(GetParam(), c.variant);
    EXPECT_EQ(ferrite::test::claimed_models(s), std::vector<std::string>{c.model}) << c.variant;
    EXPECT_FALSE(s.expect_violation) << c.variant;
  }
}

TEST_P(LoggingStoreModelCrash, SurvivesEveryCrashPointOfASingleThreadRunUnderItsStoreModel) {
  for (const auto& c : kCorrect) {
    const auto& s = subject(GetParam(), c.variant);
    cr::CampaignConfig cfg;
    cfg.model = c.model;
    cfg.ops = scaled<std::size_t>(8, 4);
    cfg.images = 4;
    cfg.seed = 31;
    cfg.pool_size = std::size_t{2} << 20;
    const auto r = cr::run_campaign(s, cfg);
    expect_clean(r, std::string(c.variant) + " [" + c.model + "]");
    EXPECT_EQ(r.crash_points, r.verbs + 1) << "every crash point";
    EXPECT_GT(r.images_checked, r.crash_points);
    std::printf("[logging-store-crash] %s/%s 1 thread [%s]: %zu ops, %llu crash points, %llu images, "
                "%llu violations, %llu inconclusive\n",
                GetParam(), c.variant, c.model, cfg.ops, ull(r.crash_points), ull(r.images_checked),
                ull(r.violations), ull(r.inconclusive));
  }
}

TEST_P(LoggingStoreModelCrash, SurvivesSampledCrashesOfTwoAndThreeThreadRunsUnderItsStoreModel) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  for (const auto& c : kCorrect) {
    const auto& s = subject(GetParam(), c.variant);
    cr::CampaignConfig cfg;
    cfg.model = c.model;
    cfg.threads = c.threads;
    cfg.ops = scaled<std::size_t>(120, 40);
    cfg.images = 6;
    cfg.crash_points = scaled<std::size_t>(16, 8);
    cfg.seed = 700 + static_cast<std::uint64_t>(c.threads);
    cfg.pool_size = std::size_t{2} << 20;
    const auto r = cr::run_campaign(s, cfg);
    expect_clean(r, std::string(c.variant) + " " + std::to_string(c.threads) + " threads [" + c.model + "]");
    EXPECT_GT(r.images_checked, 0u);
    std::printf("[logging-store-crash] %s/%s %d threads [%s]: %llu crash points, %llu images, %llu violations, "
                "%llu inconclusive\n",
                GetParam(), c.variant, c.threads, c.model, ull(r.crash_points), ull(r.images_checked),
                ull(r.violations), ull(r.inconclusive));
  }
}

// Every broken variant registered for the subject is caught under the model
// it claims: the queues have three (strand-no-barrier, hops-no-ofence,
// hops-no-dfence), the maps one (hops-no-dfence: a map region stores one
// word, whose lost undo entry no state can show).
TEST_P(LoggingStoreModelCrash, EveryBrokenVariantIsCaughtUnderItsStoreModel) {
  int variants = 0;
  for (const auto& s : cr::subjects()) {
    if (s.structure != GetParam() || !s.expect_violation) continue;
    ++variants;
    for (const auto& model : ferrite::test::claimed_models(s)) {
      EXPECT_TRUE(model == "hops" || model == "strand") << s.variant << " claims " << model;
      cr::CampaignConfig cfg;
      cfg.model = model;
      cfg.ops = scaled<std::size_t>(40, 20);
      cfg.images = 6;
      cfg.seed = 29;
      cfg.pool_size = std::size_t{2} << 20;
      cfg.max_details = 1;
      cfg.stop_after_violations = 1;  // the verdict is the first catch
      const auto r = ferrite::test::catch_with_seeds(s, cfg);
      ASSERT_TRUE(r.error.empty()) << r.error;
      EXPECT_GT(r.violations, 0u) << s.structure << "/" << s.variant << " was not caught under " << model;
      std::printf("[logging-store-crash] %s/%s [%s]: caught, %llu violations in %llu images%s\n",
                  s.structure.c_str(), s.variant.c_str(), model.c_str(), ull(r.violations), ull(r.images_checked),
                  r.details.empty() ? "" : ("; first: " + r.details[0].reason).c_str());
    }
  }
  EXPECT_EQ(variants, std::string(GetParam()).ends_with("-queue") ? 3 : 1);
}

INSTANTIATE_TEST_SUITE_P(Workloads, LoggingStoreModelCrash,
                         ::testing::Values("logging-store-txn-queue", "logging-store-atlas-queue",
                                           "logging-store-sfr-queue", "logging-store-txn-map",
                                           "logging-store-atlas-map", "logging-store-sfr-map"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// Recovery (the log area's root hook) crashed at its own verbs under a
// store model and run again: its stores are annotated, so the models see
// them. The transaction queue under hops, the ATLAS map under strand.
TEST(LoggingStoreModelRecoveryCrash, RecoveryCrashedAtItsOwnVerbsUnderAStoreModelRecoversAgain) {
  const Instrumented* hops = &kCorrect[0];
  const Instrumented* strand = &kCorrect[2];
  for (const auto& [name, c] : {std::pair<const char*, const Instrumented*>{"logging-store-txn-queue", hops},
                                std::pair<const char*, const Instrumented*>{"logging-store-atlas-map", strand}}) {
    const auto& s = subject(name, c->variant);
    cr::CampaignConfig cfg;
    cfg.model = c->model;
    cfg.ops = scaled<std::size_t>(4, 3);
    cfg.images = 2;
    cfg.seed = 41;
    cfg.pool_size = std::size_t{2} << 20;
    cfg.recovery_crash_depth = 1;
    cfg.recovery_crash_points = 3;
    // Every 8th crash point: the ASan pass's 3 operations give 23 crash
    // points under hops since stop 39 (one ofence fewer per region), and
    // every 24th reached only crash point 0, where recovery has nothing to do.
    cfg.recovery_crash_every = 8;
    const auto r = cr::run_campaign(s, cfg);
    expect_clean(r, std::string(name) + " crash during recovery [" + c->model + "]");
    EXPECT_GT(r.nested_images, 0u) << "no recovery was crashed";
    std::printf("[logging-store-crash] %s/%s crash-recovery [%s]: %llu crash points, %llu images, %llu nested "
                "images, %llu violations, %llu inconclusive\n",
                name, c->variant, c->model, ull(r.crash_points), ull(r.images_checked), ull(r.nested_images),
                ull(r.violations), ull(r.inconclusive));
  }
}

// The models are not interchangeable: the HOPS instrumentation issues no
// write-back (stores persist by themselves under HOPS), so under x86 a
// completed region's stores are never durable — caught. This is why each
// store-model variant claims its model only.
TEST(LoggingStoreModelCrash, TheHopsInstrumentationIsCaughtUnderTheWriteBackModelX86) {
  const auto& s = subject("logging-store-txn-queue", "correct-hops");
  cr::CampaignConfig cfg;
  cfg.model = "x86";
  cfg.ops = scaled<std::size_t>(8, 4);
  cfg.images = 4;
  cfg.seed = 31;
  cfg.pool_size = std::size_t{2} << 20;
  cfg.max_details = 1;
  cfg.stop_after_violations = 1;
  const auto r = cr::run_campaign(s, cfg);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_GT(r.violations, 0u) << "HOPS instrumentation passed under x86";
}

}  // namespace store_models_crash_test
