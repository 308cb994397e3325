// adapters/sela_petrank.cc — OptUnlinkedQ and OptLinkedQ of Sela and
// Petrank, SPAA 2021 (include/ferrite/baselines/sela_petrank.h): durably
// linearizable, not detectable (the paper's queues answer no recover call).
#include "baseline_common.h"
#include "ferrite/baselines/sela_petrank.h"

namespace adapter_sela_petrank {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fb = ferrite::baselines;
namespace op = ferrite::op;
namespace spf = ferrite::baselines::sela_petrank::internal;

template <class Q>
struct SelaPetrank {
  using Handle = std::unique_ptr<Q>;
  static constexpr op::Abstract kAbstract = op::Abstract::kQueue;
  static constexpr bool kDetectable = false;

  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    return std::make_unique<Q>(*pool, s.name, s.threads, s.value_size);
  }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) { return create(&pool, s); }
  static op::Response apply(Handle& h, int tid, std::uint64_t, const op::Op& o) {
    return fa::pair_apply(kAbstract, o, [&](bool ins, std::int64_t arg, std::int64_t* out) {
      if (ins) return h->enqueue(tid, arg), true;
      return h->try_dequeue(tid, out);
    });
  }
  static op::Response recover(Handle&, int, std::uint64_t, const op::Op&) { return op::Response::none(); }
  static std::vector<std::int64_t> observe(Handle& h) { return h->snapshot(); }
  static op::Op next_op(int tid, std::uint64_t& rng, fa::Workload& w) {
    return fa::pair_workload(kAbstract, tid, rng, w);
  }
};

using fa::Origin;
template <unsigned F>
using Unlinked = SelaPetrank<fb::OptUnlinkedQ<F>>;
template <unsigned F>
using Linked = SelaPetrank<fb::OptLinkedQ<F>>;

fa::Registration broken(const char* technique, const char* variant, const char* description) {
  return {.technique = technique, .variant = variant, .family = "sela-petrank", .origin = Origin::kCompetitor,
          .broken = true, .description = description};
}

}  // namespace

FERRITE_REGISTER_ADAPTER(Unlinked<spf::kNoFaults>,
                         {.technique = "optunlinkedq", .family = "sela-petrank", .origin = Origin::kCompetitor,
                          .description = "Sela-Petrank SPAA'21 OptUnlinkedQ (durable queue, one pwb per op)"});
FERRITE_REGISTER_ADAPTER(Unlinked<spf::kNoNodePwb>,
                         broken("optunlinkedq", "no-node-pwb", "the linked node is never written back"));
FERRITE_REGISTER_ADAPTER(Unlinked<spf::kNoHeadIndexPwb>,
                         broken("optunlinkedq", "no-head-index-pwb", "the dequeuer's headIndex is never written back"));
FERRITE_REGISTER_ADAPTER(Linked<spf::kNoFaults>,
                         {.technique = "optlinkedq", .family = "sela-petrank", .origin = Origin::kCompetitor,
                          .description = "Sela-Petrank SPAA'21 OptLinkedQ (durable queue, persisted pred links)"});
FERRITE_REGISTER_ADAPTER(Linked<spf::kNoSuffixPwb>,
                         broken("optlinkedq", "no-suffix-pwb", "the not-persisted suffix is never written back"));
FERRITE_REGISTER_ADAPTER(Linked<spf::kNoRecordFence>,
                         fa::abstract_only(broken("optlinkedq", "no-record-fence",
                                                  "no pfence between the suffix write-backs and the last-enqueue "
                                                  "record (caught with 2 threads)"),
                                           "on x86 the record and the suffix stay pending until the psync and a "
                                           "line persists whole, so recovery falls back to an older record"));
FERRITE_REGISTER_ADAPTER(Linked<spf::kNoHeadIndexPwb>,
                         broken("optlinkedq", "no-head-index-pwb", "the dequeuer's headIndex is never written back"));

}  // namespace adapter_sela_petrank
