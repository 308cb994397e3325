// mirror::BytesSkipMap (include/ferrite/mirror/bytes_skip_map.h), the
// ordered byte-string Mirror map, as a user meets it:
//   - it is a ferrite::OrderedMap (ferrite/map.h);
//   - round trips of keys and values of 0, 1, 7, 8, 9, 100, 4096 and 65536
//     bytes (every pair), both placements, and again after a restart, in
//     std::string_view order;
//   - scans: [lo, hi) bounds (empty, inverted, between keys, keys that share
//     8-byte prefixes, NULs, "a" < "a\0"), a callback that stops, against a
//     std::map model after random updates;
//   - replace and remove; the empty key and the empty value are ordinary;
//   - no payload leaks across replace, remove and restart;
//   - limits: a key or value over kMaxPayloadBytes throws, nothing lost;
//   - the roots of the int64 skip list, the byte hash map and this map never
//     attach as one another; open_or_create with MapOptions;
//   - a damaged value payload, key payload, and next pointer fail the pool's
//     recovery hook (kCorrupt naming the offset; the map stays closed), no
//     segfault;
//   - the int64 skip list (same algorithm, IntSkipKeys) still behaves.
// Crash campaigns: mirror_bytes_skip_crash_test.cc; threads:
// mirror_bytes_skip_stress_test.cc.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/temp_pool.h"
#include "ferrite/map.h"
#include "ferrite/mirror/bytes_map.h"
#include "ferrite/mirror/bytes_skip_map.h"
#include "ferrite/mirror/skip_list.h"
#include "ferrite/sync/thread_registry.h"

