// adapters/pb_stack.cc — PBstack (include/ferrite/combining/pb_stack.h):
// elimination + recycling + the top cache, its ablations, and the broken variants.
#include "combining.h"
#include "ferrite/combining/internal/faults.h"
#include "ferrite/combining/pb_stack.h"

namespace adapter_pb_stack {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fc = ferrite::combining;
namespace op = ferrite::op;

template <unsigned F, bool kElimination, bool kRecycling>
struct PBStack : fa::Combining<fc::PBStack<F>, op::Abstract::kStack> {
  using Handle = std::unique_ptr<fc::PBStack<F>>;  // (the base is dependent: name it here)
  static constexpr fc::PBStackOptions kOptions{kElimination, kRecycling};
  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    return fc::PBStack<F>::create(*pool, s.name, s.threads, kOptions);
  }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) {
    return fc::PBStack<F>::attach(pool, s.name, s.threads, kOptions);
  }
  static std::vector<std::int64_t> observe(Handle& h) { return h->values(); }
};

using Correct = PBStack<0, true, true>;
using NoElim = PBStack<0, false, true>;
using NoRec = PBStack<0, true, false>;
using NoNodePwb = PBStack<fc::kNoNodePwb, false, true>;
using NoPsync = PBStack<fc::kNoPsyncBeforeUnlock, true, true>;
// The paper's PBstack: the paper's round and the paper's state (top only).
using Paper = PBStack<fc::kPaperRound | fc::kNoTopCache, true, true>;
using NoCache = PBStack<fc::kNoTopCache, true, true>;
using StampBeforeData = PBStack<fc::kSealBeforeFill, false, true>;
using NoOutsideFence = PBStack<fc::kNoOutsideFence, false, true>;
using NoChecksumCheck = PBStack<fc::kNoChecksumCheck, false, true>;

}  // namespace

FERRITE_REGISTER_ADAPTER(Correct,
                         fa::ferrite_technique("pb-stack", "pbcomb", "PBstack: PBcomb + elimination + recycling stack"));
FERRITE_REGISTER_ADAPTER(NoElim,
                         fa::ferrite_ablation("pb-stack", "pbcomb", "no-elim",
                             "PBstack without elimination"));
FERRITE_REGISTER_ADAPTER(NoRec,
                         fa::ferrite_ablation("pb-stack", "pbcomb", "no-rec",
                             "PBstack without the recycling stack (popped nodes freed to the heap)"));
FERRITE_REGISTER_ADAPTER(NoNodePwb,
                         fa::ferrite_broken("pb-stack", "pbcomb", "no-node-pwb",
                             "PBstack: new nodes are not written back before the state"));
FERRITE_REGISTER_ADAPTER(Paper,
                         fa::ferrite_ablation("pb-stack", "pbcomb", "paper",
                             "PBstack as in the paper: its round (StateRec pwb, pfence, MIndex pwb, psync), state = top only"));
FERRITE_REGISTER_ADAPTER(NoCache,
                         fa::ferrite_ablation("pb-stack", "pbcomb", "no-cache",
                             "PBstack without the top cache (every push writes a node; the stamped round)"));
FERRITE_REGISTER_ADAPTER(StampBeforeData,
                         fa::ferrite_broken("pb-stack", "pbcomb", "stamp-before-data",
                             "PBstack: the round stamps and seals the record before its data is in it"));
FERRITE_REGISTER_ADAPTER(NoOutsideFence,
                         fa::ferrite_broken("pb-stack", "pbcomb", "no-outside-fence",
                             "PBstack's stamped round without the pfence between the nodes' and the record's write-backs"));
FERRITE_REGISTER_ADAPTER(NoChecksumCheck,
                         fa::ferrite_broken("pb-stack", "pbcomb", "no-checksum-check",
                             "PBstack: recovery trusts the newest round stamp without its checksum"));
FERRITE_REGISTER_ADAPTER(NoPsync,
                         fa::ferrite_broken("pb-stack", "pbcomb", "no-psync",
                             "PBstack: no psync before unlock (Alg. 2 l.27)"));

}  // namespace adapter_pb_stack
