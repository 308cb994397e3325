// adapters/oplog_subject.cc — a detectable structure driven through the
// OpLog (ferrite/detectable.h), as an application runs it: crash subjects
// "oplog-<structure>" (crash campaigns only).
//
// The plain detectable subjects are told, after a crash, which operation
// each thread was running (the campaign's history knows). An application
// knows only what its OpLog made durable: this subject begins every
// operation in an OpLog in the same pool and, after a crash, asks the OpLog
// which operation to recover:
//   * the log's record has the operation's seq: it must carry the same
//     operation and arguments (a torn or unordered begin() that pairs a seq
//     with another operation's arguments is reported), and the structure's
//     recover() answers it;
//   * the log's seq is one behind: begin() was not durable, so the
//     operation was never invoked — the application runs it now (begin and
//     apply), which is what the campaign's detectability check expects;
//   * anything else is a violation (recovery throws).
// This puts OpLog::begin's write-backs and fences under the simulator (and
// under `crashtest --mutate`).
//
// Thread safety: as the wrapped subject (one thread per tid).
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "ferrite/crash/subject.h"
#include "ferrite/detectable.h"

namespace adapter_oplog_subject {  // this file's names, apart in a unity build

namespace {

namespace fc = ferrite::crash;

class OpLogSubject final : public fc::Subject {
 public:
  explicit OpLogSubject(std::unique_ptr<fc::Subject> inner) : inner_(std::move(inner)) {}

  fc::Spec spec() const override { return inner_->spec(); }
  bool detectable() const override { return true; }
  void create(ferrite::pmem::Pool& pool, int threads) override {
    inner_->create(pool, threads);
    log_.emplace(ferrite::OpLog::create(pool, kLog, threads));
  }
  fc::Response apply(int tid, std::uint64_t seq, const fc::Op& o) override {
    const std::uint64_t s = log_->begin(tid, o);
    if (s != seq)
      throw std::logic_error("oplog subject: the OpLog's next seq is " + std::to_string(s) + ", the operation's " +
                             std::to_string(seq));
    return inner_->apply(tid, seq, o);
  }
  void recover(ferrite::pmem::Pool& pool, int threads) override {
    inner_->recover(pool, threads);
    // A crash inside create() may leave the structure without its log.
    log_.emplace(pool.has_root(kLog) ? ferrite::OpLog::attach(pool, kLog, threads)
                                     : ferrite::OpLog::create(pool, kLog, threads));
  }
  fc::Response recover_op(int tid, std::uint64_t seq, const fc::Op& o) override {
    const std::uint64_t last = log_->last_seq(tid);
    if (last + 1 == seq) return apply(tid, seq, o);  // begin() was not durable: never invoked
    if (last != seq)
      throw std::runtime_error("oplog subject: thread " + std::to_string(tid) + " recovers op #" +
                               std::to_string(seq) + " but its OpLog's latest record is #" + std::to_string(last));
    const auto r = log_->pending(tid);
    if (!r || r->op != static_cast<std::uint32_t>(o.kind) || r->arg != o.arg || r->arg2 != o.arg2)
      throw std::runtime_error("oplog subject: thread " + std::to_string(tid) + "'s OpLog record #" +
                               std::to_string(seq) + " does not hold the operation that was begun (op " +
                               std::to_string(r ? r->op : 0) + ", arg " + std::to_string(r ? r->arg : 0) + ")");
    return inner_->recover_op(tid, seq, o);
  }
  std::vector<std::int64_t> observe() override { return inner_->observe(); }
  fc::Op next_op(int tid, std::uint64_t& rng) override { return inner_->next_op(tid, rng); }
  bool has_structure(ferrite::pmem::Pool& pool) override { return inner_->has_structure(pool); }

 private:
  static constexpr const char* kLog = "oplog";
  std::unique_ptr<fc::Subject> inner_;
  std::optional<ferrite::OpLog> log_;
};

bool register_oplog(const char* structure) {
  fc::SubjectInfo info;
  info.structure = std::string("oplog-") + structure;
  info.variant = "correct";
  info.expect_violation = false;
  info.description = std::string(structure) +
                     " driven through an OpLog as an application would: begin() before each operation, recovery "
                     "asks the log which operation to recover";
  info.family = "oplog";
  info.ferrite = true;
  const std::string inner = structure;
  info.make = [inner] {
    const auto* s = fc::find_subject(inner, "correct");
    if (s == nullptr) throw std::logic_error("oplog subject: no crash subject " + inner + "/correct");
    return std::unique_ptr<fc::Subject>(new OpLogSubject(s->make()));
  };
  return fc::register_subject(std::move(info));
}

const bool kRegistered = register_oplog("pb-queue") && register_oplog("pwf-stack");

}  // namespace

}  // namespace adapter_oplog_subject
