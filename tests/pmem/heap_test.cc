// The heap: size classes, consecutive addresses per thread, no write-back
// on the allocation path, runs, kFull, recovery by trace and by scan,
// concurrency with distinct thread ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <thread>
#include <unordered_set>

#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/pmem/layout.h"
#include "ferrite/pmem/pool.h"

namespace heap_test {  // this file's names, apart in a unity build

namespace {

using namespace ferrite::pmem;
using ferrite::test::TempPath;
namespace fps = ferrite::persist;

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kChunk = layout::kChunkSize;

// Up to 4096 block offsets, for recovery tests.
struct Table {
  static constexpr std::uint32_t kTypeTag = 0x7AB1E;
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "test::Table";
  std::uint64_t n = 0;
  std::uint64_t off[4096] = {};
};

TEST(PmemHeap, SizeClassesAndAlignment) {
  TempPath p;
  auto pool = Pool::create(p, 8 * kMiB);
  Heap& h = pool->heap();
  EXPECT_EQ(h.max_block(), kChunk);
  EXPECT_EQ(h.arenas(), 64);
  for (std::size_t n : {1, 15, 16, 17, 33, 64, 100, 129, 193, 1000, 5000, 40000, 65536}) {
    void* q = h.alloc(n, 1);
    const std::size_t bs = h.block_size(q);
    EXPECT_GE(bs, n);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(q) % std::min<std::size_t>(bs, 64), 0u) << n;
    EXPECT_TRUE(pool->contains(q, bs));
    EXPECT_EQ(h.block_size(static_cast<char*>(q) + bs - 1), bs);  // interior pointers too
    std::memset(q, 0xAB, n);
  }
  EXPECT_EQ(h.block_size(h.alloc(100, 2)), 128u);
  EXPECT_EQ(h.block_size(h.alloc(150, 2)), 192u);
  EXPECT_THROW(h.alloc(8, 64), PoolError);
  EXPECT_THROW(h.alloc(8, -1), PoolError);
  int x;
  EXPECT_THROW(h.free(&x, 0), PoolError);
  EXPECT_THROW(h.block_size(&x), PoolError);
}

TEST(PmemHeap, ConsecutiveAddressesPerThreadAndNoWriteBack) {
  TempPath p;
  auto pool = Pool::create(p, 8 * kMiB);
  Heap& h = pool->heap();
  fps::reset_counters();
  auto before = fps::thread_counters();
  char* first = static_cast<char*>(h.alloc(64, 0));
  auto after_first = fps::thread_counters();
  // Taking a fresh chunk writes back its map entry: one line, one psync.
  EXPECT_EQ((after_first - before)[fps::Verb::kPwb], 1u);
  EXPECT_EQ((after_first - before)[fps::Verb::kPsync], 1u);
  char* other = static_cast<char*>(h.alloc(64, 1));
  EXPECT_GE(std::abs(other - first), static_cast<std::ptrdiff_t>(kChunk));  // another chunk
  before = fps::thread_counters();
  std::vector<void*> v;
  for (std::size_t i = 1; i < kChunk / 64; ++i) {
    v.push_back(h.alloc(64, 0));
    EXPECT_EQ(static_cast<char*>(v.back()), first + 64 * i);
  }
  for (void* q : v) h.free(q, 0);
  for (int i = 0; i < 100; ++i) h.free(h.alloc(64, 0), 0);
  const auto d = fps::thread_counters() - before;
  for (int vb = 0; vb < fps::kVerbCount; ++vb)
    EXPECT_EQ(d.n[vb], 0u) << "alloc/free issued " << fps::verb_name(static_cast<fps::Verb>(vb));
  // Freed blocks are reused (LIFO).
  void* last = v.back();
  h.free(last, 0);
  EXPECT_EQ(h.alloc(64, 0), last);
}

TEST(PmemHeap, RunsOfChunks) {
  TempPath p;
  {
    auto pool = Pool::create(p, 8 * kMiB);
    Heap& h = pool->heap();
    const auto used0 = h.stats().chunks_used;
    void* big = h.alloc(200 * 1024, 3);
    EXPECT_EQ(h.block_size(big), 4 * kChunk);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(big) % kChunk, 0u);
    EXPECT_EQ(h.block_size(static_cast<char*>(big) + 3 * kChunk + 5), 4 * kChunk);
    EXPECT_EQ(h.stats().chunks_used, used0 + 4);
    std::memset(big, 1, 200 * 1024);
    h.free(big, 0);
    EXPECT_EQ(h.stats().chunks_used, used0);
    void* again = h.alloc(3 * kChunk, 2);
    EXPECT_EQ(again, big);  // first fit reuses the run
    auto* t = pool->create_root<Table>("t");
    t->off[0] = pool->offset_of(again);
    t->n = 1;
  }
  EXPECT_TRUE(check_pool(p).ok);
  auto pool = Pool::open(p);
  auto* t = pool->root<Table>("t");
  EXPECT_EQ(pool->heap().block_size(pool->at<char>(t->off[0])), 3 * kChunk);
  EXPECT_THROW(pool->heap().alloc(64 * kMiB, 0), PoolError);
}

