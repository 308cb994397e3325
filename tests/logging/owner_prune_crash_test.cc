// Is a thread's prune of its OWN log (undo_log.h Logger::prune, not
// helping: StrandWeaver §V, Fig. 6(a) steps 3 and 4 — invalidate the
// region's entries, the end entry last, advance the head) ordered before the
// entries of its next lap that reuse the pruned slots? The prune orders its
// stores with persist barriers (order_prune), which order only within the
// thread's current strand (Eq. 1); the next entries are written on new
// strands (Fig. 5: NewStrand after each log/update pair), ordered after the
// prune only per 8-byte word (SPA, Eq. 3) until the thread's next
// JoinStrand (Eq. 2).
//
// Verdict (docs/logging.md, "The owner's own prune under strand"): under
// `strand` it is exposed, and Logger::append now joins before an entry that
// reuses the end slot of a region the thread pruned since its last join.
// The image: a region R pruned by its owner, then an entry of a later
// region, on a new strand, written into R's end slot before the owner's
// next join — torn (some of its words persisted, not its meta word) while
// neither the invalidations of R's other slots nor the head persisted. R's
// end entry fails its checksum, R's other entries are live: recovery finds
// R incomplete and undoes a completed region, and with it every later
// region of the thread (program order). The slot is reachable only when R
// was pruned together with the region after it, without a join between
// (a non-end entry needs two free slots, so reaching R's end slot needs the
// region after R pruned; a region pruned alone, at its own end, has its end
// slot reused first by the next region's end entry, after that region's
// pre_end join): deferred ATLAS / SFR regions pruned in one go, then a
// region that writes most of a lap before its own join — a small log.
// Under hops and hops+ (ofence) and the write-back models x86 and abstract
// (pfence orders the thread's write-backs) the owner's later entries are
// ordered after its prune by its own order points, with or without the join.
//
// The scenario, run by the real Logger (ATLAS, 8-entry log, 2 threads) on a
// simulated pool under each model, then captured and judged by the real
// recover_area on each image:
//   B (tid 1): acquire P; acquire L; b := 1; release P (early: hands P over)
//   A (tid 0): A1 = acquire P (depends on B's open section); x := 1;
//              release P — complete, deferred (B's section is not pruned);
//              A2 = acquire P; y := 1; release P — complete, deferred
//              behind A1. Slots 0-2 hold A1 (end entry in slot 2), 3-5 A2.
//   B:         b2 := 1; release L — B's section ends and is pruned.
//   A:         make_room (as logging::Region does): prunes A1 and A2 in one
//              go; then R = acquire M; u[0..3] := 1 — entries at seqs 6..10,
//              u[3]'s entry (seq 10) in slot 2, A1's end slot. Crash here.
// Every image must recover to b = b2 = x = y = 1 (B's section, A1 and A2
// completed) and u all 0 or all 1 (R in flight). Second path: A skips
// make_room, and R's first store finds the ring full: append's overflow
// prunes A1 and A2 in one go (a ring full of deferred regions, any size).
//
// Measured (release): without the join (internal::kNoOwnerPruneJoin) the
// strand model admits images that undo A1 and A2 (make_room: 11 of 3 316
// sampled images, x = y = 0; overflow: 10 of 3 299, e.g. x = 1, y = 0 —
// A1's store entry gone, its acquire entry live, its end entry torn: A1
// undone with nothing to roll back, A2 undone after it); with it, none of
// the sampled images does; under hops, hops+, x86 and abstract none does
// with or without it.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/temp_pool.h"
#include "ferrite/crash/sim.h"
#include "ferrite/logging/undo_log.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"

