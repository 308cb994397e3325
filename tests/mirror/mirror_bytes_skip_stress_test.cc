// Stress test of mirror::BytesSkipMap (TSan-able: label tsan): two writers
// put, replace and remove keys of their own while two readers get and scan
// (include/ferrite/mirror/bytes_skip_map.h, invariants S2 and S4, and the
// scan guarantee of its essay).
//
// Keys share long prefixes ("shared-prefix/" + writer + index, so most
// comparisons read key payloads) and values are self-describing: 8 bytes of
// the key's number, 8 bytes of a version, then a keystream of (number,
// version) of a size drawn from the version — a reader knows exactly which
// bytes every byte of a value must be. Readers check: every get's value is
// sound for its key; every scan's keys are in [lo, hi), strictly ascending
// (no key twice), each with a sound value. At the end the map equals the
// writers' models (each writer owns its keys), size() agrees, and the
// replicas are equal.
//
// The broken variant kPayloadFreeNow (a replaced value freed at once — a
// payload freed while a reader can still reach it) is caught here: its
// block is reused by the writer's next payload while a reader reads it.
// Invisible to crash campaigns (a crash ends every reader); not run under
// TSan (the race is the point).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/mirror/bytes_skip_map.h"

namespace mirror_bytes_skip_stress_test {  // this file's names, apart in a unity build

namespace fm = ferrite::mirror;
using ferrite::test::TempPool;

namespace {

constexpr int kWriters = 2, kReaders = 2, kKeysPerWriter = 24;

std::uint64_t number(int writer, int i) { return static_cast<std::uint64_t>(writer * 1000 + i); }
std::string key_of(std::uint64_t n) {
  char b[32];
  std::snprintf(b, sizeof b, "shared-prefix/%04llu", static_cast<unsigned long long>(n));
  return b;
}
std::uint64_t number_of(std::string_view key) { return std::stoull(std::string(key.substr(14))); }

std::string value_of(std::uint64_t key, std::uint64_t version) {
  const std::size_t n = 16 + (version * 2654435761u) % 700;
  std::string s(n, '\0');
  std::memcpy(s.data(), &key, 8);
  std::memcpy(s.data() + 8, &version, 8);
  std::uint64_t x = key * 0x9e3779b97f4a7c15ull ^ version;
  for (std::size_t i = 16; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    s[i] = static_cast<char>(x >> 56);
  }
  return s;
}
bool sound(std::string_view b, std::uint64_t key) {
  if (b.size() < 16) return false;
  std::uint64_t k, v;
  std::memcpy(&k, b.data(), 8);
  std::memcpy(&v, b.data() + 8, 8);
  return k == key && value_of(key, v) == b;
}

struct Outcome {
  std::uint64_t bad = 0, gets = 0, scans = 0, visited = 0;
};

template <class C>
Outcome run(int ms, bool check_final) {
  TempPool pool("mbss", std::size_t{64} << 20);
  ferrite::MapOptions o;
  o.threads = kWriters + kReaders;
  auto m = fm::BytesSkipMap<C>::create(*pool, "m", o, std::size_t{8} << 20);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> bad{0}, gets{0}, scans{0}, visited{0};
  std::map<std::string, std::string> model[kWriters];
  std::vector<std::thread> ts;
  std::atomic<int> writers_left{kWriters};
  for (int w = 0; w < kWriters; ++w)
    ts.emplace_back([&, w] {
      std::uint64_t version = 1, x = 12345 + static_cast<std::uint64_t>(w);
      const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
      auto& mine = model[w];
      while (!stop.load(std::memory_order_relaxed) && std::chrono::steady_clock::now() < end) {
        for (int r = 0; r < 64; ++r, ++version) {
          x ^= x << 13, x ^= x >> 7, x ^= x << 17;
          const std::uint64_t n = number(w, static_cast<int>(x % kKeysPerWriter));
          const std::string key = key_of(n);
          if (x % 5 == 0) {
            if (m->remove(w, key) != (mine.erase(key) == 1)) bad.fetch_add(1);
          } else {
            const std::string v = value_of(n, version);
            if (m->put(w, key, v) != (mine.count(key) == 0)) bad.fetch_add(1);
            mine[key] = v;
          }
        }
      }
      if (writers_left.fetch_sub(1) == 1) stop.store(true);
    });
  for (int r = 0; r < kReaders; ++r)
    ts.emplace_back([&, r] {
      const int tid = kWriters + r;
      std::uint64_t x = 999 + static_cast<std::uint64_t>(r), my_gets = 0, my_scans = 0, my_visited = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        try {
          const std::uint64_t n = number(static_cast<int>(x % kWriters), static_cast<int>((x >> 8) % kKeysPerWriter));
          m->get(tid, key_of(n), [&](std::string_view b) {
            if (!sound(b, n)) bad.fetch_add(1);
          });
          ++my_gets;
          const std::uint64_t a = (x >> 16) % 2100, len = (x >> 32) % 1500;
          const std::string lo = key_of(a), hi = (x & 1) != 0 ? key_of(a + len) : std::string("shared-prefix0");
          std::string last;
          bool first = true;
          m->scan(tid, lo, hi, [&](std::string_view k, std::string_view v) {
            if (k < lo || !(k < hi) || (!first && !(last < k)) || !sound(v, number_of(k))) bad.fetch_add(1);
            last = k;
            first = false;
            ++my_visited;
            return true;
          });
          ++my_scans;
        } catch (const ferrite::pmem::PoolError&) {
          bad.fetch_add(1);  // a payload that fails validation
        }
        if (bad.load(std::memory_order_relaxed) > 0) stop.store(true);
      }
      gets.fetch_add(my_gets);
      scans.fetch_add(my_scans);
      visited.fetch_add(my_visited);
    });
  for (auto& t : ts) t.join();
  Outcome out{bad.load(), gets.load(), scans.load(), visited.load()};
  if (check_final) {
    std::map<std::string, std::string> want;
    for (const auto& w : model) want.insert(w.begin(), w.end());
    EXPECT_EQ(m->items(), (std::vector<std::pair<std::string, std::string>>(want.begin(), want.end())));
    EXPECT_EQ(m->size(), want.size());
    EXPECT_TRUE(m->replicas_equal());
  }
  return out;
}

TEST(MirrorBytesSkipStress, ReadersAndScansNeverSeeAWrongByteOrOrder) {
  const auto o = run<fm::Default>(ferrite::test::scaled(1000, 200), true);
  EXPECT_EQ(o.bad, 0u);
  EXPECT_GT(o.gets, 100u);
  EXPECT_GT(o.scans, 100u);
  std::printf("[mirror] ordered bytes map: %llu gets, %llu scans visiting %llu pairs during updates, %llu bad\n",
              static_cast<unsigned long long>(o.gets), static_cast<unsigned long long>(o.scans),
              static_cast<unsigned long long>(o.visited), static_cast<unsigned long long>(o.bad));
}

#if !defined(__SANITIZE_THREAD__)
TEST(MirrorBytesSkipStress, FreeingAReplacedValueAtOnceIsCaught) {
  using Broken = fm::Config<fm::InDram, fm::internal::kPayloadFreeNow>;
  const auto o = run<Broken>(10000, false);
  EXPECT_GE(o.bad, 1u) << "kPayloadFreeNow not caught in " << o.gets << " gets and " << o.scans << " scans";
  std::printf("[mirror] ordered bytes map, kPayloadFreeNow: caught after %llu gets, %llu scans (%llu bad)\n",
              static_cast<unsigned long long>(o.gets), static_cast<unsigned long long>(o.scans),
              static_cast<unsigned long long>(o.bad));
}
#endif

}  // namespace

}  // namespace mirror_bytes_skip_stress_test
