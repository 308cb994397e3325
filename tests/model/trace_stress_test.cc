// tests/model/trace_stress_test.cc — the trace backend under many threads
// (also run under TSan): every thread's events land in its own stream, in
// its program order, and the acquires of each lock are numbered 0, 1, 2,
// ... in the order the lock was really handed over.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "common/scale.h"
#include "ferrite/logging/undo_log.h"
#include "ferrite/model/trace.h"
#include "ferrite/persist/persist.h"

namespace trace_stress_test {  // this file's names, apart in a unity build

namespace {

namespace fm = ferrite::model;
namespace fp = ferrite::persist;
using K = fm::EventKind;

TEST(TraceBackendStress, ConcurrentThreadsKeepTheirStreamsAndTheLockOrder) {
  constexpr int kThreads = 4;
  constexpr int kLocks = 3;
  const int ops = ferrite::test::scaled(20000, 500);
  ferrite::logging::Lock locks[kLocks];
  alignas(64) static std::uint64_t cells[kThreads][8];
  // Per lock, the threads in the order they really took it (guarded by
  // the lock itself).
  std::vector<int> order[kLocks];
  fm::start_recording({.max_threads = kThreads});
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      fm::set_thread(t);
      for (int i = 0; i < ops; ++i) {
        auto& l = locks[(i + t) % kLocks];
        l.lock_for_read();
        order[(i + t) % kLocks].push_back(t);
        fp::store(&cells[t][0], static_cast<std::uint64_t>(i));
        fp::pwb(&cells[t][0], 8);
        fp::pfence();
        l.unlock_for_read();
        fm::note_op_end();
      }
    });
  for (auto& th : ts) th.join();
  const fm::Trace tr = fm::stop_recording();
  ASSERT_EQ(tr.threads.size(), static_cast<std::size_t>(kThreads));
  EXPECT_EQ(tr.ops, static_cast<std::uint64_t>(kThreads) * static_cast<std::uint64_t>(ops));
  // Lock index -> (acquire seq -> thread), from the trace.
  std::vector<std::vector<int>> seen(kLocks * 4);
  const K pattern[] = {K::kAcquire, K::kStore, K::kPwb, K::kPfence, K::kRelease, K::kOpEnd};
  for (int t = 0; t < kThreads; ++t) {
    const auto& ev = tr.threads[static_cast<std::size_t>(t)];
    ASSERT_EQ(ev.size(), static_cast<std::size_t>(ops) * std::size(pattern)) << t;
    const std::uint64_t line = (reinterpret_cast<std::uintptr_t>(&cells[t][0]) >> 6) & fm::kPayloadMask;
    for (std::size_t i = 0; i < ev.size(); ++i) {
      ASSERT_EQ(ev[i].kind(), pattern[i % std::size(pattern)]) << "thread " << t << " event " << i;
      if (ev[i].kind() == K::kStore || ev[i].kind() == K::kPwb) {
        ASSERT_EQ(ev[i].line(), line);
      }
      if (ev[i].kind() == K::kAcquire) {
        auto& s = seen[ev[i].lock()];
        if (s.size() <= ev[i].lock_seq()) s.resize(ev[i].lock_seq() + 1, -1);
        ASSERT_EQ(s[ev[i].lock_seq()], -1) << "two acquires with one number";
        s[ev[i].lock_seq()] = t;
      }
    }
  }
  // Each lock's numbering is the real hand-off order (the trace numbers
  // locks by first use, so match the sequences as a set).
  std::vector<std::vector<int>> want(order, order + kLocks), got;
  for (auto& s : seen)
    if (!s.empty()) got.push_back(s);
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
}

}  // namespace

}  // namespace trace_stress_test
