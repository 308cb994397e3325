// adapters/pb_heap.cc — PBheap (include/ferrite/combining/pb_heap.h): a
// bounded min-heap in the PBcomb state, and its broken variants.
#include "combining.h"
#include "ferrite/combining/internal/faults.h"
#include "ferrite/combining/pb_heap.h"

namespace adapter_pb_heap {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fc = ferrite::combining;
namespace op = ferrite::op;

template <unsigned F>
struct PBHeap : fa::Combining<fc::PBHeap<F>, op::Abstract::kPriorityQueue> {
  using Handle = std::unique_ptr<fc::PBHeap<F>>;  // (the base is dependent: name it here)
  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) { return fc::PBHeap<F>::create(*pool, s.name, s.threads, s.heap_capacity); }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) { return fc::PBHeap<F>::attach(pool, s.name, s.threads); }
  static std::vector<std::int64_t> observe(Handle& h) { return h->sorted(); }
};

}  // namespace

FERRITE_REGISTER_ADAPTER(PBHeap<0>,
                         fa::ferrite_technique("pb-heap", "pbcomb", "PBheap: bounded min-heap in the PBcomb state (capacity = --heap-size)",
                             std::size_t{32} << 20));
FERRITE_REGISTER_ADAPTER(PBHeap<fc::kNoPsyncBeforeUnlock>,
                         fa::ferrite_broken("pb-heap", "pbcomb", "no-psync",
                             "PBheap without the psync before unlock"));
FERRITE_REGISTER_ADAPTER(PBHeap<fc::kPaperRound>,
                         fa::ferrite_ablation("pb-heap", "pbcomb", "paper",
                             "PBheap with the paper's round (StateRec pwb, pfence, MIndex pwb, psync)",
                             std::size_t{32} << 20));
FERRITE_REGISTER_ADAPTER(PBHeap<fc::kPaperRound | fc::kNoPfenceBetweenPwbs>,
                         fa::ferrite_broken("pb-heap", "pbcomb", "no-pfence",
                             "PBheap's paper round without the pfence between the pwbs"));
FERRITE_REGISTER_ADAPTER(PBHeap<fc::kNoChecksumCheck>,
                         fa::ferrite_broken("pb-heap", "pbcomb", "no-checksum-check",
                             "PBheap: recovery trusts the newest round stamp without its checksum"));
FERRITE_REGISTER_ADAPTER(PBHeap<fc::kStaleLines>,
                         fa::ferrite_broken("pb-heap", "pbcomb", "stale-lines",
                             "PBheap: a round writes the state lines it changed, not those the previous round changed"));

}  // namespace adapter_pb_heap
