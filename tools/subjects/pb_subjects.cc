// Crash-campaign adapters for the PBcomb structures (include/ferrite/
// combining/{atomic_float,pb_stack,pb_queue,pb_heap}.h): pbcomb-float,
// pb-stack, pb-queue, pb-heap, each "correct" plus the deliberately broken
// variants (a Fault bit removes one persistence step) that campaigns must
// catch. All are detectable: recover_op calls the structure's recover().
#include <bit>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include "ferrite/combining/atomic_float.h"
#include "ferrite/combining/pb_heap.h"
#include "ferrite/combining/pb_queue.h"
#include "ferrite/combining/pb_stack.h"
#include "ferrite/crash/subject.h"
#include "ferrite/pmem/pool.h"

namespace {

namespace cr = ferrite::crash;
namespace fc = ferrite::combining;
using ferrite::pmem::Pool;

constexpr const char* kRootName = "pb-subject";

fc::OpCode to_code(std::int32_t kind) {
  switch (kind) {
    case cr::kMul: return fc::OpCode::kMul;
    case cr::kRead: return fc::OpCode::kRead;
    case cr::kPush: return fc::OpCode::kPush;
    case cr::kPop: return fc::OpCode::kPop;
    case cr::kEnqueue: return fc::OpCode::kEnqueue;
    case cr::kDequeue: return fc::OpCode::kDequeue;
    case cr::kInsert: return fc::OpCode::kInsert;
    case cr::kDeleteMin: return fc::OpCode::kDeleteMin;
    case cr::kGetMin: return fc::OpCode::kGetMin;
    default: throw std::invalid_argument("pb subject: unsupported operation kind");
  }
}

// Pops/dequeues/delete-mins answer values; pushes/inserts answer acks even
// when an acked word happens to equal a value (0).
cr::Response container_response(std::int32_t kind, std::uint64_t w) {
  if (kind == cr::kPush || kind == cr::kEnqueue || kind == cr::kInsert) return {false, 0};
  if (!fc::is_value_word(w)) return {false, 0};
  return {true, fc::word_value(w)};
}

// Unique nonzero values: (tid + 1) << 32 | per-thread counter.
struct ValueGen {
  std::vector<std::uint64_t> next;
  void reset(int threads) { next.assign(static_cast<std::size_t>(threads), 0); }
  std::int64_t operator()(int tid) {
    const auto n = ++next[static_cast<std::size_t>(tid)];
    return static_cast<std::int64_t>((static_cast<std::uint64_t>(tid) + 1) << 32 | n);
  }
};

inline std::uint64_t step(std::uint64_t& rng) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return rng >> 33;
}

// ------------------------------------------------------------ AtomicFloat
template <unsigned F>
class FloatSubject final : public cr::Subject {
 public:
  cr::Spec spec() const override { return cr::Spec::kRegister; }
  bool detectable() const override { return true; }
  void create(Pool& pool, int threads) override { f_ = fc::PBAtomicFloat<F>::create(pool, kRootName, threads); }
  cr::Response apply(int tid, std::uint64_t seq, const cr::Op& op) override {
    const auto w = f_->comb().apply(tid, seq, to_code(op.kind), op.arg);
    return {true, static_cast<std::int64_t>(w)};
  }
  void recover(Pool& pool, int threads) override {
    f_ = fc::PBAtomicFloat<F>::attach(pool, kRootName, threads, true);
  }
  cr::Response recover_op(int tid, std::uint64_t seq, const cr::Op& op) override {
    return {true, static_cast<std::int64_t>(f_->comb().recover(tid, seq, to_code(op.kind), op.arg))};
  }
  std::vector<std::int64_t> observe() override { return {std::bit_cast<std::int64_t>(f_->value())}; }
  cr::Op next_op(int, std::uint64_t& rng) override {
    static constexpr double kFactors[] = {2.0, 0.5, 3.0, 0.25, 1.5};
    const auto r = step(rng);
    if (r % 8 == 0) return {cr::kRead, 0, 0};
    return {cr::kMul, std::bit_cast<std::int64_t>(kFactors[r % 5]), 0};
  }

 private:
  std::unique_ptr<fc::PBAtomicFloat<F>> f_;
};

