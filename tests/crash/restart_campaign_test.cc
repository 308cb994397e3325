// The restarted machine of the crash campaigns (simulator v2): recovery in a
// process that never saw the crashed run's DRAM, post-recovery operations,
// crashes during recovery and during create, buffered durability, the
// guard that turns a dying or hanging recovery into a violation, and a
// second crash after recovery, during new operations.
//
// Each test pairs a deliberately wrong test-local subject with the mode
// that must catch it, and (where it makes sense) shows that the same
// campaign without that mode does not — the mode is what catches it.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/sanitizer.h"
#include "common/scale.h"
#include "common/subjects.h"
#include "ferrite/crash/campaign.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"

namespace restart_campaign_test {  // this file's names, apart in a unity build

namespace fc = ferrite::crash;
namespace pm = ferrite::pmem;
namespace ps = ferrite::persist;

namespace {

using ferrite::test::scaled;

std::string describe(const fc::CampaignResult& r) {
  std::string s = r.error;
  for (const auto& v : r.details)
    s += "\n  k=" + std::to_string(v.k) + " image " + std::to_string(v.image) + " " + v.property + " [" + v.engine +
         "] " + v.reason + "\n  " + v.replay;
  return s;
}

template <class S>
fc::SubjectInfo info_of(const std::string& name, bool broken) {
  fc::SubjectInfo info;
  info.structure = name;
  info.variant = broken ? "broken" : "correct";
  info.expect_violation = broken;
  info.description = "test subject";
  info.make = [] { return std::unique_ptr<fc::Subject>(new S); };
  return info;
}

bool any_property(const fc::CampaignResult& r, const std::string& what) {
  for (const auto& v : r.details)
    if (v.property.find(what) != std::string::npos) return true;
  return false;
}

// ------------------------------------------- a small persistent append log

constexpr int kCap = 512;

struct LogRoot {
  static constexpr std::uint32_t kTypeTag = 0x7e57a001;
  static constexpr std::uint32_t kTypeVersion = 1;
  std::uint64_t magic = 0;
  std::uint64_t count = 0;
  void* dram = nullptr;  // DramIndex only: a pointer into the creating run's heap
  std::int64_t items[kCap] = {};
};

// Appends durably: item, pwb, pfence, count, pwb, psync.
std::int64_t durable_append(LogRoot* r, std::int64_t v) {
  const auto i = r->count;
  r->items[i] = v;
  ps::pwb(&r->items[i]);
  ps::pfence();
  r->count = i + 1;
  ps::pwb(&r->count);
  ps::psync();
  return static_cast<std::int64_t>(i);
}

class LogBase : public fc::Subject {
 public:
  fc::Spec spec() const override { return fc::Spec::kLog; }
  bool detectable() const override { return false; }
  fc::Response recover_op(int, std::uint64_t, const fc::Op&) override { throw std::logic_error("not detectable"); }
  fc::Op next_op(int tid, std::uint64_t& rng) override {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return {fc::kAppend, static_cast<std::int64_t>((static_cast<std::uint64_t>(tid) + 1) << 32 | ++n_), 0};
  }

 protected:
  std::uint64_t n_ = 0;
  LogRoot* root_ = nullptr;
};

// --------------------------------------------------- 1. a DRAM pointer
// Keeps a volatile copy of the log and stores its address in the pool; the
// broken recovery reads the log back through that pointer instead of
// rebuilding it from the pool. In a process forked from the crashed run it
// would read the crashed run's vector and pass.
template <bool kBroken>
class DramIndex final : public LogBase {
 public:
  void create(pm::Pool& pool, int) override {
    root_ = pool.create_root<LogRoot>("t");
    index_ = new std::vector<std::int64_t>;
    owned_ = true;
    index_->reserve(kCap);
    root_->dram = index_;
    ps::pwb(&root_->dram);
    ps::psync();
  }
  fc::Response apply(int, std::uint64_t, const fc::Op& o) override {
    const auto i = durable_append(root_, o.arg);
    index_->push_back(o.arg);
    return fc::Response::of(i);
  }
  void recover(pm::Pool& pool, int) override {
    root_ = pool.root<LogRoot>("t");
    if (kBroken) {
      // CRASH: wrong on purpose — DRAM of the crashed run.
      index_ = static_cast<std::vector<std::int64_t>*>(root_->dram);
    } else {
      index_ = new std::vector<std::int64_t>(root_->items, root_->items + root_->count);
      owned_ = true;
      root_->dram = index_;
    }
  }
  std::vector<std::int64_t> observe() override {
    // The broken variant may read garbage; keep the copy bounded so the
    // verdict is a wrong state (or a crash), not an out-of-memory.
    std::vector<std::int64_t> out;
    for (std::size_t i = 0; i < index_->size() && i < kCap; ++i) out.push_back((*index_)[i]);
    return out;
  }

