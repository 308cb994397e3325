// tests/examples/guide_example_process_test.cc — the user's guide example
// (examples/durable_queue.cc, docs/guide.md) is built and run: jobs produced
// once are consumed exactly once across real SIGKILLs that strike after a
// dequeue took effect and before its job was seen; without detectable
// recovery the same kills lose jobs (the check can fail); a foreign pool file
// is refused with a message.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace guide_example_process_test {  // this file's names, apart in a unity build

namespace {

std::string example_path() {
  const std::string cli = FERRITE_CLI_PATH;
  return cli.substr(0, cli.rfind('/') + 1) + "durable-queue";
}

struct Outcome {
  int exit_code = -1;   // -1: killed by a signal
  int signal = 0;
  std::string out;
};

Outcome run(const std::string& args) {
  const std::string cmd = example_path() + " " + args + " 2>&1";
  FILE* f = ::popen(cmd.c_str(), "r");
  Outcome r;
  if (f == nullptr) return r;
  char buf[256];
  while (std::fgets(buf, sizeof buf, f) != nullptr) r.out += buf;
  const int status = ::pclose(f);
  // popen runs `sh -c`: a child killed by SIGKILL shows as exit 128 + 9.
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
    if (r.exit_code == 128 + SIGKILL) r.signal = SIGKILL, r.exit_code = -1;
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
  }
  return r;
}

// job value -> how many times it was printed as consumed
void count_jobs(const std::string& out, std::map<long, int>* seen) {
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    long v = 0;
    if (std::sscanf(line.c_str(), "job %ld", &v) == 1) ++(*seen)[v];
  }
}

TEST(GuideExample, EveryJobIsConsumedExactlyOnceAcrossKillsMidDequeue) {
  const std::string pool = "/dev/shm/ferrite-guide-" + std::to_string(::getpid()) + ".pool";
  std::remove(pool.c_str());
  constexpr long kJobs = 60;
  const Outcome p = run(pool + " produce " + std::to_string(kJobs));
  ASSERT_EQ(p.exit_code, 0) << p.out;

  std::map<long, int> seen;
  int kills = 0;
  // Killed in the middle of its 7th dequeue, restarted, killed again, ...
  for (int i = 0; i < 6; ++i) {
    const Outcome c = run(pool + " consume --crash-at 7");
    count_jobs(c.out, &seen);
    if (c.signal == SIGKILL) ++kills;
    else ASSERT_EQ(c.exit_code, 0) << c.out;
  }
  const Outcome last = run(pool + " consume");
  ASSERT_EQ(last.exit_code, 0) << last.out;
  count_jobs(last.out, &seen);
  EXPECT_NE(last.out.find("queue empty"), std::string::npos) << last.out;

  EXPECT_EQ(kills, 6);
  for (long v = 1; v <= kJobs; ++v) EXPECT_EQ(seen[v], 1) << "job " << v;
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kJobs));
  std::remove(pool.c_str());
}

TEST(GuideExample, WithoutRecoveryTheSameKillsLoseJobs) {
  const std::string pool = "/dev/shm/ferrite-guide-norec-" + std::to_string(::getpid()) + ".pool";
  std::remove(pool.c_str());
  constexpr long kJobs = 30;
  ASSERT_EQ(run(pool + " produce " + std::to_string(kJobs)).exit_code, 0);
  std::map<long, int> seen;
  for (int i = 0; i < 3; ++i) count_jobs(run(pool + " consume --crash-at 5 --no-recover").out, &seen);
  count_jobs(run(pool + " consume --no-recover").out, &seen);
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kJobs - 3));  // one job lost per kill
  std::remove(pool.c_str());
}

TEST(GuideExample, AForeignFileIsRefusedWithAMessage) {
  const std::string path = "/dev/shm/ferrite-guide-foreign-" + std::to_string(::getpid());
  {
    std::ofstream f(path);
    f << std::string(1 << 16, 'x');
  }
  const Outcome r = run(path + " consume");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("durable-queue: "), std::string::npos) << r.out;
  std::remove(path.c_str());
}

TEST(GuideExample, BadUsageExitsTwo) {
  EXPECT_EQ(run("").exit_code, 2);
  EXPECT_EQ(run("/dev/shm/x produce zero").exit_code, 2);
  EXPECT_EQ(run("--help").exit_code, 0);
}

}  // namespace

}  // namespace guide_example_process_test
