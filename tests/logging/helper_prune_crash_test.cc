// Is the durability fence of a helper's prune (undo_log.h Logger::prune,
// prune_durable when helping) needed under strand persistency? The argument
// (docs/logging.md, "Deviations"): the owner's entries are on separate
// strands, ordered after the helper's invalidations only per 8-byte word
// (SPA), so an entry of the owner's next lap torn in a pruned region's end
// slot (its other words persisted, its meta word not) hides the end entry
// while the region's earlier slots still hold its live entries — recovery
// would undo a completed region. Reaching that image needs the owner to
// reuse the pruned slots before the helper's next join_strand (which makes
// the helper's invalidations durable): with Logger::make_room's reserve of
// 64 entries on the crash campaigns' logs, the owner writes most of a lap
// first, and the helper always joins earlier.
//
// Here the hand-off workload (HOPS+ paper, Figure 1: produces release A
// early, so consumes defer behind them and get helped) runs on an 8-entry
// log: below make_room's reserve, a Region waits until its own thread has
// no deferred region, then starts on an empty ring, and reuses a region's
// slots within two regions. Three threads under the strand model.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "adapters/logging_adapter.h"
#include "campaign_checks.h"
#include "common/sim_range.h"
#include "ferrite/crash/sim.h"
#include "common/models.h"
#include "common/sanitizer.h"
#include "common/scale.h"
#include "common/subjects.h"
#include "ferrite/crash/campaign.h"

namespace helper_prune_crash_test {  // this file's names, apart in a unity build

namespace cr = ferrite::crash;
namespace fl = ferrite::logging;
namespace fa = ferrite::adapters;
using ferrite::test::describe;
using ferrite::test::scaled;
using ferrite::test::logging::expect_clean;
using ferrite::test::logging::ull;

namespace {

template <unsigned F>
struct TinyLog : fa::logging::Logged<fl::LoggedHandoff, fl::Language::kAtlas, fl::Instrumentation::kStrand, F> {
  using Base = fa::logging::Logged<fl::LoggedHandoff, fl::Language::kAtlas, fl::Instrumentation::kStrand, F>;
  using Handle = typename Base::Handle;
  static constexpr std::size_t kCapacity = 8;
  // FERRITE_TINY_LOG_CAPACITY (exploration only): another ring size — the
  // owner's prune (owner_prune_crash_test.cc) is reached by the hand-off
  // only on rings of 6 or 9 entries (docs/logging.md).
  static std::size_t capacity() {
    const char* c = std::getenv("FERRITE_TINY_LOG_CAPACITY");
    return c != nullptr ? static_cast<std::size_t>(std::atoi(c)) : kCapacity;
  }
  static fl::LoggerOptions options(const fa::Setup& s) {
    auto o = Base::options(s);
    o.capacity = capacity();
    return o;
  }
  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) { return Base::T::make(*pool, s, options(s)); }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) { return create(&pool, s); }
  static inline std::atomic<std::uint64_t> helped{0};  // the most regions one run's helpers pruned
  // The most entries of one run that reused an end slot their owner had
  // pruned since its last join (Logger::owner_prune_reuses).
  static inline std::atomic<std::uint64_t> reuses{0};
  static void raise(std::atomic<std::uint64_t>& a, std::uint64_t n) {
    for (std::uint64_t m = a.load(); m < n && !a.compare_exchange_weak(m, n);) {
    }
  }
  static ferrite::op::Response apply(Handle& h, int tid, std::uint64_t seq, const ferrite::op::Op& o) {
    auto r = Base::apply(h, tid, seq, o);
    raise(helped, h->logger().helped_prunes());
    raise(reuses, h->logger().owner_prune_reuses());
    return r;
  }
};

template <class A>
cr::SubjectInfo tiny_subject(const char* variant, bool broken) {
  cr::SubjectInfo info;
  info.structure = "logging-store-atlas-handoff-tiny-log";
  info.variant = variant;
  info.expect_violation = broken;
  info.models = {"strand"};
  info.make = [] { return std::unique_ptr<cr::Subject>(new fa::internal::Subject<A>()); };
  return info;
}

cr::CampaignConfig tiny_config(std::size_t ops, std::size_t points, int images, std::uint64_t seed) {
  cr::CampaignConfig cfg;
  cfg.model = "strand";
  cfg.threads = 3;
  cfg.ops = ops;
  cfg.images = images;
  cfg.crash_points = points;
  cfg.seed = seed;
  cfg.pool_size = std::size_t{2} << 20;
  return cfg;
}