 private:
  std::vector<std::int64_t>* index_ = nullptr;
  bool owned_ = false;  // never the crashed run's pointer

 public:
  ~DramIndex() override {
    if (owned_) delete index_;
  }
};

TEST(Restart, RecoveryThatReadsTheCrashedRunsDramIsCaught) {
  fc::CampaignConfig cfg;
  cfg.recovery_timeout_s = 2;  // a worker whose heap the broken recovery scribbled on is killed soon
  cfg.stop_after_violations = 1;  // the first catch is the verdict (later images only burn workers)
  cfg.ops = scaled(40, 10);
  cfg.images = 2;
  auto bad = fc::run_campaign(info_of<DramIndex<true>>("dram-index", true), cfg);
  ASSERT_TRUE(bad.error.empty()) << bad.error;
  EXPECT_GE(bad.violations, 1u) << "a recovery that reads the crashed run's heap passed";
  auto good = fc::run_campaign(info_of<DramIndex<false>>("dram-index", false), cfg);
  ASSERT_TRUE(good.error.empty()) << good.error;
  EXPECT_EQ(good.violations, 0u) << describe(good);
  EXPECT_EQ(good.inconclusive, 0u);
}

// -------------------------------------- 2. a free list corrupted by recovery
// A stack of persistent nodes; the free list is volatile and rebuilt by
// recovery from what the stack does not reach. The broken recovery puts
// every node on the free list: the recovered state is right, the next push
// overwrites a live node.
struct StackRoot {
  static constexpr std::uint32_t kTypeTag = 0x7e57a002;
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr int kNodes = 256;
  struct Node {
    std::int64_t value;
    std::int64_t next;  // node index, -1 = none
    std::uint64_t pad[6];
  };
  std::int64_t head = -1;
  std::uint64_t pad[7] = {};
  Node nodes[kNodes] = {};
};

template <bool kBroken>
class FreeListStack final : public fc::Subject {
 public:
  fc::Spec spec() const override { return fc::Spec::kStack; }
  bool detectable() const override { return false; }
  void create(pm::Pool& pool, int) override {
    r_ = pool.create_root<StackRoot>("t");
    for (int i = StackRoot::kNodes - 1; i >= 0; --i) free_.push_back(i);
  }
  fc::Response apply(int, std::uint64_t, const fc::Op& o) override {
    if (o.kind == fc::kPush) {
      if (free_.empty()) throw std::runtime_error("out of nodes");
      const std::int64_t n = free_.back();
      free_.pop_back();
      auto& node = r_->nodes[n];
      node.value = o.arg;
      node.next = r_->head;
      ps::pwb(&node);
      ps::pfence();
      r_->head = n;
      ps::pwb(&r_->head);
      ps::psync();
      return fc::Response::ack();
    }
    const std::int64_t h = r_->head;
    if (h < 0) return fc::Response::none();
    const std::int64_t v = r_->nodes[h].value;
    r_->head = r_->nodes[h].next;
    ps::pwb(&r_->head);
    ps::psync();
    free_.push_back(h);
    return fc::Response::of(v);
  }
  void recover(pm::Pool& pool, int) override {
    r_ = pool.root<StackRoot>("t");
    std::vector<bool> live(StackRoot::kNodes, false);
    for (std::int64_t n = r_->head, hops = 0; n >= 0 && hops < StackRoot::kNodes; n = r_->nodes[n].next, ++hops)
      live[static_cast<std::size_t>(n)] = true;
    free_.clear();
    for (int i = StackRoot::kNodes - 1; i >= 0; --i)
      if (kBroken || !live[static_cast<std::size_t>(i)]) free_.push_back(i);  // CRASH: broken frees live nodes
  }
  fc::Response recover_op(int, std::uint64_t, const fc::Op&) override { throw std::logic_error("not detectable"); }
  std::vector<std::int64_t> observe() override {
    std::vector<std::int64_t> out;
    for (std::int64_t n = r_->head, hops = 0; n >= 0 && hops <= StackRoot::kNodes; n = r_->nodes[n].next, ++hops)
      out.push_back(r_->nodes[n].value);
    return out;
  }
  fc::Op next_op(int tid, std::uint64_t& rng) override {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    // Mostly pushes: the stack is deep when the crash comes.
    if ((rng >> 33) % 3 == 0) return {fc::kPop, 0, 0};
    return {fc::kPush, static_cast<std::int64_t>((static_cast<std::uint64_t>(tid) + 1) << 32 | ++n_), 0};
  }

