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
#include "ferrite/mirror/bst.h"
#include "ferrite/mirror/internal/faults.h"

namespace {

namespace fa = ferrite::adapters;
namespace fm = ferrite::mirror;
namespace op = ferrite::op;
using fa::Origin;

template <class C, op::Abstract A>
struct MirrorBst {
  using Handle = std::unique_ptr<fm::Bst<C>>;
  static constexpr op::Abstract kAbstract = A;
  static constexpr bool kDetectable = false;
  // Single-threaded campaigns re-attach (run recovery on the live pool)
  // every 9 operations, unless recovery is the broken part
  // (adapters/mirror_list.cc).
  static constexpr int kReattachEvery =
      C::has(fm::internal::kRecoverNoTrace | fm::internal::kRecoverNoCopy | fm::internal::kRecoverNoHelp) ? 0 : 9;

  // Bench: two nodes per key (an internal node and a leaf), twice over for
  // what EBR holds back, plus per-thread slack, at most 3/8 of the pool per
  // replica. Crash campaigns (no key range): 2,048 nodes.
  static std::size_t bytes(const fa::Setup& s) {
    if (s.key_range == 0) return std::size_t{128} << 10;
    return 64 * (4 * static_cast<std::size_t>(s.key_range) + 64 * static_cast<std::size_t>(s.threads) * 1024);
  }
  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    return fm::Bst<C>::create(*pool, s.name, s.threads, std::min(bytes(s), pool->size() / 8 * 3));
  }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) {
    return fm::Bst<C>::attach(pool, s.name, s.threads);
  }
  static op::Response apply(Handle& h, int tid, std::uint64_t, const op::Op& o) {
    if constexpr (A == op::Abstract::kSet) {
      switch (o.kind) {
        case op::kInsert: return op::Response::boolean(h->insert(o.arg, tid));
        case op::kRemove: return op::Response::boolean(h->remove(o.arg, tid));
        case op::kContains: return op::Response::boolean(h->contains(o.arg, tid));
        case op::kSync: return op::Response::ack();
        default: fa::unsupported("mirror-bst (set)", o);
      }
    } else {
      switch (o.kind) {
        case op::kPut: return op::Response::from(h->put(o.arg, o.arg2, tid));
        case op::kGet: return op::Response::from(h->get(o.arg, tid));
        case op::kErase: return op::Response::from(h->erase(o.arg, tid));
        case op::kSync: return op::Response::ack();
        default: fa::unsupported("mirror-bst (map)", o);
      }
    }
  }
  static std::vector<std::int64_t> observe(Handle& h) {
    std::vector<std::int64_t> out;
    for (const auto& [k, v] : h->items(A == op::Abstract::kMap)) {
      out.push_back(k);
      if constexpr (A == op::Abstract::kMap) out.push_back(v);
    }
    return out;
  }
};

using Dram = fm::Config<fm::InDram>;
using Nvm = fm::Config<fm::InPool>;
template <unsigned F>
using DramF = fm::Config<fm::InDram, F>;
namespace fi = fm::internal;
template <class C>
using Set = MirrorBst<C, op::Abstract::kSet>;
template <class C>
using Map = MirrorBst<C, op::Abstract::kMap>;

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