namespace mirror_bytes_skip_test {  // this file's names, apart in a unity build

namespace fm = ferrite::mirror;
namespace fp = ferrite::pmem;
using ferrite::test::TempPool;

namespace {

using Dram = fm::Config<fm::InDram>;
using Nvm = fm::Config<fm::InPool>;
static_assert(ferrite::OrderedMap<fm::BytesSkipMap<Dram>>);
static_assert(ferrite::OrderedMap<fm::BytesSkipMap<Nvm>>);

const std::size_t kSizes[] = {0, 1, 7, 8, 9, 100, 4096, 65536};

std::string bytes(std::size_t n, std::uint64_t seed) {
  std::string s(n, '\0');
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (auto& c : s) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>(x & 0xFF);
  }
  return s;
}
std::string key_of(std::size_t n, int i) { return bytes(n, 1000 + 31 * n + static_cast<std::uint64_t>(i)); }

ferrite::MapOptions opts(int threads = 2) {
  ferrite::MapOptions o;
  o.threads = threads;
  return o;
}

using Items = std::vector<std::pair<std::string, std::string>>;

template <class M>
Items scan_all(M& m, const ferrite::Thread& t, std::string_view lo, std::string_view hi) {
  Items out;
  m.scan(t, lo, hi, [&](std::string_view k, std::string_view v) {
    out.emplace_back(k, v);
    return true;
  });
  return out;
}
Items model_range(const std::map<std::string, std::string>& want, const std::string& lo, const std::string& hi) {
  Items out;
  if (!(lo < hi)) return out;
  for (auto it = want.lower_bound(lo); it != want.end() && it->first < hi; ++it) out.push_back(*it);
  return out;
}

template <class C>
void round_trips() {
  TempPool pool("mbs-rt", std::size_t{64} << 20);
  ferrite::sync::ThreadRegistry reg(2);
  const auto t = reg.acquire();
  std::map<std::string, std::string> want;
  {
    auto m = fm::BytesSkipMap<C>::create(*pool, "m", opts());
    int i = 0;
    for (std::size_t ks : kSizes)
      for (std::size_t vs : kSizes) {
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
    EXPECT_EQ(m->items(), Items(want.begin(), want.end()));  // ascending std::string_view order
  }
  pool.reopen();
  auto m = fm::BytesSkipMap<C>::attach(*pool, "m", opts());
  EXPECT_TRUE(pool->recovery_report()->failed_roots.empty());
  EXPECT_EQ(m->size(), want.size());
  EXPECT_EQ(m->items(), Items(want.begin(), want.end()));
  Items all;
  m->scan_from(t, "", [&](std::string_view k, std::string_view v) {
    all.emplace_back(k, v);
    return true;
  });
  EXPECT_EQ(all, Items(want.begin(), want.end()));
}

TEST(MirrorBytesSkip, RoundTripsEverySizePairInKeyOrderInDram) { round_trips<Dram>(); }
TEST(MirrorBytesSkip, RoundTripsEverySizePairInKeyOrderWithBothReplicasInThePool) { round_trips<Nvm>(); }

TEST(MirrorBytesSkip, ReplaceAndRemoveAndTheEmptyKey) {
  TempPool pool("mbs-rr");
  ferrite::sync::ThreadRegistry reg(1);
  const auto t = reg.acquire();
  auto m = fm::BytesSkipMap<>::create(*pool, "m", opts(1));
  EXPECT_TRUE(m->put(t, "", ""));
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
  EXPECT_TRUE(m->put(t, "k", "three"));
  EXPECT_EQ(m->get(t, "k"), "three");
  EXPECT_EQ(scan_all(*m, t, "", "l"), (Items{{"", ""}, {"k", "three"}}));
  EXPECT_TRUE(m->remove(t, ""));
  EXPECT_EQ(m->get(t, ""), std::nullopt);
  EXPECT_EQ(m->size(), 1u);
}

// Keys chosen to stress the 8-byte prefix: equal prefixes with different
// tails, lengths 7/8/9 around the prefix, NULs (\0 pads the prefix too).
TEST(MirrorBytesSkip, ScanBoundsAndStopAgreeWithAModel) {
  TempPool pool("mbs-scan", std::size_t{64} << 20);
  ferrite::sync::ThreadRegistry reg(1);
  const auto t = reg.acquire();
  auto m = fm::BytesSkipMap<>::create(*pool, "m", opts(1));
  std::map<std::string, std::string> want;
  const std::vector<std::string> special = {std::string(),
                                            std::string("a"),
                                            std::string("a\0", 2),
                                            std::string("a\0\0", 3),
                                            std::string("a\x01", 2),
                                            "abcdefg",
                                            "abcdefgh",
                                            "abcdefgh\0" + std::string(1, '\0'),
                                            std::string("abcdefgh\0", 9),
                                            "abcdefghi",
                                            "abcdefghij",
                                            "abcdefgha",
                                            "abcdefgh" + std::string(100, 'z'),
                                            "abcdefgh" + std::string(100, 'y'),
                                            std::string(8, '\0'),
                                            std::string(9, '\0'),
                                            std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff", 9),
                                            std::string("\xff", 1),
                                            "b"};
  for (std::size_t i = 0; i < special.size(); ++i) {
    const std::string v = "v" + std::to_string(i);
    EXPECT_EQ(m->put(t, special[i], v), want.count(special[i]) == 0);
    want[special[i]] = v;
  }
  // Random keys and updates.
  std::uint64_t x = 77;
  for (int i = 0; i < 3000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const std::string k = (x % 3 == 0 ? std::string("abcdefgh") : std::string()) + key_of(1 + x % 20, static_cast<int>(x % 300));
    if (x % 5 == 0) {
      EXPECT_EQ(m->remove(t, k), want.erase(k) == 1);
    } else {
      const std::string v = bytes(x % 200, x);
      EXPECT_EQ(m->put(t, k, v), want.count(k) == 0);
      want[k] = v;
    }
  }
  ASSERT_EQ(m->items(), Items(want.begin(), want.end()));
  EXPECT_EQ(m->size(), want.size());
  std::vector<std::string> bounds = special;
  for (const auto& [k, v] : want)
    if (bounds.size() < 80) bounds.push_back(k);
  bounds.push_back("abcdefgh\x7f");
  bounds.push_back(std::string(20, '\xff'));
  for (const auto& lo : bounds)
    for (const auto& hi : bounds) ASSERT_EQ(scan_all(*m, t, lo, hi), model_range(want, lo, hi)) << lo << " .. " << hi;
  // A point scan [k, k + "\0") is exactly k.
  for (const auto& k : special) {
    const auto got = scan_all(*m, t, k, k + std::string(1, '\0'));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].first, k);
  }
  // fn returning false stops the scan after that pair.
  for (std::size_t stop : {std::size_t{0}, std::size_t{1}, std::size_t{5}, want.size() - 1}) {
    Items got;
    m->scan(t, "", std::string(20, '\xff'), [&](std::string_view k, std::string_view v) {
      got.emplace_back(k, v);
      return got.size() <= stop;
    });
    EXPECT_EQ(got.size(), stop + 1);
    EXPECT_EQ(got, Items(want.begin(), std::next(want.begin(), static_cast<std::ptrdiff_t>(stop + 1))));
  }
  EXPECT_TRUE(scan_all(*m, t, "b", "a").empty());  // inverted
  EXPECT_TRUE(scan_all(*m, t, "a", "a").empty());  // empty
}

