// bench/transient_techniques.cc — transient (volatile, non-durable)
// competitors registered with `ferrite bench`:
//
//   transient-ms        Michael–Scott queue   (baselines/transient_ms_queue.h)
//   transient-treiber   Treiber stack         (baselines/transient_treiber_stack.h)
//   transient-cas       AtomicFloat as a CAS loop on a double (the PBcomb paper's
//                       "simple lock-free implementation", §6 / Figure 8)
//   mutex-std           std::queue / std::stack / std::priority_queue / a double
//                       behind one std::mutex (baselines/transient_locked.h)
//   libcds-*            external code nobody here wrote (libcds 2.3, Debian
//                       libcds-dev): MSQueue, BasketQueue, TreiberStack (HP GC),
//                       MSPriorityQueue.
//
// All are needs_pool = false and issue no persistence verbs: they measure
// what persistence costs when compared with the durable techniques. They
// store 8-byte values and ignore --value-size (documented in docs/bench.md).
#include <bit>
#include <cstdint>
#include <memory>
#include <mutex>

#include "ferrite/baselines/transient_locked.h"
#include "ferrite/baselines/transient_ms_queue.h"
#include "ferrite/baselines/transient_treiber_stack.h"
#include "technique.h"

#ifdef FERRITE_HAVE_LIBCDS
#include <cds/container/basket_queue.h>
#include <cds/container/mspriority_queue.h>
#include <cds/container/msqueue.h>
#include <cds/container/treiber_stack.h>
#include <cds/gc/hp.h>
#include <cds/init.h>
#endif

namespace ferrite::bench {
namespace {

using baselines::CasAtomicFloat;
using baselines::LockedAtomicFloat;
using baselines::LockedMinHeap;
using baselines::LockedQueue;
using baselines::LockedStack;
using baselines::MsQueue;
using baselines::TreiberStack;

// ------------------------------------------------------------ Ferrite-written

class MsQueueInstance final : public Instance {
 public:
  explicit MsQueueInstance(const RunParams& p) : q_(p.max_threads) {}
  void insert(int tid, std::uint64_t, std::int64_t v) override { q_.enqueue(tid, v); }
  bool remove(int tid, std::uint64_t, std::int64_t* out) override { return q_.try_dequeue(tid, out); }

 private:
  MsQueue<std::int64_t> q_;
};

class TreiberInstance final : public Instance {
 public:
  explicit TreiberInstance(const RunParams& p) : s_(p.max_threads) {}
  void insert(int tid, std::uint64_t, std::int64_t v) override { s_.push(tid, v); }
  bool remove(int tid, std::uint64_t, std::int64_t* out) override { return s_.try_pop(tid, out); }

 private:
  TreiberStack<std::int64_t> s_;
};

template <class Float>
class AtomicFloatInstance final : public Instance {
 public:
  void insert(int, std::uint64_t, std::int64_t v) override { f_.fetch_mul(atomic_float_factor(v)); }
  bool remove(int, std::uint64_t, std::int64_t*) override { return false; }

 private:
  Float f_{1.0};
};

class LockedQueueInstance final : public Instance {
 public:
  void insert(int, std::uint64_t, std::int64_t v) override { q_.enqueue(v); }
  bool remove(int, std::uint64_t, std::int64_t* out) override { return q_.try_dequeue(out); }

 private:
  LockedQueue<std::int64_t> q_;
};

class LockedStackInstance final : public Instance {
 public:
  void insert(int, std::uint64_t, std::int64_t v) override { s_.push(v); }
  bool remove(int, std::uint64_t, std::int64_t* out) override { return s_.try_pop(out); }

 private:
  LockedStack<std::int64_t> s_;
};

class LockedHeapInstance final : public Instance {
 public:
  void insert(int, std::uint64_t, std::int64_t v) override { h_.insert(v); }
  bool remove(int, std::uint64_t, std::int64_t* out) override { return h_.try_delete_min(out); }

