// Unit tests of the undo log (include/ferrite/logging/undo_log.h): the ring
// wraps around, a commit interrupted after each step of StrandWeaver
// Fig. 6(a) is finished by recovery, an incomplete region is rolled back in
// reverse creation order (and the forward-order variant is caught),
// recovery is idempotent, the HOPS+ paper's Figure 1 flag/data example
// (ATLAS with and without the synchronization history), and the verbs each
// instrumentation issues.
//
// A "crash" here is a child process that runs the workload on a pool and
// _exits without closing anything; the parent — which never ran it — opens
// the pool, whose recovery runs the root's hook (the restarted machine).
// The pool is on /dev/shm with the hardware backend: every store the child
// made is in the file, i.e. the crash image in which everything persisted,
// which is the image each of these scenarios is about. The crash campaigns
// (logging_crash_test.cc) cover the other images.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/temp_pool.h"
#include "ferrite/logging/undo_log.h"
#include "ferrite/logging/workloads.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"

namespace undo_log_test {  // this file's names, apart in a unity build

namespace fl = ferrite::logging;
namespace pm = ferrite::pmem;
namespace ps = ferrite::persist;

namespace {

// A test structure: a log area and a few words of data in the root.
struct Cells {
  static constexpr std::uint32_t kTypeTag = 0x4C47'5445;  // "LGTE"
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "logging test cells";
  fl::LogArea log{};
  alignas(64) std::uint64_t x = 0;
  alignas(64) std::uint64_t flag = 0;  // Figure 1 FLAG
  alignas(64) std::uint64_t data = 0;  // Figure 1 DATA
  static inline fl::RecoveryStats last;
  static void recover_root(pm::Pool&, Cells* c, const std::function<void(void*)>& mark) {
    last = fl::recover_area(&c->log);
    fl::mark_area(&c->log, mark);
  }
};
const bool kCellsRegistered = pm::register_root_type<Cells>(&Cells::recover_root);

constexpr std::size_t kPoolSize = std::size_t{8} << 20;

// Runs `body` on a fresh pool at `path` in a child process that then
// "crashes" (_exit, nothing closed or destroyed).
void crash_in_child(const std::string& path, const std::function<void(pm::Pool&, Cells*)>& body) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int rc = 0;
    try {
      auto pool = pm::Pool::create(path, kPoolSize);
      Cells* c = pool->create_root<Cells>("cells");
      body(*pool, c);
      (void)pool.release();  // CRASH: nothing is closed
    } catch (...) {
      rc = 3;
    }
    ::_exit(rc);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << "the child's workload threw";
}

fl::Logger* leak_logger(pm::Pool& pool, Cells* c, int threads, const fl::LoggerOptions& o) {
  return new fl::Logger(pool, &c->log, threads, o);  // abandoned at the crash, never destroyed
}

// Opens the crashed pool at `path` (its recovery runs), checks x, flag and
// what recovery undid, then opens it again: a second recovery finds no live
// entry and leaves x (recovery is idempotent).
void expect_recovered_twice(const std::string& path, std::uint64_t x, std::uint64_t flag, std::uint64_t undone,
                            std::uint64_t rolled_back) {
  auto pool = pm::Pool::open(path);
  Cells* c = pool->root<Cells>("cells");
  EXPECT_EQ(c->x, x);
  EXPECT_EQ(c->flag, flag);
  EXPECT_EQ(Cells::last.regions_undone, undone);
  EXPECT_EQ(Cells::last.stores_rolled_back, rolled_back);
  pool.reset();
  pool = pm::Pool::open(path);
  EXPECT_EQ(Cells::last.live_entries, 0u);
  EXPECT_EQ(pool->root<Cells>("cells")->x, x);
}

}  // namespace

TEST(UndoLog, EntriesAreOneCacheLineWithTheDocumentedLayout) {
  EXPECT_EQ(sizeof(fl::LogEntry), 64u);
  EXPECT_EQ(alignof(fl::LogEntry), 64u);
  EXPECT_EQ(offsetof(fl::ThreadLog, entries), 64u);
  EXPECT_TRUE(kCellsRegistered);
}

