// Mutation testing (`crashtest --mutate`, crash/mutate.h): the tool tells a
// necessary write-back from a redundant one, and the persistence call sites
// of the reference structure stay caught (a CI guard: a site that was caught
// and is no longer caught means a campaign lost strength, or an instruction
// stopped mattering).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/sanitizer.h"
#include "ferrite/crash/mutate.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"

namespace mutate_crash_test {  // this file's names, apart in a unity build

namespace fc = ferrite::crash;
namespace ps = ferrite::persist;

namespace {

struct TinyRoot {
  static constexpr std::uint32_t kTypeTag = 0x7e57a0b1;
  static constexpr std::uint32_t kTypeVersion = 1;
  std::atomic<std::uint64_t> count{0};
  alignas(64) std::atomic<std::uint64_t> appends{0};  // statistics: written, never read by recovery
  alignas(64) std::atomic<std::int64_t> items[256] = {};
};

// An append log with one write-back too many: the record's write-back is
// necessary (without it a crash after the count's psync loses the record);
// the statistics counter's is redundant — recovery never reads it. (Two
// write-backs of the same line would each be redundant given the other:
// mutation testing suppresses one site at a time.)
int g_necessary_line = 0, g_redundant_line = 0;
class TinyLog final : public fc::Subject {
 public:
  fc::Spec spec() const override { return fc::Spec::kLog; }
  bool detectable() const override { return false; }
  void create(ferrite::pmem::Pool& pool, int) override { r_ = pool.create_root<TinyRoot>("tiny"); }
  fc::Response apply(int, std::uint64_t, const fc::Op& o) override {
    const auto i = r_->count.load(std::memory_order_relaxed);
    if (i >= 256) throw std::logic_error("tiny log full");
    r_->items[i].store(o.arg, std::memory_order_relaxed);
    g_necessary_line = __LINE__, ps::pwb(&r_->items[i]);
    r_->appends.fetch_add(1, std::memory_order_relaxed);
    g_redundant_line = __LINE__, ps::pwb(&r_->appends);
    ps::pfence();
    r_->count.store(i + 1, std::memory_order_relaxed);
    ps::pwb(&r_->count);
    ps::psync();
    return fc::Response::of(static_cast<std::int64_t>(i));
  }
  void recover(ferrite::pmem::Pool& pool, int) override { r_ = pool.root<TinyRoot>("tiny"); }
  fc::Response recover_op(int, std::uint64_t, const fc::Op&) override { throw std::logic_error("not detectable"); }
  std::vector<std::int64_t> observe() override {
    std::vector<std::int64_t> out;
    for (std::uint64_t i = 0; i < r_->count.load() && i < 256; ++i) out.push_back(r_->items[i].load());
    return out;
  }
  fc::Op next_op(int, std::uint64_t&) override { return {fc::kAppend, ++n_, 0}; }

