// tests/bench/demo_test.cc — `ferrite demo` step 1 (exactly-once across
// SIGKILLs) passes, and fails when the worker skips detectable recovery:
// the check can fail. Its worker, the example program exactly-once
// (examples/exactly_once.cc), answers usage errors and missing pools
// plainly, and proves exactly-once by itself after a kill. The Mirror part's
// worker, mirror-kv (examples/mirror_kv.cc), does the same, and its check
// rejects a map that is not the acknowledged state.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "common/process.h"

namespace demo_test {  // this file's names, apart in a unity build

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
  EXPECT_NE(r.output.find("PROVED: a Mirror map survived 20 SIGKILLs"), std::string::npos) << r.output;
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
  EXPECT_EQ(run_cli("demo --steps x").code, 2);
}

// The example is built next to `ferrite`.
const std::string kExample = (std::filesystem::path(FERRITE_CLI_PATH).parent_path() / "exactly-once").string();

Result example(const std::string& args) { return ferrite::test::run_command(kExample, args); }

TEST(ExactlyOnceExample, HelpAndUsageErrors) {
  const Result help = example("--help");
  EXPECT_EQ(help.code, 0) << help.output;
  EXPECT_NE(help.output.find("usage:"), std::string::npos) << help.output;
  for (const char* bad : {"", "frobnicate /dev/shm/x.pool", "init", "init /dev/shm/x.pool --jobs",
                          "init /dev/shm/x.pool --jobs x", "init /dev/shm/x.pool --jobs 0",
                          "run /dev/shm/x.pool --json", "verify /dev/shm/x.pool --no-such-flag"}) {
    const Result r = example(bad);
    EXPECT_EQ(r.code, 2) << "'" << bad << "': " << r.output;
    EXPECT_NE(r.output.find("exactly-once: "), std::string::npos) << "'" << bad << "': no message";
  }
}

TEST(ExactlyOnceExample, MissingPoolIsAClearError) {
  const Result r = example("verify /dev/shm/ferrite-definitely-missing.pool");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("ferrite-definitely-missing.pool"), std::string::npos) << r.output;
}

TEST(ExactlyOnceExample, KilledWorkerRecoversAndEveryJobIsDoneOnce) {
  const std::string pool = "/dev/shm/ferrite-test-" + std::to_string(::getpid()) + "-example.pool";
  ::unlink(pool.c_str());
  ASSERT_EQ(example("init " + pool + " --jobs 1500 --threads 3").code, 0);
  for (int i = 0; i < 3; ++i) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::execl(kExample.c_str(), kExample.c_str(), "run", pool.c_str(), "--job-us", "200", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(60));  // the moment of the kill, not a synchronization
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  const Result run = example("run " + pool);
  EXPECT_EQ(run.code, 0) << run.output;
  const Result v = example("verify " + pool + " --json");
  EXPECT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("\"missing\": 0,"), std::string::npos) << v.output;
  EXPECT_NE(v.output.find("\"exactly_once\": true"), std::string::npos) << v.output;
  ::unlink(pool.c_str());
}

const std::string kMirrorKv = (std::filesystem::path(FERRITE_CLI_PATH).parent_path() / "mirror-kv").string();

Result mirror_kv(const std::string& args) { return ferrite::test::run_command(kMirrorKv, args); }

TEST(MirrorKvExample, HelpAndUsageErrors) {
  const Result help = mirror_kv("--help");
  EXPECT_EQ(help.code, 0) << help.output;
  EXPECT_NE(help.output.find("usage:"), std::string::npos) << help.output;
  for (const char* bad : {"", "frobnicate /dev/shm/x.pool", "init", "run /dev/shm/x.pool",
                          "run /dev/shm/x.pool --from x", "verify /dev/shm/x.pool", "verify /dev/shm/x.pool --acked -1",
                          "verify /dev/shm/x.pool --no-such-flag 1"}) {
    const Result r = mirror_kv(bad);
    EXPECT_EQ(r.code, 2) << "'" << bad << "': " << r.output;
    EXPECT_NE(r.output.find("mirror-kv: "), std::string::npos) << "'" << bad << "': no message";
  }
}

TEST(MirrorKvExample, MissingPoolIsAClearError) {
  const Result r = mirror_kv("verify /dev/shm/ferrite-definitely-missing.pool --acked 0");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("ferrite-definitely-missing.pool"), std::string::npos) << r.output;
}

TEST(MirrorKvExample, VerifyAcceptsTheAcknowledgedStateAndRejectsAnyOther) {
  const std::string pool = "/dev/shm/ferrite-test-" + std::to_string(::getpid()) + "-mirror-kv.pool";
  ::unlink(pool.c_str());
  ASSERT_EQ(mirror_kv("init " + pool).code, 0);
  ASSERT_EQ(mirror_kv("run " + pool + " --from 0 --ops 1200").code, 0);
  const Result ok = mirror_kv("verify " + pool + " --acked 1200 --json");
  EXPECT_EQ(ok.code, 0) << ok.output;
  EXPECT_NE(ok.output.find("\"state\": \"acked\""), std::string::npos) << ok.output;
  // One fewer: the map holds one more operation, the one "in flight".
  const Result plus_one = mirror_kv("verify " + pool + " --acked 1199 --json");
  EXPECT_EQ(plus_one.code, 0) << plus_one.output;
  EXPECT_NE(plus_one.output.find("\"state\": \"acked+1\""), std::string::npos) << plus_one.output;
  // Far fewer, or more than happened: not a state a crash may leave.
  for (const char* acked : {"600", "1300"}) {
    const Result bad = mirror_kv("verify " + pool + " --acked " + acked + " --json");
    EXPECT_EQ(bad.code, 1) << bad.output;
    EXPECT_NE(bad.output.find("\"state\": \"neither\""), std::string::npos) << bad.output;
  }
  ::unlink(pool.c_str());
}

}  // namespace

}  // namespace demo_test
