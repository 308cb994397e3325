// OneFile-LF and OneFile-WF (include/ferrite/baselines/onefile.h). LF: the sequential semantics
// of the four objects in its region of (value, seq) words, the verbs of an
// update and of a read, transactional allocation (freed nodes reused), a
// failed transaction, a clean restart, and recovery of hand-made images
// (a committed but unapplied write-set, a torn pair; the crash campaigns in
// ptm_crash_test.cc cover the crashes themselves). WF: the same answers as
// LF, its verbs, an announced operation run by another thread's
// transaction (exactly once, its result delivered), and a restart whose
// curTx log names the crashed run's result words.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <atomic>
#include <vector>

#include "common/temp_pool.h"
#include "ferrite/baselines/onefile.h"
#include "ferrite/baselines/redoopt.h"
#include "ferrite/baselines/seq_objects.h"

namespace onefile_test {  // this file's names, apart in a unity build

namespace fb = ferrite::baselines;
namespace fp = ferrite::persist;
using ferrite::test::TempPool;

namespace {

constexpr std::size_t kRegion = std::size_t{1} << 20;
fb::SeqParams params() { return {4, 16, 1024}; }
std::int64_t bits(double d) { return std::bit_cast<std::int64_t>(d); }

using Stack = fb::OneFileObject<fb::SeqStack>;
using Queue = fb::OneFileObject<fb::SeqQueue>;
using Heap = fb::OneFileObject<fb::SeqHeap>;
using Float = fb::OneFileObject<fb::SeqFloat>;
using WFStack = fb::OneFileWFObject<fb::SeqStack>;
using WFQueue = fb::OneFileWFObject<fb::SeqQueue>;
using WFHeap = fb::OneFileWFObject<fb::SeqHeap>;
using WFFloat = fb::OneFileWFObject<fb::SeqFloat>;

struct Verbs {
  std::uint64_t pwb, pfence, psync;
};
template <class F>
Verbs count(F&& f) {
  const auto before = fp::thread_counters();
  f();
  const auto d = fp::thread_counters() - before;
  return {d[fp::Verb::kPwb], d[fp::Verb::kPfence], d[fp::Verb::kPsync]};
}

}  // namespace

TEST(OneFile, StackIsLastInFirstOut) {
  TempPool pool("of-stack");
  Stack s(*pool, "s", params(), kRegion);
  std::int64_t v = 0;
  EXPECT_FALSE(s.apply(0, false, 0, &v));
  for (std::int64_t x : {5, 1, 4, 2, 3}) EXPECT_FALSE(s.apply(1, true, x, &v));
  EXPECT_EQ(s.snapshot(), (std::vector<std::int64_t>{3, 2, 4, 1, 5}));
  std::vector<std::int64_t> out;
  while (s.apply(2, false, 0, &v)) out.push_back(v);
  EXPECT_EQ(out, (std::vector<std::int64_t>{3, 2, 4, 1, 5}));
}

TEST(OneFile, QueueIsFirstInFirstOut) {
  TempPool pool("of-queue");
  Queue q(*pool, "q", params(), kRegion);
  std::int64_t v = 0;
  std::vector<std::int64_t> want;
  for (int i = 0; i < 200; ++i) {
    q.apply(i % 4, true, i, &v);
    want.push_back(i);
    if (i % 3 == 0) {
      ASSERT_TRUE(q.apply(1, false, 0, &v));
      EXPECT_EQ(v, want.front());
      want.erase(want.begin());
    }
  }
  EXPECT_EQ(q.snapshot(), want);
}

TEST(OneFile, HeapRemovesTheMinimumAndRefusesWhenFull) {
  TempPool pool("of-heap");
  fb::SeqParams p = params();
  p.heap_capacity = 8;
  Heap h(*pool, "h", p, kRegion);
  std::int64_t v = 0;
  EXPECT_FALSE(h.apply(0, false, 0, &v));
  for (std::int64_t x : {50, 10, 40, 20, 30, 70, 60, 0}) h.apply(0, true, x, &v);
  h.apply(0, true, -5, &v);  // full: refused
  std::vector<std::int64_t> out;
  while (h.apply(1, false, 0, &v)) out.push_back(v);
  EXPECT_EQ(out, (std::vector<std::int64_t>{0, 10, 20, 30, 40, 50, 60, 70}));
}

TEST(OneFile, FloatMultipliesAndAReadIssuesNoVerb) {
  TempPool pool("of-float");
  Float f(*pool, "f", params(), kRegion);
  std::int64_t v = 0;
  ASSERT_TRUE(f.apply(0, true, bits(2.0), &v));
  EXPECT_EQ(std::bit_cast<double>(v), 1.0);
  ASSERT_TRUE(f.apply(1, true, bits(1.5), &v));
  EXPECT_EQ(std::bit_cast<double>(v), 2.0);
  const Verbs d = count([&] { ASSERT_TRUE(f.apply(0, false, 0, &v)); });
  EXPECT_EQ(std::bit_cast<double>(v), 3.0);
  EXPECT_EQ(d.pwb + d.pfence + d.psync, 0u);
}

// One thread: an update writes back its log's lines (header + entries), curTx,
// and each changed word's line once; three psyncs (T4, H1, H5), no pfence.
TEST(OneFile, AnUpdateCostsThreePsyncsAndAPwbPerLogAndWordLine) {
  TempPool pool("of-verbs");
  Stack s(*pool, "s", params(), kRegion);
  Float f(*pool, "f", params(), kRegion);
  Heap h(*pool, "h", params(), kRegion);
  std::int64_t v = 0;
  for (int i = 0; i < 10; ++i) h.apply(0, true, 100 - i, &v);
  Verbs push{}, pop{}, mul{}, ins{};
  constexpr int kOps = 40;
  for (int i = 0; i < kOps; ++i) {
    const Verbs a = count([&] { s.apply(0, true, i, &v); });
    const Verbs b = count([&] { s.apply(0, false, 0, &v); });
    const Verbs c = count([&] { f.apply(0, true, bits(1.0), &v); });
    const Verbs d = count([&] { h.apply(0, true, 50 + (i * 7) % 13, &v); });
    for (const Verbs* x : {&a, &b, &c, &d}) {
      EXPECT_EQ(x->pfence, 0u);
      EXPECT_EQ(x->psync, 3u);
    }
    push.pwb += a.pwb;
    pop.pwb += b.pwb;
    mul.pwb += c.pwb;
    ins.pwb += d.pwb;
  }
  std::printf("[onefile] pwb per op (1 thread): stack push %.2f, pop %.2f; float mul %.2f; heap insert %.2f\n",
              static_cast<double>(push.pwb) / kOps, static_cast<double>(pop.pwb) / kOps,
              static_cast<double>(mul.pwb) / kOps, static_cast<double>(ins.pwb) / kOps);
  // The float: the log's one line (header + one entry), curTx, the value's
  // line.
  EXPECT_EQ(mul.pwb, 3u * kOps);
}

TEST(OneFile, EveryWordOfACommittedTransactionCarriesItsSeq) {
  TempPool pool("of-seq");
  Float f(*pool, "f", params(), kRegion);
  std::int64_t v = 0;
  f.apply(0, true, bits(3.0), &v);
  const std::uint64_t s = f.ptm().seq();
  EXPECT_GE(s, 2u);  // creation, then the multiplication
  // The float's root is the first allocation after the header.
  auto* value = reinterpret_cast<double*>(reinterpret_cast<std::uint8_t*>(f.ptm().root()->words) + fb::kOneFileHeaderBytes);
  const fb::OneFileWord& w = f.ptm().word_of(value);
  EXPECT_EQ(w.seq.load(), s);
  EXPECT_EQ(std::bit_cast<double>(w.val.load()), 3.0);
}

TEST(OneFile, FreedNodesAreReusedInsideTheRegion) {
  TempPool pool("of-reuse");
  Queue q(*pool, "q", params(), kRegion);
  std::int64_t v = 0;
  for (int i = 0; i < 10; ++i) q.apply(0, true, i, &v);
  for (int i = 0; i < 10; ++i) q.apply(0, false, 0, &v);
  const std::uint64_t used = q.ptm().used();
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 10; ++i) q.apply(0, true, i, &v);
    for (int i = 0; i < 10; ++i) q.apply(0, false, 0, &v);
  }
  EXPECT_LE(q.ptm().used(), used + 64);
}

