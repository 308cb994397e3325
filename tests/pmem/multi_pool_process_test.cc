// Several pools in one process (docs/pool-format.md "Several pools in one
// process"): three pools, each made by a process of its own with default
// options — where every process used to pick the same first free base —
// holding a combining queue, a Mirror hash map and an nbMontage hash map;
// then one process opens all three together, checks them, adds to each and
// is SIGKILLed; a restarted process opens all three again and finds every
// element of both runs.
//
// Children are this test binary re-executed (tests/common/process.h),
// running only PmemMultiPoolChild.Entry, which dispatches on
// FERRITE_MULTIPOOL_ROLE. The only wait is for the child's "ready" byte.
#include <signal.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>
#include <set>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/temp_pool.h"
#include "ferrite/combining/pb_queue.h"
#include "ferrite/mirror/hash_map.h"
#include "ferrite/montage/hash_map.h"
#include "ferrite/pmem/pool.h"

namespace multi_pool_process_test {  // this file's names, apart in a unity build

namespace {

using namespace ferrite::pmem;
namespace fc = ferrite::combining;
namespace fmi = ferrite::mirror;
namespace fmo = ferrite::montage;

constexpr std::size_t kPoolSize = std::size_t{32} << 20;
constexpr int kPools = 3;
constexpr int kFirst = 100;   // elements per structure written by the creating process
constexpr int kSecond = 50;   // elements added by the process that opens all three
constexpr std::size_t kMirrorRegion = std::size_t{4} << 20;

// Pool i's j-th element: distinct across pools, so a pool mapped over
// another's file (or a structure attached to the wrong pool) shows.
std::int64_t value_of(int pool, int j) { return std::int64_t{pool} * 1'000'000 + j; }

// Writes elements [from, to) of pool i into its three structures; the
// montage map is synced (its epochs are buffered) before returning.
void add(Pool& pool, int i, int from, int to, bool create) {
  auto q = create ? fc::PBQueue<>::create(pool, "jobs", 2) : fc::PBQueue<>::attach(pool, "jobs", 2);
  auto mi = create ? fmi::HashMap<>::create(pool, "mirror", 2, 64, kMirrorRegion) : fmi::HashMap<>::attach(pool, "mirror", 2);
  auto mo = create ? fmo::HashMap<>::create(pool, "montage", 2) : fmo::HashMap<>::attach(pool, "montage", 2);
  for (int j = from; j < to; ++j) {
    q->enqueue(0, value_of(i, j));
    mi->put(j, value_of(i, j), 0);
    mo->put(0, j, value_of(i, j));
  }
  mo->sync();
}

// Checks that pool i holds exactly elements [0, n) — the queue in order —
// and leaves the queue as it found it (dequeued elements are enqueued
// again, in order). Returns "" or what is wrong.
std::string verify(Pool& pool, int i, int n) {
  auto q = fc::PBQueue<>::attach(pool, "jobs", 2);
  auto mi = fmi::HashMap<>::attach(pool, "mirror", 2);
  auto mo = fmo::HashMap<>::attach(pool, "montage", 2);
  const std::string at = "pool " + std::to_string(i) + ": ";
  std::vector<std::int64_t> got;
  while (auto v = q->dequeue(0)) got.push_back(*v);
  for (auto v : got) q->enqueue(0, v);
  if (got.size() != static_cast<std::size_t>(n)) return at + "queue holds " + std::to_string(got.size()) + " elements";
  for (int j = 0; j < n; ++j) {
    if (got[static_cast<std::size_t>(j)] != value_of(i, j)) return at + "queue element " + std::to_string(j) + " is wrong";
    if (mi->get(j, 0) != value_of(i, j)) return at + "mirror map key " + std::to_string(j) + " is wrong";
    if (mo->get(0, j) != value_of(i, j)) return at + "montage map key " + std::to_string(j) + " is wrong";
  }
  if (mi->get(n, 0).has_value() || mo->get(0, n).has_value()) return at + "a map holds a key never put";
  mo->sync();
  return "";
}

std::vector<std::string> paths_from_env() {
  std::vector<std::string> v;
  for (int i = 0; i < kPools; ++i) v.push_back(std::getenv(("FERRITE_MULTIPOOL_" + std::to_string(i)).c_str()));
  return v;
}

}  // namespace

// The child processes.
TEST(PmemMultiPoolChild, Entry) {
  const char* role = std::getenv("FERRITE_MULTIPOOL_ROLE");
  if (role == nullptr) GTEST_SKIP() << "child-process entry point; runs only when re-executed";
  const std::string r = role;
  const auto paths = paths_from_env();
  if (r == "create") {
    // One pool, default options, in a process of its own.
    const int i = std::atoi(std::getenv("FERRITE_MULTIPOOL_INDEX"));
    auto pool = Pool::create(paths[static_cast<std::size_t>(i)], kPoolSize);
    add(*pool, i, 0, kFirst, true);
    std::_Exit(0);
  }
  // All three at once.
  std::vector<std::unique_ptr<Pool>> pools;
  for (const auto& p : paths) {
    try {
      pools.push_back(Pool::open(p));
    } catch (const PoolError& e) {
      std::fprintf(stderr, "multi-pool child: %s\n", e.what());
      std::_Exit(3);
    }
  }
  const int n = r == "open-add" ? kFirst : kFirst + kSecond;
  for (int i = 0; i < kPools; ++i) {
    if (auto why = verify(*pools[static_cast<std::size_t>(i)], i, n); !why.empty()) {
      std::fprintf(stderr, "multi-pool child (%s): %s\n", role, why.c_str());
      std::_Exit(4);
    }
  }
  if (r == "verify") std::_Exit(0);
  for (int i = 0; i < kPools; ++i) add(*pools[static_cast<std::size_t>(i)], i, kFirst, kFirst + kSecond, false);
  const int fd = std::atoi(std::getenv("FERRITE_MULTIPOOL_READY_FD"));
  const char b = 'R';
  if (::write(fd, &b, 1) != 1) std::_Exit(5);
  for (;;) ::pause();  // until the parent's SIGKILL
}

namespace {

int wait_exit(pid_t pid) {
  int st = 0;
  if (::waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

}  // namespace

TEST(PmemMultiPool, ThreePoolsMadeByThreeProcessesOpenTogetherAndSurviveAKill) {
  std::deque<ferrite::test::TempPath> tmp;  // not movable: a deque never relocates
  for (int i = 0; i < kPools; ++i) tmp.emplace_back("multipool" + std::to_string(i));
  std::vector<std::string> env;
  for (int i = 0; i < kPools; ++i) env.push_back("FERRITE_MULTIPOOL_" + std::to_string(i) + "=" + tmp[static_cast<std::size_t>(i)].path);
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), env.begin(), env.end());
    return extra;
  };
  for (int i = 0; i < kPools; ++i) {
    const pid_t pid = ferrite::test::spawn_self(
        "PmemMultiPoolChild.Entry", with({"FERRITE_MULTIPOOL_ROLE=create", "FERRITE_MULTIPOOL_INDEX=" + std::to_string(i)}));
    ASSERT_EQ(wait_exit(pid), 0) << "creating pool " << i;
  }
  std::set<std::uint64_t> bases;
  for (const auto& t : tmp) {
    const CheckReport r = check_pool(t.path);
    ASSERT_TRUE(r.ok) << r.message;
    bases.insert(r.base);
  }
  ASSERT_EQ(bases.size(), static_cast<std::size_t>(kPools)) << "three processes chose overlapping bases";

