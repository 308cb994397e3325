// The Mirror structures as a user meets them (issue 39):
//   - reserved values: put(k, INT64_MIN) (kTombstone, the mark of an erased
//     key) throws std::invalid_argument naming the value and the reason, and
//     leaves the map as it was — every map (hash map, BST, skip list), both
//     placements; every other int64, INT64_MIN + 1 included, is a value
//     that survives a restart;
//   - pmem::Pool::open_or_create<T>(name, args...) with create's arguments
//     creates, and after the pool is reopened re-attaches, every structure
//     (list, hash map, BST, skip list);
//   - threads: attaching for fewer or more threads than at creation works
//     (Mirror has no per-thread persistent state);
//   - a full region says how large it is and what to do.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/temp_pool.h"
#include "ferrite/mirror/bst.h"
#include "ferrite/mirror/hash_map.h"
#include "ferrite/mirror/list.h"
#include "ferrite/mirror/skip_list.h"

namespace mirror_api_test {  // this file's names, apart in a unity build

namespace fm = ferrite::mirror;
using ferrite::test::TempPool;

namespace {

using Dram = fm::Config<fm::InDram>;
using Nvm = fm::Config<fm::InPool>;
constexpr std::size_t kBytes = std::size_t{1} << 20;

// pool.open_or_create<T>(name, <create's arguments>).
template <class T>
std::unique_ptr<T> open_or_create(ferrite::pmem::Pool& pool, int threads) {
  if constexpr (requires { T::create(pool, "s", threads, std::uint64_t{64}, kBytes); })
    return pool.open_or_create<T>("s", threads, std::uint64_t{64}, kBytes);
  else
    return pool.open_or_create<T>("s", threads, kBytes);
}

template <class T>
constexpr bool kMap = requires(T& t) { t.put(std::int64_t{0}, std::int64_t{0}, 0); };

std::int64_t value_of(int i) { return static_cast<std::int64_t>(i) * 11 - 300; }

template <class T>
void add(T& s, int i, int tid) {
  if constexpr (kMap<T>) s.put(i, value_of(i), tid);
  else s.insert(i, tid);
}
template <class T>
std::vector<std::pair<std::int64_t, std::int64_t>> expected(int n) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (int i = 0; i < n; ++i) out.emplace_back(i, kMap<T> ? value_of(i) : 0);
  return out;
}

}  // namespace

// ------------------------------------------------------------ reserved values

template <class T>
class MirrorReservedValue : public ::testing::Test {};
using Maps = ::testing::Types<fm::HashMap<Dram>, fm::HashMap<Nvm>, fm::Bst<Dram>, fm::Bst<Nvm>, fm::SkipList<Dram>,
                              fm::SkipList<Nvm>>;
TYPED_TEST_SUITE(MirrorReservedValue, Maps);

TYPED_TEST(MirrorReservedValue, PutOfInt64MinThrowsNamingTheValueAndLeavesTheMapUnchanged) {
  using T = TypeParam;
  TempPool pool{"mirror-api", std::size_t{32} << 20};
  constexpr std::int64_t kMin = INT64_MIN;
  {
    auto m = open_or_create<T>(*pool, 1);
    ASSERT_EQ(m->put(1, 10, 0), std::nullopt);
    ASSERT_EQ(m->put(2, kMin + 1, 0), std::nullopt);  // the second smallest is a value
    const auto before = m->items(true);
    for (const std::int64_t key : {std::int64_t{1}, std::int64_t{3}}) {  // present, absent
      try {
        m->put(key, kMin, 0);
        FAIL() << "put(" << key << ", INT64_MIN) must throw";
      } catch (const std::invalid_argument& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("-9223372036854775808"), std::string::npos) << msg;
        EXPECT_NE(msg.find("INT64_MIN"), std::string::npos) << msg;
        EXPECT_NE(msg.find("reserved"), std::string::npos) << msg;
        EXPECT_NE(msg.find("erase"), std::string::npos) << msg;  // the reason
      }
    }
    EXPECT_EQ(m->get(1, 0), 10);
    EXPECT_EQ(m->get(3, 0), std::nullopt);
    EXPECT_EQ(m->items(true), before);
    EXPECT_EQ(m->get(2, 0), kMin + 1);
    EXPECT_EQ(m->put(2, INT64_MAX, 0), kMin + 1);
    EXPECT_EQ(m->put(2, kMin + 1, 0), INT64_MAX);
    EXPECT_TRUE(m->replicas_equal());
  }
  pool.reopen();
  auto m = open_or_create<T>(*pool, 1);
  EXPECT_EQ(m->items(true), (std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 10}, {2, kMin + 1}}));
}

