// adapters/transient.cc — transient (volatile, non-durable) competitors of
// `ferrite bench`: what persistence costs, measured in the same run.
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
// All need no pool and issue no persistence verbs. They store 8-byte values
// and ignore --value-size (docs/bench.md). libcds's flat-combining
// containers (FCQueue, FCStack) would be the closest transient relatives of
// PBcomb, but they need Boost.Thread (libboost-thread-dev), not linked.
#include <functional>
#include <memory>
#include <stdexcept>

#include "adapter.h"
#include "ferrite/baselines/transient_locked.h"
#include "ferrite/baselines/transient_ms_queue.h"
#include "ferrite/baselines/transient_treiber_stack.h"
#include "libcds_runtime.h"

#ifdef FERRITE_HAVE_LIBCDS
#include <cds/container/basket_queue.h>
#include <cds/container/mspriority_queue.h>
#include <cds/container/msqueue.h>
#include <cds/container/treiber_stack.h>
#endif

namespace adapter_transient {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fb = ferrite::baselines;
namespace op = ferrite::op;
using fa::Origin;

// A transient container: insert(v) / try_remove(v&) through the pair
// workloads' two operations.
template <class T, op::Abstract A, class Ops>
struct Transient : fa::TransientTraits<T, A, Ops> {
  using Handle = std::unique_ptr<T>;
  static op::Response apply(Handle& h, int tid, std::uint64_t, const op::Op& o) {
    if constexpr (A == op::Abstract::kRegister) {
      if (o.kind != op::kMul) fa::unsupported("transient register", o);
      return op::Response::of(fa::double_bits(Ops::mul(*h, fa::bits_double(o.arg))));
    } else {
      if (o.kind == op::insert_kind(A)) {
        Ops::insert(*h, tid, o.arg);
        return op::Response::ack();
      }
      if (o.kind == op::remove_kind(A)) {
        std::int64_t v = 0;
        return Ops::remove(*h, tid, &v) ? op::Response::of(v) : op::Response::none();
      }
      fa::unsupported("transient", o);
    }
  }
};

// ------------------------------------------------------------ Ferrite-written
struct MsOps {
  static auto make(const fa::Setup& s) { return std::make_unique<fb::MsQueue<std::int64_t>>(s.threads); }
  static void insert(fb::MsQueue<std::int64_t>& q, int tid, std::int64_t v) { q.enqueue(tid, v); }
  static bool remove(fb::MsQueue<std::int64_t>& q, int tid, std::int64_t* v) { return q.try_dequeue(tid, v); }
};
struct TreiberOps {
  static auto make(const fa::Setup& s) { return std::make_unique<fb::TreiberStack<std::int64_t>>(s.threads); }
  static void insert(fb::TreiberStack<std::int64_t>& q, int tid, std::int64_t v) { q.push(tid, v); }
  static bool remove(fb::TreiberStack<std::int64_t>& q, int tid, std::int64_t* v) { return q.try_pop(tid, v); }
};
template <class F>
struct FloatOps {
  static auto make(const fa::Setup&) { return std::make_unique<F>(1.0); }
  static double mul(F& f, double k) { return f.fetch_mul(k); }
};
template <class C>
struct LockedOps {
  static auto make(const fa::Setup&) { return std::make_unique<C>(); }
  static void insert(C& c, int, std::int64_t v) {
    if constexpr (requires { c.enqueue(v); }) c.enqueue(v);
    else if constexpr (requires { c.push(v); }) c.push(v);
    else c.insert(v);
  }
  static bool remove(C& c, int, std::int64_t* v) {
    if constexpr (requires { c.try_dequeue(v); }) return c.try_dequeue(v);
    else if constexpr (requires { c.try_pop(v); }) return c.try_pop(v);
    else return c.try_delete_min(v);
  }
};

using MsQueue = Transient<fb::MsQueue<std::int64_t>, op::Abstract::kQueue, MsOps>;
using Treiber = Transient<fb::TreiberStack<std::int64_t>, op::Abstract::kStack, TreiberOps>;
using CasFloat = Transient<fb::CasAtomicFloat, op::Abstract::kRegister, FloatOps<fb::CasAtomicFloat>>;
using MutexFloat = Transient<fb::LockedAtomicFloat, op::Abstract::kRegister, FloatOps<fb::LockedAtomicFloat>>;
using MutexQueue = Transient<fb::LockedQueue<std::int64_t>, op::Abstract::kQueue, LockedOps<fb::LockedQueue<std::int64_t>>>;
using MutexStack = Transient<fb::LockedStack<std::int64_t>, op::Abstract::kStack, LockedOps<fb::LockedStack<std::int64_t>>>;
using MutexHeap = Transient<fb::LockedMinHeap<std::int64_t>, op::Abstract::kPriorityQueue,
                            LockedOps<fb::LockedMinHeap<std::int64_t>>>;

fa::Registration transient(const char* name, const char* family, const char* desc) {
  return {.technique = name, .family = family, .origin = Origin::kTransient, .description = desc,
          .crash = false, .needs_pool = false, .pool_size = 0};
}

#ifdef FERRITE_HAVE_LIBCDS
// ------------------------------------------------------------ libcds
template <class C>
struct LibcdsOps {
  static auto make(const fa::Setup&) {
    fa::libcds_runtime();
    return std::make_unique<C>();
  }
  static void insert(C& c, int, std::int64_t v) {
    if constexpr (requires { c.enqueue(v); }) c.enqueue(v);
    else c.push(v);
  }
  static bool remove(C& c, int, std::int64_t* v) {
    if constexpr (requires { c.dequeue(*v); }) return c.dequeue(*v);
    else return c.pop(*v);
  }
};
struct MinHeapTraits : public cds::container::mspriority_queue::traits {
  typedef std::greater<std::int64_t> less;  // libcds pops the "largest": invert for a min-heap
};
using CdsHeap = cds::container::MSPriorityQueue<std::int64_t, MinHeapTraits>;
struct LibcdsHeapOps : LibcdsOps<CdsHeap> {
  // MSPriorityQueue is bounded: room for the half-full heap plus every
  // thread's in-flight insert, doubled for the mix workloads.
  static auto make(const fa::Setup& s) {
    fa::libcds_runtime();
    return std::make_unique<CdsHeap>(static_cast<std::size_t>(2 * s.heap_capacity + 2 * s.threads) + s.prefill);
  }
  static void insert(CdsHeap& h, int, std::int64_t v) {
    if (!h.push(v)) throw std::runtime_error("libcds-mspq: heap full (capacity too small for this workload)");
  }
};
template <class C, op::Abstract A, class Ops = LibcdsOps<C>>
struct Libcds : Transient<C, A, Ops>, fa::LibcdsThreads {};

using CdsMsQueue = Libcds<cds::container::MSQueue<cds::gc::HP, std::int64_t>, op::Abstract::kQueue>;
using CdsBasket = Libcds<cds::container::BasketQueue<cds::gc::HP, std::int64_t>, op::Abstract::kQueue>;
using CdsTreiber = Libcds<cds::container::TreiberStack<cds::gc::HP, std::int64_t>, op::Abstract::kStack>;
using CdsMspq = Libcds<CdsHeap, op::Abstract::kPriorityQueue, LibcdsHeapOps>;
#endif

}  // namespace

