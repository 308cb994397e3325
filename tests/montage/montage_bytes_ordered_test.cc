// Unit tests of nbMontage's ordered byte-string map (montage/bytes_skip_map.h,
// the skip list of skiplist.h over byte-string payloads): round trips of
// keys and values of 0 to 65536 bytes, the empty key and value, scans in
// ascending std::string_view order (bounds, stopping, bytes above 0x7f,
// prefixes) against a std::map, replace/remove/size, two threads with
// concurrent scans, open_or_create and roots of another kind, a damaged
// payload (PoolError(kCorrupt) naming its offset, never a segfault), the
// size limits, and a clean close that syncs.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/temp_pool.h"
#include "ferrite/map.h"
#include "ferrite/montage/bytes_hash_map.h"
#include "ferrite/montage/bytes_skip_map.h"

namespace montage_bytes_ordered_test {  // this file's names, apart in a unity build

namespace fm = ferrite::montage;
using ferrite::test::TempPool;
using Map = fm::BytesSkipMap<>;
static_assert(ferrite::OrderedMap<Map>);

namespace {

fm::EpochOptions manual() {
  fm::EpochOptions o;
  o.epoch_length = std::chrono::microseconds{0};
  return o;
}
ferrite::MapOptions opts(int threads = 2) {
  ferrite::MapOptions o;
  o.threads = threads;
  return o;
}
std::string bytes(std::size_t n, std::uint64_t seed) {
  std::string s(n, '\0');
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ull + n;
  for (std::size_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    s[i] = static_cast<char>(x >> 56);
  }
  return s;
}
const std::size_t kSizes[] = {0, 1, 7, 8, 100, 4096, 65536};

using Ref = std::map<std::string, std::string, std::less<>>;

void expect_contents(Map& m, const Ref& ref) {
  ASSERT_EQ(m.size(), ref.size());
  const auto c = m.contents();
  ASSERT_EQ(c.size(), ref.size());
  auto it = ref.begin();
  for (const auto& [k, v] : c) {
    EXPECT_TRUE(k == it->first);
    EXPECT_TRUE(v == it->second) << "value of a " << k.size() << "-byte key";
    ++it;
  }
}
// scan(lo, hi) against the reference, all of it, or stopped by fn after
// `stop` (>= 1) keys.
void expect_scan(Map& m, const Ref& ref, std::string_view lo, std::string_view hi, std::size_t stop = SIZE_MAX) {
  std::vector<std::pair<std::string, std::string>> got, want;
  m.scan(0, lo, hi, [&](std::string_view k, std::string_view v) {
    got.emplace_back(k, v);
    return got.size() < stop;
  });
  if (lo < hi)
    for (auto it = ref.lower_bound(lo); it != ref.end() && std::string_view(it->first) < hi && want.size() < stop; ++it)
      want.emplace_back(it->first, it->second);
  ASSERT_EQ(got.size(), want.size()) << "scan of " << lo.size() << "/" << hi.size() << "-byte bounds, stop " << stop;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(got[i].first == want[i].first) << i;
    EXPECT_TRUE(got[i].second == want[i].second) << i;
  }
}

TEST(MontageBytesOrdered, RoundTripsEverySizeAndCloseSyncs) {
  TempPool pool("bso-rt", std::size_t{256} << 20);
  Ref ref;
  {
    auto m = Map::create(*pool, "m", opts(), manual());
    for (std::size_t ks : kSizes) {
      const std::string key = bytes(ks, 1);
      bool first = true;
      for (std::size_t vs : kSizes) {
        const std::string value = bytes(vs, ks + 7);
        EXPECT_EQ(m->put(0, key, value), first) << ks << "/" << vs;
        first = false;
        auto got = m->get(0, key);
        ASSERT_TRUE(got.has_value());
        EXPECT_TRUE(*got == value) << ks << "/" << vs;
        std::size_t seen = 0;
        EXPECT_TRUE(m->get(0, key, [&](std::string_view v) { seen = v == value ? v.size() + 1 : 0; }));
        EXPECT_EQ(seen, vs + 1);
        ref[key] = value;
      }
    }
    expect_contents(*m, ref);
    expect_scan(*m, ref, "", std::string(70000, '\xff'));
  }  // destruction syncs (no sync() was called)
  pool.reopen();
  auto m = Map::attach(*pool, "m", opts(), manual());
  expect_contents(*m, ref);
  for (const auto& [k, v] : ref) EXPECT_TRUE(m->get(0, k) == v);
}

TEST(MontageBytesOrdered, ReplaceRemoveContainsByThreadHandle) {
  TempPool pool("bso-rr");
  auto m = Map::create(*pool, "m", opts(), manual());
  ferrite::sync::ThreadRegistry reg(2);
  const ferrite::Thread t = reg.acquire();
  EXPECT_FALSE(m->contains(t, ""));
  EXPECT_TRUE(m->put(t, "", ""));  // the empty key and the empty value are storable
  EXPECT_TRUE(m->contains(t, ""));
  EXPECT_EQ(m->get(t, ""), std::optional<std::string>(""));
  EXPECT_TRUE(m->put(t, std::string("a\0b", 3), "x"));
  EXPECT_TRUE(m->put(t, "a", "y"));  // a prefix is another key
  EXPECT_FALSE(m->put(t, "a", "z"));
  EXPECT_EQ(m->get(t, "a"), std::optional<std::string>("z"));
  EXPECT_EQ(m->get(t, std::string("a\0b", 3)), std::optional<std::string>("x"));
  EXPECT_EQ(m->size(), 3u);
  std::string old;
  EXPECT_TRUE(m->remove(t.id(), "a", [&](std::string_view v) { old = v; }));
  EXPECT_EQ(old, "z");
  EXPECT_FALSE(m->remove(t, "a"));
  EXPECT_FALSE(m->contains(t, "a"));
  EXPECT_EQ(m->get(t, "a"), std::nullopt);
  std::vector<std::string> keys;
  m->scan(t, "", "b", [&](std::string_view k, std::string_view) {
    keys.emplace_back(k);
    return true;
  });
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0], "");
  EXPECT_EQ(keys[1], std::string("a\0b", 3));
  EXPECT_TRUE(m->remove(t, ""));
  EXPECT_EQ(m->size(), 1u);
  EXPECT_FALSE(m->get(t, "", [](std::string_view) { FAIL(); }));
}

