// Tests of the durability checkers: a table of hand-written histories that
// are and are not durably linearizable / detectable / buffered durably
// linearizable (every negative case must be rejected); differential tests of
// the exact engines against an independent exhaustive search on tens of
// thousands of small random histories (FERRITE_CHECKER_DIFF_CASES sets how
// many per engine and mode); campaign-sized histories (600-2,000 ops) that
// must be decided exactly — the simulated outcome accepted, injected faults
// rejected — with their cost printed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <bit>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <tuple>
#include <string>
#include <vector>

#include "ferrite/crash/checker.h"
#include "ferrite/crash/internal/checker_collections.h"

namespace checker_test {  // this file's names, apart in a unity build

namespace fc = ferrite::crash;
using fc::CheckResult;
using fc::HistoryOp;

namespace {

constexpr std::uint64_t P = fc::kPendingStamp;

HistoryOp H(int tid, std::int32_t kind, std::int64_t arg, std::uint64_t inv, std::uint64_t resp,
            std::optional<std::int64_t> value = std::nullopt, std::int64_t arg2 = 0) {
  HistoryOp h;
  h.tid = tid;
  h.seq = inv;
  h.op = {kind, arg, arg2};
  h.invoke = inv;
  h.respond = resp;
  if (value) h.response = {true, *value};
  return h;
}
std::int64_t D(double d) { return std::bit_cast<std::int64_t>(d); }

enum class Prop { kDurable, kDetect, kBuffered };

struct Case {
  const char* name;
  Prop prop;
  fc::Spec spec;
  fc::State initial;
  std::vector<HistoryOp> ops;
  fc::State observed;
  bool expect_ok;
  bool fast_catches = false;  // negative case the fast engine also rejects
  std::vector<fc::RecoveredOp> recovered = {};
  fc::State observed_after = {};
};

CheckResult check(const Case& c, fc::CheckOptions::Engine engine) {
  fc::CheckInput in{c.spec, c.initial, c.ops, c.observed, c.recovered, c.observed_after};
  fc::CheckOptions opt;
  opt.engine = engine;
  switch (c.prop) {
    case Prop::kDurable: return fc::check_durable_linearizability(in, opt);
    case Prop::kDetect: return fc::check_detectability(in, opt);
    case Prop::kBuffered: return fc::check_buffered_durable_linearizability(in, opt);
  }
  return {};
}

using S = fc::Spec;
const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      // ---------------------------------------------- durable linearizability
      {"queue: completed ops present", Prop::kDurable, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(0, fc::kEnqueue, 2, 3, 4)}, {1, 2}, true},
      {"queue: a completed op is lost", Prop::kDurable, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(0, fc::kEnqueue, 2, 3, 4)}, {1}, false, true},
      {"queue: pending op took effect", Prop::kDurable, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(0, fc::kEnqueue, 2, 3, 4), H(1, fc::kEnqueue, 3, 5, P)}, {1, 2, 3}, true},
      {"queue: pending op did not take effect", Prop::kDurable, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(0, fc::kEnqueue, 2, 3, 4), H(1, fc::kEnqueue, 3, 5, P)}, {1, 2}, true},
      {"queue: a value duplicated", Prop::kDurable, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(0, fc::kEnqueue, 2, 3, 4)}, {1, 1, 2}, false, true},
      {"queue: a value invented", Prop::kDurable, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2)}, {1, 9}, false, true},
      {"queue: a later op depends on a pending one", Prop::kDurable, S::kQueue, {},
       {H(0, fc::kEnqueue, 5, 1, P), H(1, fc::kDequeue, 0, 2, 3, 5)}, {}, true},
      {"queue: dequeued before it was enqueued (real time)", Prop::kDurable, S::kQueue, {},
       {H(1, fc::kDequeue, 0, 1, 2, 5), H(0, fc::kEnqueue, 5, 3, P)}, {}, false, true},
      {"queue: real-time order violated", Prop::kDurable, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(1, fc::kEnqueue, 2, 3, 4)}, {2, 1}, false},
      {"queue: concurrent ops may linearize either way", Prop::kDurable, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 4), H(1, fc::kEnqueue, 2, 2, 3)}, {2, 1}, true},
      {"queue: per-producer FIFO violated", Prop::kDurable, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(0, fc::kEnqueue, 2, 3, 4), H(1, fc::kDequeue, 0, 5, 6, 2)}, {1}, false, true},
      {"queue: completed response wrong", Prop::kDurable, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(0, fc::kDequeue, 0, 3, 4, 7)}, {}, false, true},
      {"queue: value lost to a pending dequeue", Prop::kDurable, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(1, fc::kDequeue, 0, 3, P)}, {}, true},
      {"stack: LIFO state", Prop::kDurable, S::kStack, {},
       {H(0, fc::kPush, 1, 1, 2), H(0, fc::kPush, 2, 3, 4)}, {2, 1}, true},
      {"stack: order inverted", Prop::kDurable, S::kStack, {},
       {H(0, fc::kPush, 1, 1, 2), H(0, fc::kPush, 2, 3, 4)}, {1, 2}, false, true},
      {"stack: popped value still present", Prop::kDurable, S::kStack, {},
       {H(0, fc::kPush, 1, 1, 2), H(0, fc::kPop, 0, 3, 4, 1)}, {1}, false, true},
      {"pq: delete_min took the minimum", Prop::kDurable, S::kPriorityQueue, {},
       {H(0, fc::kInsert, 5, 1, 2), H(0, fc::kInsert, 3, 3, 4), H(0, fc::kDeleteMin, 0, 5, 6, 3)}, {5}, true},
      {"pq: delete_min skipped the minimum", Prop::kDurable, S::kPriorityQueue, {},
       {H(0, fc::kInsert, 5, 1, 2), H(0, fc::kInsert, 3, 3, 4), H(0, fc::kDeleteMin, 0, 5, 6, 5)}, {3}, false},
      {"pq: multiset not conserved", Prop::kDurable, S::kPriorityQueue, {},
       {H(0, fc::kInsert, 5, 1, 2), H(0, fc::kInsert, 3, 3, 4)}, {3}, false, true},
      {"set: insert twice", Prop::kDurable, S::kSet, {},
       {H(0, fc::kInsert, 1, 1, 2, 1), H(1, fc::kInsert, 1, 3, 4, 0)}, {1}, true},
      {"set: both inserts claim success", Prop::kDurable, S::kSet, {},
       {H(0, fc::kInsert, 1, 1, 2, 1), H(1, fc::kInsert, 1, 3, 4, 1)}, {1}, false},
      {"set: completed remove undone", Prop::kDurable, S::kSet, {1},
       {H(0, fc::kRemove, 1, 1, 2, 1)}, {1}, false},
      {"map: put overwrites", Prop::kDurable, S::kMap, {},
       {H(0, fc::kPut, 1, 1, 2, std::nullopt, 10), H(0, fc::kPut, 1, 3, 4, 10, 20)}, {1, 20}, true},
      {"map: old value resurrected", Prop::kDurable, S::kMap, {},
       {H(0, fc::kPut, 1, 1, 2, std::nullopt, 10), H(0, fc::kPut, 1, 3, 4, 10, 20)}, {1, 10}, false},
      {"register: pending multiply applied", Prop::kDurable, S::kRegister, {D(1.0)},
       {H(0, fc::kMul, D(2.0), 1, 2, D(1.0)), H(1, fc::kMul, D(3.0), 3, P)}, {D(6.0)}, true},
      {"register: completed multiply lost", Prop::kDurable, S::kRegister, {D(1.0)},
       {H(0, fc::kMul, D(2.0), 1, 2, D(1.0)), H(1, fc::kMul, D(3.0), 3, P)}, {D(3.0)}, false},
      {"log: appends in order", Prop::kDurable, S::kLog, {},
       {H(0, fc::kAppend, 7, 1, 2, 0), H(0, fc::kAppend, 8, 3, 4, 1)}, {7, 8}, true},
      {"log: appends reordered", Prop::kDurable, S::kLog, {},
       {H(0, fc::kAppend, 7, 1, 2, 0), H(0, fc::kAppend, 8, 3, 4, 1)}, {8, 7}, false, true},
      {"log: garbage record", Prop::kDurable, S::kLog, {},
       {H(0, fc::kAppend, 7, 1, 2, 0), H(0, fc::kAppend, 8, 3, P)}, {7, 0}, false, true},
      // --------------------------------------------------------- detectability
      {"detect: pending enqueue completed by recovery", Prop::kDetect, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(1, fc::kEnqueue, 3, 3, P)}, {1}, true, false, {{1, {}}}, {1, 3}},
      {"detect: pending enqueue had taken effect", Prop::kDetect, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(1, fc::kEnqueue, 3, 3, P)}, {1, 3}, true, false, {{1, {}}}, {1, 3}},
      {"detect: recovery re-executed an op that took effect", Prop::kDetect, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(1, fc::kEnqueue, 3, 3, P)}, {1, 3}, false, true, {{1, {}}}, {1, 3, 3}},
      {"detect: recovery claims completion but did nothing", Prop::kDetect, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(1, fc::kEnqueue, 3, 3, P)}, {1}, false, false, {{1, {}}}, {1}},
      {"detect: pending dequeue answered correctly", Prop::kDetect, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(0, fc::kEnqueue, 2, 3, 4), H(1, fc::kDequeue, 0, 5, P)}, {2}, true, false,
       {{2, {true, 1}}}, {2}},
      {"detect: pending dequeue answered wrongly", Prop::kDetect, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(0, fc::kEnqueue, 2, 3, 4), H(1, fc::kDequeue, 0, 5, P)}, {2}, false, true,
       {{2, {true, 2}}}, {2}},
      {"detect: register multiply recovered", Prop::kDetect, S::kRegister, {D(1.0)},
       {H(0, fc::kMul, D(2.0), 1, 2, D(1.0)), H(1, fc::kMul, D(3.0), 3, P)}, {D(2.0)}, true, false,
       {{1, {true, D(2.0)}}}, {D(6.0)}},
      {"detect: register multiply answers a stale old value", Prop::kDetect, S::kRegister, {D(1.0)},
       {H(0, fc::kMul, D(2.0), 1, 2, D(1.0)), H(1, fc::kMul, D(3.0), 3, P)}, {D(6.0)}, false, false,
       {{1, {true, D(1.0)}}}, {D(6.0)}},
      {"detect: log append index", Prop::kDetect, S::kLog, {},
       {H(0, fc::kAppend, 7, 1, 2, 0), H(1, fc::kAppend, 8, 3, P)}, {7, 8}, true, false, {{1, {true, 1}}}, {7, 8}},
      {"detect: log append appended twice", Prop::kDetect, S::kLog, {},
       {H(0, fc::kAppend, 7, 1, 2, 0), H(1, fc::kAppend, 8, 3, P)}, {7, 8}, false, true, {{1, {true, 2}}}, {7, 8, 8}},
      // ------------------------------------- buffered durable linearizability
      {"bdl: ops after the last sync lost", Prop::kBuffered, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(0, fc::kSync, 0, 3, 4), H(0, fc::kEnqueue, 2, 5, 6)}, {1}, true},
      {"bdl: everything kept", Prop::kBuffered, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(0, fc::kSync, 0, 3, 4), H(0, fc::kEnqueue, 2, 5, 6)}, {1, 2}, true},
      {"bdl: op before the sync lost", Prop::kBuffered, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(0, fc::kSync, 0, 3, 4), H(0, fc::kEnqueue, 2, 5, 6)}, {}, false},
      {"bdl: prefix not real-time consistent", Prop::kBuffered, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(0, fc::kEnqueue, 2, 3, 4), H(0, fc::kSync, 0, 5, 6), H(1, fc::kEnqueue, 3, 7, 8),
        H(1, fc::kEnqueue, 4, 9, 10)},
       {1, 2, 4}, false},
      {"bdl: no sync, everything may be lost", Prop::kBuffered, S::kStack, {},
       {H(0, fc::kPush, 1, 1, 2), H(0, fc::kPush, 2, 3, 4)}, {}, true},
      {"bdl: op completed while the sync ran may be lost (bound = sync invocation)", Prop::kBuffered, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(1, fc::kEnqueue, 2, 3, 6), H(0, fc::kSync, 0, 4, 7)}, {1}, true},
      {"bdl: op completed before the sync was invoked lost", Prop::kBuffered, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(1, fc::kEnqueue, 2, 3, 6), H(0, fc::kSync, 0, 4, 7)}, {2}, false},
      {"bdl: dequeue response depends on a lost enqueue", Prop::kBuffered, S::kQueue, {},
       {H(0, fc::kEnqueue, 1, 1, 2), H(1, fc::kDequeue, 0, 3, 4, 1), H(1, fc::kSync, 0, 5, 6)}, {1}, false},
  };
  return all;
}