namespace owner_prune_crash_test {  // this file's names, apart in a unity build

namespace cr = ferrite::crash;
namespace fl = ferrite::logging;
namespace pm = ferrite::pmem;

namespace {

struct OwnerPruneCells {
  static constexpr std::uint32_t kTypeTag = 0x4C47'4F50;  // "LGOP"
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "logging owner-prune test cells";
  fl::LogArea log{};
  alignas(64) std::uint64_t b = 0;   // B's section
  std::uint64_t b2 = 0;
  alignas(64) std::uint64_t x = 0;   // A1
  alignas(64) std::uint64_t y = 0;   // A2
  alignas(64) std::uint64_t u[4] = {};  // R, in flight at the crash
  static void recover_root(pm::Pool&, OwnerPruneCells* c, const std::function<void(void*)>& mark) {
    fl::recover_area(&c->log);
    fl::mark_area(&c->log, mark);
  }
};
const bool kRegistered = pm::register_root_type<OwnerPruneCells>(&OwnerPruneCells::recover_root);

// One simulator thread that runs the closures it is given, one at a time
// (the models order stores per thread: a logical thread of the scenario
// must stay on one OS thread across its phases).
class Actor {
 public:
  Actor() : t_([this] { loop(); }) {}
  ~Actor() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    t_.join();
  }
  Actor(const Actor&) = delete;
  Actor& operator=(const Actor&) = delete;
  void run(std::function<void()> f) {
    std::unique_lock<std::mutex> g(mu_);
    job_ = std::move(f);
    cv_.notify_all();
    cv_.wait(g, [this] { return !job_; });
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> g(mu_);
    for (;;) {
      cv_.wait(g, [this] { return stop_ || job_; });
      if (stop_) return;
      try {
        job_();
      } catch (...) {
        error_ = std::current_exception();
      }
      job_ = nullptr;
      cv_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> job_;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread t_;
};

struct Outcome {
  std::size_t images = 0;
  std::size_t completed_undone = 0;  // images recovering b, b2, x or y != 1
  std::size_t torn_in_flight = 0;    // images recovering u neither all 0 nor all 1
  bool reached = false;              // u[3]'s entry is in A1's end slot
  bool exhaustive = false;           // every image the model allows was checked
  std::uint64_t reuses = 0;          // Logger::owner_prune_reuses (strand)
  std::string first;                 // the first bad image's values
};

// `room`: A prunes A1 and A2 in make_room before R (as logging::Region
// does); else R's second entry finds the ring full and append's overflow
// prunes them (the raw API, or a Region whose make_room gave up).
Outcome run_scenario(const char* model, fl::Instrumentation instr, unsigned faults, int images, bool room = true) {
  Outcome out;
  cr::enable_sim();
  cr::sim::set_model(model);
  pm::PoolOptions po;
  po.backend.kind = ferrite::persist::BackendConfig::Kind::kSim;
  {
    ferrite::test::TempPool pool("owner-prune", std::size_t{2} << 20, po);
    auto* c = pool->create_root<OwnerPruneCells>("cells");
    fl::LoggerOptions lo;
    lo.language = fl::Language::kAtlas;
    lo.instrumentation = instr;
    lo.faults = faults;
    lo.capacity = 8;
    fl::Logger lg(*pool, &c->log, 2, lo);
    fl::Lock p, l, m;
    cr::sim::settle();  // the pool and the empty logs are durable
    {
      Actor a, b;
      b.run([&] {
        lg.acquire(1, p);
        lg.acquire(1, l);
        lg.write(1, &c->b, std::uint64_t{1});
        lg.release(1, p);  // early release: P handed over with B's section open
      });
      a.run([&] {
        lg.acquire(0, p);  // A1 depends on B's section (synchronization history)
        lg.write(0, &c->x, std::uint64_t{1});
        lg.release(0, p);  // A1 complete, deferred
        lg.acquire(0, p);
        lg.write(0, &c->y, std::uint64_t{1});
        lg.release(0, p);  // A2 complete, deferred behind A1
      });
      b.run([&] {
        lg.write(1, &c->b2, std::uint64_t{1});
        lg.release(1, l);  // B's section ends and is pruned
      });
      a.run([&] {
        if (lg.deferred(0) != 2) throw std::logic_error("A1 and A2 were not both deferred");
        if (room) lg.make_room(0);  // A1 and A2 pruned in one go
        lg.acquire(0, m);
        for (auto& w : c->u) lg.write(0, &w, std::uint64_t{1});  // overflow (!room): A1 and A2 pruned in one go
        if (lg.deferred(0) != 0) throw std::logic_error("A1 and A2 were not pruned");
      });
      out.reuses = lg.owner_prune_reuses();
      const fl::LogEntry& slot2 = c->log.logs[0]->entries[2];
      out.reached = slot2.seq == 10 && fl::detail::type_of(slot2) == fl::EntryType::kStore;
      // CRASH: here — R in flight, its last entry in A1's end slot.
      const cr::CrashState cs = cr::sim::capture();
      // What recovery writes (the logs, the cells) and what an image
      // installs (cs.lines), restored before each image.
      auto* base = static_cast<std::uint8_t*>(pool->base());
      std::vector<std::pair<std::uint8_t*, std::vector<std::uint8_t>>> saved;
      auto save = [&](void* at, std::size_t n) {
        auto* q = static_cast<std::uint8_t*>(at);
        saved.emplace_back(q, std::vector<std::uint8_t>(q, q + n));
      };
      save(c, sizeof *c);
      for (int t = 0; t < 2; ++t) save(c->log.logs[t], fl::thread_log_bytes(lo.capacity));
      for (auto off : cs.lines) save(base + off, ferrite::persist::kCacheLine);
      const auto set = cr::images_for(cs, images, 13);
      out.exhaustive = set.exhaustive;
      for (const auto& img : set.images) {
        for (auto& [q, bytes] : saved) std::memcpy(q, bytes.data(), bytes.size());
        cr::install_image(cs, img, base);
        fl::recover_area(&c->log);
        ++out.images;
        const bool kept = c->b == 1 && c->b2 == 1 && c->x == 1 && c->y == 1;
        const std::uint64_t us = c->u[0] + c->u[1] + c->u[2] + c->u[3];
        const bool whole = us == 0 || us == 4;
        if (!kept) ++out.completed_undone;
        if (!whole) ++out.torn_in_flight;
        if ((!kept || !whole) && out.first.empty())
          out.first = img.how + ": b=" + std::to_string(c->b) + " b2=" + std::to_string(c->b2) +
                      " x=" + std::to_string(c->x) + " y=" + std::to_string(c->y) + " u=" + std::to_string(us) + "/4";
      }
      for (auto& [q, bytes] : saved) std::memcpy(q, bytes.data(), bytes.size());
      a.run([&] { lg.release(0, m); });
    }
  }
  cr::sim::set_model("abstract");
  return out;
}

struct Case {
  const char* model;
  fl::Instrumentation instr;
};

void print(const char* what, const Case& k, const Outcome& o, double seconds) {
  std::printf("[owner-prune] %s, %s instrumentation [%s]: %zu images (%s), %zu undo a completed region, %zu tear "
              "the region in flight, %.2f s%s%s\n",
              what, fl::instrumentation_name(k.instr), k.model, o.images, o.exhaustive ? "every one" : "sampled",
              o.completed_undone, o.torn_in_flight, seconds, o.first.empty() ? "" : "; first: ", o.first.c_str());
}

}  // namespace

// The fault switch (internal::kNoOwnerPruneJoin) removes the join from
// Logger::append: the same run then finds images that undo A1 and A2
// (measured: 4 000 sampled images, some with b = b2 = 1, x = y = 0: "strand:
// 6/59 stores persisted" — u[3]'s entry torn in slot 2, A1's store entry
// and the head as before the prune). With the join (the correct variant),
// none: the join makes the prune durable before u[3]'s entry, and few
// images remain.
TEST(OwnerPrune, UnderStrandTheOwnersJoinBeforeReusingAPrunedEndSlotExcludesAnImageThatUndoesCompletedRegions) {
  ASSERT_TRUE(kRegistered);
  const Case k{"strand", fl::Instrumentation::kStrand};
  for (const bool room : {true, false})
  for (const unsigned faults : {unsigned{fl::internal::kNoOwnerPruneJoin}, unsigned{fl::internal::kNoFaults}}) {
    const auto t0 = std::chrono::steady_clock::now();
    const Outcome o = run_scenario(k.model, k.instr, faults, 4000, room);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const bool broken = faults != 0;
    const std::string what = std::string(broken ? "without the owner's join" : "correct") +
                             (room ? ", pruned by make_room" : ", pruned by overflow");
    print(what.c_str(), k, o, s);
    ASSERT_TRUE(o.reached) << "R's last entry is not in A1's end slot: the scenario changed";
    EXPECT_EQ(o.reuses, 1u) << "u[3]'s entry, and only it, reuses an end slot pruned since the last join";
    EXPECT_EQ(o.torn_in_flight, 0u) << o.first;
    if (broken) {
      EXPECT_GT(o.images, 1000u);
      EXPECT_GT(o.completed_undone, 0u) << "without the join the strand model admits the image";
    } else {
      EXPECT_TRUE(o.exhaustive || o.images > 100u) << o.images << " images";
      EXPECT_EQ(o.completed_undone, 0u) << o.first;
    }
  }
}

// The same run under the other models, with the instrumentation written
// for each, and without the join (which only strand issues): the owner's
// own order points (ofence; pfence after its write-backs) order its prune
// before its next lap's entries. No image undoes a completed region.
TEST(OwnerPrune, UnderHopsHopsPlusAndTheWriteBackModelsTheOwnersPruneIsOrderedByItsOwnFences) {
  ASSERT_TRUE(kRegistered);
  const Case cases[] = {{"hops", fl::Instrumentation::kHops},
                        {"hops+", fl::Instrumentation::kHops},
                        {"x86", fl::Instrumentation::kX86},
                        {"abstract", fl::Instrumentation::kX86},
                        {"x86", fl::Instrumentation::kStrand}};
  for (const bool room : {true, false})
  for (const Case& k : cases) {
    const auto t0 = std::chrono::steady_clock::now();
    const Outcome o = run_scenario(k.model, k.instr, fl::internal::kNoOwnerPruneJoin, 1000, room);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    print(room ? "without the owner's join, pruned by make_room" : "without the owner's join, pruned by overflow", k, o,
          s);
    ASSERT_TRUE(o.reached) << k.model << ": the scenario changed";
    EXPECT_GT(o.images, 1u) << k.model;
    EXPECT_EQ(o.completed_undone, 0u) << k.model << ": " << o.first;
    EXPECT_EQ(o.torn_in_flight, 0u) << k.model << ": " << o.first;
  }
}

}  // namespace owner_prune_crash_test
