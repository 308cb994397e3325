// Crash campaigns that crash DURING the in-run rollback of a region that met
// a full log (undo_log.h, Logger::overflow / abort_region; docs/logging.md,
// "A full log inside a region"): the rollback writes the region's old
// values back, makes them durable, invalidates the region's entries newest
// first and throws logging::LogFull. A crash at any of those verbs must
// recover the state before the region (or, before the rollback's first
// store persisted, the same state by recovery's own rollback).
//
// The subject: LoggedFill, a persistent array of kWords words behind one
// logging::Lock on a log of kCapacity entries. fill(start, len, v) stores
// v, v+1, ... into len consecutive words (mod kWords) in one region (a
// transaction, an ATLAS section, an SFR). A region holds a begin/acquire
// entry, one entry per store and an end entry, and every entry but the end
// one needs two free slots (undo_log.h, append): a fill of up to kFit words
// fits, a longer one stores kFit words, meets the full log, is rolled back
// and answers kAborted — deterministically (Region's make_room empties the
// thread's deferred regions first, so the whole ring is free). Half the
// operations are such overflows: most verbs of a run are rollback verbs.
// Checked by the region checker (crash/checker.h) with the fill's
// sequential semantics, an overflowing fill being a no-op that answers
// kAborted; the values are unique per operation, so a word left from a
// partly rolled-back fill shows.
//
// The broken variant internal::kNoRollbackDurable (the rollback without its
// durability point between the old values and the invalidations) is caught
// under every model.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/logging_adapter.h"
#include "campaign_checks.h"
#include "common/models.h"
#include "common/sanitizer.h"
#include "common/scale.h"
#include "common/subjects.h"
#include "ferrite/crash/campaign.h"
#include "ferrite/logging/workloads.h"
#include "logged_fill.h"

namespace cr = ferrite::crash;
namespace fl = ferrite::logging;
namespace fa = ferrite::adapters;
using ferrite::test::describe;
using ferrite::test::scaled;
using ferrite::test::logging::expect_clean;
using ferrite::test::logging::Fill;
using ferrite::test::logging::fill_subject;
using ferrite::test::logging::ull;

