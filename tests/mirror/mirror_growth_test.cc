// Mirror's regions grow (include/ferrite/mirror/heap.h, "Growth"; issue 39):
//   - an int64 hash map and a byte-string hash map created with the smallest
//     first region (64 KiB, 1,023 units) take 20,000 keys (the byte map a
//     few MiB of values), both replica placements; the chain has grown;
//     every key is found, then again after re-opening the pool in the same
//     process and in a fresh one (this binary re-executed), and the
//     allocator rebuilt by recovery accounts for exactly the live units;
//   - growth after a restart extends the recovered chain;
//   - four threads growing one chain at once lose nothing;
//   - a full POOL throws PoolError(kFull) naming the pool's free space, and
//     what went in stays (also across a restart); no "region full";
//   - a damaged chain — a next pointer outside the pool, a header with a bad
//     magic or size, a loop back to region 0 — fails the root's pool
//     recovery hook with PoolError(kCorrupt) naming the pool offset, and the
//     structure stays closed: no segfault.
// The crash campaigns are mirror_growth_crash_test.cc.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/process.h"
#include "common/temp_pool.h"
#include "ferrite/map.h"
#include "ferrite/mirror/bytes_map.h"
#include "ferrite/mirror/hash_map.h"
#include "ferrite/sync/thread_registry.h"

namespace mirror_growth_test {  // this file's names, apart in a unity build

namespace fm = ferrite::mirror;
namespace fp = ferrite::pmem;
using ferrite::test::TempPath;
using ferrite::test::TempPool;

namespace {

using Dram = fm::Config<fm::InDram>;
using Nvm = fm::Config<fm::InPool>;
constexpr std::size_t kTiny = std::size_t{64} << 10;
constexpr int kKeys = 20000;

std::int64_t value_of(std::int64_t k) { return k * 7 + 3; }
std::string bytes(std::size_t n, std::uint64_t seed) {
  std::string s(n, '\0');
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (auto& c : s) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>(x & 0xFF);
  }
  return s;
}
std::string bkey(int i) { return "key-" + std::to_string(i); }
std::string bval(int i) { return bytes(100 + static_cast<std::size_t>(i % 200), static_cast<std::uint64_t>(i)); }

ferrite::MapOptions opts(int threads, std::size_t buckets) {
  ferrite::MapOptions o;
  o.threads = threads;
  o.buckets = buckets;
  return o;
}

template <class C>
void int_map_has_every_key(fm::HashMap<C>& m, int keys) {
  for (int k = 0; k < keys; ++k) ASSERT_EQ(m.get(k, 0), value_of(k)) << "key " << k;
  EXPECT_FALSE(m.get(keys, 0).has_value());
}
void bytes_map_has_every_key(fm::BytesHashMap<Dram>& m, const ferrite::Thread& t, int keys) {
  for (int i = 0; i < keys; ++i) ASSERT_EQ(m.get(t, bkey(i)), bval(i)) << "key " << i;
  EXPECT_EQ(m.size(), static_cast<std::size_t>(keys));
}

// Runs this binary's test `name` in a fresh process with the pool at `path`;
// true if it passed.
bool child_passes(const std::string& name, const std::string& path) {
  const pid_t pid = ferrite::test::spawn_self("MirrorGrowthChild." + name, {"FERRITE_MIRROR_GROWTH_POOL=" + path});
  if (pid < 0) return false;
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}
const char* child_pool() { return std::getenv("FERRITE_MIRROR_GROWTH_POOL"); }

template <class C>
void int_map_grows() {
  TempPath path("mg-int");
  std::uint64_t regions = 0;
  {
    auto pool = fp::Pool::create(path, std::size_t{32} << 20);
    auto m = fm::HashMap<C>::create(*pool, "m", 1, 1024, kTiny);
    EXPECT_EQ(m->heap().regions(), 1u);
    EXPECT_EQ(m->heap().replica_bytes(), kTiny);
    for (int k = 0; k < kKeys; ++k) ASSERT_FALSE(m->put(k, value_of(k), 0).has_value()) << k;
    regions = m->heap().regions();
    // 20,000 nodes + the 1,024 buckets (256 units) in regions of 1,023 units.
    EXPECT_GE(regions, (kKeys + 256u) / 1023 + 1);
    int_map_has_every_key(*m, kKeys);
    EXPECT_TRUE(m->replicas_equal());
  }
  {
    auto pool = fp::Pool::open(path);
    ASSERT_TRUE(pool->recovery_report()->failed_roots.empty());
    auto m = fm::HashMap<C>::attach(*pool, "m", 2);
    EXPECT_EQ(m->heap().regions(), regions);
    int_map_has_every_key(*m, kKeys);
    EXPECT_TRUE(m->replicas_equal());
    // Recovery rebuilt the allocator over every region: exactly the nodes
    // and the bucket array are live.
    EXPECT_EQ(m->heap().units() - m->heap().free_units(), kKeys + 256u);
    // Growth after the restart: the recovered chain is extended.
    for (int k = kKeys; k < kKeys + 5000; ++k) ASSERT_FALSE(m->put(k, value_of(k), 1).has_value()) << k;
    EXPECT_GT(m->heap().regions(), regions);
    regions = m->heap().regions();
    for (int k = 0; k < kKeys; k += 2) ASSERT_TRUE(m->erase(k, 0).has_value());
  }
  {
    auto pool = fp::Pool::open(path);
    auto m = fm::HashMap<C>::attach(*pool, "m", 1);
    EXPECT_EQ(m->heap().regions(), regions);
    for (int k = 0; k < kKeys + 5000; ++k)
      ASSERT_EQ(m->get(k, 0), k < kKeys && k % 2 == 0 ? std::nullopt : std::optional<std::int64_t>(value_of(k))) << k;
  }
  // A fresh process: no DRAM replica, no allocator state, nothing cached.
  EXPECT_TRUE(child_passes(C::placement::kKind == fm::PlacementKind::kDram ? "IntMapDram" : "IntMapNvm", path));
}

template <class C>
void int_map_child() {
  if (child_pool() == nullptr) GTEST_SKIP() << "run by MirrorGrowth.*IntMap* in a fresh process";
  auto pool = fp::Pool::open(child_pool());
  ASSERT_TRUE(pool->recovery_report()->failed_roots.empty());
  auto m = fm::HashMap<C>::attach(*pool, "m", 1);
  EXPECT_GT(m->heap().regions(), 20u);
  for (int k = 0; k < kKeys + 5000; ++k)
    ASSERT_EQ(m->get(k, 0), k < kKeys && k % 2 == 0 ? std::nullopt : std::optional<std::int64_t>(value_of(k))) << k;
  EXPECT_TRUE(m->replicas_equal());
}

}  // namespace

