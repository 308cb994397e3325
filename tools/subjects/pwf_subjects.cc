// Crash-campaign adapters for the PWFcomb structures (include/ferrite/
// combining/pwf_*.h): pwfcomb-float, pwf-stack, pwf-queue, pwf-heap, each with
// its correct variant(s) and deliberately broken ones (pwf_fault bits).
//
// Restarts inside a run. With one thread, every kRestartEvery-th operation is
// preceded by a re-attach: the handle (all volatile state: Request array,
// watermark, free lists, the kNoIndexPersist variant's DRAM Index) is dropped
// and rebuilt from the persistent root, as after a restart at a quiescent
// point. In a correct run nothing is lost by it (everything a later operation
// needs is durable at that point); it is what exposes bugs that need a
// restart followed by more operations before the crash (the paper's Index
// scenario, §4). Several threads never re-attach (no quiescent point).
#include <bit>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ferrite/combining/pwf_atomic_float.h"
#include "ferrite/combining/pwf_heap.h"
#include "ferrite/combining/pwf_queue.h"
#include "ferrite/combining/pwf_stack.h"
#include "ferrite/crash/subject.h"
#include "ferrite/pmem/pool.h"

namespace {

namespace fc = ferrite::crash;
namespace cb = ferrite::combining;
using ferrite::pmem::Pool;

constexpr std::uint64_t kRestartEvery = 7;

std::uint64_t next_rand(std::uint64_t& s) {
  s += 0x9e3779b97f4a7c15ull;
  std::uint64_t z = s;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

fc::Response value_or_none(const std::optional<std::int64_t>& v) {
  return v ? fc::Response{true, *v} : fc::Response{false, 0};
}

// Common part: pool/thread bookkeeping, the single-thread restart schedule and
// unique values per thread.
template <class Handle>
class PwfSubject : public fc::Subject {
 public:
  bool detectable() const override { return true; }

  void create(Pool& pool, int threads) override {
    pool_ = &pool;
    threads_ = threads;
    h_ = make(pool, threads);
    next_.assign(static_cast<std::size_t>(threads), 0);
  }
  fc::Response apply(int tid, std::uint64_t seq, const fc::Op& op) override {
    if (threads_ == 1 && ++ops_ % kRestartEvery == 0) h_ = Handle::attach(*pool_, kName, threads_);
    return run(tid, seq, op);
  }
  void recover(Pool& pool, int threads) override {
    pool_ = &pool;
    threads_ = threads;
    h_.release();  // belongs to the pre-crash process image; never touched again
    h_ = Handle::attach(pool, kName, threads, /*recover_heap=*/true);
  }

 protected:
  static constexpr const char* kName = "pwf-subject";
  virtual std::unique_ptr<Handle> make(Pool& pool, int threads) = 0;
  virtual fc::Response run(int tid, std::uint64_t seq, const fc::Op& op) = 0;
  std::int64_t unique(int tid) {
    const auto n = ++next_[static_cast<std::size_t>(tid)];
    return static_cast<std::int64_t>((static_cast<std::uint64_t>(tid) + 1) << 32 | n);
  }

  Pool* pool_ = nullptr;
  int threads_ = 1;
  std::uint64_t ops_ = 0;
  std::unique_ptr<Handle> h_;
  std::vector<std::uint64_t> next_;
};

// ------------------------------------------------------------ pwfcomb-float
template <unsigned F>
class FloatSubject final : public PwfSubject<cb::PwfAtomicFloat<F>> {
  using H = cb::PwfAtomicFloat<F>;

 public:
  fc::Spec spec() const override { return fc::Spec::kRegister; }
  fc::Response recover_op(int tid, std::uint64_t seq, const fc::Op& op) override {
    if (op.kind == fc::kRead) return {true, bits(this->h_->recover_read(tid, seq))};
    return {true, bits(this->h_->recover_mul(tid, seq, std::bit_cast<double>(op.arg)))};
  }
  std::vector<std::int64_t> observe() override { return {bits(this->h_->read())}; }
  fc::Op next_op(int, std::uint64_t& rng) override {
    static constexpr double kFactors[] = {2.0, 0.5, 3.0, 0.25};
    const auto r = next_rand(rng);
    if (r % 10 == 0) return {fc::kRead, 0, 0};
    return {fc::kMul, std::bit_cast<std::int64_t>(kFactors[(r >> 8) % 4]), 0};
  }

 private:
  static std::int64_t bits(double d) { return std::bit_cast<std::int64_t>(d); }
  std::unique_ptr<H> make(Pool& pool, int threads) override { return H::create(pool, this->kName, threads); }
  fc::Response run(int tid, std::uint64_t seq, const fc::Op& op) override {
    if (op.kind == fc::kRead) return {true, bits(this->h_->read(tid, seq))};
    return {true, bits(this->h_->mul(tid, seq, std::bit_cast<double>(op.arg)))};
  }
};

// ------------------------------------------------------------ pwf-stack
template <bool E, bool R, unsigned F>
class StackSubject final : public PwfSubject<cb::PwfStack<E, R, F>> {
  using H = cb::PwfStack<E, R, F>;

 public:
  fc::Spec spec() const override { return fc::Spec::kStack; }
  fc::Response recover_op(int tid, std::uint64_t seq, const fc::Op& op) override {
    if (op.kind == fc::kPush) {
      this->h_->recover_push(tid, seq, op.arg);
      return {false, 0};
    }
    return value_or_none(this->h_->recover_pop(tid, seq));
  }
  std::vector<std::int64_t> observe() override { return this->h_->contents(); }
  fc::Op next_op(int tid, std::uint64_t& rng) override {
    if (next_rand(rng) % 2 == 0) return {fc::kPush, this->unique(tid), 0};
    return {fc::kPop, 0, 0};
  }

 private:
  std::unique_ptr<H> make(Pool& pool, int threads) override { return H::create(pool, this->kName, threads); }
  fc::Response run(int tid, std::uint64_t seq, const fc::Op& op) override {
    if (op.kind == fc::kPush) {
      this->h_->push(tid, seq, op.arg);
      return {false, 0};
    }
    return value_or_none(this->h_->pop(tid, seq));
  }
};

// ------------------------------------------------------------ pwf-queue
template <unsigned F>
class QueueSubject final : public PwfSubject<cb::PwfQueue<F>> {
  using H = cb::PwfQueue<F>;

 public:
  fc::Spec spec() const override { return fc::Spec::kQueue; }
  fc::Response recover_op(int tid, std::uint64_t seq, const fc::Op& op) override {
    if (op.kind == fc::kEnqueue) {
      this->h_->recover_enqueue(tid, seq, op.arg);
      return {false, 0};
    }
    return value_or_none(this->h_->recover_dequeue(tid, seq));
  }
  std::vector<std::int64_t> observe() override { return this->h_->contents(); }
  fc::Op next_op(int tid, std::uint64_t& rng) override {
    if (next_rand(rng) % 2 == 0) return {fc::kEnqueue, this->unique(tid), 0};
    return {fc::kDequeue, 0, 0};
  }

 private:
  std::unique_ptr<H> make(Pool& pool, int threads) override { return H::create(pool, this->kName, threads); }
  fc::Response run(int tid, std::uint64_t seq, const fc::Op& op) override {
    if (op.kind == fc::kEnqueue) {
      this->h_->enqueue(tid, seq, op.arg);
      return {false, 0};
    }
    return value_or_none(this->h_->dequeue(tid, seq));
  }
};

// ------------------------------------------------------------ pwf-heap
constexpr std::size_t kSubjectHeapCapacity = 512;  // > any run's inserts: never full

template <unsigned F>
class HeapSubject final : public PwfSubject<cb::PwfHeap<F>> {
  using H = cb::PwfHeap<F>;

 public:
  fc::Spec spec() const override { return fc::Spec::kPriorityQueue; }
  fc::Response recover_op(int tid, std::uint64_t seq, const fc::Op& op) override {
    if (op.kind == fc::kInsert) {
      this->h_->recover_insert(tid, seq, op.arg);
      return {false, 0};
    }
    if (op.kind == fc::kGetMin) return value_or_none(this->h_->recover_get_min(tid, seq));
    return value_or_none(this->h_->recover_delete_min(tid, seq));
  }
  std::vector<std::int64_t> observe() override { return this->h_->contents(); }
  fc::Op next_op(int tid, std::uint64_t& rng) override {
    const auto r = next_rand(rng);
    if (r % 8 == 0) return {fc::kGetMin, 0, 0};
    if (r % 2 == 0) {
      // Unique keys in random order: (random 20 bits, tid, counter).
      const auto n = ++this->next_[static_cast<std::size_t>(tid)];
      return {fc::kInsert, static_cast<std::int64_t>(((r >> 16) & 0xfffff) << 28 | static_cast<std::uint64_t>(tid) << 20 | n), 0};
    }
    return {fc::kDeleteMin, 0, 0};
  }

 private:
  std::unique_ptr<H> make(Pool& pool, int threads) override {
    return H::create(pool, this->kName, threads, kSubjectHeapCapacity);
  }
  fc::Response run(int tid, std::uint64_t seq, const fc::Op& op) override {
    if (op.kind == fc::kInsert) {
      if (!this->h_->insert(tid, seq, op.arg))
        throw std::logic_error("pwf-heap subject: heap full (the workload must stay below capacity)");
      return {false, 0};
    }
    if (op.kind == fc::kGetMin) return value_or_none(this->h_->get_min(tid, seq));
    return value_or_none(this->h_->delete_min(tid, seq));
  }
};

template <class S>
std::function<std::unique_ptr<fc::Subject>()> make() {
  return [] { return std::unique_ptr<fc::Subject>(new S()); };
}

namespace pf = cb::pwf_fault;
using StackCorrect = StackSubject<true, true, pf::kNone>;
using StackNoElim = StackSubject<false, true, pf::kNone>;
using StackNoRec = StackSubject<true, false, pf::kNone>;
using StackNoPfence = StackSubject<true, true, pf::kNoPfenceRecord>;
using StackNoHelperPwb = StackSubject<true, true, pf::kNoHelperPwbS>;

}  // namespace

FERRITE_REGISTER_CRASH_SUBJECT("pwfcomb-float", "correct", false, "AtomicFloat on PWFcomb (Alg. 3-4)",
                               make<FloatSubject<pf::kNone>>());
FERRITE_REGISTER_CRASH_SUBJECT("pwfcomb-float", "no-helper-pwb", true,
                               "served threads return without making S durable (Alg. 4 l.44-46 removed)",
                               make<FloatSubject<pf::kNoHelperPwbS>>());
FERRITE_REGISTER_CRASH_SUBJECT("pwfcomb-float", "no-pfence", true,
                               "no pfence between the StateRec's pwb and the SC on S (Alg. 4 l.29 removed)",
                               make<FloatSubject<pf::kNoPfenceRecord>>());
FERRITE_REGISTER_CRASH_SUBJECT("pwfcomb-float", "no-index", true,
                               "Index[p] kept in DRAM, not persisted with the StateRec (Alg. 4 l.27-28)",
                               make<FloatSubject<pf::kNoIndexPersist>>());

FERRITE_REGISTER_CRASH_SUBJECT("pwf-stack", "correct", false,
                               "PWFstack: elimination + validated node recycling",
                               make<StackCorrect>());
FERRITE_REGISTER_CRASH_SUBJECT("pwf-stack", "correct-no-elim", false, "PWFstack without elimination",
                               make<StackNoElim>());
FERRITE_REGISTER_CRASH_SUBJECT("pwf-stack", "correct-no-rec", false, "PWFstack without node recycling",
                               make<StackNoRec>());
FERRITE_REGISTER_CRASH_SUBJECT("pwf-stack", "no-pfence", true,
                               "no pfence between the StateRec's (and nodes') pwb and the SC (Alg. 4 l.29)",
                               make<StackNoPfence>());
FERRITE_REGISTER_CRASH_SUBJECT("pwf-stack", "no-helper-pwb", true,
                               "served threads return without making S durable (Alg. 4 l.44-46 removed)",
                               make<StackNoHelperPwb>());

FERRITE_REGISTER_CRASH_SUBJECT("pwf-queue", "correct", false, "PWFqueue: two PWFcomb instances, two-part list",
                               make<QueueSubject<pf::kNone>>());
FERRITE_REGISTER_CRASH_SUBJECT("pwf-queue", "no-connect-pwb", true,
                               "the enqueuer that links the two parts does not persist tail->next",
                               make<QueueSubject<pf::kNoConnectPwb>>());
FERRITE_REGISTER_CRASH_SUBJECT("pwf-queue", "no-helper-pwb", true,
                               "served threads return without making S durable (Alg. 4 l.44-46 removed)",
                               make<QueueSubject<pf::kNoHelperPwbS>>());

FERRITE_REGISTER_CRASH_SUBJECT("pwf-heap", "correct", false, "bounded min-heap on PWFcomb (capacity 512)",
                               make<HeapSubject<pf::kNone>>());
FERRITE_REGISTER_CRASH_SUBJECT("pwf-heap", "no-index", true,
                               "Index[p] kept in DRAM, not persisted with the StateRec (Alg. 4 l.27-28)",
                               make<HeapSubject<pf::kNoIndexPersist>>());
FERRITE_REGISTER_CRASH_SUBJECT("pwf-heap", "no-pfence", true,
                               "no pfence between the StateRec's pwb and the SC on S (Alg. 4 l.29 removed)",
                               make<HeapSubject<pf::kNoPfenceRecord>>());