// Keys with every byte value (0x00 and above 0x7f sort as unsigned), shared
// prefixes and lengths 0..40, against a std::map: random ranges, stops,
// empty and inverted ranges; then the same after a restart.
TEST(MontageBytesOrdered, ScansInByteOrder) {
  TempPool pool("bso-scan", std::size_t{128} << 20);
  Ref ref;
  std::vector<std::string> probes;
  auto m = Map::create(*pool, "m", opts(1), manual());
  std::uint64_t r = 99;
  for (int i = 0; i < 1500; ++i) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    std::string k = bytes((r >> 50) % 41, r);
    if (i % 5 == 0 && !ref.empty()) k = ref.begin()->first.substr(0, (r >> 40) % 6) + k.substr(0, 3);  // prefixes
    const std::string v = bytes((r >> 20) % 300, r + 1);
    const auto c = (r >> 8) % 10;
    if (c < 7) {
      EXPECT_EQ(m->put(0, k, v), ref.count(k) == 0);
      ref[k] = v;
    } else {
      EXPECT_EQ(m->remove(0, k), ref.erase(k) == 1);
    }
    probes.push_back(k);
  }
  probes.emplace_back("");
  probes.emplace_back("\x80");
  probes.emplace_back(std::string(1, '\0'));
  probes.emplace_back("\xff\xff");
  for (int round = 0; round < 2; ++round) {
    expect_contents(*m, ref);
    expect_scan(*m, ref, "", "\xff\xff\xff");
    for (int i = 0; i < 300; ++i) {
      r = r * 6364136223846793005ull + 1442695040888963407ull;
      const std::string& a = probes[(r >> 10) % probes.size()];
      const std::string& b = probes[(r >> 30) % probes.size()];
      expect_scan(*m, ref, a, b);                           // inverted or empty when a >= b
      expect_scan(*m, ref, std::min(a, b), std::max(a, b), 1 + (r >> 50) % 5);  // stopped by fn
    }
    m.reset();
    pool.reopen();
    m = Map::attach(*pool, "m", opts(1), manual());
  }
}