TEST(MirrorGrowth, IntMapFromA64KiBRegionTo20000KeysDram) { int_map_grows<Dram>(); }
TEST(MirrorGrowth, IntMapFromA64KiBRegionTo20000KeysBothReplicasInPool) { int_map_grows<Nvm>(); }
TEST(MirrorGrowthChild, IntMapDram) { int_map_child<Dram>(); }
TEST(MirrorGrowthChild, IntMapNvm) { int_map_child<Nvm>(); }

TEST(MirrorGrowth, BytesMapFromA64KiBRegionToMegabytesOfValues) {
  TempPath path("mg-bytes");
  ferrite::sync::ThreadRegistry reg(1);
  const auto t = reg.acquire();
  std::uint64_t regions = 0;
  std::size_t value_bytes = 0;
  {
    auto pool = fp::Pool::create(path, std::size_t{64} << 20);
    auto m = fm::BytesHashMap<Dram>::create(*pool, "m", opts(1, 256), kTiny);
    for (int i = 0; i < kKeys; ++i) {
      ASSERT_TRUE(m->put(t, bkey(i), bval(i))) << i;
      value_bytes += bval(i).size();
    }
    regions = m->heap().regions();
    EXPECT_GE(regions, 20u);
    bytes_map_has_every_key(*m, t, kKeys);
  }
  EXPECT_GT(value_bytes, std::size_t{3} << 20);
  {
    auto pool = fp::Pool::open(path);
    ASSERT_TRUE(pool->recovery_report()->failed_roots.empty());
    auto m = fm::BytesHashMap<Dram>::attach(*pool, "m", opts(1, 256));
    EXPECT_EQ(m->heap().regions(), regions);
    bytes_map_has_every_key(*m, t, kKeys);
    EXPECT_EQ(m->heap().units() - m->heap().free_units(), kKeys + 64u);  // nodes + 256 buckets (64 units)
  }
  EXPECT_TRUE(child_passes("BytesMap", path));
}
TEST(MirrorGrowthChild, BytesMap) {
  if (child_pool() == nullptr) GTEST_SKIP() << "run by MirrorGrowth.BytesMap* in a fresh process";
  ferrite::sync::ThreadRegistry reg(1);
  const auto t = reg.acquire();
  auto pool = fp::Pool::open(child_pool());
  ASSERT_TRUE(pool->recovery_report()->failed_roots.empty());
  auto m = fm::BytesHashMap<Dram>::attach(*pool, "m", opts(1, 256));
  bytes_map_has_every_key(*m, t, kKeys);
}

