// adapters/pmdk_tx.cc — PMDK's libpmemobj transactions (external code, Debian
// libpmemobj-dev; include/ferrite/baselines/pmdk_tx.h): one transaction per
// operation behind a mutex, for stack, queue, heap and AtomicFloat. Bench
// only: PMDK persists through its own flushes in its own pool file, so
// Ferrite's pwb/pfence/psync counters read 0 for it (the description says
// so) and the crash simulator cannot see its persistence.
#include "baseline_common.h"
#include "ferrite/baselines/pmdk_tx.h"

namespace adapter_pmdk_tx {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fb = ferrite::baselines;
namespace op = ferrite::op;

template <op::Abstract A>
struct Pmdk {
  using Handle = std::unique_ptr<fb::PmdkTx>;
  static constexpr op::Abstract kAbstract = A;
  static constexpr bool kDetectable = false;
  static constexpr fb::PmdkTx::Kind kind() {
    switch (A) {
      case op::Abstract::kStack: return fb::PmdkTx::Kind::kStack;
      case op::Abstract::kQueue: return fb::PmdkTx::Kind::kQueue;
      case op::Abstract::kPriorityQueue: return fb::PmdkTx::Kind::kHeap;
      default: return fb::PmdkTx::Kind::kFloat;
    }
  }
  static Handle create(ferrite::pmem::Pool*, const fa::Setup& s) {
    return std::make_unique<fb::PmdkTx>(s.pool_dir, kind(), s.value_size, s.heap_capacity);
  }
  static Handle attach(ferrite::pmem::Pool&, const fa::Setup&) {
    throw std::logic_error("pmdk-tx lives in its own PMDK pool: nothing to attach to");
  }
  static op::Response apply(Handle& h, int, std::uint64_t, const op::Op& o) {
    return fa::pair_apply(A, o, [&](bool ins, std::int64_t arg, std::int64_t* out) { return h->apply(ins, arg, out); });
  }
};

fa::Registration pmdk() {
  return {.technique = "pmdk-tx", .family = "pmdk", .origin = fa::Origin::kCompetitor,
          .description = "PMDK libpmemobj transaction per op + mutex (PMDK flushes itself: pwb/pfence/psync NOT counted, read 0)",
          .crash = false, .needs_pool = false};
}

}  // namespace

FERRITE_REGISTER_ADAPTER(Pmdk<op::Abstract::kStack>, pmdk());
FERRITE_REGISTER_ADAPTER(Pmdk<op::Abstract::kQueue>, pmdk());
FERRITE_REGISTER_ADAPTER(Pmdk<op::Abstract::kPriorityQueue>, pmdk());
FERRITE_REGISTER_ADAPTER(Pmdk<op::Abstract::kRegister>, pmdk());

}  // namespace adapter_pmdk_tx
