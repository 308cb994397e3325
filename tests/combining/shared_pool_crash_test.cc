// Several durable structures in ONE pool: the pool recovers itself when it
// opens (pmem::Pool::recover through the root-type registry), attaching a
// structure never frees blocks, so no structure loses its nodes to another's
// recovery.
//  * a real process restart: a child process creates a PBQueue, a PWFStack
//    and a PBHeap in one pool file and fills them; the parent (which never
//    saw the child's memory) opens the pool, attaches all three, checks
//    their contents and the heap's live-block count exactly, runs more
//    operations on all three and checks again;
//  * crash images: a campaign on a PBQueue whose neighbours in the pool are
//    a PWFStack and a PBHeap with known contents; every recovered image
//    re-attaches all three, checks the neighbours, allocates (enqueues,
//    pushes, inserts) and checks again. The old per-structure heap recovery
//    (the queue's own trace on a pool that does not recover itself) is
//    caught: the queue's allocations reuse the stack's nodes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/combining/pb_heap.h"
#include "ferrite/combining/pb_queue.h"
#include "ferrite/combining/pwf_stack.h"
#include "ferrite/crash/campaign.h"
#include "ferrite/crash/subject.h"
#include "ferrite/pmem/pool.h"

namespace shared_pool_crash_test {  // this file's names, apart in a unity build

namespace fc = ferrite::combining;
namespace cr = ferrite::crash;
using ferrite::pmem::Pool;
using ferrite::test::scaled;
using ferrite::test::TempPath;

namespace {

constexpr int kThreads = 2;
constexpr int kHeapCapacity = 512;

std::string show(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size() && i < 12; ++i) s += (i ? " " : "") + std::to_string(v[i]);
  if (v.size() > 12) s += " ... (" + std::to_string(v.size()) + " values)";
  return s + "]";
}

void expect_equal(const std::vector<std::int64_t>& got, const std::vector<std::int64_t>& want, const char* what) {
  if (got != want)
    throw std::runtime_error(std::string(what) + ": got " + show(got) + ", want " + show(want));
}

// ------------------------------------------------------------ real restart

// What the three structures must hold. Runs the same deterministic
// operations as the structures (or alone, to predict them).
struct Model {
  std::deque<std::int64_t> queue;               // front .. back
  std::vector<std::int64_t> stack;              // bottom .. top
  std::multiset<std::int64_t> heap;
  std::uint64_t stack_seq[kThreads] = {0, 0};   // PWFStack: the caller keeps seq

