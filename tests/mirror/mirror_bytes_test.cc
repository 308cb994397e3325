// mirror::BytesHashMap (include/ferrite/mirror/bytes_map.h), the byte-string
// Mirror hash map, as a user meets it:
//   - it is a ferrite::Map (ferrite/map.h);
//   - round trips of keys and values of 0, 1, 7, 8, 100, 4096 and 65536
//     bytes (every pair), both placements, and again after a restart;
//   - replace and remove; the empty key and the empty value are ordinary;
//   - a restart keeps the content byte for byte, and removing everything
//     brings the pool heap back to its level after creation (no payload
//     leaked: replaced values, removed keys and values are freed through
//     EBR, and what a restart loses of EBR is freed by pool recovery);
//   - limits: a key or value over kMaxPayloadBytes, a full pool (also
//     after the region chain grew) — each throws with a clear message and
//     loses nothing;
//   - an int64 Mirror map's root never attaches as a byte map (nor the
//     reverse); open_or_create with MapOptions;
//   - a damaged payload fails the pool's recovery hook (the root is named,
//     every block kept) and reads throw PoolError(kCorrupt), no segfault;
//   - two threads, a final check against the model.
// The SIGKILL test is mirror_bytes_process_test.cc, the reader-vs-replacer
// stress (EBR) mirror_bytes_stress_test.cc, the crash campaigns
// mirror_crash_test.cc.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/temp_pool.h"
#include "ferrite/map.h"
#include "ferrite/mirror/bytes_map.h"
#include "ferrite/mirror/hash_map.h"
#include "ferrite/sync/thread_registry.h"

