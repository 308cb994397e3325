// A clean exit keeps everything (issue 39): every nbMontage structure syncs
// when it is destroyed (montage/epoch_sys.h, "What a user can count on").
//
// A forked child (a real process) creates a pool and a structure on
// /dev/shm with the default epoch options (the background advancer on),
// puts 1,000 keys (the queue: enqueues 1,000 values) without calling
// sync(), lets the structure and the pool be destroyed normally — either at
// the end of a scope or by exit(0) running the static destructors of the
// std::unique_ptrs that hold them — and exits with status 0. The parent
// reopens the pool (which recovers itself), attaches, and finds all 1,000,
// each with its value, in order for the queue.
//
// The control (AbandonedRunKeepsNothingUnsynced): the same child with
// epochs that advance only on sync, calling abandon() (what a crash does:
// no sync at destruction) — the parent finds none of the 1,000. So the
// check does see a structure that drops its last epochs at exit.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/temp_pool.h"
#include "ferrite/montage/bst.h"
#include "ferrite/montage/hash_map.h"
#include "ferrite/montage/ms_queue.h"
#include "ferrite/montage/skiplist.h"
#include "ferrite/montage/split_ordered.h"
#include "ferrite/pmem/pool.h"

namespace montage_clean_exit_process_test {  // this file's names, apart in a unity build

namespace fm = ferrite::montage;
using ferrite::pmem::Pool;
using ferrite::test::TempPath;

namespace {

constexpr int kOps = 1000;
constexpr int kThreads = 2;

std::int64_t key_of(int i) { return static_cast<std::int64_t>(i) * 7919 + 1; }
std::int64_t value_of(int i) { return static_cast<std::int64_t>(i) * 3 - 500; }

// How the child lets go of its structure.
enum class End {
  kScope,     // unique_ptrs leave their scope, then exit(0)
  kAtExit,    // static unique_ptrs destroyed by exit(0)
  kAbandon,   // abandon() (a simulated crash), manual epochs, then exit(0)
};

template <class T>
struct Holder {
  std::unique_ptr<Pool> pool;
  std::unique_ptr<T> s;  // declared after the pool: destroyed first
};

template <class T>
constexpr bool kQueue = requires(T& t) { t.enqueue(0, std::int64_t{0}); };

// create/attach: the maps take their options before the epoch options,
// the queue has none.
template <class T>
std::unique_ptr<T> make(Pool& pool, const fm::EpochOptions& eo) {
  if constexpr (kQueue<T>) return T::create(pool, "s", kThreads, eo);
  else return T::create(pool, "s", kThreads, {}, eo);
}
template <class T>
std::unique_ptr<T> reattach(Pool& pool, const fm::EpochOptions& eo) {
  if constexpr (kQueue<T>) return T::attach(pool, "s", kThreads, eo);
  else return T::attach(pool, "s", kThreads, {}, eo);
}

template <class T>
void fill(T& s) {
  for (int i = 0; i < kOps; ++i) {
    if constexpr (kQueue<T>) s.enqueue(i % kThreads, value_of(i));
    else s.put(i % kThreads, key_of(i), value_of(i));
  }
}

// The child's body: never returns.
template <class T>
[[noreturn]] void child(const std::string& path, End end) {
  try {
    fm::EpochOptions eo;  // the defaults: a 10 ms background advancer
    if (end == End::kAbandon) eo.epoch_length = std::chrono::microseconds{0};
    if (end == End::kAtExit) {
      static Holder<T> h;  // destroyed by exit(0), s before pool
      h.pool = Pool::create(path, std::size_t{64} << 20);
      h.s = make<T>(*h.pool, eo);
      fill(*h.s);
    } else {
      auto pool = Pool::create(path, std::size_t{64} << 20);
      auto s = make<T>(*pool, eo);
      fill(*s);
      if (end == End::kAbandon) s->abandon();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child: %s\n", e.what());
    ::_exit(3);
  }
  std::exit(0);
}

// Runs the child, then reopens the pool and returns how many of the child's
// operations the structure kept (checking each one kept).
template <class T>
int run(End end) {
  TempPath path{"montage-exit"};
  const pid_t pid = ::fork();
  if (pid == 0) child<T>(path.path, end);
  EXPECT_GT(pid, 0);
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  auto pool = Pool::open(path.path);
  fm::EpochOptions eo;
  eo.epoch_length = std::chrono::microseconds{0};
  auto s = reattach<T>(*pool, eo);
  const auto c = s->contents();
  if constexpr (kQueue<T>) {
    for (std::size_t i = 0; i < c.size(); ++i) EXPECT_EQ(c[i], value_of(static_cast<int>(i))) << "position " << i;
  } else {
    std::vector<std::pair<std::int64_t, std::int64_t>> want;
    for (int i = 0; i < kOps; ++i) want.emplace_back(key_of(i), value_of(i));
    std::sort(want.begin(), want.end());
    if (c.size() == want.size()) {
      EXPECT_EQ(c, want);
    }
  }
  return static_cast<int>(c.size());
}

}  // namespace

template <class T>
class CleanExit : public ::testing::Test {};
using Structures = ::testing::Types<fm::MSQueue<>, fm::HashMap<>, fm::SplitOrderedMap<>, fm::Bst<>, fm::SkipList<>>;
TYPED_TEST_SUITE(CleanExit, Structures);

TYPED_TEST(CleanExit, DestroyingTheStructureAtTheEndOfAScopeKeepsEveryOperation) {
  EXPECT_EQ(run<TypeParam>(End::kScope), kOps);
}

TYPED_TEST(CleanExit, ExitZeroDestroyingStaticUniquePtrsKeepsEveryOperation) {
  EXPECT_EQ(run<TypeParam>(End::kAtExit), kOps);
}

TYPED_TEST(CleanExit, AnAbandonedRunKeepsNothingUnsynced) {
  EXPECT_EQ(run<TypeParam>(End::kAbandon), 0);
}

}  // namespace montage_clean_exit_process_test