TEST(Checker, TableExact) {
  int negatives = 0;
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    auto r = check(c, fc::CheckOptions::Engine::kExact);
    // Sets and maps are searched key by key ("exact-per-key"), the rest whole.
    EXPECT_EQ(r.engine, c.spec == S::kSet || c.spec == S::kMap ? "exact-per-key" : "exact");
    if (c.expect_ok) {
      EXPECT_TRUE(r.ok()) << r.reason;
    } else {
      ++negatives;
      EXPECT_TRUE(r.violation()) << "verdict " << static_cast<int>(r.verdict) << " " << r.reason;
      EXPECT_FALSE(r.reason.empty());
    }
  }
  EXPECT_GE(negatives, 20);
}

TEST(Checker, TableFastNeverRejectsPositivesAndCatchesMarkedNegatives) {
  for (const auto& c : cases()) {
    if (c.prop == Prop::kBuffered) continue;
    if (c.spec != S::kQueue && c.spec != S::kStack && c.spec != S::kPriorityQueue && c.spec != S::kLog) continue;
    SCOPED_TRACE(c.name);
    auto r = check(c, fc::CheckOptions::Engine::kFast);
    EXPECT_EQ(r.engine.rfind("fast-", 0), 0u) << r.engine;
    if (c.expect_ok) {
      EXPECT_TRUE(r.ok()) << r.reason;
    } else if (c.fast_catches) {
      EXPECT_TRUE(r.violation()) << "fast engine missed it";
    }
  }
}

// A long sequential queue history (3,000 ops): decided by the exact queue
// engine — never by the fast necessary conditions — which accepts the
// correct state and rejects a lost value and a duplicated one.
TEST(Checker, LongHistoriesAreDecidedExactly) {
  fc::CheckInput in;
  in.spec = S::kQueue;
  std::uint64_t t = 1;
  std::int64_t next = 1, head = 1;
  for (int i = 0; i < 3000; ++i) {
    if (i % 3 == 2) {
      in.ops.push_back(H(1, fc::kDequeue, 0, t, t + 1, head++));
    } else {
      in.ops.push_back(H(i % 2, fc::kEnqueue, next++, t, t + 1));
    }
    t += 2;
  }
  for (auto v = head; v < next; ++v) in.observed.push_back(v);
  fc::CheckOptions opt;
  opt.exact_max_ops = 100;  // no longer routes anything to a fast check
  auto ok = fc::check_durable_linearizability(in, opt);
  EXPECT_TRUE(ok.ok()) << ok.reason;
  EXPECT_EQ(ok.engine, "exact-queue");
  auto lost = in;
  lost.observed.erase(lost.observed.begin() + 5);
  EXPECT_TRUE(fc::check_durable_linearizability(lost, opt).violation());
  auto dup = in;
  dup.observed.push_back(dup.observed.front());
  EXPECT_TRUE(fc::check_durable_linearizability(dup, opt).violation());
  // Two values swapped: the per-producer fast check cannot see it (the two
  // values come from different producers); the exact engine does.
  std::map<std::int64_t, int> producer;
  for (const auto& h : in.ops)
    if (h.op.kind == fc::kEnqueue) producer[h.op.arg] = h.tid;
  std::size_t k = 10;
  while (producer[in.observed[k]] == producer[in.observed[k + 1]]) ++k;
  auto swapped = in;
  std::swap(swapped.observed[k], swapped.observed[k + 1]);
  auto sw = fc::check_durable_linearizability(swapped, opt);
  EXPECT_TRUE(sw.violation()) << sw.reason;
  EXPECT_EQ(sw.engine, "exact-queue");
  fc::CheckOptions fast;
  fast.engine = fc::CheckOptions::Engine::kFast;
  EXPECT_TRUE(fc::check_durable_linearizability(swapped, fast).ok()) << "the pre-filter alone would pass it silently";
}

