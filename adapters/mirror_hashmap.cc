// adapters/mirror_hashmap.cc — mirror-hashmap: a hash table of Harris lists
// made durable by Mirror (include/ferrite/mirror/hash_map.h), as a map
// (crash subject mirror-hashmap) and as a set (crash subject
// mirror-hashset); both are the bench technique mirror-hashmap.
//
//   correct              volatile replica in DRAM (the paper's main mode)
//   correct-nvm-replica  both replicas in the pool (§6.3; an ablation)
//   broken variants (map): no-pwb-before-volatile (Fig. 4 l.41 removed),
//   helper-no-pwb (l.20 removed), recover-no-trace, recover-no-copy
//   (include/ferrite/mirror/internal/faults.h).
//   growth (crash only, not bench): correct-grow, correct-grow-nvm-replica
//   (ablation-style names: variants grow, grow-nvm-replica) — regions of 256 B
//   (a test hook, TinyRegions: 3 nodes a region), so a campaign of a
//   few dozen operations grows the chain many times (mirror/heap.h,
//   "Growth"); broken grow-link-first (a region linked before its header is
//   durable) and recover-no-mark-grown (the pool hook marks region 0 only).
// Buckets: one per key of the bench's key range (load factor 1, as the
// libcds-michael competitor); 2 in crash campaigns (16 keys), so threads
// meet on the same fields and helpers run. Capacity: the region is a first
// region only — the chain grows as the table fills (no region is sized for
// the whole run any more).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "adapter.h"
#include "ferrite/mirror/hash_map.h"
#include "ferrite/mirror/internal/faults.h"

namespace adapter_mirror_hashmap {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fm = ferrite::mirror;
namespace op = ferrite::op;
using fa::Origin;

template <class C, op::Abstract A>
struct MirrorHash {
  using Handle = std::unique_ptr<fm::HashMap<C>>;
  static constexpr op::Abstract kAbstract = A;
  static constexpr bool kDetectable = false;
  // Re-attach (run recovery in the runner) every 9 ops, unless recovery is
  // the broken part (adapters/mirror_list.cc).
  static constexpr int kReattachEvery =
      C::has(ferrite::mirror::internal::kRecoverNoTrace | ferrite::mirror::internal::kRecoverNoCopy) ? 0 : 9;