  std::vector<std::int64_t> queue_values() const { return {queue.begin(), queue.end()}; }
  std::vector<std::int64_t> stack_values() const { return {stack.rbegin(), stack.rend()}; }  // top first
  std::vector<std::int64_t> heap_values() const { return {heap.begin(), heap.end()}; }
};

struct Three {
  std::unique_ptr<fc::PBQueue<>> q;
  std::unique_ptr<fc::PWFStack<>> s;
  std::unique_ptr<fc::PBHeap<>> h;
};

// Steps [begin, end) of the workload on `t` (null: the model only). Every
// queue/stack step allocates a node; every fourth step also removes one, so
// the structures' free lists hold garbage at a restart.
void workload(Three* t, Model& m, int begin, int end) {
  for (int i = begin; i < end; ++i) {
    const int tid = i % kThreads;
    const std::int64_t qv = 1'000'000 + i, sv = 2'000'000 + i, hv = 3'000'000 + (i * 7919) % 100'000;
    if (t) t->q->enqueue(tid, qv);
    m.queue.push_back(qv);
    if (t) t->s->push(tid, ++m.stack_seq[tid], sv);
    else ++m.stack_seq[tid];
    m.stack.push_back(sv);
    if (i % 4 == 3) {
      const std::int64_t want_q = m.queue.front();
      m.queue.pop_front();
      const std::int64_t want_s = m.stack.back();
      m.stack.pop_back();
      if (t) {
        const auto gq = t->q->dequeue(tid);
        if (gq != want_q) throw std::runtime_error("dequeue answered a wrong value at step " + std::to_string(i));
      }
      if (t) {
        const auto gs = t->s->pop(tid, ++m.stack_seq[tid]);
        if (gs != want_s) throw std::runtime_error("pop answered a wrong value at step " + std::to_string(i));
      } else {
        ++m.stack_seq[tid];
      }
    }
    if (i % 8 < 5 && m.heap.size() < static_cast<std::size_t>(kHeapCapacity)) {
      if (t && !t->h->insert(tid, hv)) throw std::runtime_error("PBHeap full at step " + std::to_string(i));
      m.heap.insert(hv);
    } else if (!m.heap.empty()) {
      const std::int64_t want = *m.heap.begin();
      m.heap.erase(m.heap.begin());
      if (t && t->h->delete_min(tid) != want)
        throw std::runtime_error("delete_min answered a wrong value at step " + std::to_string(i));
    }
  }
}

void check(Three& t, const Model& m) {
  expect_equal(t.q->values(), m.queue_values(), "PBQueue");
  expect_equal(t.s->contents(), m.stack_values(), "PWFStack");
  expect_equal(t.h->sorted(), m.heap_values(), "PBHeap");
  if (!t.h->heap_ordered()) throw std::runtime_error("PBHeap: not heap-ordered");
}

Three attach_all(Pool& pool) {
  Three t;
  t.q = pool.open_or_create<fc::PBQueue<>>("queue", kThreads);
  t.s = pool.open_or_create<fc::PWFStack<>>("stack", kThreads);
  t.h = pool.open_or_create<fc::PBHeap<>>("heap", kThreads, kHeapCapacity);
  return t;
}

TEST(SharedPool, ThreeStructuresShareOnePoolAcrossARealRestart) {
  TempPath path("shared");
  const int n1 = scaled(20'000, 2'000), n2 = scaled(8'000, 800);

  // The creating process: create and fill, then exit without closing.
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int rc = 0;
    try {
      auto pool = Pool::create(path.path, std::size_t{64} << 20);
      Three t = attach_all(*pool);  // creates all three
      Model m;
      workload(&t, m, 0, n1);
      check(t, m);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      rc = 2;
    }
    ::_exit(rc);  // no destructor: the pool is left as a killed process leaves it
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the creating process failed";

  // This process never saw the creator's memory: predict the contents.
  Model m;
  workload(nullptr, m, 0, n1);
  ASSERT_GT(m.queue.size(), 10'000u * n1 / 20'000);
  ASSERT_GT(m.stack.size(), 10'000u * n1 / 20'000);

  auto pool = Pool::open(path.path);  // recovers the whole pool
  const auto* rep = pool->recovery_report();
  ASSERT_NE(rep, nullptr);
  EXPECT_EQ(rep->roots, 3u);
  EXPECT_EQ(rep->roots_traced, 3u);
  EXPECT_TRUE(rep->unknown_roots.empty());
  EXPECT_TRUE(rep->failed_roots.empty());
  EXPECT_TRUE(rep->heap_rebuilt);
  // Live blocks = exactly what the three structures hold: 3 roots; the
  // queue's 4 StateRecs, its dummy (a former node: there were dequeues) and
  // one node per value; the stack's 2n+1 StateRecs and one node per value;
  // the heap's 2 StateRecs.
  const std::size_t expect_live = 3 + (4 + 1 + m.queue.size()) + (2 * kThreads + 1 + m.stack.size()) + 2;
  EXPECT_EQ(pool->heap().stats().blocks_live, expect_live);

  Three t = attach_all(*pool);  // attaches all three, frees nothing
  EXPECT_EQ(pool->heap().stats().blocks_live, expect_live);
  ASSERT_NO_THROW(check(t, m));
  // Allocations after recovery (recovered free blocks first) never reuse a
  // block another structure still holds: every content stays exact.
  ASSERT_NO_THROW(workload(&t, m, n1, n1 + n2));
  ASSERT_NO_THROW(check(t, m));

  // And once more through a clean restart in this process.
  t = Three{};
  pool.reset();
  pool = Pool::open(path.path);
  ASSERT_TRUE(pool->recovery_report()->heap_rebuilt);
  t = attach_all(*pool);
  ASSERT_NO_THROW(check(t, m));
  std::printf("[shared-pool] queue %zu, stack %zu, heap %zu values; %zu live blocks after recovery\n",
              m.queue.size(), m.stack.size(), m.heap.size(), expect_live);
}

// ------------------------------------------------------------ crash images

constexpr int kNeighbourValues = 40;  // pushed / inserted at create
constexpr int kExtra = 24;            // enqueued / pushed / inserted by each recovery

// A PBQueue under test, a PWFStack and a PBHeap next to it in the pool.
// observe() is the queue as recovered (before recovery's own operations).
class SharedQueueSubject : public cr::Subject {
 public:
  explicit SharedQueueSubject(bool old_heap_recovery) : old_(old_heap_recovery) {}

  cr::Spec spec() const override { return cr::Spec::kQueue; }
  bool detectable() const override { return false; }

  void create(Pool& pool, int threads) override {
    threads_ = threads;
    q_ = fc::PBQueue<>::create(pool, "queue", threads);
    s_ = fc::PWFStack<>::create(pool, "stack", threads);
    h_ = fc::PBHeap<>::create(pool, "heap", threads, 64);
    for (int i = 0; i < kNeighbourValues; ++i) {
      s_->push(0, static_cast<std::uint64_t>(i + 1), stack_value(i));
      if (!h_->insert(0, heap_value(i))) throw std::runtime_error("PBHeap full");
    }
    recovered_.reset();
  }

  cr::Response apply(int tid, std::uint64_t seq, const cr::Op& op) override {
    if (op.kind == cr::kEnqueue) {
      q_->enqueue(tid, seq, op.arg);
      return {};
    }
    const auto v = q_->dequeue(tid, seq);
    return v ? cr::Response{true, *v} : cr::Response{};
  }

  void recover(Pool& pool, int threads) override {
    // Handles of the crashed run point into the old mapping: drop, not free.
    (void)q_.release();
    (void)s_.release();
    (void)h_.release();
    q_ = fc::PBQueue<>::attach(pool, "queue", threads);
    s_ = fc::PWFStack<>::attach(pool, "stack", threads);
    h_ = fc::PBHeap<>::attach(pool, "heap", threads);
    if (old_) {
      // The behaviour this design replaced: the queue rebuilds the pool's
      // heap from its own trace alone (the pool was opened with
      // recover_pool = false), freeing its neighbours' blocks.
      pool.heap().recover_by_trace([&](const std::function<void(void*)>& mark) { q_->trace(mark); });
    }
    recovered_ = q_->values();
    check_neighbours(0);
    // Allocate from the recovered heap: queue nodes, stack nodes (both 16 B:
    // the size class the neighbours' nodes live in), heap inserts.
    // The stack is checked before the heap is used again: a heap whose
    // records were handed out to queue or stack nodes may crash the
    // restarted machine on its next insert, which would hide the message.
    for (int i = 0; i < kExtra; ++i) {
      q_->enqueue(0, (std::int64_t{7} << 40) + i);
      s_->push(0, static_cast<std::uint64_t>(kNeighbourValues + i + 1), stack_value(kNeighbourValues + i));
    }
    check_stack(kExtra);
    for (int i = 0; i < 8; ++i)
      if (!h_->insert(0, heap_value(kNeighbourValues + i)))
        throw std::runtime_error("PBHeap neighbour after allocations: insert " + std::to_string(i) +
                                 " answered full with " +
                                 std::to_string(kNeighbourValues + i) + " of 64 keys inserted");
    check_neighbours(kExtra);
    std::vector<std::int64_t> q_want = *recovered_;
    for (int i = 0; i < kExtra; ++i) q_want.push_back((std::int64_t{7} << 40) + i);
    expect_equal(q_->values(), q_want, "PBQueue after recovery's enqueues");
  }

  cr::Response recover_op(int, std::uint64_t, const cr::Op&) override {
    throw std::logic_error("not detectable");
  }

  std::vector<std::int64_t> observe() override { return recovered_ ? *recovered_ : q_->values(); }

  cr::Op next_op(int tid, std::uint64_t& rng) override {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    if ((rng >> 33) % 3 == 0) return {cr::kDequeue, 0, 0};
    return {cr::kEnqueue, ((static_cast<std::int64_t>(tid) + 1) << 40) | ++counter_[tid], 0};
  }

 private:
  static std::int64_t stack_value(int i) { return 5'000 + i; }
  static std::int64_t heap_value(int i) { return 9'000 + (i * 37) % 211; }

  // The stack holds its kNeighbourValues + `extra` pushes (top first), the
  // heap its inserts; throws on any difference (a violation).
  void check_stack(int extra) {
    std::vector<std::int64_t> s_want;
    for (int i = kNeighbourValues + extra; i-- > 0;) s_want.push_back(stack_value(i));
    expect_equal(s_->contents(), s_want, extra ? "PWFStack neighbour after allocations" : "PWFStack neighbour");
  }
  void check_neighbours(int extra) {
    std::vector<std::int64_t> s_want, h_want;
    for (int i = kNeighbourValues + extra; i-- > 0;) s_want.push_back(stack_value(i));
    for (int i = 0; i < kNeighbourValues + std::min(extra, 8); ++i) h_want.push_back(heap_value(i));
    std::sort(h_want.begin(), h_want.end());
    expect_equal(s_->contents(), s_want, extra ? "PWFStack neighbour after allocations" : "PWFStack neighbour");
    expect_equal(h_->sorted(), h_want, extra ? "PBHeap neighbour after allocations" : "PBHeap neighbour");
  }

  bool old_;
  int threads_ = 1;
  std::unique_ptr<fc::PBQueue<>> q_;
  std::unique_ptr<fc::PWFStack<>> s_;
  std::unique_ptr<fc::PBHeap<>> h_;
  std::optional<std::vector<std::int64_t>> recovered_;
  std::int64_t counter_[64] = {};
};

cr::SubjectInfo shared_subject(bool old_heap_recovery) {
  cr::SubjectInfo info;
  info.structure = "shared-pool-queue";
  info.variant = old_heap_recovery ? "own-trace-heap-recovery" : "correct";
  info.expect_violation = old_heap_recovery;
  info.description = "PBQueue next to a PWFStack and a PBHeap in one pool";
  info.make = [old_heap_recovery] { return std::make_unique<SharedQueueSubject>(old_heap_recovery); };
  return info;
}

std::string describe(const cr::CampaignResult& r) {
  std::string s = r.error;
  for (const auto& v : r.details)
    s += "\n  k=" + std::to_string(v.k) + " image " + std::to_string(v.image) + " " + v.property + ": " + v.reason;
  return s;
}

TEST(SharedPool, ThreeStructuresShareOnePoolUnderCrashImages) {
  cr::CampaignConfig cfg;
  cfg.ops = static_cast<std::size_t>(scaled(150, 30));
  cfg.images = 4;
  cfg.seed = 29;
  // This subject's recover() runs its own post-recovery operations (kExtra
  // enqueues, pushes and inserts, each checked) and observe() reports the
  // queue as recovered, before them: the campaign's post-recovery ops would
  // check observe() against operations it does not reflect.
  cfg.post_ops = 0;
  const auto r = cr::run_campaign(shared_subject(false), cfg);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.violations, 0u) << describe(r);
  EXPECT_EQ(r.inconclusive, 0u);
  EXPECT_EQ(r.crash_points, r.verbs + 1);
  EXPECT_GT(r.images_checked, r.crash_points);
  std::printf("[shared-pool] crash: %zu ops, %llu crash points, %llu images, %llu violations\n", cfg.ops,
              static_cast<unsigned long long>(r.crash_points), static_cast<unsigned long long>(r.images_checked),
              static_cast<unsigned long long>(r.violations));
}

TEST(SharedPool, PerStructureHeapRecoveryLosesTheNeighboursNodesAndIsCaught) {
  cr::CampaignConfig cfg;
  cfg.ops = static_cast<std::size_t>(scaled(60, 20));
  cfg.images = 2;
  cfg.seed = 29;
  cfg.recover_pool = false;  // the pool does not recover itself: the subject does, the old way
  cfg.stop_after_violations = 3;
  cfg.post_ops = 0;  // recover() runs and checks its own operations (as above)
  // The broken recovery may scribble over the restarted machine so that it
  // loops where not even its alarm can report: the campaign's watchdog then
  // kills it after its patience (the hang limit + 5 s). A correct image
  // recovers in well under a millisecond; a limit of 1 s ends such a hang
  // in 6 s instead of 25 (the control run below keeps the default).
  cr::CampaignConfig broken = cfg;
  broken.recovery_timeout_s = 1;
  const auto r = cr::run_campaign(shared_subject(true), broken);
  ASSERT_TRUE(r.error.empty()) << r.error;
  ASSERT_GE(r.violations, 1u) << "reusing the neighbours' nodes went unnoticed";
  ASSERT_FALSE(r.details.empty());
  // How the damage shows depends on which blocks the queue's recovery freed
  // and the allocations reused (the record sizes): a neighbour's check, or
  // the restarted machine crashing inside a neighbour whose records now
  // hold queue or stack nodes.
  const std::string& why = r.details[0].reason;
  // (Under ASan the restarted machine exits with status 1 instead of
  // crashing; a scribbled-over one may stop answering.)
  EXPECT_TRUE(why.find("neighbour after allocations") != std::string::npos ||
              why.find("the restarted machine crashed") != std::string::npos ||
              why.find("the restarted machine exited") != std::string::npos ||
              why.find("the restarted machine stopped answering") != std::string::npos)
      << describe(r);
  // The same campaign with the pool's own recovery left off and nothing in
  // its place (every block kept: a leak, never a loss) passes: the damage
  // is the per-structure heap recovery's.
  const auto ok = cr::run_campaign(shared_subject(false), cfg);
  ASSERT_TRUE(ok.error.empty()) << ok.error;
  EXPECT_EQ(ok.violations, 0u) << describe(ok);
  EXPECT_EQ(ok.inconclusive, 0u);
  std::printf("[shared-pool] own-trace heap recovery: %llu violations, first: %s\n",
              static_cast<unsigned long long>(r.violations), r.details[0].reason.c_str());
}

}  // namespace

}  // namespace shared_pool_crash_test