TEST(PmemHeap, FullPool) {
  TempPath p;
  auto pool = Pool::create(p, 1 * kMiB);  // 15 chunks
  Heap& h = pool->heap();
  EXPECT_EQ(h.stats().chunks_total, 15u);
  int n = 0;
  try {
    for (;; ++n) h.alloc(40000, n % 4);
  } catch (const PoolError& e) {
    EXPECT_EQ(e.code(), Errc::kFull);
    EXPECT_NE(std::string(e.what()).find("heap full"), std::string::npos);
  }
  EXPECT_EQ(n, 15);
  EXPECT_EQ(h.stats().chunks_used, 15u);
  try {
    pool->create_root<Table>("t");
    ADD_FAILURE();
  } catch (const PoolError& e) {
    EXPECT_EQ(e.code(), Errc::kFull);
  }
}

// Writes n blocks of `size` (arena 0) recorded in a Table root; block i
// holds i in its first word.
void fill(Pool& pool, int n, std::size_t size) {
  auto* t = pool.create_root<Table>("t");
  for (int i = 0; i < n; ++i) {
    auto* b = static_cast<std::uint64_t*>(pool.heap().alloc(size, 0));
    b[0] = static_cast<std::uint64_t>(i);
    b[1] = 0xB10C;
    fps::pwb(b, 16);
    t->off[i] = pool.offset_of(b);
  }
  t->n = static_cast<std::uint64_t>(n);
  fps::persist_range(t, sizeof *t);
}

void check_reuse(Pool& pool, int n, std::size_t size, const std::set<std::uint64_t>& live) {
  auto* t = pool.root<Table>("t");
  const std::set<std::uint64_t> root_off = {pool.offset_of(t)};
  std::set<std::uint64_t> got;
  std::size_t fresh = 0;
  // Allocate as many as were freed: every one must be a freed block.
  const std::size_t freed = static_cast<std::size_t>(n) - live.size();
  // One thread: recovered chunks go to arenas a chunk at a time.
  for (std::size_t k = 0; k < freed + 10; ++k) {
    auto off = pool.offset_of(pool.heap().alloc(size, 0));
    EXPECT_FALSE(live.count(off)) << "a live block was handed out";
    EXPECT_FALSE(root_off.count(off)) << "the root object was handed out";
    EXPECT_TRUE(got.insert(off).second) << "handed out twice";
    bool was_old = false;
    for (int i = 0; i < n; ++i) was_old |= t->off[i] == off;
    fresh += was_old ? 0 : 1;
  }
  EXPECT_LE(fresh, 10u) << "freed blocks were not reused";
  for (int i = 0; i < n; ++i) {
    if (live.count(t->off[i])) {
      EXPECT_EQ(*pool.at<std::uint64_t>(t->off[i]), static_cast<std::uint64_t>(i));
    }
  }
}

