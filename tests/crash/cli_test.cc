// `ferrite crashtest` end to end: listing, exit codes, JSON, replay lines.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "common/process.h"
#include "ferrite/crash/campaign.h"

namespace cli_test {  // this file's names, apart in a unity build

namespace {

// `ferrite crashtest args`, stdout only.
ferrite::test::CliResult run(const std::string& args) { return ferrite::test::run_cli("crashtest " + args, false); }

TEST(CrashtestCli, ListsStructuresAndMarksBrokenVariants) {
  auto r = run("--list --json");
  ASSERT_EQ(r.code, 0);
  auto j = nlohmann::json::parse(r.output);
  bool correct = false, broken = false;
  for (const auto& s : j) {
    if (s["structure"] == "reference-log" && s["variant"] == "correct") correct = !s["expect_violation"].get<bool>();
    if (s["structure"] == "reference-log" && s["variant"] == "no-psync") broken = s["expect_violation"].get<bool>();
  }
  EXPECT_TRUE(correct);
  EXPECT_TRUE(broken);
}

TEST(CrashtestCli, ExitCodesAndJson) {
  auto ok = run("--structure reference-log --ops 12 --images 2 --json");
  ASSERT_EQ(ok.code, 0) << ok.output;
  auto j = nlohmann::json::parse(ok.output);
  EXPECT_EQ(j["violations"], 0);
  EXPECT_GT(j["crash_points"].get<int>(), 12);
  EXPECT_GT(j["images"].get<int>(), 0);
  EXPECT_TRUE(j.contains("images_per_second"));
  EXPECT_TRUE(j.contains("checker"));

  auto bad = run("--structure reference-log --variant no-psync --ops 12 --images 2 --json");
  ASSERT_EQ(bad.code, 1) << bad.output;
  auto b = nlohmann::json::parse(bad.output);
  ASSERT_GE(b["violations"].get<int>(), 1);
  const std::string replay = b["violation_details"][0]["replay"];
  EXPECT_EQ(replay.rfind("ferrite crashtest --structure reference-log --variant no-psync", 0), 0u) << replay;
  // The replay line reproduces the violation.
  auto again = run(replay.substr(std::string("ferrite crashtest ").size()) + " --json");
  ASSERT_EQ(again.code, 1) << again.output;
  EXPECT_EQ(nlohmann::json::parse(again.output)["violations"], 1);

  EXPECT_EQ(run("--structure no-such-structure").code, 2);
  EXPECT_EQ(run("--structure reference-log --variant nope").code, 2);
  EXPECT_EQ(run("--structure reference-log --replay 3").code, 2);
  EXPECT_EQ(run("--structure reference-log --threads 0").code, 2);
  EXPECT_EQ(run("--structure reference-log --create-crash-points 10").code, 2) << "needs --crash-create";
  auto sampled = run("--structure reference-log --ops 4 --images 1 --crash-create --create-crash-points 5 --json");
  ASSERT_EQ(sampled.code, 0) << sampled.output;
  EXPECT_GT(nlohmann::json::parse(sampled.output)["create_points"].get<int>(), 0) << sampled.output;
  EXPECT_EQ(run("").code, 2);
}

// Creation persists through pwb/psync, which the store models do not
// execute: --crash-create under one is a usage error that says so (it was
// thousands of "no header slot verifies" violations), under every model a
// variant claims too; the write-back models still take it.
TEST(CrashtestCli, CrashCreateUnderAStoreModelIsAUsageError) {
  auto run = [](const std::string& args) { return ferrite::test::run_cli("crashtest " + args); };  // with stderr
  for (const char* m : {"hops", "hops+", "strand"}) {
    auto r = run(std::string("--structure logging-txn-queue --ops 4 --images 1 --crash-create --model ") + m);
    EXPECT_EQ(r.code, 2) << m << ": " << r.output;
    EXPECT_NE(r.output.find("write-back model"), std::string::npos) << r.output;
  }
  auto all = run("--structure logging-store-txn-queue --variant correct-strand --ops 4 --images 1 --crash-create --model all");
  EXPECT_EQ(all.code, 2) << all.output;
  EXPECT_NE(all.output.find("--model abstract or x86"), std::string::npos) << all.output;
  auto x86 = run("--structure logging-txn-queue --ops 4 --images 1 --crash-create --create-crash-points 4 --model x86");
  EXPECT_EQ(x86.code, 0) << x86.output;
  // The library says the same to a program that calls it.
  const auto* s = ferrite::crash::find_subject("logging-txn-queue", "correct");
  ASSERT_NE(s, nullptr);
  ferrite::crash::CampaignConfig cfg;
  cfg.crash_create = true;
  cfg.model = "hops";
  EXPECT_THROW(ferrite::crash::run_campaign(*s, cfg), std::invalid_argument);
}

}  // namespace

namespace {

// An inconclusive image is never a pass: with a checker budget too small
// for a 3-thread register history (registers have no fast check), the
// campaign finds no violation but exits 3 and says why.
TEST(CrashtestCli, AnInconclusiveImageIsNeverAPass) {
  auto r = ferrite::test::run_cli(
      "crashtest --structure pbcomb-float --threads 3 --ops 60 --crash-points 5 --checker-budget 1 --json", true);
  ASSERT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("inconclusive: not a pass"), std::string::npos) << r.output;
  // The same campaign with the default budget decides every image.
  auto ok = run("--structure pbcomb-float --threads 3 --ops 60 --crash-points 5 --json");
  ASSERT_EQ(ok.code, 0) << ok.output;
  EXPECT_EQ(nlohmann::json::parse(ok.output)["inconclusive"], 0);
}

}  // namespace

}  // namespace cli_test