 private:
  StackRoot* r_ = nullptr;
  std::vector<std::int64_t> free_;
  std::uint64_t n_ = 0;
};

TEST(Restart, AFreeListCorruptedByRecoveryIsCaughtByPostRecoveryOps) {
  fc::CampaignConfig cfg;
  cfg.ops = scaled(60, 12);
  cfg.images = 2;
  cfg.post_ops = 0;
  auto silent = fc::run_campaign(info_of<FreeListStack<true>>("free-list", true), cfg);
  ASSERT_TRUE(silent.error.empty()) << silent.error;
  EXPECT_EQ(silent.violations, 0u) << "without post-recovery ops the recovered state looks right";
  cfg.post_ops = 8;
  auto bad = fc::run_campaign(info_of<FreeListStack<true>>("free-list", true), cfg);
  ASSERT_TRUE(bad.error.empty()) << bad.error;
  EXPECT_GE(bad.violations, 1u);
  EXPECT_TRUE(any_property(bad, "post-recovery")) << describe(bad);
  auto good = fc::run_campaign(info_of<FreeListStack<false>>("free-list", false), cfg);
  ASSERT_TRUE(good.error.empty()) << good.error;
  EXPECT_EQ(good.violations, 0u) << describe(good);
}

// ------------------------------------------ 3. recovery that is not idempotent
// Recovery "compacts" the log into the other of two buffers: copy, clear
// the active buffer, then switch. Run once it is right; crashed between the
// clear and the switch it loses the log. The correct variant switches
// before it clears.
struct TwinRoot {
  static constexpr std::uint32_t kTypeTag = 0x7e57a003;
  static constexpr std::uint32_t kTypeVersion = 1;
  std::uint64_t active = 0;
  std::uint64_t count[2] = {};
  std::uint64_t pad[5] = {};
  std::int64_t items[2][kCap] = {};
};

template <bool kBroken>
class TwinLog final : public fc::Subject {
 public:
  fc::Spec spec() const override { return fc::Spec::kLog; }
  bool detectable() const override { return false; }
  void create(pm::Pool& pool, int) override { r_ = pool.create_root<TwinRoot>("t"); }
  fc::Response apply(int, std::uint64_t, const fc::Op& o) override {
    const auto a = r_->active;
    const auto i = r_->count[a];
    r_->items[a][i] = o.arg;
    ps::pwb(&r_->items[a][i]);
    ps::pfence();
    r_->count[a] = i + 1;
    ps::pwb(&r_->count[a]);
    ps::psync();
    return fc::Response::of(static_cast<std::int64_t>(i));
  }
  void recover(pm::Pool& pool, int) override {
    r_ = pool.root<TwinRoot>("t");
    const auto a = r_->active, b = 1 - a;
    const auto n = r_->count[a];
    for (std::uint64_t i = 0; i < n; ++i) r_->items[b][i] = r_->items[a][i];
    ps::pwb(r_->items[b], n * sizeof(std::int64_t));
    r_->count[b] = n;
    ps::pwb(&r_->count[b]);
    ps::psync();
    auto clear = [&] {
      r_->count[a] = 0;
      ps::pwb(&r_->count[a]);
      ps::psync();
    };
    auto flip = [&] {
      r_->active = b;
      ps::pwb(&r_->active);
      ps::psync();
    };
    if (kBroken) {
      clear();  // CRASH: a crash here leaves the active buffer empty
      flip();
    } else {
      flip();
      clear();
    }
  }
  fc::Response recover_op(int, std::uint64_t, const fc::Op&) override { throw std::logic_error("not detectable"); }
  std::vector<std::int64_t> observe() override {
    const auto a = r_->active;
    return {r_->items[a], r_->items[a] + std::min<std::uint64_t>(r_->count[a], kCap)};
  }
  fc::Op next_op(int tid, std::uint64_t&) override {
    return {fc::kAppend, static_cast<std::int64_t>((static_cast<std::uint64_t>(tid) + 1) << 32 | ++n_), 0};
  }