// Two threads update their own keys (checked against a model) while a third
// scans: every scan is strictly ascending, inside its bounds, and every
// value it sees is one some put wrote for that key.
TEST(MontageBytesOrdered, ConcurrentUpdatesAndScans) {
  TempPool pool("bso-mt", std::size_t{256} << 20);
  auto m = Map::create(*pool, "m", opts(3), manual());
  Ref own[2];
  std::atomic<int> errors{0};
  std::atomic<bool> done{false};
  auto value_for = [](const std::string& key, std::uint64_t n) { return key + "=" + std::to_string(n) + bytes(n % 90, n); };
  auto work = [&](int tid) {
    std::uint64_t r = 0x1234 + static_cast<std::uint64_t>(tid);
    for (int i = 0; i < 3000; ++i) {
      r = r * 6364136223846793005ull + 1442695040888963407ull;
      const std::string key = std::string(1, static_cast<char>('A' + tid)) + bytes((r >> 40) % 12, (r >> 20) % 64);
      const auto c = (r >> 10) % 10;
      if (c < 5) {
        const std::string v = value_for(key, r >> 33);
        if (m->put(tid, key, v) != (own[tid].count(key) == 0)) ++errors;
        own[tid][key] = v;
      } else if (c < 8) {
        if (m->remove(tid, key) != (own[tid].count(key) != 0)) ++errors;
        own[tid].erase(key);
      } else {
        const auto got = m->get(tid, key);
        const auto it = own[tid].find(key);
        if (got != (it == own[tid].end() ? std::nullopt : std::optional<std::string>(it->second))) ++errors;
      }
      if (i % 500 == 0) m->sync();
    }
  };
  std::atomic<long> scanned{0};
  std::thread scanner([&] {
    while (!done.load()) {
      std::string last;
      bool first = true;
      m->scan(2, "A", "C", [&](std::string_view k, std::string_view v) {
        if ((!first && !(last < k)) || k < "A" || !(k < "C")) ++errors;
        if (v.substr(0, k.size() + 1) != std::string(k) + "=") ++errors;  // a value written for this key
        last = k;
        first = false;
        ++scanned;
        return true;
      });
    }
  });
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  done = true;
  scanner.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GT(scanned.load(), 0);
  Ref want;
  for (const auto& o : own) want.insert(o.begin(), o.end());
  expect_contents(*m, want);
  m.reset();
  pool.reopen();
  m = Map::attach(*pool, "m", opts(3), manual());
  expect_contents(*m, want);
}

TEST(MontageBytesOrdered, OpenOrCreateAndOtherKinds) {
  TempPool pool("bso-ooc", std::size_t{64} << 20);
  {
    auto m = pool->open_or_create<Map>("m", opts(1), manual());
    for (int i = 0; i < 500; ++i) ASSERT_TRUE(m->put(0, "k" + std::to_string(i), std::to_string(i)));
    auto h = fm::BytesHashMap<>::create(*pool, "h", opts(1), manual());
    h->put(0, "x", "y");
  }
  pool.reopen();
  auto m = pool->open_or_create<Map>("m", opts(1), manual());
  EXPECT_EQ(m->size(), 500u);
  EXPECT_EQ(m->get(0, "k499"), std::optional<std::string>("499"));
  EXPECT_THROW(fm::SkipList<>::attach(*pool, "m", 1), std::runtime_error);   // not an int64 skip list
  EXPECT_THROW(fm::BytesHashMap<>::attach(*pool, "m", opts(1)), std::runtime_error);
  EXPECT_THROW(Map::attach(*pool, "h", opts(1)), std::runtime_error);        // a hash map, not this
  EXPECT_THROW(Map::attach(*pool, "m", opts(2)), std::invalid_argument);     // above its capacity (1)
}

// The pool bytes of a payload holding `key` (searched in the mapping).
char* find_in_pool(ferrite::pmem::Pool& pool, std::string_view needle) {
  char* base = pool.at<char>(0);
  char* end = base + pool.size();
  for (char* p = base; p + needle.size() <= end; ++p)
    if (std::memcmp(p, needle.data(), needle.size()) == 0) return p;
  return nullptr;
}

