// RomulusLog (include/ferrite/baselines/romulus.h: flat-combined writers,
// C-RW-WP readers) and RedoOpt (redoopt.h: a combiner on a replica of its
// own, readers on curComb's replica) and OneFile-LF (onefile.h: lock-free
// transactions helped by every thread, DCAS on (value, seq) words) and
// OneFile-WF (the same, with announced operations run by whichever
// aggregated transaction commits first) under 2-4 threads. Conservation for the stack,
// queue (plus per-producer FIFO) and heap; the float's product is exact (all
// factors are powers of two) and its readers see only committed values.
// Runs under TSan (label stress).
#include <gtest/gtest.h>

#include <atomic>
#include <algorithm>
#include <chrono>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/conservation.h"
#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/baselines/onefile.h"
#include "ferrite/baselines/redoopt.h"
#include "ferrite/baselines/romulus.h"
#include "ferrite/baselines/seq_objects.h"

namespace ptm_stress_test {  // this file's names, apart in a unity build

namespace fb = ferrite::baselines;
using ferrite::test::scaled;
using ferrite::test::TempPool;

namespace {

constexpr std::size_t kRegion = std::size_t{8} << 20;
fb::SeqParams params(int threads) { return {threads, 8, 1 << 16}; }

// Quiescent: RomulusLog's copies agree; RedoOpt committed batches, bringing
// replicas up to date by redo logs.
template <template <unsigned, class> class S>
void quiescent(fb::RomulusObject<S>& o) {
  EXPECT_EQ(o.ptm().state(), fb::RomulusRoot::kIdle);
  EXPECT_TRUE(o.ptm().copies_agree());
}
template <template <unsigned, class> class S, fb::RedoOptElection E>
void quiescent(fb::RedoOptObject<S, fb::kNoFaults, E>& o) {
  EXPECT_GT(o.ptm().seq(), 0u);
  // A replica a long reader held may have missed more batches than the log
  // ring keeps (then it is copied): logs serve the rest.
  EXPECT_GT(o.ptm().lines_replayed(), 0u);
}

template <template <unsigned, class> class S>
void quiescent(fb::OneFileObject<S>& o) {
  EXPECT_GT(o.ptm().seq(), 0u);
}

template <template <unsigned, class> class S>
void quiescent(fb::OneFileWFObject<S>& o) {
  EXPECT_GT(o.ptm().seq(), 0u);
  EXPECT_LE(o.ptm().max_attempts(), static_cast<std::uint64_t>(fb::kOneFileWaitFreeAttempts));
  EXPECT_GE(o.ptm().wf_ops(), o.ptm().wf_commits());
}

template <class Obj>
void conservation(const char* tag, int threads, bool fifo) {
  // Room for RedoOpt's wait-free election's 2N replicas of kRegion (8 at 4
  // threads).
  TempPool pool(tag, std::size_t{128} << 20);
  Obj obj(*pool, "o", params(threads), kRegion);
  ferrite::test::run_conservation(
      threads, scaled(10000, 200),
      [&](int t, std::uint64_t, std::int64_t v) {
        std::int64_t out;
        obj.apply(t, true, v, &out);
      },
      [&](int t, std::uint64_t, std::int64_t* out) { return obj.apply(t, false, 0, out); }, fifo);
  quiescent(obj);
}

// Writers (half the threads) multiply by powers of two while readers read:
// the final value is exactly 2^(doublings - halvings), and every value a
// reader sees is a power of two (a committed value, never a torn one).
template <class Float>
void float_readers(const char* tag, int threads) {
  TempPool pool(tag, std::size_t{16} << 20);
  Float f(*pool, "f", params(threads), std::size_t{1} << 20);
  const int per = scaled(2000, 100);
  const int writers = threads / 2;
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      std::int64_t v = 0;
      for (int i = 0; i < per; ++i) {
        if (t < writers) {
          // *2 at odd i and at multiples of 8, else *0.5: +2 doublings per
          // 8 operations, so the value stays finite (2^1000 at most).
          const double k = (i % 8 == 0) ? 2.0 : ((i % 2) ? 2.0 : 0.5);
          f.apply(t, true, std::bit_cast<std::int64_t>(k), &v);
        } else {
          f.apply(t, false, 0, &v);
          const double d = std::bit_cast<double>(v);
          int e = 0;
          if (std::frexp(d, &e) != 0.5) bad.fetch_add(1);  // not a power of two: a torn value
        }
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
  int twos = 0, halves = 0;
  for (int i = 0; i < per; ++i) {
    if (i % 8 == 0 || i % 2 == 1) ++twos;
    else ++halves;
  }
  std::int64_t v = 0;
  f.apply(0, false, 0, &v);
  EXPECT_EQ(std::bit_cast<double>(v), std::ldexp(1.0, writers * (twos - halves)));
  quiescent(f);
}

// The PTMs under one set of stress tests: each binds its object template
// (RedoOpt under both elections) to the sequential objects.
struct Romulus {
  template <template <unsigned, class> class S>
  using Obj = fb::RomulusObject<S>;
  static constexpr const char* kName = "romulus";
};
// Readers run on curComb's replica while a combiner writes another one.
struct RedoOpt {
  template <template <unsigned, class> class S>
  using Obj = fb::RedoOptObject<S>;
  static constexpr const char* kName = "redoopt";
};
// The combiner elected by a lock (the ablation redoopt-*-lock).
struct RedoOptLock {
  template <template <unsigned, class> class S>
  using Obj = fb::RedoOptObject<S, fb::kNoFaults, fb::RedoOptElection::kLock>;
  static constexpr const char* kName = "redoopt_lock";
};
// Read-only transactions validate every load by its seq while writers
// commit: they see only committed values.
struct OneFile {
  template <template <unsigned, class> class S>
  using Obj = fb::OneFileObject<S>;
  static constexpr const char* kName = "onefile";
};
struct OneFileWF {
  template <template <unsigned, class> class S>
  using Obj = fb::OneFileWFObject<S>;
  static constexpr const char* kName = "onefile_wf";
};

}  // namespace

// Outside the anonymous namespace: PtmStress (below) takes it as a parameter
// type, and a unity build (CMakeLists.txt) compiles this file as an included
// one, where GCC warns of a class with linkage whose base names a type
// without (-Wsubobject-linkage).
struct Ptm {
  const char* name;
  void (*stack)(int threads);
  void (*queue)(int threads);
  void (*heap)(int threads);
  void (*floats)(int threads);
};
void PrintTo(const Ptm& p, std::ostream* os) { *os << p.name; }

namespace {

template <class P>
std::string tag(const char* what) {
  return std::string(P::kName) + what;
}
template <class P>
Ptm bind() {
  return {P::kName,
          [](int t) { conservation<typename P::template Obj<fb::SeqStack>>(tag<P>("-st").c_str(), t, false); },
          [](int t) { conservation<typename P::template Obj<fb::SeqQueue>>(tag<P>("-qu").c_str(), t, true); },
          [](int t) { conservation<typename P::template Obj<fb::SeqHeap>>(tag<P>("-hp").c_str(), t, false); },
          [](int t) { float_readers<typename P::template Obj<fb::SeqFloat>>(tag<P>("-fl").c_str(), t); }};
}

}  // namespace

class PtmStress : public ::testing::TestWithParam<std::tuple<Ptm, int>> {
 protected:
  const Ptm& ptm() const { return std::get<0>(GetParam()); }
  int threads() const { return std::get<1>(GetParam()); }
};
TEST_P(PtmStress, StackConservesItsElements) { ptm().stack(threads()); }
TEST_P(PtmStress, QueueConservesItsElementsInProducerOrder) { ptm().queue(threads()); }
TEST_P(PtmStress, HeapConservesItsElements) { ptm().heap(threads()); }
TEST_P(PtmStress, FloatReadersSeeOnlyCommittedValues) { ptm().floats(threads()); }
INSTANTIATE_TEST_SUITE_P(Threads, PtmStress,
                         ::testing::Combine(::testing::Values(bind<Romulus>(), bind<RedoOpt>(), bind<RedoOptLock>(),
                                                              bind<OneFile>(), bind<OneFileWF>()),
                                            ::testing::Values(2, 3, 4)),
                         [](const auto& i) {
                           return std::string(std::get<0>(i.param).name) + "_" + std::to_string(std::get<1>(i.param)) +
                                  "threads";
                         });

const auto threads_name = [](const auto& i) { return std::to_string(i.param) + "threads"; };

class RedoOptStress : public ::testing::TestWithParam<int> {};

// Wait-free election: every thread adds 1 to one word through update_op();
// a thread running its own operation yields inside it every other time, so
// the others' combiners may apply it (helping; RedoOptHelping below makes
// it certain), and the losers of the CAS on
// curComb have applied it too, to a replica that is dropped. Each operation
// is applied exactly once to the committed state: the old values returned
// are 0 .. n-1, each once, and the word ends at n.
//
// Bounded attempts: with the default 2N replicas (N = threads) an update
// needs at most N combine attempts — each lost attempt saw a batch commit,
// and at most N - 1 batches that read the announcements before ours (one
// per other thread) commit without it (redoopt.h, "Bounded attempts"). With
// three replicas it took up to 2,301 at 4 threads.
TEST_P(RedoOptStress, HelpedOperationsAreAppliedExactlyOnceWithTheirResults) {
  const int threads = GetParam();
  const int per = scaled(3000, 100);
  TempPool pool("redo-help", std::size_t{16} << 20);
  fb::RedoOpt<> ptm(*pool, "r", {threads, std::size_t{1} << 16});
  ASSERT_EQ(ptm.replicas(), std::max(3, 2 * threads));
  std::uint64_t off = 0;
  ptm.transaction([&](int k) {
    auto* w = static_cast<std::uint64_t*>(ptm.alloc(k, 8));
    ptm.store(k, w, std::uint64_t{0});
    off = static_cast<std::uint64_t>(reinterpret_cast<std::uint8_t*>(w) - ptm.base(k));
  });
  std::vector<std::vector<std::int64_t>> outs(static_cast<std::size_t>(threads));
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      for (int k = 0; k < per; ++k) {
        const fb::RedoOptResult r =
            ptm.update_op(t, {true, 1}, [&](int j, int i, const fb::RedoOptOp& op, std::int64_t* out) {
              auto* w = reinterpret_cast<std::uint64_t*>(ptm.base(j) + off);
              const std::uint64_t x = *w;
              if (i == t && k % 2 == 1) std::this_thread::yield();  // stall in our own operation
              ptm.store(j, w, x + static_cast<std::uint64_t>(op.arg));
              *out = static_cast<std::int64_t>(x);
              return true;
            });
        EXPECT_TRUE(r.ok);
        outs[static_cast<std::size_t>(t)].push_back(r.out);
      }
    });
  for (auto& t : ts) t.join();
  std::vector<std::int64_t> all;
  for (auto& o : outs) {
    // A thread's own operations are sequential: its old values increase.
    for (std::size_t k = 1; k < o.size(); ++k) EXPECT_LT(o[k - 1], o[k]);
    all.insert(all.end(), o.begin(), o.end());
  }
  std::sort(all.begin(), all.end());
  const auto n = static_cast<std::int64_t>(threads) * per;
  ASSERT_EQ(static_cast<std::int64_t>(all.size()), n);
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(all[static_cast<std::size_t>(i)], i);
  std::uint64_t final = 0;
  ptm.read(0, [&](int j) { final = *reinterpret_cast<const std::uint64_t*>(ptm.base(j) + off); });
  EXPECT_EQ(final, static_cast<std::uint64_t>(n));
  EXPECT_EQ(ptm.seq(), ptm.commits() + 1) << "one commit per announced batch, plus the transaction";
  EXPECT_LE(ptm.max_attempts(), static_cast<std::uint64_t>(threads)) << "an update needed more than N attempts";
  // How many were helped depends on the schedule (under ASan at two threads
  // the threads may not overlap at all): RedoOptHelping forces it.
  std::printf("[redoopt-wf] %d threads, %d replicas: %lld ops, %llu committed batches, %llu applied for another "
              "thread, at most %llu combine attempts per update, %llu full C2 passes, %llu whole copies\n",
              threads, ptm.replicas(), static_cast<long long>(n), static_cast<unsigned long long>(ptm.commits()),
              static_cast<unsigned long long>(ptm.helped()), static_cast<unsigned long long>(ptm.max_attempts()),
              static_cast<unsigned long long>(ptm.full_passes()), static_cast<unsigned long long>(ptm.copies()));
}