// ------------------------------------------------------------------ stack
template <unsigned F>
class StackSubject final : public cr::Subject {
 public:
  explicit StackSubject(fc::PBStackOptions o) : opts_(o) {}
  cr::Spec spec() const override { return cr::Spec::kStack; }
  bool detectable() const override { return true; }
  void create(Pool& pool, int threads) override {
    s_ = fc::PBStack<F>::create(pool, kRootName, threads, opts_);
    gen_.reset(threads);
  }
  cr::Response apply(int tid, std::uint64_t seq, const cr::Op& op) override {
    return container_response(op.kind, s_->comb().apply(tid, seq, to_code(op.kind), op.arg));
  }
  void recover(Pool& pool, int threads) override {
    s_ = fc::PBStack<F>::attach(pool, kRootName, threads, opts_, true);
  }
  cr::Response recover_op(int tid, std::uint64_t seq, const cr::Op& op) override {
    return container_response(op.kind, s_->recover(tid, seq, to_code(op.kind), op.arg));
  }
  std::vector<std::int64_t> observe() override { return s_->values(); }
  cr::Op next_op(int tid, std::uint64_t& rng) override {
    if (step(rng) % 2 == 0) return {cr::kPush, gen_(tid), 0};
    return {cr::kPop, 0, 0};
  }

 private:
  fc::PBStackOptions opts_;
  std::unique_ptr<fc::PBStack<F>> s_;
  ValueGen gen_;
};

// ------------------------------------------------------------------ queue
template <unsigned F>
class QueueSubject final : public cr::Subject {
 public:
  cr::Spec spec() const override { return cr::Spec::kQueue; }
  bool detectable() const override { return true; }
  void create(Pool& pool, int threads) override {
    q_ = fc::PBQueue<F>::create(pool, kRootName, threads);
    gen_.reset(threads);
  }
  cr::Response apply(int tid, std::uint64_t seq, const cr::Op& op) override {
    if (op.kind == cr::kEnqueue) {
      q_->enqueue(tid, seq, op.arg);
      return {false, 0};
    }
    auto v = q_->dequeue(tid, seq);
    return v ? cr::Response{true, *v} : cr::Response{false, 0};
  }
  void recover(Pool& pool, int threads) override { q_ = fc::PBQueue<F>::attach(pool, kRootName, threads, true); }
  cr::Response recover_op(int tid, std::uint64_t seq, const cr::Op& op) override {
    return container_response(op.kind, q_->recover(tid, seq, to_code(op.kind), op.arg));
  }
  std::vector<std::int64_t> observe() override { return q_->values(); }
  cr::Op next_op(int tid, std::uint64_t& rng) override {
    if (step(rng) % 2 == 0) return {cr::kEnqueue, gen_(tid), 0};
    return {cr::kDequeue, 0, 0};
  }

 private:
  std::unique_ptr<fc::PBQueue<F>> q_;
  ValueGen gen_;
};

// ------------------------------------------------------------------- heap
template <unsigned F>
class HeapSubject final : public cr::Subject {
 public:
  static constexpr int kCapacity = 1024;  // never full in a campaign
  cr::Spec spec() const override { return cr::Spec::kPriorityQueue; }
  bool detectable() const override { return true; }
  void create(Pool& pool, int threads) override {
    h_ = fc::PBHeap<F>::create(pool, kRootName, threads, kCapacity);
    gen_.reset(threads);
  }
  cr::Response apply(int tid, std::uint64_t seq, const cr::Op& op) override {
    return container_response(op.kind, h_->comb().apply(tid, seq, to_code(op.kind), op.arg));
  }
  void recover(Pool& pool, int threads) override { h_ = fc::PBHeap<F>::attach(pool, kRootName, threads, true); }
  cr::Response recover_op(int tid, std::uint64_t seq, const cr::Op& op) override {
    return container_response(op.kind, h_->recover(tid, seq, to_code(op.kind), op.arg));
  }
  std::vector<std::int64_t> observe() override { return h_->sorted(); }
  cr::Op next_op(int tid, std::uint64_t& rng) override {
    const auto r = step(rng) % 20;
    // Keys: unique, but not in insertion order (heap order gets exercised).
    if (r < 10) {
      const auto v = gen_(tid);
      const std::int64_t key = (v & 0xffffffff) * 7919 % 1000003 * 256 + (v >> 32);
      return {cr::kInsert, key, 0};
    }
    if (r < 17) return {cr::kDeleteMin, 0, 0};
    return {cr::kGetMin, 0, 0};
  }

