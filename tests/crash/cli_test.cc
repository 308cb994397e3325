// `ferrite crashtest` end to end: listing, exit codes, JSON, replay lines.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace {

struct Run {
  int code;
  std::string out;
};

Run run(const std::string& args) {
  const std::string cmd = std::string(FERRITE_CLI_PATH) + " crashtest " + args + " 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  Run r{-1, {}};
  if (p == nullptr) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

TEST(CrashtestCli, ListsStructuresAndMarksBrokenVariants) {
  auto r = run("--list --json");
  ASSERT_EQ(r.code, 0);
  auto j = nlohmann::json::parse(r.out);
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
  ASSERT_EQ(ok.code, 0) << ok.out;
  auto j = nlohmann::json::parse(ok.out);
  EXPECT_EQ(j["violations"], 0);
  EXPECT_GT(j["crash_points"].get<int>(), 12);
  EXPECT_GT(j["images"].get<int>(), 0);
  EXPECT_TRUE(j.contains("images_per_second"));
  EXPECT_TRUE(j.contains("checker"));

  auto bad = run("--structure reference-log --variant no-psync --ops 12 --images 2 --json");
  ASSERT_EQ(bad.code, 1) << bad.out;
  auto b = nlohmann::json::parse(bad.out);
  ASSERT_GE(b["violations"].get<int>(), 1);
  const std::string replay = b["violation_details"][0]["replay"];
  EXPECT_EQ(replay.rfind("ferrite crashtest --structure reference-log --variant no-psync", 0), 0u) << replay;
  // The replay line reproduces the violation.
  auto again = run(replay.substr(std::string("ferrite crashtest ").size()) + " --json");
  ASSERT_EQ(again.code, 1) << again.out;
  EXPECT_EQ(nlohmann::json::parse(again.out)["violations"], 1);

  EXPECT_EQ(run("--structure no-such-structure").code, 2);
  EXPECT_EQ(run("--structure reference-log --variant nope").code, 2);
  EXPECT_EQ(run("--structure reference-log --replay 3").code, 2);
  EXPECT_EQ(run("--structure reference-log --threads 0").code, 2);
  EXPECT_EQ(run("").code, 2);
}

}  // namespace
