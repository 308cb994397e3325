// tests/model/timing_test.cc — the timing model against hand-computed
// timings of tiny traces (docs/timing.md, "Validation"): every expected
// number below is worked out in the comment above it from Table I's
// defaults at 2 GHz: L1 2 ns = 4 cycles, L2 16 ns = 32, PM read 346 ns =
// 692, write to controller 96 ns = 192, media write 500 ns = 1000.
// Each design rule has a test whose number changes if the rule is removed.
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>

#include "ferrite/model/timing.h"
#include "ferrite/model/trace.h"

namespace timing_test {  // this file's names, apart in a unity build

namespace {

namespace fm = ferrite::model;
using K = fm::EventKind;
using fm::Design;

struct Ev {
  K kind;
  std::uint64_t arg = 0;   // line, or lock index
  std::uint64_t seq = 0;   // lock acquire order
  std::uint32_t gap = 0;
};

fm::Trace trace(std::initializer_list<std::initializer_list<Ev>> threads) {
  fm::Trace t;
  for (const auto& th : threads) {
    t.threads.emplace_back();
    for (const Ev& e : th)
      t.threads.back().push_back(e.kind == K::kAcquire || e.kind == K::kRelease
                                     ? fm::Event::lock_event(e.kind, e.gap, static_cast<std::uint32_t>(e.arg), e.seq)
                                     : fm::Event::make(e.kind, e.gap, e.arg));
  }
  return t;
}

fm::Config warm() {
  // PM reads as fast as the L1, so cold lines do not hide the persist path.
  fm::Config c;
  EXPECT_TRUE(c.set("pm_read_ns", 2));
  return c;
}

TEST(TimingModel, OneStoreClwbSfenceOnX86CostsTheReadTheLookupAndTheAcknowledgement) {
  // store A: cold line, drains at 692; clwb A issues after it, reaches the
  // controller at 692 + 4 and is acknowledged at 696 + 192 = 888; the
  // sfence completes then.
  const auto t = trace({{{K::kStore, 1}, {K::kPwb, 1}, {K::kPfence}, {K::kOpEnd}}});
  const fm::Result r = fm::simulate(t, Design::kX86);
  EXPECT_EQ(r.cycles, 888u);
  EXPECT_EQ(r.writebacks, 1u);
  EXPECT_EQ(r.ops, 1u);
  EXPECT_EQ(r.stall_total(), 0u);  // the sfence holds the store queue, not the core
}

TEST(TimingModel, X86SfenceHoldsLaterStoresUntilEarlierClwbsAreAcknowledged) {
  // warm: store A 0..4; clwb A issues 4, ack 4 + 4 + 192 = 200; sfence
  // completes 200; store B issues 200, drains 204.
  const auto t = trace({{{K::kStore, 1}, {K::kPwb, 1}, {K::kPfence}, {K::kStore, 2}}});
  EXPECT_EQ(fm::simulate(t, Design::kX86, warm()).cycles, 204u);
  // Without the sfence, store B drains right after the clwb issued (5..9).
  const auto u = trace({{{K::kStore, 1}, {K::kPwb, 1}, {K::kStore, 2}}});
  EXPECT_EQ(fm::simulate(u, Design::kX86, warm()).cycles, 9u);
}

TEST(TimingModel, X86CoreStallsWhenSfencesFillTheStoreQueue) {
  // A store queue of 2: clwb (ack 196), sfence (retires 196); the third
  // entry waits for the first to retire (1), the fourth for the sfence.
  fm::Config c = warm();
  ASSERT_TRUE(c.set("store_queue", 2));
  const auto t = trace({{{K::kPwb, 1}, {K::kPfence}, {K::kStore, 2}, {K::kStore, 3}}});
  const fm::Result r = fm::simulate(t, Design::kX86, c);
  EXPECT_EQ(r.stalls[static_cast<int>(fm::Stall::kStoreQueue)], 196u);
  EXPECT_EQ(r.cycles, 204u);  // the stores drain 196..200, 200..204
}

// Two strands of (clwb, barrier, clwb), joined.
const std::initializer_list<Ev> kTwoStrands = {{K::kPwb, 1}, {K::kPersistBarrier}, {K::kPwb, 2}, {K::kNewStrand},
                                               {K::kPwb, 3}, {K::kPersistBarrier}, {K::kPwb, 4}, {K::kJoinStrand}};
const std::initializer_list<Ev> kOneStrand = {{K::kPwb, 1}, {K::kPersistBarrier}, {K::kPwb, 2},
                                              {K::kPwb, 3}, {K::kPersistBarrier}, {K::kPwb, 4}, {K::kJoinStrand}};

TEST(TimingModel, TwoStrandsPersistConcurrently) {
  // Strand 0: clwb 1 acked at 4 + 192 = 196; the barrier holds clwb 2 until
  // then: acked 196 + 4 + 192 = 392. Strand 1 (another buffer) runs the
  // same pattern at the same time: the join completes at 392.
  EXPECT_EQ(fm::simulate(trace({kTwoStrands}), Design::kStrandWeaver).cycles, 392u);
  // One strand: clwb 3 joins clwb 2's epoch (acked 392), the second barrier
  // holds clwb 4 until 392: acked 588.
  EXPECT_EQ(fm::simulate(trace({kOneStrand}), Design::kStrandWeaver).cycles, 588u);
}

TEST(TimingModel, NonAtomicIgnoresPersistBarriers) {
  // Every clwb issues at 0: all acknowledged at 196.
  EXPECT_EQ(fm::simulate(trace({kOneStrand}), Design::kNonAtomic).cycles, 196u);
}

// kOneStrand with its first barrier marked as an undo entry's (payload
// kBarrierUndo, Fig. 5 log_store) and its second not (a commit's ordering).
const std::initializer_list<Ev> kUndoThenCommit = {
    {K::kPwb, 1}, {K::kPersistBarrier, fm::kBarrierUndo}, {K::kPwb, 2}, {K::kPwb, 3},
    {K::kPersistBarrier},  {K::kPwb, 4},                   {K::kJoinStrand}};

TEST(TimingModel, NonAtomicPaperIgnoresOnlyTheUndoBarriers) {
  // §VI NON-ATOMIC: the marked barrier is dropped, so clwbs 1-3 issue at 0
  // (acked 196); the unmarked one still holds clwb 4 until every entry
  // before it is acknowledged: 196 + 4 + 192 = 392.
  EXPECT_EQ(fm::simulate(trace({kUndoThenCommit}), Design::kNonAtomicPaper).cycles, 392u);
  // Between strandweaver (both barriers: 588) and non-atomic (none: 196).
  EXPECT_EQ(fm::simulate(trace({kUndoThenCommit}), Design::kStrandWeaver).cycles, 588u);
  EXPECT_EQ(fm::simulate(trace({kUndoThenCommit}), Design::kNonAtomic).cycles, 196u);
  // With no barrier marked it is strandweaver.
  EXPECT_EQ(fm::simulate(trace({kOneStrand}), Design::kNonAtomicPaper).cycles, 588u);
}

TEST(TimingModel, X86SyncFlushStallsTheCoreAtTheFence) {
  // warm, as above: clwb A acked 200, the sfence completes then. A store B
  // 100 cycles of compute after the sfence: with the sfence holding only
  // the store queue, the compute overlaps the acknowledgement and B drains
  // 200..204; with x86_sync_flush the core waits at the sfence (from 0: an
  // event takes no issue slot, to 200) and B issues at 300: 304.
  const auto t = trace({{{K::kStore, 1}, {K::kPwb, 1}, {K::kPfence}, {K::kStore, 2, 0, 100}}});
  fm::Config c = warm();
  EXPECT_EQ(fm::simulate(t, Design::kX86, c).cycles, 204u);
  ASSERT_TRUE(c.set("x86_sync_flush", 1));
  const fm::Result r = fm::simulate(t, Design::kX86, c);
  EXPECT_EQ(r.cycles, 304u);
  EXPECT_EQ(r.stalls[static_cast<int>(fm::Stall::kDurability)], 200u);
  EXPECT_FALSE(c.set("x86_sync_flush", 2));
  // Only x86 reads it.
  EXPECT_EQ(fm::simulate(trace({kOneStrand}), Design::kStrandWeaver, c).cycles, 588u);
}

TEST(TimingModel, AFullStrandBufferHoldsTheNextClwb) {
  // Three clwbs, no barrier: with 4 entries all issue at 0 (acked 196);
  // with 2, the third waits for the first to retire (196): acked 392.
  const auto t = trace({{{K::kPwb, 1}, {K::kPwb, 2}, {K::kPwb, 3}, {K::kJoinStrand}}});
  EXPECT_EQ(fm::simulate(t, Design::kStrandWeaver).cycles, 196u);
  fm::Config c;
  ASSERT_TRUE(c.set("strand_entries", 2));
  EXPECT_EQ(fm::simulate(t, Design::kStrandWeaver, c).cycles, 392u);
}

TEST(TimingModel, ThePersistQueueLetsStoresPassAClwbBlockedOnAFullStrandBuffer) {
  // One-entry strand buffer: clwb 1 acked 196, clwb 2 issues at 196 (acked
  // 392). StrandWeaver: the cold store drains from the store queue at once
  // (0..692). Without the persist queue the clwb holds the store queue:
  // the store issues at 197 and drains at 197 + 692 = 889.
  fm::Config c;
  ASSERT_TRUE(c.set("strand_entries", 1));
  const auto t = trace({{{K::kPwb, 1}, {K::kPwb, 2}, {K::kStore, 3}}});
  EXPECT_EQ(fm::simulate(t, Design::kStrandWeaver, c).cycles, 692u);
  EXPECT_EQ(fm::simulate(t, Design::kNoPersistQueue, c).cycles, 889u);
}

TEST(TimingModel, AFullStrandBufferHoldsTheNextStrandsClwbsInThePersistQueue) {
  // §IV: "CLWBs, persist barriers, and NewStrand operations in the persist
  // queue are issued to the strand buffer unit in order", so a clwb waiting
  // for a full strand buffer holds a later strand's clwbs too. The shape of
  // the logging library's enqueue (docs/results.md, "Why strandweaver
  // trails hops on the single-lock queue"): two write-backs of a fresh
  // node's init stores, then a log/update pair (entry clwb, barrier, update
  // clwb) in the same strand, NewStrand, a second pair, JoinStrand. Every
  // clwb issues at 0, is sent at 4 and acknowledged at 196, unless held.
  // Strand 0 takes 5 entries in a 4-entry buffer: clwb U waits for clwb A's
  // entry (retired 196), is sent after the barrier (196 + 4) and acked at
  // 392. The NewStrand and strand 1 issue only after it, at 196: clwb E2
  // acked 392, the barrier holds clwb U2 until then: acked 588, the join
  // completes at 588.
  const auto t = trace({{{K::kPwb, 1},            // init A
                         {K::kPwb, 2},            // init B
                         {K::kPwb, 3},            // entry E
                         {K::kPersistBarrier},
                         {K::kPwb, 4},            // update U
                         {K::kNewStrand},
                         {K::kPwb, 5},            // entry E2
                         {K::kPersistBarrier},
                         {K::kPwb, 6},            // update U2
                         {K::kJoinStrand}}});
  EXPECT_EQ(fm::simulate(t, Design::kStrandWeaver).cycles, 588u);
  // With 8 entries clwb U issues at 0 and the two strands overlap: U and U2
  // both acked at 196 + 4 + 192 = 392.
  fm::Config c;
  ASSERT_TRUE(c.set("strand_entries", 8));
  EXPECT_EQ(fm::simulate(t, Design::kStrandWeaver, c).cycles, 392u);
  // Likewise with the init write-backs on a strand of their own (a
  // NewStrand before entry E): 2 + 3 + 3 entries in three buffers.
  const auto own = trace({{{K::kPwb, 1},
                           {K::kPwb, 2},
                           {K::kNewStrand},
                           {K::kPwb, 3},
                           {K::kPersistBarrier},
                           {K::kPwb, 4},
                           {K::kNewStrand},
                           {K::kPwb, 5},
                           {K::kPersistBarrier},
                           {K::kPwb, 6},
                           {K::kJoinStrand}}});
  EXPECT_EQ(fm::simulate(own, Design::kStrandWeaver).cycles, 392u);
}

TEST(TimingModel, APersistBarrierHoldsLaterStoresUntilEarlierClwbsIssued) {
  // Two-entry strand buffer: clwbs 1 and 2 issue at 0 (acked 196); clwb 3
  // waits for clwb 1's entry and issues at 196. A store queue of one entry:
  // each warm store waits for the one before it. With the barrier the
  // first store issues only at 196 (after clwb 3 issued) and drains at 200;
  // the second waits until 200 (drains 204), the third until 204: the
  // core stalls 204 cycles in all. Without the barrier the stores drain
  // 0..4, 4..8, 8..12: 8 cycles of stall.
  fm::Config c = warm();
  ASSERT_TRUE(c.set("strand_entries", 2));
  ASSERT_TRUE(c.set("store_queue", 1));
  const auto with = trace({{{K::kPwb, 1}, {K::kPwb, 2}, {K::kPwb, 3}, {K::kPersistBarrier}, {K::kStore, 4},
                            {K::kStore, 4}, {K::kStore, 4}}});
  const auto without = trace({{{K::kPwb, 1}, {K::kPwb, 2}, {K::kPwb, 3}, {K::kStore, 4}, {K::kStore, 4},
                               {K::kStore, 4}}});
  EXPECT_EQ(fm::simulate(with, Design::kStrandWeaver, c).stalls[static_cast<int>(fm::Stall::kStoreQueue)], 204u);
  EXPECT_EQ(fm::simulate(without, Design::kStrandWeaver, c).stalls[static_cast<int>(fm::Stall::kStoreQueue)], 8u);
}

TEST(TimingModel, BarrierEntriesInTheStrandBufferMakeTheUnlockWaitForAnAcknowledgement) {
  // The logging library's region commit (undo_log.h order_prune): three
  // invalidating stores, each clwb followed by a persist barrier, in one
  // strand, then the unlock (docs/results.md, "Why strandweaver is level
  // with HOPS"). Warm lines (4 cycles). Core 0 takes the free lock at 4.
  // st 1 drains 4..8; clwb 1 issues 8, sent 12, acked 204; the barrier
  // takes entry 2 (completes 204). st 2 drains 8..12; clwb 2 issues 12,
  // sent after the barrier at 204 + 4, acked 400; the barrier takes entry 4.
  // st 3 drains 12..16; clwb 3 needs a free entry: entry 1 retires at 204,
  // so it issues at 204. The last barrier holds the unlock store until
  // clwb 3 issued: it drains 204..208 and the lock is free at 208. Core 1
  // asks at 100 and waits 108 cycles. With 8 entries clwb 3 issues at 16,
  // the unlock drains 16..20 and core 1 does not wait; non-atomic (no
  // barriers) likewise.
  fm::Config c = warm();
  const auto t = trace({{{K::kAcquire, 0, 0},
                         {K::kStore, 1},
                         {K::kPwb, 1},
                         {K::kPersistBarrier},
                         {K::kStore, 2},
                         {K::kPwb, 2},
                         {K::kPersistBarrier},
                         {K::kStore, 3},
                         {K::kPwb, 3},
                         {K::kPersistBarrier},
                         {K::kRelease, 0, 0}},
                        {{K::kAcquire, 0, 1, 100}, {K::kRelease, 0, 1}}});
  const auto lock_wait = [](const fm::Result& r) { return r.stalls[static_cast<int>(fm::Stall::kLock)]; };
  EXPECT_EQ(lock_wait(fm::simulate(t, Design::kStrandWeaver, c)), 108u);
  EXPECT_EQ(lock_wait(fm::simulate(t, Design::kNonAtomic, c)), 0u);
  ASSERT_TRUE(c.set("strand_entries", 8));
  EXPECT_EQ(lock_wait(fm::simulate(t, Design::kStrandWeaver, c)), 0u);
}

TEST(TimingModel, HopsOfenceOrdersEpochsAndDfenceWaitsForThePersistBuffer) {
  // warm: store A drains 0..4, written at 4, acked 196; the ofence makes
  // store B (drained 4..8) wait for it: written 196, acked 388; the dfence
  // stalls the core until then.
  const auto t = trace({{{K::kStore, 1}, {K::kOfence}, {K::kStore, 2}, {K::kDfence}}});
  const fm::Result r = fm::simulate(t, Design::kHops, warm());
  EXPECT_EQ(r.cycles, 388u);
  EXPECT_EQ(r.stalls[static_cast<int>(fm::Stall::kDurability)], 388u);
  EXPECT_EQ(r.writebacks, 2u);
  // Without the ofence both are written at once: B acked 8 + 192 = 200.
  const auto u = trace({{{K::kStore, 1}, {K::kStore, 2}, {K::kDfence}}});
  EXPECT_EQ(fm::simulate(u, Design::kHops, warm()).cycles, 200u);
  // HOPS+ is the same hardware (its traces lack the software history).
  EXPECT_EQ(fm::simulate(t, Design::kHopsPlus, warm()).cycles, 388u);
  // The ideal design elides the persist path: the stores drain 0..4, 4..8.
  const fm::Result ideal = fm::simulate(t, Design::kIdeal, warm());
  EXPECT_EQ(ideal.cycles, 8u);
  EXPECT_EQ(ideal.writebacks, 0u);
}

TEST(TimingModel, HopsOrdersAWriteAfterAnotherCoresWriteOfTheLine) {
  // Core 0 writes line 1 (acked 196). Core 1, later (gap 100), writes the
  // same line: it drains 100..132 (from core 0's cache) and must be written
  // after core 0's write: at 196, acked 388.
  const auto t = trace({{{K::kStore, 1}}, {{K::kStore, 1, 0, 100}, {K::kDfence}}});
  EXPECT_EQ(fm::simulate(t, Design::kHops, warm()).cycles, 388u);
}

TEST(TimingModel, ALockIsHandedOverWhenTheReleaseStoreIsVisible) {
  // Core 0: acquire (4), store 4..8, release store 8..12. Core 1 asks at 0,
  // gets the lock at 12 and pays an L2 transfer: 44.
  const auto t = trace({{{K::kAcquire, 0, 0}, {K::kStore, 1}, {K::kRelease, 0}},
                        {{K::kAcquire, 0, 1}, {K::kOpEnd}}});
  const fm::Result r = fm::simulate(t, Design::kX86, warm());
  EXPECT_EQ(r.cycles, 44u);
  EXPECT_EQ(r.stalls[static_cast<int>(fm::Stall::kLock)], 12u);
}

TEST(TimingModel, AnAcquireDrainsTheStoreQueue) {
  // x86: clwb acked 196, sfence retires 196; the locked RMW waits for it.
  const auto t = trace({{{K::kPwb, 1}, {K::kPfence}, {K::kAcquire, 0, 0}}});
  const fm::Result r = fm::simulate(t, Design::kX86, warm());
  EXPECT_EQ(r.stalls[static_cast<int>(fm::Stall::kAtomicDrain)], 196u);
  EXPECT_EQ(r.cycles, 200u);
}

TEST(TimingModel, RecordedLockOrderHandsTheLockOverInTheRecordedOrder) {
  // Core 1 asks first (gap 0) but acquired second in the recorded run.
  // Free order: core 1 takes it at 0 (4), releases 4..8; core 0 (asks at
  // 100) gets it at once: 100 + 32 (from core 1) = 132, releases 132..136.
  // Recorded order: core 0 first: 100 + 4, releases 104..108; core 1
  // waits until 108: 108 + 32 = 140, releases 140..144.
  const auto t = trace({{{K::kAcquire, 0, 0, 100}, {K::kRelease, 0}}, {{K::kAcquire, 0, 1}, {K::kRelease, 0}}});
  EXPECT_EQ(fm::simulate(t, Design::kX86, warm()).cycles, 136u);
  fm::Config c = warm();
  ASSERT_TRUE(c.set("recorded_lock_order", 1));
  EXPECT_EQ(fm::simulate(t, Design::kX86, c).cycles, 144u);
}

TEST(TimingModel, AnImpossibleLockOrderIsReportedNotHung) {
  const auto t = trace({{{K::kAcquire, 0, 1}}});
  fm::Config c;
  ASSERT_TRUE(c.set("recorded_lock_order", 1));
  EXPECT_THROW(fm::simulate(t, Design::kX86, c), std::runtime_error);
  // Free order: a lock never released blocks the other core for good.
  const auto u = trace({{{K::kAcquire, 0, 0}}, {{K::kAcquire, 0, 1, 10}}});
  EXPECT_THROW(fm::simulate(u, Design::kX86), std::runtime_error);
}

// ---- The L1, the write-back buffer and the snoop buffer (StrandWeaver
// §IV "Managing cache writebacks" and "Enabling inter-thread persist
// order"). A 1 kB direct-mapped L1 has 16 sets: lines 2, 18 and 34 share
// set 2. warm(): a cold line costs 4 cycles, like an L1 hit; an L2
// access costs 32.
fm::Config tiny_l1(double writeback_buffer = 16) {
  fm::Config c = warm();
  EXPECT_TRUE(c.set("l1_kb", 1));
  EXPECT_TRUE(c.set("l1_ways", 1));
  EXPECT_TRUE(c.set("writeback_buffer", writeback_buffer));
  return c;
}

TEST(TimingModel, ALineEvictedFromTheL1IsRefetchedFromTheL2) {
  // store 2 drains 0..4; store 18 evicts it (into the write-back buffer),
  // 4..8; store 2 again misses and comes from the L2: 8 + 32 = 40. With
  // Table I's 32 kB L1 the third store hits: 8..12.
  const auto t = trace({{{K::kStore, 2}, {K::kStore, 18}, {K::kStore, 2}}});
  const fm::Result r = fm::simulate(t, Design::kX86, tiny_l1());
  EXPECT_EQ(r.cycles, 40u);
  EXPECT_EQ(r.evictions, 2u);  // 2 by 18, then 18 by 2
  EXPECT_EQ(fm::simulate(t, Design::kX86, warm()).cycles, 12u);
}

TEST(TimingModel, AFullWriteBackBufferHoldsTheFillThatWouldEvict) {
  // x86, one write-back buffer entry, every store evicting the previous
  // (dirty) line of set 2. An eviction holds its entry for the write to the
  // L2 (32 cycles). store 2: 0..4. store 18 evicts 2 at 4 (entry until 36),
  // drains 4..8. store 34 issues at 8 but its victim waits for the entry
  // until 36: the fill is written at 36 + 4 = 40 (entry until 68). store 50
  // issues at 40, its victim enters at 68: 72.
  const auto t = trace({{{K::kStore, 2}, {K::kStore, 18}, {K::kStore, 34}, {K::kStore, 50}}});
  EXPECT_EQ(fm::simulate(t, Design::kX86, tiny_l1(1)).cycles, 72u);
  // With 16 entries nothing waits: 4 stores of 4 cycles.
  EXPECT_EQ(fm::simulate(t, Design::kX86, tiny_l1(16)).cycles, 16u);
  // A clwb leaves the line clean once it flushed it: its eviction takes no
  // entry. Two entries (an x86 clwb holds one until acknowledged). store 2
  // 0..4; clwb 2 issues at 4 and flushes at 8 (acked 200; out of the store
  // queue at 5); store 18 comes at 10: its victim is clean and dropped,
  // 10..14; store 34 evicts dirty 18 at 14 (an entry is free): 14..18.
  const auto u = trace({{{K::kStore, 2}, {K::kPwb, 2}, {K::kStore, 18, 0, 10}, {K::kStore, 34}}});
  const fm::Result r = fm::simulate(u, Design::kX86, tiny_l1(2));
  EXPECT_EQ(r.evictions, 1u);
  EXPECT_EQ(r.cycles, 18u);
}

// The paper's case: a log line persisted by a clwb, a persist barrier, then
// a data store whose line is evicted before the clwb completes.
const std::initializer_list<Ev> kEvictAfterBarrier = {{K::kStore, 1}, {K::kPwb, 1}, {K::kPersistBarrier},
                                                      {K::kStore, 2}, {K::kStore, 18}, {K::kStore, 34}};

TEST(TimingModel, StrandWeaverDrainsADirtyEvictionOnlyAfterTheStrandBuffersDrain) {
  // strandweaver, one write-back buffer entry. store 1 drains 0..4; clwb 1
  // issues after it (the persist queue's lookup) at 4, is sent at 8, acked
  // 200 (the strand buffer's tail); the barrier lets store 2 issue once the
  // clwb issued (4): 4..8. store 18 evicts dirty line 2 at 8: the entry
  // records the tail and drains only at 200, written to the L2 at 232.
  // store 34 issues at 12; its victim (18, dirty) waits for that entry
  // until 232: 232 + 4 = 236.
  const auto t = trace({kEvictAfterBarrier});
  const fm::Result r = fm::simulate(t, Design::kStrandWeaver, tiny_l1(1));
  EXPECT_EQ(r.cycles, 236u);
  EXPECT_EQ(r.evictions, 2u);
  EXPECT_EQ(r.ordered_evictions, 1u);  // the second waits for the entry, not the tails (drained by then)
  // Without the rule store 18's entry would be free at 8 + 32 = 40 and the
  // run would end with the clwb's acknowledgement at 200. So it does with
  // two entries: store 34's victim has an entry of its own (12..16).
  EXPECT_EQ(fm::simulate(t, Design::kStrandWeaver, tiny_l1(2)).cycles, 200u);
  // no-persist-queue and non-atomic share the strand buffer unit and the
  // rule (non-atomic ignores the barrier, not the write-back buffer).
  EXPECT_EQ(fm::simulate(t, Design::kNonAtomic, tiny_l1(1)).cycles, 236u);
  // x86 needs no such rule: its sfence holds the data store until the clwb
  // is acknowledged (200). The clwb holds the single entry until then too;
  // store 2 drains 200..204, store 18 evicts it at 204 (entry until 236),
  // 204..208; store 34's victim waits for that entry: 236..240.
  EXPECT_EQ(fm::simulate(t, Design::kX86, tiny_l1(1)).cycles, 240u);
}

TEST(TimingModel, StrandWeaverAnswersAStealOfADirtyLineAfterTheOwnersStrandBuffersDrain) {
  // Core 0: store 1 (0..4), clwb 1 (sent 8, acked 200), store 5 (4..8;
  // line 5 dirty in core 0's L1). Core 1 stores line 5 at 100: a
  // read-exclusive request for a dirty line; the snoop buffer records
  // core 0's strand-buffer tail (200) and replies then; the data takes an
  // L2 transfer: 232.
  const auto t = trace({{{K::kStore, 1}, {K::kPwb, 1}, {K::kStore, 5}}, {{K::kStore, 5, 0, 100}}});
  const fm::Result r = fm::simulate(t, Design::kStrandWeaver, warm());
  EXPECT_EQ(r.cycles, 232u);
  EXPECT_EQ(r.snoop_waits, 1u);
  // x86 replies at once: core 1 drains 100..132; core 0 is done at 9.
  EXPECT_EQ(fm::simulate(t, Design::kX86, warm()).cycles, 132u);
  // A line core 0 flushed (clwb 5 sent at 12) is clean: no wait, and the
  // run ends with clwb 5's acknowledgement at 12 + 192 = 204.
  const auto u = trace({{{K::kStore, 1}, {K::kPwb, 1}, {K::kStore, 5}, {K::kPwb, 5}}, {{K::kStore, 5, 0, 100}}});
  const fm::Result c = fm::simulate(u, Design::kStrandWeaver, warm());
  EXPECT_EQ(c.cycles, 204u);
  EXPECT_EQ(c.snoop_waits, 0u);
}

TEST(TimingModel, AFullSnoopBufferHoldsTheNextRequest) {
  // Core 0 leaves lines 5 and 6 dirty behind clwb 1 (acked 200). Cores 1
  // and 2 steal them at 100. Each request waits for the tail (200) and
  // holds its entry through the data transfer (to 232). One entry: core
  // 2's request enters at 232 and is answered then: 264. Two: both 232.
  const auto t = trace({{{K::kStore, 1}, {K::kPwb, 1}, {K::kStore, 5}, {K::kStore, 6}},
                        {{K::kStore, 5, 0, 100}},
                        {{K::kStore, 6, 0, 100}}});
  fm::Config one = warm(), two = warm();
  ASSERT_TRUE(one.set("snoop_buffer", 1));
  ASSERT_TRUE(two.set("snoop_buffer", 2));
  EXPECT_EQ(fm::simulate(t, Design::kStrandWeaver, one).cycles, 264u);
  EXPECT_EQ(fm::simulate(t, Design::kStrandWeaver, two).cycles, 232u);
}

TEST(TimingModel, X86ReplaysHopsAndStrandTracesUnderTheIntelMapping) {
  // The logging library's x86 code is its HOPS code with a clwb after each
  // store and sfences for ofence/dfence, so x86 on the HOPS recording is
  // x86 on the x86 one with the same gaps. warm: store A 0..4, clwb A
  // issues at 4 (acked 4 + 4 + 192 = 200), the sfence holds store B until
  // 200 (drains 204), clwb B issues at 204 (acked 400), the last sfence
  // completes at 400.
  fm::Trace hops = trace({{{K::kStore, 1}, {K::kOfence}, {K::kStore, 2}, {K::kDfence}}});
  hops.instrumentation = "hops";
  fm::Trace x86 = trace({{{K::kStore, 1}, {K::kPwb, 1}, {K::kPfence}, {K::kStore, 2}, {K::kPwb, 2}, {K::kPsync}}});
  x86.instrumentation = "x86";
  EXPECT_EQ(fm::simulate(x86, Design::kX86, warm()).cycles, 400u);
  EXPECT_EQ(fm::simulate(hops, Design::kX86, warm()).cycles, 400u);
  EXPECT_EQ(fm::simulate(hops, Design::kX86, warm()).writebacks, 2u);
  // The strand code under the same mapping: persist barrier and JoinStrand
  // are sfences, NewStrand nothing.
  fm::Trace strand = trace({{{K::kStore, 1}, {K::kPwb, 1}, {K::kPersistBarrier}, {K::kStore, 2}, {K::kPwb, 2},
                             {K::kNewStrand}, {K::kJoinStrand}}});
  strand.instrumentation = "strand";
  EXPECT_EQ(fm::simulate(strand, Design::kX86, warm()).cycles, 400u);
  // Without the mapping (a trace of no known instrumentation) no clwb is
  // issued: the stores drain 0..4, 4..8.
  hops.instrumentation.clear();
  EXPECT_EQ(fm::simulate(hops, Design::kX86, warm()).cycles, 8u);
  EXPECT_TRUE(fm::design_replays(Design::kX86, "hops"));
  EXPECT_TRUE(fm::design_replays(Design::kX86, "hops+"));
  EXPECT_TRUE(fm::design_replays(Design::kX86, "strand"));
  EXPECT_FALSE(fm::design_replays(Design::kStrandWeaver, "x86"));
  EXPECT_FALSE(fm::design_replays(Design::kHops, "x86"));
}

TEST(TimingModel, HopsReplaysAStrandRecordingAsTheLibrarysHopsCode) {
  // The logging library's HOPS code is its strand code without write-backs
  // and NewStrands, each persist barrier an ofence, a JoinStrand that only
  // orders (kJoinOrdering: log_end's) an ofence, every other JoinStrand a
  // dfence. warm: store A drains 0..4, written at 4, acked 196; the ofence
  // holds store B (4..8) until then: acked 388; the ordering join holds
  // store C (8..12): acked 580; the last join (a dfence) stalls until 580.
  fm::Trace strand = trace({{{K::kStore, 1}, {K::kPwb, 1}, {K::kPersistBarrier}, {K::kStore, 2}, {K::kPwb, 2},
                             {K::kNewStrand}, {K::kJoinStrand, fm::kJoinOrdering}, {K::kStore, 3}, {K::kPwb, 3},
                             {K::kJoinStrand}}});
  strand.instrumentation = "strand";
  const fm::Trace hops = trace({{{K::kStore, 1}, {K::kOfence}, {K::kStore, 2}, {K::kOfence}, {K::kStore, 3},
                                 {K::kDfence}}});
  EXPECT_TRUE(fm::design_replays(Design::kHops, "strand"));
  EXPECT_FALSE(fm::design_replays(Design::kHopsPlus, "strand"));  // HOPS+ code keeps no software history
  const fm::Result r = fm::simulate(strand, Design::kHops, warm());
  EXPECT_EQ(r.cycles, 580u);
  EXPECT_EQ(r.cycles, fm::simulate(hops, Design::kHops, warm()).cycles);
  EXPECT_EQ(r.writebacks, 3u);  // the stores', not the trace's clwbs
  // Unmarked, the first join is a durability point (a dfence): the core
  // stalls until B is acked (388); C drains 388..392, acked 584.
  fm::Trace unmarked = trace({{{K::kStore, 1}, {K::kPwb, 1}, {K::kPersistBarrier}, {K::kStore, 2}, {K::kPwb, 2},
                               {K::kNewStrand}, {K::kJoinStrand}, {K::kStore, 3}, {K::kPwb, 3}, {K::kJoinStrand}}});
  unmarked.instrumentation = "strand";
  EXPECT_EQ(fm::simulate(unmarked, Design::kHops, warm()).cycles, 584u);
  // strandweaver ignores the mark: a JoinStrand is a JoinStrand (§IV).
  EXPECT_EQ(fm::simulate(strand, Design::kStrandWeaver, warm()).cycles,
            fm::simulate(unmarked, Design::kStrandWeaver, warm()).cycles);
}

TEST(TimingModel, ConfigRejectsUnknownNamesAndBadValues) {
  fm::Config c;
  EXPECT_FALSE(c.set("no_such", 1));
  EXPECT_FALSE(c.set("strand_entries", 0));
  EXPECT_FALSE(c.set("pm_read_ns", -1));
  EXPECT_TRUE(c.set("strand_entries", 8));
  EXPECT_EQ(c.get("strand_entries"), 8);
  for (const auto& n : fm::Config::names()) EXPECT_FALSE(std::isnan(c.get(n))) << n;
}

TEST(TimingModel, DesignNamesRoundTrip) {
  for (int i = 0; i < fm::kDesigns; ++i) {
    fm::Design d;
    ASSERT_TRUE(fm::parse_design(fm::design_name(static_cast<fm::Design>(i)), &d));
    EXPECT_EQ(static_cast<int>(d), i);
  }
  fm::Design d;
  EXPECT_FALSE(fm::parse_design("itanium", &d));
}

}  // namespace

}  // namespace timing_test
