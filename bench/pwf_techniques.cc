// Bench registrations of the PWFcomb structures (include/ferrite/combining/
// pwf_*.h): pwfcomb-float (atomic-float), pwf-stack, pwf-stack-no-elim,
// pwf-stack-no-rec, pwf-queue, pwf-heap. Each reports combining_degree()
// (requests served per successful combining round). The harness's per-thread
// seq (from 1, +1 per operation) is passed through: single-instance objects
// use its parity as the activate bit, PWFqueue its full value. The detectable
// op-record helper is not used, so its cost is excluded, as in the paper.
// pwf-stack-no-rec never reuses popped nodes (they leak until a restart's
// heap recovery); pwf-queue never recycles nodes (the paper leaves PWFqueue
// garbage collection as future work): long runs need a large pool.
#include <cstdint>
#include <memory>

#include "ferrite/combining/pwf_atomic_float.h"
#include "ferrite/combining/pwf_heap.h"
#include "ferrite/combining/pwf_queue.h"
#include "ferrite/combining/pwf_stack.h"
#include "ferrite/pmem/pool.h"
#include "technique.h"

namespace {

namespace fb = ferrite::bench;
namespace fc = ferrite::combining;
using ferrite::pmem::Pool;

constexpr const char* kName = "bench";

int slots(const fb::RunParams& p) { return p.max_threads > p.threads ? p.max_threads : p.threads; }

class FloatInstance final : public fb::Instance {
 public:
  FloatInstance(const fb::RunParams& p, Pool* pool) : f_(fc::PwfAtomicFloat<>::create(*pool, kName, slots(p))) {}
  void insert(int tid, std::uint64_t seq, std::int64_t v) override {
    f_->mul(tid, seq, fb::atomic_float_factor(v));
  }
  bool remove(int, std::uint64_t, std::int64_t*) override { return false; }
  double combining_degree() const override { return f_->combining_degree(); }

 private:
  std::unique_ptr<fc::PwfAtomicFloat<>> f_;
};

template <bool kElim, bool kRec>
class StackInstance final : public fb::Instance {
 public:
  StackInstance(const fb::RunParams& p, Pool* pool) : s_(fc::PwfStack<kElim, kRec>::create(*pool, kName, slots(p))) {}
  void insert(int tid, std::uint64_t seq, std::int64_t v) override { s_->push(tid, seq, v); }
  bool remove(int tid, std::uint64_t seq, std::int64_t* out) override {
    auto v = s_->pop(tid, seq);
    if (v) *out = *v;
    return v.has_value();
  }
  double combining_degree() const override { return s_->combining_degree(); }

 private:
  std::unique_ptr<fc::PwfStack<kElim, kRec>> s_;
};

class QueueInstance final : public fb::Instance {
 public:
  QueueInstance(const fb::RunParams& p, Pool* pool) : q_(fc::PwfQueue<>::create(*pool, kName, slots(p))) {}
  void insert(int tid, std::uint64_t seq, std::int64_t v) override { q_->enqueue(tid, seq, v); }
  bool remove(int tid, std::uint64_t seq, std::int64_t* out) override {
    auto v = q_->dequeue(tid, seq);
    if (v) *out = *v;
    return v.has_value();
  }
  double combining_degree() const override { return q_->combining_degree(); }

 private:
  std::unique_ptr<fc::PwfQueue<>> q_;
};

class HeapInstance final : public fb::Instance {
 public:
  HeapInstance(const fb::RunParams& p, Pool* pool)
      : h_(fc::PwfHeap<>::create(*pool, kName, slots(p), static_cast<std::size_t>(p.heap_capacity))) {}
  void insert(int tid, std::uint64_t seq, std::int64_t v) override { h_->insert(tid, seq, v); }
  bool remove(int tid, std::uint64_t seq, std::int64_t* out) override {
    auto v = h_->delete_min(tid, seq);
    if (v) *out = *v;
    return v.has_value();
  }
  double combining_degree() const override { return h_->combining_degree(); }

 private:
  std::unique_ptr<fc::PwfHeap<>> h_;
};

template <class I>
auto maker() {
  return [](const fb::RunParams& p, Pool* pool) -> std::unique_ptr<fb::Instance> {
    return std::make_unique<I>(p, pool);
  };
}
using StackFull = StackInstance<true, true>;
using StackNoElim = StackInstance<false, true>;
using StackNoRec = StackInstance<true, false>;

}  // namespace

FERRITE_REGISTER_TECHNIQUE({"pwfcomb-float", fb::Structure::kAtomicFloat, true,
                            "AtomicFloat on PWFcomb (Alg. 3-4), wait-free, detectable", maker<FloatInstance>(),
                            true, std::size_t{16} << 20});
FERRITE_REGISTER_TECHNIQUE({"pwf-stack", fb::Structure::kStack, true,
                            "PWFstack: PWFcomb + elimination + validated per-thread recycling",
                            maker<StackFull>()});
FERRITE_REGISTER_TECHNIQUE({"pwf-stack-no-elim", fb::Structure::kStack, true, "PWFstack without elimination",
                            maker<StackNoElim>()});
FERRITE_REGISTER_TECHNIQUE({"pwf-stack-no-rec", fb::Structure::kStack, true,
                            "PWFstack without node recycling (popped nodes leak until restart)",
                            maker<StackNoRec>(), true, std::size_t{1} << 30});
FERRITE_REGISTER_TECHNIQUE({"pwf-queue", fb::Structure::kQueue, true,
                            "PWFqueue: two PWFcomb instances, two-part list (no node recycling)",
                            maker<QueueInstance>(), true, std::size_t{1} << 30});
FERRITE_REGISTER_TECHNIQUE({"pwf-heap", fb::Structure::kHeap, true,
                            "PWFheap: bounded min-heap in the PWFcomb state (capacity = --heap-capacity)",
                            maker<HeapInstance>(), true, std::size_t{64} << 20});