INSTANTIATE_TEST_SUITE_P(Threads, RedoOptStress, ::testing::Values(2, 3, 4), threads_name);

class OneFileWFStress : public ::testing::TestWithParam<int> {};
// Every thread adds 1 to one word through update(); a thread running its
// own operation yields inside its transaction every other time, so the
// others' aggregated transactions may run it (helping; OneFileWFHelping
// below makes it certain). Each operation is
// applied exactly once: the old values returned are 0 .. n-1, each once,
// and the word ends at n; no update needed more than
// kOneFileWaitFreeAttempts transactions (update() throws otherwise).
TEST_P(OneFileWFStress, HelpedOperationsAreAppliedExactlyOnceWithTheirResults) {
  const int threads = GetParam();
  const int per = scaled(3000, 100);
  TempPool pool("ofwf-help", std::size_t{16} << 20);
  fb::OneFile<> ptm(*pool, "r", {threads, std::size_t{1} << 16});
  std::uint64_t* word = nullptr;
  ptm.transaction(0, [&] {
    word = static_cast<std::uint64_t*>(ptm.alloc(8));
    ptm.store(word, std::uint64_t{0});
  });
  std::vector<std::vector<std::int64_t>> outs(static_cast<std::size_t>(threads));
  std::atomic<int> failures{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      for (int k = 0; k < per; ++k) {
        const fb::OneFileResult r = ptm.update(t, {true, 1}, [&](int i, const fb::OneFileOp& op, std::int64_t* out) {
          const std::uint64_t x = ptm.load(word);
          if (i == t && k % 2 == 1) std::this_thread::yield();  // stall in our own operation
          ptm.store(word, x + static_cast<std::uint64_t>(op.arg));
          *out = static_cast<std::int64_t>(x);
          return true;
        });
        if (!r.ok) failures.fetch_add(1);
        outs[static_cast<std::size_t>(t)].push_back(r.out);
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(failures.load(), 0);
  std::vector<std::int64_t> all;
  for (auto& o : outs) {
    // A thread's own operations are sequential: its old values increase.
    for (std::size_t k = 1; k < o.size(); ++k) EXPECT_LT(o[k - 1], o[k]);
    all.insert(all.end(), o.begin(), o.end());
  }
  std::sort(all.begin(), all.end());
  const auto n = static_cast<std::int64_t>(threads) * per;
  ASSERT_EQ(static_cast<std::int64_t>(all.size()), n);
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(all[static_cast<std::size_t>(i)], i);
  std::uint64_t final = 0;
  ptm.transaction(0, [&] { final = ptm.load(word); });
  EXPECT_EQ(final, static_cast<std::uint64_t>(n));
  // How many were helped depends on the schedule: OneFileWFHelping forces it.
  EXPECT_LE(ptm.max_attempts(), static_cast<std::uint64_t>(fb::kOneFileWaitFreeAttempts));
  std::printf("[onefile-wf] %d threads: %llu ops, %llu committed update transactions, %llu run for another "
              "thread, %llu aborts, at most %llu transactions per update\n",
              threads, static_cast<unsigned long long>(ptm.wf_ops()),
              static_cast<unsigned long long>(ptm.wf_commits()), static_cast<unsigned long long>(ptm.helped()),
              static_cast<unsigned long long>(ptm.aborts()), static_cast<unsigned long long>(ptm.max_attempts()));
}
INSTANTIATE_TEST_SUITE_P(Threads, OneFileWFStress, ::testing::Values(2, 3, 4), threads_name);

namespace {

// Forced helping. Thread 0 stalls inside its own operation (announced, in
// its own transaction or combine) until thread 1's update has returned.
// Thread 0 commits nothing meanwhile, so the committed state that answered
// thread 1 was built by thread 1 after thread 0 announced: it ran thread
// 0's operation too. helped() must count it, the two results must be 0 and
// 1, and the word must end at 2. Waits are bounded (30 s), so a PTM that
// waits for the stalled thread fails the test instead of hanging it.
class StallOnce {
 public:
  // In thread 0's own operation: the first call stalls until release().
  void stall() {
    if (stalled_.exchange(true)) return;
    wait_for(released_, "thread 1's update to return");
  }
  void wait_stalled() { wait_for(stalled_, "thread 0 to stall in its own operation"); }
  void release() { released_.store(true); }
  bool timed_out() const { return timed_out_.load(); }

 private:
  void wait_for(const std::atomic<bool>& flag, const char* what) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!flag.load()) {
      if (std::chrono::steady_clock::now() > until) {
        std::fprintf(stderr, "waited 30 s for %s\n", what);
        timed_out_.store(true);
        return;
      }
      std::this_thread::yield();
    }
  }
  std::atomic<bool> stalled_{false}, released_{false}, timed_out_{false};
};

// The forced-helping scenario on a PTM whose update is add(t, gate): thread
// 0's call stalls in its own operation (gate.stall()) until thread 1's has
// returned; final() reads the word after both.
template <class Add, class Helped, class Final>
void expect_stalled_operation_helped(StallOnce& gate, Add&& add, Helped&& helped_now, Final&& final) {
  decltype(add(0)) r0{};
  std::thread t0([&] { r0 = add(0); });
  gate.wait_stalled();
  const auto r1 = add(1);
  const std::uint64_t helped = helped_now();
  gate.release();
  t0.join();
  ASSERT_FALSE(gate.timed_out());
  EXPECT_GE(helped, 1u) << "thread 1's committed update did not count thread 0's operation";
  EXPECT_TRUE(r0.ok && r1.ok);
  EXPECT_EQ(std::min(r0.out, r1.out), 0);
  EXPECT_EQ(std::max(r0.out, r1.out), 1);
  EXPECT_EQ(final(), 2u) << "an operation was applied twice or lost";
}

TEST(OneFileWFHelping, AnOperationStalledInItsOwnTransactionIsRunByAnotherThread) {
  TempPool pool("ofwf-force", std::size_t{16} << 20);
  fb::OneFile<> ptm(*pool, "r", {2, std::size_t{1} << 16});
  std::uint64_t* word = nullptr;
  ptm.transaction(0, [&] {
    word = static_cast<std::uint64_t*>(ptm.alloc(8));
    ptm.store(word, std::uint64_t{0});
  });
  StallOnce gate;
  expect_stalled_operation_helped(
      gate,
      [&](int t) {
        return ptm.update(t, {true, 1}, [&, t](int i, const fb::OneFileOp& op, std::int64_t* out) {
          const std::uint64_t x = ptm.load(word);
          if (t == 0 && i == 0) gate.stall();
          ptm.store(word, x + static_cast<std::uint64_t>(op.arg));
          *out = static_cast<std::int64_t>(x);
          return true;
        });
      },
      [&] { return ptm.helped(); },
      [&] {
        std::uint64_t v = 0;
        ptm.transaction(0, [&] { v = ptm.load(word); });
        return v;
      });
}

TEST(RedoOptHelping, AnOperationStalledInItsOwnCombineIsAppliedByAnotherCombiner) {
  TempPool pool("redo-force", std::size_t{16} << 20);
  fb::RedoOpt<> ptm(*pool, "r", {2, std::size_t{1} << 16, 3});
  std::uint64_t off = 0;
  ptm.transaction([&](int k) {
    auto* w = static_cast<std::uint64_t*>(ptm.alloc(k, 8));
    ptm.store(k, w, std::uint64_t{0});
    off = static_cast<std::uint64_t>(reinterpret_cast<std::uint8_t*>(w) - ptm.base(k));
  });
  StallOnce gate;
  expect_stalled_operation_helped(
      gate,
      [&](int t) {
        return ptm.update_op(t, {true, 1}, [&, t](int j, int i, const fb::RedoOptOp& op, std::int64_t* out) {
          auto* w = reinterpret_cast<std::uint64_t*>(ptm.base(j) + off);
          const std::uint64_t x = *w;
          if (t == 0 && i == 0) gate.stall();
          ptm.store(j, w, x + static_cast<std::uint64_t>(op.arg));
          *out = static_cast<std::int64_t>(x);
          return true;
        });
      },
      [&] { return ptm.helped(); },
      [&] {
        std::uint64_t v = 0;
        ptm.read(0, [&](int j) { v = *reinterpret_cast<const std::uint64_t*>(ptm.base(j) + off); });
        return v;
      });
}

// C2 with 2N replicas (N = 3): thread 1 is stalled reading a replica that
// is no longer curComb's, thread 2 is stalled in its own operation holding
// a replica; thread 0's update still finds a free replica on its first
// pass, applies thread 2's announced operation with its own, and returns
// while both stay stalled. With three replicas (the old default, the
// broken configuration here) the same update finds none: its C2 passes
// fail until a stalled thread moves.
struct Stalls {
  fb::RedoOpt<> ptm;
  std::uint64_t off = 0;
  StallOnce reader, owner;
  std::atomic<bool> arm{false};
  Stalls(ferrite::pmem::Pool& pool, int replicas) : ptm(pool, "r", {3, std::size_t{1} << 16, replicas}) {
    ptm.transaction([&](int k) {
      auto* w = static_cast<std::uint64_t*>(ptm.alloc(k, 8));
      ptm.store(k, w, std::uint64_t{0});
      off = static_cast<std::uint64_t>(reinterpret_cast<std::uint8_t*>(w) - ptm.base(k));
    });
  }
  fb::RedoOptResult add(int t) {
    return ptm.update_op(t, {true, 1}, [this, t](int j, int i, const fb::RedoOptOp& op, std::int64_t* out) {
      auto* w = reinterpret_cast<std::uint64_t*>(ptm.base(j) + off);
      const std::uint64_t x = *w;
      if (t == 2 && i == 2 && arm.load()) owner.stall();
      ptm.store(j, w, x + static_cast<std::uint64_t>(op.arg));
      *out = static_cast<std::int64_t>(x);
      return true;
    });
  }
  // Thread 1 stalls reading replica k0; thread 2 commits (k0 is stale) and
  // then stalls in its own next operation, on a replica of its own.
  void stall_two(std::thread& t1, std::thread& t2) {
    t1 = std::thread([&] { ptm.read(1, [&](int) { reader.stall(); }); });
    reader.wait_stalled();
    t2 = std::thread([&] {
      add(2);
      arm.store(true);
      add(2);
    });
    owner.wait_stalled();
  }
  std::uint64_t word() {
    std::uint64_t v = 0;
    ptm.read(0, [&](int j) { v = *reinterpret_cast<const std::uint64_t*>(ptm.base(j) + off); });
    return v;
  }
};

TEST(RedoOptBound, WithTwoReplicasPerThreadAnUpdateFindsOneWhileTwoThreadsStall) {
  TempPool pool("redo-bound", std::size_t{16} << 20);
  Stalls s(*pool, 0);
  ASSERT_EQ(s.ptm.replicas(), 6);
  std::thread t1, t2;
  s.stall_two(t1, t2);
  const fb::RedoOptResult r0 = s.add(0);  // both still stalled
  const auto passes = s.ptm.full_passes();
  const auto attempts = s.ptm.max_attempts();
  const auto helped = s.ptm.helped();
  s.reader.release();
  s.owner.release();
  t1.join();
  t2.join();
  ASSERT_FALSE(s.reader.timed_out() || s.owner.timed_out());
  EXPECT_EQ(passes, 0u) << "C2 found no free replica among 2N";
  EXPECT_EQ(attempts, 1u);
  EXPECT_EQ(helped, 1u) << "thread 0's batch did not apply thread 2's announced operation";
  EXPECT_TRUE(r0.ok);
  EXPECT_EQ(s.word(), 3u);
}

TEST(RedoOptBound, WithThreeReplicasTheSameUpdateWaitsForAStalledThread) {
  TempPool pool("redo-bound3", std::size_t{16} << 20);
  Stalls s(*pool, 3);
  std::thread t1, t2;
  s.stall_two(t1, t2);
  std::atomic<bool> returned{false};
  std::thread t0([&] {
    s.add(0);
    returned.store(true);
  });
  // Its C2 finds every other replica owned or read, and looks again.
  while (s.ptm.full_passes() == 0 && !returned.load()) std::this_thread::yield();
  EXPECT_FALSE(returned.load()) << "an update returned with no free replica";
  s.reader.release();
  s.owner.release();
  t0.join();
  t1.join();
  t2.join();
  EXPECT_GE(s.ptm.full_passes(), 1u);
  EXPECT_EQ(s.word(), 3u);
}

// An operation that throws in another thread's combiner: the combiner's
// batch is dropped, the failure recorded as that operation's result, and
// only its announcer gets the exception (the combiner's own update
// returns); the failed operation has no effect. Thread 1 stalls in its own
// operation; thread 0's function throws on thread 1's operation.
TEST(RedoOptFailure, AnOperationThatThrowsInAnotherThreadsCombinerIsRethrownToItsAnnouncerOnly) {
  TempPool pool("redo-throw", std::size_t{16} << 20);
  fb::RedoOpt<> ptm(*pool, "r", {2, std::size_t{1} << 16});
  std::uint64_t off = 0;
  ptm.transaction([&](int k) {
    auto* w = static_cast<std::uint64_t*>(ptm.alloc(k, 8));
    ptm.store(k, w, std::uint64_t{0});
    off = static_cast<std::uint64_t>(reinterpret_cast<std::uint8_t*>(w) - ptm.base(k));
  });
  StallOnce gate;
  auto add = [&](int t) {
    return ptm.update_op(t, {true, t == 1 ? 10 : 1}, [&, t](int j, int i, const fb::RedoOptOp& op, std::int64_t* out) {
      auto* w = reinterpret_cast<std::uint64_t*>(ptm.base(j) + off);
      const std::uint64_t x = *w;
      ptm.store(j, w, x + static_cast<std::uint64_t>(op.arg));  // a partial effect, then
      if (t == 0 && i == 1) throw std::runtime_error("thread 1's operation failed in thread 0's combiner");
      if (t == 1 && i == 1) gate.stall();
      *out = static_cast<std::int64_t>(x);
      return true;
    });
  };
  std::string caught;
  std::thread t1([&] {
    try {
      add(1);
    } catch (const std::runtime_error& e) {
      caught = e.what();
    }
  });
  gate.wait_stalled();
  fb::RedoOptResult r0;
  bool threw0 = false;
  try {
    r0 = add(0);
  } catch (...) {
    threw0 = true;
  }
  gate.release();
  t1.join();
  ASSERT_FALSE(gate.timed_out());
  EXPECT_FALSE(threw0) << "the combiner got another thread's exception";
  EXPECT_TRUE(r0.ok);
  EXPECT_EQ(r0.out, 0);
  EXPECT_EQ(caught, "thread 1's operation failed in thread 0's combiner");
  std::uint64_t final = 0;
  ptm.read(0, [&](int j) { final = *reinterpret_cast<const std::uint64_t*>(ptm.base(j) + off); });
  EXPECT_EQ(final, 1u) << "the failed operation left an effect, or thread 0's was lost";
  // Both threads go on.
  EXPECT_EQ(add(0).out, 1);
}

// A thread's own operation that throws in its own batch: rethrown to it,
// no effect, and the next operation runs.
TEST(RedoOptFailure, AnOperationThatThrowsInItsOwnBatchIsRethrownWithoutEffect) {
  TempPool pool("redo-throw1", std::size_t{16} << 20);
  fb::RedoOpt<> ptm(*pool, "r", {1, std::size_t{1} << 16});
  std::uint64_t off = 0;
  ptm.transaction([&](int k) {
    auto* w = static_cast<std::uint64_t*>(ptm.alloc(k, 8));
    ptm.store(k, w, std::uint64_t{0});
    off = static_cast<std::uint64_t>(reinterpret_cast<std::uint8_t*>(w) - ptm.base(k));
  });
  auto add = [&](std::int64_t arg) {
    return ptm.update_op(0, {true, arg}, [&](int j, int, const fb::RedoOptOp& op, std::int64_t* out) {
      auto* w = reinterpret_cast<std::uint64_t*>(ptm.base(j) + off);
      const std::uint64_t x = *w;
      ptm.store(j, w, x + static_cast<std::uint64_t>(op.arg));
      if (op.arg < 0) throw std::invalid_argument("negative");
      *out = static_cast<std::int64_t>(x);
      return true;
    });
  };
  EXPECT_EQ(add(5).out, 0);
  EXPECT_THROW(add(-1), std::invalid_argument);
  EXPECT_EQ(add(2).out, 5) << "the failed operation left an effect";
  EXPECT_THROW(add(-3), std::invalid_argument);
  EXPECT_EQ(add(1).out, 7);
}

// Failures under contention: every fifth operation of each thread throws
// in whichever combiner runs it (as a full region would). Each throws to
// its own announcer, exactly once, and has no effect; the others are
// applied exactly once (old values 0 .. m-1, the word ends at m), and no
// thread gets another's exception.
class RedoOptFailureStress : public ::testing::TestWithParam<int> {};
TEST_P(RedoOptFailureStress, EachFailedOperationThrowsToItsAnnouncerOnlyAndHasNoEffect) {
  const int threads = GetParam();
  const int per = scaled(2000, 100);
  TempPool pool("redo-fails", std::size_t{16} << 20);
  fb::RedoOpt<> ptm(*pool, "r", {threads, std::size_t{1} << 16});
  std::uint64_t off = 0;
  ptm.transaction([&](int k) {
    auto* w = static_cast<std::uint64_t*>(ptm.alloc(k, 8));
    ptm.store(k, w, std::uint64_t{0});
    off = static_cast<std::uint64_t>(reinterpret_cast<std::uint8_t*>(w) - ptm.base(k));
  });
  struct Fail {
    int t;
    std::int64_t k;
  };
  std::vector<std::vector<std::int64_t>> outs(static_cast<std::size_t>(threads));
  std::vector<int> failures(static_cast<std::size_t>(threads), 0), wrong(static_cast<std::size_t>(threads), 0);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      for (int k = 0; k < per; ++k) {
        const bool fails = k % 5 == 4;
        try {
          // insert = false: an operation that throws (after a partial
          // store); the arg names its announcer and index.
          const fb::RedoOptResult r = ptm.update_op(
              t, {!fails, static_cast<std::int64_t>(t) * per + k},
              [&](int j, int i, const fb::RedoOptOp& op, std::int64_t* out) {
                auto* w = reinterpret_cast<std::uint64_t*>(ptm.base(j) + off);
                const std::uint64_t x = *w;
                if (i == t && k % 3 == 1) std::this_thread::yield();  // let others run ours
                ptm.store(j, w, x + 1);
                if (!op.insert) throw Fail{static_cast<int>(op.arg / per), op.arg % per};
                *out = static_cast<std::int64_t>(x);
                return true;
              });
          if (fails) ++wrong[static_cast<std::size_t>(t)];
          outs[static_cast<std::size_t>(t)].push_back(r.out);
        } catch (const Fail& f) {
          ++failures[static_cast<std::size_t>(t)];
          if (!fails || f.t != t || f.k != k) ++wrong[static_cast<std::size_t>(t)];
        }
      }
    });
  for (auto& t : ts) t.join();
  std::vector<std::int64_t> all;
  for (int t = 0; t < threads; ++t) {
    EXPECT_EQ(failures[static_cast<std::size_t>(t)], per / 5) << "thread " << t;
    EXPECT_EQ(wrong[static_cast<std::size_t>(t)], 0) << "thread " << t << " got another operation's outcome";
    all.insert(all.end(), outs[static_cast<std::size_t>(t)].begin(), outs[static_cast<std::size_t>(t)].end());
  }
  std::sort(all.begin(), all.end());
  const auto m = static_cast<std::int64_t>(all.size());
  ASSERT_EQ(m, static_cast<std::int64_t>(threads) * (per - per / 5));
  for (std::int64_t i = 0; i < m; ++i) ASSERT_EQ(all[static_cast<std::size_t>(i)], i);
  std::uint64_t final = 0;
  ptm.read(0, [&](int j) { final = *reinterpret_cast<const std::uint64_t*>(ptm.base(j) + off); });
  EXPECT_EQ(final, static_cast<std::uint64_t>(m)) << "a failed operation left an effect, or one was lost";
  std::printf("[redoopt-wf] failures, %d threads: %lld failed, %lld applied, %llu committed batches, %llu applied "
              "for another thread\n",
              threads, static_cast<long long>(threads) * (per / 5), static_cast<long long>(m),
              static_cast<unsigned long long>(ptm.commits()), static_cast<unsigned long long>(ptm.helped()));
}
INSTANTIATE_TEST_SUITE_P(Threads, RedoOptFailureStress, ::testing::Values(2, 3, 4), threads_name);

}  // namespace

}  // namespace ptm_stress_test