 private:
  LockedMinHeap<std::int64_t> h_;
};

template <class I>
Technique::MakeFn transient_maker() {
  return [](const RunParams& p, pmem::Pool*) -> std::unique_ptr<Instance> {
    if constexpr (std::is_constructible_v<I, const RunParams&>) return std::make_unique<I>(p);
    else return std::make_unique<I>();
  };
}

Technique transient(std::string name, Structure s, std::string desc, Technique::MakeFn make) {
  Technique t{std::move(name), s, false, std::move(desc), std::move(make)};
  t.needs_pool = false;
  t.pool_size = 0;
  return t;
}

FERRITE_REGISTER_TECHNIQUE((transient("transient-ms", Structure::kQueue,
                                     "Michael-Scott lock-free queue (transient)",
                                     transient_maker<MsQueueInstance>())));
FERRITE_REGISTER_TECHNIQUE((transient("transient-treiber", Structure::kStack,
                                     "Treiber lock-free stack (transient)",
                                     transient_maker<TreiberInstance>())));
FERRITE_REGISTER_TECHNIQUE((transient("transient-cas", Structure::kAtomicFloat,
                                     "AtomicFloat as a CAS loop on a double (transient, lock-free)",
                                     transient_maker<AtomicFloatInstance<CasAtomicFloat>>())));
FERRITE_REGISTER_TECHNIQUE((transient("mutex-std", Structure::kAtomicFloat,
                                     "double behind a std::mutex (transient)",
                                     transient_maker<AtomicFloatInstance<LockedAtomicFloat>>())));
FERRITE_REGISTER_TECHNIQUE((transient("mutex-std", Structure::kQueue, "std::queue behind a std::mutex (transient)",
                                     transient_maker<LockedQueueInstance>())));
FERRITE_REGISTER_TECHNIQUE((transient("mutex-std", Structure::kStack, "std::stack behind a std::mutex (transient)",
                                     transient_maker<LockedStackInstance>())));
FERRITE_REGISTER_TECHNIQUE((transient("mutex-std", Structure::kHeap,
                                     "std::priority_queue (min) behind a std::mutex (transient)",
                                     transient_maker<LockedHeapInstance>())));

// ------------------------------------------------------------ libcds

#ifdef FERRITE_HAVE_LIBCDS

// libcds needs cds::Initialize() and one Hazard Pointer GC object for the
// process; both are created on first use and kept for the process's life
// (destroying the HP singleton while a detached thread's retired list is
// pending is a libcds error, and it is cheap to keep).
void libcds_runtime() {
  // Kept in a volatile static so it stays reachable (LeakSanitizer reports an
  // object whose only pointer was dropped, and the compiler may drop a store
  // to a static that is never read).
  static cds::gc::HP* volatile const hp = [] {
    cds::Initialize();
    return new cds::gc::HP(/*hazard ptrs per thread*/ 0, /*max threads*/ 256);
  }();
  (void)hp;
  // The harness creates and destroys instances on its own thread, and a
  // libcds container's destructor retires nodes through the calling thread's
  // HP record: attach this thread too (it stays attached).
  if (!cds::threading::Manager::isThreadAttached()) cds::threading::Manager::attachThread();
}

// Each worker attaches to libcds before its first operation and detaches at
// the end (libcds's per-thread HP records).
class LibcdsInstance : public Instance {
 public:
  void thread_init(int) override { cds::threading::Manager::attachThread(); }
  void thread_exit(int) override { cds::threading::Manager::detachThread(); }
};

template <class Queue>
class LibcdsQueueInstance final : public LibcdsInstance {
 public:
  void insert(int, std::uint64_t, std::int64_t v) override { q_.enqueue(v); }
  bool remove(int, std::uint64_t, std::int64_t* out) override { return q_.dequeue(*out); }

 private:
  Queue q_;
};

template <class Stack>
class LibcdsStackInstance final : public LibcdsInstance {
 public:
  void insert(int, std::uint64_t, std::int64_t v) override { s_.push(v); }
  bool remove(int, std::uint64_t, std::int64_t* out) override { return s_.pop(*out); }

 private:
  Stack s_;
};

struct MinHeapTraits : public cds::container::mspriority_queue::traits {
  typedef std::greater<std::int64_t> less;  // libcds pops the "largest": invert for a min-heap
};
using LibcdsHeap = cds::container::MSPriorityQueue<std::int64_t, MinHeapTraits>;

class LibcdsHeapInstance final : public LibcdsInstance {
 public:
  // MSPriorityQueue is bounded: room for the half-full heap plus every
  // thread's in-flight insert, doubled for the mix workloads.
  explicit LibcdsHeapInstance(const RunParams& p)
      : h_(static_cast<std::size_t>(2 * p.heap_capacity + 2 * p.max_threads) + p.prefill) {}
  void insert(int, std::uint64_t, std::int64_t v) override {
    if (!h_.push(v)) throw std::runtime_error("libcds-mspq: heap full (capacity too small for this workload)");
  }
  bool remove(int, std::uint64_t, std::int64_t* out) override { return h_.pop(*out); }

 private:
  LibcdsHeap h_;
};

template <class I>
Technique::MakeFn libcds_maker() {
  return [](const RunParams& p, pmem::Pool*) -> std::unique_ptr<Instance> {
    libcds_runtime();
    if constexpr (std::is_constructible_v<I, const RunParams&>) return std::make_unique<I>(p);
    else return std::make_unique<I>();
  };
}

using CdsMsQueue = cds::container::MSQueue<cds::gc::HP, std::int64_t>;
using CdsBasketQueue = cds::container::BasketQueue<cds::gc::HP, std::int64_t>;
using CdsTreiber = cds::container::TreiberStack<cds::gc::HP, std::int64_t>;
// libcds's flat-combining containers (FCQueue, FCStack) would be the closest
// transient relatives of PBcomb, but they need Boost.Thread's
// thread_specific_ptr (libboost-thread-dev), which the build does not link.

FERRITE_REGISTER_TECHNIQUE((transient("libcds-msqueue", Structure::kQueue,
                                     "libcds MSQueue with Hazard Pointers (external, transient)",
                                     libcds_maker<LibcdsQueueInstance<CdsMsQueue>>())));
FERRITE_REGISTER_TECHNIQUE((transient("libcds-basketqueue", Structure::kQueue,
                                     "libcds BasketQueue with Hazard Pointers (external, transient)",
                                     libcds_maker<LibcdsQueueInstance<CdsBasketQueue>>())));
FERRITE_REGISTER_TECHNIQUE((transient("libcds-treiber", Structure::kStack,
                                     "libcds TreiberStack with Hazard Pointers (external, transient)",
                                     libcds_maker<LibcdsStackInstance<CdsTreiber>>())));
FERRITE_REGISTER_TECHNIQUE((transient("libcds-mspq", Structure::kHeap,
                                     "libcds MSPriorityQueue, bounded, fine-grained locks (external, transient)",
                                     libcds_maker<LibcdsHeapInstance>())));

#endif  // FERRITE_HAVE_LIBCDS

}  // namespace
}  // namespace ferrite::bench