 private:
  TwinRoot* r_ = nullptr;
  std::uint64_t n_ = 0;
};

TEST(Restart, RecoveryThatIsNotIdempotentIsCaughtByCrashesDuringRecovery) {
  fc::CampaignConfig cfg;
  cfg.ops = scaled(16, 8);
  cfg.images = 1;
  auto once = fc::run_campaign(info_of<TwinLog<true>>("twin-log", true), cfg);
  ASSERT_TRUE(once.error.empty()) << once.error;
  EXPECT_EQ(once.violations, 0u) << "recovery run once is right";
  cfg.recovery_crash_depth = 1;
  cfg.recovery_crash_points = 0;  // every recovery verb
  cfg.recovery_crash_every = 3;
  fc::CampaignConfig first = cfg;
  first.stop_after_violations = 1;
  auto bad = fc::run_campaign(info_of<TwinLog<true>>("twin-log", true), first);
  ASSERT_TRUE(bad.error.empty()) << bad.error;
  EXPECT_GE(bad.violations, 1u);
  EXPECT_TRUE(any_property(bad, "recovery-idempotence")) << describe(bad);
  EXPECT_GT(bad.nested_images, 0u);
  auto good = fc::run_campaign(info_of<TwinLog<false>>("twin-log", false), cfg);
  ASSERT_TRUE(good.error.empty()) << good.error;
  EXPECT_EQ(good.violations, 0u) << describe(good);
  EXPECT_GT(good.nested_images, 0u);
  // A third crash: recovery of a crashed recovery, crashed again.
  cfg.recovery_crash_depth = 2;
  cfg.recovery_crash_points = 2;
  cfg.recovery_crash_every = 7;
  auto deep = fc::run_campaign(info_of<TwinLog<false>>("twin-log", false), cfg);
  ASSERT_TRUE(deep.error.empty()) << deep.error;
  EXPECT_EQ(deep.violations, 0u) << describe(deep);
  EXPECT_GT(deep.nested_images, good.nested_images / 3);
  std::printf("[ nested   ] broken %llu, correct %llu, depth 2 %llu images after crashes during recovery (%.1f s)\n",
              static_cast<unsigned long long>(bad.nested_images), static_cast<unsigned long long>(good.nested_images),
              static_cast<unsigned long long>(deep.nested_images), bad.seconds + good.seconds + deep.seconds);
}

// ----------------------------------------------- 4. crashes during create
// The broken create publishes the root and only then writes its magic word;
// recovery refuses a root without it.
struct MagicRoot {
  static constexpr std::uint32_t kTypeTag = 0x7e57a004;
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr std::uint64_t kMagic = 0x4d41474943;
  MagicRoot() = default;
  explicit MagicRoot(std::uint64_t m) : magic(m) {}
  std::uint64_t magic = 0;
  std::uint64_t count = 0;
  std::int64_t items[kCap] = {};
};

template <bool kBroken>
class MagicLog final : public LogBase {
 public:
  void create(pm::Pool& pool, int) override {
    if (kBroken) {
      r_ = pool.create_root<MagicRoot>("t");
      r_->magic = MagicRoot::kMagic;  // CRASH: after the root was published
      ps::pwb(&r_->magic);
      ps::psync();
    } else {
      r_ = pool.create_root<MagicRoot>("t", MagicRoot::kMagic);
    }
  }
  fc::Response apply(int, std::uint64_t, const fc::Op& o) override {
    const auto i = r_->count;
    r_->items[i] = o.arg;
    ps::pwb(&r_->items[i]);
    ps::pfence();
    r_->count = i + 1;
    ps::pwb(&r_->count);
    ps::psync();
    return fc::Response::of(static_cast<std::int64_t>(i));
  }
  void recover(pm::Pool& pool, int) override {
    r_ = pool.root<MagicRoot>("t");
    if (r_->magic != MagicRoot::kMagic) throw std::runtime_error("log root without its magic word");
  }
  bool has_structure(pm::Pool& pool) override { return pool.has_root("t"); }
  std::vector<std::int64_t> observe() override { return {r_->items, r_->items + std::min<std::uint64_t>(r_->count, kCap)}; }

