// adapters/pwf_heap.cc — PWFheap (include/ferrite/combining/pwf_heap.h): a
// bounded min-heap in the PWFcomb state, and its broken variants.
#include "combining.h"
#include "ferrite/combining/internal/faults.h"
#include "ferrite/combining/pwf_heap.h"

namespace {

namespace fa = ferrite::adapters;
namespace fc = ferrite::combining;
namespace op = ferrite::op;
namespace pf = fc::pwf_fault;

template <unsigned F>
struct PWFHeap : fa::Combining<fc::PWFHeap<F>, op::Abstract::kPriorityQueue, 7> {
  using Handle = std::unique_ptr<fc::PWFHeap<F>>;  // (the base is dependent: name it here)
  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) { return fc::PWFHeap<F>::create(*pool, s.name, s.threads, static_cast<std::size_t>(s.heap_capacity)); }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) { return fc::PWFHeap<F>::attach(pool, s.name, s.threads); }
  static std::vector<std::int64_t> observe(Handle& h) { return h->contents(); }
};

using fa::Origin;

}  // namespace

FERRITE_REGISTER_ADAPTER(PWFHeap<pf::kNone>,
                         {.technique = "pwf-heap", .family = "pwfcomb", .origin = Origin::kFerrite,
                          .description = "PWFheap: bounded min-heap in the PWFcomb state (capacity = --heap-capacity)",
                          .pool_size = std::size_t{64} << 20});
FERRITE_REGISTER_ADAPTER(PWFHeap<pf::kNoIndexPersist>,
                         {.technique = "pwf-heap", .variant = "no-index", .family = "pwfcomb",
                          .origin = Origin::kFerrite, .broken = true,
                          .description = fa::kPWFNoIndex});
FERRITE_REGISTER_ADAPTER(PWFHeap<pf::kNoPfenceRecord>,
                         {.technique = "pwf-heap", .variant = "no-pfence", .family = "pwfcomb",
                          .origin = Origin::kFerrite, .broken = true,
                          .description = fa::kPWFNoPfence});