TEST(MirrorBytesSkip, NoPayloadLeaksAcrossReplaceRemoveAndRestart) {
  TempPool pool("mbs-leak", std::size_t{64} << 20);
  ferrite::sync::ThreadRegistry reg(1);
  const auto t = reg.acquire();
  std::size_t base_blocks = 0, base_bytes = 0;
  {
    auto m = fm::BytesSkipMap<>::create(*pool, "m", opts(1));
    base_blocks = pool->heap().stats().blocks_live;
    base_bytes = pool->heap().stats().bytes_live;
    for (int round = 0; round < 3; ++round)
      for (int i = 0; i < 200; ++i)
        m->put(t, key_of(1 + i % 70, i), bytes(static_cast<std::size_t>(i * 37 % 9000), i + round));
    for (int i = 0; i < 100; ++i) EXPECT_TRUE(m->remove(t, key_of(1 + i % 70, i)));
    ASSERT_TRUE(m->reclaim(0));
    EXPECT_GT(pool->heap().stats().blocks_live, base_blocks);
  }
  pool.reopen();
  {
    auto m = fm::BytesSkipMap<>::attach(*pool, "m", opts(1));
    EXPECT_EQ(m->size(), 100u);
    for (int i = 100; i < 200; ++i)
      EXPECT_EQ(m->get(t, key_of(1 + i % 70, i)), bytes(static_cast<std::size_t>(i * 37 % 9000), i + 2));
    for (int i = 100; i < 200; ++i) EXPECT_TRUE(m->remove(t, key_of(1 + i % 70, i)));
    EXPECT_EQ(m->size(), 0u);
    ASSERT_TRUE(m->reclaim(0));
    EXPECT_EQ(pool->heap().stats().blocks_live, base_blocks);
    EXPECT_EQ(pool->heap().stats().bytes_live, base_bytes);
    for (int i = 0; i < 50; ++i) m->put(t, key_of(9, i), bytes(300, i));
    for (int i = 0; i < 50; ++i) m->remove(t, key_of(9, i));
  }
  pool.reopen();  // EBR's garbage lost at the "crash": pool recovery frees what nothing names
  auto m = fm::BytesSkipMap<>::attach(*pool, "m", opts(1));
  EXPECT_EQ(m->size(), 0u);
  EXPECT_EQ(pool->heap().stats().blocks_live, base_blocks);
  EXPECT_EQ(pool->heap().stats().bytes_live, base_bytes);
}

TEST(MirrorBytesSkip, LimitsThrowClearlyAndLoseNothing) {
  TempPool pool("mbs-lim", std::size_t{4} << 20);
  ferrite::sync::ThreadRegistry reg(1);
  const auto t = reg.acquire();
  auto m = fm::BytesSkipMap<>::create(*pool, "m", opts(1), std::size_t{64} << 10);
  ASSERT_TRUE(m->put(t, "a", "alpha"));
  const std::string huge(fp::kMaxPayloadBytes + 1, 'x');
  try {
    m->put(t, "b", huge);
    ADD_FAILURE() << "no throw";
  } catch (const fp::PoolError& e) {
    EXPECT_EQ(e.code(), fp::Errc::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(std::to_string(huge.size())), std::string::npos) << e.what();
  }
  EXPECT_THROW(m->put(t, huge, "v"), fp::PoolError);
  std::size_t keys = 0;
  try {
    for (;; ++keys) m->put(t, "n" + std::to_string(keys), "v");
  } catch (const fp::PoolError& e) {
    EXPECT_EQ(e.code(), fp::Errc::kFull);
  }
  EXPECT_GT(keys, 300u);
  EXPECT_EQ(m->get(t, "n0"), "v");
  EXPECT_EQ(m->get(t, "a"), "alpha");
  EXPECT_EQ(m->size(), keys + 1);
}

