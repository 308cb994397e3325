// adapters/pwf_stack.cc — PWFstack (include/ferrite/combining/pwf_stack.h):
// elimination + validated recycling, its two ablations, the broken variants.
#include "combining.h"
#include "ferrite/combining/internal/faults.h"
#include "ferrite/combining/pwf_stack.h"

namespace adapter_pwf_stack {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fc = ferrite::combining;
namespace op = ferrite::op;
namespace pf = fc::pwf_fault;

template <bool E, bool R, unsigned F>
struct PWFStack : fa::Combining<fc::PWFStack<E, R, F>, op::Abstract::kStack, 7> {
  using Handle = std::unique_ptr<fc::PWFStack<E, R, F>>;  // (the base is dependent: name it here)
  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) { return fc::PWFStack<E, R, F>::create(*pool, s.name, s.threads); }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) { return fc::PWFStack<E, R, F>::attach(pool, s.name, s.threads); }
  static std::vector<std::int64_t> observe(Handle& h) { return h->contents(); }
};

using Correct = PWFStack<true, true, pf::kNone>;
using NoElim = PWFStack<false, true, pf::kNone>;
using NoRec = PWFStack<true, false, pf::kNone>;
using NoPfence = PWFStack<true, true, pf::kNoPfenceRecord>;
using NoHelperPwb = PWFStack<true, true, pf::kNoHelperPwbS>;

}  // namespace

FERRITE_REGISTER_ADAPTER(Correct,
                         fa::ferrite_technique("pwf-stack", "pwfcomb", "PWFstack: PWFcomb + elimination + validated per-thread recycling"));
FERRITE_REGISTER_ADAPTER(NoElim,
                         fa::ferrite_ablation("pwf-stack", "pwfcomb", "no-elim",
                             "PWFstack without elimination"));
FERRITE_REGISTER_ADAPTER(NoRec,
                         fa::ferrite_ablation("pwf-stack", "pwfcomb", "no-rec",
                             "PWFstack without node recycling (popped nodes leak until restart)", std::size_t{1} << 30));
FERRITE_REGISTER_ADAPTER(NoPfence,
                         fa::ferrite_broken("pwf-stack", "pwfcomb", "no-pfence",
                             "no pfence between the StateRec's (and nodes') pwb and the SC (Alg. 4 l.29)"));
FERRITE_REGISTER_ADAPTER(NoHelperPwb,
                         fa::ferrite_broken("pwf-stack", "pwfcomb", "no-helper-pwb",
                             fa::kPWFNoHelperPwb));

}  // namespace adapter_pwf_stack
