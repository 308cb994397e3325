// adapters/izraelevitz.cc — the Michael–Scott queue and the Treiber stack
// under the Izraelevitz–Mendes–Scott transform (include/ferrite/baselines/
// izraelevitz.h): durably linearizable, not detectable.
#include "baseline_common.h"
#include "ferrite/baselines/izraelevitz.h"

namespace adapter_izraelevitz {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fb = ferrite::baselines;
namespace op = ferrite::op;

template <class T, op::Abstract A>
struct Izraelevitz {
  using Handle = std::unique_ptr<T>;
  static constexpr op::Abstract kAbstract = A;
  static constexpr bool kDetectable = false;

  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    return std::make_unique<T>(*pool, s.name, s.threads, s.value_size);
  }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) { return create(&pool, s); }
  static op::Response apply(Handle& h, int tid, std::uint64_t, const op::Op& o) {
    return fa::pair_apply(A, o, [&](bool ins, std::int64_t arg, std::int64_t* out) {
      if constexpr (A == op::Abstract::kQueue) {
        if (ins) return h->enqueue(tid, arg), true;
        return h->try_dequeue(tid, out);
      } else {
        if (ins) return h->push(tid, arg), true;
        return h->try_pop(tid, out);
      }
    });
  }
  static std::vector<std::int64_t> observe(Handle& h) { return h->snapshot(); }
  static op::Op next_op(int tid, std::uint64_t& rng, fa::Workload& w) { return fa::pair_workload(A, tid, rng, w); }
};

using fa::Origin;
template <unsigned F>
using Queue = Izraelevitz<fb::IzraelevitzQueue<F>, op::Abstract::kQueue>;
template <unsigned F>
using Stack = Izraelevitz<fb::IzraelevitzStack<F>, op::Abstract::kStack>;

}  // namespace

FERRITE_REGISTER_ADAPTER(Queue<fb::kNoFaults>,
                         {.technique = "izraelevitz-ms", .family = "izraelevitz", .origin = Origin::kCompetitor,
                          .description = "MS queue + Izraelevitz DISC'16 transform (pwb+psync after every shared access)"});
FERRITE_REGISTER_ADAPTER(Queue<fb::kNoNodePwb>,
                         {.technique = "izraelevitz-ms", .variant = "no-node-pwb", .family = "izraelevitz",
                          .origin = Origin::kCompetitor, .broken = true,
                          .description = "new nodes are linked without being written back"});
FERRITE_REGISTER_ADAPTER(Queue<fb::kNoLinkPwb>,
                         {.technique = "izraelevitz-ms", .variant = "no-cas-pwb", .family = "izraelevitz",
                          .origin = Origin::kCompetitor, .broken = true,
                          .description = "stores and CASes are not written back (loads still are)"});
FERRITE_REGISTER_ADAPTER(Stack<fb::kNoFaults>,
                         {.technique = "izraelevitz-treiber", .family = "izraelevitz", .origin = Origin::kCompetitor,
                          .description = "Treiber stack + Izraelevitz DISC'16 transform"});
FERRITE_REGISTER_ADAPTER(Stack<fb::kNoNodePwb>,
                         {.technique = "izraelevitz-treiber", .variant = "no-node-pwb", .family = "izraelevitz",
                          .origin = Origin::kCompetitor, .broken = true,
                          .description = "new nodes are linked without being written back"});
FERRITE_REGISTER_ADAPTER(Stack<fb::kNoLinkPwb>,
                         {.technique = "izraelevitz-treiber", .variant = "no-cas-pwb", .family = "izraelevitz",
                          .origin = Origin::kCompetitor, .broken = true,
                          .description = "stores and CASes are not written back (loads still are)"});

}  // namespace adapter_izraelevitz
