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

namespace cr = ferrite::crash;
namespace fl = ferrite::logging;
namespace fa = ferrite::adapters;
using ferrite::test::describe;
using ferrite::test::scaled;
using ferrite::test::logging::expect_clean;
using ferrite::test::logging::ull;

namespace ferrite::logging {

class LoggedFill {
 public:
  static constexpr std::uint64_t kWords = 8;
  static constexpr std::size_t kCapacity = 8;
  // begin + kFit stores + end: the last store entry needs two free slots.
  static constexpr std::uint64_t kFit = kCapacity - 2;
  static constexpr std::int64_t kAborted = -1;
  struct Root {
    static constexpr std::uint32_t kTypeTag = 0x4C47'464C;  // "LGFL"
    static constexpr std::uint32_t kTypeVersion = 1;
    static constexpr const char* kTypeName = "logging::LoggedFill (test)";
    LogArea log{};
    alignas(64) std::int64_t words[kWords] = {};
  };

  LoggedFill(pmem::Pool& pool, std::string_view name, int threads, const LoggerOptions& opt)
      : root_(pool.has_root(name) ? pool.root<Root>(name) : pool.create_root<Root>(name)),
        log_(pool, &root_->log, threads, opt) {}

  // One region: words[(start + j) % kWords] = v + j for j < len. Returns
  // the old words[start], or kAborted when the region met the full log
  // (rolled back in the run, its lock released: LogFull).
  std::int64_t fill(int tid, std::uint64_t start, std::uint64_t len, std::int64_t v) {
    try {
      Region r(log_, tid, lock_);
      const std::int64_t old = root_->words[start % kWords];
      for (std::uint64_t j = 0; j < len; ++j)
        log_.write(tid, &root_->words[(start + j) % kWords], v + static_cast<std::int64_t>(j));
      r.end();
      return old;
    } catch (const LogFull&) {
      aborted_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
      return kAborted;
    }
  }
  std::vector<std::int64_t> snapshot() {
    lock_.lock_for_read();
    std::vector<std::int64_t> out(root_->words, root_->words + kWords);
    lock_.unlock_for_read();
    return out;
  }
  Logger& logger() { return log_; }
  std::uint64_t aborted() const { return aborted_.load(std::memory_order_relaxed); }

  static void recover_root(pmem::Pool&, Root* r, const std::function<void(void*)>& mark) {
    recover_area(&r->log);
    mark_area(&r->log, mark);
  }

 private:
  Root* root_;
  Logger log_;
  Lock lock_;
  std::atomic<std::uint64_t> aborted_{0};
};

inline const bool kLoggedFillRootRegistered = pmem::register_root_type<LoggedFill::Root>(&LoggedFill::recover_root);

}  // namespace ferrite::logging

namespace ferrite::adapters::logging {

inline constexpr std::int32_t kFill = 120;

template <>
struct Workload<fl::LoggedFill> {
  static constexpr op::Abstract kAbstract = op::Abstract::kMap;  // unused: region spec
  static constexpr const char* kName = "fill";
  static auto make(pmem::Pool& p, const Setup& s, const fl::LoggerOptions& o) {
    return std::make_unique<fl::LoggedFill>(p, s.name, s.threads, o);
  }
  // arg: start * 64 + len; arg2: the first value.
  static op::Response apply(fl::LoggedFill& f, int tid, const op::Op& o) {
    switch (o.kind) {
      case kFill: {
        const auto a = static_cast<std::uint64_t>(o.arg);
        return op::Response::of(f.fill(tid, a / 64, a % 64, o.arg2));
      }
      case op::kSync: return op::Response::ack();
      default: unsupported("logging fill", o);
    }
  }
  static State observe(fl::LoggedFill& f) { return f.snapshot(); }
  // Half fills that fit (1..kFit words), half that overflow the log
  // (kFit + 1 .. kFit + 3 words); unique values, 16 apart.
  static op::Op next_op(int tid, std::uint64_t& rng, adapters::Workload& w) {
    const std::uint64_t r = adapters::Workload::step(rng);
    const std::uint64_t start = (r >> 8) % fl::LoggedFill::kWords;
    const std::uint64_t len = r % 2 == 0 ? 1 + (r >> 16) % fl::LoggedFill::kFit : fl::LoggedFill::kFit + 1 + (r >> 16) % 3;
    return {kFill, static_cast<std::int64_t>(start * 64 + len), 16 * w.unique(tid)};
  }
  static crash::RegionSpec region_spec() {
    crash::RegionSpec s;
    s.name = "fill";
    s.apply = [](State& st, const op::Op& o) {
      if (st.size() != fl::LoggedFill::kWords) throw std::invalid_argument("fill: malformed state");
      if (o.kind != kFill) throw std::invalid_argument("fill: not a fill");
      const auto a = static_cast<std::uint64_t>(o.arg);
      const std::uint64_t start = a / 64, len = a % 64;
      if (len > fl::LoggedFill::kFit) return op::Response::of(fl::LoggedFill::kAborted);
      const std::int64_t old = st[start % fl::LoggedFill::kWords];
      for (std::uint64_t j = 0; j < len; ++j)
        st[(start + j) % fl::LoggedFill::kWords] = o.arg2 + static_cast<std::int64_t>(j);
      return op::Response::of(old);
    };
    s.format = [](const op::Op& o) {
      const auto a = static_cast<std::uint64_t>(o.arg);
      return "fill(" + std::to_string(a / 64) + ", " + std::to_string(a % 64) + " words, " + std::to_string(o.arg2) +
             ")";
    };
    return s;
  }
};

}  // namespace ferrite::adapters::logging

namespace logfull_crash_test {  // this file's names, apart in a unity build

namespace {

// The adapter traits, on LoggedFill's small log, counting the fills the
// run rolled back (the campaign runs the workload in this process).
template <fl::Language L, fl::Instrumentation I, unsigned F = fl::internal::kNoFaults>
struct Fill : fa::logging::Logged<fl::LoggedFill, L, I, F> {
  using Base = fa::logging::Logged<fl::LoggedFill, L, I, F>;
  using Handle = typename Base::Handle;
  static fl::LoggerOptions options(const fa::Setup& s) {
    auto o = Base::options(s);
    o.capacity = fl::LoggedFill::kCapacity;
    return o;
  }
  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) { return Base::T::make(*pool, s, options(s)); }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) { return create(&pool, s); }
  static inline std::atomic<std::uint64_t> aborted{0};  // the most in one run
  static ferrite::op::Response apply(Handle& h, int tid, std::uint64_t seq, const ferrite::op::Op& o) {
    auto r = Base::apply(h, tid, seq, o);
    const std::uint64_t n = h->aborted();
    for (std::uint64_t m = aborted.load(); m < n && !aborted.compare_exchange_weak(m, n);) {
    }
    return r;
  }
};

template <class A>
cr::SubjectInfo fill_subject(const std::string& name, const char* variant, bool broken) {
  cr::SubjectInfo info;
  info.structure = name;
  info.variant = variant;
  info.expect_violation = broken;
  info.make = [] { return std::unique_ptr<cr::Subject>(new fa::internal::Subject<A>()); };
  return info;
}

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
