// adapters/pwf_heap.cc — PWFheap (include/ferrite/combining/pwf_heap.h): a
// bounded min-heap in the PWFcomb state, and its broken variants.
#include "combining.h"
#include "ferrite/combining/internal/faults.h"
#include "ferrite/combining/pwf_heap.h"

namespace adapter_pwf_heap {  // this file's names, apart in a unity build

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

}  // namespace

FERRITE_REGISTER_ADAPTER(PWFHeap<pf::kNone>,
                         fa::ferrite_technique("pwf-heap", "pwfcomb", "PWFheap: bounded min-heap in the PWFcomb state (capacity = --heap-size)",
                             std::size_t{64} << 20));
FERRITE_REGISTER_ADAPTER(PWFHeap<pf::kNoIndexPersist>,
                         fa::ferrite_broken("pwf-heap", "pwfcomb", "no-index",
                             fa::kPWFNoIndex));
FERRITE_REGISTER_ADAPTER(PWFHeap<pf::kNoPfenceRecord>,
                         fa::ferrite_broken("pwf-heap", "pwfcomb", "no-pfence",
                             fa::kPWFNoPfence));

}  // namespace adapter_pwf_heap