 private:
  TinyRoot* r_ = nullptr;
  std::int64_t n_ = 0;
};

const fc::SiteVerdict* at_line(const fc::MutationResult& m, int line) {
  for (const auto& v : m.sites)
    if (v.site.file.ends_with("mutate_crash_test.cc") && v.site.line == static_cast<std::uint32_t>(line)) return &v;
  return nullptr;
}

std::string describe(const fc::MutationResult& m) {
  std::string s = m.error;
  for (const auto& v : m.sites) s += "\n  " + v.site.id() + " " + v.how + " " + v.reason;
  return s;
}

TEST(Mutate, TellsANecessaryWriteBackFromARedundantOne) {
  fc::SubjectInfo info;
  info.structure = "tiny-log";
  info.variant = "correct";
  info.description = "append log with a duplicated record write-back";
  info.make = [] { return std::unique_ptr<fc::Subject>(new TinyLog); };
  fc::CampaignConfig cfg;
  cfg.ops = 20;
  cfg.images = 4;
  const auto m = fc::run_mutation(info, cfg);
  ASSERT_TRUE(m.error.empty()) << m.error;
  EXPECT_EQ(m.baseline.violations, 0u);
  const auto* necessary = at_line(m, g_necessary_line);
  const auto* redundant = at_line(m, g_redundant_line);
  ASSERT_NE(necessary, nullptr) << describe(m);
  ASSERT_NE(redundant, nullptr) << describe(m);
  EXPECT_EQ(necessary->site.verb, ps::Verb::kPwb);
  EXPECT_EQ(necessary->site.hits[static_cast<int>(fc::sites::Phase::kRun)], 20u);
  EXPECT_TRUE(necessary->caught) << describe(m);
  EXPECT_EQ(necessary->how, "violation");
  EXPECT_NE(necessary->replay.find("--mutate-site " + necessary->site.id()), std::string::npos) << necessary->replay;
  EXPECT_FALSE(redundant->caught) << describe(m);
  EXPECT_EQ(redundant->how, "not caught");
  EXPECT_GT(redundant->suppressed, 0u);  // it was reached and suppressed, and nothing noticed
  // The count's write-back, the pfence and the psync are necessary too.
  std::size_t caught_in_test = 0;
  for (const auto& v : m.sites)
    if (v.site.file.ends_with("mutate_crash_test.cc")) caught_in_test += v.caught ? 1 : 0;
  EXPECT_EQ(caught_in_test, 4u) << describe(m);
  // The replay line of the necessary site reproduces its violation.
  fc::CampaignConfig again = cfg;
  again.mutate_sites = {necessary->site.id()};
  again.stop_after_violations = 1;
  const auto r = fc::run_campaign(info, again);
  EXPECT_GE(r.violations, 1u);
  again.mutate_sites = {redundant->site.id()};
  EXPECT_EQ(fc::run_campaign(info, again).violations, 0u);
  fc::sites::set_suppressed({});
}

TEST(Mutate, MalformedSitesAreUsageErrors) {
  const auto* s = fc::find_subject("reference-log", "correct");
  ASSERT_NE(s, nullptr);
  fc::CampaignConfig cfg;
  cfg.ops = 2;
  for (const char* bad : {"plog.h", "plog.h:x", "plog.h:12:clflush", ":12", "plog.h:1:2:pwb:3"}) {
    cfg.mutate_sites = {bad};
    EXPECT_THROW(fc::run_campaign(*s, cfg), std::invalid_argument) << bad;
  }
  fc::sites::set_suppressed({});
}

// The CI guard, with the campaign of the scores in docs/crash.md §6: three
// threads on an instance sized for 16 (response and tag words on lines of
// their own), crashes during create on a used (dirty) heap, every crash
// point, four seeds per site. Every call site a combining structure reaches
// is caught — its own and the pool's — but the heap's invariant-1 psync
// (Heap::Impl::take_chunks), which no structure needs and
// tests/pmem/heap_crash_test.cc catches.
fc::MutationResult standard_mutation(const char* structure) {
  const auto* s = fc::find_subject(structure, "correct");
  if (s == nullptr) throw std::logic_error(std::string("no subject ") + structure);
  fc::CampaignConfig cfg;
  cfg.threads = 3;
  cfg.instance_threads = 16;
  cfg.ops = 40;
  cfg.crash_points = 2000;
  cfg.images = 2;
  cfg.crash_create = true;
  cfg.dirty_heap = true;
  // 16 instance threads' heap arenas need more than the default 1 MiB
  // ("heap full"); 2 MiB holds them, and every restart compares the pool
  // page by page (docs/crash.md, "Where a CI run's time goes"): 4 MiB made
  // the PWF stack's mutation 42.5 s instead of 31.5 s.
  cfg.pool_size = std::size_t{2} << 20;
  return fc::run_mutation(*s, cfg, {}, /*seeds=*/4);
}

void expect_all_caught_but_invariant_1(const fc::MutationResult& m, std::size_t min_sites,
                                       std::size_t min_combining) {
  ASSERT_TRUE(m.error.empty()) << m.error;
  std::size_t combining = 0;
  for (const auto& v : m.sites) {
    combining += v.site.file.find("combining/") != std::string::npos ? 1 : 0;
    if (v.site.function.find("take_chunks") != std::string::npos && v.site.verb == ps::Verb::kPsync) {
      EXPECT_FALSE(v.caught) << v.site.id() << ": now caught — update docs/crash.md §6 and this test";
      continue;
    }
    EXPECT_TRUE(v.caught) << v.site.id() << " (" << v.site.function << ") is no longer caught" << describe(m);
  }
  EXPECT_GE(combining, min_combining) << describe(m);
  EXPECT_GE(m.sites.size(), min_sites) << describe(m);
}

TEST(Mutate, EveryCombiningSiteOfPBQueueIsCaught) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  // format pwb, node pwb, the stamped round's pfence, pwb and psync.
  expect_all_caught_but_invariant_1(standard_mutation("pb-queue"), 11, 5);
}

TEST(Mutate, EveryCombiningSiteOfPWFStackIsCaught) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  expect_all_caught_but_invariant_1(standard_mutation("pwf-stack"), 14, 6);
}

