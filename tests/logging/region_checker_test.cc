// The failure-atomicity checker of multi-store regions
// (crash/checker.h check_failure_atomicity, src/crash/checker_regions.cc)
// on small hand-made histories of the Array Swap semantics: it accepts the
// state after every prefix of completed regions (plus or minus the ones in
// flight, in any order real time allows), and rejects a region partly
// visible, a completed region lost, and an order real time forbids.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

#include "ferrite/crash/checker.h"

namespace region_checker_test {  // this file's names, apart in a unity build

namespace fc = ferrite::crash;

namespace {

constexpr std::int32_t kSwap = 100;

fc::RegionSpec swap_spec() {
  fc::RegionSpec s;
  s.name = "array-swap";
  s.apply = [](std::vector<std::int64_t>& st, const fc::Op& o) {
    std::swap(st[static_cast<std::size_t>(o.arg)], st[static_cast<std::size_t>(o.arg2)]);
    return fc::Response::ack();
  };
  return s;
}

fc::HistoryOp swap(int tid, std::int64_t i, std::int64_t j, std::uint64_t inv, std::uint64_t resp) {
  fc::HistoryOp h;
  h.tid = tid;
  h.op = {kSwap, i, j};
  h.invoke = inv;
  h.respond = resp;
  return h;
}

fc::CheckResult check(std::vector<fc::HistoryOp> ops, std::vector<std::int64_t> observed) {
  fc::CheckInput in;
  in.initial = {1, 2, 3, 4};
  in.ops = std::move(ops);
  in.observed = std::move(observed);
  return fc::check_failure_atomicity(in, swap_spec());
}

}  // namespace

TEST(RegionChecker, AcceptsEveryCompletedRegionWithOrWithoutTheOneInFlight) {
  const std::vector<fc::HistoryOp> h = {swap(0, 0, 1, 1, 2), swap(0, 2, 3, 3, fc::kPendingStamp)};
  EXPECT_TRUE(check(h, {2, 1, 3, 4}).ok());  // in flight: not taken
  EXPECT_TRUE(check(h, {2, 1, 4, 3}).ok());  // in flight: taken
  const auto r = check(h, {2, 1, 4, 4});  // half of the swap in flight
  EXPECT_TRUE(r.violation()) << r.reason;
  EXPECT_EQ(r.property, "failure-atomicity");
  EXPECT_EQ(r.engine, "exact-regions");
}

TEST(RegionChecker, RejectsALostCompletedRegion) {
  const auto r = check({swap(0, 0, 1, 1, 2), swap(0, 2, 3, 3, 4)}, {2, 1, 3, 4});
  EXPECT_TRUE(r.violation()) << r.reason;
}

TEST(RegionChecker, OrdersOverlappingRegionsEitherWayButRespectsRealTime) {
  // swap(0,1) and swap(1,2) do not commute: [1,2,3,4] -> [2,1,3,4] ->
  // [2,3,1,4], or -> [1,3,2,4] -> [3,1,2,4].
  const std::vector<fc::HistoryOp> overlap = {swap(0, 0, 1, 1, 4), swap(1, 1, 2, 2, 3)};
  EXPECT_TRUE(check(overlap, {2, 3, 1, 4}).ok());
  EXPECT_TRUE(check(overlap, {3, 1, 2, 4}).ok());
  // Thread 1's swap was invoked after thread 0's responded: one order only.
  const std::vector<fc::HistoryOp> ordered = {swap(0, 0, 1, 1, 2), swap(1, 1, 2, 3, 4)};
  EXPECT_TRUE(check(ordered, {2, 3, 1, 4}).ok());
  EXPECT_TRUE(check(ordered, {3, 1, 2, 4}).violation());
}

TEST(RegionChecker, RunsOutOfBudgetAsInconclusiveNeverAsAPass) {
  std::vector<fc::HistoryOp> h;
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 6; ++i) h.push_back(swap(t, (t + i) % 4, (t + 2 * i + 1) % 4, 1, 1000));
  fc::CheckInput in;
  in.initial = {1, 2, 3, 4};
  in.ops = h;
  in.observed = {9, 9, 9, 9};  // no order reaches it: the search must exhaust
  fc::CheckOptions opt;
  opt.node_budget = 50;
  const auto r = fc::check_failure_atomicity(in, swap_spec(), opt);
  EXPECT_EQ(r.verdict, fc::CheckResult::Verdict::kInconclusive) << r.reason;
}