// 24 concurrent pending enqueues, half of which took effect in an order no
// naive search finds quickly: the generic search runs out of its budget and
// says so (inconclusive, never a pass); the exact queue engine decides it.
// A set (generic search per key) is decided key by key; one key whose search
// cannot finish within the budget stays inconclusive.
TEST(Checker, BudgetExhaustionIsInconclusiveNeverAPass) {
  fc::CheckInput in;
  in.spec = S::kQueue;
  for (int i = 0; i < 24; ++i) in.ops.push_back(H(i, fc::kEnqueue, i + 1, static_cast<std::uint64_t>(i + 1), P));
  in.observed = {};
  for (int i = 24; i > 0; i -= 2) in.observed.push_back(i);  // an order no search finds quickly
  fc::CheckOptions opt;
  opt.node_budget = 1000;
  auto r = fc::check_durable_linearizability(in, opt);
  EXPECT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.engine, "exact-queue");
  opt.engine = fc::CheckOptions::Engine::kExact;
  auto g = fc::check_durable_linearizability(in, opt);
  EXPECT_EQ(g.verdict, CheckResult::Verdict::kInconclusive) << g.reason;
  EXPECT_NE(g.reason.find("budget"), std::string::npos) << g.reason;
  EXPECT_EQ(g.engine, "exact");
  opt.engine = fc::CheckOptions::Engine::kAuto;
  in.spec = S::kSet;
  for (auto& h : in.ops) h.op.kind = fc::kInsert;
  std::sort(in.observed.begin(), in.observed.end());
  in.observed.push_back(1000);  // invented: no op touches key 1000
  auto s = fc::check_durable_linearizability(in, opt);
  // Key by key, the invented key is decided exactly (it used to exhaust the
  // whole-history search).
  EXPECT_TRUE(s.violation()) << s.reason;
  EXPECT_NE(s.reason.find("key 1000:"), std::string::npos) << s.reason;
  // One key whose search cannot finish within the budget: 24 overlapping
  // inserts that all claim to have added the key (only one can have).
  fc::CheckInput one;
  one.spec = S::kSet;
  for (int i = 0; i < 24; ++i) one.ops.push_back(H(i, fc::kInsert, 1, static_cast<std::uint64_t>(i + 1), 100, 1));
  one.observed = {1};
  opt.node_budget = 10;  // fewer nodes than the 24 first choices
  auto t = fc::check_durable_linearizability(one, opt);
  EXPECT_EQ(t.verdict, CheckResult::Verdict::kInconclusive) << t.reason;
  EXPECT_NE(t.reason.find("key 1:"), std::string::npos) << t.reason;
}

TEST(Checker, SpecRejectsForeignOps) {
  fc::State st;
  EXPECT_THROW(fc::spec_apply(S::kQueue, st, {fc::kPush, 1, 0}), std::invalid_argument);
  fc::CheckInput in;
  in.spec = S::kQueue;
  in.ops.push_back(H(0, fc::kPush, 1, 1, 2));
  EXPECT_THROW(fc::check_durable_linearizability(in), std::invalid_argument);
}

// Sets and maps are checked key by key (linearizability is local): a
// 2,000-operation history over 64 keys, far beyond the whole-history exact
// engine (400 ops) and with no fast check for sets/maps, is decided exactly,
// never inconclusive — and a lost completed operation on one key is caught
// and named.
struct KeyedHistory {
  fc::CheckInput in;
};
KeyedHistory keyed_history(fc::Spec spec, int n_ops, std::uint64_t seed) {
  KeyedHistory h;
  h.in.spec = spec;
  fc::State st;
  std::uint64_t rng = seed;
  auto next = [&] {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return rng >> 33;
  };
  for (int i = 0; i < n_ops; ++i) {
    const auto r = next();
    const std::int64_t key = static_cast<std::int64_t>(r % 64) + 1;
    fc::Op op;
    if (spec == fc::Spec::kSet) {
      const std::int32_t kinds[] = {fc::kInsert, fc::kRemove, fc::kContains};
      op = {kinds[(r >> 8) % 3], key, 0};
    } else {
      const std::int32_t kinds[] = {fc::kPut, fc::kErase, fc::kGet};
      op = {kinds[(r >> 8) % 3], key, static_cast<std::int64_t>(i + 1000)};
    }
    HistoryOp ho;
    ho.tid = static_cast<int>(r >> 20) % 4;
    ho.op = op;
    // Overlapping intervals of 3 consecutive ops (concurrency), applied in
    // invocation order so that order is a valid linearization.
    ho.invoke = static_cast<std::uint64_t>(2 * i + 1);
    ho.respond = static_cast<std::uint64_t>(2 * i + 6);
    ho.response = fc::spec_apply(spec, st, op);
    h.in.ops.push_back(ho);
  }
  h.in.observed = st;
  return h;
}

TEST(Checker, SetHistoriesAreCheckedExactlyKeyByKey) {
  auto h = keyed_history(fc::Spec::kSet, 2000, 7);
  auto ok = fc::check_durable_linearizability(h.in);
  EXPECT_TRUE(ok.ok()) << ok.reason;
  EXPECT_EQ(ok.engine, "exact-per-key");
  // A completed insert of a key that ends present is lost.
  ASSERT_FALSE(h.in.observed.empty());
  const auto lost = h.in.observed.front();
  h.in.observed.erase(h.in.observed.begin());
  auto bad = fc::check_durable_linearizability(h.in);
  EXPECT_TRUE(bad.violation());
  EXPECT_NE(bad.reason.find("key " + std::to_string(lost) + ":"), std::string::npos) << bad.reason;
}

TEST(Checker, MapHistoriesAreCheckedExactlyKeyByKeyWithDetectability) {
  auto h = keyed_history(fc::Spec::kMap, 2000, 11);
  EXPECT_TRUE(fc::check_durable_linearizability(h.in).ok());
  // A pending put that recovery completed: detectable, and its answer must
  // agree with the state before it.
  fc::State before = h.in.observed;
  HistoryOp pend;
  pend.tid = 1;
  pend.op = {fc::kPut, 5, 999999};
  pend.invoke = 100000;
  h.in.ops.push_back(pend);
  fc::State after = before;
  const fc::Response answer = fc::spec_apply(fc::Spec::kMap, after, pend.op);
  h.in.recovered = {{h.in.ops.size() - 1, answer}};
  h.in.observed_after = after;
  auto ok = fc::check_detectability(h.in);
  EXPECT_TRUE(ok.ok()) << ok.reason;
  EXPECT_EQ(ok.engine, "exact-per-key");
  // A wrong answer for it (as if the key held another value) is caught.
  h.in.recovered = {{h.in.ops.size() - 1, fc::Response{true, 424242}}};
  EXPECT_TRUE(fc::check_detectability(h.in).violation());
}

TEST(Checker, BufferedSetHistoriesAreNotSplitByKey) {
  // The buffered prefix is global (closed under real-time order across keys):
  // key 2's insert completed after key 1's, so keeping 2 without 1 is no
  // prefix — a per-key check would wrongly accept it.
  fc::CheckInput in;
  in.spec = fc::Spec::kSet;
  in.ops = {H(0, fc::kInsert, 1, 1, 2, 1), H(0, fc::kInsert, 2, 3, 4, 1)};
  in.observed = {2};
  EXPECT_TRUE(fc::check_buffered_durable_linearizability(in).violation());
}

// The polynomial engines' own budget: candidate resolutions of the pending
// operations. Three values must have been taken by three pending dequeues
// (3! assignments), and every assignment fails (an empty dequeue completed
// while all three were queued): a violation with the default budget,
// inconclusive — never a pass — with a budget of two.
TEST(Checker, CollectionEngineBudgetIsInconclusiveNeverAPass) {
  fc::CheckInput in;
  in.spec = S::kQueue;
  in.ops = {H(0, fc::kEnqueue, 1, 1, 2), H(0, fc::kEnqueue, 2, 3, 4), H(0, fc::kEnqueue, 3, 5, 6),
            H(1, fc::kDequeue, 0, 7, 8), H(1, fc::kDequeue, 0, 9, P), H(2, fc::kDequeue, 0, 10, P),
            H(3, fc::kDequeue, 0, 11, P)};
  auto r = fc::check_durable_linearizability(in);
  EXPECT_TRUE(r.violation()) << r.reason;
  EXPECT_EQ(r.engine, "exact-queue");
  fc::CheckOptions opt;
  opt.node_budget = 2;
  auto t = fc::check_durable_linearizability(in, opt);
  EXPECT_EQ(t.verdict, CheckResult::Verdict::kInconclusive) << t.reason;
  EXPECT_EQ(t.engine, "exact-queue");
  // Without the empty dequeue, one of the assignments works.
  in.ops.erase(in.ops.begin() + 3);
  EXPECT_TRUE(fc::check_durable_linearizability(in, opt).ok());
}

// Values not unique: the polynomial engines do not apply; the generic search
// decides, and says so.
TEST(Checker, NonUniqueValuesUseTheGenericSearch) {
  fc::CheckInput in;
  in.spec = S::kStack;
  in.ops = {H(0, fc::kPush, 7, 1, 2), H(1, fc::kPush, 7, 3, 4), H(0, fc::kPop, 0, 5, 6, 7)};
  in.observed = {7};
  auto r = fc::check_durable_linearizability(in);
  EXPECT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.engine, "exact (values not unique)");
  in.observed = {7, 7};
  EXPECT_TRUE(fc::check_durable_linearizability(in).violation());
}

