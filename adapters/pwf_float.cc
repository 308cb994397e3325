// adapters/pwf_float.cc — AtomicFloat on PWFcomb (include/ferrite/combining/
// pwf_atomic_float.h) and its broken variants. Single-threaded campaigns
// re-attach before every 7th operation (a restart at a quiescent point):
// that is what exposes the Index bug of the PWFcomb paper's §4.
#include "combining.h"
#include "ferrite/combining/internal/faults.h"
#include "ferrite/combining/pwf_atomic_float.h"

namespace adapter_pwf_float {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fc = ferrite::combining;
namespace op = ferrite::op;
namespace pf = fc::pwf_fault;

template <unsigned F>
struct PWFFloat : fa::Combining<fc::PWFAtomicFloat<F>, op::Abstract::kRegister, 7> {
  using Handle = std::unique_ptr<fc::PWFAtomicFloat<F>>;  // (the base is dependent: name it here)
  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) { return fc::PWFAtomicFloat<F>::create(*pool, s.name, s.threads); }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) { return fc::PWFAtomicFloat<F>::attach(pool, s.name, s.threads); }
  static std::vector<std::int64_t> observe(Handle& h) { return {fa::double_bits(h->read())}; }
  // Reads 1 in 10, factors without 1.5 (no-index's lost round needs a factor
  // sequence whose partial products differ; this is the workload it was
  // proven to catch with).
  static op::Op next_op(int, std::uint64_t& rng, fa::Workload&) {
    static constexpr double kFactors[] = {2.0, 0.5, 3.0, 0.25};
    rng += 0x9e3779b97f4a7c15ull;  // splitmix64
    std::uint64_t r = rng;
    r = (r ^ (r >> 30)) * 0xbf58476d1ce4e5b9ull;
    r = (r ^ (r >> 27)) * 0x94d049bb133111ebull;
    r ^= r >> 31;
    if (r % 10 == 0) return {op::kRead, 0, 0};
    return {op::kMul, fa::double_bits(kFactors[(r >> 8) % 4]), 0};
  }
};

}  // namespace

FERRITE_REGISTER_ADAPTER(PWFFloat<pf::kNone>,
                         fa::ferrite_technique("pwfcomb-float", "pwfcomb", "AtomicFloat on PWFcomb (Alg. 3-4), wait-free, detectable",
                             std::size_t{16} << 20));
FERRITE_REGISTER_ADAPTER(PWFFloat<pf::kNoHelperPwbS>,
                         fa::ferrite_broken("pwfcomb-float", "pwfcomb", "no-helper-pwb",
                             fa::kPWFNoHelperPwb));
FERRITE_REGISTER_ADAPTER(PWFFloat<pf::kNoPfenceRecord>,
                         fa::ferrite_broken("pwfcomb-float", "pwfcomb", "no-pfence",
                             fa::kPWFNoPfence));
FERRITE_REGISTER_ADAPTER(PWFFloat<pf::kPfenceRecord>,
                         fa::abstract_only(fa::ferrite_broken("pwfcomb-float", "pwfcomb", "pfence-record",
                                               "PWFcomb with Alg. 4 l.29 always a pfence (persist::publish_fence "
                                               "issues a psync where a pfence does not make the record durable)"),
                                           "on x86 a pfence (sfence) waits for the clwbs, so a pfence is enough there"));
FERRITE_REGISTER_ADAPTER(PWFFloat<pf::kNoIndexPersist>,
                         fa::abstract_only(fa::ferrite_broken("pwfcomb-float", "pwfcomb", "no-index", fa::kPWFNoIndex),
                                           "its lost round needs a line torn between ordinary stores, which x86's "
                                           "per-line store order forbids"));

}  // namespace adapter_pwf_float