namespace {

// The HOPS+ paper's Figure 1 as regions: state {DATA, FLAG};
// produce(v) = DATA := v; consume = FLAG := DATA.
constexpr std::int32_t kProduce = 102, kConsume = 103;

fc::RegionSpec handoff_spec() {
  fc::RegionSpec s;
  s.name = "atlas-handoff";
  s.undo_dependents = true;
  s.apply = [](std::vector<std::int64_t>& st, const fc::Op& o) {
    if (o.kind == kProduce) {
      st[0] = o.arg;
      return fc::Response::ack();
    }
    st[1] = st[0];
    return fc::Response::of(st[0]);
  };
  return s;
}

fc::HistoryOp region(int tid, std::int32_t kind, std::int64_t arg, std::uint64_t inv, std::uint64_t resp,
                     fc::Response r = fc::Response::ack()) {
  fc::HistoryOp h;
  h.tid = tid;
  h.op = {kind, arg, 0};
  h.invoke = inv;
  h.respond = resp;
  h.response = r;
  return h;
}

fc::CheckResult check_handoff(std::vector<fc::HistoryOp> ops, std::vector<std::int64_t> observed,
                              bool undo_dependents = true) {
  fc::CheckInput in;
  in.initial = {0, 0};
  in.ops = std::move(ops);
  in.observed = std::move(observed);
  auto spec = handoff_spec();
  spec.undo_dependents = undo_dependents;
  return fc::check_failure_atomicity(in, spec);
}

}  // namespace

TEST(RegionChecker, UndoesACompletedSectionWithTheIncompleteOneItReadFromUnderAtlas) {
  // Thread 0's produce(1) is in flight (it released A early); thread 1's
  // consume read DATA = 1 and completed, then thread 1 consumed again.
  const std::vector<fc::HistoryOp> h = {region(0, kProduce, 1, 1, fc::kPendingStamp),
                                        region(1, kConsume, 0, 2, 3, fc::Response::of(1)),
                                        region(1, kConsume, 0, 4, 5, fc::Response::of(1))};
  EXPECT_TRUE(check_handoff(h, {0, 0}).ok());  // ATLAS: both consumes undone with the produce
  EXPECT_TRUE(check_handoff(h, {1, 1}).ok());  // or everything kept
  // The paper's inconsistent state {FLAG=1, DATA=0}: no prefix reaches it.
  const auto r = check_handoff(h, {0, 1});
  EXPECT_TRUE(r.violation()) << r.reason;
  // Without ATLAS's undo of dependents, a completed consume is never lost.
  EXPECT_TRUE(check_handoff(h, {0, 0}, false).violation());
}

TEST(RegionChecker, NeverUndoesACompletedSectionThatNothingUndoneCouldHaveHandedALock) {
  // The produce completed before the consume was invoked, and nothing is in
  // flight: the consume must survive.
  const std::vector<fc::HistoryOp> h = {region(0, kProduce, 1, 1, 2),
                                        region(1, kConsume, 0, 3, 4, fc::Response::of(1))};
  EXPECT_TRUE(check_handoff(h, {1, 1}).ok());
  EXPECT_TRUE(check_handoff(h, {1, 0}).violation());
  EXPECT_TRUE(check_handoff(h, {0, 0}).violation());
}

namespace {

// Array Swap answering the old a[i] (as the campaigns' spec), ATLAS's undo
// of dependents on.
fc::RegionSpec atlas_swap_spec() {
  fc::RegionSpec s;
  s.name = "array-swap";
  s.undo_dependents = true;
  s.apply = [](std::vector<std::int64_t>& st, const fc::Op& o) {
    const auto i = static_cast<std::size_t>(o.arg), j = static_cast<std::size_t>(o.arg2);
    const std::int64_t old = st[i];
    std::swap(st[i], st[j]);
    return fc::Response::of(old);
  };
  return s;
}

fc::HistoryOp answered_swap(int tid, std::int64_t i, std::int64_t j, std::uint64_t inv, std::uint64_t resp,
                            std::int64_t old) {
  fc::HistoryOp h = swap(tid, i, j, inv, resp);
  h.response = fc::Response::of(old);
  return h;
}

}  // namespace