TEST(MontageBytesOrdered, DamagedPayloadIsCorruptNamingItsOffset) {
  TempPool pool("bso-dmg", std::size_t{32} << 20);
  const std::string marker = "damage-me:" + bytes(24, 5);
  {
    auto m = Map::create(*pool, "m", opts(1), manual());
    m->put(0, "before", "b");
    m->put(0, marker, "the value");
    m->put(0, "zafter", "z");
  }
  char* key = find_in_pool(*pool, marker);
  ASSERT_NE(key, nullptr);
  std::uint32_t klen = 0;
  std::memcpy(&klen, key - 8, 4);
  ASSERT_EQ(klen, marker.size());
  const std::uint32_t bad = 60000;  // lengths that no longer add up to the block
  std::memcpy(key - 8, &bad, 4);
  const std::uint64_t block = pool->offset_of(key - 8) - sizeof(fm::PBlkHeader);
  pool.reopen();
  try {
    auto m = Map::attach(*pool, "m", opts(1), manual());
    FAIL() << "a damaged payload was accepted";
  } catch (const ferrite::pmem::PoolError& e) {
    EXPECT_EQ(e.code(), ferrite::pmem::Errc::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("offset " + std::to_string(block)), std::string::npos) << e.what();
  }
  // Refused again, the same way (recovery is idempotent and wrote nothing
  // of its own).
  pool.reopen();
  EXPECT_THROW(Map::attach(*pool, "m", opts(1), manual()), ferrite::pmem::PoolError);
}

// The same with 3000 keys and two recovery threads (the rebuild's sort runs
// in two threads): the damage is still reported to the caller, for both
// byte maps (a throw inside a sorting thread would end the process).
template <class M>
void damaged_with_parallel_recovery(const char* tag) {
  TempPool pool(tag, std::size_t{64} << 20);
  fm::EpochOptions eo = manual();
  eo.recovery_threads = 2;
  const std::string marker = "damage-me:" + bytes(24, 6);
  {
    auto m = M::create(*pool, "m", opts(1), eo);
    for (int i = 0; i < 3000; ++i) m->put(0, "k" + std::to_string(i), bytes(static_cast<std::size_t>(i % 50), i));
    m->put(0, marker, "v");
  }
  char* key = find_in_pool(*pool, marker);
  ASSERT_NE(key, nullptr);
  const std::uint32_t bad = 7;  // the value "v" has 1 byte
  std::memcpy(key - 4, &bad, 4);  // the value length
  const std::uint64_t block = pool->offset_of(key - 8) - sizeof(fm::PBlkHeader);
  pool.reopen();
  try {
    auto m = M::attach(*pool, "m", opts(1), eo);
    FAIL() << "a damaged payload was accepted";
  } catch (const ferrite::pmem::PoolError& e) {
    EXPECT_EQ(e.code(), ferrite::pmem::Errc::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("offset " + std::to_string(block)), std::string::npos) << e.what();
  }
}
TEST(MontageBytesOrdered, DamagedPayloadWithParallelRecoveryReachesTheCaller) {
  damaged_with_parallel_recovery<Map>("bso-dmg2");
  damaged_with_parallel_recovery<fm::BytesHashMap<>>("bsh-dmg2");
}

TEST(MontageBytesOrdered, SizeLimits) {
  TempPool pool("bso-lim", std::size_t{128} << 20);
  auto m = Map::create(*pool, "m", opts(1), manual());
  const std::string big(Map::kMaxValueBytes + 1, 'x');
  try {
    m->put(0, "k", big);
    FAIL() << "no throw";
  } catch (const ferrite::pmem::PoolError& e) {
    EXPECT_EQ(e.code(), ferrite::pmem::Errc::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(std::to_string(big.size())), std::string::npos) << e.what();
  }
  EXPECT_THROW(m->put(0, big, "v"), ferrite::pmem::PoolError);
  EXPECT_EQ(m->size(), 0u);
  const std::string max = bytes(ferrite::pmem::kMaxPayloadBytes, 3);
  EXPECT_TRUE(m->put(0, "max", max));
  EXPECT_TRUE(m->get(0, "max") == max);
  EXPECT_TRUE(m->put(0, "after", "still works"));
  m.reset();
  pool.reopen();
  m = Map::attach(*pool, "m", opts(1), manual());
  EXPECT_TRUE(m->get(0, "max") == max);
  EXPECT_EQ(m->get(0, "after"), std::optional<std::string>("still works"));
}

}  // namespace

}  // namespace montage_bytes_ordered_test
