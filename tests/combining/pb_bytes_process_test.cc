// Real-process crash test of PBBytesQueue: a forked child runs a producer
// thread (enqueues jobs 0, 1, 2, ... of sizes 0 to 64 KiB, then records
// "acknowledged through j" durably) and a consumer thread (dequeues, checks
// the job is the next index and intact byte for byte, then records
// "consumed through k"). The parent SIGKILLs it at random moments; after
// every kill, the pool is opened (recovering itself through the queue's
// hook) and the queue must hold exactly the jobs acknowledged and not yet
// consumed — consecutive indices, byte for byte, in order — give or take the
// one operation whose acknowledgement the kill may have cut off at either
// end. The child then resumes from what the queue holds. At the end the
// queue is drained and the heap's live bytes are an empty queue's.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>

#include "ferrite/combining/pb_bytes_queue.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/root_registry.h"
#include "common/scale.h"
#include "common/temp_pool.h"

namespace pb_bytes_process_test {  // this file's names, apart in a unity build

namespace fc = ferrite::combining;
using ferrite::pmem::Pool;

namespace {

constexpr std::uint64_t kJobs = 3000;

struct Progress {
  static constexpr std::uint32_t kTypeTag = 0x50524f47;  // "PROG"
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "test::Progress";
  std::uint64_t enq_acked;  // jobs [0, enq_acked) were acknowledged
  std::uint64_t deq_acked;  // jobs [0, deq_acked) were consumed
};
const bool kProgressRegistered = ferrite::pmem::register_root_type<Progress>(
    +[](Pool&, Progress*, const std::function<void(void*)>&) {});

std::size_t job_size(std::uint64_t j) {
  if (j % 97 == 0) return 65536;
  if (j % 11 == 0) return 0;
  return static_cast<std::size_t>((j * 2654435761u) % 3000);
}
std::string job(std::uint64_t j) {
  std::string s(job_size(j), '\0');
  std::uint64_t x = (j + 1) * 0x9e3779b97f4a7c15ull;
  for (std::size_t k = 0; k < s.size(); ++k) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s[k] = static_cast<char>(x);
  }
  if (s.size() >= 8) std::memcpy(s.data(), &j, 8);
  return s;
}
// Which job are these bytes? (kJobs when none: damaged or foreign.)
std::uint64_t which(const std::string& b, std::uint64_t hint) {
  if (b.size() >= 8) {
    std::uint64_t j;
    std::memcpy(&j, b.data(), 8);
    return j < kJobs && job(j) == b ? j : kJobs;
  }
  return hint < kJobs && job(hint) == b ? hint : kJobs;  // short jobs: checked against the expected one
}

void persist_word(std::uint64_t* w, std::uint64_t v) {
  std::atomic_ref<std::uint64_t>(*w).store(v, std::memory_order_release);
  ferrite::persist::pwb(w);
  ferrite::persist::psync();
}

// The queue must be jobs [a, b), consecutive and intact, with a in
// {deq_acked, deq_acked + 1} and b in {enq_acked, enq_acked + 1}. Returns
// "" or what is wrong; sets a and b.
std::string check_queue(const fc::PBBytesQueue<>& q, const Progress& p, std::uint64_t& a, std::uint64_t& b) {
  const auto vals = q.values();  // throws on a damaged payload
  if (vals.empty()) {
    a = b = std::max(p.enq_acked, p.deq_acked);
    return p.enq_acked + 1 < p.deq_acked || p.deq_acked + 1 < p.enq_acked
               ? "empty queue, but acknowledged " + std::to_string(p.enq_acked) + " and consumed " +
                     std::to_string(p.deq_acked)
               : "";
  }
  a = which(vals.front(), p.deq_acked);
  if (a == kJobs) a = which(vals.front(), p.deq_acked + 1);
  if (a != p.deq_acked && a != p.deq_acked + 1)
    return "front job " + std::to_string(a) + ", consumed through " + std::to_string(p.deq_acked);
  for (std::size_t i = 0; i < vals.size(); ++i)
    if (which(vals[i], a + i) != a + i) return "job at position " + std::to_string(i) + " is not job " + std::to_string(a + i);
  b = a + vals.size();
  if (b != p.enq_acked && b != p.enq_acked + 1)
    return "queue ends at job " + std::to_string(b) + ", acknowledged through " + std::to_string(p.enq_acked);
  return "";
}

[[noreturn]] void child_main(const std::string& path) {
  try {
    ferrite::pmem::PoolOptions opts;
    ferrite::persist::parse_backend("emulated:2000", &opts.backend);
    auto pool = Pool::open(path, opts);
    auto q = fc::PBBytesQueue<>::attach(*pool, "q", 2);
    auto* p = pool->root<Progress>("progress");
    std::uint64_t a = 0, b = 0;
    if (auto why = check_queue(*q, *p, a, b); !why.empty()) throw std::runtime_error("at restart: " + why);
    persist_word(&p->enq_acked, b);
    persist_word(&p->deq_acked, a);
    std::atomic<bool> bad{false};
    std::thread prod([&] {
      for (std::uint64_t j = b; j < kJobs; ++j) {
        q->enqueue(0, job(j));
        persist_word(&p->enq_acked, j + 1);
      }
    });
    std::thread cons([&] {
      for (std::uint64_t k = a; k < kJobs && !bad;) {
        auto got = q->dequeue(1);
        if (!got) continue;
        if (which(*got, k) != k) {
          std::fprintf(stderr, "child: dequeued bytes are not job %llu\n", static_cast<unsigned long long>(k));
          bad = true;
          break;
        }
        persist_word(&p->deq_acked, ++k);
      }
    });
    prod.join();
    cons.join();
    ::_exit(bad ? 3 : 0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child: %s\n", e.what());
    ::_exit(2);
  }
}

}  // namespace

TEST(PBBytesProcess, AcknowledgedJobsSurviveRepeatedSigkillByteForByteInOrder) {
  const std::string path = ferrite::test::temp_pool_path("bproc");
  {
    auto pool = Pool::create(path, std::size_t{64} << 20);
    fc::PBBytesQueue<>::create(*pool, "q", 2);
    pool->create_root<Progress>("progress");
  }
  std::mt19937 rng(4242);
  const int max_kills = ferrite::test::scaled(40, 8);
  int kills = 0, runs = 0;
  for (;;) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) child_main(path);
    ++runs;
    int status = 0;
    if (kills < max_kills) {
      // Kill within 0.2-3.2 ms: the whole run takes tens of milliseconds on
      // a quiet machine, and at least five kills must land before it ends.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(200 + rng() % 3000);
      pid_t done = 0;
      while (done == 0 && std::chrono::steady_clock::now() < deadline) {
        done = ::waitpid(pid, &status, WNOHANG);
        if (done == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      if (done == 0) {
        ::kill(pid, SIGKILL);
        ASSERT_EQ(::waitpid(pid, &status, 0), pid);
      }
    } else {
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    }
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
      ++kills;
      // Check in the parent too (the child checks at its restart).
      auto pool = Pool::open(path);
      auto q = fc::PBBytesQueue<>::attach(*pool, "q", 2);
      std::uint64_t a = 0, b = 0;
      const auto why = check_queue(*q, *pool->root<Progress>("progress"), a, b);
      ASSERT_TRUE(why.empty()) << "after kill " << kills << ": " << why;
      continue;
    }
    ASSERT_TRUE(WIFEXITED(status)) << "child died of signal " << WTERMSIG(status);
    ASSERT_EQ(WEXITSTATUS(status), 0) << "child failed (see stderr)";
    break;
  }
  std::printf("[pb-bytes-process] %d runs, %d SIGKILLs\n", runs, kills);
  EXPECT_GE(kills, std::min(max_kills, 5)) << "the child finished too fast to be killed";
  {
    auto pool = Pool::open(path);
    auto q = fc::PBBytesQueue<>::attach(*pool, "q", 2);
    const auto* p = pool->root<Progress>("progress");
    EXPECT_EQ(p->enq_acked, kJobs);
    EXPECT_EQ(p->deq_acked, kJobs);
    EXPECT_TRUE(q->values().empty());
    EXPECT_LE(q->held_payloads(), 2u);
    (void)q->dequeue(0);
    (void)q->dequeue(1);
    EXPECT_EQ(q->held_payloads(), 0u);
  }
  // Drained: after a restart only the queue's records and dummy node are
  // live (no payload leaked), like a fresh queue's after one drained job.
  auto pool = Pool::open(path);
  const auto live = pool->heap().stats().blocks_live;
  const std::string ref_path = ferrite::test::temp_pool_path("bproc-ref");
  {
    auto ref = Pool::create(ref_path, std::size_t{64} << 20);
    auto q = fc::PBBytesQueue<>::create(*ref, "q", 2);
    ref->create_root<Progress>("progress");
    q->enqueue(0, "x");
    (void)q->dequeue(1);
    (void)q->dequeue(1);
  }
  const auto ref_live = Pool::open(ref_path)->heap().stats().blocks_live;
  EXPECT_EQ(live, ref_live) << "payload blocks leaked";
  ::unlink(ref_path.c_str());
  pool.reset();
  ::unlink(path.c_str());
}

}  // namespace pb_bytes_process_test