 private:
  MagicRoot* r_ = nullptr;
};

TEST(Restart, CrashesDuringCreateAreExploredAndAnUnsafeCreateIsCaught) {
  fc::CampaignConfig cfg;
  cfg.ops = 6;
  cfg.images = 2;
  auto settled = fc::run_campaign(info_of<MagicLog<true>>("magic-log", true), cfg);
  ASSERT_TRUE(settled.error.empty()) << settled.error;
  EXPECT_EQ(settled.violations, 0u) << "creation is settled without --crash-create";
  EXPECT_EQ(settled.create_points, 0u);
  cfg.crash_create = true;
  auto bad = fc::run_campaign(info_of<MagicLog<true>>("magic-log", true), cfg);
  ASSERT_TRUE(bad.error.empty()) << bad.error;
  EXPECT_GT(bad.create_points, 0u);
  EXPECT_GE(bad.violations, 1u);
  auto good = fc::run_campaign(info_of<MagicLog<false>>("magic-log", false), cfg);
  ASSERT_TRUE(good.error.empty()) << good.error;
  EXPECT_GT(good.create_points, 0u);
  EXPECT_EQ(good.violations, 0u) << describe(good);
  // Some images of the pool's own creation do not open (no pool yet) and
  // some open with no structure (created afresh): both are fine.
  EXPECT_GE(good.engines.count("no-pool"), 1u) << describe(good);
}

// create_crash_points samples the crash points inside creation (the
// sanitizer passes): fewer of them, about as many as asked, and the same
// ones for the same seed; the run's crash points are all still explored.
TEST(Restart, CreateCrashPointsSamplesCreationOnly) {
  fc::CampaignConfig cfg;
  cfg.ops = 6;
  cfg.images = 2;
  cfg.crash_create = true;
  const auto info = info_of<MagicLog<false>>("magic-log", false);
  auto every = fc::run_campaign(info, cfg);
  ASSERT_TRUE(every.error.empty()) << every.error;
  ASSERT_GT(every.create_points, 40u) << "a creation long enough to sample";
  const std::uint64_t run_points = every.crash_points - every.create_points;
  cfg.create_crash_points = every.create_points / 4;
  auto sampled = fc::run_campaign(info, cfg);
  ASSERT_TRUE(sampled.error.empty()) << sampled.error;
  EXPECT_EQ(sampled.violations, 0u) << describe(sampled);
  EXPECT_GT(sampled.create_points, 0u);
  EXPECT_LT(sampled.create_points, every.create_points / 2) << describe(sampled);
  EXPECT_EQ(sampled.crash_points - sampled.create_points, run_points) << "the run's points are not sampled";
  auto again = fc::run_campaign(info, cfg);
  ASSERT_TRUE(again.error.empty()) << again.error;
  EXPECT_EQ(again.create_points, sampled.create_points) << "deterministic for one seed";
}

// --------------------------------------------- 5. buffered durability
// Appends are volatile until a sync, which makes durable every append that
// completed before the sync was invoked (and perhaps more). Appends
// concurrent with the sync may be lost: not a violation. The broken sync
// persists only up to the previous sync.
template <bool kBroken>
class BufferedLog final : public LogBase {
 public:
  bool buffered() const override { return true; }
  void create(pm::Pool& pool, int) override { root_ = pool.create_root<LogRoot>("t"); }
  fc::Response apply(int, std::uint64_t, const fc::Op& o) override {
    if (o.kind == fc::kSync) {
      std::lock_guard<std::mutex> s(sync_mu_);
      std::vector<std::int64_t> todo;
      std::uint64_t from = 0;
      {
        std::lock_guard<std::mutex> g(mu_);
        from = root_->count;
        todo.assign(vol_.begin() + static_cast<std::ptrdiff_t>(from), vol_.end());
      }
      if (kBroken) todo.resize(todo.size() > 0 ? todo.size() - 1 : 0);  // CRASH: one completed append short
      for (std::size_t i = 0; i < todo.size(); ++i) root_->items[from + i] = todo[i];
      ps::pwb(&root_->items[from], std::max<std::size_t>(todo.size(), 1) * sizeof(std::int64_t));
      ps::pfence();
      root_->count = from + todo.size();
      ps::pwb(&root_->count);
      ps::psync();
      return fc::Response::ack();
    }
    std::lock_guard<std::mutex> g(mu_);
    vol_.push_back(o.arg);
    return fc::Response::of(static_cast<std::int64_t>(vol_.size() - 1));
  }
  void recover(pm::Pool& pool, int) override {
    root_ = pool.root<LogRoot>("t");
    vol_.assign(root_->items, root_->items + std::min<std::uint64_t>(root_->count, kCap));
  }
  // The abstract state of the live log (after recovery: the durable part).
  std::vector<std::int64_t> observe() override {
    std::lock_guard<std::mutex> g(mu_);
    return vol_;
  }
  fc::Op next_op(int tid, std::uint64_t& rng) override {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    if ((rng >> 33) % 4 == 0) return {fc::kSync, 0, 0};
    return {fc::kAppend, static_cast<std::int64_t>((static_cast<std::uint64_t>(tid) + 1) << 32 | ++n_), 0};
  }