namespace mirror_bytes_test {  // this file's names, apart in a unity build

namespace fm = ferrite::mirror;
namespace fp = ferrite::pmem;
using ferrite::test::TempPool;

namespace {

using Dram = fm::Config<fm::InDram>;
using Nvm = fm::Config<fm::InPool>;
static_assert(ferrite::Map<fm::BytesHashMap<Dram>>);
static_assert(ferrite::Map<fm::BytesHashMap<Nvm>>);

const std::size_t kSizes[] = {0, 1, 7, 8, 100, 4096, 65536};

// Deterministic bytes (every value 0..255 occurs, NULs included).
std::string bytes(std::size_t n, std::uint64_t seed) {
  std::string s(n, '\0');
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (auto& c : s) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>(x & 0xFF);
  }
  return s;
}
// A key of n bytes distinct for every (n, i).
std::string key_of(std::size_t n, int i) { return bytes(n, 1000 + 31 * n + static_cast<std::uint64_t>(i)); }

ferrite::MapOptions opts(int threads = 2, std::size_t buckets = 16) {
  ferrite::MapOptions o;
  o.threads = threads;
  o.buckets = buckets;
  return o;
}

template <class C>
void round_trips() {
  TempPool pool("mb-rt", std::size_t{64} << 20);
  ferrite::sync::ThreadRegistry reg(2);
  const auto t = reg.acquire();
  std::map<std::string, std::string> want;
  {
    auto m = fm::BytesHashMap<C>::create(*pool, "m", opts());
    int i = 0;
    for (std::size_t ks : kSizes)
      for (std::size_t vs : kSizes) {
        // Keys of size 0 exist once: one empty key, replaced by each value size.
        const std::string k = ks == 0 ? std::string() : key_of(ks, i);
        const std::string v = bytes(vs, 7 * static_cast<std::uint64_t>(i) + 3);
        const bool fresh = want.count(k) == 0;
        EXPECT_EQ(m->put(t, k, v), fresh) << ks << "/" << vs;
        want[k] = v;
        EXPECT_EQ(m->get(t, k), v) << ks << "/" << vs;
        ++i;
      }
    EXPECT_EQ(m->size(), want.size());
    for (const auto& [k, v] : want) {
      std::string seen;
      EXPECT_TRUE(m->get(t, k, [&](std::string_view b) { seen = b; }));
      EXPECT_EQ(seen, v);
      EXPECT_TRUE(m->contains(t, k));
    }
    EXPECT_FALSE(m->contains(t, "absent"));
    EXPECT_EQ(m->get(t, "absent"), std::nullopt);
    EXPECT_TRUE(m->replicas_equal());
  }
  pool.reopen();
  auto m = fm::BytesHashMap<C>::attach(*pool, "m", opts());
  EXPECT_EQ(m->size(), want.size());
  const auto items = m->items();
  ASSERT_EQ(items.size(), want.size());
  EXPECT_EQ(items, (std::vector<std::pair<std::string, std::string>>(want.begin(), want.end())));
  EXPECT_TRUE(pool->recovery_report()->failed_roots.empty());
}

TEST(MirrorBytes, RoundTripsEverySizePairInDram) { round_trips<Dram>(); }
TEST(MirrorBytes, RoundTripsEverySizePairWithBothReplicasInThePool) { round_trips<Nvm>(); }

TEST(MirrorBytes, ReplaceAndRemove) {
  TempPool pool("mb-rr");
  ferrite::sync::ThreadRegistry reg(1);
  const auto t = reg.acquire();
  auto m = fm::BytesHashMap<>::create(*pool, "m", opts(1, 4));
  EXPECT_TRUE(m->put(t, "", ""));  // the empty key and value are ordinary
  EXPECT_EQ(m->get(t, ""), std::string());
  EXPECT_TRUE(m->put(t, "k", "one"));
  EXPECT_FALSE(m->put(t, "k", "two"));
  EXPECT_EQ(m->get(t, "k"), "two");
  std::string old;
  EXPECT_FALSE(m->put(t.id(), "k", bytes(5000, 1), [&](std::string_view b) { old = b; }));
  EXPECT_EQ(old, "two");
  EXPECT_TRUE(m->remove(t.id(), "k", [&](std::string_view b) { old = b; }));
  EXPECT_EQ(old, bytes(5000, 1));
  EXPECT_FALSE(m->remove(t, "k"));
  EXPECT_FALSE(m->contains(t, "k"));
  EXPECT_TRUE(m->put(t, "k", "three"));  // re-insert after remove
  EXPECT_EQ(m->get(t, "k"), "three");
  EXPECT_TRUE(m->remove(t, ""));
  EXPECT_EQ(m->get(t, ""), std::nullopt);
  EXPECT_EQ(m->size(), 1u);
}

// Heap level after creation == after putting, replacing and removing
// everything (EBR drained), in this process and across reopens.
TEST(MirrorBytes, NoPayloadLeaksAcrossReplaceRemoveAndRestart) {
  TempPool pool("mb-leak", std::size_t{64} << 20);
  ferrite::sync::ThreadRegistry reg(1);
  const auto t = reg.acquire();
  std::size_t base_blocks = 0, base_bytes = 0;
  {
    auto m = fm::BytesHashMap<>::create(*pool, "m", opts(1, 8));
    base_blocks = pool->heap().stats().blocks_live;
    base_bytes = pool->heap().stats().bytes_live;
    for (int round = 0; round < 3; ++round)
      for (int i = 0; i < 200; ++i) m->put(t, key_of(1 + i % 70, i), bytes(static_cast<std::size_t>(i * 37 % 9000), i + round));
    for (int i = 0; i < 100; ++i) EXPECT_TRUE(m->remove(t, key_of(1 + i % 70, i)));
    ASSERT_TRUE(m->reclaim(0));
    EXPECT_GT(pool->heap().stats().blocks_live, base_blocks);
  }
  pool.reopen();  // pool recovery: the 100 keys left and their values are marked
  {
    auto m = fm::BytesHashMap<>::attach(*pool, "m", opts(1));
    EXPECT_EQ(m->size(), 100u);
    for (int i = 100; i < 200; ++i)
      EXPECT_EQ(m->get(t, key_of(1 + i % 70, i)), bytes(static_cast<std::size_t>(i * 37 % 9000), i + 2));
    for (int i = 100; i < 200; ++i) EXPECT_TRUE(m->remove(t, key_of(1 + i % 70, i)));
    EXPECT_EQ(m->size(), 0u);
    ASSERT_TRUE(m->reclaim(0));
    EXPECT_EQ(pool->heap().stats().blocks_live, base_blocks);
    EXPECT_EQ(pool->heap().stats().bytes_live, base_bytes);
    // Retired but not yet freed at the "crash" (the pool is closed with
    // EBR holding garbage): pool recovery frees what nothing names.
    for (int i = 0; i < 50; ++i) m->put(t, key_of(9, i), bytes(300, i));
    for (int i = 0; i < 50; ++i) m->remove(t, key_of(9, i));
  }
  pool.reopen();
  auto m = fm::BytesHashMap<>::attach(*pool, "m", opts(1));
  EXPECT_EQ(m->size(), 0u);
  EXPECT_EQ(pool->heap().stats().blocks_live, base_blocks);
  EXPECT_EQ(pool->heap().stats().bytes_live, base_bytes);
}

TEST(MirrorBytes, LimitsThrowClearlyAndLoseNothing) {
  TempPool pool("mb-lim", std::size_t{4} << 20);
  ferrite::sync::ThreadRegistry reg(1);
  const auto t = reg.acquire();
  auto m = fm::BytesHashMap<>::create(*pool, "m", opts(1, 8), std::size_t{64} << 10);
  ASSERT_TRUE(m->put(t, "a", "alpha"));
  const std::string huge(fp::kMaxPayloadBytes + 1, 'x');
  try {
    m->put(t, "b", huge);
    ADD_FAILURE() << "no throw";
  } catch (const fp::PoolError& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(huge.size())), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(fp::kMaxPayloadBytes)), std::string::npos) << e.what();
  }
  EXPECT_THROW(m->put(t, huge, "v"), fp::PoolError);
  // A full pool: 64 KiB values until it refuses.
  int stored = 0;
  try {
    for (;; ++stored) m->put(t, "big" + std::to_string(stored), bytes(65536, static_cast<std::uint64_t>(stored)));
  } catch (const fp::PoolError& e) {
    EXPECT_EQ(e.code(), fp::Errc::kFull) << e.what();
  }
  EXPECT_GT(stored, 10);
  EXPECT_EQ(m->get(t, "a"), "alpha");
  for (int i = 0; i < stored; ++i)
    ASSERT_EQ(m->get(t, "big" + std::to_string(i)), bytes(65536, static_cast<std::uint64_t>(i))) << i;
  EXPECT_EQ(m->size(), static_cast<std::size_t>(stored) + 1);
  // Room again after removing: the refused put had no effect.
  for (int i = 0; i < stored; ++i) m->remove(t, "big" + std::to_string(i));
  ASSERT_TRUE(m->reclaim(0));
  // Past the first region (64 KiB = 1,023 nodes minus the buckets): the
  // chain grows (mirror/heap.h, "Growth") — no "region full" — until the
  // pool itself refuses.
  std::size_t keys = 0;
  try {
    for (;; ++keys) m->put(t, "n" + std::to_string(keys), "v");
  } catch (const fp::PoolError& e) {
    EXPECT_EQ(e.code(), fp::Errc::kFull);
    EXPECT_EQ(std::string(e.what()).find("region full"), std::string::npos) << e.what();
  }
  EXPECT_GT(keys, 5000u);
  EXPECT_GT(m->heap().regions(), 4u);
  EXPECT_EQ(m->get(t, "n" + std::to_string(keys - 1)), "v");
  EXPECT_EQ(m->get(t, "n0"), "v");
  EXPECT_EQ(m->get(t, "a"), "alpha");
}