TEST(MirrorBytesSkip, RootsOfOtherMirrorMapsNeverAttachAsIt) {
  TempPool pool("mbs-tag");
  fm::SkipList<>::create(*pool, "ints", 1, std::size_t{1} << 20);
  fm::BytesHashMap<>::create(*pool, "hash", ferrite::MapOptions{.threads = 1, .buckets = 4});
  fm::BytesSkipMap<>::create(*pool, "skip", opts(1));
  pool.reopen();
  EXPECT_TRUE(pool->recovery_report()->failed_roots.empty());
  for (const char* other : {"ints", "hash"}) {
    try {
      fm::BytesSkipMap<>::attach(*pool, other, opts(1));
      ADD_FAILURE() << other << " attached as an ordered byte map";
    } catch (const fp::PoolError& e) {
      EXPECT_EQ(e.code(), fp::Errc::kRootType) << e.what();
    }
  }
  EXPECT_THROW(fm::SkipList<>::attach(*pool, "skip", 1), fp::PoolError);
  EXPECT_THROW(fm::BytesHashMap<>::attach(*pool, "skip", opts(1)), fp::PoolError);
  EXPECT_NE(fm::BytesSkipRoot::kTypeTag, fm::Root::kTypeTag);
  EXPECT_NE(fm::BytesSkipRoot::kTypeTag, fm::BytesRoot::kTypeTag);
  EXPECT_NO_THROW(fm::BytesSkipMap<>::attach(*pool, "skip", opts(3)));  // any thread count
}

TEST(MirrorBytesSkip, OpenOrCreateWithMapOptions) {
  TempPool pool("mbs-ooc");
  ferrite::sync::ThreadRegistry reg(4);
  const auto t = reg.acquire();
  {
    auto m = pool->open_or_create<fm::BytesSkipMap<>>("m", ferrite::MapOptions{.threads = 4});
    m->put(t, "key", "value");
  }
  pool.reopen();
  auto m = pool->open_or_create<fm::BytesSkipMap<>>("m", ferrite::MapOptions{.threads = 4});
  EXPECT_EQ(m->get(t, "key"), "value");
}

// Damage in the pool after a clean close; the reopen's hook must fail with
// kCorrupt naming the offset and leave the map closed.
template <class Damage>
void damaged(const char* tag, Damage&& damage, const char* named) {
  TempPool pool(tag);
  ferrite::sync::ThreadRegistry reg(1);
  const auto t = reg.acquire();
  {
    auto m = fm::BytesSkipMap<>::create(*pool, "m", opts(1));
    for (int i = 0; i < 20; ++i) m->put(t, "key number " + std::to_string(i), "a value of some bytes " + std::to_string(i));
    damage(*pool, *m);
  }
  pool.reopen();
  const auto& rep = *pool->recovery_report();
  ASSERT_EQ(rep.failed_roots.size(), 1u);
  EXPECT_NE(rep.failed_roots[0].find(named), std::string::npos) << rep.failed_roots[0];
  try {
    auto m = fm::BytesSkipMap<>::attach(*pool, "m", opts(1));
    ADD_FAILURE() << "a damaged map was attached";
  } catch (const fp::PoolError& e) {
    EXPECT_EQ(e.code(), fp::Errc::kCorrupt) << e.what();
  }
}

