// adapters/durable_sets.cc — Harris's lock-free list and the hash table of
// such lists (include/ferrite/baselines/harris_hash.h) under their three
// persistence policies (adapters/durable_sets.h):
//
//   bench technique       crash subjects                          origin
//   harris-hashmap        (none: transient, DRAM)                 transient
//   izraelevitz-hashmap   izraelevitz-hashmap, izraelevitz-hashset competitor
//   nvtraverse-hashmap    nvtraverse-hashmap, nvtraverse-hashset   competitor
//   harris-list           (none: transient, DRAM; a set)          transient
//   izraelevitz-list      izraelevitz-list                        competitor
//   nvtraverse-list       nvtraverse-list                         competitor
//
// The list is the table with one bucket (Mirror's list experiment: 256
// keys, one Harris list). Broken variants (the crash tests catch each):
// izraelevitz-hashmap, nvtraverse-hashmap and the lists no-cas-pwb (CASes
// not written back), and nvtraverse-hashset / nvtraverse-list
// no-make-persistent (the traversal's end writes back neither the link into
// left nor the returned nodes: only another thread's CAS read before its
// write-back exposes it, so it takes 2+ threads). The map's
// no-make-persistent is caught only by a 2-thread PCT-scheduled campaign over
// every crash point, which `ferrite crashtest --all` (60 sampled points) does
// not run: not registered, so --all stays a clean verdict
// (docs/baselines.md).
// Buckets: one per key of the bench's key range (load factor 1, as
// mirror-hashmap and libcds-michael); 1 in crash campaigns, so threads meet
// in the same list. Crash workload: 2 keys (with the default 16 keys in 2
// buckets no-make-persistent hid in ~30,000 images; with 4 keys only
// 2-thread runs over every crash point caught it).
#include <cstdint>
#include <memory>

#include "adapter.h"
#include "durable_sets.h"
#include "ferrite/baselines/harris_hash.h"

namespace adapter_durable_sets {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fb = ferrite::baselines;
namespace op = ferrite::op;

template <bool kList>
struct Harris {
  template <class P>
  using Structure = fb::HarrisHashTable<P>;
  static constexpr const char* kName = kList ? "harris list" : "harris hash table";
  static constexpr std::int64_t kCrashKeys = 2;
  static std::uint64_t buckets(const fa::Setup& s) { return kList || s.key_range == 0 ? 1 : s.key_range; }
  template <class P>
  static std::unique_ptr<Structure<P>> create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    if constexpr (P::kDurable) return Structure<P>::create(*pool, s.name, s.threads, buckets(s));
    else return std::make_unique<Structure<P>>(s.threads, buckets(s));
  }
  template <class P>
  static std::unique_ptr<Structure<P>> attach(ferrite::pmem::Pool& pool, const fa::Setup& s) {
    return Structure<P>::attach(pool, s.name, s.threads);
  }
};

template <class P>
using Map = fa::PolicySet<Harris<false>, P, op::Abstract::kMap>;
template <class P>
using Set = fa::PolicySet<Harris<false>, P, op::Abstract::kSet>;
template <class P>
using List = fa::PolicySet<Harris<true>, P, op::Abstract::kSet>;
using fa::policy::Izr;
using fa::policy::izr;
using fa::policy::Nvt;
using fa::policy::nvt;
using fa::policy::Trans;
constexpr unsigned kNoMakePersistent = fb::internal::kNoMakePersistent;

}  // namespace

// ------------------------------------------------------------ hash table
FERRITE_REGISTER_ADAPTER(Map<Trans>, fa::transient_original("harris-hashmap", "harris",
                                                            "hash table of Harris lists (DISC'01), value CAS + tombstones (transient)"));
FERRITE_REGISTER_ADAPTER(Set<Trans>, fa::transient_original("harris-hashmap", "harris",
                                                            "hash table of Harris lists (DISC'01) as a set (transient)"));

FERRITE_REGISTER_ADAPTER(Map<Izr<>>, izr("izraelevitz-hashmap", "izraelevitz-hashmap", "correct", false,
                                         "Harris-list hash map + Izraelevitz DISC'16 transform (pwb+psync after every shared access)"));
FERRITE_REGISTER_ADAPTER(Set<Izr<>>, izr("izraelevitz-hashmap", "izraelevitz-hashset", "correct", false,
                                         "Harris-list hash set + Izraelevitz DISC'16 transform"));
FERRITE_REGISTER_ADAPTER(Map<Izr<fb::kNoLinkPwb>>, izr("izraelevitz-hashmap", "izraelevitz-hashmap", "no-cas-pwb", true,
                                                       "CASes are not written back (loads still are)"));

FERRITE_REGISTER_ADAPTER(Map<Nvt<>>, nvt("nvtraverse-hashmap", "nvtraverse-hashmap", "correct", false,
                                         "Harris-list hash map + NVTraverse PLDI'20 (no flush while traversing; "
                                         "ensureReachable + makePersistent, then flush every critical read and CAS)"));
FERRITE_REGISTER_ADAPTER(Set<Nvt<>>, nvt("nvtraverse-hashmap", "nvtraverse-hashset", "correct", false,
                                         "Harris-list hash set + NVTraverse PLDI'20"));
FERRITE_REGISTER_ADAPTER(Map<Nvt<fb::kNoLinkPwb>>, nvt("nvtraverse-hashmap", "nvtraverse-hashmap", "no-cas-pwb", true,
                                                       "CASes are not written back (flush after CAS removed)"));
FERRITE_REGISTER_ADAPTER(Set<Nvt<kNoMakePersistent>>,
                         nvt("nvtraverse-hashmap", "nvtraverse-hashset", "no-make-persistent", true,
                             "the traversal's end writes back nothing (no ensureReachable, no makePersistent)"));

// ------------------------------------------------------------ list (one bucket)
FERRITE_REGISTER_ADAPTER(List<Trans>, fa::transient_original("harris-list", "harris",
                                                             "Harris's lock-free linked list (DISC'01), a set (transient)"));
FERRITE_REGISTER_ADAPTER(List<Izr<>>, izr("izraelevitz-list", "izraelevitz-list", "correct", false,
                                          "Harris list + Izraelevitz DISC'16 transform (pwb+psync after every shared access)"));
FERRITE_REGISTER_ADAPTER(List<Izr<fb::kNoLinkPwb>>, izr("izraelevitz-list", "izraelevitz-list", "no-cas-pwb", true,
                                                        "CASes are not written back (loads still are)"));
FERRITE_REGISTER_ADAPTER(List<Nvt<>>, nvt("nvtraverse-list", "nvtraverse-list", "correct", false,
                                          "Harris list + NVTraverse PLDI'20 (no flush while traversing; "
                                          "ensureReachable + makePersistent, then flush every critical read and CAS)"));
FERRITE_REGISTER_ADAPTER(List<Nvt<fb::kNoLinkPwb>>, nvt("nvtraverse-list", "nvtraverse-list", "no-cas-pwb", true,
                                                        "CASes are not written back (flush after CAS removed)"));
FERRITE_REGISTER_ADAPTER(List<Nvt<kNoMakePersistent>>,
                         nvt("nvtraverse-list", "nvtraverse-list", "no-make-persistent", true,
                             "the traversal's end writes back nothing (no ensureReachable, no makePersistent)"));

}  // namespace adapter_durable_sets