TEST(UndoLog, CommittedRegionsLeaveNoLiveEntriesAndTheRingWrapsAround) {
  ferrite::test::TempPath path("lg-wrap");
  constexpr int kRegions = 100;
  crash_in_child(path, [](pm::Pool& pool, Cells* c) {
    fl::LoggerOptions o;
    o.capacity = 8;  // 3 entries per region: the ring wraps ~37 times
    auto* lg = leak_logger(pool, c, 1, o);
    for (int i = 1; i <= kRegions; ++i) {
      lg->txn_begin(0);
      lg->write(0, &c->x, static_cast<std::uint64_t>(i));
      lg->txn_end(0);
    }
  });
  auto pool = pm::Pool::open(path);
  Cells* c = pool->root<Cells>("cells");
  EXPECT_EQ(c->x, static_cast<std::uint64_t>(kRegions));
  EXPECT_EQ(Cells::last.live_entries, 0u);
  EXPECT_EQ(c->log.logs[0]->head, 3u * kRegions);
  // The logger continues after the restart where the head says.
  fl::LoggerOptions o;
  o.capacity = 8;
  fl::Logger lg(*pool, &c->log, 1, o);
  lg.txn_begin(0);
  lg.write(0, &c->x, std::uint64_t{7});
  lg.txn_end(0);
  EXPECT_EQ(c->log.logs[0]->head, 3u * kRegions + 3);
  EXPECT_EQ(c->x, 7u);
}

// A transaction larger than the ring: the store that finds no room (one
// slot stays free for the end entry) throws LogFull after the region is
// rolled back in place — x holds its value from before the transaction,
// no entry is live, the head did not move — and the next transaction runs
// in the slots it gave back.
TEST(UndoLog, ARegionLargerThanTheRingIsRolledBackAndReported) {
  ferrite::test::TempPool pool("lg-full", kPoolSize);
  Cells* c = pool->create_root<Cells>("cells");
  fl::LoggerOptions o;
  o.capacity = 4;
  fl::Logger lg(*pool, &c->log, 1, o);
  lg.txn_begin(0);
  lg.write(0, &c->x, std::uint64_t{1});
  lg.txn_end(0);
  lg.txn_begin(0);
  lg.write(0, &c->x, std::uint64_t{2});
  lg.write(0, &c->flag, std::uint64_t{3});
  EXPECT_THROW(lg.write(0, &c->data, std::uint64_t{9}), fl::LogFull);
  EXPECT_EQ(c->x, 1u);
  EXPECT_EQ(c->flag, 0u);
  EXPECT_EQ(c->data, 0u);
  EXPECT_FALSE(lg.in_region(0));
  EXPECT_TRUE(lg.rolled_back(0));
  EXPECT_EQ(lg.room(0), 4u);
  const fl::ThreadLog* log = c->log.logs[0];
  EXPECT_EQ(log->head, 3u);
  for (std::uint64_t slot = 0; slot < log->capacity; ++slot)
    EXPECT_FALSE(fl::detail::live(log->entries[slot], slot, log->head, log->capacity)) << "slot " << slot;
  lg.txn_begin(0);
  EXPECT_FALSE(lg.rolled_back(0));
  lg.write(0, &c->x, std::uint64_t{5});
  lg.txn_end(0);
  EXPECT_EQ(c->x, 5u);
}

// A section that overflows a tiny log, in each language, through
// logging::Region (the workloads' way in): LogFull reaches the caller with
// the section undone and its locks released — a second thread takes both
// locks at once and runs its own section; the Region's end does nothing.
// Before, append threw with the locks held: the second thread blocked
// forever in acquire and the section stayed half applied.
TEST(UndoLog, ASectionThatOverflowsTheLogIsUndoneAndReleasesItsLocks) {
  for (auto lang : {fl::Language::kTxn, fl::Language::kAtlas, fl::Language::kSfr}) {
    SCOPED_TRACE(fl::language_name(lang));
    ferrite::test::TempPool pool("lg-full-section", kPoolSize);
    Cells* c = pool->create_root<Cells>("cells");
    fl::LoggerOptions o;
    o.language = lang;
    o.capacity = 8;
    fl::Logger lg(*pool, &c->log, 2, o);
    fl::Lock a, b;
    {
      fl::Region r(lg, 0, {&a, &b});
      lg.write(0, &c->x, std::uint64_t{7});
      r.end();
    }
    bool thrown = false;
    try {
      fl::Region r(lg, 0, {&a, &b});
      for (std::uint64_t i = 0; i < 16; ++i) lg.write(0, (i & 1) != 0 ? &c->flag : &c->data, 100 + i);
      r.end();
    } catch (const fl::LogFull&) {
      thrown = true;
    }
    ASSERT_TRUE(thrown);
    EXPECT_EQ(c->x, 7u);
    EXPECT_EQ(c->flag, 0u);
    EXPECT_EQ(c->data, 0u);
    EXPECT_FALSE(lg.in_region(0));
    std::atomic<bool> ran{false};
    std::thread other([&] {
      fl::Region r(lg, 1, {&a, &b});
      lg.write(1, &c->x, std::uint64_t{8});
      r.end();
      ran = true;
    });
    other.join();  // hangs (the test times out) if a lock was left held
    EXPECT_TRUE(ran.load());
    EXPECT_EQ(c->x, 8u);
    // The thread that met the full log goes on.
    {
      fl::Region r(lg, 0, {&a});
      lg.write(0, &c->flag, std::uint64_t{9});
      r.end();
    }
    EXPECT_EQ(c->flag, 9u);
    lg.drain(0);
    lg.drain(1);
  }
}

