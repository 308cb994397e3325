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
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/temp_pool.h"
#include "ferrite/key32.h"
#include "ferrite/montage/bst.h"
#include "ferrite/montage/hash_map.h"
#include "ferrite/montage/internal/kv_payload.h"
#include "ferrite/montage/skiplist.h"
#include "ferrite/montage/split_ordered.h"
#include "montage/systems.h"

namespace maps_test {  // this file's names, apart in a unity build

namespace fm = ferrite::montage;
using ferrite::test::TempPath;
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
using Maps = ::testing::Types<fm::Bst<>, fm::SkipList<>, fm::TransientBst<>, fm::TransientSkipList<>>;
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
// The maps that take 32-byte keys (the paper's benchmark keys): the map
// specification against std::map, across a restart with 1 KiB values — the
// hash map with colliding buckets (16 buckets, so the byte order of the keys
// decides each list's order), the split-ordered table (which grows from 2
// buckets), the skip list and the BST ordered by the keys' bytes —
// and their transient originals (the paper's DRAM (T) of its Figure 4 runs)
// on the same keys and values.
template <class M>
class WideMap : public ::testing::Test {};
using WideMaps = ::testing::Types<fm::HashMap<fm::fault::kNone, ferrite::Key32>, fm::TransientHashMap<ferrite::Key32>,
                                  fm::SkipList<fm::fault::kNone, ferrite::Key32>, fm::TransientSkipList<ferrite::Key32>,
                                  fm::Bst<fm::fault::kNone, ferrite::Key32>, fm::TransientBst<ferrite::Key32>,
                                  fm::SplitOrderedMap<fm::fault::kNone, ferrite::Key32>,
                                  fm::TransientSplitOrderedMap<ferrite::Key32>>;
TYPED_TEST_SUITE(WideMap, WideMaps);

TYPED_TEST(WideMap, ThirtyTwoByteKeysFollowTheMapSpecificationAndRecover) {
  using M = TypeParam;
  using ferrite::Key32;
  static_assert(std::is_same_v<typename M::Key, Key32>);
  TempPool pool{"montage-key32", std::size_t{64} << 20};
  typename M::Options opts;
  if constexpr (std::is_same_v<typename M::Options, fm::HashMapOptions>) opts.buckets = 16;
  opts.value_bytes = 1024;
  std::map<Key32, std::int64_t> ref;
  auto expect = [&](const Key32& k) {
    auto it = ref.find(k);
    return it == ref.end() ? std::nullopt : std::optional<std::int64_t>(it->second);
  };
  auto m = make<M>(pool, "m", 1, manual(), opts);
  random_ops(*m, ref, 7, 4000, [](std::uint64_t r) { return Key32::from(static_cast<std::int64_t>((r >> 33) % 300)); });
  m->sync();
  if constexpr (kPersistent<M>) {
    m.reset();
    m = restart<M>(pool, "m", 1, manual(), opts);
  }
  const std::vector<std::pair<Key32, std::int64_t>> want(ref.begin(), ref.end());
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(m->contents(), want);
  for (std::int64_t k = 0; k < 300; ++k) EXPECT_EQ(m->get(0, Key32::from(k)), expect(Key32::from(k)));
  // The (recovered) index keeps working on every key.
  for (const auto& [k, v] : want) EXPECT_EQ(m->erase(0, k), v);
  EXPECT_TRUE(m->contents().empty());
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


// Recovery's index rebuilds in EpochOptions::recovery_threads threads
// (hash_map.h, bst.h, skiplist.h, split_ordered.h): one pool image — a map
// of ~7 000 live keys after puts, replaces and erases, a sync, then updates
// the sync does not cover — is recovered from byte-identical copies with 1,
// 2 and 3 threads (3: more than this VM's 2 cores). Every part holds
// >= kRebuildGrain payloads, so 2 and 3 threads rebuild in 2 and 3 parts.
// Each recovery must give exactly the synced state, every key must be
// found through the rebuilt index, and the index must keep working.
template <class M>
class RecoveryThreads : public ::testing::Test {};
using PersistentMaps = ::testing::Types<fm::HashMap<>, fm::Bst<>, fm::SkipList<>, fm::SplitOrderedMap<>>;
TYPED_TEST_SUITE(RecoveryThreads, PersistentMaps);

namespace {

template <class M>
typename M::Options rebuild_options() {
  typename M::Options o{};
  // Several keys per bucket: the order inside a bucket's list matters.
  if constexpr (std::is_same_v<M, fm::HashMap<>>) o.buckets = 2048;
  return o;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A pool file holding `image`, opened (the copy is deleted with `path`).
std::unique_ptr<ferrite::pmem::Pool> open_copy(const TempPath& path, const std::string& image) {
  std::ofstream(path.path, std::ios::binary).write(image.data(), static_cast<std::streamsize>(image.size()));
  return ferrite::pmem::Pool::open(path.path);
}

}  // namespace

TYPED_TEST(RecoveryThreads, OnePoolImageRecoversTheSameWithOneTwoAndThreeThreads) {
  using M = TypeParam;
  const auto opts = rebuild_options<M>();
  // Keys spread over int64, negative ones too.
  const auto key_of = [](std::uint64_t r) { return static_cast<std::int64_t>((r >> 33) % 12000) * 1000003 - 6000000000; };
  std::map<std::int64_t, std::int64_t> ref;
  std::string image;
  {
    TempPool pool{"montage-rthreads", std::size_t{16} << 20};
    auto m = M::create(*pool, "m", 1, opts, manual());
    for (std::uint64_t k = 0; k < 12000; ++k) {
      m->put(0, key_of(k << 33), static_cast<std::int64_t>(k));
      ref[key_of(k << 33)] = static_cast<std::int64_t>(k);
    }
    random_ops(*m, ref, 3, 20000, key_of);
    m->sync();
    // Not covered by a sync: recovery drops them (and resets their blocks).
    std::map<std::int64_t, std::int64_t> unsynced = ref;
    random_ops(*m, unsynced, 4, 3000, key_of);
    m->abandon();  // a crash: the destructor syncs nothing (a clean close would keep them)
    m.reset();
    image = read_file(pool.path());
  }
  const std::vector<std::pair<std::int64_t, std::int64_t>> want(ref.begin(), ref.end());
  ASSERT_GE(want.size(), 3 * fm::internal::kRebuildGrain);
  for (const int threads : {1, 2, 3}) {
    SCOPED_TRACE(std::to_string(threads) + " recovery thread(s)");
    TempPath copy{"montage-rthreads-copy"};
    auto pool = open_copy(copy, image);
    fm::EpochOptions o = manual();
    o.recovery_threads = threads;
    fm::RecoveryStats st;
    auto m = M::attach(*pool, "m", 1, opts, o, &st);
    EXPECT_EQ(st.payloads_kept, want.size());
    ASSERT_EQ(m->contents(), want);
    int wrong = 0;
    for (const auto& [k, v] : want) wrong += m->get(0, k) != v;
    for (const auto& [k, v] : want) wrong += m->get(0, k + 1).has_value();  // never a key (step 1000003)
    EXPECT_EQ(wrong, 0);
    // The index keeps working: erase every third key, replace the rest, add new ones.
    std::map<std::int64_t, std::int64_t> now = ref;
    std::size_t i = 0;
    for (const auto& [k, v] : ref) {
      if (i++ % 3 == 0) {
        EXPECT_EQ(m->erase(0, k), v);
        now.erase(k);
      } else {
        EXPECT_EQ(m->put(0, k, v + 1), v);
        now[k] = v + 1;
      }
      EXPECT_EQ(m->put(0, k + 2, 7), std::nullopt);
      now[k + 2] = 7;
    }
    const std::vector<std::pair<std::int64_t, std::int64_t>> after(now.begin(), now.end());
    EXPECT_EQ(m->contents(), after);
    m.reset();
  }
}

// Two kept payloads of one key are a recovery bug: attach must throw, with
// one recovery thread and with three (the hash map's rebuild had no check
// before its rebuild became parallel). The pool image is a synced map whose
// payload of one key is rewritten, in the file, to hold its neighbour's key
// (a payload's bytes are not in its header's checksum).
TYPED_TEST(RecoveryThreads, TwoPayloadsOfOneKeyMakeRecoveryThrow) {
  using M = TypeParam;
  const auto opts = rebuild_options<M>();
  constexpr std::int64_t kMarker = 0x5eed000000;  // value = kMarker + key: findable in the file
  std::string image;
  {
    TempPool pool{"montage-dup", std::size_t{16} << 20};
    auto m = M::create(*pool, "m", 1, opts, manual());
    for (std::int64_t k = 0; k < 4000; ++k) m->put(0, k, kMarker + k);
    m->sync();
    m.reset();
    image = read_file(pool.path());
  }
  const std::int64_t kv[2] = {1234, kMarker + 1234};
  const std::string payload(reinterpret_cast<const char*>(kv), sizeof kv);
  const std::size_t at = image.find(payload);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(image.find(payload, at + 1), std::string::npos);
  const std::int64_t other = 1235;
  std::memcpy(image.data() + at, &other, sizeof other);
  for (const int threads : {1, 3}) {
    SCOPED_TRACE(std::to_string(threads) + " recovery thread(s)");
    TempPath copy{"montage-dup-copy"};
    auto pool = open_copy(copy, image);
    fm::EpochOptions o = manual();
    o.recovery_threads = threads;
    EXPECT_THROW(M::attach(*pool, "m", 1, opts, o), std::runtime_error);
  }
  // The same image unchanged recovers.
  const std::int64_t back = 1234;
  std::memcpy(image.data() + at, &back, sizeof back);
  TempPath copy{"montage-dup-copy"};
  auto pool = open_copy(copy, image);
  EXPECT_EQ(M::attach(*pool, "m", 1, opts, manual())->contents().size(), 4000u);
}

}  // namespace maps_test
