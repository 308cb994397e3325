// Unit tests of nbMontage's byte-string hash map (montage/bytes_hash_map.h):
// round trips of keys and values of 0 to 65536 bytes, replace and remove,
// two threads against a model, growth, clean restarts, a SIGKILLed child
// (everything synced survives byte for byte), the size limits and a full
// pool (PoolError(kFull), nothing stored lost).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/temp_pool.h"
#include "ferrite/map.h"
#include "ferrite/montage/bytes_hash_map.h"

namespace montage_bytes_test {  // this file's names, apart in a unity build

namespace fm = ferrite::montage;
using ferrite::test::TempPool;
using Map = fm::BytesHashMap<>;
static_assert(ferrite::Map<Map>);

namespace {

fm::EpochOptions manual() {
  fm::EpochOptions o;
  o.epoch_length = std::chrono::microseconds{0};
  return o;
}
ferrite::MapOptions opts(int threads = 2, std::size_t buckets = 2) {
  ferrite::MapOptions o;
  o.threads = threads;
  o.buckets = buckets;
  return o;
}
// n bytes, every one of them depending on (n, seed) and its position.
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

void expect_contents(Map& m, const std::map<std::string, std::string>& ref) {
  ASSERT_EQ(m.size(), ref.size());
  const auto c = m.contents();
  ASSERT_EQ(c.size(), ref.size());
  auto it = ref.begin();
  for (const auto& [k, v] : c) {
    EXPECT_EQ(k, it->first);
    EXPECT_TRUE(v == it->second) << "value of a " << k.size() << "-byte key: " << v.size() << " bytes, expected "
                                 << it->second.size();
    ++it;
  }
  EXPECT_EQ(m.check_index(), "");
}

TEST(MontageBytes, RoundTripsEverySize) {
  TempPool pool("bytes-rt", std::size_t{256} << 20);
  std::map<std::string, std::string> ref;
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
  }  // destruction syncs
  pool.reopen();
  auto m = Map::attach(*pool, "m", opts(), manual());
  expect_contents(*m, ref);
  for (const auto& [k, v] : ref) EXPECT_TRUE(m->get(0, k) == v);
}

TEST(MontageBytes, ReplaceRemoveContains) {
  TempPool pool("bytes-rr");
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
  EXPECT_TRUE(m->remove(t, ""));
  EXPECT_EQ(m->size(), 1u);
  EXPECT_FALSE(m->get(t, "", [](std::string_view) { FAIL(); }));
}

// Two threads: their own keys checked against a model each, and shared keys
// whose final value must be one of the threads' last writes.
TEST(MontageBytes, TwoThreadsAgainstAModel) {
  TempPool pool("bytes-mt", std::size_t{256} << 20);
  auto m = Map::create(*pool, "m", opts(), manual());
  std::map<std::string, std::string> own[2];
  std::map<std::string, std::optional<std::string>> last[2];  // shared keys
  std::atomic<int> errors{0};
  auto work = [&](int tid) {
    std::uint64_t r = 0x1234 + static_cast<std::uint64_t>(tid);
    for (int i = 0; i < 4000; ++i) {
      r = r * 6364136223846793005ull + 1442695040888963407ull;
      const bool shared = (r >> 60) < 4;
      const std::uint64_t kn = (r >> 20) % 24;
      const std::string key = shared ? "shared" + std::to_string(kn % 4)
                                     : std::string(1, static_cast<char>('A' + tid)) + bytes((r >> 40) % 80, kn);
      const std::string value = bytes((r >> 30) % 300, r);
      const auto c = (r >> 10) % 10;
      if (c < 1 && i % 50 == 0) {
        m->sync();
      } else if (c < 5) {
        const bool inserted = m->put(tid, key, value);
        if (!shared && inserted != (own[tid].count(key) == 0)) ++errors;
        if (shared) last[tid][key] = value;
        else own[tid][key] = value;
      } else if (c < 8) {
        const bool removed = m->remove(tid, key);
        if (!shared && removed != (own[tid].count(key) != 0)) ++errors;
        if (shared) last[tid][key] = std::nullopt;
        else own[tid].erase(key);
      } else {
        const auto got = m->get(tid, key);
        if (!shared) {
          const auto it = own[tid].find(key);
          if (got != (it == own[tid].end() ? std::nullopt : std::optional<std::string>(it->second))) ++errors;
        }
      }
    }
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  EXPECT_EQ(errors.load(), 0);
  std::map<std::string, std::string> want;
  for (const auto& o : own)
    for (const auto& [k, v] : o) {
      EXPECT_EQ(want.count(k), 0u) << "the threads' own keys are disjoint";
      want[k] = v;
    }
  for (int s = 0; s < 4; ++s) {
    const std::string key = "shared" + std::to_string(s);
    const auto got = m->get(0, key);
    bool explained = last[0].count(key) == 0 && last[1].count(key) == 0 && !got;
    for (const auto& l : last)
      if (l.count(key) != 0 && l.at(key) == got) explained = true;
    EXPECT_TRUE(explained) << key;
    if (got) want[key] = *got;
  }
  expect_contents(*m, want);
  m.reset();
  pool.reopen();
  m = Map::attach(*pool, "m", opts(), manual());
  expect_contents(*m, want);
}

TEST(MontageBytes, GrowsAndOpenOrCreate) {
  TempPool pool("bytes-grow", std::size_t{256} << 20);
  std::map<std::string, std::string> ref;
  {
    auto m = pool->open_or_create<Map>("m", opts(1, 2), manual());
    for (int i = 0; i < 5000; ++i) {
      const std::string k = "key" + std::to_string(i), v = bytes(static_cast<std::size_t>(i % 200), i);
      ASSERT_TRUE(m->put(0, k, v));
      ref[k] = v;
    }
    EXPECT_GE(m->bucket_count(), 2048u);  // doubled past two keys per bucket
    expect_contents(*m, ref);
  }
  pool.reopen();
  auto m = pool->open_or_create<Map>("m", opts(1, 2), manual());
  expect_contents(*m, ref);
  EXPECT_THROW(fm::SplitOrderedMap<>::attach(*pool, "m", 1), std::runtime_error);  // not an int64 table
}

// A child process puts, syncs, tells the parent, and goes on putting until
// SIGKILLed: everything synced is there, byte for byte.
TEST(MontageBytes, SigkillAfterSyncKeepsEverythingSynced) {
  TempPool pool("bytes-kill", std::size_t{256} << 20);
  std::string path = pool.path();
  {
    auto m = Map::create(*pool, "m", opts(1, 2), manual());
  }
  pool.reopen();  // nothing mapped across the fork but the file
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  auto key_of = [](int i) { return bytes(static_cast<std::size_t>(i % 70), static_cast<std::uint64_t>(i)) + std::to_string(i); };
  auto value_of = [](int i, int round) { return bytes(static_cast<std::size_t>((i * 37) % 5000), static_cast<std::uint64_t>(i * 10 + round)); };
  constexpr int kSynced = 300;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    auto m = Map::attach(*pool, "m", opts(1, 2), manual());
    for (int i = 0; i < kSynced; ++i) m->put(0, key_of(i), value_of(i, 0));
    for (int i = 0; i < kSynced; i += 3) m->remove(0, key_of(i));
    m->sync();
    const char ok = 'k';
    if (::write(fds[1], &ok, 1) != 1) ::_exit(2);
    for (int round = 1;; ++round)  // unsynced: may be lost, never corrupts the synced state
      for (int i = kSynced; i < kSynced + 100; ++i) m->put(0, key_of(i), value_of(i, round));
  }
  ::close(fds[1]);
  char c = 0;
  ASSERT_EQ(::read(fds[0], &c, 1), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(fds[0]);
  pool.reopen();
  auto m = Map::attach(*pool, "m", opts(1, 2), manual());
  for (int i = 0; i < kSynced; ++i) {
    const auto got = m->get(0, key_of(i));
    if (i % 3 == 0) {
      EXPECT_FALSE(got.has_value()) << i;
    } else {
      ASSERT_TRUE(got.has_value()) << i;
      EXPECT_TRUE(*got == value_of(i, 0)) << i;
    }
  }
  for (int i = kSynced; i < kSynced + 100; ++i) {
    const auto got = m->get(0, key_of(i));
    if (!got) continue;
    bool some_round = false;
    for (int round = 1; round < 100000 && !some_round; ++round) some_round = *got == value_of(i, round);
    EXPECT_TRUE(some_round) << "an unsynced value that no put wrote, key " << i;
  }
  EXPECT_EQ(m->check_index(), "");
}

TEST(MontageBytes, SizeLimits) {
  TempPool pool("bytes-lim", std::size_t{128} << 20);
  auto m = Map::create(*pool, "m", opts(1, 2), manual());
  const std::string big(fm::BytesHashMap<>::kMaxValueBytes + 1, 'x');
  try {
    m->put(0, "k", big);
    FAIL() << "no throw";
  } catch (const ferrite::pmem::PoolError& e) {
    EXPECT_EQ(e.code(), ferrite::pmem::Errc::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(std::to_string(big.size())), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(ferrite::pmem::kMaxPayloadBytes)), std::string::npos);
  }
  EXPECT_THROW(m->put(0, big, "v"), ferrite::pmem::PoolError);
  EXPECT_EQ(m->size(), 0u);
  // The limit itself is storable (a 16 MiB value: a large block).
  const std::string max = bytes(ferrite::pmem::kMaxPayloadBytes, 3);
  EXPECT_TRUE(m->put(0, "max", max));
  EXPECT_TRUE(m->get(0, "max") == max);
  EXPECT_TRUE(m->put(0, "after", "still works"));
  m.reset();
  pool.reopen();
  m = Map::attach(*pool, "m", opts(1, 2), manual());
  EXPECT_TRUE(m->get(0, "max") == max);
  EXPECT_EQ(m->get(0, "after"), std::optional<std::string>("still works"));
}

TEST(MontageBytes, FullPoolThrowsAndLosesNothing) {
  TempPool pool("bytes-full", std::size_t{8} << 20);
  std::map<std::string, std::string> ref;
  auto m = Map::create(*pool, "m", opts(1, 2), manual());
  bool full = false;
  for (int i = 0; i < 10000 && !full; ++i) {
    const std::string k = "k" + std::to_string(i % 300), v = bytes(static_cast<std::size_t>(1000 + (i * 7919) % 60000), i);
    try {
      m->put(0, k, v);
      ref[k] = v;
    } catch (const ferrite::pmem::PoolError& e) {
      EXPECT_EQ(e.code(), ferrite::pmem::Errc::kFull) << e.what();
      full = true;
    }
  }
  ASSERT_TRUE(full);
  expect_contents(*m, ref);
  // Small updates still succeed where blocks are free; a removal always does.
  const std::string gone = ref.begin()->first;
  EXPECT_TRUE(m->remove(0, gone));
  ref.erase(gone);
  m->sync();
  expect_contents(*m, ref);
  m.reset();
  pool.reopen();
  m = Map::attach(*pool, "m", opts(1, 2), manual());
  expect_contents(*m, ref);
}

}  // namespace

}  // namespace montage_bytes_test
