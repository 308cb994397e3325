// Crash campaigns on the reference structure (adapters/plog.h via
// tools/subjects/reference_log.cc): the correct variant survives every crash
// point and image; each broken variant is caught and its replay reproduces
// the violation.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "common/sanitizer.h"
#include "common/scale.h"
#include "ferrite/crash/campaign.h"
#include "ferrite/crash/model.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"

namespace campaign_test {  // this file's names, apart in a unity build

namespace fc = ferrite::crash;

namespace {

using ferrite::test::scaled;

const fc::SubjectInfo& subject(const std::string& variant) {
  const auto* s = fc::find_subject("reference-log", variant);
  if (s == nullptr) throw std::runtime_error("reference-log/" + variant + " not registered");
  return *s;
}

std::string describe(const fc::CampaignResult& r) {
  std::string s = r.error;
  for (const auto& v : r.details)
    s += "\n  k=" + std::to_string(v.k) + " image " + std::to_string(v.image) + " " + v.property + " [" + v.engine +
         "] " + v.reason + " (" + v.image_how + ")\n  " + v.replay;
  return s;
}

class EveryModel : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryModel, ReferenceLogSurvivesEveryCrashPointOfASingleThreadRun) {
  fc::CampaignConfig cfg;
  cfg.ops = scaled(200, 10);
  cfg.images = 4;
  cfg.seed = 7;
  cfg.model = GetParam();
  auto r = fc::run_campaign(subject("correct"), cfg);
  EXPECT_EQ(r.model, GetParam());
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.violations, 0u) << describe(r);
  // Every verb is a crash point, plus the end of the run. An append issues
  // pwb, pfence, pwb, psync (the record may straddle two lines: 5 verbs).
  EXPECT_GE(r.verbs, 4 * cfg.ops);
  EXPECT_EQ(r.crash_points, r.verbs + 1);
  EXPECT_GT(r.images_checked, r.crash_points) << "random images must add distinct states";
  // Where the model's images are few they are all enumerated (more than
  // images + 2), elsewhere all-lost, all-persisted and `images` random ones.
  EXPECT_GE(r.images_built, r.crash_points * 2);
  EXPECT_GT(r.points_exhaustive, 0u);
  EXPECT_GT(r.possible_images, 0.0);
  EXPECT_GT(r.coverage, 0.0);
  EXPECT_LE(r.coverage, 1.0);
  EXPECT_EQ(r.engines.count("exact"), 1u);
  EXPECT_EQ(r.inconclusive, 0u);
}

INSTANTIATE_TEST_SUITE_P(Campaign, EveryModel, ::testing::ValuesIn(fc::writeback_model_names()));

// Every registered model is a write-back model (pwbs persist: the code of
// every structure but the logging library, checked under them) or a store
// model (annotated stores persist). The reference log persists with pwbs:
// under a store model its pwbs do nothing and a campaign catches it, which
// is why pwb-based subjects claim the write-back models only.
TEST(Campaign, PwbCodeIsCheckedUnderTheWriteBackModelsOnly) {
  auto wb = fc::writeback_model_names(), st = fc::store_model_names();
  std::vector<std::string> both = wb;
  both.insert(both.end(), st.begin(), st.end());
  std::sort(both.begin(), both.end());
  EXPECT_EQ(both, fc::model_names());
  fc::CampaignConfig cfg;
  cfg.ops = scaled(20, 5);
  cfg.images = 2;
  cfg.seed = 7;
  cfg.model = "hops";
  cfg.stop_after_violations = 1;
  auto r = fc::run_campaign(subject("correct"), cfg);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_GE(r.violations, 1u) << "pwbs made the reference log durable under hops";
}

class BrokenVariant : public ::testing::TestWithParam<const char*> {};

TEST_P(BrokenVariant, IsCaughtAndItsReplayReproducesTheViolation) {
  const auto& s = subject(GetParam());
  EXPECT_TRUE(s.expect_violation);
  fc::CampaignConfig cfg;
  cfg.ops = scaled(60, 10);
  cfg.images = 4;
  cfg.seed = 3;
  for (const auto& model : fc::writeback_model_names()) {
    fc::CampaignConfig m = cfg;
    m.model = model;
    auto rm = fc::run_campaign(s, m);
    ASSERT_TRUE(rm.error.empty()) << rm.error;
    EXPECT_GE(rm.violations, 1u) << GetParam() << " is not caught under the " << model << " model";
  }
  auto r = fc::run_campaign(s, cfg);
  ASSERT_TRUE(r.error.empty()) << r.error;
  ASSERT_GE(r.violations, 1u);
  ASSERT_FALSE(r.details.empty());
  const auto& v = r.details.front();
  EXPECT_NE(v.replay.find("--replay " + std::to_string(v.k) + ":" + std::to_string(v.image)), std::string::npos)
      << v.replay;
  fc::CampaignConfig again = cfg;
  again.replay = fc::CampaignConfig::Replay{v.k, v.image};
  auto rr = fc::run_campaign(s, again);
  EXPECT_TRUE(rr.replay_reached);
  EXPECT_EQ(rr.crash_points, 1u);
  EXPECT_EQ(rr.images_checked, 1u);
  ASSERT_EQ(rr.violations, 1u) << "replay of " << v.replay << " did not reproduce";
  EXPECT_EQ(rr.details.front().reason, v.reason);
  // The correct variant at the same crash point and image is fine.
  auto ok = fc::run_campaign(subject("correct"), again);
  EXPECT_EQ(ok.violations, 0u) << describe(ok);
}

