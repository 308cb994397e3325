// Crash-campaign adapters of the lock-based persistent competitors:
// lock-persist and fc-inplace over the in-place sequential objects
// (include/ferrite/baselines/seq_objects.h): stack, queue, heap
// (priority queue), AtomicFloat (register). Durably linearizable, not
// detectable. Each has "correct" plus deliberately broken variants.
#include <bit>
#include <functional>
#include <cstdint>
#include <memory>
#include <vector>

#include "baseline_subjects_common.h"
#include "ferrite/baselines/fc_inplace.h"
#include "ferrite/baselines/lock_persist.h"
#include "ferrite/baselines/seq_objects.h"

namespace {

namespace fb = ferrite::baselines;
namespace cr = ferrite::crash;
using ferrite::pmem::Pool;
using fb::subjects::factory;

constexpr const char* kRoot = "baseline-seq";

fb::SeqParams params(int threads) { return {threads, 8, 4096}; }

// Wraps LockPersist / FcInplace into the ContainerSubject Impl shape.
template <class Obj, cr::Spec S, bool kFc>
struct Container {
  static constexpr cr::Spec kSpec = S;
  static constexpr bool kDetectable = false;
  std::unique_ptr<Obj> o;
  void create(Pool& p, int t) { o = std::make_unique<Obj>(p, kRoot, params(t)); }
  void recover(Pool& p, int t) {
    fb::subjects::abandon(o);
    o = std::make_unique<Obj>(p, kRoot, params(t));
  }
  bool call(int tid, std::uint64_t seq, bool ins, std::int64_t arg, std::int64_t* out) {
    if constexpr (kFc) return o->apply(tid, seq, ins, arg, out);
    else return o->apply(tid, ins, arg, out);
  }
  void insert(int tid, std::uint64_t seq, std::int64_t v) {
    std::int64_t ignored;
    call(tid, seq, true, v, &ignored);
  }
  bool remove(int tid, std::uint64_t seq, std::int64_t* v) { return call(tid, seq, false, 0, v); }
  std::vector<std::int64_t> observe() { return o->snapshot(); }
};

// AtomicFloat register: mul(k) -> old bits, read -> bits.
template <class Obj, bool kFc>
class FloatSubject final : public cr::Subject {
 public:
  cr::Spec spec() const override { return cr::Spec::kRegister; }
  bool detectable() const override { return false; }
  void create(Pool& p, int t) override { o_ = std::make_unique<Obj>(p, kRoot, params(t)); }
  cr::Response apply(int tid, std::uint64_t seq, const cr::Op& op) override {
    std::int64_t v = 0;
    const bool ins = op.kind == cr::kMul;
    if constexpr (kFc) o_->apply(tid, seq, ins, op.arg, &v);
    else o_->apply(tid, ins, op.arg, &v);
    return {true, v};
  }
  void recover(Pool& p, int t) override {
    fb::subjects::abandon(o_);
    o_ = std::make_unique<Obj>(p, kRoot, params(t));
  }
  cr::Response recover_op(int, std::uint64_t, const cr::Op&) override { return {}; }
  std::vector<std::int64_t> observe() override { return o_->snapshot(); }
  cr::Op next_op(int, std::uint64_t& rng) override {
    static constexpr double kFactors[] = {2.0, 0.5, 3.0, 0.25, 1.5};
    const auto r = fb::subjects::next_rand(rng);
    if (r % 8 == 0) return {cr::kRead, 0, 0};
    return {cr::kMul, std::bit_cast<std::int64_t>(kFactors[r % 5]), 0};
  }

 private:
  std::unique_ptr<Obj> o_;
};

template <class Obj, bool kFc>
std::function<std::unique_ptr<cr::Subject>()> float_factory() {
  return [] { return std::unique_ptr<cr::Subject>(new FloatSubject<Obj, kFc>()); };
}

template <class Seq, unsigned F = fb::kNoFaults>
using Lock = fb::LockPersist<Seq, F>;
template <class Seq>
using Fc = fb::FcInplace<Seq>;

template <class Seq, cr::Spec S, unsigned F = fb::kNoFaults>
using LockC = Container<Lock<Seq, F>, S, false>;
template <class Seq, cr::Spec S>
using FcC = Container<Fc<Seq>, S, true>;

constexpr auto kSt = cr::Spec::kStack;
constexpr auto kQu = cr::Spec::kQueue;
constexpr auto kPq = cr::Spec::kPriorityQueue;

}  // namespace