TEST(MirrorBytes, RootsOfTheInt64AndTheByteMapNeverAttachAsTheOther) {
  TempPool pool("mb-tag");
  fm::HashMap<>::create(*pool, "ints", 1, 8, std::size_t{1} << 20);
  fm::BytesHashMap<>::create(*pool, "bytes", opts(1));
  pool.reopen();
  EXPECT_TRUE(pool->recovery_report()->failed_roots.empty());
  try {
    fm::BytesHashMap<>::attach(*pool, "ints", opts(1));
    ADD_FAILURE() << "an int64 map attached as a byte map";
  } catch (const fp::PoolError& e) {
    EXPECT_EQ(e.code(), fp::Errc::kRootType) << e.what();
  }
  try {
    fm::HashMap<>::attach(*pool, "bytes", 1);
    ADD_FAILURE() << "a byte map attached as an int64 map";
  } catch (const fp::PoolError& e) {
    EXPECT_EQ(e.code(), fp::Errc::kRootType) << e.what();
  }
  EXPECT_EQ(fm::Root::kTypeTag, 0x4D190001u);
  EXPECT_EQ(fm::Root::kTypeVersion, 2u);  // 2: region 0 starts with its RegionHeader (the chain)
  EXPECT_NE(fm::BytesRoot::kTypeTag, fm::Root::kTypeTag);
}

