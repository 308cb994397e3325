// adapters/pb_heap.cc — PBheap (include/ferrite/combining/pb_heap.h): a
// bounded min-heap in the PBcomb state, and its broken variants.
#include "combining.h"
#include "ferrite/combining/internal/faults.h"
#include "ferrite/combining/pb_heap.h"

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

using fa::Origin;

}  // namespace

FERRITE_REGISTER_ADAPTER(PBHeap<0>, {.technique = "pb-heap", .family = "pbcomb", .origin = Origin::kFerrite,
                                     .description = "PBheap: bounded min-heap in the PBcomb state (capacity = --heap-capacity)",
                                     .pool_size = std::size_t{32} << 20});
FERRITE_REGISTER_ADAPTER(PBHeap<fc::kNoPsyncBeforeUnlock>,
                         {.technique = "pb-heap", .variant = "no-psync", .family = "pbcomb",
                          .origin = Origin::kFerrite, .broken = true,
                          .description = "PBheap without the psync before unlock"});
FERRITE_REGISTER_ADAPTER(PBHeap<fc::kNoPfenceBetweenPwbs>,
                         {.technique = "pb-heap", .variant = "no-pfence", .family = "pbcomb",
                          .origin = Origin::kFerrite, .broken = true,
                          .description = "PBheap without the pfence between the pwbs"});