// The same overflow in a child that then crashes: recovery finds no live
// entry of the rolled-back section (its invalidations were durable) and
// keeps the completed sections before and after it.
TEST(UndoLog, ARolledBackSectionStaysRolledBackAfterACrash) {
  ferrite::test::TempPath path("lg-full-crash");
  crash_in_child(path, [](pm::Pool& pool, Cells* c) {
    fl::LoggerOptions o;
    o.language = fl::Language::kAtlas;
    o.capacity = 8;
    auto* lg = leak_logger(pool, c, 1, o);
    static fl::Lock a;
    {
      fl::Region r(*lg, 0, a);
      lg->write(0, &c->x, std::uint64_t{7});
      r.end();
    }
    try {
      fl::Region r(*lg, 0, a);
      for (std::uint64_t i = 0; i < 16; ++i) lg->write(0, &c->data, 100 + i);
    } catch (const fl::LogFull&) {
    }
    fl::Region r(*lg, 0, a);
    lg->write(0, &c->flag, std::uint64_t{9});
    r.end();
  });
  auto pool = pm::Pool::open(path);
  Cells* c = pool->root<Cells>("cells");
  EXPECT_EQ(c->x, 7u);
  EXPECT_EQ(c->data, 0u);
  EXPECT_EQ(c->flag, 9u);
  EXPECT_EQ(Cells::last.regions_undone, 0u);
  EXPECT_EQ(Cells::last.stores_rolled_back, 0u);
}

// Fig. 6(a): 1 commit marker durable, 2 entries invalidated but the end
// entry, 3 end entry invalidated and head advanced (not yet visible to the
// other threads). A crash after any of them keeps the region.
TEST(UndoLog, ACommitInterruptedAfterEachStepIsFinishedByRecovery) {
  for (int step = 1; step <= 3; ++step) {
    SCOPED_TRACE("stopped after step " + std::to_string(step));
    ferrite::test::TempPath path("lg-commit");
    crash_in_child(path, [step](pm::Pool& pool, Cells* c) {
      auto* lg = leak_logger(pool, c, 1, {});
      lg->txn_begin(0);
      lg->write(0, &c->x, std::uint64_t{5});
      lg->write(0, &c->flag, std::uint64_t{6});
      fl::internal::stop_commit_after_step = step;
      lg->txn_end(0);
    });
    auto pool = pm::Pool::open(path);
    Cells* c = pool->root<Cells>("cells");
    EXPECT_EQ(c->x, 5u);
    EXPECT_EQ(c->flag, 6u);
    EXPECT_EQ(Cells::last.stores_rolled_back, 0u);
    EXPECT_EQ(Cells::last.regions_undone, 0u);
    EXPECT_EQ(c->log.logs[0]->head, 4u);  // begin, 2 stores, end
    pool.reset();
    // Recovery is idempotent: a second one finds nothing to do.
    pool = pm::Pool::open(path);
    EXPECT_EQ(Cells::last.live_entries, 0u);
    EXPECT_EQ(pool->root<Cells>("cells")->x, 5u);
  }
}

// A region that stores x twice (0 -> 1 -> 2) and never ends: reverse
// creation order restores 0; the broken forward order leaves 1.
TEST(UndoLog, AnIncompleteRegionIsRolledBackInReverseCreationOrder) {
  for (bool forward : {false, true}) {
    SCOPED_TRACE(forward ? "forward-rollback (broken)" : "reverse (correct)");
    ferrite::test::TempPath path("lg-order");
    crash_in_child(path, [forward](pm::Pool& pool, Cells* c) {
      fl::LoggerOptions o;
      o.faults = forward ? fl::internal::kForwardRollback : fl::internal::kNoFaults;
      auto* lg = leak_logger(pool, c, 1, o);
      lg->txn_begin(0);
      lg->write(0, &c->x, std::uint64_t{1});
      lg->write(0, &c->x, std::uint64_t{2});
      lg->write(0, &c->data, std::uint64_t{3});
      // CRASH: before txn_end.
    });
    auto pool = pm::Pool::open(path);
    Cells* c = pool->root<Cells>("cells");
    EXPECT_EQ(c->data, 0u);
    EXPECT_EQ(Cells::last.regions_undone, 1u);
    EXPECT_EQ(Cells::last.stores_rolled_back, 3u);
    if (forward) EXPECT_EQ(c->x, 1u) << "the forward-order variant must leave the intermediate value";
    else EXPECT_EQ(c->x, 0u);
  }
}