INSTANTIATE_TEST_SUITE_P(ReferenceLog, BrokenVariant, ::testing::Values("no-pfence", "no-psync", "no-record-pwb"));

TEST(Campaign, MultiThreadedCampaignOnTheCorrectVariant) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  fc::CampaignConfig cfg;
  cfg.threads = 3;
  cfg.ops = scaled(1200, 40);
  cfg.images = 10;
  cfg.crash_points = scaled(400, 10);
  cfg.seed = 11;
  auto r = fc::run_campaign(subject("correct"), cfg);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.violations, 0u) << describe(r);
  EXPECT_GE(r.crash_points, cfg.crash_points / 2);
  EXPECT_GE(r.images_checked, scaled<std::uint64_t>(1000, 20));
}

TEST(Campaign, MultiThreadedCampaignCatchesABrokenVariant) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  fc::CampaignConfig cfg;
  cfg.threads = 2;
  cfg.ops = scaled(200, 20);
  cfg.images = 4;
  cfg.crash_points = scaled(100, 10);
  cfg.seed = 5;
  auto r = fc::run_campaign(subject("no-psync"), cfg);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_GE(r.violations, 1u);
}

TEST(Campaign, BadConfigurationIsRejected) {
  fc::CampaignConfig cfg;
  cfg.threads = 0;
  EXPECT_THROW(fc::run_campaign(subject("correct"), cfg), std::invalid_argument);
  cfg.threads = 1;
  cfg.replay = fc::CampaignConfig::Replay{0, -1};
  EXPECT_THROW(fc::run_campaign(subject("correct"), cfg), std::invalid_argument);
  cfg.replay.reset();
  cfg.model = "sparc";
  EXPECT_THROW(fc::run_campaign(subject("correct"), cfg), std::invalid_argument);
  cfg.model = "x86";
  cfg.recovery_crash_depth = 3;
  EXPECT_THROW(fc::run_campaign(subject("correct"), cfg), std::invalid_argument);
  cfg.recovery_crash_depth = 0;
  cfg.post_crash_every = 1;
  cfg.post_crash_points = 0;
  EXPECT_THROW(fc::run_campaign(subject("correct"), cfg), std::invalid_argument);
  cfg.post_crash_points = 3;
  cfg.post_ops = 0;
  EXPECT_THROW(fc::run_campaign(subject("correct"), cfg), std::invalid_argument);
  cfg.post_ops = 8;
  cfg.post_crash_images = -1;
  EXPECT_THROW(fc::run_campaign(subject("correct"), cfg), std::invalid_argument);
  cfg.post_crash_every = 0;
  cfg.post_crash_images = 1;
  cfg.pool_dir = "/nonexistent-dir-for-ferrite";
  auto r = fc::run_campaign(subject("correct"), cfg);
  EXPECT_FALSE(r.error.empty());
  EXPECT_FALSE(r.ok());
}


// Controlled scheduling. A log whose append reads the count, writes the
// record and then the count without synchronisation loses appends when two
// threads interleave between its verbs. Its threads never wait for each
// other, so a scheduled run executes one thread at a time between
// scheduling points and the recorded schedule pins the interleaving down:
// the replay line reproduces the violation exactly, every time — also on a
// machine whose cores are all busy (the scheduler waits for a thread the OS
// keeps off the CPU instead of running ahead without it).
struct RacyRoot {
  static constexpr std::uint32_t kTypeTag = 0x7e57a010;
  static constexpr std::uint32_t kTypeVersion = 1;
  std::atomic<std::uint64_t> count{0};
  std::atomic<std::int64_t> items[1024] = {};
};