namespace logfull_crash_test {  // this file's names, apart in a unity build

namespace {

struct Case {
  cr::SubjectInfo info;
  const char* model;
  std::atomic<std::uint64_t>* aborted;
};

constexpr auto kTxn = fl::Language::kTxn;
constexpr auto kAtlas = fl::Language::kAtlas;
constexpr auto kSfr = fl::Language::kSfr;
constexpr auto kX86 = fl::Instrumentation::kX86;
constexpr auto kHops = fl::Instrumentation::kHops;
constexpr auto kHopsPlus = fl::Instrumentation::kHopsPlus;
constexpr auto kStrand = fl::Instrumentation::kStrand;
constexpr unsigned kBroken = fl::internal::kNoRollbackDurable;

// Each persistency model the logging claims, with the instrumentation
// written for it (x86 under x86 and abstract), and a language per model
// (rotating: every language runs).
template <unsigned F>
std::vector<Case> cases(const char* variant, bool broken) {
  const std::string v = variant;
  return {
      {fill_subject<Fill<kTxn, kX86, F>>("logging-txn-fill", variant, broken), "x86", &Fill<kTxn, kX86, F>::aborted},
      {fill_subject<Fill<kAtlas, kX86, F>>("logging-atlas-fill", variant, broken), "abstract",
       &Fill<kAtlas, kX86, F>::aborted},
      {fill_subject<Fill<kSfr, kHops, F>>("logging-store-sfr-fill", variant, broken), "hops",
       &Fill<kSfr, kHops, F>::aborted},
      {fill_subject<Fill<kAtlas, kHopsPlus, F>>("logging-store-atlas-fill", variant, broken), "hops+",
       &Fill<kAtlas, kHopsPlus, F>::aborted},
      {fill_subject<Fill<kTxn, kStrand, F>>("logging-store-txn-fill", variant, broken), "strand",
       &Fill<kTxn, kStrand, F>::aborted},
  };
}

void report(const char* tag, const Case& c, int threads, const cr::CampaignResult& r) {
  std::printf("[%s] %s/%s %d thread%s [%s]: %zu ops, %llu crash points, %llu images, %llu nested, %llu violations, "
              "%llu inconclusive, %.1f s; fills rolled back in the run: %llu\n",
              tag, c.info.structure.c_str(), c.info.variant.c_str(), threads, threads == 1 ? "" : "s", c.model, r.ops,
              ull(r.crash_points), ull(r.images_checked), ull(r.nested_images), ull(r.violations),
              ull(r.inconclusive), r.seconds, ull(c.aborted->load()));
}

cr::CampaignConfig config(const char* model, int threads, std::size_t ops, std::size_t points, std::uint64_t seed) {
  cr::CampaignConfig cfg;
  cfg.model = model;
  cfg.threads = threads;
  cfg.ops = ops;
  cfg.images = 4;
  cfg.crash_points = points;
  cfg.seed = seed;
  cfg.pool_size = std::size_t{2} << 20;
  return cfg;
}

}  // namespace

// One thread (runs under ASan at FERRITE_TEST_SCALE=0.1): sampled crash
// points of a run whose fills overflow the log half the time; recovery
// crashed as well at some of its own verbs.
TEST(TableTwoCrashLogFull, CrashesDuringTheInRunRollbackRecoverTheStateBeforeTheRegion) {
  for (const Case& c : cases<fl::internal::kNoFaults>("correct-small-log", false)) {
    auto cfg = config(c.model, 1, scaled<std::size_t>(12, 6), scaled<std::size_t>(48, 16), 1700);
    cfg.recovery_crash_depth = 1;
    cfg.recovery_crash_points = 1;
    cfg.recovery_crash_every = 16;
    const auto r = cr::run_campaign(c.info, cfg);
    expect_clean(r, c.info.structure + " [" + c.model + "]");
    EXPECT_GT(r.images_checked, 0u);
    report("logfull-crash", c, 1, r);
    EXPECT_GT(c.aborted->load(), 0u) << c.info.structure << ": no fill met the full log";
  }
}

// Two threads, sampled: the rollback releases the lock another thread is
// waiting for (ATLAS: the next section acquires from the section before the
// rolled-back one).
TEST(TableTwoCrashLogFull, CrashesDuringTheInRunRollbackOfTwoThreadRunsRecoverAPrefix) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  for (const Case& c : cases<fl::internal::kNoFaults>("correct-small-log", false)) {
    const auto cfg = config(c.model, 2, scaled<std::size_t>(40, 16), scaled<std::size_t>(150, 30), 1800);
    const auto r = cr::run_campaign(c.info, cfg);
    expect_clean(r, c.info.structure + " 2 threads [" + c.model + "]");
    EXPECT_GT(r.images_checked, 0u);
    report("logfull-crash", c, 2, r);
    EXPECT_GT(c.aborted->load(), 0u) << c.info.structure << ": no fill met the full log";
  }
}

// The rollback without its durability point between the old values and
// the invalidations (internal::kNoRollbackDurable): caught under every
// model, one thread, every crash point of a short run (not scaled: six
// rollbacks, whose first invalidation is the one crash point that shows
// it; 64 random images there, 16 missed it under abstract).
TEST(TableTwoCrashLogFull, ARollbackWithoutItsDurabilityPointIsCaught) {
  for (const Case& c : cases<kBroken>("rollback-not-durable", true)) {
    auto cfg = config(c.model, 1, 12, 0, 29);
    cfg.images = 64;
    cfg.max_details = 1;
    cfg.stop_after_violations = 1;
    const auto r = ferrite::test::catch_with_seeds(c.info, cfg);
    ASSERT_TRUE(r.error.empty()) << r.error;
    ASSERT_GT(r.violations, 0u) << c.info.structure << "/" << c.info.variant << " [" << c.model << "] not caught";
    ASSERT_FALSE(r.details.empty());
    EXPECT_EQ(r.details[0].property, "failure-atomicity") << r.details[0].reason;
    std::printf("[logfull-crash] %s/%s [%s]: caught, %llu violations in %llu images (seed %llu); first: %s\n",
                c.info.structure.c_str(), c.info.variant.c_str(), c.model, ull(r.violations), ull(r.images_checked),
                ull(r.seed), r.details[0].reason.c_str());
  }
}

}  // namespace logfull_crash_test
