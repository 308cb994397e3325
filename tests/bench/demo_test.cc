// tests/bench/demo_test.cc — `ferrite demo` step 1 (exactly-once across
// SIGKILLs) passes, and fails when the worker skips detectable recovery:
// the check can fail.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "common/process.h"

namespace {

using Result = ferrite::test::CliResult;
using ferrite::test::run_cli;

const char* kStep1 = "demo --steps 1 --kills 20 --jobs 2000 --job-us 200 --seed 11";

TEST(Demo, ExactlyOnceAcrossKills) {
  const Result r = run_cli(kStep1);
  if (r.output.find("NOT YET AVAILABLE") != std::string::npos) GTEST_SKIP() << r.output;
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("PROVED: every one of 2000 jobs was done exactly once"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("missing: 0,"), std::string::npos) << r.output;
}

TEST(Demo, SkippingRecoveryLosesJobsAndIsCaught) {
  const Result r = run_cli(std::string(kStep1) + " --break-recovery");
  if (r.output.find("NOT YET AVAILABLE") != std::string::npos) GTEST_SKIP() << r.output;
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("FAILED: exactly-once does not hold"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("missing: 0,"), std::string::npos) << r.output;
}

TEST(Demo, BadStepIsAUsageError) {
  EXPECT_EQ(run_cli("demo --steps 7").code, 2);
}

}  // namespace
