// tests/baselines/set_checks.h — checks shared by the set/map competitor
// tests (durable_sets_test.cc, durable_ordered_test.cc): sequential
// behaviour against std::map, and concurrent threads that each own their
// keys on shared structure.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <thread>
#include <vector>

namespace ferrite::test {

inline std::uint64_t next(std::uint64_t& r) {
  r = r * 6364136223846793005ull + 1442695040888963407ull;
  return r >> 33;
}

// Random put/get/erase (map) and insert/remove/contains (set) on `t`
// (a table with the member functions `call` adapts), checked op by op
// against std::map.
// `set`: the table is a set; the answer is 0 for "present" (nullopt absent).
template <class Call>
void matches_std_map(Call&& call, int ops, std::int64_t keys, bool set = false) {
  std::map<std::int64_t, std::int64_t> ref;
  std::uint64_t r = 42;
  for (int i = 0; i < ops; ++i) {
    const auto k = static_cast<std::int64_t>(next(r) % static_cast<std::uint64_t>(keys)) + 1;
    const auto v = static_cast<std::int64_t>(i) + 1;
    const int c = static_cast<int>(next(r) % 3);
    std::optional<std::int64_t> want;
    const auto it = ref.find(k);
    if (it != ref.end()) want = set ? 0 : it->second;
    if (c == 0) ref[k] = v;
    if (c == 2 && it != ref.end()) ref.erase(it);
    ASSERT_EQ(call(c, k, v), want) << "op " << i << " kind " << c << " key " << k;
  }
}

template <class T>
std::optional<std::int64_t> map_op(T& t, int c, std::int64_t k, std::int64_t v, int tid) {
  if (c == 0) return t.put(k, v, tid);
  if (c == 1) return t.get(k, tid);
  return t.erase(k, tid);
}

// Each thread owns keys k with k % threads == tid (so the final state is
// known) but the lists are shared (few buckets): inserts and removes race
// on the same links.
template <class T>
void threads_conserve_their_keys(T& t, int threads, int rounds) {
  std::vector<std::thread> ts;
  for (int tid = 0; tid < threads; ++tid)
    ts.emplace_back([&, tid] {
      for (int i = 0; i < rounds; ++i) {
        const std::int64_t k = static_cast<std::int64_t>(i % 64) * threads + tid + 1;
        ASSERT_FALSE(t.put(k, i + 1, tid).has_value());
        ASSERT_EQ(t.get(k, tid), std::optional<std::int64_t>(i + 1));
        ASSERT_EQ(t.put(k, -k, tid), std::optional<std::int64_t>(i + 1));
        ASSERT_EQ(t.erase(k, tid), std::optional<std::int64_t>(-k));
        ASSERT_FALSE(t.get(k, tid).has_value());
      }
    });
  for (auto& th : ts) th.join();
  EXPECT_TRUE(t.items(true).empty());
}

// A set checked as a map: present <=> value 0 in the reference.
template <class T>
void set_matches_std_map(T& s, int ops, std::int64_t keys) {
  matches_std_map(
      [&](int c, std::int64_t k, std::int64_t) -> std::optional<std::int64_t> {
        const bool present = s.contains(k, 0);
        if (c == 0) {
          EXPECT_EQ(s.insert(k, 0), !present);
        }
        if (c == 2) {
          EXPECT_EQ(s.remove(k, 0), present);
        }
        return present ? std::optional<std::int64_t>(0) : std::nullopt;
      },
      ops, keys, /*set=*/true);
}

// Stress: each of `threads` threads owns the keys k with k % threads == tid
// and cycles them through put / get / put / erase (answers checked: nobody
// else touches them), while also reading the other threads' keys (answers
// unchecked: races on the same links are the point). Ends empty.
template <class T>
void hammer_owned_keys(T& t, int kThreads, int rounds) {
  std::vector<std::thread> ts;
  for (int tid = 0; tid < kThreads; ++tid)
    ts.emplace_back([&, tid] {
      for (int i = 0; i < rounds; ++i) {
        const std::int64_t k = static_cast<std::int64_t>(i % 32) * kThreads + tid + 1;
        ASSERT_FALSE(t.put(k, i + 1, tid).has_value());
        ASSERT_EQ(t.get(k, tid), std::optional<std::int64_t>(i + 1));
        ASSERT_EQ(t.put(k, -k, tid), std::optional<std::int64_t>(i + 1));
        (void)t.get(k + 1, tid);  // another thread's key
        ASSERT_EQ(t.erase(k, tid), std::optional<std::int64_t>(-k));
        ASSERT_FALSE(t.erase(k + 2 * kThreads, tid).has_value());  // own key of a later round: absent
      }
    });
  for (auto& th : ts) th.join();
  EXPECT_TRUE(t.items(true).empty());
}

}  // namespace ferrite::test
