// adapters/pb_float.cc — AtomicFloat on PBcomb (include/ferrite/combining/
// atomic_float.h): the correct technique and the broken variants the crash
// campaigns must catch (a fault bit removes one persistence step).
#include "combining.h"
#include "ferrite/combining/atomic_float.h"
#include "ferrite/combining/internal/faults.h"

namespace adapter_pb_float {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fc = ferrite::combining;
namespace op = ferrite::op;

template <unsigned F>
struct PBFloat : fa::Combining<fc::PBAtomicFloat<F>, op::Abstract::kRegister> {
  using Handle = std::unique_ptr<fc::PBAtomicFloat<F>>;  // (the base is dependent: name it here)
  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) { return fc::PBAtomicFloat<F>::create(*pool, s.name, s.threads); }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) { return fc::PBAtomicFloat<F>::attach(pool, s.name, s.threads); }
  static std::vector<std::int64_t> observe(Handle& h) { return {fa::double_bits(h->value())}; }
};

}  // namespace

FERRITE_REGISTER_ADAPTER(PBFloat<0>,
                         fa::ferrite_technique("pbcomb-float", "pbcomb", "AtomicFloat on PBcomb (Alg. 1-2), detectable",
                             std::size_t{16} << 20));
FERRITE_REGISTER_ADAPTER(PBFloat<fc::kPaperRound>,
                         fa::ferrite_ablation("pbcomb-float", "pbcomb", "paper",
                             "AtomicFloat on PBcomb with the paper's round (StateRec pwb, pfence, MIndex pwb, psync)",
                             std::size_t{16} << 20));
FERRITE_REGISTER_ADAPTER(PBFloat<fc::kPaperRound | fc::kNoPfenceBetweenPwbs>,
                         fa::ferrite_broken("pbcomb-float", "pbcomb", "no-pfence",
                             "PBcomb's paper round without the pfence between pwb(StateRec) and pwb(MIndex) (Alg. 2 l.23)"));
FERRITE_REGISTER_ADAPTER(PBFloat<fc::kNoChecksumCheck>,
                         fa::ferrite_broken("pbcomb-float", "pbcomb", "no-checksum-check",
                             "PBcomb's stamped round: recovery trusts the newest round stamp without its checksum"));
FERRITE_REGISTER_ADAPTER(PBFloat<fc::kSealBeforeFill>,
                         fa::ferrite_broken("pbcomb-float", "pbcomb", "stamp-before-data",
                             "PBcomb's stamped round: the stamp and checksum seal the record before the round's data is in it"));
FERRITE_REGISTER_ADAPTER(PBFloat<fc::kNoPsyncBeforeUnlock>,
                         fa::ferrite_broken("pbcomb-float", "pbcomb", "no-psync",
                             "PBcomb without the psync before unlock (Alg. 2 l.27)"));

}  // namespace adapter_pb_float
