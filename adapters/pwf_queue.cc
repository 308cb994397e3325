// adapters/pwf_queue.cc — PWFqueue (include/ferrite/combining/pwf_queue.h)
// and its broken variants. PWFqueue never recycles nodes (the paper leaves
// its garbage collection as future work): long bench runs need a big pool.
#include "combining.h"
#include "ferrite/combining/internal/faults.h"
#include "ferrite/combining/pwf_queue.h"

namespace adapter_pwf_queue {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fc = ferrite::combining;
namespace op = ferrite::op;
namespace pf = fc::pwf_fault;

template <unsigned F>
struct PWFQueue : fa::Combining<fc::PWFQueue<F>, op::Abstract::kQueue, 7> {
  using Handle = std::unique_ptr<fc::PWFQueue<F>>;  // (the base is dependent: name it here)
  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) { return fc::PWFQueue<F>::create(*pool, s.name, s.threads); }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) { return fc::PWFQueue<F>::attach(pool, s.name, s.threads); }
  static std::vector<std::int64_t> observe(Handle& h) { return h->contents(); }
};

}  // namespace

FERRITE_REGISTER_ADAPTER(PWFQueue<pf::kNone>,
                         fa::ferrite_technique("pwf-queue", "pwfcomb", "PWFqueue: two PWFcomb instances, two-part list (no node recycling)",
                             std::size_t{1} << 30));
FERRITE_REGISTER_ADAPTER(PWFQueue<pf::kNoConnectPwb>,
                         fa::ferrite_broken("pwf-queue", "pwfcomb", "no-connect-pwb",
                             "the enqueuer that links the two parts does not persist tail->next"));
FERRITE_REGISTER_ADAPTER(PWFQueue<pf::kNoHelperPwbS>,
                         fa::ferrite_broken("pwf-queue", "pwfcomb", "no-helper-pwb",
                             fa::kPWFNoHelperPwb));
FERRITE_REGISTER_ADAPTER(PWFQueue<pf::kProbeAlways>,
                         fa::ferrite_ablation("pwf-queue", "pwfcomb", "probe",
                             "PWFqueue whose dequeue combiners always probe IE (the wait-free fallback of a failed state read)",
                             std::size_t{1} << 30));

}  // namespace adapter_pwf_queue