 private:
  std::unique_ptr<fc::PBHeap<F>> h_;
  ValueGen gen_;
};

template <class S, class... A>
std::function<std::unique_ptr<cr::Subject>()> make(A... a) {
  return [=] { return std::unique_ptr<cr::Subject>(new S(a...)); };
}

constexpr fc::PBStackOptions kStackDefault{true, true};
constexpr fc::PBStackOptions kStackNoElim{false, true};
constexpr fc::PBStackOptions kStackNoRec{true, false};

}  // namespace

// ---------------------------------------------------------------- pbcomb-float
FERRITE_REGISTER_CRASH_SUBJECT("pbcomb-float", "correct", false,
                               "AtomicFloat on PBcomb (Alg. 1-2)", make<FloatSubject<0>>());
FERRITE_REGISTER_CRASH_SUBJECT("pbcomb-float", "no-pfence", true,
                               "PBcomb without the pfence between pwb(StateRec) and pwb(MIndex) (Alg. 2 l.23)",
                               make<FloatSubject<fc::kNoPfenceBetweenPwbs>>());
FERRITE_REGISTER_CRASH_SUBJECT("pbcomb-float", "no-psync", true,
                               "PBcomb without the psync before unlock (Alg. 2 l.27)",
                               make<FloatSubject<fc::kNoPsyncBeforeUnlock>>());
// ---------------------------------------------------------------- pb-stack
FERRITE_REGISTER_CRASH_SUBJECT("pb-stack", "correct", false,
                               "PBstack: elimination + recycling stack", make<StackSubject<0>>(kStackDefault));
FERRITE_REGISTER_CRASH_SUBJECT("pb-stack", "correct-no-elim", false, "PBstack without elimination",
                               make<StackSubject<0>>(kStackNoElim));
FERRITE_REGISTER_CRASH_SUBJECT("pb-stack", "correct-no-rec", false,
                               "PBstack without the recycling stack (popped nodes freed to the heap)",
                               make<StackSubject<0>>(kStackNoRec));
FERRITE_REGISTER_CRASH_SUBJECT("pb-stack", "no-node-pwb", true,
                               "PBstack: new nodes are not written back before the state",
                               make<StackSubject<fc::kNoNodePwb>>(kStackNoElim));
FERRITE_REGISTER_CRASH_SUBJECT("pb-stack", "no-psync", true,
                               "PBstack: no psync before unlock (Alg. 2 l.27)",
                               make<StackSubject<fc::kNoPsyncBeforeUnlock>>(kStackDefault));
// ---------------------------------------------------------------- pb-queue
FERRITE_REGISTER_CRASH_SUBJECT("pb-queue", "correct", false, "PBqueue (Alg. 5-7) with per-thread free lists",
                               make<QueueSubject<0>>());
FERRITE_REGISTER_CRASH_SUBJECT("pb-queue", "no-topersist", true,
                               "PBqueue without the toPersist write-backs (Alg. 5 l.24)",
                               make<QueueSubject<fc::kNoToPersist>>());
FERRITE_REGISTER_CRASH_SUBJECT("pb-queue", "no-oldtail", true,
                               "PBqueue: dequeuers ignore oldTail and may pass the unpersisted tail (Alg. 6 l.57)",
                               make<QueueSubject<fc::kNoOldTail>>());
FERRITE_REGISTER_CRASH_SUBJECT("pb-queue", "no-pfence", true,
                               "PBqueue without the pfence before the index switch (Alg. 5 l.26 / Alg. 6 l.63)",
                               make<QueueSubject<fc::kNoPfenceBetweenPwbs>>());
// ---------------------------------------------------------------- pb-heap
FERRITE_REGISTER_CRASH_SUBJECT("pb-heap", "correct", false,
                               "PBheap: bounded min-heap in the StateRec (used prefix persisted)",
                               make<HeapSubject<0>>());
FERRITE_REGISTER_CRASH_SUBJECT("pb-heap", "no-psync", true, "PBheap without the psync before unlock",
                               make<HeapSubject<fc::kNoPsyncBeforeUnlock>>());
FERRITE_REGISTER_CRASH_SUBJECT("pb-heap", "no-pfence", true, "PBheap without the pfence between the pwbs",
                               make<HeapSubject<fc::kNoPfenceBetweenPwbs>>());