class RacyLog final : public fc::Subject {
 public:
  fc::Spec spec() const override { return fc::Spec::kLog; }
  bool detectable() const override { return false; }
  void create(ferrite::pmem::Pool& pool, int) override { r_ = pool.create_root<RacyRoot>("t"); }
  fc::Response apply(int, std::uint64_t, const fc::Op& o) override {
    const auto i = r_->count.load(std::memory_order_relaxed);  // the race: no lock, no CAS
    r_->items[i].store(o.arg, std::memory_order_relaxed);
    ferrite::persist::pwb(&r_->items[i]);
    ferrite::persist::pfence();
    r_->count.store(i + 1, std::memory_order_relaxed);
    ferrite::persist::pwb(&r_->count);
    ferrite::persist::psync();
    return fc::Response::of(static_cast<std::int64_t>(i));
  }
  void recover(ferrite::pmem::Pool& pool, int) override { r_ = pool.root<RacyRoot>("t"); }
  fc::Response recover_op(int, std::uint64_t, const fc::Op&) override { throw std::logic_error("not detectable"); }
  std::vector<std::int64_t> observe() override {
    std::vector<std::int64_t> out;
    for (std::uint64_t i = 0; i < r_->count.load() && i < 1024; ++i) out.push_back(r_->items[i].load());
    return out;
  }
  fc::Op next_op(int tid, std::uint64_t&) override {
    return {fc::kAppend, static_cast<std::int64_t>((static_cast<std::uint64_t>(tid) + 1) << 32 | ++n_[tid]), 0};
  }

 private:
  RacyRoot* r_ = nullptr;
  std::uint64_t n_[64] = {};
};

TEST(Campaign, AScheduledRunsViolationReplaysExactlyFromItsReplayLine) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  fc::SubjectInfo info;
  info.structure = "racy-log";
  info.variant = "broken";
  info.expect_violation = true;
  info.description = "append without synchronisation";
  info.make = [] { return std::unique_ptr<fc::Subject>(new RacyLog); };
  fc::CampaignConfig cfg;
  cfg.threads = 3;
  cfg.ops = 300;
  cfg.crash_points = 200;
  cfg.images = 2;
  cfg.schedule = fc::CampaignConfig::Schedule::kPct;
  cfg.pct_depth = 8;
  cfg.stop_after_violations = 1;
  fc::CampaignResult r;
  for (cfg.seed = 1; cfg.seed <= 8 && r.violations == 0; ++cfg.seed) r = fc::run_campaign(info, cfg);
  --cfg.seed;
  ASSERT_TRUE(r.error.empty()) << r.error;
  ASSERT_GE(r.violations, 1u) << "three unsynchronised appenders never collided in 8 scheduled runs";
  EXPECT_EQ(r.schedule, "pct");
  const auto& v = r.details.front();
  ASSERT_FALSE(v.verb_order.empty());
  EXPECT_NE(v.replay.find("--verb-order " + v.verb_order), std::string::npos) << v.replay;
  // One seed, one run: the same schedule and the same first violation.
  {
    auto r2 = fc::run_campaign(info, cfg);
    ASSERT_TRUE(r2.error.empty()) << r2.error;
    EXPECT_EQ(r2.verbs, r.verbs);
    EXPECT_EQ(r2.schedule_stalls, 0u);
    ASSERT_GE(r2.violations, 1u);
    EXPECT_EQ(r2.details.front().verb_order, v.verb_order);
  }
  fc::CampaignConfig again = cfg;
  again.verb_order = v.verb_order;
  again.replay = fc::CampaignConfig::Replay{v.k, v.image};
  // Load: one busy process per core (and one more) competes with the
  // campaign's threads for the whole replay.
  std::vector<pid_t> hogs;
  for (int i = 0; i < 3; ++i) {
    const pid_t p = ::fork();
    ASSERT_GE(p, 0);
    if (p == 0) {
      for (std::atomic<std::uint64_t> x{0};;) x.fetch_add(1, std::memory_order_relaxed);
    }
    hogs.push_back(p);
  }
  int reproduced = 0;
  for (int i = 0; i < 3; ++i) {
    auto rr = fc::run_campaign(info, again);
    EXPECT_TRUE(rr.error.empty()) << rr.error;
    EXPECT_EQ(rr.schedule, "replay");
    EXPECT_FALSE(rr.schedule_diverged);
    EXPECT_EQ(rr.schedule_stalls, 0u);
    if (rr.violations == 1 && rr.details.front().reason == v.reason) ++reproduced;
  }
  for (pid_t p : hogs) {
    ::kill(p, SIGKILL);
    ::waitpid(p, nullptr, 0);
  }
  EXPECT_EQ(reproduced, 3) << v.replay;
  // A malformed or foreign schedule is a usage error.
  again.verb_order = "a3x";
  EXPECT_THROW(fc::run_campaign(info, again), std::invalid_argument);
  again.verb_order = "d4";  // thread 3 of 3
  EXPECT_THROW(fc::run_campaign(info, again), std::invalid_argument);
}


}  // namespace

}  // namespace campaign_test