  static std::uint64_t buckets(const fa::Setup& s) { return s.key_range == 0 ? 2 : s.key_range; }
  static std::size_t bytes(const fa::Setup& s) {
    if (s.key_range == 0) return std::size_t{128} << 10;
    return 16 * buckets(s) + 64 * (2 * static_cast<std::size_t>(s.key_range) + 64 * static_cast<std::size_t>(s.threads) * 1024);
  }
  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    if constexpr (requires { C::hooks::kMinRegionBytes; })  // growth variants: the smallest first region
      return fm::HashMap<C>::create(*pool, s.name, s.threads, buckets(s), C::hooks::kMinRegionBytes);
    return fm::HashMap<C>::create(*pool, s.name, s.threads, buckets(s), std::min(bytes(s), pool->size() / 8 * 3));
  }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) {
    return fm::HashMap<C>::attach(pool, s.name, s.threads);
  }
  static op::Response apply(Handle& h, int tid, std::uint64_t, const op::Op& o) {
    if constexpr (A == op::Abstract::kSet) {
      switch (o.kind) {
        case op::kInsert: return op::Response::boolean(h->insert(o.arg, tid));
        case op::kRemove: return op::Response::boolean(h->remove(o.arg, tid));
        case op::kContains: return op::Response::boolean(h->contains(o.arg, tid));
        case op::kSync: return op::Response::ack();
        default: fa::unsupported("mirror-hashmap (set)", o);
      }
    } else {
      switch (o.kind) {
        case op::kPut: return op::Response::from(h->put(o.arg, o.arg2, tid));
        case op::kGet: return op::Response::from(h->get(o.arg, tid));
        case op::kErase: return op::Response::from(h->erase(o.arg, tid));
        case op::kSync: return op::Response::ack();
        default: fa::unsupported("mirror-hashmap (map)", o);
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
// The growth variants' hook (mirror/heap.h, internal::min_region_bytes):
// regions of 256 B (3 nodes each) instead of 64 KiB.
struct TinyRegions {
  static constexpr std::size_t kMinRegionBytes = 256;
};
using GrowDram = fm::Config<fm::InDram, 0, TinyRegions>;
using GrowNvm = fm::Config<fm::InPool, 0, TinyRegions>;
template <unsigned F>
using GrowDramF = fm::Config<fm::InDram, F, TinyRegions>;
template <class C>
using Map = MirrorHash<C, op::Abstract::kMap>;
template <class C>
using Set = MirrorHash<C, op::Abstract::kSet>;

fa::Registration reg(const char* subject, const char* variant, bool broken, bool ablation, const char* description) {
  return fa::Registration{.technique = "mirror-hashmap",
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

fa::Registration grow(const char* variant, bool broken, const char* description) {
  auto r = reg("mirror-hashmap", variant, broken, !broken, description);
  r.bench = false;  // 256-byte regions: a proof subject, not a configuration to measure
  return r;
}

}  // namespace

FERRITE_REGISTER_ADAPTER(Map<Dram>, reg("mirror-hashmap", "correct", false, false,
                                        "hash table of Harris lists + Mirror (PLDI'21), volatile replica in DRAM"));
FERRITE_REGISTER_ADAPTER(Map<Nvm>, reg("mirror-hashmap", "nvm-replica", false, true,
                                       "hash table of Harris lists + Mirror, both replicas in the pool (§6.3)"));
FERRITE_REGISTER_ADAPTER(Set<Dram>, reg("mirror-hashset", "correct", false, false,
                                        "hash table of Harris lists + Mirror as a set, volatile replica in DRAM"));
FERRITE_REGISTER_ADAPTER(Set<Nvm>, reg("mirror-hashset", "nvm-replica", false, true,
                                       "hash table of Harris lists + Mirror as a set, both replicas in the pool"));
FERRITE_REGISTER_ADAPTER(Map<DramF<fi::kNoPwbBeforeVolatile>>,
                         reg("mirror-hashmap", "no-pwb-before-volatile", true, false,
                             "patomic CAS without the write-back of rep_p before the volatile DWCAS (Fig. 4 l.41)"));
FERRITE_REGISTER_ADAPTER(Map<DramF<fi::kHelperNoPwb>>,
                         reg("mirror-hashmap", "helper-no-pwb", true, false,
                             "patomic CAS helper copies rep_p to rep_v without writing it back (Fig. 4 l.20)"));
FERRITE_REGISTER_ADAPTER(Map<DramF<fi::kRecoverNoTrace>>,
                         reg("mirror-hashmap", "recover-no-trace", true, false,
                             "recovery copies the whole region without tracing and restarts the allocator"));
FERRITE_REGISTER_ADAPTER(Map<DramF<fi::kRecoverNoCopy>>,
                         reg("mirror-hashmap", "recover-no-copy", true, false,
                             "recovery rebuilds the free lists but not the volatile (DRAM) replica"));
FERRITE_REGISTER_ADAPTER(Map<GrowDram>, grow("grow", false, "256-byte regions: the chain of regions grows during the run, DRAM replica"));
FERRITE_REGISTER_ADAPTER(Map<GrowNvm>,
                         grow("grow-nvm-replica", false, "256-byte regions: the chain grows, both replicas in the pool"));
FERRITE_REGISTER_ADAPTER(Map<GrowDramF<fi::kGrowLinkFirst>>,
                         grow("grow-link-first", true, "a new region is linked before its header is written back"));
FERRITE_REGISTER_ADAPTER(Map<GrowDramF<fi::kRecoverNoMarkGrown>>,
                         grow("recover-no-mark-grown", true,
                              "the pool recovery hook marks region 0 only: pool recovery frees grown regions"));

}  // namespace adapter_mirror_hashmap