// Hand-made corner cases of the exact engines (each found necessary by
// mutation testing: disabling the check it exercises makes it pass).
TEST(Checker, ExactQueueEmptyDequeueCornerCases) {
  // c is enqueued before the empty dequeue z began, so it is dequeued before
  // z; v's enqueue completed before c's dequeue began, so v is in the queue
  // when c leaves, and v is dequeued only after z returned: z cannot find
  // the queue empty — though no two operations order each other cyclically.
  fc::CheckInput in;
  in.spec = S::kQueue;
  in.ops = {H(0, fc::kEnqueue, 1, 1, 2), H(1, fc::kEnqueue, 2, 3, 7), H(2, fc::kDequeue, 0, 8, 14, 1),
            H(3, fc::kDequeue, 0, 6, 12), H(4, fc::kDequeue, 0, 13, 15, 2)};
  auto r = fc::check_durable_linearizability(in);
  EXPECT_TRUE(r.violation()) << r.reason;
  EXPECT_EQ(r.engine, "exact-queue");
  fc::CheckOptions exact;
  exact.engine = fc::CheckOptions::Engine::kExact;
  EXPECT_TRUE(fc::check_durable_linearizability(in, exact).violation());
  // If v's dequeue may start before z ends, v can leave first: fine.
  in.ops[4].invoke = 11;
  EXPECT_TRUE(fc::check_durable_linearizability(in).ok());
  EXPECT_TRUE(fc::check_durable_linearizability(in, exact).ok());
}

// ===================================================== differential tests
//
// The exact queue / stack / priority-queue engines (crash/internal/
// checker_collections.h) must agree exactly with exhaustive search on small
// histories, for durable linearizability and detectability. Histories come
// from a simulation: threads invoke operations, each takes effect at a
// random point inside its interval (applied to a sequential state), and a
// crash cuts the run at a random event (operations invoked and not answered
// are pending; those past their linearization point took effect). The
// recovered state is the simulated one (correct) or a corrupted one;
// detectability answers come from the simulation (pending ops that had not
// taken effect are run after the crash in a random recover order) or are
// corrupted.

// An independent reference: depth-first search over subsets of linearized
// operations (bitmask, n <= 24), memoized on (subset, state). Same semantics
// as crash/checker.h states them, written from scratch.
class Reference {
 public:
  // buffered: only the operations completed before the last completed sync
  // was invoked are required (buffered durable linearizability).
  Reference(const fc::CheckInput& in, bool detect, bool buffered = false) : in_(in), detect_(detect) {
    n_ = in.ops.size();
    preds_.assign(n_, 0);
    answers_.assign(n_, std::nullopt);
    std::uint64_t bound = 0;
    for (const auto& h : in.ops)
      if (h.completed() && h.op.kind == fc::kSync) bound = std::max(bound, h.invoke);
    for (std::size_t i = 0; i < n_; ++i) {
      if (in.ops[i].completed() && (!buffered || in.ops[i].respond < bound)) required_ |= 1u << i;
      for (std::size_t j = 0; j < n_; ++j)
        if (j != i && in.ops[j].completed() && in.ops[j].respond < in.ops[i].invoke) preds_[i] |= 1u << j;
    }
    if (detect)
      for (const auto& r : in.recovered) answers_[r.index] = r.response;
  }
  bool linearizable() { return dfs(0, in_.initial); }

 private:
  bool goal(std::uint32_t mask, const fc::State& st) const {
    if (st != in_.observed) return false;
    if (!detect_) return true;
    fc::State after = st;
    for (const auto& r : in_.recovered) {
      if (mask >> r.index & 1) continue;
      if (!(fc::spec_apply(in_.spec, after, in_.ops[r.index].op) == r.response)) return false;
    }
    return after == in_.observed_after;
  }
  bool dfs(std::uint32_t mask, const fc::State& st) {
    if (!seen_.insert({mask, st}).second) return false;
    if ((mask & required_) == required_ && goal(mask, st)) return true;
    for (std::size_t i = 0; i < n_; ++i) {
      if (mask >> i & 1 || (preds_[i] & ~mask)) continue;
      fc::State next = st;
      const fc::Response r = fc::spec_apply(in_.spec, next, in_.ops[i].op);
      if (in_.ops[i].completed() && !(r == in_.ops[i].response)) continue;
      if (answers_[i] && !(r == *answers_[i])) continue;
      if (dfs(mask | 1u << i, next)) return true;
    }
    return false;
  }
  const fc::CheckInput& in_;
  bool detect_;
  std::size_t n_;
  std::uint32_t required_ = 0;
  std::vector<std::uint32_t> preds_;
  std::vector<std::optional<fc::Response>> answers_;
  std::set<std::pair<std::uint32_t, fc::State>> seen_;
};

struct Simulated {
  fc::CheckInput in;
  std::vector<std::size_t> lin_order;       // per op: its rank among linearization points
  std::vector<char> took_effect;            // per op
  std::vector<fc::Response> actual;         // per op: the response at its linearization point
  std::vector<std::size_t> pending;         // op indices
};

// Simulates `threads` threads running `per_thread` ops each, interleaved at
// random, each op taking effect at a random point inside its interval;
// stops after `stop_after` events (invocations, linearization points,
// responses) — the crash. `last_inserts`: every thread's last op inserts;
// `vary_speed`: threads run at random relative speeds; `stop_at_ops`: crash
// a few events after the history holds that many operations.
Simulated simulate(fc::Spec spec, int threads, int per_thread, std::mt19937_64& rng, std::size_t stop_after,
                   double insert_share = 0.5, std::size_t initial = 0, bool last_inserts = false,
                   bool vary_speed = true, std::size_t stop_at_ops = 0, double sync_share = 0) {
  Simulated s;
  s.in.spec = spec;
  std::int64_t counter = 1;
  auto fresh = [&] {
    const std::int64_t c = counter++;
    // Unique, not in insertion order for the priority queue.
    return spec == fc::Spec::kPriorityQueue ? (c * 7919) % 1000003 + 1 : c;
  };
  const std::int32_t ins = spec == fc::Spec::kQueue ? fc::kEnqueue : spec == fc::Spec::kStack ? fc::kPush : fc::kInsert;
  const std::int32_t rem = spec == fc::Spec::kQueue ? fc::kDequeue : spec == fc::Spec::kStack ? fc::kPop : fc::kDeleteMin;
  fc::State state;
  for (std::size_t i = 0; i < initial; ++i) fc::spec_apply(spec, state, {ins, fresh(), 0});
  s.in.initial = state;
  std::uniform_real_distribution<double> u(0, 1);
  struct Thread {
    std::vector<fc::Op> ops;
    std::size_t next = 0;
    long cur = -1;
    bool lin = false;
  };
  std::vector<Thread> th(static_cast<std::size_t>(threads));
  // The other specs (for the generic engine's differential test): small key
  // ranges so operations meet.
  auto other_op = [&]() -> fc::Op {
    const auto r = rng();
    const std::int64_t key = static_cast<std::int64_t>(r % 3) + 1;
    switch (spec) {
      case fc::Spec::kSet: {
        const std::int32_t k[] = {fc::kInsert, fc::kRemove, fc::kContains};
        return {k[(r >> 8) % 3], key, 0};
      }
      case fc::Spec::kMap: {
        const std::int32_t k[] = {fc::kPut, fc::kErase, fc::kGet};
        return {k[(r >> 8) % 3], key, fresh()};
      }
      case fc::Spec::kRegister: {
        const double f[] = {2.0, 0.5, 3.0};
        if ((r >> 8) % 4 == 0) return {fc::kRead, 0, 0};
        return {fc::kMul, std::bit_cast<std::int64_t>(f[(r >> 12) % 3]), 0};
      }
      default: return {fc::kAppend, fresh(), 0};
    }
  };
  const bool collection = spec == fc::Spec::kQueue || spec == fc::Spec::kStack || spec == fc::Spec::kPriorityQueue;
  if (spec == fc::Spec::kRegister) {
    state = {std::bit_cast<std::int64_t>(1.0)};
    s.in.initial = state;
  }
  for (auto& t : th)
    for (int i = 0; i < per_thread; ++i) {
      const bool insert = u(rng) < insert_share || (last_inserts && i == per_thread - 1);
      if (sync_share > 0 && u(rng) < sync_share) {
        t.ops.push_back({fc::kSync, 0, 0});
      } else if (!collection) {
        t.ops.push_back(other_op());
      } else if (insert) {
        t.ops.push_back({ins, fresh(), 0});
      } else if (spec == fc::Spec::kPriorityQueue && u(rng) < 0.3) {
        t.ops.push_back({fc::kGetMin, 0, 0});
      } else {
        t.ops.push_back({rem, 0, 0});
      }
    }
  // Threads run at different speeds (a slow thread's operations overlap
  // many of the others').
  std::vector<unsigned> speed(th.size(), 4);
  if (vary_speed)
    for (auto& w : speed) w = 1 + static_cast<unsigned>(rng() % 8);
  std::uint64_t clock = 0;
  std::size_t lin_count = 0;
  for (std::size_t step = 0; step < stop_after; ++step) {
    // Crash shortly after the history holds stop_at_ops operations, every
    // thread still running (several operations pending).
    if (stop_at_ops && s.in.ops.size() >= stop_at_ops && stop_after > step + 3) stop_after = step + rng() % 3;
    std::vector<std::size_t> live;
    for (std::size_t t = 0; t < th.size(); ++t)
      if (th[t].cur >= 0 || th[t].next < th[t].ops.size())
        for (unsigned w = 0; w < speed[t]; ++w) live.push_back(t);
    if (live.empty()) break;
    const std::size_t t = live[rng() % live.size()];
    Thread& T = th[t];
    if (T.cur < 0) {
      HistoryOp h;
      h.tid = static_cast<int>(t);
      h.seq = T.next;
      h.op = T.ops[T.next];
      h.invoke = ++clock;
      T.cur = static_cast<long>(s.in.ops.size());
      s.in.ops.push_back(h);
      s.took_effect.push_back(0);
      s.actual.push_back({});
      s.lin_order.push_back(0);
    } else if (!T.lin) {
      const auto i = static_cast<std::size_t>(T.cur);
      s.actual[i] = fc::spec_apply(spec, state, s.in.ops[i].op);
      s.took_effect[i] = 1;
      s.lin_order[i] = lin_count++;
      T.lin = true;
    } else {
      const auto i = static_cast<std::size_t>(T.cur);
      s.in.ops[i].respond = ++clock;
      s.in.ops[i].response = s.actual[i];
      T.cur = -1;
      T.lin = false;
      ++T.next;
    }
  }
  for (std::size_t i = 0; i < s.in.ops.size(); ++i)
    if (!s.in.ops[i].completed()) s.pending.push_back(i);
  s.in.observed = state;
  return s;
}