TEST(PmemHeap, RecoverByTrace) {
  TempPath p;
  const int n = 3072;  // 3 full chunks of 64-byte blocks
  std::size_t used_before;
  {
    auto pool = Pool::create(p, 8 * kMiB);
    fill(*pool, n, 48);
    used_before = pool->heap().stats().chunks_used;
  }
  auto pool = Pool::open(p, {.recover = false});
  Heap& h = pool->heap();
  EXPECT_FALSE(h.recovered());
  EXPECT_EQ(h.stats().chunks_used, used_before);
  // Before recovery every block of every assigned chunk is allocated.
  EXPECT_GE(h.stats().blocks_live, static_cast<std::size_t>(n));
  void* pre = h.alloc(48, 5);  // comes from a fresh chunk
  auto* t = pool->root<Table>("t");
  for (int i = 0; i < n; ++i) EXPECT_NE(pool->offset_of(pre), t->off[i]);
  h.free(pre, 5);
  std::set<std::uint64_t> live;
  for (int i = 0; i < n; ++i)
    if (i % 3 == 0 || i >= 2100) live.insert(t->off[i]);  // the others die
  h.recover_by_trace([&](const std::function<void(void*)>& mark) {
    for (auto off : live) mark(pool->at<char>(off) + 5);  // interior pointers count
    mark(nullptr);
    int outside;
    mark(&outside);
  });
  EXPECT_TRUE(h.recovered());
  EXPECT_EQ(h.stats().blocks_live, live.size() + 1 /* root */);
  check_reuse(*pool, n, 48, live);
}

TEST(PmemHeap, RecoverByScanFreesEmptyChunks) {
  TempPath p;
  const int n = 4096;
  {
    auto pool = Pool::create(p, 8 * kMiB);
    fill(*pool, n, 64);  // 1024 per chunk: 4 chunks (+1 root chunk)
  }
  auto pool = Pool::open(p, {.recover = false});
  Heap& h = pool->heap();
  const auto used = h.stats().chunks_used;
  auto* t = pool->root<Table>("t");
  const std::uint64_t keep = t->off[100];  // only one record survives
  std::size_t asked = 0;
  h.recover_by_scan([&](void* b, std::size_t sz) {
    ++asked;
    EXPECT_NE(b, static_cast<void*>(t)) << "roots are not asked about";
    EXPECT_GT(sz, 0u);
    return pool->offset_of(b) == keep;
  });
  EXPECT_GE(asked, static_cast<std::size_t>(n));
  EXPECT_EQ(h.stats().chunks_used, used - 3);  // 3 record chunks had nothing live
  EXPECT_EQ(h.stats().blocks_live, 2u);
  EXPECT_TRUE(check_pool(p).ok);
  check_reuse(*pool, n, 64, {keep});
  h.recover_by_scan([](void*, std::size_t) { return false; });  // second call: no-op
  EXPECT_EQ(*pool->at<std::uint64_t>(keep), 100u);
}

TEST(PmemHeap, RecoveryKeepsRootsAndRunsSurviveReopen) {
  TempPath p;
  std::uint64_t big_off;
  {
    auto pool = Pool::create(p, 8 * kMiB);
    auto* t = pool->create_root<Table>("t");
    void* big = pool->heap().alloc(300 * 1024, 0);
    big_off = pool->offset_of(big);
    t->off[0] = big_off;
    pool->heap().alloc(300 * 1024, 0);  // dies
  }
  auto pool = Pool::open(p, {.recover = false});
  const auto used = pool->heap().stats().chunks_used;
  pool->heap().recover_by_trace([&](auto& mark) { mark(pool->at<char>(big_off)); });
  EXPECT_EQ(pool->heap().stats().chunks_used, used - 5);
  EXPECT_EQ(pool->heap().block_size(pool->at<char>(big_off)), 5 * kChunk);
  // Fill the heap: neither the root nor the live run is handed out.
  auto* t = pool->root<Table>("t");
  std::uint64_t tag = 0x1234;
  t->n = tag;
  try {
    for (int i = 0;; ++i) {
      char* q = static_cast<char*>(pool->heap().alloc(1000, i % 4));
      EXPECT_FALSE(q >= pool->at<char>(big_off) && q < pool->at<char>(big_off) + 5 * kChunk);
      std::memset(q, 0xFF, 1000);
    }
  } catch (const PoolError& e) {
    EXPECT_EQ(e.code(), Errc::kFull);
  }
  EXPECT_EQ(t->n, tag);
  EXPECT_EQ(t->off[0], big_off);
}

