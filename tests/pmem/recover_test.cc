// Pool-level recovery (Pool::recover, pmem/root_registry.h): one recovery
// for the whole pool from the registered roots' hooks; a root of an
// unregistered type or a failing hook keeps every block (a leak, never a
// loss); recovery runs once per Pool; open(recover = false) leaves the heap
// to the caller.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <string>

#include "common/temp_pool.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"

namespace recover_test {  // this file's names, apart in a unity build

namespace {

using namespace ferrite::pmem;
using ferrite::test::TempPath;

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr int kBlocks = 300;  // per root, 64 B each

// The root lists the offsets of the blocks its structure still uses
// (live[0..n)); other blocks the test allocates are garbage.
template <std::uint32_t kTag>
struct Listed {
  static constexpr std::uint32_t kTypeTag = kTag;
  static constexpr std::uint32_t kTypeVersion = 1;
  std::uint64_t n = 0;
  std::uint64_t live[kBlocks] = {};
};
struct Known : Listed<0x7E5A0001> {
  static constexpr const char* kTypeName = "test::Known";
};
struct Stranger : Listed<0x7E5A0002> {  // never registered
  static constexpr const char* kTypeName = "test::Stranger";
};
struct Broken : Listed<0x7E5A0003> {  // its hook throws
  static constexpr const char* kTypeName = "test::Broken";
};
struct Impostor {  // same tag and version as Known, another type
  static constexpr std::uint32_t kTypeTag = Known::kTypeTag;
  static constexpr std::uint32_t kTypeVersion = Known::kTypeVersion;
  static constexpr const char* kTypeName = "test::Impostor";
  std::uint64_t x = 0;
};

std::atomic<int> g_known_calls{0};

void recover_known(Pool& pool, Known* k, const std::function<void(void*)>& mark) {
  ++g_known_calls;
  for (std::uint64_t i = 0; i < k->n; ++i) mark(pool.at<void>(k->live[i]));
}
void recover_broken(Pool&, Broken*, const std::function<void(void*)>&) {
  throw std::runtime_error("corrupt structure");
}
const bool kKnownRegistered = register_root_type<Known>(&recover_known);
const bool kBrokenRegistered = register_root_type<Broken>(&recover_broken);

// Fills root `r` with kBlocks live blocks, and allocates as many garbage
// blocks in between (interleaved, same size class). Returns every offset.
template <class T>
std::set<std::uint64_t> fill(Pool& pool, T* r, int tid) {
  std::set<std::uint64_t> all;
  for (int i = 0; i < kBlocks; ++i) {
    const auto live = pool.offset_of(pool.heap().alloc(64, tid));
    const auto dead = pool.offset_of(pool.heap().alloc(64, tid));
    r->live[r->n++] = live;
    all.insert(live);
    all.insert(dead);
  }
  return all;
}
template <class T>
std::set<std::uint64_t> live_of(const T* r) {
  return std::set<std::uint64_t>(r->live, r->live + r->n);
}

// Allocates 64-byte blocks until `count` came back; returns their offsets.
std::set<std::uint64_t> take(Pool& pool, int count) {
  std::set<std::uint64_t> got;
  for (int i = 0; i < count; ++i) got.insert(pool.offset_of(pool.heap().alloc(64, 1)));
  return got;
}

TEST(PoolRecovery, RegisteredRootsRebuildTheHeapOnceFromTheUnionOfTheirMarks) {
  ASSERT_TRUE(kKnownRegistered);
  TempPath p;
  std::set<std::uint64_t> live, all;
  {
    auto pool = Pool::create(p, 8 * kMiB);
    auto* a = pool->create_root<Known>("a");
    auto* b = pool->create_root<Known>("b");
    all = fill(*pool, a, 0);
    for (auto o : fill(*pool, b, 2)) all.insert(o);
    live = live_of(a);
    for (auto o : live_of(b)) live.insert(o);
  }
  g_known_calls = 0;
  auto pool = Pool::open(p);
  const RecoveryReport* rep = pool->recovery_report();
  ASSERT_NE(rep, nullptr);
  EXPECT_EQ(rep->roots, 2u);
  EXPECT_EQ(rep->roots_traced, 2u);
  EXPECT_TRUE(rep->unknown_roots.empty());
  EXPECT_TRUE(rep->failed_roots.empty());
  EXPECT_TRUE(rep->heap_rebuilt);
  EXPECT_EQ(g_known_calls.load(), 2);
  EXPECT_TRUE(pool->heap().recovered());
  // Live: both structures' marked blocks and the two root objects.
  EXPECT_EQ(pool->heap().stats().blocks_live, live.size() + 2);
  // The garbage comes back, the marked blocks of either root never do
  // (enough allocations to drain every recovered free list).
  const auto got = take(*pool, 4 * 1024);
  for (auto o : got) EXPECT_FALSE(live.count(o)) << "live block handed out again at " << o;
  std::size_t reused = 0;
  for (auto o : got) reused += all.count(o);
  EXPECT_EQ(reused, all.size() - live.size()) << "every garbage block is free again";
}

TEST(PoolRecovery, ARootOfAnUnregisteredTypeKeepsEveryBlockAllocated) {
  TempPath p;
  std::set<std::uint64_t> all;
  std::size_t blocks_before = 0;
  {
    auto pool = Pool::create(p, 8 * kMiB);
    auto* a = pool->create_root<Known>("known");
    auto* s = pool->create_root<Stranger>("stranger");
    all = fill(*pool, a, 0);
    for (auto o : fill(*pool, s, 2)) all.insert(o);
    blocks_before = pool->heap().stats().blocks_live;
  }
  g_known_calls = 0;
  auto pool = Pool::open(p);
  const RecoveryReport& rep = pool->recover();
  EXPECT_EQ(&rep, pool->recovery_report());
  EXPECT_EQ(rep.roots, 2u);
  EXPECT_EQ(rep.roots_traced, 1u);  // the known root's hook still ran (repairs)
  EXPECT_EQ(g_known_calls.load(), 1);
  ASSERT_EQ(rep.unknown_roots.size(), 1u);
  EXPECT_NE(rep.unknown_roots[0].find("stranger"), std::string::npos) << rep.unknown_roots[0];
  EXPECT_NE(rep.unknown_roots[0].find("test::Stranger"), std::string::npos) << rep.unknown_roots[0];
  EXPECT_NE(rep.unknown_roots[0].find("0x7e5a0002"), std::string::npos) << rep.unknown_roots[0];
  EXPECT_FALSE(rep.heap_rebuilt);
  EXPECT_FALSE(pool->heap().recovered());
  // Nothing freed: every block allocated before the restart stays allocated.
  EXPECT_GE(pool->heap().stats().blocks_live, blocks_before);
  for (auto o : take(*pool, 4 * kBlocks)) EXPECT_FALSE(all.count(o)) << "block freed at " << o;
  // Both roots are still there.
  EXPECT_EQ(pool->root<Stranger>("stranger")->n, static_cast<std::uint64_t>(kBlocks));
  EXPECT_EQ(pool->root<Known>("known")->n, static_cast<std::uint64_t>(kBlocks));
}

TEST(PoolRecovery, AFailingHookKeepsEveryBlockAllocated) {
  ASSERT_TRUE(kBrokenRegistered);
  TempPath p;
  std::set<std::uint64_t> all;
  {
    auto pool = Pool::create(p, 8 * kMiB);
    all = fill(*pool, pool->create_root<Known>("known"), 0);
    for (auto o : fill(*pool, pool->create_root<Broken>("broken"), 2)) all.insert(o);
  }
  auto pool = Pool::open(p);
  const RecoveryReport& rep = pool->recover();
  EXPECT_TRUE(rep.unknown_roots.empty());
  ASSERT_EQ(rep.failed_roots.size(), 1u);
  EXPECT_NE(rep.failed_roots[0].find("broken: corrupt structure"), std::string::npos) << rep.failed_roots[0];
  EXPECT_EQ(rep.roots_traced, 1u);
  EXPECT_FALSE(rep.heap_rebuilt);
  for (auto o : take(*pool, 4 * kBlocks)) EXPECT_FALSE(all.count(o)) << "block freed at " << o;
}

TEST(PoolRecovery, RecoveryRunsOncePerPoolAndASecondCallRepeatsTheReport) {
  TempPath p;
  {
    auto pool = Pool::create(p, 4 * kMiB);
    fill(*pool, pool->create_root<Known>("a"), 0);
  }
  g_known_calls = 0;
  auto pool = Pool::open(p);
  const RecoveryReport* first = pool->recovery_report();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(&pool->recover(), first);
  EXPECT_EQ(&pool->recover(), first);
  EXPECT_EQ(g_known_calls.load(), 1);
  EXPECT_TRUE(first->heap_rebuilt);
}

TEST(PoolRecovery, OpenWithoutRecoveryLeavesTheHeapToTheCaller) {
  TempPath p;
  std::set<std::uint64_t> live;
  {
    auto pool = Pool::create(p, 4 * kMiB);
    auto* a = pool->create_root<Known>("a");
    fill(*pool, a, 0);
    live = live_of(a);
  }
  g_known_calls = 0;
  auto pool = Pool::open(p, {.recover = false});
  EXPECT_EQ(pool->recovery_report(), nullptr);
  EXPECT_EQ(g_known_calls.load(), 0);
  EXPECT_FALSE(pool->heap().recovered());
  const RecoveryReport& rep = pool->recover();  // later, by hand
  EXPECT_TRUE(rep.heap_rebuilt);
  EXPECT_EQ(pool->heap().stats().blocks_live, live.size() + 1);
  // open_or_create opens (and recovers) an existing file too.
  pool.reset();
  pool = Pool::open_or_create(p, 4 * kMiB);
  ASSERT_NE(pool->recovery_report(), nullptr);
  EXPECT_TRUE(pool->recovery_report()->heap_rebuilt);
}

TEST(PoolRecovery, APoolCreatedByThisProcessHasNothingToRecover) {
  ferrite::test::TempPool tp("created", 4 * kMiB);
  fill(*tp, tp->create_root<Known>("a"), 0);
  g_known_calls = 0;
  const RecoveryReport& rep = tp->recover();
  EXPECT_EQ(rep.roots, 0u);
  EXPECT_FALSE(rep.heap_rebuilt);
  EXPECT_EQ(g_known_calls.load(), 0);
}

TEST(PoolRecovery, RegisteringARootTypeTwiceIsIdempotentAndAnImpostorIsRefused) {
  EXPECT_TRUE(register_root_type<Known>(&recover_known));
  EXPECT_TRUE(register_root_type<Known>(&recover_known));
  EXPECT_FALSE(register_root_type<Impostor>(+[](Pool&, Impostor*, const std::function<void(void*)>&) {}));
  RootTypeEntry e;
  ASSERT_TRUE(find_root_type(Known::kTypeTag, Known::kTypeVersion, &e));
  EXPECT_EQ(e.type_name, "test::Known");
  EXPECT_EQ(e.size, sizeof(Known));
  EXPECT_FALSE(find_root_type(Stranger::kTypeTag, Stranger::kTypeVersion, nullptr));
  std::size_t known = 0;
  for (const auto& t : registered_root_types()) known += t.tag == Known::kTypeTag ? 1 : 0;
  EXPECT_EQ(known, 1u);
}

}  // namespace

}  // namespace recover_test
