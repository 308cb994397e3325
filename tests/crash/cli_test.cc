// `ferrite crashtest` end to end: listing, exit codes, JSON, replay lines.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "common/process.h"

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