// RedoOpt's wait-free (announced, CAS-elected) combiners, the redoopt-* of
// record: the standard campaign restricted to redoopt.h's own sites (the
// pool's and heap's are the guards above). Every one is caught: creation's
// pwb of replica 0's header, C5's pwb of the replica's lines and its
// pfence, C7's pwb of curComb and its psync (docs/crash.md §6,
// "Competitors").
TEST(Mutate, EveryRedoOptSiteOfTheWaitFreeElectionIsCaught) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  const auto* s = fc::find_subject("redoopt-stack", "correct");
  ASSERT_NE(s, nullptr);
  fc::CampaignConfig cfg;
  cfg.threads = 3;
  cfg.instance_threads = 16;
  cfg.ops = 40;
  cfg.crash_points = 2000;
  cfg.images = 2;
  cfg.crash_create = true;
  cfg.dirty_heap = true;
  cfg.pool_size = std::size_t{4} << 20;  // RedoOpt's replicas: at 2 MiB the heap is full
  // One seed (the campaigns are deterministic): its runs catch all five
  // (the standard campaign's four seeds: 39 s instead of ~15 s).
  const auto m = fc::run_mutation(*s, cfg, {}, /*seeds=*/1, [](const ferrite::crash::sites::Site& site) {
    return site.file.find("baselines/redoopt.h") != std::string::npos;
  });
  ASSERT_TRUE(m.error.empty()) << m.error;
  for (const auto& v : m.sites)
    EXPECT_TRUE(v.caught) << v.site.id() << " (" << v.site.function << ") is no longer caught" << describe(m);
  EXPECT_EQ(m.sites.size(), 5u) << describe(m);
}

// One thread, no ASan restriction: PBstack's run-phase and creation sites.
TEST(Mutate, PBStacksSitesAreCaughtWithOneThread) {
  const auto* s = fc::find_subject("pb-stack", "correct");
  ASSERT_NE(s, nullptr);
  fc::CampaignConfig cfg;
  cfg.ops = 40;
  cfg.images = 2;
  cfg.crash_create = true;
  cfg.dirty_heap = true;
  const auto m = fc::run_mutation(*s, cfg);
  ASSERT_TRUE(m.error.empty()) << m.error;
  std::size_t combining = 0;
  for (const auto& v : m.sites) {
    if (v.site.file.find("combining/") == std::string::npos) continue;
    ++combining;
    EXPECT_TRUE(v.caught) << v.site.id() << " (" << v.site.function << ") is no longer caught" << describe(m);
  }
  // format pwb, node pwb, the stamped round's pfence, pwb and psync.
  EXPECT_GE(combining, 5u) << describe(m);
}

// The detectable OpLog under the simulator (adapters/oplog_subject.cc): a
// subject that begins every operation in an OpLog and recovers what the
// log says, as an application does. Its campaigns pass, and begin()'s
// write-backs and fence are each needed: suppressing one pairs a seq with
// another operation's arguments, or loses the record.
TEST(Mutate, OpLogBeginIsNeededAndTested) {
  const auto* s = fc::find_subject("oplog-pb-queue", "correct");
  ASSERT_NE(s, nullptr);
  fc::CampaignConfig cfg;
  cfg.ops = 40;
  cfg.images = 2;
  const auto m = fc::run_mutation(*s, cfg);
  ASSERT_TRUE(m.error.empty()) << m.error;
  std::size_t oplog_sites = 0, oplog_caught = 0;
  for (const auto& v : m.sites) {
    if (!v.site.file.ends_with("ferrite/detectable.h")) continue;
    ++oplog_sites;
    if (v.site.verb != ps::Verb::kPsync) {
      EXPECT_TRUE(v.caught) << v.site.id() << describe(m);
    }
    oplog_caught += v.caught ? 1 : 0;
  }
  EXPECT_EQ(oplog_sites, 4u) << describe(m);  // pwb, pfence, pwb, psync
  EXPECT_GE(oplog_caught, 3u) << describe(m);
}

// begin()'s final psync is needed only when another thread can make this
// thread's operation durable first (a combiner): three threads catch its
// suppression where one thread cannot.
TEST(Mutate, OpLogBeginsPsyncIsCaughtWithSeveralThreads) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  const auto* s = fc::find_subject("oplog-pb-queue", "correct");
  ASSERT_NE(s, nullptr);
  fc::CampaignConfig cfg;
  cfg.threads = 3;
  cfg.ops = 300;
  cfg.images = 2;
  cfg.crash_points = 150;
  cfg.stop_after_violations = 1;
  fc::CampaignResult clean = fc::run_campaign(*s, cfg);
  ASSERT_TRUE(clean.error.empty()) << clean.error;
  EXPECT_EQ(clean.violations, 0u);
  EXPECT_EQ(clean.inconclusive, 0u);
  cfg.mutate_sites = {"ferrite/detectable.h:171:psync"};  // OpLog::begin's psync
  std::uint64_t caught = 0;
  for (cfg.seed = 1; cfg.seed <= 4; ++cfg.seed) caught += fc::run_campaign(*s, cfg).violations > 0 ? 1 : 0;
  EXPECT_GE(caught, 3u) << "OpLog::begin's psync suppressed: caught in " << caught << " of 4 seeds";
  EXPECT_GT(fc::sites::suppressed_count(), 0u) << "line 141 of detectable.h is no longer begin()'s psync";
  fc::sites::set_suppressed({});
}

}  // namespace

}  // namespace mutate_crash_test
