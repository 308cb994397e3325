// The heap's persistence invariant 1 (pmem/layout.h: a chunk map entry is
// durable before any block of that chunk is handed out), proven through the
// crash simulator and mutation testing.
//
// No durable structure in the tree needs invariant 1's psync: each writes a
// new block back and fences before it publishes a pointer to it, and that
// fence also orders the map entry's earlier write-back. The pool promises it
// anyway (a caller may publish a block whose contents it never needs), so a
// subject that does exactly that tests it: BlockLog publishes each new block
// with one store — the pointer and the appended value in one word — with no
// fence between the allocation and the store. A crash that persists the
// pointer but not the map entry leaves a durable pointer into a chunk the
// media calls free; the recovered heap hands it out again, and BlockLog
// notices (a post-recovery append answers -1).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ferrite/crash/campaign.h"
#include "ferrite/crash/mutate.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/layout.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"

namespace heap_crash_test {  // this file's names, apart in a unity build

namespace fc = ferrite::crash;
namespace fp = ferrite::pmem;
namespace ps = ferrite::persist;

namespace {

constexpr int kSlots = 64;
constexpr std::uint64_t kPtrMask = (std::uint64_t{1} << 48) - 1;

struct BlockLogRoot {
  static constexpr std::uint32_t kTypeTag = 0x7e57b10c;
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "test::BlockLog";
  // Slot i: 0 (empty), or the block's address | value << 48.
  std::atomic<std::uint64_t> slot[kSlots] = {};
};

void trace_block_log(fp::Pool&, BlockLogRoot* r, const std::function<void(void*)>& mark) {
  for (auto& s : r->slot) {
    const std::uint64_t w = s.load(std::memory_order_relaxed);
    if (w != 0) mark(reinterpret_cast<void*>(w & kPtrMask));
  }
}
const bool kBlockLogRegistered = fp::register_root_type<BlockLogRoot>(&trace_block_log);

// Each append takes a new heap block (one chunk, or a run of two) and
// publishes it with a single store + write-back + psync.
class BlockLog final : public fc::Subject {
 public:
  fc::Spec spec() const override { return fc::Spec::kLog; }
  bool detectable() const override { return false; }
  void create(fp::Pool& pool, int) override {
    pool_ = &pool;
    r_ = pool.create_root<BlockLogRoot>("blocks");
  }
  fc::Response apply(int, std::uint64_t, const fc::Op& o) override {
    int i = 0;
    while (i < kSlots && r_->slot[i].load(std::memory_order_relaxed) != 0) ++i;
    if (i == kSlots) throw std::logic_error("block log full");
    const std::size_t n = (i % 2 == 0) ? ferrite::pmem::layout::kChunkSize : 2 * ferrite::pmem::layout::kChunkSize;
    void* b = pool_->heap().alloc(n, 0);
    const auto a = reinterpret_cast<std::uint64_t>(b);
    for (int j = 0; j < i; ++j)
      if ((r_->slot[j].load(std::memory_order_relaxed) & kPtrMask) == a)
        return fc::Response::of(-1);  // a block a durable pointer names, handed out again
    // PERSIST: no fence since alloc(): the pool's invariant 1 alone keeps
    // the map entry from being lost while this pointer survives.
    r_->slot[i].store(a | (static_cast<std::uint64_t>(o.arg) << 48), std::memory_order_relaxed);
    ps::pwb(&r_->slot[i]);
    ps::psync();
    return fc::Response::of(i);
  }
  void recover(fp::Pool& pool, int) override {
    pool_ = &pool;
    r_ = pool.root<BlockLogRoot>("blocks");
  }
  fc::Response recover_op(int, std::uint64_t, const fc::Op&) override { throw std::logic_error("not detectable"); }
  std::vector<std::int64_t> observe() override {
    std::vector<std::int64_t> out;
    for (auto& s : r_->slot) {
      const std::uint64_t w = s.load();
      if (w == 0) break;
      out.push_back(static_cast<std::int64_t>(w >> 48));
    }
    return out;
  }
  fc::Op next_op(int, std::uint64_t&) override { return {fc::kAppend, ++n_, 0}; }

 private:
  fp::Pool* pool_ = nullptr;
  BlockLogRoot* r_ = nullptr;
  std::int64_t n_ = 0;
};

fc::SubjectInfo block_log() {
  fc::SubjectInfo info;
  info.structure = "block-log";
  info.variant = "correct";
  info.description = "blocks published with no fence after their allocation";
  info.make = [] { return std::unique_ptr<fc::Subject>(new BlockLog); };
  return info;
}

fc::CampaignConfig config(const std::string& model) {
  fc::CampaignConfig cfg;
  cfg.ops = 16;
  cfg.images = 4;
  cfg.post_ops = 4;
  cfg.pool_size = std::size_t{8} << 20;
  cfg.model = model;
  return cfg;
}

TEST(HeapCrash, ABlockPublishedWithNoFenceSurvivesEveryCrashUnderBothModels) {
  ASSERT_TRUE(kBlockLogRegistered);
  for (const char* model : {"abstract", "x86"}) {
    const auto r = fc::run_campaign(block_log(), config(model));
    ASSERT_TRUE(r.error.empty()) << model << ": " << r.error;
    EXPECT_GT(r.images_checked, 100u) << model;
    EXPECT_EQ(r.violations, 0u) << model;
    EXPECT_EQ(r.inconclusive, 0u) << model;
  }
}

// Mutation testing of the heap's allocation path: every persistence verb of
// take_chunks is caught (the map entry's write-back, the psync of invariant
// 1, and a run's tails-before-head pfence).
TEST(HeapCrash, EveryPersistenceVerbOfChunkAllocationIsNecessary) {
  const auto m = fc::run_mutation(block_log(), config("abstract"));
  ASSERT_TRUE(m.error.empty()) << m.error;
  std::string all;
  for (const auto& v : m.sites) all += "\n  " + v.site.id() + " " + v.site.function + " " + v.how;
  int in_take = 0;
  for (const auto& v : m.sites) {
    if (v.site.function.find("take_chunks") == std::string::npos) continue;
    ++in_take;
    EXPECT_TRUE(v.caught) << v.site.id() << " is not caught:" << all;
  }
  EXPECT_EQ(in_take, 4) << "take_chunks' tails pwb, pfence, head pwb and psync:" << all;
  fc::sites::set_suppressed({});
}

}  // namespace

}  // namespace heap_crash_test