FERRITE_REGISTER_ADAPTER(MsQueue, transient("transient-ms", "transient", "Michael-Scott lock-free queue (transient)"));
FERRITE_REGISTER_ADAPTER(Treiber, transient("transient-treiber", "transient", "Treiber lock-free stack (transient)"));
FERRITE_REGISTER_ADAPTER(CasFloat, transient("transient-cas", "transient",
                                             "AtomicFloat as a CAS loop on a double (transient, lock-free)"));
FERRITE_REGISTER_ADAPTER(MutexFloat, transient("mutex-std", "transient", "double behind a std::mutex (transient)"));
FERRITE_REGISTER_ADAPTER(MutexQueue, transient("mutex-std", "transient", "std::queue behind a std::mutex (transient)"));
FERRITE_REGISTER_ADAPTER(MutexStack, transient("mutex-std", "transient", "std::stack behind a std::mutex (transient)"));
FERRITE_REGISTER_ADAPTER(MutexHeap, transient("mutex-std", "transient",
                                              "std::priority_queue (min) behind a std::mutex (transient)"));
#ifdef FERRITE_HAVE_LIBCDS
FERRITE_REGISTER_ADAPTER(CdsMsQueue, transient("libcds-msqueue", "libcds",
                                               "libcds MSQueue with Hazard Pointers (external, transient)"));
FERRITE_REGISTER_ADAPTER(CdsBasket, transient("libcds-basketqueue", "libcds",
                                              "libcds BasketQueue with Hazard Pointers (external, transient)"));
FERRITE_REGISTER_ADAPTER(CdsTreiber, transient("libcds-treiber", "libcds",
                                               "libcds TreiberStack with Hazard Pointers (external, transient)"));
FERRITE_REGISTER_ADAPTER(CdsMspq, transient("libcds-mspq", "libcds",
                                            "libcds MSPriorityQueue, bounded, fine-grained locks (external, transient)"));
#endif

}  // namespace adapter_transient