bool full_campaigns() {
  const char* e = std::getenv("FERRITE_LOGGING_FULL_CAMPAIGNS");
  return e != nullptr && std::string(e) == "1";
}

}  // namespace

// The correct strand instrumentation on the 8-entry log: helped prunes whose
// slots the owner reuses within two regions; 0 violations, 0 inconclusive.
TEST(TableTwoCrashTinyLog, HelpedPrunesOfAnEightEntryLogSurviveSampledCrashesUnderStrand) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  using A = TinyLog<fl::internal::kNoFaults>;
  const auto info = tiny_subject<A>("correct-strand", false);
  const auto cfg = tiny_config(scaled<std::size_t>(60, 30), scaled<std::size_t>(200, 40), 4, 1300);
  const auto r = cr::run_campaign(info, cfg);
  expect_clean(r, "tiny-log hand-off, 3 threads [strand]");
  std::printf("[tiny-log] %s/%s 3 threads [strand]: %zu ops, %llu crash points, %llu images, %llu violations, %llu "
              "inconclusive, %.1f s; regions pruned by a helper (most in one run): %llu\n",
              info.structure.c_str(), info.variant.c_str(), r.ops, ull(r.crash_points), ull(r.images_checked),
              ull(r.violations), ull(r.inconclusive), r.seconds, ull(A::helped.load()));
  EXPECT_GT(A::helped.load(), 0u) << "nobody helped";
}

// Exploration (FERRITE_LOGGING_FULL_CAMPAIGNS=1): the variant without the
// helper's durability fence (internal::kNoHelperPruneDurable) on the same
// log, many seeds, every crash point; prints what it finds.
TEST(TableTwoCrashTinyLog, ExploreTheHelpersPruneWithoutItsDurabilityFenceUnderStrand) {
  if (!full_campaigns()) GTEST_SKIP() << "set FERRITE_LOGGING_FULL_CAMPAIGNS=1 (docs/logging.md)";
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  using A = TinyLog<fl::internal::kNoHelperPruneDurable>;
  using C = TinyLog<fl::internal::kNoFaults>;
  using O = TinyLog<fl::internal::kNoOwnerPruneJoin>;
  // FERRITE_TINY_LOG_VARIANT=correct: the same campaigns of the correct
  // variant (the control); =owner: the owner's prune without its join
  // before a pruned end slot is reused (internal::kNoOwnerPruneJoin).
  const char* v = std::getenv("FERRITE_TINY_LOG_VARIANT");
  const bool control = v != nullptr && std::string(v) == "correct";
  const bool owner = v != nullptr && std::string(v) == "owner";
  const auto info = control ? tiny_subject<C>("correct-strand", false)
                    : owner ? tiny_subject<O>("owner-prune-no-join", true)
                            : tiny_subject<A>("helper-prune-not-durable", true);
  const char* s = std::getenv("FERRITE_TINY_LOG_SEEDS");
  const int seeds = s != nullptr ? std::atoi(s) : 8;
  const char* f = std::getenv("FERRITE_TINY_LOG_FIRST_SEED");
  const int first = f != nullptr ? std::atoi(f) : 1;
  // pct: a high-priority owner runs region after region while a helper
  // that pruned its slots waits at a point (random: many short turns).
  const char* sched = std::getenv("FERRITE_TINY_LOG_SCHEDULE");
  const bool pct = sched != nullptr && std::string(sched) == "pct";
  std::uint64_t points = 0, images = 0, violations = 0;
  for (int seed = first; seed < first + seeds; ++seed) {
    const char* im = std::getenv("FERRITE_TINY_LOG_IMAGES");
    auto cfg = tiny_config(60, 100000, im != nullptr ? std::atoi(im) : 8, static_cast<std::uint64_t>(seed));
    cfg.max_details = 20;
    if (pct) cfg.schedule = cr::CampaignConfig::Schedule::kPct;
    const auto r = cr::run_campaign(info, cfg);
    ASSERT_TRUE(r.error.empty()) << r.error;
    points += r.crash_points;
    images += r.images_checked;
    violations += r.violations;
    std::printf("[tiny-log] seed %d: %llu crash points, %llu images, %llu violations, %llu inconclusive, %.1f s, "
                "helped %llu, owner's end slots reused before a join %llu%s\n",
                seed, ull(r.crash_points), ull(r.images_checked), ull(r.violations), ull(r.inconclusive), r.seconds,
                ull(control ? C::helped.load() : owner ? O::helped.load() : A::helped.load()),
                ull(control ? C::reuses.load() : owner ? O::reuses.load() : A::reuses.load()), describe(r).c_str());
  }
  std::printf("[tiny-log] %s [strand]: %d seeds, %llu crash points, %llu images, %llu violations\n",
              info.variant.c_str(), seeds, ull(points), ull(images), ull(violations));
}

