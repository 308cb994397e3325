// Bench registrations of the PBcomb structures (include/ferrite/combining/):
// pbcomb-float (atomic-float), pb-stack, pb-stack-no-elim, pb-stack-no-rec,
// pb-queue, pb-heap. Each reports combining_degree() (requests served per
// combining round). The harness's per-thread seq is passed through (it
// starts at 1 and increases by one per operation, which is what PBcomb's
// detection needs); the detectable OpLog is not used, so its cost (one
// record persist per operation) is excluded, as in the paper.
#include <cstdint>
#include <memory>

#include "ferrite/combining/atomic_float.h"
#include "ferrite/combining/pb_heap.h"
#include "ferrite/combining/pb_queue.h"
#include "ferrite/combining/pb_stack.h"
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
  FloatInstance(const fb::RunParams& p, Pool* pool) : f_(fc::PBAtomicFloat<>::create(*pool, kName, slots(p))) {}
  void insert(int tid, std::uint64_t seq, std::int64_t v) override {
    f_->mul(tid, seq, fb::atomic_float_factor(v));
  }
  bool remove(int, std::uint64_t, std::int64_t*) override { return false; }
  double combining_degree() const override { return f_->combining_degree(); }

 private:
  std::unique_ptr<fc::PBAtomicFloat<>> f_;
};

class StackInstance final : public fb::Instance {
 public:
  StackInstance(const fb::RunParams& p, Pool* pool, fc::PBStackOptions o)
      : s_(fc::PBStack<>::create(*pool, kName, slots(p), o)) {}
  void insert(int tid, std::uint64_t seq, std::int64_t v) override { s_->push(tid, seq, v); }
  bool remove(int tid, std::uint64_t seq, std::int64_t* out) override {
    auto v = s_->pop(tid, seq);
    if (v) *out = *v;
    return v.has_value();
  }
  double combining_degree() const override { return s_->combining_degree(); }

 private:
  std::unique_ptr<fc::PBStack<>> s_;
};

class QueueInstance final : public fb::Instance {
 public:
  QueueInstance(const fb::RunParams& p, Pool* pool) : q_(fc::PBQueue<>::create(*pool, kName, slots(p))) {}
  void insert(int tid, std::uint64_t seq, std::int64_t v) override { q_->enqueue(tid, seq, v); }
  bool remove(int tid, std::uint64_t seq, std::int64_t* out) override {
    auto v = q_->dequeue(tid, seq);
    if (v) *out = *v;
    return v.has_value();
  }
  double combining_degree() const override { return q_->combining_degree(); }

 private:
  std::unique_ptr<fc::PBQueue<>> q_;
};

class HeapInstance final : public fb::Instance {
 public:
  HeapInstance(const fb::RunParams& p, Pool* pool)
      : h_(fc::PBHeap<>::create(*pool, kName, slots(p), p.heap_capacity)) {}
  void insert(int tid, std::uint64_t seq, std::int64_t v) override { h_->insert(tid, seq, v); }
  bool remove(int tid, std::uint64_t seq, std::int64_t* out) override {
    auto v = h_->delete_min(tid, seq);
    if (v) *out = *v;
    return v.has_value();
  }
  double combining_degree() const override { return h_->combining_degree(); }

 private:
  std::unique_ptr<fc::PBHeap<>> h_;
};

template <class I, class... A>
auto maker(A... a) {
  return [=](const fb::RunParams& p, Pool* pool) -> std::unique_ptr<fb::Instance> {
    return std::make_unique<I>(p, pool, a...);
  };
}

}  // namespace

FERRITE_REGISTER_TECHNIQUE({"pbcomb-float", fb::Structure::kAtomicFloat, true,
                            "AtomicFloat on PBcomb (Alg. 1-2), detectable", maker<FloatInstance>(), true,
                            std::size_t{16} << 20});
FERRITE_REGISTER_TECHNIQUE({"pb-stack", fb::Structure::kStack, true,
                            "PBstack: PBcomb + elimination + recycling stack", maker<StackInstance>(fc::PBStackOptions{true, true})});
FERRITE_REGISTER_TECHNIQUE({"pb-stack-no-elim", fb::Structure::kStack, true, "PBstack without elimination",
                            maker<StackInstance>(fc::PBStackOptions{false, true})});
FERRITE_REGISTER_TECHNIQUE({"pb-stack-no-rec", fb::Structure::kStack, true,
                            "PBstack without the recycling stack (popped nodes freed to the heap)",
                            maker<StackInstance>(fc::PBStackOptions{true, false})});
FERRITE_REGISTER_TECHNIQUE({"pb-queue", fb::Structure::kQueue, true,
                            "PBqueue: two PBcomb instances, oldTail, per-thread free lists (Alg. 5-7)",
                            maker<QueueInstance>()});
FERRITE_REGISTER_TECHNIQUE({"pb-heap", fb::Structure::kHeap, true,
                            "PBheap: bounded min-heap in the PBcomb state (capacity = --heap-capacity)",
                            maker<HeapInstance>(), true, std::size_t{32} << 20});