 private:
  std::mutex mu_, sync_mu_;
  std::vector<std::int64_t> vol_;
};

TEST(Restart, BufferedLossOfSyncConcurrentOpsIsNotAViolation) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  fc::CampaignConfig cfg;
  cfg.threads = 2;
  cfg.ops = scaled(300, 40);
  cfg.images = 4;
  cfg.crash_points = scaled(150, 20);
  auto good = fc::run_campaign(info_of<BufferedLog<false>>("buffered-log", false), cfg);
  ASSERT_TRUE(good.error.empty()) << good.error;
  EXPECT_EQ(good.violations, 0u) << describe(good);
  EXPECT_EQ(good.inconclusive, 0u);
  cfg.threads = 1;
  cfg.crash_points = 0;
  cfg.ops = scaled(60, 20);
  auto bad = fc::run_campaign(info_of<BufferedLog<true>>("buffered-log", true), cfg);
  ASSERT_TRUE(bad.error.empty()) << bad.error;
  EXPECT_GE(bad.violations, 1u) << "a sync that leaves out a completed append must be caught";
}

// ------------------------------------------------- 6. the guard
// Recovery that kills its process on some images (abort), or never returns: each
// such image is a violation that names the signal or the hang, and the
// campaign goes on with a fresh worker.
template <int kHow>  // 0 abort, 1 hang (sleeping), 2 hang (spinning)
class Fragile final : public LogBase {
 public:
  void create(pm::Pool& pool, int) override { root_ = pool.create_root<LogRoot>("t"); }
  fc::Response apply(int, std::uint64_t, const fc::Op& o) override { return fc::Response::of(durable_append(root_, o.arg)); }
  void recover(pm::Pool& pool, int) override {
    root_ = pool.root<LogRoot>("t");
    if (root_->count == 3) {
      if (kHow == 0) ::abort();  // (not SIGSEGV: AddressSanitizer would turn it into exit status 1)
      if (kHow == 2) {
        volatile std::uint64_t spin = 0;
        for (;;) spin = spin + 1;
      }
      for (;;) ::pause();
    }
  }
  std::vector<std::int64_t> observe() override {
    return {root_->items, root_->items + std::min<std::uint64_t>(root_->count, kCap)};
  }
};

TEST(Restart, ARecoveryThatCrashesOrHangsIsAViolationAndTheCampaignGoesOn) {
  fc::CampaignConfig cfg;
  cfg.ops = 8;
  cfg.images = 2;
  cfg.post_ops = 2;
  auto crashed = fc::run_campaign(info_of<Fragile<0>>("fragile", true), cfg);
  ASSERT_TRUE(crashed.error.empty()) << crashed.error;
  EXPECT_GE(crashed.violations, 1u);
  EXPECT_GE(crashed.worker_restarts, crashed.violations);
  ASSERT_FALSE(crashed.details.empty());
  EXPECT_NE(crashed.details.front().reason.find("Aborted"), std::string::npos) << describe(crashed);
  EXPECT_EQ(crashed.crash_points, crashed.verbs + 1) << "every crash point was still explored";
  cfg.recovery_timeout_s = 1;
  cfg.ops = 3;  // only the last crash points leave count == 3: a few hangs, in parallel
  cfg.images = 0;
  auto hung = fc::run_campaign(info_of<Fragile<1>>("fragile", true), cfg);
  ASSERT_TRUE(hung.error.empty()) << hung.error;
  EXPECT_GE(hung.violations, 1u);
  ASSERT_FALSE(hung.details.empty());
  EXPECT_NE(hung.details.front().reason.find("hung"), std::string::npos) << describe(hung);
  // A spinning hang is ended by its CPU budget (recovery_cpu_s), long before
  // the wall limit; a sleeping one, which spends no CPU, by the wall limit.
  // (Not a longer wall limit: under load the runner sometimes waits out a
  // dead worker's watchdog, recovery_timeout_s + 5 s — docs/crash.md,
  // "Worker deaths" — which at 30 s made this test take 57 s under ASan.)
  cfg.recovery_timeout_s = 3;
  cfg.recovery_cpu_s = 0.1;
  auto spun = fc::run_campaign(info_of<Fragile<2>>("fragile", true), cfg);
  ASSERT_TRUE(spun.error.empty()) << spun.error;
  EXPECT_GE(spun.violations, 1u);
  ASSERT_FALSE(spun.details.empty());
  EXPECT_NE(spun.details.front().reason.find("hung (no answer after 0.1 s of CPU time)"), std::string::npos)
      << describe(spun);
  cfg.recovery_timeout_s = 1;
  auto slept = fc::run_campaign(info_of<Fragile<1>>("fragile", true), cfg);
  ASSERT_TRUE(slept.error.empty()) << slept.error;
  ASSERT_FALSE(slept.details.empty());
  EXPECT_NE(slept.details.front().reason.find("hung (no answer within 1 s)"), std::string::npos) << describe(slept);
}


// ------------------------------------- 7. CI-sized histories, 0 inconclusive
// A durable set (a slot per key, a mutex, each update written back and
// psynced before it returns) under 3 threads and 2,000 operations over
// 2,000 keys: the checker decides every image exactly, key by key.
struct SetRoot {
  static constexpr std::uint32_t kTypeTag = 0x7e57a005;
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr int kKeys = 2048;
  std::uint64_t present[kKeys] = {};
};

class SlotSet final : public fc::Subject {
 public:
  fc::Spec spec() const override { return fc::Spec::kSet; }
  bool detectable() const override { return false; }
  void create(pm::Pool& pool, int) override { r_ = pool.create_root<SetRoot>("t"); }
  fc::Response apply(int, std::uint64_t, const fc::Op& o) override {
    std::lock_guard<std::mutex> g(mu_);
    auto& w = r_->present[o.arg];
    const bool was = w != 0;
    if (o.kind == fc::kInsert || o.kind == fc::kRemove) {
      w = o.kind == fc::kInsert ? 1 : 0;
      ps::pwb(&w);
      ps::psync();
    }
    if (o.kind == fc::kInsert) return fc::Response::boolean(!was);
    return fc::Response::boolean(was);
  }
  void recover(pm::Pool& pool, int) override { r_ = pool.root<SetRoot>("t"); }
  fc::Response recover_op(int, std::uint64_t, const fc::Op&) override { throw std::logic_error("not detectable"); }
  std::vector<std::int64_t> observe() override {
    std::vector<std::int64_t> out;
    for (int k = 0; k < SetRoot::kKeys; ++k)
      if (r_->present[k] != 0) out.push_back(k);
    return out;
  }
  fc::Op next_op(int, std::uint64_t& rng) override {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    const auto r = rng >> 20;
    const std::int64_t key = static_cast<std::int64_t>(r % 2000);
    const auto c = (r >> 12) % 4;
    return {c == 0 ? fc::kContains : c == 1 ? fc::kRemove : fc::kInsert, key, 0};
  }

