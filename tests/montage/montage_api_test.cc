// The nbMontage structures' lifecycle as a user meets it (issue 39):
//   - pmem::Pool::open_or_create<T>(name, args...) creates, and after the
//     pool is reopened re-attaches, every structure (queue, hash map,
//     split-ordered map, BST, skip list) with the same arguments;
//   - destruction syncs: a clean restart keeps every completed operation
//     (the process-level test is montage_clean_exit_process_test.cc);
//   - the thread count given at creation is a capacity: attaching for fewer
//     works, for more throws std::invalid_argument naming both numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/temp_pool.h"
#include "ferrite/montage/bst.h"
#include "ferrite/montage/epoch_sys.h"
#include "ferrite/montage/hash_map.h"
#include "ferrite/montage/ms_queue.h"
#include "ferrite/montage/skiplist.h"
#include "ferrite/montage/split_ordered.h"

namespace montage_api_test {  // this file's names, apart in a unity build

namespace fm = ferrite::montage;
using ferrite::test::TempPool;

namespace {

fm::EpochOptions manual() {
  fm::EpochOptions o;
  o.epoch_length = std::chrono::microseconds{0};
  return o;
}

template <class T>
constexpr bool kQueue = requires(T& t) { t.enqueue(0, std::int64_t{0}); };

// pool.open_or_create<T>(name, threads, [options,] epochs).
template <class T>
std::unique_ptr<T> open_or_create(ferrite::pmem::Pool& pool, int threads) {
  if constexpr (kQueue<T>) return pool.open_or_create<T>("s", threads, manual());
  else return pool.open_or_create<T>("s", threads, typename T::Options{}, manual());
}

std::int64_t key_of(int i) { return static_cast<std::int64_t>(i) * 31 - 400; }
std::int64_t value_of(int i) { return static_cast<std::int64_t>(i) * 5 + 1; }

template <class T>
void add(T& s, int tid, int i) {
  if constexpr (kQueue<T>) s.enqueue(tid, value_of(i));
  else s.put(tid, key_of(i), value_of(i));
}
// Checks that s holds exactly items [0, n).
template <class T>
void expect_items(T& s, int n) {
  const auto c = s.contents();
  ASSERT_EQ(c.size(), static_cast<std::size_t>(n));
  if constexpr (kQueue<T>) {
    for (int i = 0; i < n; ++i) EXPECT_EQ(c[static_cast<std::size_t>(i)], value_of(i));
  } else {
    std::vector<std::pair<std::int64_t, std::int64_t>> want;
    for (int i = 0; i < n; ++i) want.emplace_back(key_of(i), value_of(i));
    std::sort(want.begin(), want.end());
    EXPECT_EQ(c, want);
  }
}

}  // namespace

template <class T>
class MontageApi : public ::testing::Test {};
using Structures = ::testing::Types<fm::MSQueue<>, fm::HashMap<>, fm::SplitOrderedMap<>, fm::Bst<>, fm::SkipList<>>;
TYPED_TEST_SUITE(MontageApi, Structures);

TYPED_TEST(MontageApi, OpenOrCreateCreatesThenReattachesAfterTheReopenWithTheSameArguments) {
  using T = TypeParam;
  TempPool pool{"montage-api"};
  {
    auto s = open_or_create<T>(*pool, 2);
    expect_items(*s, 0);
    for (int i = 0; i < 100; ++i) add(*s, i % 2, i);
  }  // destruction syncs
  pool.reopen();
  ASSERT_TRUE(pool->has_root("s"));
  {
    auto s = open_or_create<T>(*pool, 2);  // attaches
    expect_items(*s, 100);
    for (int i = 100; i < 150; ++i) add(*s, i % 2, i);
  }
  pool.reopen();
  auto s = open_or_create<T>(*pool, 2);
  expect_items(*s, 150);
}

TYPED_TEST(MontageApi, DestructionSyncsEveryCompletedOperation) {
  using T = TypeParam;
  TempPool pool{"montage-api"};
  {
    auto s = open_or_create<T>(*pool, 1);
    for (int i = 0; i < 300; ++i) add(*s, 0, i);
    // No sync: with manual epochs nothing is durable yet but the
    // destructor's sync.
  }
  pool.reopen();
  auto s = open_or_create<T>(*pool, 1);
  expect_items(*s, 300);
}

TYPED_TEST(MontageApi, AttachingForFewerThreadsThanTheCapacityWorksAndForMoreThrowsNamingBoth) {
  using T = TypeParam;
  TempPool pool{"montage-api"};
  {
    auto s = open_or_create<T>(*pool, 4);
    for (int i = 0; i < 40; ++i) add(*s, i % 4, i);
  }
  pool.reopen();
  {
    auto s = open_or_create<T>(*pool, 2);  // fewer than created: fine
    expect_items(*s, 40);
    for (int i = 40; i < 60; ++i) add(*s, i % 2, i);
  }
  pool.reopen();
  try {
    (void)open_or_create<T>(*pool, 5);
    FAIL() << "attach above the capacity must throw";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("5 threads"), std::string::npos) << m;
    EXPECT_NE(m.find("at most 4"), std::string::npos) << m;
  }
  // The refusal changed nothing: the full capacity attaches and finds it all.
  pool.reopen();
  auto s = open_or_create<T>(*pool, 4);
  expect_items(*s, 60);
}

TEST(EpochSysLifecycle, ADestroyedSystemHasSyncedAndAnAbandonedOneHasNot) {
  TempPool pool{"montage-api"};
  struct Val {
    std::int64_t v;
  };
  fm::CASObj obj{0};
  {
    auto es = fm::EpochSys<>::create(*pool, "m", fm::Kind::kTest, 1, manual());
    es->pnew<Val>(0, Val{1});
    ASSERT_TRUE(es->lin_cas(0, obj, 0, 1));
  }  // syncs
  {
    pool.reopen();
    std::vector<fm::PBlk*> kept;
    auto es = fm::EpochSys<>::attach(*pool, pool->root<fm::MontageRoot>("m"), 1, &kept, manual());
    EXPECT_EQ(kept.size(), 1u);
    es->pnew<Val>(0, Val{2});
    fm::CASObj obj2{0};
    ASSERT_TRUE(es->lin_cas(0, obj2, 0, 1));
    es->abandon();  // a crash: the second payload is not old enough
  }
  pool.reopen();
  std::vector<fm::PBlk*> kept;
  auto es = fm::EpochSys<>::attach(*pool, pool->root<fm::MontageRoot>("m"), 1, &kept, manual());
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(fm::EpochSys<>::get<Val>(kept[0]).v, 1);
}

}  // namespace montage_api_test
