// tests/common/conservation.h — the multithreaded conservation check of a
// container: everything inserted is removed exactly once, nothing invented,
// and (for a queue) each producer's values come out in order.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <thread>
#include <vector>

namespace ferrite::test {

// Runs `threads` workers, each inserting `per_thread` unique values
// ((tid+1) << 32 | i) interleaved with removes; then drains. Checks that
// every inserted value was removed exactly once and nothing was invented.
// With fifo = true also checks per-producer FIFO order as seen by each
// consumer (a queue); with fifo = false only conservation.
inline void run_conservation(int threads, int per_thread,
                             const std::function<void(int, std::uint64_t, std::int64_t)>& insert,
                             const std::function<bool(int, std::uint64_t, std::int64_t*)>& remove,
                             bool fifo) {
  std::vector<std::vector<std::int64_t>> got(static_cast<std::size_t>(threads));
  std::atomic<int> go{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      go.fetch_add(1);
      while (go.load() < threads) std::this_thread::yield();
      std::uint64_t seq = 1;
      for (int i = 0; i < per_thread; ++i) {
        insert(t, seq++, (static_cast<std::int64_t>(t + 1) << 32) | i);
        std::int64_t v;
        if (remove(t, seq++, &v)) got[static_cast<std::size_t>(t)].push_back(v);
      }
    });
  }
  for (auto& th : ts) th.join();
  std::vector<std::int64_t> rest;
  std::int64_t v;
  std::uint64_t seq = 1u << 30;
  while (remove(0, seq++, &v)) rest.push_back(v);
  std::map<std::int64_t, int> seen;
  for (auto& g : got)
    for (auto x : g) ++seen[x];
  for (auto x : rest) ++seen[x];
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(threads) * static_cast<std::size_t>(per_thread));
  for (auto& [x, n] : seen) {
    ASSERT_EQ(n, 1) << "value " << x << " removed " << n << " times";
    const std::int64_t producer = (x >> 32) - 1, idx = x & 0xffffffff;
    ASSERT_TRUE(producer >= 0 && producer < threads && idx < per_thread) << "invented value " << x;
  }
  if (fifo) {
    // Each consumer sees each producer's values in increasing order.
    auto check = [&](const std::vector<std::int64_t>& seq_seen) {
      std::map<std::int64_t, std::int64_t> last;
      for (auto x : seq_seen) {
        auto p = x >> 32;
        auto it = last.find(p);
        if (it != last.end()) {
          ASSERT_LT(it->second, x) << "per-producer FIFO violated";
        }
        last[p] = x;
      }
    };
    for (auto& g : got) check(g);
    check(rest);
  }
}

}  // namespace ferrite::test