// Detectability: recover_op answers in a random call order; pending ops that
// had not taken effect run after the crash.
void recover(Simulated& s, std::mt19937_64& rng) {
  std::vector<std::size_t> order = s.pending;
  std::shuffle(order.begin(), order.end(), rng);
  fc::State after = s.in.observed;
  s.in.recovered.clear();
  for (std::size_t i : order) {
    const fc::Response r = s.took_effect[i] ? s.actual[i] : fc::spec_apply(s.in.spec, after, s.in.ops[i].op);
    s.in.recovered.push_back({i, r});
  }
  s.in.observed_after = after;
}

std::vector<std::int64_t> inserted_values(const fc::CheckInput& in) {
  std::vector<std::int64_t> v(in.initial.begin(), in.initial.end());
  for (const auto& h : in.ops)
    if (h.op.kind == fc::kEnqueue || h.op.kind == fc::kPush || h.op.kind == fc::kInsert) v.push_back(h.op.arg);
  return v;
}

void corrupt_state(fc::State& st, const fc::CheckInput& in, std::mt19937_64& rng) {
  const auto values = inserted_values(in);
  auto pick = [&] { return values.empty() ? std::int64_t{424242} : values[rng() % values.size()]; };
  switch (rng() % 6) {
    case 0:
      if (!st.empty()) st.erase(st.begin() + static_cast<std::ptrdiff_t>(rng() % st.size()));
      break;
    case 1:
      if (st.size() >= 2) std::swap(st[rng() % st.size()], st[rng() % st.size()]);
      break;
    case 2: {
      const auto v = pick();
      if (std::find(st.begin(), st.end(), v) == st.end())
        st.insert(st.begin() + static_cast<std::ptrdiff_t>(rng() % (st.size() + 1)), v);
      break;
    }
    case 3:
      if (!st.empty()) st.push_back(st[rng() % st.size()]);
      break;
    case 4: {
      // A random subset of the inserted values, in random order.
      st.clear();
      for (auto v : values)
        if (rng() % 3 == 0) st.push_back(v);
      std::shuffle(st.begin(), st.end(), rng);
      break;
    }
    default:
      std::reverse(st.begin(), st.end());
      break;
  }
  if (in.spec == fc::Spec::kPriorityQueue && rng() % 4 != 0) std::sort(st.begin(), st.end());
}

void corrupt_answers(fc::CheckInput& in, std::mt19937_64& rng) {
  if (in.recovered.empty()) return;
  auto& r = in.recovered[rng() % in.recovered.size()];
  const auto values = inserted_values(in);
  switch (rng() % 3) {
    case 0: r.response = {}; break;
    case 1: r.response = {true, values.empty() ? 7 : values[rng() % values.size()]}; break;
    default:
      if (!in.observed_after.empty()) r.response = {true, in.observed_after[rng() % in.observed_after.size()]};
      break;
  }
}

// Changes what completed operations returned: two removals swap their
// values, a removal returns empty, or returns another inserted value.
void corrupt_responses(fc::CheckInput& in, std::mt19937_64& rng) {
  std::vector<std::size_t> rems;
  for (std::size_t i = 0; i < in.ops.size(); ++i) {
    const auto k = in.ops[i].op.kind;
    if (in.ops[i].completed() && (k == fc::kDequeue || k == fc::kPop || k == fc::kDeleteMin || k == fc::kGetMin))
      rems.push_back(i);
  }
  if (rems.empty()) {
    // Any other spec: flip some completed operation's response.
    std::vector<std::size_t> done;
    for (std::size_t i = 0; i < in.ops.size(); ++i)
      if (in.ops[i].completed()) done.push_back(i);
    if (!done.empty()) {
      auto& r = in.ops[done[rng() % done.size()]].response;
      r = rng() % 2 ? fc::Response{!r.has_value, r.value} : fc::Response{r.has_value, r.value ^ 1};
    }
    return;
  }
  const auto values = inserted_values(in);
  auto& a = in.ops[rems[rng() % rems.size()]];
  switch (rng() % 3) {
    case 0: std::swap(a.response, in.ops[rems[rng() % rems.size()]].response); break;
    case 1: a.response = {}; break;
    default:
      if (!values.empty()) a.response = {true, values[rng() % values.size()]};
      break;
  }
}

// Moves one or two operations in time (any interval, threads ignored: the
// engines and the reference take arbitrary interval orders), making real-time
// order stricter or looser than the simulated run's.
void corrupt_timing(fc::CheckInput& in, std::mt19937_64& rng) {
  std::uint64_t top = 1;
  for (auto& h : in.ops) {
    h.invoke *= 4;
    if (h.completed()) h.respond *= 4;
    top = std::max(top, h.completed() ? h.respond : h.invoke);
  }
  const int moves = 1 + static_cast<int>(rng() % 2);
  for (int m = 0; m < moves && !in.ops.empty(); ++m) {
    auto& h = in.ops[rng() % in.ops.size()];
    std::uint64_t a = 1 + rng() % (top + 4), b = 1 + rng() % (top + 4);
    if (a > b) std::swap(a, b);
    if (a == b) ++b;
    h.invoke = a;
    if (h.completed()) h.respond = b;
  }
}

struct Tally {
  int ok = 0, bad = 0;
};

// One random small case: the reference, the generic engine, the collection
// engine alone (no pre-filter), and the full kAuto path must all agree; the
// fast pre-filter must never reject what the reference accepts.

// A differential case, for failure messages: the history, the recovered
// state(s) and the reference verdict. `soup`: values need not be unique
// and no thread ids are shown.
std::string describe_input(fc::Spec spec, const fc::CheckInput& in, bool detect, bool expect, bool soup) {
  std::string d = std::string(fc::spec_name(spec)) + (detect ? " detect" : " durable") +
                  (soup ? " (soup)\n" : " initial " + fc::format_state(in.initial) + "\n");
  for (const auto& h : in.ops)
    d += "  " + (soup ? std::string() : "t" + std::to_string(h.tid) + " ") + fc::format_op(h.op) + " [" +
         std::to_string(h.invoke) + "," +
         (h.completed() ? std::to_string(h.respond) + "] -> " + fc::format_response(h.response) : "pending]") + "\n";
  d += "  observed " + fc::format_state(in.observed, 64);
  if (detect) {
    d += " recovered";
    for (const auto& r : in.recovered) d += " #" + std::to_string(r.index) + "=" + fc::format_response(r.response);
    d += " after " + fc::format_state(in.observed_after, 64);
  }
  return d + "\n  reference: " + (expect ? "ok" : "violation");
}