// Four threads fill one chain at once: growth is serialized, allocation is
// not; every key is there, and again after a restart.
TEST(MirrorGrowth, FourThreadsGrowOneChain) {
  TempPool pool("mg-4t", std::size_t{32} << 20);
  constexpr int kPer = 4000;
  {
    auto m = fm::HashMap<Dram>::create(*pool, "m", 4, 64, kTiny);
    std::vector<std::thread> ts;
    for (int tid = 0; tid < 4; ++tid)
      ts.emplace_back([&, tid] {
        for (int i = 0; i < kPer; ++i) {
          const std::int64_t k = tid * kPer + i;
          m->put(k, value_of(k), tid);
          if (i % 3 == 0) m->erase(k, tid);  // garbage for EBR and the free lists too
        }
      });
    for (auto& th : ts) th.join();
    EXPECT_GT(m->heap().regions(), 8u);
  }
  pool.reopen();
  auto m = fm::HashMap<Dram>::attach(*pool, "m", 1);
  for (std::int64_t k = 0; k < 4 * kPer; ++k)
    ASSERT_EQ(m->get(k, 0), (k % kPer) % 3 == 0 ? std::nullopt : std::optional<std::int64_t>(value_of(k))) << k;
  EXPECT_TRUE(m->replicas_equal());
}

// A full pool: PoolError(kFull) naming the pool's free space, nothing lost.
TEST(MirrorGrowth, AFullPoolThrowsPoolFullAndLosesNothing) {
  TempPool pool("mg-full", std::size_t{2} << 20);
  int stored = 0;
  {
    auto m = fm::HashMap<Dram>::create(*pool, "m", 1, 16, kTiny);
    try {
      for (;; ++stored) m->put(stored, value_of(stored), 0);
    } catch (const fp::PoolError& e) {
      EXPECT_EQ(e.code(), fp::Errc::kFull);
      const std::string msg = e.what();
      EXPECT_NE(msg.find("the pool is full"), std::string::npos) << msg;
      EXPECT_NE(msg.find("free chunk"), std::string::npos) << msg;
      EXPECT_NE(msg.find("nothing stored was lost"), std::string::npos) << msg;
      EXPECT_EQ(msg.find("region full"), std::string::npos) << msg;
    }
    EXPECT_GT(stored, 20000);  // ~2 MiB of 64-byte nodes, not one region's 1,023
    for (int k = 0; k < stored; ++k) ASSERT_EQ(m->get(k, 0), value_of(k)) << k;
    EXPECT_FALSE(m->get(stored, 0).has_value());  // the refused put had no effect
    // Room again after erasing: the free lists, no growth needed.
    for (int k = 0; k < 100; ++k) m->erase(k, 0);
  }
  pool.reopen();
  auto m = fm::HashMap<Dram>::attach(*pool, "m", 1);
  for (int k = 0; k < stored; ++k) ASSERT_EQ(m->get(k, 0), k < 100 ? std::nullopt : std::optional<std::int64_t>(value_of(k)));
  for (int k = 0; k < 100; ++k) ASSERT_FALSE(m->put(k, value_of(k), 0).has_value());
}