TEST(MirrorBytesSkip, ADamagedValuePayloadFailsTheHook) {
  damaged(
      "mbs-dv",
      [](fp::Pool& pool, fm::BytesSkipMap<>& m) {
        std::uint64_t off = 0;
        m.for_each_entry([&](std::uint64_t, std::uint64_t v) { off = v; });
        pool.at<char>(off)[fp::kPayloadHeader + 3] ^= 0x20;
      },
      "payload at offset");
}
TEST(MirrorBytesSkip, ADamagedKeyPayloadFailsTheHook) {
  damaged(
      "mbs-dk",
      [](fp::Pool& pool, fm::BytesSkipMap<>& m) {
        std::uint64_t off = 0;
        m.for_each_entry([&](std::uint64_t k, std::uint64_t) { off = k; });
        pool.at<char>(off)[fp::kPayloadHeader + 1] ^= 0x01;
        // A read of the damaged key throws kCorrupt too (validation), never
        // returns other bytes.
        bool threw = false;
        try {
          (void)fp::read_payload(pool, off);
        } catch (const fp::PoolError& e) {
          threw = e.code() == fp::Errc::kCorrupt;
        }
        EXPECT_TRUE(threw);
      },
      "payload at offset");
}
// The head's level-0 next on the persistent replica (DRAM placement: rep_v
// at the pool base + kReplicaOffset) pointing into the middle of a unit,
// outside the region, or at itself (a cycle ends: nodes are visited once).
TEST(MirrorBytesSkip, ADamagedNextPointerFailsTheHookNamingTheOffset) {
  for (std::uint64_t bad : {std::uint64_t{8}, std::uint64_t{1} << 62}) {
    damaged(
        "mbs-dp",
        [bad](fp::Pool& pool, fm::BytesSkipMap<>&) {
          auto* r = pool.root<fm::BytesSkipRoot>("m");
          const std::uint64_t head_p = r->anchor - fp::kReplicaOffset;
          auto* word = reinterpret_cast<std::uint64_t*>(head_p + sizeof(fm::BytesSkipNode<>));  // next(0).val_
          *word = bad == 8 ? *word + 8 : bad;
        },
        "pool offset");
  }
}
TEST(MirrorBytesSkip, ACycleOfNextPointersEndsTheTrace) {
  TempPool pool("mbs-cyc");
  ferrite::sync::ThreadRegistry reg(1);
  const auto t = reg.acquire();
  {
    auto m = fm::BytesSkipMap<>::create(*pool, "m", opts(1));
    m->put(t, "a", "1");
    m->put(t, "b", "2");
    auto* r = pool->root<fm::BytesSkipRoot>("m");
    const std::uint64_t head_p = r->anchor - fp::kReplicaOffset;
    const std::uint64_t first_v = *reinterpret_cast<std::uint64_t*>(head_p + sizeof(fm::BytesSkipNode<>));
    // The first node's level-0 next names the first node.
    *reinterpret_cast<std::uint64_t*>(first_v - fp::kReplicaOffset + sizeof(fm::BytesSkipNode<>)) = first_v;
  }
  pool.reopen();  // terminates: the hook visits each unit once
  SUCCEED();
}

// The int64 skip list runs the same algorithm through IntSkipKeys: its map
// and set still behave (its own tests: skiplist_test.cc).
TEST(MirrorBytesSkip, TheInt64SkipListStillBehaves) {
  TempPool pool("mbs-int");
  auto s = fm::SkipList<>::create(*pool, "s", 1, std::size_t{1} << 20);
  for (int i = 100; i > 0; --i) EXPECT_TRUE(s->insert(i * 3, 0));
  EXPECT_FALSE(s->insert(30, 0));
  EXPECT_TRUE(s->remove(30, 0));
  EXPECT_EQ(s->put(31, 5, 0), std::nullopt);
  EXPECT_EQ(s->put(31, 6, 0), std::optional<std::int64_t>(5));
  EXPECT_EQ(s->get(31, 0), std::optional<std::int64_t>(6));
  EXPECT_EQ(s->erase(31, 0), std::optional<std::int64_t>(6));
  const auto items = s->items(false);
  ASSERT_EQ(items.size(), 99u);
  for (std::size_t i = 1; i < items.size(); ++i) EXPECT_LT(items[i - 1].first, items[i].first);
  EXPECT_TRUE(s->replicas_equal());
}

}  // namespace

}  // namespace mirror_bytes_skip_test