void differential_case(fc::Spec spec, bool detect, std::mt19937_64& rng, Tally& tally) {
  const int threads = 1 + static_cast<int>(rng() % 4);
  const int total = 6 + static_cast<int>(rng() % 9);
  const int per = std::max(1, total / threads);
  const std::size_t events = static_cast<std::size_t>(3 * per * threads);
  const std::size_t stop = rng() % 4 == 0 ? events : rng() % (events + 1);
  const std::size_t initial = rng() % 4 == 0 ? rng() % 3 : 0;
  Simulated s = simulate(spec, threads, per, rng, stop, 0.3 + 0.2 * static_cast<double>(rng() % 3), initial);
  if (s.in.ops.size() > 20) return;
  if (detect) recover(s, rng);
  const auto roll = rng() % 12;
  if (rng() % 4 == 0) corrupt_timing(s.in, rng);  // also under the other corruptions
  if (roll < 4) {
    // correct
  } else if (roll == 10) {
    corrupt_responses(s.in, rng);
  } else if (roll == 11) {
    corrupt_timing(s.in, rng);
  } else if (roll < 7 || !detect) {
    corrupt_state(s.in.observed, s.in, rng);
    if (detect && rng() % 2) s.in.observed_after = s.in.observed;
  } else if (roll < 9) {
    corrupt_answers(s.in, rng);
  } else {
    corrupt_state(s.in.observed_after, s.in, rng);
  }
  const fc::CheckInput& in = s.in;
  const bool expect = Reference(in, detect).linearizable();
  (expect ? tally.ok : tally.bad)++;
  auto describe_case = [&] { return describe_input(spec, in, detect, expect, false); };
  auto check = [&](const fc::CheckOptions& opt) {
    return detect ? fc::check_detectability(in, opt) : fc::check_durable_linearizability(in, opt);
  };
  fc::CheckOptions exact;
  exact.engine = fc::CheckOptions::Engine::kExact;
  exact.node_budget = 10'000'000;
  const auto g = check(exact);
  ASSERT_EQ(g.verdict, expect ? CheckResult::Verdict::kOk : CheckResult::Verdict::kViolation)
      << "generic engine: " << g.reason << "\n" << describe_case();
  const auto c = ferrite::crash::internal::check_collection(in, detect, 1'000'000);
  ASSERT_TRUE(c.has_value());
  ASSERT_EQ(c->verdict, expect ? CheckResult::Verdict::kOk : CheckResult::Verdict::kViolation)
      << c->engine << ": " << c->reason << "\n" << describe_case();
  if (!expect) {
    ASSERT_FALSE(c->reason.empty());
  }
  const auto a = check({});
  ASSERT_EQ(a.verdict, expect ? CheckResult::Verdict::kOk : CheckResult::Verdict::kViolation)
      << a.engine << ": " << a.reason << "\n" << describe_case();
  fc::CheckOptions fast;
  fast.engine = fc::CheckOptions::Engine::kFast;
  if (expect && in.initial.empty()) {
    const auto f = check(fast);
    ASSERT_FALSE(f.violation()) << "pre-filter rejects a linearizable history: " << f.reason << "\n" << describe_case();
  }
}

// "Interval soup": a few values and empty answers with random intervals over
// a short time range (no threads, no simulation), some operations pending,
// the values not removed left in a random recovered state. Dense in the
// corner cases (several empty removals overlapping several values; get_min
// answers straddling other values' lifetimes), with both verdicts frequent.
fc::CheckInput soup(fc::Spec spec, bool detect, std::mt19937_64& rng) {
  fc::CheckInput in;
  in.spec = spec;
  const std::int32_t ins = spec == fc::Spec::kQueue ? fc::kEnqueue : spec == fc::Spec::kStack ? fc::kPush : fc::kInsert;
  const std::int32_t rem = spec == fc::Spec::kQueue ? fc::kDequeue : spec == fc::Spec::kStack ? fc::kPop : fc::kDeleteMin;
  const int nv = 1 + static_cast<int>(rng() % 4), ne = static_cast<int>(rng() % 3);
  const int np = spec == fc::Spec::kPriorityQueue ? static_cast<int>(rng() % 3) : 0;
  const std::uint64_t range = static_cast<std::uint64_t>(2 * (2 * nv + ne + np) + 2);
  auto op = [&](std::int32_t kind, std::int64_t arg, std::optional<std::int64_t> value) {
    HistoryOp h;
    h.tid = static_cast<int>(in.ops.size());
    h.op = {kind, arg, 0};
    h.invoke = 1 + rng() % range;
    const std::uint64_t len = rng() % 2 ? 1 + rng() % 3 : 1 + rng() % (range / 2 + 1);
    h.respond = rng() % 7 == 0 ? P : h.invoke + len;
    if (value) h.response = {true, *value};
    in.ops.push_back(h);
  };
  std::vector<std::int64_t> left, vals;
  for (int i = 0; i < nv; ++i) {
    const std::int64_t v = spec == fc::Spec::kPriorityQueue ? static_cast<std::int64_t>(1 + rng() % 50) * 8 + i : i + 1;
    vals.push_back(v);
    op(ins, v, std::nullopt);
    if (rng() % 4 != 0) {
      op(rem, 0, v);
    } else {
      left.push_back(v);
    }
  }
  for (int i = 0; i < ne; ++i) op(rem, 0, std::nullopt);
  for (int i = 0; i < np; ++i) {
    const std::int64_t v = vals[rng() % vals.size()];
    op(fc::kGetMin, 0, rng() % 4 == 0 ? std::nullopt : std::optional<std::int64_t>(v));
  }
  // A pending removal's recorded response means nothing: clear it.
  for (auto& h : in.ops)
    if (!h.completed()) h.response = {};
  std::shuffle(left.begin(), left.end(), rng);
  if (spec == fc::Spec::kPriorityQueue && rng() % 4 != 0) std::sort(left.begin(), left.end());
  in.observed = left;
  if (detect) {
    // Some pending ops run after the crash (consistent answers), the others
    // get random answers (taken to have happened before it).
    std::vector<std::size_t> pend;
    for (std::size_t i = 0; i < in.ops.size(); ++i)
      if (!in.ops[i].completed()) pend.push_back(i);
    std::shuffle(pend.begin(), pend.end(), rng);
    fc::State after = in.observed;
    for (std::size_t i : pend) {
      fc::Response r;
      if (rng() % 2) {
        r = fc::spec_apply(spec, after, in.ops[i].op);
      } else if (in.ops[i].op.kind != ins && rng() % 3 != 0) {
        r = {true, vals[rng() % vals.size()]};
      }
      in.recovered.push_back({i, r});
    }
    in.observed_after = after;
  }
  return in;
}

void soup_case(fc::Spec spec, bool detect, std::mt19937_64& rng, Tally& tally) {
  const fc::CheckInput in = soup(spec, detect, rng);
  const bool expect = Reference(in, detect).linearizable();
  (expect ? tally.ok : tally.bad)++;
  auto describe_case = [&] { return describe_input(spec, in, detect, expect, true); };
  const auto c = ferrite::crash::internal::check_collection(in, detect, 1'000'000);
  ASSERT_TRUE(c.has_value());
  ASSERT_EQ(c->verdict, expect ? CheckResult::Verdict::kOk : CheckResult::Verdict::kViolation)
      << c->engine << ": " << c->reason << "\n" << describe_case();
  fc::CheckOptions exact;
  exact.engine = fc::CheckOptions::Engine::kExact;
  exact.node_budget = 10'000'000;
  const auto g = detect ? fc::check_detectability(in, exact) : fc::check_durable_linearizability(in, exact);
  ASSERT_EQ(g.verdict, expect ? CheckResult::Verdict::kOk : CheckResult::Verdict::kViolation)
      << "generic engine: " << g.reason << "\n" << describe_case();
}

std::string describe_history(const fc::CheckInput& in, bool detect) {
  std::string d = "initial " + fc::format_state(in.initial) + "\n";
  for (std::size_t i = 0; i < in.ops.size(); ++i) {
    const auto& h = in.ops[i];
    d += "  #" + std::to_string(i) + " t" + std::to_string(h.tid) + " " + fc::format_op(h.op) + " [" +
         std::to_string(h.invoke) + "," +
         (h.completed() ? std::to_string(h.respond) + "] -> " + fc::format_response(h.response) +
                              (!h.response.has_value && h.response.value ? "(value " + std::to_string(h.response.value) + ")" : "")
                        : "pending]") +
         "\n";
  }
  d += "  observed " + fc::format_state(in.observed, 64);
  if (detect) {
    d += " recovered";
    for (const auto& r : in.recovered) d += " #" + std::to_string(r.index) + "=" + fc::format_response(r.response);
    d += " after " + fc::format_state(in.observed_after, 64);
  }
  return d;
}

