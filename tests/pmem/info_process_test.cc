// `ferrite info`'s per-root statistics (issue 40: "`ferrite info` adds
// per-root statistics"): each root's hook runs on a private mapping in a
// child, and what it marked is counted, so a queue of n elements holds n
// more blocks than an empty one, a damaged root says so, and --no-stats
// reads the header only.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "common/process.h"
#include "common/temp_pool.h"
#include "ferrite/combining/pb_queue.h"
#include "ferrite/pmem/pool.h"

namespace info_process_test {  // this file's names, apart in a unity build

namespace {

namespace fp = ferrite::pmem;
namespace fc = ferrite::combining;
using ferrite::test::run_cli;

nlohmann::json info_json(const std::string& path, const std::string& extra = "") {
  const auto r = run_cli("info --json " + path + extra, /*keep_stderr=*/false);
  EXPECT_EQ(r.code, 0) << r.output;
  return nlohmann::json::parse(r.output, nullptr, /*allow_exceptions=*/false);
}

const nlohmann::json* root_named(const nlohmann::json& j, const std::string& name) {
  for (const auto& r : j.at("roots"))
    if (r.at("name") == name) return &r;
  return nullptr;
}

}  // namespace

TEST(Info, CountsTheBlocksEachRootHoldsAndNamesADamagedOne) {
  ferrite::test::TempPath p("info");
  {
    auto pool = fp::Pool::create(p.path, std::size_t{4} << 20);
    auto a = fc::PBQueue<>::create(*pool, "empty", 1);
    auto b = fc::PBQueue<>::create(*pool, "full", 1);
    for (int i = 0; i < 40; ++i) b->enqueue(0, i);
  }
  const auto j = info_json(p.path);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j.at("stats"), "ran");
  const auto* empty = root_named(j, "empty");
  const auto* full = root_named(j, "full");
  ASSERT_NE(empty, nullptr);
  ASSERT_NE(full, nullptr);
  ASSERT_TRUE(empty->contains("blocks")) << empty->dump();
  ASSERT_TRUE(full->contains("blocks")) << full->dump();
  // 40 nodes of 16 bytes: exactly 40 more blocks than the empty queue's
  // records, each block of a size class that holds a node.
  EXPECT_EQ(full->at("blocks").get<std::uint64_t>(), empty->at("blocks").get<std::uint64_t>() + 40) << j.dump(2);
  EXPECT_GE(full->at("bytes").get<std::uint64_t>(), empty->at("bytes").get<std::uint64_t>() + 40 * 16);

  // The text form says the same.
  const auto text = run_cli("info " + p.path);
  EXPECT_EQ(text.code, 0) << text.output;
  EXPECT_NE(text.output.find("holds " + std::to_string(full->at("blocks").get<std::uint64_t>()) + " blocks"),
            std::string::npos)
      << text.output;

  // --no-stats: the header only.
  const auto quick = info_json(p.path, " --no-stats");
  ASSERT_TRUE(quick.is_object());
  EXPECT_FALSE(root_named(quick, "full")->contains("blocks"));
  EXPECT_EQ(quick.at("stats"), "skipped (--no-stats)");

  // A damaged root: its StateRec pointer word zeroed (the root's first
  // word names the current record). It is named, with no statistics; the
  // other root keeps its own.
  const std::uint64_t at = std::stoull(full->at("offset").get<std::string>(), nullptr, 16);
  {
    std::fstream f(p.path, std::ios::in | std::ios::out | std::ios::binary);
    const char zero[64] = {};
    f.seekp(static_cast<std::streamoff>(at));
    f.write(zero, sizeof zero);
  }
  const auto d = info_json(p.path);
  ASSERT_TRUE(d.is_object());
  const auto* broken = root_named(d, "full");
  ASSERT_NE(broken, nullptr);
  EXPECT_FALSE(broken->contains("blocks")) << broken->dump();
  EXPECT_TRUE(broken->contains("damaged")) << broken->dump();
  EXPECT_TRUE(root_named(d, "empty")->contains("blocks")) << d.dump(2);
}

}  // namespace info_process_test
