// Stress test of mirror::BytesHashMap's reclamation (TSan-able: label tsan):
// readers that validate every byte they read while writers replace and
// remove values (include/ferrite/mirror/bytes_map.h, invariant B2).
//
// Each value is self-describing: 8 bytes of the key's index, 8 bytes of a
// version, then a keystream of (index, version), of a size drawn from the
// version — a reader knows exactly which bytes every byte of a value must
// be. The correct map never shows a reader a wrong byte: a replaced or
// erased payload is freed through EBR only after every reader that may hold
// its offset unpinned. The broken variant kPayloadFreeNow (a replaced value
// freed at once) is caught here: its block is reused by the writer's next
// payload while a reader still reads it, so the reader sees a failed check
// (PoolError kCorrupt) or another value's bytes. That bug is invisible to
// crash campaigns (a crash ends every reader), hence this test; it is not
// run under TSan (the broken variant's race is the point, and TSan would
// report it rather than let the reader see it).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/mirror/bytes_map.h"

namespace mirror_bytes_stress_test {  // this file's names, apart in a unity build

namespace fm = ferrite::mirror;
using ferrite::test::TempPool;

namespace {

constexpr int kKeys = 8;

std::string value_of(std::uint64_t key, std::uint64_t version) {
  const std::size_t n = 16 + (version * 2654435761u) % 600;
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
// Every byte is the one value_of(key, its version) wrote.
bool sound(std::string_view b, std::uint64_t key) {
  if (b.size() < 16) return false;
  std::uint64_t k, v;
  std::memcpy(&k, b.data(), 8);
  std::memcpy(&v, b.data() + 8, 8);
  return k == key && value_of(key, v) == b;
}

// Bad reads seen by `readers` readers while a writer replaces (and now and
// then removes) values for `ms` milliseconds or until `stop_at_bad`.
template <class C>
std::uint64_t bad_reads(int ms, std::uint64_t stop_at_bad, std::uint64_t* reads_out) {
  constexpr int kReaders = 2;
  TempPool pool("mbs", std::size_t{64} << 20);
  ferrite::MapOptions o;
  o.threads = 1 + kReaders;
  o.buckets = 4;
  auto m = fm::BytesHashMap<C>::create(*pool, "m", o, std::size_t{8} << 20);
  for (int k = 0; k < kKeys; ++k) m->put(0, "key" + std::to_string(k), value_of(static_cast<std::uint64_t>(k), 0));
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> bad{0}, reads{0};
  std::thread writer([&] {
    std::uint64_t version = 1;
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (!stop.load(std::memory_order_relaxed) && std::chrono::steady_clock::now() < end) {
      for (int k = 0; k < kKeys; ++k, ++version) {
        const std::string key = "key" + std::to_string(k);
        if (version % 16 == 0) m->remove(0, key);
        m->put(0, key, value_of(static_cast<std::uint64_t>(k), version));
      }
    }
    stop.store(true);
  });
  std::vector<std::thread> rs;
  for (int r = 1; r <= kReaders; ++r)
    rs.emplace_back([&, r] {
      std::uint64_t mine = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        for (int k = 0; k < kKeys; ++k) {
          try {
            m->get(r, "key" + std::to_string(k), [&](std::string_view b) {
              if (!sound(b, static_cast<std::uint64_t>(k))) bad.fetch_add(1);
            });
          } catch (const ferrite::pmem::PoolError&) {
            bad.fetch_add(1);  // a payload that fails validation
          }
          ++mine;
        }
        if (bad.load(std::memory_order_relaxed) >= stop_at_bad) stop.store(true);
      }
      reads.fetch_add(mine);
    });
  writer.join();
  for (auto& t : rs) t.join();
  *reads_out = reads.load();
  return bad.load();
}

TEST(MirrorBytesStress, ReadersNeverSeeAWrongByteWhileValuesAreReplaced) {
  std::uint64_t reads = 0;
  const auto bad = bad_reads<fm::Default>(ferrite::test::scaled(1500, 300), 1, &reads);
  EXPECT_EQ(bad, 0u) << "of " << reads << " reads";
  EXPECT_GT(reads, 1000u);
  std::printf("[mirror] bytes map: %llu validated reads during replaces, %llu bad\n",
              static_cast<unsigned long long>(reads), static_cast<unsigned long long>(bad));
}

#if !defined(__SANITIZE_THREAD__)
TEST(MirrorBytesStress, FreeingAReplacedValueAtOnceIsCaught) {
  using Broken = fm::Config<fm::InDram, fm::internal::kPayloadFreeNow>;
  std::uint64_t reads = 0;
  const auto bad = bad_reads<Broken>(10000, 1, &reads);
  EXPECT_GE(bad, 1u) << "kPayloadFreeNow not caught in " << reads << " reads";
  std::printf("[mirror] bytes map, kPayloadFreeNow: caught after %llu reads (%llu bad)\n",
              static_cast<unsigned long long>(reads), static_cast<unsigned long long>(bad));
}
#endif

}  // namespace

}  // namespace mirror_bytes_stress_test