// The generic engine (exhaustive search over chain prefixes, states changed
// in place) against the reference, for the specs it decides: log, set, map,
// register — and buffered durable linearizability for a queue.
TEST(Checker, GenericEngineAgreesWithTheReference) {
  std::mt19937_64 rng(0xfeed);
  Tally tally;
  int cases = 6000;
  if (const char* e = std::getenv("FERRITE_CHECKER_DIFF_CASES")) cases = std::atoi(e);
  for (int i = 0; i < cases; ++i) {
    const fc::Spec specs[] = {fc::Spec::kLog, fc::Spec::kSet, fc::Spec::kMap, fc::Spec::kRegister};
    const fc::Spec spec = specs[i % 4];
    const bool detect = (i / 4) % 2;
    const int threads = 1 + static_cast<int>(rng() % 4);
    const int per = std::max(1, (6 + static_cast<int>(rng() % 9)) / threads);
    const std::size_t events = static_cast<std::size_t>(3 * per * threads);
    Simulated s = simulate(spec, threads, per, rng, rng() % 4 == 0 ? events : rng() % (events + 1));
    if (s.in.ops.size() > 20) continue;
    if (detect) recover(s, rng);
    switch (rng() % 4) {
      case 0: break;
      case 1:
        if (!s.in.observed.empty()) {
          auto& v = s.in.observed[rng() % s.in.observed.size()];
          v = spec == fc::Spec::kRegister ? std::bit_cast<std::int64_t>(std::bit_cast<double>(v) * 2) : v + 1;
        }
        break;
      case 2:
        if (spec == fc::Spec::kLog || spec == fc::Spec::kSet) {
          if (!s.in.observed.empty()) s.in.observed.pop_back();
        } else if (spec == fc::Spec::kMap && s.in.observed.size() >= 2) {
          s.in.observed.resize(s.in.observed.size() - 2);
        }
        break;
      default:
        corrupt_answers(s.in, rng);
        corrupt_responses(s.in, rng);
        break;
    }
    if (rng() % 4 == 0) corrupt_timing(s.in, rng);
    const bool expect = Reference(s.in, detect).linearizable();
    (expect ? tally.ok : tally.bad)++;
    fc::CheckOptions exact;
    exact.engine = fc::CheckOptions::Engine::kExact;
    exact.node_budget = 10'000'000;
    for (const auto& opt : {exact, fc::CheckOptions{}}) {
      const auto r = detect ? fc::check_detectability(s.in, opt) : fc::check_durable_linearizability(s.in, opt);
      ASSERT_EQ(r.verdict, expect ? CheckResult::Verdict::kOk : CheckResult::Verdict::kViolation)
          << fc::spec_name(spec) << (detect ? " detect " : " durable ") << r.engine << ": " << r.reason << " case " << i
          << "\n" << describe_history(s.in, detect);
    }
  }
  EXPECT_GE(tally.ok, cases / 6);
  EXPECT_GE(tally.bad, cases / 6);
  // Buffered durable linearizability (generic engine only): queue and stack
  // histories with syncs; the recovered state is the state after a random
  // prefix of the simulated linearization, or a corrupted one.
  Tally buffered;
  for (int i = 0; i < cases / 2; ++i) {
    const fc::Spec spec = i % 2 ? fc::Spec::kQueue : fc::Spec::kStack;
    const int threads = 1 + static_cast<int>(rng() % 3);
    const int per = std::max(1, (6 + static_cast<int>(rng() % 7)) / threads);
    const std::size_t events = static_cast<std::size_t>(3 * per * threads);
    Simulated s = simulate(spec, threads, per, rng, rng() % 3 == 0 ? events : rng() % (events + 1), 0.6, 0, false, true, 0,
                           0.25);
    if (s.in.ops.size() > 20) continue;
    // Replay a prefix of the linearization order (the order the simulation
    // applied operations in) to get a possibly-older recovered state.
    std::vector<std::size_t> applied;
    for (std::size_t k = 0; k < s.in.ops.size(); ++k)
      if (s.took_effect[k]) applied.push_back(k);
    std::sort(applied.begin(), applied.end(), [&](std::size_t a, std::size_t b) { return s.lin_order[a] < s.lin_order[b]; });
    fc::State st = s.in.initial;
    const std::size_t keep = applied.empty() ? 0 : rng() % (applied.size() + 1);
    for (std::size_t k = 0; k < keep; ++k) fc::spec_apply(spec, st, s.in.ops[applied[k]].op);
    s.in.observed = st;
    if (rng() % 3 == 0) corrupt_state(s.in.observed, s.in, rng);
    const bool expect = Reference(s.in, false, /*buffered=*/true).linearizable();
    (expect ? buffered.ok : buffered.bad)++;
    const auto r = fc::check_buffered_durable_linearizability(s.in);
    ASSERT_EQ(r.verdict, expect ? CheckResult::Verdict::kOk : CheckResult::Verdict::kViolation)
        << "buffered " << fc::spec_name(spec) << ": " << r.reason << "\n" << describe_history(s.in, false);
  }
  EXPECT_GE(buffered.ok, cases / 20);
  EXPECT_GE(buffered.bad, cases / 20);
}

class Differential : public ::testing::TestWithParam<std::tuple<fc::Spec, bool>> {};

TEST_P(Differential, ExactEnginesAgreeWithExhaustiveSearch) {
  const auto [spec, detect] = GetParam();
  std::mt19937_64 rng(0x5eed + static_cast<unsigned>(spec) * 17 + (detect ? 1 : 0));
  Tally tally;
  int cases = 6000;
  if (const char* e = std::getenv("FERRITE_CHECKER_DIFF_CASES")) cases = std::atoi(e);
  for (int i = 0; i < cases; ++i) {
    if (i % 2) {
      soup_case(spec, detect, rng, tally);
    } else {
      differential_case(spec, detect, rng, tally);
    }
    if (HasFatalFailure()) return;
  }
  // Both verdicts well represented.
  EXPECT_GE(tally.ok, cases / 5) << tally.bad;
  EXPECT_GE(tally.bad, cases / 5) << tally.ok;
}

INSTANTIATE_TEST_SUITE_P(Checker, Differential,
                         ::testing::Combine(::testing::Values(fc::Spec::kQueue, fc::Spec::kStack,
                                                              fc::Spec::kPriorityQueue),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           std::string n(fc::spec_name(std::get<0>(info.param)));
                           n.erase(std::remove(n.begin(), n.end(), '-'), n.end());
                           return n + (std::get<1>(info.param) ? "Detect" : "Durable");
                         });

// ============================================================ scale tests
//
// Campaign-sized histories (a 3-thread 600-op queue, 2,000-op stacks and
// priority queues with 2-4 threads), cut by a crash near the end so that
// every thread has an operation pending: the exact engines accept the
// simulated outcome (never inconclusive) and reject each injected fault.

struct ScaleCase {
  fc::Spec spec;
  int threads, ops;
};

Simulated scale_history(const ScaleCase& sc, std::uint64_t seed) {
  for (std::uint64_t alt = 0;; ++alt) {
    std::mt19937_64 rng(seed + alt * 1000003);
    const int per = 2 * sc.ops / sc.threads;  // room for the fastest thread
    const std::size_t events = static_cast<std::size_t>(3 * per * sc.threads);
    Simulated s = simulate(sc.spec, sc.threads, per, rng, events, 0.55, 0, false, /*vary_speed=*/true,
                           static_cast<std::size_t>(sc.ops));
    if (s.pending.size() >= 2 || (sc.threads == 2 && !s.pending.empty())) return s;
  }
}

std::string timing(const CheckResult& r, double us) {
  return r.engine + ": " + std::to_string(r.nodes) + " nodes, " + std::to_string(static_cast<long>(us)) + " us";
}