 private:
  SetRoot* r_ = nullptr;
  std::mutex mu_;
};

TEST(Restart, ASetHistoryOf2000OpsOver2000KeysIsDecidedExactly) {
  FERRITE_SKIP_THREADED_FORK_UNDER_ASAN();
  fc::CampaignConfig cfg;
  cfg.threads = 3;
  cfg.ops = scaled(2000, 100);
  cfg.images = 4;
  cfg.crash_points = scaled(60, 10);
  auto r = fc::run_campaign(info_of<SlotSet>("slot-set", false), cfg);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.violations, 0u) << describe(r);
  EXPECT_EQ(r.inconclusive, 0u) << describe(r);
  EXPECT_EQ(r.engines.count("exact-per-key"), 1u);
  EXPECT_GT(r.images_checked, 0u);
}

// --------------------------- 8. a second crash after recovery (issue 11)
// A log that persists every append until it has been recovered once, and
// after that (the broken variant) writes its appends without a write-back:
// the post-recovery ops answer right, so one crash never shows it; a
// second crash during them loses appends that had completed.
template <bool kBroken>
class LazyAfterRecovery final : public LogBase {
 public:
  void create(pm::Pool& pool, int) override { root_ = pool.create_root<LogRoot>("t"); }
  fc::Response apply(int, std::uint64_t, const fc::Op& o) override {
    if (!(kBroken && recovered_)) return fc::Response::of(durable_append(root_, o.arg));
    // CRASH: wrong on purpose — no pwb, no psync after a recovery.
    const auto i = root_->count;
    root_->items[i] = o.arg;
    root_->count = i + 1;
    return fc::Response::of(static_cast<std::int64_t>(i));
  }
  void recover(pm::Pool& pool, int) override {
    root_ = pool.root<LogRoot>("t");
    recovered_ = true;
  }
  std::vector<std::int64_t> observe() override {
    return {root_->items, root_->items + std::min<std::uint64_t>(root_->count, kCap)};
  }