// The image the fence exists for, re-enacted under the strand model with
// the Logger's own verbs on one ring's slots (a model-level test: the
// store sequence of Logger::prune, helping, and of the owner's next lap,
// written out, not the Logger run). Owner O's completed region R holds
// slots 0 (begin), 1 (store entry) and 2 (end entry, commit marker),
// durable. Helper H prunes R (Logger::prune): invalidates slots 0 and 1,
// persist barrier, slot 2, persist barrier, head; then join_strand
// (prune_durable) or, without the fence, a persist barrier. O's next lap
// writes its entries at slots 1 and 2 (a region whose store entry is not
// its end entry lands on R's end slot), each on a new strand (Fig. 5), no
// join yet. The image that matters: slot 1 still R's live store entry (H's
// invalidation and O's new entry not persisted) while slot 2 no longer
// holds R's end entry intact (some word of O's new entry persisted: torn,
// its checksum fails) — recovery finds R incomplete and rolls a completed
// region back. Under strand O's words other than the meta word are ordered
// after nothing of H (SPA orders same-word stores only), so the image
// exists without the fence; with it H's invalidations are durable before
// O can reuse the slots, and slot 1 is never R's again.
namespace {

bool helper_prune_image_exists(bool fence) {
  ferrite::test::SimRange r("strand");
  constexpr std::uint64_t kR = 0x5200;  // words of R's entries: kR + 8 * slot + word
  constexpr std::uint64_t kQ = 0x5100;  // words of O's next lap
  constexpr std::size_t kHead = 8;      // the head's line
  auto word = [&](std::size_t slot, int w) { return reinterpret_cast<std::uint64_t*>(r.line(slot)) + w; };
  std::thread owner_r([&] {
    for (std::size_t slot = 0; slot < 3; ++slot)
      for (int w = 0; w < 8; ++w) ferrite::persist::store(word(slot, w), kR + 8 * slot + static_cast<std::uint64_t>(w));
    ferrite::persist::join_strand();  // R complete and durable
  });
  owner_r.join();
  std::thread helper([&] {
    ferrite::persist::store(word(0, 0), std::uint64_t{0});
    ferrite::persist::store(word(1, 0), std::uint64_t{0});
    ferrite::persist::persist_barrier();  // ORDER: the end entry after the others (P3)
    ferrite::persist::store(word(2, 0), std::uint64_t{0});
    ferrite::persist::persist_barrier();
    ferrite::persist::store(reinterpret_cast<std::uint64_t*>(r.line(kHead)), std::uint64_t{3});
    if (fence) ferrite::persist::join_strand();  // Logger::prune_durable
    else ferrite::persist::persist_barrier();   // internal::kNoHelperPruneDurable
  });
  helper.join();
  std::thread owner_next([&] {
    for (std::size_t slot = 1; slot < 3; ++slot) {
      for (int w = 0; w < 8; ++w) ferrite::persist::store(word(slot, w), kQ + 8 * slot + static_cast<std::uint64_t>(w));
      ferrite::persist::persist_barrier();  // the entry before its update (Fig. 5)
      ferrite::persist::new_strand();
    }
  });
  owner_next.join();
  const auto cs = cr::sim::capture();
  const auto set = cr::images_for(cs, 2000, 11);
  for (const auto& img : set.images) {
    bool store_entry_live = true, end_entry_intact = true;
    for (int w = 0; w < 8; ++w) {
      store_entry_live = store_entry_live && r.in_image(cs, img, 1, w) == kR + 8 + static_cast<std::uint64_t>(w);
      end_entry_intact = end_entry_intact && r.in_image(cs, img, 2, w) == kR + 16 + static_cast<std::uint64_t>(w);
    }
    if (store_entry_live && !end_entry_intact) return true;
  }
  return false;
}

}  // namespace

TEST(TableTwoCrashTinyLog, UnderStrandTheHelpersPruneFenceExcludesAnImageThatUndoesACompletedRegion) {
  EXPECT_FALSE(helper_prune_image_exists(true)) << "with the fence";
  EXPECT_TRUE(helper_prune_image_exists(false)) << "without the fence the image exists";
}

}  // namespace helper_prune_crash_test