// lock-persist
FERRITE_REGISTER_CRASH_SUBJECT("lock-persist-stack", "correct", false, "mutex + in-place persistent stack",
                               (factory<LockC<fb::SeqStack<>, kSt>>()));
FERRITE_REGISTER_CRASH_SUBJECT("lock-persist-stack", "no-node-pwb", true, "pushed nodes not written back",
                               (factory<LockC<fb::SeqStack<fb::kNoNodePwb>, kSt>>()));
FERRITE_REGISTER_CRASH_SUBJECT("lock-persist-stack", "no-psync", true, "unlock before psync",
                               (factory<LockC<fb::SeqStack<>, kSt, fb::kNoFinalPsync>>()));
FERRITE_REGISTER_CRASH_SUBJECT("lock-persist-queue", "correct", false, "mutex + in-place persistent queue",
                               (factory<LockC<fb::SeqQueue<>, kQu>>()));
FERRITE_REGISTER_CRASH_SUBJECT("lock-persist-queue", "no-node-pwb", true, "enqueued nodes not written back",
                               (factory<LockC<fb::SeqQueue<fb::kNoNodePwb>, kQu>>()));
FERRITE_REGISTER_CRASH_SUBJECT("lock-persist-heap", "correct", false, "mutex + in-place heap with redo log",
                               (factory<LockC<fb::SeqHeap<>, kPq>>()));
FERRITE_REGISTER_CRASH_SUBJECT("lock-persist-heap", "no-log-pwb", true, "redo log entries not written back",
                               (factory<LockC<fb::SeqHeap<fb::kNoLogPwb>, kPq>>()));
FERRITE_REGISTER_CRASH_SUBJECT("lock-persist-float", "correct", false, "mutex + in-place persistent float",
                               (float_factory<Lock<fb::SeqFloat<>>, false>()));
FERRITE_REGISTER_CRASH_SUBJECT("lock-persist-float", "no-pwb", true, "the new value is never written back",
                               (float_factory<Lock<fb::SeqFloat<fb::kNoLinkPwb>>, false>()));
// fc-inplace
FERRITE_REGISTER_CRASH_SUBJECT("fc-inplace-stack", "correct", false, "flat combining, in-place stack",
                               (factory<FcC<fb::SeqStack<>, kSt>>()));
FERRITE_REGISTER_CRASH_SUBJECT("fc-inplace-stack", "no-node-pwb", true, "pushed nodes not written back",
                               (factory<FcC<fb::SeqStack<fb::kNoNodePwb>, kSt>>()));
FERRITE_REGISTER_CRASH_SUBJECT("fc-inplace-queue", "correct", false, "flat combining, in-place queue",
                               (factory<FcC<fb::SeqQueue<>, kQu>>()));
FERRITE_REGISTER_CRASH_SUBJECT("fc-inplace-queue", "no-node-pwb", true, "enqueued nodes not written back",
                               (factory<FcC<fb::SeqQueue<fb::kNoNodePwb>, kQu>>()));
FERRITE_REGISTER_CRASH_SUBJECT("fc-inplace-heap", "correct", false, "flat combining, in-place heap (redo log)",
                               (factory<FcC<fb::SeqHeap<>, kPq>>()));
FERRITE_REGISTER_CRASH_SUBJECT("fc-inplace-heap", "no-log-pwb", true, "redo log entries not written back",
                               (factory<FcC<fb::SeqHeap<fb::kNoLogPwb>, kPq>>()));
FERRITE_REGISTER_CRASH_SUBJECT("fc-inplace-float", "correct", false, "flat combining, in-place float",
                               (float_factory<Fc<fb::SeqFloat<>>, true>()));
FERRITE_REGISTER_CRASH_SUBJECT("fc-inplace-float", "no-pwb", true, "the new value is never written back",
                               (float_factory<Fc<fb::SeqFloat<fb::kNoLinkPwb>>, true>()));