 private:
  bool recovered_ = false;
};

TEST(Restart, LostPostRecoveryOpsAreCaughtByASecondCrashOnly) {
  fc::CampaignConfig cfg;
  cfg.ops = scaled(24, 8);
  cfg.images = 2;
  cfg.post_ops = 6;
  auto once = fc::run_campaign(info_of<LazyAfterRecovery<true>>("lazy-log", true), cfg);
  ASSERT_TRUE(once.error.empty()) << once.error;
  EXPECT_EQ(once.violations, 0u) << "one crash cannot see it: " << describe(once);
  EXPECT_EQ(once.second_images, 0u);
  cfg.post_crash_every = 3;
  cfg.post_crash_points = 2;
  fc::CampaignConfig first = cfg;
  first.stop_after_violations = 1;
  auto bad = fc::run_campaign(info_of<LazyAfterRecovery<true>>("lazy-log", true), first);
  ASSERT_TRUE(bad.error.empty()) << bad.error;
  ASSERT_GE(bad.violations, 1u);
  EXPECT_TRUE(any_property(bad, "second-crash/durable-linearizability")) << describe(bad);
  EXPECT_GT(bad.second_images, 0u);
  EXPECT_NE(bad.details[0].replay.find("--post-crash-every 3 --post-crash-points 2"), std::string::npos)
      << bad.details[0].replay;
  // The replay line's crash point and image reproduce it.
  fc::CampaignConfig replay = cfg;
  replay.replay = fc::CampaignConfig::Replay{bad.details[0].k, bad.details[0].image};
  auto again = fc::run_campaign(info_of<LazyAfterRecovery<true>>("lazy-log", true), replay);
  ASSERT_TRUE(again.error.empty()) << again.error;
  EXPECT_GE(again.violations, 1u) << "the replay must reproduce: " << bad.details[0].replay;
  // The correct log: every completed post op survives the second crash.
  auto good = fc::run_campaign(info_of<LazyAfterRecovery<false>>("lazy-log", false), cfg);
  ASSERT_TRUE(good.error.empty()) << good.error;
  EXPECT_EQ(good.violations, 0u) << describe(good);
  EXPECT_EQ(good.inconclusive, 0u);
  EXPECT_GT(good.second_images, 0u);
  std::printf("[ second   ] broken %llu, correct %llu images after a second crash (%.1f s)\n",
              static_cast<unsigned long long>(bad.second_images), static_cast<unsigned long long>(good.second_images),
              bad.seconds + good.seconds);
}

// The mode is generic: strictly durable registered structures (a
// combining queue, a lock-free durable queue) survive a second crash
// during their post-recovery ops with every completed post op.
TEST(Restart, StrictlyDurableQueuesSurviveASecondCrashAfterRecovery) {
  for (const char* structure : {"pb-queue", "friedman-durable"}) {
    for (const char* model : {"abstract", "x86"}) {
      SCOPED_TRACE(std::string(structure) + " " + model);
      fc::CampaignConfig cfg;
      cfg.model = model;
      cfg.ops = scaled(24, 10);
      cfg.images = 2;
      cfg.post_ops = 12;
      cfg.post_crash_every = 10;
      cfg.post_crash_points = 3;
      auto r = fc::run_campaign(ferrite::test::subject(structure, "correct"), cfg);
      ASSERT_TRUE(r.error.empty()) << r.error;
      EXPECT_EQ(r.violations, 0u) << describe(r);
      EXPECT_EQ(r.inconclusive, 0u) << describe(r);
      EXPECT_GT(r.second_images, 0u);
      std::printf("[ second   ] %s [%s]: %llu crash points, %llu images, %llu after a second crash, %.1f s\n",
                  structure, model, static_cast<unsigned long long>(r.crash_points),
                  static_cast<unsigned long long>(r.images_checked), static_cast<unsigned long long>(r.second_images),
                  r.seconds);
    }
  }
}

}  // namespace

}  // namespace restart_campaign_test
