// Unit tests of the ordered nbMontage maps (montage/bst.h, montage/skiplist.h): the map
// specification against std::map with one thread, a clean restart after a
// sync recovers exactly the state, and after concurrent updates (the
// removal paths of several erases helping each other) a restart recovers
// exactly the final state. Each runs on the persistent structures and on
// their transient originals (montage/transient_sys.h; no restart there:
// tests/montage/systems.h).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "common/temp_pool.h"
#include "ferrite/key32.h"
#include "ferrite/montage/bst.h"
#include "ferrite/montage/hash_map.h"
#include "ferrite/montage/skiplist.h"
#include "montage/systems.h"

namespace maps_test {  // this file's names, apart in a unity build

namespace fm = ferrite::montage;
using ferrite::test::TempPool;
using ferrite::test::montage_systems::kPersistent;
using ferrite::test::montage_systems::make;
using ferrite::test::montage_systems::restart;

namespace {

fm::EpochOptions manual() {
  fm::EpochOptions o;
  o.epoch_length = std::chrono::microseconds{0};
  return o;
}

// Reference-checked random operations: `n` puts, erases and gets (a third
// each, drawn from an LCG seeded `seed`) on key_of(r) keys, each answer
// checked against `ref` (a std::map) and `ref` updated.
template <class M, class K, class KeyOf>
void random_ops(M& m, std::map<K, std::int64_t>& ref, std::uint64_t seed, int n, KeyOf key_of) {
  auto expect = [&](const K& k) {
    auto it = ref.find(k);
    return it == ref.end() ? std::nullopt : std::optional<std::int64_t>(it->second);
  };
  std::uint64_t r = seed;
  for (int i = 0; i < n; ++i) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    const K k = key_of(r);
    const auto c = (r >> 20) % 3;
    if (c == 0) {
      EXPECT_EQ(m.put(0, k, i), expect(k));
      ref[k] = i;
    } else if (c == 1) {
      EXPECT_EQ(m.erase(0, k), expect(k));
      ref.erase(k);
    } else {
      EXPECT_EQ(m.get(0, k), expect(k));
    }
  }
}

template <class M>
class OrderedMap : public ::testing::Test {};
using Maps = ::testing::Types<fm::Bst<>, fm::SkipList<>, fm::TransientBst, fm::TransientSkipList>;
TYPED_TEST_SUITE(OrderedMap, Maps);

TYPED_TEST(OrderedMap, PutGetEraseFollowTheMapSpecificationAndRecover) {
  using M = TypeParam;
  TempPool pool{"montage-maps"};
  std::map<std::int64_t, std::int64_t> ref;
  const typename M::Options opts{};
  auto m = make<M>(pool, "m", 1, manual(), opts);
  // Negative keys too: the sentinels are above every int64.
  random_ops(*m, ref, 1, 5000, [](std::uint64_t r) { return static_cast<std::int64_t>((r >> 33) % 200) - 100; });
  m->sync();
  std::vector<std::pair<std::int64_t, std::int64_t>> want(ref.begin(), ref.end());
  EXPECT_EQ(m->contents(), want);
  if constexpr (kPersistent<M>) {
    m.reset();
    m = restart<M>(pool, "m", 1, manual(), opts);
    EXPECT_EQ(m->contents(), want);
  }
  // The (recovered and rebuilt) index keeps working: every key, and new ones.
  for (auto& [k, v] : ref) EXPECT_EQ(m->put(0, k, v + 1), v);
  for (auto& [k, v] : ref) EXPECT_EQ(m->erase(0, k), v + 1);
  EXPECT_TRUE(m->contents().empty());
  EXPECT_EQ(m->put(0, 7, 1), std::nullopt);
  EXPECT_EQ(m->get(0, 7), 1);
}

TYPED_TEST(OrderedMap, AfterConcurrentUpdatesAndASyncARestartRecoversTheExactState) {
  using M = TypeParam;
  TempPool pool{"montage-maps"};
  std::vector<std::pair<std::int64_t, std::int64_t>> final_state;
  const typename M::Options opts{};
  {
    auto m = make<M>(pool, "m", 3, manual(), opts);
    std::vector<std::thread> ts;
    for (int t = 0; t < 3; ++t)
      ts.emplace_back([&, t] {
        std::uint64_t r = static_cast<std::uint64_t>(t) + 1;
        for (int i = 0; i < 6000; ++i) {
          r = r * 6364136223846793005ull + 1442695040888963407ull;
          const auto k = static_cast<std::int64_t>((r >> 33) % 32);
          const auto c = (r >> 20) % 16;
          if (c < 7) m->put(t, k, i * 4 + t);
          else if (c < 14) m->erase(t, k);
          else if (c < 15) m->get(t, k);
          else m->sync();
        }
      });
    for (auto& th : ts) th.join();
    m->sync();
    final_state = m->contents();
    for (std::size_t i = 1; i < final_state.size(); ++i) ASSERT_LT(final_state[i - 1].first, final_state[i].first);
    for (const auto& [k, v] : final_state) EXPECT_EQ(m->get(0, k), v);
  }
  if constexpr (kPersistent<M>) {
    auto m = restart<M>(pool, "m", 3, manual(), opts);
    EXPECT_EQ(m->contents(), final_state);
  }
}

}  // namespace