TEST(MirrorBytes, OpenOrCreateWithMapOptions) {
  TempPool pool("mb-ooc");
  ferrite::sync::ThreadRegistry reg(4);
  const auto t = reg.acquire();
  {
    auto m = pool->open_or_create<fm::BytesHashMap<>>("m", ferrite::MapOptions{.threads = 4, .buckets = 64});
    m->put(t, "key", "value");
  }
  pool.reopen();
  auto m = pool->open_or_create<fm::BytesHashMap<>>("m", ferrite::MapOptions{.threads = 4, .buckets = 64});
  EXPECT_EQ(m->buckets(), 64u);
  EXPECT_EQ(m->get(t, "key"), "value");
}

// A damaged value payload: pool recovery's hook throws (the root is named,
// every block kept), and a read throws PoolError(kCorrupt) naming the offset.
TEST(MirrorBytes, ADamagedPayloadFailsTheHookAndLeavesTheMapClosed) {
  TempPool pool("mb-dmg");
  ferrite::sync::ThreadRegistry reg(1);
  const auto t = reg.acquire();
  std::uint64_t off = 0;
  {
    auto m = fm::BytesHashMap<>::create(*pool, "m", opts(1, 4));
    m->put(t, "k", "a value of some bytes");
    m->for_each_entry([&](std::uint64_t, std::uint64_t v) { off = v; });
  }
  ASSERT_NE(off, 0u);
  pool->at<char>(off)[fp::kPayloadHeader + 3] ^= 0x20;  // one bit of the bytes
  pool.reopen();
  const auto& rep = *pool->recovery_report();
  ASSERT_EQ(rep.failed_roots.size(), 1u);
  EXPECT_NE(rep.failed_roots[0].find("m"), std::string::npos);
  EXPECT_NE(rep.failed_roots[0].find("payload at offset"), std::string::npos) << rep.failed_roots[0];
  // The pool leaves a root whose recovery failed closed (PoolOptions::
  // damaged_roots): attaching it throws, naming the damage; nothing is read.
  try {
    auto m = fm::BytesHashMap<>::attach(*pool, "m", opts(1));
    ADD_FAILURE() << "a damaged map was attached";
  } catch (const fp::PoolError& e) {
    EXPECT_EQ(e.code(), fp::Errc::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("left closed"), std::string::npos) << e.what();
  }
  (void)t;
}

// Two threads, each with its own keys plus shared ones it only reads; the
// final map is the model of each thread's sequence.
TEST(MirrorBytes, TwoThreadsAgreeWithTheModel) {
  TempPool pool("mb-2t", std::size_t{64} << 20);
  ferrite::sync::ThreadRegistry reg(2);
  auto m = fm::BytesHashMap<>::create(*pool, "m", opts(2, 8));
  std::map<std::string, std::string> model[2];
  auto work = [&](int me) {
    const auto t = reg.acquire();
    auto& mine = model[t.id()];
    for (int i = 0; i < 4000; ++i) {
      const int k = (i * 13) % 64;
      const std::string key = "t" + std::to_string(me) + ":" + key_of(1 + k % 40, k);
      if (i % 4 == 3) {
        EXPECT_EQ(m->remove(t, key), mine.erase(key) == 1);
      } else {
        const std::string v = bytes(static_cast<std::size_t>(i % 700), static_cast<std::uint64_t>(i * 2 + me));
        EXPECT_EQ(m->put(t, key, v), mine.count(key) == 0);
        mine[key] = v;
      }
      const auto other = "t" + std::to_string(1 - me) + ":" + key_of(1 + k % 40, k);
      if (auto g = m->get(t, other)) {
        EXPECT_LT(g->size(), 700u);
      }
    }
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  std::map<std::string, std::string> want = model[0];
  want.insert(model[1].begin(), model[1].end());
  const auto items = m->items();
  ASSERT_EQ(items.size(), want.size());
  EXPECT_EQ(items, (std::vector<std::pair<std::string, std::string>>(want.begin(), want.end())));
  EXPECT_EQ(m->size(), want.size());
  EXPECT_TRUE(m->replicas_equal());
}

}  // namespace

}  // namespace mirror_bytes_test