// Recovery crashed after it rolled back but before it invalidated anything,
// or after it invalidated some entries (newest first): running it again
// gives the same state. Simulated by running only a part of recovery by
// hand: roll back (all three stores), invalidate the newest entry, "crash",
// recover fully.
TEST(UndoLog, RecoveryIsIdempotentWhenItIsItselfInterrupted) {
  ferrite::test::TempPath path("lg-idem");
  crash_in_child(path, [](pm::Pool& pool, Cells* c) {
    auto* lg = leak_logger(pool, c, 1, {});
    lg->txn_begin(0);
    lg->write(0, &c->x, std::uint64_t{1});
    lg->write(0, &c->x, std::uint64_t{2});
    lg->write(0, &c->flag, std::uint64_t{3});
  });
  const pid_t pid = ::fork();  // the interrupted recovery, in a process of its own
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    pm::PoolOptions no_recover;
    no_recover.recover = false;
    auto pool = pm::Pool::open(path, no_recover);
    Cells* c = pool->root<Cells>("cells");
    fl::ThreadLog* log = c->log.logs[0];
    // Roll back in reverse by hand, then invalidate only the newest entry
    // (seq 3: the flag store), as recovery's step 4 does first.
    c->flag = 0;
    c->x = 0;
    log->entries[3].meta = 0;
    ::_exit(0);  // CRASH
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  expect_recovered_twice(path, 0, 0, 1, 2);
}

// The HOPS+ paper's Figure 1. T1's outermost section CS1 takes L1, then L2,
// sets FLAG = 1 (CS1-A) and releases L2 early; T2's section CS2 takes L2,
// sees FLAG == 1, sets DATA = 1 and completes. The crash comes before CS1
// completes: CS1 is undone (FLAG = 0), and CS2, which acquired L2 from
// inside CS1, must be undone too — else {FLAG = 0, DATA = 1}. Under HOPS+
// (no software history) CS2 must instead never acquire L2 before CS1 ends:
// closed nesting (HOPS+ paper §3) keeps L2 locked, CS2 waits, and the crash
// finds it still waiting.
struct FlagDataCase {
  fl::Instrumentation inst;
  unsigned faults;
  bool consistent;  // recovery restores {0, 0}
  bool cs2_waits;   // ATLAS: CS2 cannot take L2 before CS1 ends
  const char* name;
};
class FlagData : public ::testing::TestWithParam<FlagDataCase> {};