TEST(PmemHeap, ConcurrentDistinctThreadIds) {
  TempPath p;
  auto pool = Pool::create(p, 32 * kMiB);
  Heap& h = pool->heap();
  const int threads = 4;
  const int rounds = ferrite::test::scaled(20000, 500);
  std::vector<std::thread> ts;
  std::atomic<int> bad{0};
  std::vector<std::vector<void*>> held(threads);
  for (int tid = 0; tid < threads; ++tid) {
    ts.emplace_back([&, tid] {
      std::uint64_t x = 88172645463325252ull + static_cast<std::uint64_t>(tid);
      auto& mine = held[static_cast<std::size_t>(tid)];
      for (int r = 0; r < rounds; ++r) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        if (mine.size() < 200 && (x % 3 != 0 || mine.empty())) {
          const std::size_t n = 16 + x % 500;
          auto* q = static_cast<std::uint8_t*>(h.alloc(n, tid));
          std::memset(q, tid + 1, n);
          mine.push_back(q);
        } else {
          const std::size_t k = x % mine.size();
          auto* q = static_cast<std::uint8_t*>(mine[k]);
          if (q[0] != tid + 1) bad.fetch_add(1);  // someone else got our block
          mine[k] = mine.back();
          mine.pop_back();
          h.free(q, tid);
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
  std::unordered_set<void*> all;
  std::size_t n = 0;
  for (int tid = 0; tid < threads; ++tid)
    for (void* q : held[static_cast<std::size_t>(tid)]) {
      ++n;
      EXPECT_TRUE(all.insert(q).second);
      EXPECT_EQ(*static_cast<std::uint8_t*>(q), tid + 1);
    }
  EXPECT_EQ(h.stats().blocks_live, n);
}

TEST(PmemHeap, CrossThreadFreeMovesTheBlock) {
  TempPath p;
  auto pool = Pool::create(p, 4 * kMiB);
  Heap& h = pool->heap();
  void* q = h.alloc(32, 0);
  h.free(q, 7);
  EXPECT_EQ(h.alloc(32, 7), q);
  EXPECT_NE(h.alloc(32, 0), q);
}

}  // namespace

namespace {
using namespace ferrite::pmem;
TEST(PmemHeap, FreeBeforeRecoveryIsDeferred) {
  ferrite::test::TempPath p;
  std::vector<std::uint64_t> offs;
  {
    auto pool = Pool::create(p, 4 << 20);
    for (int i = 0; i < 4; ++i) offs.push_back(pool->offset_of(pool->heap().alloc(64, 0)));
  }
  auto pool = Pool::open(p, {.recover = false});
  Heap& h = pool->heap();
  h.free(pool->at<void>(offs[0]), 0);  // deferred: not handed out before recovery
  for (int i = 0; i < 2000; ++i)
    for (auto off : offs) ASSERT_NE(pool->offset_of(h.alloc(64, 1)), off);
  // Recovery: offs[1] stays live, the rest (including the early free) is free.
  h.recover_by_trace([&](auto& mark) { mark(pool->at<void>(offs[1])); });
  std::set<std::uint64_t> got;
  for (int i = 0; i < 1100; ++i) got.insert(pool->offset_of(h.alloc(64, 2)));
  EXPECT_TRUE(got.count(offs[0]));
  EXPECT_TRUE(got.count(offs[2]));
  EXPECT_FALSE(got.count(offs[1]));
}
}  // namespace

}  // namespace heap_test
