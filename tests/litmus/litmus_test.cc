// The shipped litmus tests (tests/litmus/*.litmus) decided under every
// model, a test per model rule that shows the rule is needed (a verdict
// flips when the rule is removed), and the format's errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/process.h"
#include "ferrite/crash/model.h"
#include "ferrite/litmus/litmus.h"

namespace litmus_test {  // this file's names, apart in a unity build

namespace fc = ferrite::crash;
namespace fl = ferrite::litmus;

namespace {

const std::string kDir = std::string(FERRITE_SOURCE_DIR) + "/tests/litmus";

std::vector<fl::Test> shipped() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(kDir))
    if (e.path().extension() == ".litmus") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::vector<fl::Test> all;
  for (const auto& f : files) {
    auto t = fl::parse_file(f);
    all.insert(all.end(), t.begin(), t.end());
  }
  return all;
}

const fl::Test& by_name(const std::vector<fl::Test>& all, const std::string& name) {
  for (const auto& t : all)
    if (t.name == name) return t;
  throw std::runtime_error("no shipped litmus test " + name);
}

TEST(Litmus, EveryShippedTestHasTheExpectedVerdictUnderEveryModel) {
  const auto all = shipped();
  ASSERT_GE(all.size(), 18u);
  std::set<std::string> names;
  for (const auto& t : all) {
    EXPECT_TRUE(names.insert(t.name).second) << "two tests named " << t.name;
    for (const auto& model : fc::model_names()) {
      SCOPED_TRACE(t.name + " under " + model);
      auto e = t.expect.find(model);
      ASSERT_NE(e, t.expect.end()) << t.file << ": no expectation for model " << model;
      const auto v = fl::run(t, *fc::find_model(model));
      EXPECT_GE(v.interleavings, 1u);
      EXPECT_GE(v.images, v.crash_states);
      EXPECT_EQ(v.allowed, e->second) << "verdict " << (v.allowed ? "allowed: " + v.witness : "forbidden");
    }
  }
}

TEST(Litmus, TheStrandWeaverFigureTwoCasesAreShipped) {
  const auto all = shipped();
  for (const char* n : {"fig2-ab-barrier", "fig2-ab-newstrand", "fig2-cd-join", "fig2-cd-strands", "fig2-ef-spa",
                        "fig2-gh-load", "fig2-ij-threads", "fig2-ij-spa-order"}) {
    const auto& t = by_name(all, n);
    EXPECT_EQ(t.expect.count("strand"), 1u) << n;
  }
}

// Each rule of each store model, the shipped test whose verdict under the
// model changes when the rule is removed, and the verdict with the rule.
struct RuleCase {
  const char* model;
  const char* rule;
  const char* test;
  bool allowed_with_rule;
};
const RuleCase kRuleCases[] = {
    {"strand", "barrier", "fig2-ab-barrier", false},         // Eq. 1
    {"strand", "new-strand", "fig2-ab-newstrand", true},     // NewStrand clears Eq. 1's order
    {"strand", "join", "fig2-cd-join", false},               // Eq. 2
    {"strand", "join", "strand-join-durable", false},        // JoinStrand completes when durable
    {"strand", "spa", "fig2-ij-spa-order", false},           // Eq. 3
    {"strand", "transitivity", "fig2-ij-spa-order", false},  // Eq. 4
    {"hops", "epochs", "mp-ofence", false},
    {"hops", "dfence", "hops-dfence", false},
    {"hops", "cross-thread", "hops-cross-thread", false},
    {"hops+", "epochs", "mp-ofence", false},
    {"hops+", "dfence", "hops-dfence", false},
    {"hops+", "cross-thread", "hops-cross-thread", false},
    {"hops+", "load-history", "hops-plus-history", false},
    {"hops+", "lock-history", "hops-plus-lock-order", false},
};

TEST(Litmus, EveryStoreModelRuleIsNeededBySomeShippedTest) {
  const auto all = shipped();
  for (const auto& c : kRuleCases) {
    SCOPED_TRACE(std::string(c.model) + " without " + c.rule + " on " + c.test);
    const auto& t = by_name(all, c.test);
    const auto with = fl::run(t, *fc::find_model(c.model));
    EXPECT_EQ(with.allowed, c.allowed_with_rule);
    const auto mutated = fc::make_model_without(c.model, c.rule);
    EXPECT_EQ(mutated->name(), c.model);
    const auto without = fl::run(t, *mutated);
    EXPECT_NE(without.allowed, with.allowed) << "removing the rule changes no verdict";
  }
}

TEST(Litmus, TheRuleTableCoversEveryRuleOfEveryStoreModel) {
  for (const auto& model : fc::store_model_names()) {
    const auto rules = fc::find_model(model)->rules();
    EXPECT_FALSE(rules.empty()) << model;
    for (const auto& r : rules) {
      const bool covered = std::any_of(std::begin(kRuleCases), std::end(kRuleCases), [&](const RuleCase& c) {
        return model == c.model && r == c.rule;
      });
      EXPECT_TRUE(covered) << model << " rule " << r << " has no test that needs it";
    }
  }
  EXPECT_THROW(fc::make_model_without("strand", "epochs"), std::invalid_argument);
  EXPECT_THROW(fc::make_model_without("hops", "load-history"), std::invalid_argument);
  EXPECT_THROW(fc::make_model_without("x86", "dfence"), std::invalid_argument);
}