TEST_P(FlagData, ASectionThatAcquiredFromAnUndoneSectionIsUndoneToo) {
  const auto p = GetParam();
  // SFRs: CS1-A is an SFR of its own (it ends at the release of L2), so it
  // is complete and FLAG = 1 stays, as does CS2: consistent either way.
  for (auto lang : {fl::Language::kAtlas, fl::Language::kSfr}) {
    SCOPED_TRACE(fl::language_name(lang));
    const bool atlas = lang == fl::Language::kAtlas;
    const bool waits = atlas && p.cs2_waits;
    ferrite::test::TempPath path("lg-flag");
    crash_in_child(path, [&](pm::Pool& pool, Cells* c) {
      fl::LoggerOptions o;
      o.language = lang;
      o.instrumentation = p.inst;
      o.faults = p.faults;
      auto* lg = leak_logger(pool, c, 2, o);
      auto* l1 = new fl::Lock;
      auto* l2 = new fl::Lock;
      lg->acquire(0, *l1);
      lg->acquire(0, *l2);
      lg->write(0, &c->flag, std::uint64_t{1});  // CS1-A
      lg->release(0, *l2);
      // CS2, on a thread of its own (it may have to wait for L2). `x`
      // (unlogged) says it completed.
      auto* done = new std::atomic<bool>(false);
      std::thread([lg, l2, c, done] {
        lg->acquire(1, *l2);
        if (c->flag == 1) lg->write(1, &c->data, std::uint64_t{1});
        lg->release(1, *l2);
        if (!lg->in_region(1)) c->x = 1;
        done->store(true);
      }).detach();
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(waits ? 200 : 5000);
      while (!done->load() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
      // CRASH: CS1 still holds L1 (and, under closed nesting, L2).
    });
    auto pool = pm::Pool::open(path);
    Cells* c = pool->root<Cells>("cells");
    if (waits) {
      EXPECT_EQ(c->x, 0u) << "CS2 took L2 while CS1, which released it early, was still open";
      EXPECT_EQ(c->flag, 0u) << "CS1 did not complete";
      EXPECT_EQ(c->data, 0u);
      continue;
    }
    ASSERT_EQ(c->x, 1u) << "CS2 did not complete";
    if (!atlas) {
      EXPECT_EQ(c->flag, 1u) << "the SFR that set FLAG ended at the release of L2";
      EXPECT_EQ(c->data, 1u);
      continue;
    }
    EXPECT_EQ(c->flag, 0u) << "CS1 did not complete";
    if (p.consistent) EXPECT_EQ(c->data, 0u) << "CS2 depended on CS1 and survived";
    else EXPECT_EQ(c->data, 1u) << "without a history, recovery cannot know CS2 depended on CS1";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Instrumentations, FlagData,
    ::testing::Values(FlagDataCase{fl::Instrumentation::kX86, 0, true, false, "x86"},
                      FlagDataCase{fl::Instrumentation::kStrand, 0, true, false, "strand"},
                      FlagDataCase{fl::Instrumentation::kHops, 0, true, false, "hops"},
                      // HOPS+ keeps no software history: closed nesting
                      // (HOPS+ paper §3) keeps L2 locked until CS1 ends.
                      FlagDataCase{fl::Instrumentation::kHopsPlus, 0, true, true, "hops_plus"},
                      // Without it, CS2 acquires from inside CS1 and
                      // nothing tells recovery: the inconsistent state.
                      FlagDataCase{fl::Instrumentation::kHopsPlus, fl::internal::kOpenNesting, false, false,
                                   "hops_plus_without_closed_nesting"},
                      FlagDataCase{fl::Instrumentation::kX86, fl::internal::kNoSyncHistory, false, false,
                                   "x86_without_the_synchronization_history"}),
    [](const auto& i) { return std::string(i.param.name); });

// HOPS+ closed nesting (HOPS+ paper §3) in one thread's section: a lock
// released early is taken back by a re-acquire in the same section without
// locking it again, and every lock of the section is free once it ends.
TEST(UndoLog, HopsPlusKeepsAnEarlyReleasedLockUntilTheOutermostSectionEnds) {
  ferrite::test::TempPool pool("lg-closed", kPoolSize);
  Cells* c = pool->create_root<Cells>("cells");
  fl::LoggerOptions o;
  o.language = fl::Language::kAtlas;
  o.instrumentation = fl::Instrumentation::kHopsPlus;
  fl::Logger lg(*pool, &c->log, 1, o);
  fl::Lock a, b;
  lg.acquire(0, a);
  lg.acquire(0, b);
  lg.write(0, &c->data, std::uint64_t{1});
  lg.release(0, a);  // early: A stays locked
  std::atomic<bool> got{false};
  std::thread t([&] {
    a.lock_for_read();
    got.store(true);
    a.unlock_for_read();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got.load()) << "A was handed over inside the open section";
  lg.acquire(0, a);  // re-acquire: already held
  lg.write(0, &c->flag, std::uint64_t{1});
  lg.release(0, a);
  EXPECT_TRUE(lg.in_region(0));
  lg.release(0, b);  // the section ends: A and B are free
  EXPECT_FALSE(lg.in_region(0));
  t.join();
  EXPECT_TRUE(got.load());
  b.lock_for_read();  // free
  b.unlock_for_read();
  EXPECT_EQ(fl::recover_area(&c->log).regions_undone, 0u);
}

// A completed section that depends on an incomplete one is not pruned: its
// entries stay until the dependency is pruned.
TEST(UndoLog, ASectionIsPrunedOnlyAfterTheSectionsItDependsOn) {
  ferrite::test::TempPool pool("lg-defer", kPoolSize);
  Cells* c = pool->create_root<Cells>("cells");
  fl::LoggerOptions o;
  o.language = fl::Language::kAtlas;
  fl::Logger lg(*pool, &c->log, 2, o);
  fl::Lock l1, l2;
  lg.acquire(0, l1);
  lg.acquire(0, l2);
  lg.write(0, &c->flag, std::uint64_t{1});
  lg.release(0, l2);
  lg.acquire(1, l2);
  lg.write(1, &c->data, std::uint64_t{1});
  lg.release(1, l2);
  EXPECT_EQ(lg.deferred(1), 1u);
  lg.release(0, l1);
  EXPECT_EQ(lg.deferred(0), 0u);
  lg.flush_deferred(1);
  EXPECT_EQ(lg.deferred(1), 0u);
  EXPECT_EQ(fl::recover_area(&c->log).live_entries, 0u);
}

// A thread that leaves with a deferred section (it never calls drain) does
// not stall the others: a thread waiting for room prunes the leaver's
// section once its dependency is pruned. Thread 1's section acquires A
// from thread 0's open section (released early) and is deferred; thread 1
// then runs nothing more. Every later section of thread 0 on A depends on
// it, so without the help thread 0's log fills: make_room gives up after
// Logger::kMaxWait and append throws inside a section, with A held (the
// 8-thread ATLAS traces hung in Logger::acquire so).
TEST(UndoLog, AWaitingThreadPrunesTheDeferredSectionsOfAThreadThatLeft) {
  ferrite::test::TempPool pool("lg-help", kPoolSize);
  Cells* c = pool->create_root<Cells>("cells");
  fl::LoggerOptions o;
  o.language = fl::Language::kAtlas;
  o.capacity = 2 * fl::Logger::kRoom;
  fl::Logger lg(*pool, &c->log, 2, o);
  fl::Lock a, b;
  lg.acquire(0, a);
  lg.acquire(0, b);
  lg.write(0, &c->data, std::uint64_t{1});
  lg.release(0, a);  // early: thread 0's section stays open
  lg.acquire(1, a);
  lg.write(1, &c->flag, std::uint64_t{1});
  lg.release(1, a);
  ASSERT_EQ(lg.deferred(1), 1u);
  lg.release(0, b);  // thread 0's section ends and is pruned
  ASSERT_EQ(lg.deferred(0), 0u);
  // Thread 1 has left. Thread 0: 3 entries per section, 10 rings' worth.
  constexpr int kSections = 10 * 2 * static_cast<int>(fl::Logger::kRoom) / 3;
  const auto t0 = std::chrono::steady_clock::now();
  int done = 0;
  EXPECT_NO_THROW({
    // Stops at the first wait that ran out (make_room's bound): without the
    // help each of the next ~kRoom / 3 sections would wait it out again.
    for (int i = 1; i <= kSections && std::chrono::steady_clock::now() - t0 < fl::Logger::kMaxWait; ++i) {
      fl::Region r(lg, 0, a);
      lg.write(0, &c->x, static_cast<std::uint64_t>(i));
      r.end();
      done = i;
    }
  });
  ASSERT_EQ(done, kSections) << "thread 0 waited Logger::kMaxWait for thread 1's deferred section";
  EXPECT_EQ(c->x, static_cast<std::uint64_t>(kSections));
  EXPECT_EQ(lg.deferred(1), 0u);  // pruned by thread 0
  EXPECT_GE(lg.helped_prunes(), 1u);
  lg.drain(0);
  EXPECT_EQ(lg.deferred(0), 0u);
  EXPECT_EQ(fl::recover_area(&c->log).live_entries, 0u);
}

// The verbs each instrumentation issues for one region with one store
// (HOPS+ paper Table 1; StrandWeaver Fig. 5).
TEST(UndoLog, EachInstrumentationIssuesThePapersVerbs) {
  ferrite::test::TempPool pool("lg-verbs", kPoolSize);
  using V = ps::Verb;
  struct Expect {
    fl::Instrumentation inst;
    int pwb_min, ofence, dfence, barrier, new_strand, join;
  };
  const Expect cases[] = {
      {fl::Instrumentation::kX86, 4, 0, 0, 0, 0, 0},
      // begin entry, store entry, before the end entry, two in the prune
      // (Fig. 6(a): after the invalidations, after the end entry's; none
      // after the head)
      {fl::Instrumentation::kHops, 0, 5, 1, 0, 0, 0},
      {fl::Instrumentation::kHopsPlus, 0, 5, 1, 0, 0, 0},
      {fl::Instrumentation::kStrand, 4, 0, 0, 4, 2, 2},
  };
  int n = 0;
  for (const auto& e : cases) {
    SCOPED_TRACE(fl::instrumentation_name(e.inst));
    Cells* c = pool->create_root<Cells>("cells" + std::to_string(n++));
    fl::LoggerOptions o;
    o.instrumentation = e.inst;
    fl::Logger lg(*pool, &c->log, 1, o);
    const auto before = ps::thread_counters();
    lg.txn_begin(0);
    lg.write(0, &c->x, std::uint64_t{1});
    lg.txn_end(0);
    const auto d = ps::thread_counters() - before;
    if (e.pwb_min == 0) EXPECT_EQ(d[V::kPwb], 0u) << "HOPS writes nothing back: stores persist by themselves";
    else EXPECT_GE(d[V::kPwb], static_cast<std::uint64_t>(e.pwb_min));
    EXPECT_EQ(d[V::kOfence], static_cast<std::uint64_t>(e.ofence));
    EXPECT_EQ(d[V::kDfence], static_cast<std::uint64_t>(e.dfence));
    EXPECT_EQ(d[V::kPersistBarrier], static_cast<std::uint64_t>(e.barrier));
    EXPECT_EQ(d[V::kNewStrand], static_cast<std::uint64_t>(e.new_strand));
    EXPECT_EQ(d[V::kJoinStrand], static_cast<std::uint64_t>(e.join));
    if (e.inst == fl::Instrumentation::kX86) {
      EXPECT_GE(d[V::kPsync], 1u);  // the durable commit
      EXPECT_EQ(d[V::kDfence] + d[V::kOfence], 0u);
    }
    EXPECT_EQ(c->x, 1u);
  }
}

// The workloads keep their state across a restart and continue.
// Batched commits (LoggerOptions::commit_batch, StrandWeaver §VI): only
// ATLAS and SFR take them, at most one batch per ring.
TEST(UndoLog, ACommitBatchIsCheckedAgainstTheLanguageAndTheLog) {
  ferrite::test::TempPool pool("lg-batch-args", kPoolSize);
  Cells* c = pool->create_root<Cells>("cells");
  auto make = [&](fl::Language lang, std::size_t batch, std::size_t capacity) {
    fl::LoggerOptions o;
    o.language = lang;
    o.commit_batch = batch;
    o.capacity = capacity;
    fl::Logger lg(*pool, &c->log, 1, o);
  };
  EXPECT_THROW(make(fl::Language::kTxn, 2, 256), std::invalid_argument);
  EXPECT_THROW(make(fl::Language::kAtlas, 0, 256), std::invalid_argument);
  EXPECT_THROW(make(fl::Language::kSfr, 257, 256), std::invalid_argument);
  EXPECT_NO_THROW(make(fl::Language::kTxn, 1, 256));
  EXPECT_NO_THROW(make(fl::Language::kSfr, 256, 256));
}

// A release prunes only when the thread has `commit_batch` complete
// regions, and then all of them with one batch's two ordering points
// (pfence under x86) where one region at a time issues two each.
TEST(UndoLog, BatchedCommitsPruneEveryNSectionsWithTwoOrderingPointsPerBatch) {
  ferrite::test::TempPool pool("lg-batch", kPoolSize);
  using V = ps::Verb;
  std::uint64_t pfences[2] = {0, 0};
  int n = 0;
  for (std::size_t batch : {std::size_t{1}, std::size_t{3}}) {
    SCOPED_TRACE("commit_batch " + std::to_string(batch));
    Cells* c = pool->create_root<Cells>("cells" + std::to_string(n));
    fl::LoggerOptions o;
    o.language = fl::Language::kAtlas;
    o.commit_batch = batch;
    fl::Logger lg(*pool, &c->log, 1, o);
    fl::Lock l;
    const auto before = ps::thread_counters();
    for (int i = 1; i <= 3; ++i) {
      lg.acquire(0, l);
      lg.write(0, &c->x, static_cast<std::uint64_t>(i));
      lg.release(0, l);
      // Each section: acquire, store, release (end) entries.
      const std::size_t deferred = batch == 1 ? 0 : static_cast<std::size_t>(i % 3);
      EXPECT_EQ(lg.deferred(0), deferred) << "after section " << i;
      EXPECT_EQ(lg.room(0), o.capacity - 3 * deferred) << "after section " << i;
    }
    pfences[n++] = (ps::thread_counters() - before)[V::kPfence];
    EXPECT_EQ(c->x, 3u);
    EXPECT_EQ(fl::recover_area(&c->log).live_entries, 0u);
  }
  // Three prunes of one section: 3 x 2 ordering points; one batch of three: 2.
  EXPECT_EQ(pfences[0] - pfences[1], 4u) << "unbatched " << pfences[0] << ", batched " << pfences[1];
}

// A crash inside a batch's prune (after its first ordering point: every
// non-end entry of the three sections invalidated, their end entries not)
// leaves three complete sections: recovery keeps all three and undoes
// nothing. Stopped before the prune (step 1: the batch complete, unpruned),
// the same.
TEST(UndoLog, ABatchedCommitInterruptedIsFinishedByRecovery) {
  for (int step = 1; step <= 3; ++step) {
    SCOPED_TRACE("stopped after step " + std::to_string(step));
    ferrite::test::TempPath path("lg-batch-commit");
    crash_in_child(path, [step](pm::Pool& pool, Cells* c) {
      fl::LoggerOptions o;
      o.language = fl::Language::kSfr;
      o.commit_batch = 3;
      auto* lg = leak_logger(pool, c, 1, o);
      auto* l = new fl::Lock;  // abandoned with the logger
      for (int i = 1; i <= 3; ++i) {
        lg->acquire(0, *l);
        lg->write(0, &c->x, static_cast<std::uint64_t>(i));
        lg->write(0, &c->flag, static_cast<std::uint64_t>(10 * i));
        if (i == 3) fl::internal::stop_commit_after_step = step;
        lg->release(0, *l);
      }
    });
    expect_recovered_twice(path, 3, 30, 0, 0);
  }
}

TEST(UndoLog, AQueueAndAMapContinueAfterARestart) {
  ferrite::test::TempPath path("lg-queue");
  crash_in_child(path, [](pm::Pool& pool, Cells*) {
    auto* q = new fl::LoggedQueue(pool, "q", 1, {});
    q->enqueue(0, 10);
    q->enqueue(0, 11);
    auto* m = new fl::LoggedMap(pool, "m", 1, {.language = fl::Language::kSfr});
    m->put(0, 1, 100);
    m->put(0, 2, 200);
    m->erase(0, 1);
  });
  auto pool = pm::Pool::open(path);
  fl::LoggedQueue q(*pool, "q", 1, {});
  EXPECT_EQ(q.snapshot(), (std::vector<std::int64_t>{10, 11}));
  EXPECT_EQ(q.dequeue(0), 10);
  q.enqueue(0, 12);
  EXPECT_EQ(q.snapshot(), (std::vector<std::int64_t>{11, 12}));
  fl::LoggedMap m(*pool, "m", 1, {.language = fl::Language::kSfr});
  EXPECT_EQ(m.items(), (std::vector<std::pair<std::int64_t, std::int64_t>>{{2, 200}}));
  EXPECT_EQ(m.put(0, 2, 201), 200);
  EXPECT_EQ(m.get(0, 2), 201);
}

// Several operations in one region (logging::Group, the StrandWeaver
// paper's Figure 10): a crash inside the group undoes every operation in
// it, in each language — the operations' own Regions nest (an un-grouped
// put would have been durable when it returned) — and a read of a bucket
// whose lock the group holds does not take it again.
class GroupCrash : public ::testing::TestWithParam<fl::Language> {};

TEST_P(GroupCrash, ACrashInsideAGroupUndoesEveryOperationInIt) {
  ferrite::test::TempPath path("lg-group");
  const fl::Language lang = GetParam();
  crash_in_child(path, [lang](pm::Pool& pool, Cells*) {
    auto* m = new fl::LoggedMap(pool, "m", 1, {.language = lang});
    m->put(0, 1, 100);  // before the group: durable
    std::vector<fl::Lock*> locks;
    for (std::int64_t k : {1, 2, 3}) m->locks_of(k, locks);
    auto* g = new fl::Group(m->logger(), 0, locks);  // abandoned at the crash
    m->put(0, 2, 200);
    if (m->get(0, 2) != 200) throw std::runtime_error("read inside the group");
    m->put(0, 1, 101);
    m->erase(0, 3);
    if (!m->logger().in_region(0)) throw std::runtime_error("the group's region ended early");
    (void)g;  // CRASH: here, inside the group
  });
  auto pool = pm::Pool::open(path);
  fl::LoggedMap m(*pool, "m", 1, {.language = lang});
  EXPECT_EQ(m.items(), (std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 100}}));
}

TEST_P(GroupCrash, AGroupThatEndsIsDurableAndARegionOutsideItsLocksIsRefused) {
  ferrite::test::TempPool pool("lg-group-end", kPoolSize);
  const fl::Language lang = GetParam();
  fl::LoggedMap m(*pool, "m", 1, {.language = lang});
  std::vector<fl::Lock*> locks;
  m.locks_of(1, locks);
  {
    fl::Group g(m.logger(), 0, locks);
    m.put(0, 1, 1);
    // A key on another stripe: its lock is not the group's.
    std::int64_t other = 2;
    std::vector<fl::Lock*> l2;
    for (;; ++other) {
      l2.clear();
      m.locks_of(other, l2);
      if (l2[0] != locks[0]) break;
    }
    EXPECT_THROW(m.put(0, other, 2), std::logic_error);
    g.end();
  }
  EXPECT_FALSE(m.logger().in_region(0));
  EXPECT_EQ(m.items(), (std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1}}));
  EXPECT_EQ(fl::recover_area(&pool->root<fl::LoggedMap::Root>("m")->log).live_entries, 0u);
}

INSTANTIATE_TEST_SUITE_P(Languages, GroupCrash,
                         ::testing::Values(fl::Language::kTxn, fl::Language::kAtlas, fl::Language::kSfr),
                         [](const auto& i) { return std::string(fl::language_name(i.param)); });

}  // namespace undo_log_test
