// adapters/mirror_list.cc — mirror-list: Harris's lock-free list made
// durable by Mirror (include/ferrite/mirror/list.h), as a set.
//
//   correct              volatile replica in DRAM (the paper's main mode)
//   correct-nvm-replica  both replicas in the pool (the paper's §6.3 mode;
//                        an ablation: the DRAM replica is the optimisation)
//   broken variants      (include/ferrite/mirror/internal/faults.h)
//     no-pwb-before-volatile  Fig. 4 l.41 removed
//     helper-no-pwb           Fig. 4 l.20 removed
//     recover-no-trace        recovery copies the region, forgets the live set
//     recover-no-copy         recovery never rebuilds rep_v (DRAM mode and
//                             pool mode)
// Not detectable (Mirror is durably linearizable; it does not answer
// pending operations).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "adapter.h"
#include "ferrite/mirror/internal/faults.h"
#include "ferrite/mirror/list.h"

namespace adapter_mirror_list {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fm = ferrite::mirror;
namespace op = ferrite::op;
using fa::Origin;

template <class C>
struct MirrorList {
  using Handle = std::unique_ptr<fm::List<C>>;
  static constexpr op::Abstract kAbstract = op::Abstract::kSet;
  static constexpr bool kDetectable = false;
  // Single-threaded campaigns re-attach (= run Mirror's recovery on the live
  // pool) every 9 operations — not with a broken recovery, whose damage
  // must show in the restarted machine, not crash the campaign's runner.
  static constexpr int kReattachEvery =
      C::has(ferrite::mirror::internal::kRecoverNoTrace | ferrite::mirror::internal::kRecoverNoCopy) ? 0 : 9;

  // Bench: two nodes per key of the range (EBR holds retired ones a while)
  // plus slack, at most 3/8 of the pool per replica (both replicas of the
  // pool placement then fit); crash campaigns (no key range): 2,048 nodes.
  // A list is for small key ranges (the paper's: 256): `ferrite bench -s set`
  // defaults to 1 M keys, which a list prefills in hours.
  static std::size_t bytes(const fa::Setup& s) {
    if (s.key_range == 0) return std::size_t{128} << 10;
    return 64 * (2 * static_cast<std::size_t>(s.key_range) + 64 * static_cast<std::size_t>(s.threads) * 1024);
  }
  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    return fm::List<C>::create(*pool, s.name, s.threads, std::min(bytes(s), pool->size() / 8 * 3));
  }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) {
    return fm::List<C>::attach(pool, s.name, s.threads);
  }
  static op::Response apply(Handle& h, int tid, std::uint64_t, const op::Op& o) {
    switch (o.kind) {
      case op::kInsert: return op::Response::boolean(h->insert(o.arg, tid));
      case op::kRemove: return op::Response::boolean(h->remove(o.arg, tid));
      case op::kContains: return op::Response::boolean(h->contains(o.arg, tid));
      case op::kSync: return op::Response::ack();
      default: fa::unsupported("mirror-list", o);
    }
  }
  static std::vector<std::int64_t> observe(Handle& h) {
    std::vector<std::int64_t> keys;
    for (const auto& [k, v] : h->items(false)) keys.push_back(k);
    return keys;
  }
};

using Dram = fm::Config<fm::InDram>;
using Nvm = fm::Config<fm::InPool>;
template <unsigned F>
using DramF = fm::Config<fm::InDram, F>;
template <unsigned F>
using NvmF = fm::Config<fm::InPool, F>;
namespace fi = fm::internal;

fa::Registration reg(const char* variant, bool broken, bool ablation, const char* description) {
  return fa::Registration{.technique = "mirror-list",
                          .variant = variant,
                          .family = "mirror",
                          .origin = Origin::kFerrite,
                          .broken = broken,
                          .ablation = ablation,
                          .description = description,
                          .bench = !broken};
}

}  // namespace

FERRITE_REGISTER_ADAPTER(MirrorList<Dram>,
                         reg("correct", false, false, "Harris list + Mirror (PLDI'21), volatile replica in DRAM"));
FERRITE_REGISTER_ADAPTER(MirrorList<Nvm>, reg("nvm-replica", false, true,
                                              "Harris list + Mirror, both replicas in the pool (PLDI'21 §6.3)"));
FERRITE_REGISTER_ADAPTER(MirrorList<DramF<fi::kNoPwbBeforeVolatile>>,
                         reg("no-pwb-before-volatile", true, false,
                             "patomic CAS without the write-back of rep_p before the volatile DWCAS (Fig. 4 l.41)"));
FERRITE_REGISTER_ADAPTER(MirrorList<DramF<fi::kHelperNoPwb>>,
                         reg("helper-no-pwb", true, false,
                             "patomic CAS helper copies rep_p to rep_v without writing it back (Fig. 4 l.20)"));
FERRITE_REGISTER_ADAPTER(MirrorList<DramF<fi::kRecoverNoTrace>>,
                         reg("recover-no-trace", true, false,
                             "recovery copies the whole region without tracing and restarts the allocator"));
FERRITE_REGISTER_ADAPTER(MirrorList<DramF<fi::kRecoverNoCopy>>,
                         reg("recover-no-copy", true, false,
                             "recovery rebuilds the free lists but not the volatile (DRAM) replica"));
FERRITE_REGISTER_ADAPTER(MirrorList<NvmF<fi::kRecoverNoCopy>>,
                         reg("nvm-recover-no-copy", true, false,
                             "both replicas in the pool; recovery does not rebuild the volatile half"));

}  // namespace adapter_mirror_list