template <class F>
CheckResult timed(F&& f, double* us) {
  const auto t0 = std::chrono::steady_clock::now();
  CheckResult r = f();
  *us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

class Scale : public ::testing::TestWithParam<ScaleCase> {};

TEST_P(Scale, CorrectOutcomesPassAndInjectedFaultsAreCaught) {
  const ScaleCase sc = GetParam();
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Simulated s = scale_history(sc, seed * 7919 + static_cast<std::uint64_t>(sc.threads));
    ASSERT_FALSE(s.pending.empty());
    const std::string engine = sc.spec == fc::Spec::kQueue ? "exact-queue"
                               : sc.spec == fc::Spec::kStack ? "exact-stack"
                                                             : "exact-pq";
    double us = 0;
    auto ok = timed([&] { return fc::check_durable_linearizability(s.in); }, &us);
    SCOPED_TRACE("correct, durable: " + timing(ok, us));
    std::cout << "  [" << fc::spec_name(sc.spec) << " " << sc.threads << "t " << s.in.ops.size() << " ops, "
              << s.pending.size() << " pending, seed " << seed << "] durable " << timing(ok, us);
    ASSERT_EQ(ok.verdict, CheckResult::Verdict::kOk) << ok.reason;
    EXPECT_EQ(ok.engine, engine);
    std::mt19937_64 order_rng(seed);
    recover(s, order_rng);
    auto det = timed([&] { return fc::check_detectability(s.in); }, &us);
    std::cout << "; detect " << timing(det, us) << "\n";
    ASSERT_EQ(det.verdict, CheckResult::Verdict::kOk) << det.reason;
    EXPECT_EQ(det.engine, engine);

    // Every fault below is a violation whatever the pending operations did.
    auto expect_violation = [&](const fc::CheckInput& in, bool detect, const char* what) {
      SCOPED_TRACE(what);
      auto r = timed([&] { return detect ? fc::check_detectability(in) : fc::check_durable_linearizability(in); }, &us);
      EXPECT_EQ(r.verdict, CheckResult::Verdict::kViolation) << r.engine << " " << r.reason;
      EXPECT_FALSE(r.reason.empty());
      // The exact engine alone (no pre-filter) reaches the same verdict.
      auto e = ferrite::crash::internal::check_collection(in, detect, 20'000);
      ASSERT_TRUE(e.has_value());
      EXPECT_EQ(e->verdict, CheckResult::Verdict::kViolation) << e->reason;
    };
    std::map<std::int64_t, const HistoryOp*> by_value;
    for (const auto& h : s.in.ops)
      if (h.op.kind == fc::kEnqueue || h.op.kind == fc::kPush || h.op.kind == fc::kInsert) by_value[h.op.arg] = &h;
    std::uint64_t first_pending_removal = fc::kPendingStamp;
    for (std::size_t i : s.pending) {
      const auto k = s.in.ops[i].op.kind;
      if (k == fc::kDequeue || k == fc::kPop || k == fc::kDeleteMin)
        first_pending_removal = std::min(first_pending_removal, s.in.ops[i].invoke);
    }
    ASSERT_GE(s.in.observed.size(), static_cast<std::size_t>(sc.threads + 3));
    {  // a lost value x (inserted by a completed op), next to a value y that
       // keeps any pending removal from having taken x: queue: y ahead of x,
       // enqueued before x's enqueue began; stack: y above x, pushed after x's
       // push completed and before every pending pop began; priority queue:
       // a smaller y inserted before every pending delete_min began
      fc::CheckInput in = s.in;
      std::optional<std::size_t> lose;
      for (std::size_t k = 1; k < in.observed.size() && !lose; ++k) {
        const HistoryOp* y = by_value[in.observed[k - 1]];
        const HistoryOp* x = by_value[in.observed[k]];
        if (!x->completed()) continue;  // x's insert may not have taken effect
        const bool y_first = y->completed() && y->respond < x->invoke, x_first = x->respond < y->invoke;
        const bool y_early = y->completed() && y->respond < first_pending_removal;
        if ((sc.spec == fc::Spec::kQueue && y_first) || (sc.spec == fc::Spec::kStack && x_first && y_early) ||
            (sc.spec == fc::Spec::kPriorityQueue && y_early))
          lose = k;
      }
      ASSERT_TRUE(lose.has_value());
      in.observed.erase(in.observed.begin() + static_cast<std::ptrdiff_t>(*lose));
      expect_violation(in, false, "lost value");
    }
    {  // two values swapped in the recovered state
      fc::CheckInput in = s.in;
      bool done = false;
      for (std::size_t k = 0; k + 1 < in.observed.size() && !done; ++k) {
        const HistoryOp* a = by_value[in.observed[k]];
        const HistoryOp* b = by_value[in.observed[k + 1]];
        // Real time fixes their order (for the priority queue any swap
        // breaks the ascending order).
        const bool fixed = sc.spec == fc::Spec::kPriorityQueue ||
                           (sc.spec == fc::Spec::kQueue ? a->completed() && a->respond < b->invoke
                                                        : b->completed() && b->respond < a->invoke);
        if (fixed) {
          std::swap(in.observed[k], in.observed[k + 1]);
          done = true;
        }
      }
      ASSERT_TRUE(done);
      expect_violation(in, false, "two values swapped");
    }
    {  // a duplicated value
      fc::CheckInput in = s.in;
      in.observed.push_back(in.observed[in.observed.size() / 3]);
      expect_violation(in, false, "duplicated value");
    }
    {  // a wrong detectability answer: a pending removal answers a value
       // that stays in the recovered state, far from the removal end (in a
       // history where some pending op is a removal)
      Simulated d;
      for (std::uint64_t alt = 0;; ++alt) {
        ASSERT_LT(alt, 50u);
        d = scale_history(sc, seed * 104729 + alt);
        std::mt19937_64 rr(alt);
        recover(d, rr);
        const bool has_removal = std::any_of(d.in.recovered.begin(), d.in.recovered.end(), [&](const fc::RecoveredOp& r) {
          const auto k = d.in.ops[r.index].op.kind;
          return k == fc::kDequeue || k == fc::kPop || k == fc::kDeleteMin;
        });
        if (has_removal && d.in.observed.size() > static_cast<std::size_t>(sc.threads + 1)) break;
      }
      auto good = timed([&] { return fc::check_detectability(d.in); }, &us);
      ASSERT_EQ(good.verdict, CheckResult::Verdict::kOk) << good.reason;
      fc::CheckInput in = d.in;
      for (auto& r : in.recovered) {
        const auto k = in.ops[r.index].op.kind;
        if (k == fc::kDequeue || k == fc::kPop || k == fc::kDeleteMin) {
          r.response = {true, in.observed.back()};
          break;
        }
      }
      expect_violation(in, true, "wrong recover_op answer");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Checker, Scale,
                         ::testing::Values(ScaleCase{fc::Spec::kQueue, 3, 600}, ScaleCase{fc::Spec::kQueue, 4, 2000},
                                           ScaleCase{fc::Spec::kStack, 2, 2000}, ScaleCase{fc::Spec::kStack, 4, 2000},
                                           ScaleCase{fc::Spec::kPriorityQueue, 3, 2000},
                                           ScaleCase{fc::Spec::kPriorityQueue, 4, 2000}),
                         [](const auto& info) {
                           std::string n(fc::spec_name(info.param.spec));
                           n.erase(std::remove(n.begin(), n.end(), '-'), n.end());
                           return n + std::to_string(info.param.threads) + "t" + std::to_string(info.param.ops);
                         });

// Campaign cost: a crash campaign checks the history snapshot at every crash
// point, once per distinct recovered outcome (a 200-op one-thread run is
// checked about a thousand times). Prints the time per check of 200-op
// one-thread histories (durable linearizability, then detectability — what
// a detectable campaign runs) and of a 600-op three-thread queue. It asserts
// the checkers' work, not their time (a wall-clock bound failed under ASan on
// a loaded machine): each check uses its structure's polynomial engine and
// does at most 4 work steps per operation (CheckResult::nodes; measured 1.1-1.3).
TEST(Checker, CampaignSizedChecksAreCheap) {
  struct Shape {
    fc::Spec spec;
    int threads, ops;
  };
  for (const Shape sh : {Shape{fc::Spec::kQueue, 1, 200}, Shape{fc::Spec::kStack, 1, 200},
                         Shape{fc::Spec::kPriorityQueue, 1, 200}, Shape{fc::Spec::kQueue, 3, 600}}) {
    std::mt19937_64 rng(42);
    const int per = sh.ops / sh.threads;
    Simulated s = simulate(sh.spec, sh.threads, per, rng, static_cast<std::size_t>(3 * sh.ops) - 2, 0.55);
    recover(s, rng);
    int reps = 0;
    double total = 0;
    CheckResult r;
    std::uint64_t last_detect_nodes = 0;
    while (total < 200'000 && reps < 2000) {
      double us = 0;
      r = timed([&] { return fc::check_durable_linearizability(s.in); }, &us);
      total += us;
      double us2 = 0;
      auto d = timed([&] { return fc::check_detectability(s.in); }, &us2);
      total += us2;
      last_detect_nodes = d.nodes;
      ASSERT_TRUE(r.ok()) << r.reason;
      ASSERT_TRUE(d.ok()) << d.reason;
      ++reps;
    }
    const double per_pair = total / reps;
    std::cout << "  " << fc::spec_name(sh.spec) << " " << sh.threads << "t " << s.in.ops.size() << " ops ("
              << s.pending.size() << " pending): durable + detect " << static_cast<long>(per_pair) << " us ("
              << r.engine << ", " << reps << " reps), work " << r.nodes << " + " << last_detect_nodes << "\n";
    EXPECT_NE(r.engine, "exact") << "the generic (exponential) search ran instead of the structure's engine";
    EXPECT_EQ(r.engine.rfind("exact-", 0), 0u) << r.engine;
    EXPECT_LE(r.nodes, 4u * static_cast<std::uint64_t>(sh.ops));
    EXPECT_LE(last_detect_nodes, 4u * static_cast<std::uint64_t>(sh.ops));
  }
}

}  // namespace

}  // namespace checker_test