// Recovery's scan with one and with two threads keeps the same payloads;
// the time of each, against the live size, is printed (a measurement on a
// shared 2-core machine, not a claim: docs/montage.md §4).
// The hash map on 32-byte keys (the paper's benchmark keys): the map
// specification against std::map, across a restart with 1 KiB values and
// colliding buckets (16 buckets, so the byte order of the keys decides each
// list's order); and the transient original (the paper's DRAM (T) of its
// Figure 4 runs) on the same keys and values.
template <class M>
class WideHashMap : public ::testing::Test {};
using WideMaps = ::testing::Types<fm::HashMap<fm::fault::kNone, ferrite::Key32>, fm::TransientHashMap<ferrite::Key32>>;
TYPED_TEST_SUITE(WideHashMap, WideMaps);

TYPED_TEST(WideHashMap, ThirtyTwoByteKeysFollowTheMapSpecificationAndRecover) {
  using M = TypeParam;
  using ferrite::Key32;
  TempPool pool{"montage-key32", std::size_t{64} << 20};
  fm::HashMapOptions hm;
  hm.buckets = 16;
  hm.value_bytes = 1024;
  std::map<Key32, std::int64_t> ref;
  auto expect = [&](const Key32& k) {
    auto it = ref.find(k);
    return it == ref.end() ? std::nullopt : std::optional<std::int64_t>(it->second);
  };
  auto m = make<M>(pool, "m", 1, manual(), hm);
  random_ops(*m, ref, 7, 4000, [](std::uint64_t r) { return Key32::from(static_cast<std::int64_t>((r >> 33) % 300)); });
  m->sync();
  if constexpr (kPersistent<M>) {
    m.reset();
    m = restart<M>(pool, "m", 1, manual(), hm);
  }
  const std::vector<std::pair<Key32, std::int64_t>> want(ref.begin(), ref.end());
  EXPECT_EQ(m->contents(), want);
  for (std::int64_t k = 0; k < 300; ++k) EXPECT_EQ(m->get(0, Key32::from(k)), expect(Key32::from(k)));
}

TEST(MontageRecovery, TwoRecoveryThreadsKeepExactlyWhatOneKeeps) {
  for (const int live : {4000, 16000}) {
    TempPool pool{"montage-recovery", std::size_t{512} << 20};
    fm::HashMapOptions hm;
    hm.buckets = 1 << 15;
    hm.value_bytes = 1024;
    {
      auto m = fm::HashMap<>::create(*pool, "m", 1, hm, manual());
      for (int k = 0; k < live; ++k) m->put(0, k, k);
      m->sync();
    }
    std::vector<std::pair<std::int64_t, std::int64_t>> want;
    for (const int threads : {1, 2, 1, 2}) {
      pool.reopen();
      fm::EpochOptions o = manual();
      o.recovery_threads = threads;
      fm::RecoveryStats st;
      const auto t0 = std::chrono::steady_clock::now();
      auto m = fm::HashMap<>::attach(*pool, "m", 1, hm, o, &st);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      auto got = m->contents();
      if (want.empty()) want = got;
      EXPECT_EQ(got, want) << threads << " recovery thread(s)";
      EXPECT_EQ(got.size(), static_cast<std::size_t>(live));
      const double mb = static_cast<double>(st.payloads_kept) * (hm.value_bytes + 64) / 1e6;
      std::printf("[montage] recovery, %d live 1 KiB payloads (%.1f MB), %zu slabs, %d thread(s): %.1f ms, %.0f MB/s\n",
                  live, mb, static_cast<std::size_t>(st.slabs), threads, s * 1e3, mb / s);
    }
  }
}

}  // namespace maps_test
