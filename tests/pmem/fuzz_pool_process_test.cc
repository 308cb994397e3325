// `ferrite fuzz-pool` in CI (issue 40, "Fuzzed to the byte"): a short
// campaign — about 2,000 mutated pools, scaled by FERRITE_TEST_SCALE —
// over the families that are sound today, asserting 0 signals, 0 hangs, 0
// silent wrong answers; and the driver's self-test, which plants a
// structure whose hook and traversal follow damaged pointers unvalidated:
// the same campaign must report it (signals), so the first test can fail.
//
// Families left out (their failures are listed in docs/pool-format.md
// "Fuzzing" and belong to the structures' own hooks, being fixed in
// include/ferrite/{combining,mirror,montage}/): pb-queue (a flipped root
// object byte answers a shorter queue; the oplog-pb-queue too), pwf-queue
// and pwf-stack (SIGSEGV in PWFQueue/PWFStack::recover_root on a zeroed
// node page / a flipped root object byte), montage-*
// and mirror-* (attach refuses what the recovery hook and so `ferrite
// check` accepted), the OpLog (a flipped record seq), logging-sfr-rbtree
// (its root pointer or a child pointer flipped to a stale, self-consistent
// node: the tree records no count or checksum to tell).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "common/process.h"
#include "common/scale.h"

namespace fuzz_pool_process_test {  // this file's names, apart in a unity build

namespace {

using ferrite::test::run_cli;

constexpr const char* kSoundFamilies = "pb-bytes-queue";

nlohmann::json run_fuzz(const std::string& args, int* code) {
  const std::string out = "/tmp/ferrite-fuzz-test-" + std::to_string(::getpid()) + ".json";
  const auto r = run_cli("fuzz-pool --quiet --json-out " + out + " " + args);
  *code = r.code;
  std::ifstream f(out);
  nlohmann::json j;
  if (f) j = nlohmann::json::parse(f, nullptr, false);
  std::remove(out.c_str());
  if (j.is_discarded() || j.is_null()) ADD_FAILURE() << "no JSON summary; output:\n" << r.output;
  return j;
}

TEST(FuzzPool, SoundFamiliesNeverCrashHangOrAnswerWrong) {
  const int n = ferrite::test::scaled(2000, 150);
  const auto t0 = std::chrono::steady_clock::now();
  int code = -1;
  const auto j = run_fuzz("--mutations " + std::to_string(n) + " --seed 7 --pool-mib 4 --families " +
                              kSoundFamilies,
                          &code);
  ASSERT_TRUE(j.is_object());
  const auto& o = j["outcomes"];
  std::printf("[ fuzz-pool ] %d mutations over %s in %.1f s: %s\n", n, kSoundFamilies,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), o.dump().c_str());
  EXPECT_EQ(j["mutations"].get<int>(), n);
  EXPECT_EQ(o["signal"].get<int>(), 0) << j["failures"].dump(2);
  EXPECT_EQ(o["hang"].get<int>(), 0) << j["failures"].dump(2);
  EXPECT_EQ(o["silent"].get<int>(), 0) << j["failures"].dump(2);
  EXPECT_EQ(o["child-error"].get<int>(), 0) << j["failures"].dump(2);
  EXPECT_EQ(code, 0);
  // The campaign saw damage of every kind: some refused, some repaired.
  EXPECT_GT(o["refused"].get<int>(), 0);
  EXPECT_GT(o["repaired"].get<int>(), 0);
  EXPECT_GT(o["benign"].get<int>(), 0);
  for (const char* kind : {"flip-header", "flip-root-object", "flip-node", "flip-random", "garbage", "truncate",
                           "zero-page"})
    EXPECT_TRUE(j["by_kind"].contains(kind)) << kind;
}

// Every family (combining, nbMontage, Mirror, logging, OpLog): their known
// silent answers are listed in docs/pool-format.md ("Known failures"), but
// none may crash, hang or die without a result: every recovery hook
// validates what it follows (the 20,000-case run: 0 signals, 0 hangs).
TEST(FuzzPool, EveryFamilyNeverCrashesOrHangs) {
  const int n = ferrite::test::scaled(600, 100);
  const auto t0 = std::chrono::steady_clock::now();
  int code = -1;
  const auto j = run_fuzz("--mutations " + std::to_string(n) + " --seed 5 --pool-mib 8 --families all", &code);
  ASSERT_TRUE(j.is_object());
  const auto& o = j["outcomes"];
  std::printf("[ fuzz-pool ] %d mutations over every family in %.1f s: %s\n", n,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), o.dump().c_str());
  EXPECT_EQ(j["mutations"].get<int>(), n);
  EXPECT_EQ(j["roots"].get<int>(), 11) << "a family is missing from the reference pool";
  EXPECT_EQ(o["signal"].get<int>(), 0) << j["failures"].dump(2);
  EXPECT_EQ(o["hang"].get<int>(), 0) << j["failures"].dump(2);
  EXPECT_EQ(o["child-error"].get<int>(), 0) << j["failures"].dump(2);
  EXPECT_GT(o["refused"].get<int>(), 0);
  EXPECT_GT(o["benign"].get<int>(), 0);
}

TEST(FuzzPool, SelfTestsFragileStructureIsCaught) {
  int code = -1;
  const auto j = run_fuzz("--mutations " + std::to_string(ferrite::test::scaled(300, 150)) +
                              " --seed 7 --pool-mib 4 --families pb-bytes-queue --self-test",
                          &code);
  ASSERT_TRUE(j.is_object());
#if defined(__SANITIZE_ADDRESS__)
  // Under ASan (the ferrite binary is built with it too) a wild load is
  // ASan's report and exit(1), not SIGSEGV: the child ends without a result.
  EXPECT_GT(j["outcomes"]["signal"].get<int>() + j["outcomes"]["child-error"].get<int>(), 0) << j["outcomes"].dump();
#else
  EXPECT_GT(j["outcomes"]["signal"].get<int>(), 0) << j["outcomes"].dump();
#endif
  EXPECT_GT(j["failures_total"].get<int>(), 0);
  EXPECT_EQ(code, 1);
  ASSERT_FALSE(j["failures"].empty());
}

}  // namespace

}  // namespace fuzz_pool_process_test