// An unannotated store is seen by no store model: it is never made durable
// by a verb, but may be evicted at any time.
TEST(Litmus, UnannotatedStoresMayBeEvictedButNoVerbMakesThemDurable) {
  const auto lost = fl::parse(R"(
litmus unannotated-lost
init A=0
thread 0
  write A 1
  dfence
  join_strand
  load r0 A
crash 0:r0=1 & A=0
)");
  const auto evicted = fl::parse(R"(
litmus unannotated-evicted
init A=0 B=0
thread 0
  write A 1
  ofence
  store B 1
crash A=1 & B=0
)");
  for (const auto& model : fc::store_model_names()) {
    SCOPED_TRACE(model);
    EXPECT_TRUE(fl::run(lost.at(0), *fc::find_model(model)).allowed);
    EXPECT_TRUE(fl::run(evicted.at(0), *fc::find_model(model)).allowed);
  }
}

void expect_error(const std::string& text, const std::string& where, const std::string& what) {
  try {
    fl::parse(text, "t.litmus");
    ADD_FAILURE() << "parsed: " << text;
  } catch (const fl::ParseError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(where), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
}

TEST(Litmus, MalformedFilesAreRejectedWithTheirLineNumber) {
  expect_error("litmus a\ninit A=0\nthread 0\n  frob A\ncrash A=1\n", "t.litmus:4:", "unknown operation 'frob'");
  expect_error("litmus a\ninit A=0\nthread 0\n  store B 1\n", "t.litmus:4:", "unknown variable 'B'");
  expect_error("litmus a\ninit A=0\nthread 1\n", "t.litmus:3:", "numbered 0, 1, 2");
  expect_error("litmus a\ninit A=0\nthread 0\n  store A 1\ncrash A=1\nexpect tso allowed\n", "t.litmus:6:",
               "unknown model 'tso'");
  expect_error("litmus a\ninit A=0\nthread 0\n  store A 1\ncrash A=x\n", "t.litmus:5:", "bad value");
  expect_error("litmus a\ninit A=0\nthread 0\n  store A r1\n", "t.litmus:4:", "register 'r1' is read before");
  expect_error("litmus a\ninit A=0\nthread 0\n  store A 1\n", "t.litmus:1:", "no 'crash' condition");
  expect_error("init A=0\n", "t.litmus:1:", "before the first 'litmus NAME'");
  expect_error("litmus a\ninit A=0\nthread 0\n  load r0 A\ncrash 1:r0=1\n", "t.litmus:1:", "no load of that thread");
  expect_error("# nothing\n", "t.litmus", "no 'litmus NAME' test");
}

TEST(Litmus, AConditionWithAlternativesAndRegistersIsParsed) {
  const auto t = fl::parse("litmus a desc here\ninit A=0 B=5\nline A B\nthread 0\n  load r3 B\n  persist A r3\n"
                           "crash A=0/5 & 0:r3=5\nexpect x86 allowed\n");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].description, "desc here");
  ASSERT_EQ(t[0].condition.size(), 2u);
  EXPECT_EQ(t[0].condition[0].values, (std::vector<std::uint64_t>{0, 5}));
  EXPECT_EQ(t[0].condition[1].var, "0:r3");
  EXPECT_EQ(t[0].init.at("B"), 5u);
  EXPECT_TRUE(fl::run(t[0], *fc::find_model("x86")).allowed);
}

// `ferrite litmus`: 0 when every verdict is as expected, 1 on a mismatch
// (a test expecting the wrong verdict), 2 on a malformed file or bad usage.
TEST(Litmus, TheCommandExitsOnlyZeroWhenEveryVerdictMatches) {
  using ferrite::test::run_cli;
  const auto ok = run_cli("litmus " + kDir + "/fig2-cd-join.litmus " + kDir + "/mp-ofence.litmus --json");
  EXPECT_EQ(ok.code, 0) << ok.output;
  EXPECT_NE(ok.output.find("\"mismatches\": 0"), std::string::npos) << ok.output;
  EXPECT_NE(ok.output.find("\"verdict\": \"forbidden\""), std::string::npos) << ok.output;

  const std::string wrong = ::testing::TempDir() + "/ferrite-litmus-wrong.litmus";
  {
    std::ofstream f(wrong);
    f << "litmus wrong\ninit A=0 F=0\nthread 0\n  store A 1\n  ofence\n  store F 1\ncrash A=0 & F=1\n"
         "expect hops allowed\n";
  }
  const auto bad = run_cli("litmus " + wrong + " --model hops");
  EXPECT_EQ(bad.code, 1) << bad.output;
  EXPECT_NE(bad.output.find("MISMATCH: expected allowed"), std::string::npos) << bad.output;
  // With a rule dropped the expectations are not checked.
  EXPECT_EQ(run_cli("litmus " + wrong + " --model hops --drop epochs").code, 0);

  {
    std::ofstream f(wrong);
    f << "litmus broken\ninit A=0\nthread 0\n  stor A 1\n";
  }
  const auto malformed = run_cli("litmus " + wrong);
  EXPECT_EQ(malformed.code, 2);
  EXPECT_NE(malformed.output.find(":4: unknown operation 'stor'"), std::string::npos) << malformed.output;
  EXPECT_EQ(run_cli("litmus " + kDir + "/mp-ofence.litmus --model tso").code, 2);
  EXPECT_EQ(run_cli("litmus " + kDir + "/mp-ofence.litmus --model hops --drop spa").code, 2);
  EXPECT_EQ(run_cli("litmus --help").code, 0);
  std::remove(wrong.c_str());
}

}  // namespace

}  // namespace litmus_test
