// tests/bench/cli_test.cc — `ferrite bench` from the outside: usage errors
// exit 2 with a message, a tiny run exits 0 and writes parseable JSON/CSV.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "common/process.h"

namespace cli_test {  // this file's names, apart in a unity build

namespace {

using Result = ferrite::test::CliResult;
using ferrite::test::run_cli;  // stdout + stderr

TEST(BenchCli, UsageErrorsExitTwo) {
  const char* bad[] = {
      "bench --threads 0",
      "bench --threads x",
      "bench --structure nope",
      "bench --structure queue --backend bogus",
      "bench --structure queue --backend sim",
      "bench --structure queue --ops 10 --duration 1",
      "bench --structure queue --techniques no-such-technique",
      "bench --structure queue --workload multiply",
      "bench --structure queue --workload nope",
      "bench --structure queue --reps 0",
      "bench --structure queue --value-size 4",
      "bench --structure queue --pool-dir /nonexistent/dir",
      "bench --quick --full",
      "bench --no-such-flag",
      "bench --structure set --mix 50:50:50",
      "bench --structure set --mix 50:50",
      "bench --structure map --read-pct 101",
      "bench --structure set --mix 50:25:25 --read-pct 50",
      "bench --structure set --key-range 0",
      "bench --structure set --key-range 1000 --prefill 1001",
      "bench --structure set --workload pairs",
      "bench --structure queue --mix 50:25:25",
      "bench --structure queue --workload key-mix",
      "bench --structure map --sync-every 0",
      "bench --structure map --sync-every x",
      "bench --structure queue --sync-every 10",
      "bench --recovery --techniques pb-queue",
      "bench --recovery --live-mib 0",
      "bench --recovery --structure map",
      "bench --structure map --recovery-threads 2",
      "bench --structure map --key-size 0",
      "bench --structure map --key-size 70000",
      "bench --structure map -t mirror-hashmap --key-size 16",  // a named technique without 16-byte keys
      "bench --structure queue --key-size 32",
      "bench --recovery --key-size 32",
  };
  for (const char* args : bad) {
    const Result r = run_cli(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
    EXPECT_FALSE(r.output.empty()) << args << ": no message";
  }
}

TEST(BenchCli, ListShowsTransientCompetitors) {
  const Result r = run_cli("bench --list");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("transient-ms"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("transient-treiber"), std::string::npos) << r.output;
  // The family column, and the set and map competitors.
  EXPECT_NE(r.output.find("libcds "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("set:\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("map:\n"), std::string::npos) << r.output;
}

TEST(BenchCli, BadMixSaysWhy) {
  const Result r = run_cli("bench --structure set --mix 50:50:50");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("sum to 100"), std::string::npos) << r.output;
}

TEST(BenchCli, SetAndMapRunsReportHitRates) {
  const auto dir = std::filesystem::temp_directory_path() / ("ferrite-cli-keyed-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string json = (dir / "k.json").string(), csv = (dir / "k.csv").string();
  const Result r = run_cli("bench --structure set,map --techniques mutex-std --threads 1,2 --ops 300 --reps 1 "
                           "--warmup 0 --work 8 --key-range 2000 --mix 80:10:10 --value-size 32 --json " + json +
                           " --csv " + csv);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("get:insert:remove 80:10:10 | keys 1..2000 | prefill 1000"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("hit%"), std::string::npos) << r.output;
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j.size(), 4u);  // (set, map) x 2 thread counts
  for (const auto& rec : j) {
    EXPECT_EQ(rec.at("workload").get<std::string>(), "key-mix");
    EXPECT_EQ(rec.at("family").get<std::string>(), "transient");
    EXPECT_FALSE(rec.at("ferrite").get<bool>());
    EXPECT_EQ(rec.at("prefill").get<std::uint64_t>(), 1000u);
    EXPECT_EQ(rec.at("value_size").get<std::uint64_t>(), 32u);
    EXPECT_EQ(rec.at("ops_total").get<std::uint64_t>(), 300u * rec.at("threads").get<std::uint64_t>());
    const double hit = rec.at("hit_rate").get<double>();
    EXPECT_GE(hit, 0.0);
    EXPECT_LE(hit, 1.0);
  }
  std::ifstream c(csv);
  std::string header;
  std::getline(c, header);
  EXPECT_NE(header.find(",family,ferrite,ablation,mix,key_range,"), std::string::npos) << header;
  std::filesystem::remove_all(dir);
}

// 32-byte keys (ferrite/key32.h): the maps that take them run with them and
// follow the map semantics (the harness's checks); one that does not is
// refused with a message, never run with 8-byte keys.
TEST(BenchCli, ThirtyTwoByteKeysRunWhereTakenAndAreRefusedElsewhere) {
  const auto dir = std::filesystem::temp_directory_path() / ("ferrite-cli-key32-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string json = (dir / "k.json").string();
  const Result r = run_cli("bench --structure map --techniques montage-hashmap,montage-hashmap-dram,montage-skiplist,"
                           "montage-bst-dram,montage-splitorder,mutex-std --key-size 32 --threads 1,2 "
                           "--ops 300 --reps 1 --warmup 0 --work 8 --key-range 2000 --value-size 64 --json " + json);
  ASSERT_EQ(r.code, 0) << r.output;
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j.size(), 12u);  // 6 techniques x 2 thread counts
  for (const auto& rec : j) {
    EXPECT_EQ(rec.at("key_size").get<std::uint64_t>(), 32u);
    EXPECT_TRUE(rec.at("error").is_null()) << rec.at("technique") << ": " << rec.at("error");
    const double hit = rec.at("hit_rate").get<double>();
    EXPECT_GT(hit, 0.0);
    EXPECT_LE(hit, 1.0);
  }
  for (const char* refused : {"pmdk-hashmap", "izraelevitz-bst"}) {
    const Result bad = run_cli(std::string("bench --structure map --techniques ") + refused + " --key-size 32 --ops 10");
    EXPECT_EQ(bad.code, 2) << refused << ": " << bad.output;
    EXPECT_NE(bad.output.find("does not take 32-byte keys"), std::string::npos) << refused << ": " << bad.output;
  }
  std::filesystem::remove_all(dir);
}

// nbMontage's recovery time against live size: every map recovers every
// payload of the fill, with each recovery thread count, and says so.
TEST(BenchCli, RecoveryModeTimesEveryMapsRecoveryOfItsWholeFill) {
  const auto dir = std::filesystem::temp_directory_path() / ("ferrite-cli-rec-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string json = (dir / "r.json").string();
  const Result r = run_cli("bench --recovery -t montage-hashmap,montage-splitorder,montage-skiplist,montage-bst "
                           "--live-mib 1,2 --recovery-threads 1,2 --reps 2 --value-size 120 --pool-dir " +
                           dir.string() + " --json " + json);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("recover ms"), std::string::npos) << r.output;
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  const auto& recs = j.at("recovery");
  ASSERT_EQ(recs.size(), 4u * 2u * 2u);  // maps x sizes x thread counts
  for (const auto& rec : recs) {
    const auto keys = rec.at("keys").get<std::uint64_t>();
    EXPECT_EQ(keys, (rec.at("live_bytes").get<std::uint64_t>()) / 128u);
    EXPECT_GE(keys * 128u, 1000000u);
    EXPECT_EQ(rec.at("payloads_kept").get<std::uint64_t>(), keys) << rec.dump();
    EXPECT_GE(rec.at("blocks_seen").get<std::uint64_t>(), keys);
    EXPECT_EQ(rec.at("recover_s").size(), 2u);
    EXPECT_GT(rec.at("recover_s_median").get<double>(), 0.0);
    EXPECT_EQ(rec.at("error").get<std::string>(), "");
    // Found the pool's mapping in /proc/self/smaps (-1: not found).
    EXPECT_GE(rec.at("pool_huge_page_fraction").get<double>(), 0.0) << rec.dump();
    EXPECT_LE(rec.at("pool_huge_page_fraction").get<double>(), 1.0) << rec.dump();
  }
  EXPECT_NE(r.output.find("2M pages"), std::string::npos) << r.output;
  // The pools are deleted.
  for (const auto& f : std::filesystem::directory_iterator(dir)) EXPECT_EQ(f.path().extension(), ".json") << f.path();
  std::filesystem::remove_all(dir);
}

// nbMontage Figures 5 and 6: one experiment per --sync-every period, each
// record with the syncs' latency for the buffered technique only.
TEST(BenchCli, SyncEveryRunsOneExperimentPerPeriod) {
  const auto dir = std::filesystem::temp_directory_path() / ("ferrite-cli-sync-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string json = (dir / "s.json").string();
  const Result r = run_cli("bench --structure map --techniques montage-hashmap,mutex-std --threads 1 --ops 200 "
                           "--reps 1 --warmup 0 --work 0 --key-range 1000 --sync-every 5,50 --json " + json);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("sync every 5 ops/thread"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("sync every 50 ops/thread"), std::string::npos) << r.output;
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j.size(), 4u);  // 2 periods x 2 techniques
  for (const auto& rec : j) {
    const auto every = rec.at("sync_every").get<std::uint64_t>();
    EXPECT_TRUE(every == 5 || every == 50) << every;
    if (rec.at("technique").get<std::string>() == "montage-hashmap") {
      EXPECT_EQ(rec.at("syncs").get<std::uint64_t>(), 200u / every);
      EXPECT_GT(rec.at("sync_us_median").get<double>(), 0.0);
    } else {
      EXPECT_EQ(rec.at("syncs").get<std::uint64_t>(), 0u);
      EXPECT_TRUE(rec.at("sync_us_median").is_null());
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(BenchCli, TinyRunWritesJsonAndCsv) {
  const auto dir = std::filesystem::temp_directory_path() / ("ferrite-cli-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string json = (dir / "r.json").string(), csv = (dir / "r.csv").string();
  const Result r = run_cli("bench --structure queue,stack --techniques transient-ms,transient-treiber,mutex-std "
                           "--threads 1,2 --ops 200 --reps 2 --warmup 0 --work 8 --json " + json + " --csv " + csv);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("Mops/s"), std::string::npos) << r.output;
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  ASSERT_TRUE(j.is_array());
  EXPECT_EQ(j.size(), 8u);  // (2 + 2 techniques) x 2 thread counts
  for (const auto& rec : j) {
    EXPECT_EQ(rec.at("reps").get<int>(), 2);
    EXPECT_EQ(rec.at("ops_total").get<std::uint64_t>(), 2u * 200u * rec.at("threads").get<std::uint64_t>());
    EXPECT_GT(rec.at("mops_median").get<double>(), 0.0);
  }
  std::ifstream c(csv);
  std::string header;
  std::getline(c, header);
  EXPECT_NE(header.find("mops_median"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace

}  // namespace cli_test
