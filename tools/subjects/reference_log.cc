// Crash-campaign adapter of the reference structure (examples/plog.h): the
// worked example of docs/crash.md. Registers "reference-log" with a correct
// variant and three deliberately broken ones.
#include <functional>
#include <memory>
#include <vector>

#include "ferrite/crash/subject.h"
#include "ferrite/examples/plog.h"
#include "ferrite/pmem/pool.h"

namespace {

using ferrite::examples::PLog;
namespace fc = ferrite::crash;

class ReferenceLogSubject final : public fc::Subject {
 public:
  explicit ReferenceLogSubject(PLog::Flaw flaw) : flaw_(flaw) {}

  fc::Spec spec() const override { return fc::Spec::kLog; }
  bool detectable() const override { return true; }

  void create(ferrite::pmem::Pool& pool, int threads) override {
    log_ = pool.create_root<PLog>("reference-log");
    next_.assign(static_cast<std::size_t>(threads), 0);
  }

  fc::Response apply(int tid, std::uint64_t seq, const fc::Op& op) override {
    return {true, static_cast<std::int64_t>(log_->append(tid, seq, op.arg, flaw_))};
  }

  void recover(ferrite::pmem::Pool& pool, int threads) override {
    log_ = pool.root<PLog>("reference-log");
    log_->recover();
    // The log is a single root block (roots are always kept): nothing else
    // is live.
    pool.heap().recover_by_trace([](const std::function<void(void*)>&) {});
    next_.assign(static_cast<std::size_t>(threads), 0);
  }

  fc::Response recover_op(int tid, std::uint64_t seq, const fc::Op& op) override {
    return {true, static_cast<std::int64_t>(log_->recover_append(tid, seq, op.arg, flaw_))};
  }

  std::vector<std::int64_t> observe() override { return log_->entries(); }

  fc::Op next_op(int tid, std::uint64_t&) override {
    // Unique nonzero values: (tid + 1) << 32 | per-thread counter.
    const auto n = ++next_[static_cast<std::size_t>(tid)];
    return {fc::kAppend, static_cast<std::int64_t>((static_cast<std::uint64_t>(tid) + 1) << 32 | n), 0};
  }

 private:
  PLog::Flaw flaw_;
  PLog* log_ = nullptr;
  std::vector<std::uint64_t> next_;
};

std::function<std::unique_ptr<fc::Subject>()> make(PLog::Flaw f) {
  return [f] { return std::unique_ptr<fc::Subject>(new ReferenceLogSubject(f)); };
}

}  // namespace

FERRITE_REGISTER_CRASH_SUBJECT("reference-log", "correct", false,
                               "persistent append log: record, pwb, pfence, count, pwb, psync",
                               make(PLog::Flaw::kNone));
FERRITE_REGISTER_CRASH_SUBJECT("reference-log", "no-pfence", true,
                               "no pfence between the record's pwb and the count's store",
                               make(PLog::Flaw::kNoPfence));
FERRITE_REGISTER_CRASH_SUBJECT("reference-log", "no-psync", true,
                               "append returns before the count is durable", make(PLog::Flaw::kNoPsync));
FERRITE_REGISTER_CRASH_SUBJECT("reference-log", "no-record-pwb", true,
                               "the record is never written back", make(PLog::Flaw::kNoRecordPwb));