  int fds[2];
  ASSERT_TRUE(ferrite::test::child_pipe(fds, 1));
  const pid_t adder = ferrite::test::spawn_self(
      "PmemMultiPoolChild.Entry", with({"FERRITE_MULTIPOOL_ROLE=open-add", "FERRITE_MULTIPOOL_READY_FD=" + std::to_string(fds[1])}));
  ::close(fds[1]);
  char b = 0;
  const bool ready = ::read(fds[0], &b, 1) == 1;
  ::close(fds[0]);
  ::kill(adder, SIGKILL);
  const int adder_status = wait_exit(adder);
  ASSERT_TRUE(ready) << "the process opening all three pools failed (exit " << adder_status << ")";
  ASSERT_EQ(adder_status, 128 + SIGKILL);

  const pid_t verifier = ferrite::test::spawn_self("PmemMultiPoolChild.Entry", with({"FERRITE_MULTIPOOL_ROLE=verify"}));
  EXPECT_EQ(wait_exit(verifier), 0) << "a restarted process did not find all three pools intact";
}

TEST(PmemMultiPool, FirstFreePlacementGivesProcessesTheSameBase) {
  // The deterministic placement the crash simulator uses: two processes (here
  // two creates in turn, each pool closed before the next) get one base — the
  // clash random placement exists to avoid.
  ferrite::test::TempPath a("ff-a"), b("ff-b");
  PoolOptions o;
  o.placement = BasePlacement::kFirstFree;
  std::uint64_t ba = 0, bb = 0;
  {
    auto p = Pool::create(a.path, kPoolSize, o);
    ba = reinterpret_cast<std::uint64_t>(p->base());
  }
  {
    auto p = Pool::create(b.path, kPoolSize, o);
    bb = reinterpret_cast<std::uint64_t>(p->base());
  }
  EXPECT_EQ(ba, bb);
  EXPECT_EQ(ba, kDefaultBaseStart);
  auto pa = Pool::open(a.path);
  try {
    auto pb = Pool::open(b.path);
    ADD_FAILURE() << "two pools at one base opened together";
  } catch (const PoolError& e) {
    EXPECT_EQ(e.code(), Errc::kBaseUnavailable);
    EXPECT_NE(std::string(e.what()).find("is taken in this process"), std::string::npos) << e.what();
  }
}

TEST(PmemMultiPool, RandomPlacementIsAlignedInsideThePlanAndLeavesTheReplicaFree) {
  std::set<std::uint64_t> seen;
  std::vector<std::unique_ptr<Pool>> open;
  std::deque<ferrite::test::TempPath> tmp;  // not movable: a deque never relocates
  for (int i = 0; i < 8; ++i) tmp.emplace_back("rp" + std::to_string(i));
  for (int i = 0; i < 8; ++i) {
    open.push_back(Pool::create(tmp[static_cast<std::size_t>(i)].path, kPoolSize));
    const auto b = reinterpret_cast<std::uint64_t>(open.back()->base());
    EXPECT_EQ(b % kPlacementAlign, 0u);
    ASSERT_GE(b, kDefaultBaseStart);
    const std::uint64_t in_stride = (b - kDefaultBaseStart) % kBaseStride;
    EXPECT_LE(in_stride + kPoolSize, kBaseStride / 2) << "a pool in the replicas' half of its stride";
    EXPECT_LT(b, kDefaultBaseStart + kBaseSlots * kBaseStride);
    seen.insert(b);
    EXPECT_NO_THROW(open.back()->map_volatile_replica());
  }
  EXPECT_EQ(seen.size(), 8u) << "one process's pools must never share a base";
}

}  // namespace multi_pool_process_test
