// What the `ferrite` tool says to bad input (issue: a FIFO hung `ferrite
// check`, an unknown command said "A subcommand is required", `--size 2T`
// gave no reason): every refusal names the problem, exits 1 (bad file) or 2
// (usage), and never hangs.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "common/process.h"
#include "common/temp_pool.h"

namespace cli_errors_process_test {  // this file's names, apart in a unity build

namespace {

using ferrite::test::run_cli;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(CliErrors, AFifoADirectoryAndAMissingFileAreNamedNeverWaitedOn) {
  ferrite::test::TempPath fifo("fifo");
  ASSERT_EQ(::mkfifo(fifo.path.c_str(), 0600), 0);
  for (const char* cmd : {"check", "info"}) {
    const auto r = run_cli(std::string(cmd) + " " + fifo.path);  // would block forever on open() before
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_TRUE(has(r.output, "it is a FIFO")) << r.output;
  }
  ::unlink(fifo.path.c_str());
  const auto dir = run_cli("check /tmp");
  EXPECT_EQ(dir.code, 1) << dir.output;
  EXPECT_TRUE(has(dir.output, "it is a directory")) << dir.output;
  const auto missing = run_cli("check /nonexistent/pool");
  EXPECT_EQ(missing.code, 1) << missing.output;
  EXPECT_TRUE(has(missing.output, "no such file")) << missing.output;
}

TEST(CliErrors, AnUnknownCommandIsNamedWithTheKnownOnes) {
  const auto r = run_cli("frobnicate");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "unknown command 'frobnicate'")) << r.output;
  EXPECT_TRUE(has(r.output, "check")) << r.output;
}

TEST(CliErrors, ABadPoolSizeSaysWhatIsAllowed) {
  ferrite::test::TempPath p("size");
  const auto r = run_cli("create-pool " + p.path + " --size 2T");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "K, M or G")) << r.output;
  EXPECT_TRUE(has(r.output, "1 MiB to")) << r.output;
  EXPECT_NE(::access(p.path.c_str(), F_OK), 0) << "a refused create left a file";
}

}  // namespace cli_errors_process_test
