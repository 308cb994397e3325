// Unit tests of the crash simulator: pending write-backs, fences, psync,
// image enumeration (order, evictions, tearing), deduplication, write
// tracking (the dirty lines a capture finds). The models: model_test.cc.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "ferrite/crash/sim.h"
#include "common/sim_range.h"
#include "ferrite/persist/persist.h"

namespace sim_test {  // this file's names, apart in a unity build

namespace fc = ferrite::crash;
namespace fp = ferrite::persist;

namespace {

using ferrite::test::SimRange;

TEST(Sim, PwbIsPendingUntilPsync) {
  SimRange r;
  r.store(0, 7);
  fp::pwb(r.line(0));
  EXPECT_EQ(r.word(fc::sim::media_line(r.line(0))), 0u) << "pwb alone must not reach the media";
  auto pend = fc::sim::pending();
  ASSERT_EQ(pend.size(), 1u);
  EXPECT_EQ(pend[0].offset, 0u);
  EXPECT_EQ(r.word(pend[0].data), 7u);
  r.store(0, 8);  // a later store is not part of the pending copy
  fp::psync();
  EXPECT_EQ(r.word(fc::sim::media_line(r.line(0))), 7u) << "psync applies the copy taken at pwb time";
  EXPECT_TRUE(fc::sim::pending().empty());
  EXPECT_EQ(fc::sim::verbs(), 2u);
}

TEST(Sim, PfenceStartsANewEpochAndPsyncIsPerThread) {
  SimRange r;
  r.store(0, 1);
  fp::pwb(r.line(0));
  fp::pfence();
  r.store(1, 2);
  fp::pwb(r.line(1));
  auto pend = fc::sim::pending();
  ASSERT_EQ(pend.size(), 2u);
  EXPECT_EQ(pend[0].epoch + 1, pend[1].epoch);
  std::thread other([&] {
    r.store(2, 3);
    fp::pwb(r.line(2));
    fp::psync();  // applies only this thread's write-back
  });
  other.join();
  EXPECT_EQ(r.word(fc::sim::media_line(r.line(2))), 3u);
  EXPECT_EQ(r.word(fc::sim::media_line(r.line(0))), 0u);
  EXPECT_EQ(fc::sim::pending().size(), 2u);
}

// Per-line coherence: B writes back a stale copy of line 0 (value 1); A then
// stores 2, writes it back and psyncs. B's older copy must never land over
// A's durable one — not at B's psync, not in any crash image.
TEST(Sim, AnOlderCopyOfALineNeverLandsOverANewerDurableOne) {
  SimRange r;
  r.store(0, 1);
  std::thread b_pwb([&] { fp::pwb(r.line(0)); });  // B: copy of value 1, pending
  b_pwb.join();
  ASSERT_EQ(fc::sim::pending().size(), 1u);
  r.store(0, 2);
  fp::pwb(r.line(0));  // A: copy of value 2
  fp::psync();
  EXPECT_EQ(r.word(fc::sim::media_line(r.line(0))), 2u);
  EXPECT_TRUE(fc::sim::pending().empty()) << "B's stale copy must be dropped once a newer one is durable";
  auto cs = fc::sim::capture();
  for (int i = 0; i < 40; ++i)
    EXPECT_EQ(r.in_image(cs, fc::build_image(cs, i, 99), 0), 2u) << "image " << i;
  // A newer pending copy of another thread survives an older psync'd one.
  r.store(1, 5);
  fp::pwb(r.line(1));  // A: copy of 5 (older)
  r.store(1, 6);
  std::thread b2([&] { fp::pwb(r.line(1)); });  // B: copy of 6 (newer), pending
  b2.join();
  fp::psync();  // A's older copy lands
  EXPECT_EQ(r.word(fc::sim::media_line(r.line(1))), 5u);
  auto pend = fc::sim::pending();
  ASSERT_EQ(pend.size(), 1u) << "B's newer copy stays pending";
  EXPECT_EQ(r.word(pend[0].data), 6u);
}

TEST(Sim, VerbsOutsideThePoolAreCountedButNotModelled) {
  SimRange r;
  alignas(64) static char outside[64];
  fp::pwb(outside);
  fp::new_strand();
  EXPECT_TRUE(fc::sim::pending().empty());
  EXPECT_EQ(fc::sim::verbs(), 2u);
}

// A <- 1; pwb A; pfence; B <- 1; pwb B; C <- 1 (dirty, never written back).
// Every image must respect: B new => A new; C evicted => A new. Both the
// all-lost and all-persisted images appear, and the random ones cover the
// allowed combinations.
TEST(Sim, ImagesRespectFenceOrderAndEvictionOrder) {
  SimRange r;
  r.store(0, 1);
  fp::pwb(r.line(0));
  fp::pfence();
  r.store(1, 1);
  fp::pwb(r.line(1));
  r.store(2, 1);
  auto cs = fc::sim::capture();
  EXPECT_EQ(cs.lines.size(), 3u);
  EXPECT_EQ(cs.dirty_count(), 3u);
  EXPECT_EQ(cs.pending.size(), 2u);
  std::set<std::tuple<int, int, int>> seen;
  for (int i = 0; i < 400; ++i) {
    auto img = fc::build_image(cs, i, 42);
    const int a = static_cast<int>(r.in_image(cs, img, 0)), b = static_cast<int>(r.in_image(cs, img, 1)),
              c = static_cast<int>(r.in_image(cs, img, 2));
    ASSERT_TRUE(a == 0 || a == 1) << "tearing of a one-word line yields old or new only";
    if (b == 1) { EXPECT_EQ(a, 1) << "image " << i << " persisted B before A: " << img.how; }
    if (c == 1) { EXPECT_EQ(a, 1) << "image " << i << " evicted C before A persisted: " << img.how; }
    seen.insert({a, b, c});
  }
  EXPECT_TRUE(seen.count({0, 0, 0}));
  EXPECT_TRUE(seen.count({1, 1, 1}));
  EXPECT_TRUE(seen.count({1, 0, 0}));
  EXPECT_TRUE(seen.count({1, 1, 0}));
  EXPECT_TRUE(seen.count({1, 0, 1}));
  EXPECT_EQ(seen.size(), 5u);
}

TEST(Sim, ImagesAreDeterministicAndDeduplicable) {
  SimRange r;
  r.store(0, 5);
  fp::pwb(r.line(0));
  auto cs = fc::sim::capture();
  auto a = fc::build_image(cs, 7, 99), b = fc::build_image(cs, 7, 99);
  EXPECT_EQ(a.hash, b.hash);
  EXPECT_EQ(a.lines, b.lines);
  std::set<std::uint64_t> hashes;
  for (int i = 0; i < 100; ++i) hashes.insert(fc::build_image(cs, i, 99).hash);
  EXPECT_EQ(hashes.size(), 2u) << "one pending one-word line: exactly two distinct images";
  fp::psync();
  auto clean = fc::sim::capture();
  EXPECT_TRUE(clean.lines.empty());
  EXPECT_EQ(fc::build_image(clean, fc::kImageAllLost, 1).hash, fc::build_image(clean, fc::kImageAllPersisted, 1).hash);
}

TEST(Sim, TearingMixesWordsOnlyWhenEnabled) {
  SimRange r;
  for (int w = 0; w < 8; ++w) r.store(0, 100 + w, w);
  fp::pwb(r.line(0));
  auto cs = fc::sim::capture();
  bool torn = false;
  fc::ImageOptions tear, no_tear;
  no_tear.tearing = false;
  for (int i = 2; i < 300; ++i) {
    auto img = fc::build_image(cs, i, 5, tear);
    int fresh = 0;
    for (int w = 0; w < 8; ++w) fresh += r.in_image(cs, img, 0, w) != 0;
    if (fresh != 0 && fresh != 8) torn = true;
    auto whole = fc::build_image(cs, i, 5, no_tear);
    int f2 = 0;
    for (int w = 0; w < 8; ++w) f2 += r.in_image(cs, whole, 0, w) != 0;
    EXPECT_TRUE(f2 == 0 || f2 == 8);
  }
  EXPECT_TRUE(torn);
}

TEST(Sim, InstallImageWritesItsLines) {
  SimRange r;
  r.store(3, 9);
  auto cs = fc::sim::capture();
  auto lost = fc::build_image(cs, fc::kImageAllLost, 1);
  fc::install_image(cs, lost, r.base_);
  EXPECT_EQ(*reinterpret_cast<std::uint64_t*>(r.line(3)), 0u);
}

struct HookLog {
  std::vector<std::pair<std::uint64_t, fp::Verb>> calls;
  std::vector<std::size_t> pending_at;
};

TEST(Sim, CrashHookSeesEveryVerbBeforeItTakesEffect) {
  SimRange r;
  HookLog log;
  fc::sim::set_crash_hook(
      [](void* ctx, std::uint64_t k, fp::Verb v) {
        auto* l = static_cast<HookLog*>(ctx);
        l->calls.push_back({k, v});
        l->pending_at.push_back(fc::sim::capture_locked(k).pending.size());
      },
      &log);
  r.store(0, 1);
  fp::pwb(r.line(0));
  fp::pfence();
  fp::psync();
  fc::sim::crash_now();
  ASSERT_EQ(log.calls.size(), 4u);
  EXPECT_EQ(log.calls[0], std::make_pair(std::uint64_t{0}, fp::Verb::kPwb));
  EXPECT_EQ(log.calls[2], std::make_pair(std::uint64_t{2}, fp::Verb::kPsync));
  EXPECT_EQ(log.calls[3].first, 3u);
  EXPECT_EQ(log.pending_at, (std::vector<std::size_t>{0, 1, 1, 0}));
}

TEST(Sim, SettleMakesEverythingDurable) {
  SimRange r;
  r.store(0, 4);
  fp::pwb(r.line(0));
  r.store(1, 6);
  fc::sim::settle();
  EXPECT_EQ(fc::sim::verbs(), 0u);
  EXPECT_TRUE(fc::sim::pending().empty());
  EXPECT_EQ(r.word(fc::sim::media_line(r.line(1))), 6u);
  EXPECT_TRUE(fc::sim::capture().lines.empty());
}

// ------------------------------------------------------------ write tracking

// The dirty lines by brute force: every line of the range whose working
// contents differ from its media image.
std::vector<std::uint64_t> scan(SimRange& r) {
  std::vector<std::uint64_t> dirty;
  for (std::size_t off = 0; off < r.size_; off += 64) {
    const auto m = fc::sim::media_line(r.base_ + off);
    if (std::memcmp(m.data(), r.base_ + off, 64) != 0) dirty.push_back(off);
  }
  return dirty;
}

std::vector<std::uint64_t> dirty_of(const fc::CrashState& cs) {
  std::vector<std::uint64_t> v;
  for (std::size_t i = 0; i < cs.lines.size(); ++i)
    if (cs.dirty[i]) v.push_back(cs.lines[i]);
  return v;
}

// A store that is never written back must be found dirty, whenever it
// happens: right after attach, after settle, after captures re-protected
// its page, in a page that was hot before.
TEST(Sim, WriteTrackingFindsEveryStoreNeverWrittenBack) {
  SimRange r("abstract", 256 * 1024);
  EXPECT_TRUE(fc::sim::write_tracking()) << "this build/platform should track writes";
  r.store(100, 1);
  EXPECT_EQ(dirty_of(fc::sim::capture()), (std::vector<std::uint64_t>{6400}));
  fc::sim::settle();
  EXPECT_TRUE(fc::sim::capture().lines.empty());
  std::uint64_t x = 12345;
  for (int round = 0; round < 200; ++round) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const std::size_t line = (x >> 33) % (r.size_ / 64);
    r.store(line, x | 1, static_cast<int>((x >> 20) % 8));
    if (round % 3 == 0) {
      fp::pwb(r.line(line));
      if (round % 2 == 0) fp::psync();
    }
    // Many captures between stores: pages go back to write-protected.
    for (int c = 0; c < (round % 7 == 0 ? 40 : 1); ++c) {
      auto cs = fc::sim::capture();
      ASSERT_EQ(dirty_of(cs), scan(r)) << "round " << round;
    }
  }
}

// Other threads store while the main thread captures (and re-protects
// pages): once they are done, tracking agrees with a full scan.
TEST(Sim, WriteTrackingIsSoundWithConcurrentStores) {
  SimRange r("abstract", 128 * 1024);
  const std::size_t lines = r.size_ / 64;
  std::atomic<bool> stop{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < 3; ++t)
    ts.emplace_back([&, t] {
      std::uint64_t x = 99 + static_cast<std::uint64_t>(t);
      for (int i = 0; i < 20000 && !stop.load(); ++i) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        // Relaxed atomic stores: the capture thread compares concurrently.
        std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(r.line((x >> 33) % lines) + 8 * (t + 1)))
            .store(x, std::memory_order_relaxed);
        if (i % 64 == 0) fp::pwb(r.line((x >> 33) % lines));
        if (i % 256 == 0) fp::psync();
      }
    });
  for (int c = 0; c < 300; ++c) (void)fc::sim::capture();
  stop.store(true);
  for (auto& t : ts) t.join();
  EXPECT_EQ(dirty_of(fc::sim::capture()), scan(r));
  for (int c = 0; c < 40; ++c) (void)fc::sim::capture();
  r.store(5, 0xabc);
  EXPECT_EQ(dirty_of(fc::sim::capture()), scan(r));
}

// fork()ed children (crashed machines) inherit protected pages and the
// handler: a child may still write the working memory.
TEST(Sim, AForkedChildCanWriteProtectedPages) {
  SimRange r;
  fc::sim::settle();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    fc::sim::enter_child();
    r.store(3, 42);
    ::_exit(*reinterpret_cast<std::uint64_t*>(r.line(3)) == 42 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(fc::sim::capture().lines.empty()) << "the child's store is not the parent's";
}

// A fault outside the pool is not ours: it still kills the process.
TEST(SimDeathTest, FaultsOutsideThePoolStillCrash) {
  SimRange r;
  auto* ro = static_cast<volatile std::uint8_t*>(::mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  EXPECT_DEATH({ ro[0] = 1; }, "");
  ::munmap(const_cast<std::uint8_t*>(ro), 4096);
}

TEST(Sim, WithoutTrackingCaptureScans) {
  fc::sim::set_write_tracking(false);
  {
    SimRange r;
    EXPECT_FALSE(fc::sim::write_tracking());
    r.store(7, 1);
    EXPECT_EQ(dirty_of(fc::sim::capture()), (std::vector<std::uint64_t>{448}));
  }
  fc::sim::set_write_tracking(true);
}

}  // namespace

}  // namespace sim_test