// ----------------------------------------------- open_or_create and threads

template <class T>
class MirrorOpenOrCreate : public ::testing::Test {};
using Structures = ::testing::Types<fm::List<Dram>, fm::List<Nvm>, fm::HashMap<Dram>, fm::HashMap<Nvm>, fm::Bst<Dram>,
                                    fm::Bst<Nvm>, fm::SkipList<Dram>, fm::SkipList<Nvm>>;
TYPED_TEST_SUITE(MirrorOpenOrCreate, Structures);

TYPED_TEST(MirrorOpenOrCreate, CreatesThenReattachesAfterTheReopenWithCreatesArguments) {
  using T = TypeParam;
  TempPool pool{"mirror-api", std::size_t{32} << 20};
  {
    auto s = open_or_create<T>(*pool, 2);
    EXPECT_TRUE(s->items(kMap<T>).empty());
    for (int i = 0; i < 100; ++i) add(*s, i, i % 2);
  }
  pool.reopen();
  ASSERT_TRUE(pool->has_root("s"));
  {
    auto s = open_or_create<T>(*pool, 2);  // attaches: the root's region, not a new one
    EXPECT_EQ(s->items(kMap<T>), expected<T>(100));
    EXPECT_EQ(s->heap().replica_bytes(), kBytes);
    for (int i = 100; i < 150; ++i) add(*s, i, i % 2);
  }
  pool.reopen();
  // The short form (create's defaults) attaches too.
  auto s = pool->open_or_create<T>("s", 1);
  EXPECT_EQ(s->items(kMap<T>), expected<T>(150));
}

TYPED_TEST(MirrorOpenOrCreate, AttachingForFewerOrMoreThreadsThanAtCreationWorks) {
  using T = TypeParam;
  TempPool pool{"mirror-api", std::size_t{32} << 20};
  {
    auto s = open_or_create<T>(*pool, 4);
    for (int i = 0; i < 40; ++i) add(*s, i, i % 4);
  }
  for (const int threads : {1, 8}) {
    SCOPED_TRACE(threads);
    pool.reopen();
    auto s = open_or_create<T>(*pool, threads);
    EXPECT_EQ(s->items(kMap<T>), expected<T>(40));
    for (int tid = 0; tid < threads; ++tid) add(*s, 5, tid);  // every tid works (an update of key 5)
    EXPECT_EQ(s->items(kMap<T>), expected<T>(40));
  }
}

// ------------------------------------------------------------- growth
// A region no longer fills up: the smallest one (64 KiB, 1,023 units) takes
// 2,000 nodes by chaining regions (mirror/heap.h, "Growth"); only a full
// pool refuses (tests/mirror/mirror_growth_test.cc).
TEST(MirrorRegionGrowth, ASmallRegionGrowsInsteadOfRefusing) {
  TempPool pool{"mirror-api", std::size_t{32} << 20};
  auto l = fm::List<Dram>::create(*pool, "l", 1, std::size_t{64} << 10);
  for (int i = 0; i < 2000; ++i) ASSERT_TRUE(l->insert(i, 0)) << i;
  EXPECT_GE(l->heap().regions(), 2u);
  for (int i = 0; i < 2000; ++i) EXPECT_TRUE(l->contains(i, 0)) << i;
}

}  // namespace mirror_api_test