TEST(OneFile, AFailedTransactionLeavesTheState) {
  TempPool pool("of-abort");
  Stack s(*pool, "s", params(), 8192);  // the minimum: room for ~150 nodes
  std::int64_t v = 0;
  int pushed = 0;
  try {
    for (;; ++pushed) s.apply(0, true, pushed, &v);
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("region full"), std::string::npos) << e.what();
  }
  ASSERT_GT(pushed, 10);
  const auto seq = s.ptm().seq();
  EXPECT_EQ(s.snapshot().size(), static_cast<std::size_t>(pushed));
  EXPECT_EQ(s.ptm().seq(), seq);
  ASSERT_TRUE(s.apply(0, false, 0, &v));
  EXPECT_EQ(v, pushed - 1);
  s.apply(0, true, 77, &v);  // on the freed node
  ASSERT_TRUE(s.apply(0, false, 0, &v));
  EXPECT_EQ(v, 77);
}

TEST(OneFile, ALoadOutsideTheRegionOrATransactionIsRefused) {
  TempPool pool("of-outside");
  fb::OneFile<> ptm(*pool, "r", {1, kRegion});
  std::uint64_t local = 0;
  const auto seq = ptm.seq();
  EXPECT_THROW(ptm.transaction(0, [&] { ptm.store(&local, std::uint64_t{1}); }), std::logic_error);
  EXPECT_EQ(ptm.seq(), seq);
  EXPECT_THROW(ptm.load_word(ptm.root()->words), std::logic_error);
}