TEST(RegionChecker, UndoesACompletedSectionThroughAChainOfDependentsOfDistinctThreads) {
  // Thread 2's swap is in flight (invoked at 10); thread 1's completed swap
  // responded after that (12), so it may have acquired from it; thread 0's
  // swap responded (9) before thread 2's was invoked but after thread 1's
  // was (8): undone only through thread 1's. All three undone is ATLAS.
  const std::vector<fc::HistoryOp> h = {answered_swap(0, 0, 1, 5, 9, 1), answered_swap(1, 2, 3, 8, 12, 3),
                                        swap(2, 0, 2, 10, fc::kPendingStamp)};
  fc::CheckInput in;
  in.initial = {1, 2, 3, 4};
  in.ops = h;
  in.observed = {1, 2, 3, 4};
  EXPECT_TRUE(fc::check_failure_atomicity(in, atlas_swap_spec()).ok());
  // Thread 1's swap invoked only at 10: nothing undone could have handed
  // thread 0's swap a lock before it responded at 9.
  in.ops[1].invoke = 10;
  in.ops[1].respond = 12;
  const auto r = fc::check_failure_atomicity(in, atlas_swap_spec());
  EXPECT_TRUE(r.violation()) << r.reason;
}

TEST(RegionChecker, LongThreeThreadAtlasHistoriesStayWithinTheDefaultBudget) {
  // 3 threads x 300 overlapping swaps (each thread in its own block of the
  // array: they commute), the last of thread 0 in flight and not taken,
  // the last completed swaps of threads 1 and 2 undone with it (they
  // responded after it was invoked): the search must decide the in-flight
  // swap and the cuts near the crash without trying cuts far from it —
  // bound_cuts (checker_regions.cc). Without it this history costs a
  // number of nodes quadratic in its length (inconclusive at the default
  // budget); with it, a few per region.
  constexpr int kThreads = 3, kPer = 300;
  fc::CheckInput in;
  constexpr std::int64_t kBlock = 16;  // a permutation of 16: no prefix repeats another by chance
  in.initial.resize(kBlock * kThreads);
  for (std::size_t i = 0; i < in.initial.size(); ++i) in.initial[i] = static_cast<std::int64_t>(i + 1);
  std::vector<std::int64_t> st = in.initial;
  std::uint64_t rng = 12345;
  for (int k = 0; k < kPer; ++k) {
    for (int t = 0; t < kThreads; ++t) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      const std::int64_t i = kBlock * t + static_cast<std::int64_t>((rng >> 33) % kBlock);
      const std::int64_t j = kBlock * t + (i - kBlock * t + 1 + static_cast<std::int64_t>((rng >> 40) % (kBlock - 1))) % kBlock;  // != i
      const std::uint64_t inv = 3 * static_cast<std::uint64_t>(k) + static_cast<std::uint64_t>(t) + 1;
      const bool in_flight = t == 0 && k == kPer - 1;
      const bool undone = t != 0 && k == kPer - 1;  // responded after thread 0's last swap was invoked
      in.ops.push_back(answered_swap(t, i, j, inv, in_flight ? fc::kPendingStamp : inv + 4,
                                     st[static_cast<std::size_t>(i)]));
      if (!in_flight && !undone) std::swap(st[static_cast<std::size_t>(i)], st[static_cast<std::size_t>(j)]);
    }
  }
  in.observed = st;
  const auto r = fc::check_failure_atomicity(in, atlas_swap_spec());
  EXPECT_TRUE(r.ok()) << r.reason;
  EXPECT_LE(r.nodes, 8u * in.ops.size()) << "nodes per region";
  std::printf("[region-checker] %zu regions, 3 threads, ATLAS: %llu nodes\n", in.ops.size(),
              static_cast<unsigned long long>(r.nodes));
  // A completed swap far from the crash cannot be undone: the same history
  // with thread 1's first swap left out is a violation, found within the
  // budget.
  std::vector<std::int64_t> lost = in.initial;
  for (const auto& h : in.ops)
    if (h.completed() && !(h.tid == 1 && h.invoke == 2) && h.invoke <= 3 * (kPer - 1)) {
      const auto i = static_cast<std::size_t>(h.op.arg), j = static_cast<std::size_t>(h.op.arg2);
      std::swap(lost[i], lost[j]);
    }
  in.observed = lost;
  const auto v = fc::check_failure_atomicity(in, atlas_swap_spec());
  EXPECT_EQ(v.verdict, fc::CheckResult::Verdict::kViolation) << v.reason;
}

}  // namespace region_checker_test