// An object larger than a region is refused clearly (kInvalidArgument), not
// by growth.
TEST(MirrorGrowth, AnObjectLargerThanARegionIsRefusedClearly) {
  TempPool pool("mg-big", std::size_t{8} << 20);
  fm::Heap<Dram> heap(*pool, kTiny, 1);
  try {
    heap.alloc(kTiny, 0);
    ADD_FAILURE() << "no throw";
  } catch (const fp::PoolError& e) {
    EXPECT_EQ(e.code(), fp::Errc::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("larger replica_bytes"), std::string::npos) << e.what();
  }
  EXPECT_NE(heap.alloc(kTiny - 64, 0), nullptr);  // exactly one region's units
  // A bucket array larger than the requested region: region 0 is sized for it.
  auto m = fm::HashMap<Dram>::create(*pool, "m", 1, 8192, kTiny);  // 128 KiB of buckets
  EXPECT_GE(m->heap().replica_bytes(), 8192u * 16 + 64);
  m->put(1, 2, 0);
  EXPECT_EQ(m->get(1, 0), 2);
}

// ------------------------------------------------------------ damaged chains
namespace {

enum class Damage { kNextOutsidePool, kNextMisaligned, kBadMagic, kBadSize, kLoop };

void damaged_chain_is_refused(Damage d, const char* expect) {
  TempPool pool("mg-dmg", std::size_t{16} << 20);
  std::uint64_t region0 = 0;
  {
    auto m = fm::HashMap<Dram>::create(*pool, "m", 1, 16, kTiny);
    for (int k = 0; k < 4000; ++k) m->put(k, k, 0);
    ASSERT_GE(m->heap().regions(), 3u);
    region0 = m->heap().region();
  }
  auto* h0 = reinterpret_cast<fm::RegionHeader*>(region0);
  auto* h1 = reinterpret_cast<fm::RegionHeader*>(h0->next);
  ASSERT_EQ(h1->magic, fm::RegionHeader::kMagic);
  ASSERT_EQ(h1->index, 1u);
  switch (d) {
    case Damage::kNextOutsidePool: h1->next = reinterpret_cast<std::uint64_t>(pool->base()) + pool->size() + 4096; break;
    case Damage::kNextMisaligned: h1->next += 8; break;
    case Damage::kBadMagic: reinterpret_cast<fm::RegionHeader*>(h1->next)->magic ^= 1; break;
    case Damage::kBadSize: h1->bytes *= 2; break;
    case Damage::kLoop: h1->next = region0; break;
  }
  pool.reopen();
  const auto& rep = *pool->recovery_report();
  ASSERT_EQ(rep.failed_roots.size(), 1u);
  EXPECT_NE(rep.failed_roots[0].find("region chain"), std::string::npos) << rep.failed_roots[0];
  EXPECT_NE(rep.failed_roots[0].find(expect), std::string::npos) << rep.failed_roots[0];
  EXPECT_NE(rep.failed_roots[0].find("pool offset 0x"), std::string::npos) << rep.failed_roots[0];
  try {
    auto m = fm::HashMap<Dram>::attach(*pool, "m", 1);
    ADD_FAILURE() << "a damaged chain was attached";
  } catch (const fp::PoolError& e) {
    EXPECT_EQ(e.code(), fp::Errc::kCorrupt) << e.what();
  }
  // The Heap validates on its own too (a pool opened without the hook's
  // verdict, e.g. by a tool): the same refusal, no segfault.
  try {
    fm::Heap<Dram> heap(*pool, region0, kTiny, 1);
    ADD_FAILURE() << "a damaged chain was mapped";
  } catch (const fp::PoolError& e) {
    EXPECT_EQ(e.code(), fp::Errc::kCorrupt) << e.what();
    EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(MirrorGrowth, ANextPointerOutsideThePoolIsCorrupt) { damaged_chain_is_refused(Damage::kNextOutsidePool, "outside the pool"); }
TEST(MirrorGrowth, AMisalignedNextPointerIsCorrupt) { damaged_chain_is_refused(Damage::kNextMisaligned, "misaligned"); }
TEST(MirrorGrowth, ABadHeaderMagicIsCorrupt) { damaged_chain_is_refused(Damage::kBadMagic, "bad header magic"); }
TEST(MirrorGrowth, ABadRegionSizeIsCorrupt) { damaged_chain_is_refused(Damage::kBadSize, "bytes per replica"); }
TEST(MirrorGrowth, ALoopInTheChainIsCorrupt) { damaged_chain_is_refused(Damage::kLoop, "a loop"); }

}  // namespace mirror_growth_test
