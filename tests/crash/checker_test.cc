// Table-driven tests of the durability checkers: hand-written histories that
// are and are not durably linearizable / detectable / buffered durably
// linearizable. Every negative case must be rejected.
#include <gtest/gtest.h>

#include <bit>
#include <string>
#include <vector>

#include "ferrite/crash/checker.h"

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

// A long sequential queue history: auto picks the fast engine, which accepts
// the correct state and rejects a lost value and a duplicated one.
TEST(Checker, LongHistoriesUseTheFastEngine) {
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
  opt.exact_max_ops = 100;
  auto ok = fc::check_durable_linearizability(in, opt);
  EXPECT_TRUE(ok.ok()) << ok.reason;
  EXPECT_EQ(ok.engine, "fast-queue");
  auto lost = in;
  lost.observed.erase(lost.observed.begin() + 5);
  EXPECT_TRUE(fc::check_durable_linearizability(lost, opt).violation());
  auto dup = in;
  dup.observed.push_back(dup.observed.front());
  EXPECT_TRUE(fc::check_durable_linearizability(dup, opt).violation());
}

// Many concurrent pending ops blow the exact budget: the queue falls back to
// the fast engine and says so; a set (no fast engine) is inconclusive.
TEST(Checker, BudgetExhaustionFallsBack) {
  fc::CheckInput in;
  in.spec = S::kQueue;
  for (int i = 0; i < 24; ++i) in.ops.push_back(H(i, fc::kEnqueue, i + 1, static_cast<std::uint64_t>(i + 1), P));
  in.observed = {};
  for (int i = 24; i > 0; i -= 2) in.observed.push_back(i);  // an order no search finds quickly
  fc::CheckOptions opt;
  opt.node_budget = 1000;
  auto r = fc::check_durable_linearizability(in, opt);
  EXPECT_NE(r.engine.find("budget"), std::string::npos) << r.engine;
  EXPECT_EQ(r.engine.rfind("fast-queue", 0), 0u);
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

}  // namespace