TEST(OneFile, StateSurvivesACleanRestart) {
  TempPool pool("of-restart");
  std::int64_t v = 0;
  {
    Queue q(*pool, "q", params(), kRegion);
    Heap h(*pool, "h", params(), kRegion);
    Float f(*pool, "f", params(), kRegion);
    for (int i = 1; i <= 4; ++i) q.apply(0, true, i, &v);
    for (int i : {9, 7, 8}) h.apply(0, true, i, &v);
    f.apply(0, true, bits(4.0), &v);
    q.apply(0, false, 0, &v);
  }
  pool.reopen();
  Queue q(*pool, "q", params(), kRegion);
  Heap h(*pool, "h", params(), kRegion);
  Float f(*pool, "f", params(), kRegion);
  EXPECT_EQ(q.snapshot(), (std::vector<std::int64_t>{2, 3, 4}));
  for (int i = 5; i <= 8; ++i) q.apply(0, true, i, &v);
  EXPECT_EQ(q.snapshot(), (std::vector<std::int64_t>{2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(h.snapshot(), (std::vector<std::int64_t>{7, 8, 9}));
  ASSERT_TRUE(f.apply(0, false, 0, &v));
  EXPECT_EQ(std::bit_cast<double>(v), 4.0);
}

// A hand-made crash image: the last transaction's write-set committed
// (curTx names it, the log is durable) but none of its words applied, and a
// pair torn (the new seq, the old value). The pool's recovery re-applies it.
TEST(OneFile, RecoveryReappliesTheWriteSetCurTxNames) {
  TempPool pool("of-recover");
  std::int64_t v = 0;
  std::uint64_t s = 0;
  {
    Float f(*pool, "f", params(), kRegion);
    f.apply(0, true, bits(5.0), &v);
    s = f.ptm().seq();
    auto* value = reinterpret_cast<std::uint8_t*>(f.ptm().root()->words) + fb::kOneFileHeaderBytes;
    auto& w = const_cast<fb::OneFileWord&>(f.ptm().word_of(value));
    w.val.store(std::bit_cast<std::uint64_t>(1.0));  // torn: the old value with the new seq
    ASSERT_EQ(w.seq.load(), s);
  }
  pool.reopen();  // Pool::recover runs the root's hook
  Float f(*pool, "f", params(), kRegion);
  ASSERT_TRUE(f.apply(0, false, 0, &v));
  EXPECT_EQ(std::bit_cast<double>(v), 5.0);
  EXPECT_EQ(f.ptm().seq(), s);
}

TEST(OneFile, ARegionOfAnotherObjectTypeOrARootOfAnotherStructureIsRefused) {
  TempPool pool("of-type");
  { Stack s(*pool, "x", params(), kRegion); }
  EXPECT_THROW(Queue(*pool, "x", params(), kRegion), std::runtime_error);
  { fb::RedoOptObject<fb::SeqStack> r(*pool, "redo", params(), kRegion); }
  EXPECT_THROW(Stack(*pool, "redo", params(), kRegion), std::exception);
}

TEST(OneFile, ACorruptCurTxFailsInsteadOfGuessing) {
  TempPool pool("of-corrupt");
  { Stack s(*pool, "s", params(), kRegion); s.ptm().root()->cur_tx.store(fb::OneFileRoot::make(3, 0, 200)); }
  EXPECT_THROW(Stack(*pool, "s", params(), kRegion), std::runtime_error);
}

// ---- OneFile-WF

// The same operations on an LF and a WF object give the same answers and
// states (one thread: every announced operation is the caller's own).
template <class LF, class WF>
void same_answers(const char* tag, std::vector<std::pair<bool, std::int64_t>> ops, fb::SeqParams p = params()) {
  TempPool pool(tag);
  LF lf(*pool, "lf", p, kRegion);
  WF wf(*pool, "wf", p, kRegion);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    std::int64_t a = -1, b = -1;
    const int tid = static_cast<int>(i % 4);
    const bool ra = lf.apply(tid, ops[i].first, ops[i].second, &a);
    const bool rb = wf.apply(tid, ops[i].first, ops[i].second, &b);
    ASSERT_EQ(ra, rb) << "op " << i;
    ASSERT_EQ(a, b) << "op " << i;
  }
  EXPECT_EQ(lf.snapshot(), wf.snapshot());
  EXPECT_GT(wf.ptm().wf_commits(), 0u);
  EXPECT_EQ(wf.ptm().helped(), 0u);  // one thread at a time: nobody to help
}

TEST(OneFileWF, GivesTheLockFreeAnswersOnEveryObject) {
  std::vector<std::pair<bool, std::int64_t>> ops;
  for (int i = 0; i < 120; ++i) ops.emplace_back(i % 3 != 2, i * 7 % 31);
  for (int i = 0; i < 10; ++i) ops.emplace_back(false, 0);  // past empty
  same_answers<Stack, WFStack>("ofwf-st", ops);
  same_answers<Queue, WFQueue>("ofwf-qu", ops);
  fb::SeqParams p = params();
  p.heap_capacity = 16;  // some inserts refused
  same_answers<Heap, WFHeap>("ofwf-hp", ops, p);
  std::vector<std::pair<bool, std::int64_t>> mul;
  for (int i = 0; i < 40; ++i) mul.emplace_back(i % 4 != 3, bits(i % 2 ? 2.0 : 0.5));
  same_answers<Float, WFFloat>("ofwf-fl", mul);
}

// One thread: the same verbs as OneFile-LF (the result words are DRAM: the
// float's log is still one line, header + value + out + ok); a read none.
TEST(OneFileWF, AnUpdateCostsThreePsyncsAndAReadNoVerb) {
  TempPool pool("ofwf-verbs");
  WFFloat f(*pool, "f", params(), kRegion);
  std::int64_t v = 0;
  constexpr int kOps = 40;
  Verbs mul{};
  for (int i = 0; i < kOps; ++i) {
    const Verbs d = count([&] { f.apply(0, true, bits(1.0), &v); });
    EXPECT_EQ(d.pfence, 0u);
    EXPECT_EQ(d.psync, 3u);
    mul.pwb += d.pwb;
  }
  EXPECT_EQ(mul.pwb, 3u * kOps);
  const Verbs r = count([&] { ASSERT_TRUE(f.apply(1, false, 0, &v)); });
  EXPECT_EQ(r.pwb + r.pfence + r.psync, 0u);
  EXPECT_EQ(std::bit_cast<double>(v), 1.0);
}

// Thread 1 announces and stalls inside its own transaction; thread 0's
// update runs thread 1's operation in its aggregated transaction and
// commits. Thread 1's commit then fails, and it finds its result: the one
// thread 0's transaction computed, its operation applied exactly once.
TEST(OneFileWF, AStalledThreadsAnnouncedOperationIsRunByAnotherThread) {
  TempPool pool("ofwf-help");
  fb::OneFile<> ptm(*pool, "r", {2, kRegion});
  std::uint64_t* word = nullptr;
  ptm.transaction(0, [&] {
    word = static_cast<std::uint64_t*>(ptm.alloc(8));
    ptm.store(word, std::uint64_t{0});
  });
  std::atomic<bool> inside{false}, released{false};
  std::atomic<int> runs_for_1{0};
  const auto me = std::this_thread::get_id();
  // add arg; out = the old value.
  auto run = [&](int i, const fb::OneFileOp& op, std::int64_t* out) {
    if (i == 1) runs_for_1.fetch_add(1);
    const std::uint64_t x = ptm.load(word);
    if (i == 1 && std::this_thread::get_id() != me && !released.load()) {
      inside.store(true);
      while (!released.load()) std::this_thread::yield();
    }
    ptm.store(word, x + static_cast<std::uint64_t>(op.arg));
    *out = static_cast<std::int64_t>(x);
    return true;
  };
  fb::OneFileResult r1;
  std::thread t1([&] { r1 = ptm.update(1, {true, 10}, run); });
  while (!inside.load()) std::this_thread::yield();
  const fb::OneFileResult r0 = ptm.update(0, {true, 1}, run);
  released.store(true);
  t1.join();
  EXPECT_TRUE(r0.ok);
  EXPECT_EQ(r0.out, 0);
  EXPECT_TRUE(r1.ok);
  EXPECT_EQ(r1.out, 1);  // run by thread 0 after its own operation
  std::uint64_t final = 0;
  ptm.transaction(0, [&] { final = ptm.load(word); });
  EXPECT_EQ(final, 11u);
  EXPECT_EQ(ptm.helped(), 1u);
  EXPECT_EQ(ptm.max_attempts(), 1u);  // thread 1's own transaction failed once
  EXPECT_EQ(runs_for_1.load(), 2);     // by thread 0 (committed), by thread 1 (its CAS failed)
}

// A restart (clean or not) opens with curTx naming a log that holds result
// entries for the previous run's threads; the new run's first update helps
// that curTx again (its durable_seq_ starts at 0) after announcing: the old
// entries must not answer its operation.
TEST(OneFileWF, ThePreviousRunsResultsAnswerNoNewOperation) {
  TempPool pool("ofwf-restart");
  constexpr std::uint32_t kTag = 0x7E57'0001;
  auto add = [](fb::OneFile<>& ptm) {
    return [&ptm](int, const fb::OneFileOp& op, std::int64_t* out) {
      auto* w = static_cast<std::uint64_t*>(ptm.object(kTag));
      const std::uint64_t x = ptm.load(w);
      ptm.store(w, x + static_cast<std::uint64_t>(op.arg));
      *out = static_cast<std::int64_t>(x);
      return true;
    };
  };
  {
    fb::OneFile<> ptm(*pool, "r", {2, kRegion});
    ptm.transaction(0, [&] {
      void* w = ptm.alloc(8);
      ptm.store(static_cast<std::uint64_t*>(w), std::uint64_t{0});
      ptm.set_object(w, kTag);
    });
    EXPECT_EQ(ptm.update(0, {true, 5}, add(ptm)).out, 0);
  }
  pool.reopen();
  fb::OneFile<> ptm(*pool, "r", {2, kRegion});
  const fb::OneFileResult r = ptm.update(0, {true, 7}, add(ptm));
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.out, 5);
  std::uint64_t final = 0;
  ptm.transaction(0, [&] { final = ptm.load(static_cast<std::uint64_t*>(ptm.object(kTag))); });
  EXPECT_EQ(final, 12u);
}

}  // namespace onefile_test
