// adapters/mirror_bst.cc — mirror-bst: the Natarajan–Mittal lock-free BST
// made durable by Mirror (include/ferrite/mirror/bst.h), as a set (crash
// subject mirror-bst) and as a map (crash subject mirror-bstmap); both are
// the bench technique mirror-bst.
//
//   correct              volatile replica in DRAM (the paper's main mode)
//   correct-nvm-replica  both replicas in the pool (§6.3; an ablation)
//   broken variants (include/ferrite/mirror/internal/faults.h):
//     no-pwb-before-volatile  Fig. 4 l.41 removed
//     helper-no-pwb           Fig. 4 l.20 removed
//     recover-no-trace        recovery copies the region, forgets the live set
//     recover-no-copy         recovery never rebuilds rep_v (DRAM)
//     recover-no-help         recovery leaves flagged deletes undecided
//   (set; the map also has recover-no-copy and recover-no-trace).
// Not detectable (Mirror is durably linearizable; it does not answer
// pending operations).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "adapter.h"
#include "mirror_ordered.h"
#include "ferrite/mirror/bst.h"
#include "ferrite/mirror/internal/faults.h"

namespace adapter_mirror_bst {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fm = ferrite::mirror;
namespace op = ferrite::op;
using fa::Origin;

struct Traits {
  template <class C>
  using Structure = fm::Bst<C>;
  static constexpr const char* kSetName = "mirror-bst (set)";
  static constexpr const char* kMapName = "mirror-bst (map)";
  static constexpr unsigned kRecoveryFaults = fm::internal::kRecoverNoTrace | fm::internal::kRecoverNoCopy | fm::internal::kRecoverNoHelp;
  // Bench: two nodes per key (an internal node and a leaf), twice over for
  // what EBR holds back, plus per-thread slack, at most 3/8 of the pool per
  // replica. Crash campaigns (no key range): 2,048 nodes.
  static std::size_t bytes(const fa::Setup& s) {
    if (s.key_range == 0) return std::size_t{128} << 10;
    return 64 * (4 * static_cast<std::size_t>(s.key_range) + 64 * static_cast<std::size_t>(s.threads) * 1024);
  }
};

using Dram = fm::Config<fm::InDram>;
using Nvm = fm::Config<fm::InPool>;
template <unsigned F>
using DramF = fm::Config<fm::InDram, F>;
namespace fi = fm::internal;
template <class C>
using Set = fa::MirrorOrdered<Traits, C, op::Abstract::kSet>;
template <class C>
using Map = fa::MirrorOrdered<Traits, C, op::Abstract::kMap>;

fa::Registration reg(const char* subject, const char* variant, bool broken, bool ablation, const char* description) {
  return fa::Registration{.technique = "mirror-bst",
                          .subject = subject,
                          .variant = variant,
                          .family = "mirror",
                          .origin = Origin::kFerrite,
                          .broken = broken,
                          .ablation = ablation,
                          .description = description,
                          .bench = !broken,
                          .pool_size = std::size_t{1} << 30};
}

}  // namespace

FERRITE_REGISTER_ADAPTER(Set<Dram>, reg("mirror-bst", "correct", false, false,
                                        "Natarajan-Mittal BST + Mirror (PLDI'21), volatile replica in DRAM"));
FERRITE_REGISTER_ADAPTER(Set<Nvm>, reg("mirror-bst", "nvm-replica", false, true,
                                       "Natarajan-Mittal BST + Mirror, both replicas in the pool (§6.3)"));
FERRITE_REGISTER_ADAPTER(Map<Dram>, reg("mirror-bstmap", "correct", false, false,
                                        "Natarajan-Mittal BST + Mirror as a map, volatile replica in DRAM"));
FERRITE_REGISTER_ADAPTER(Map<Nvm>, reg("mirror-bstmap", "nvm-replica", false, true,
                                       "Natarajan-Mittal BST + Mirror as a map, both replicas in the pool"));
FERRITE_REGISTER_ADAPTER(Set<DramF<fi::kNoPwbBeforeVolatile>>,
                         reg("mirror-bst", "no-pwb-before-volatile", true, false,
                             "patomic CAS without the write-back of rep_p before the volatile DWCAS (Fig. 4 l.41)"));
FERRITE_REGISTER_ADAPTER(Set<DramF<fi::kHelperNoPwb>>,
                         reg("mirror-bst", "helper-no-pwb", true, false,
                             "patomic CAS helper copies rep_p to rep_v without writing it back (Fig. 4 l.20)"));
FERRITE_REGISTER_ADAPTER(Set<DramF<fi::kRecoverNoTrace>>,
                         reg("mirror-bst", "recover-no-trace", true, false,
                             "recovery copies the whole region without tracing and restarts the allocator"));
FERRITE_REGISTER_ADAPTER(Set<DramF<fi::kRecoverNoCopy>>,
                         reg("mirror-bst", "recover-no-copy", true, false,
                             "recovery rebuilds the free lists but not the volatile (DRAM) replica"));
FERRITE_REGISTER_ADAPTER(Set<DramF<fi::kRecoverNoHelp>>,
                         reg("mirror-bst", "recover-no-help", true, false,
                             "recovery does not finish the deletes that flagged their leaf before the crash"));
FERRITE_REGISTER_ADAPTER(Map<DramF<fi::kRecoverNoTrace>>,
                         reg("mirror-bstmap", "recover-no-trace", true, false,
                             "recovery copies the whole region without tracing and restarts the allocator"));
FERRITE_REGISTER_ADAPTER(Map<DramF<fi::kRecoverNoCopy>>,
                         reg("mirror-bstmap", "recover-no-copy", true, false,
                             "recovery rebuilds the free lists but not the volatile (DRAM) replica"));

}  // namespace adapter_mirror_bst
