// adapters/durable_sets.cc — Harris's lock-free list hash table
// (include/ferrite/baselines/harris_hash.h) under its three persistence
// policies, as a map and as a set:
//
//   bench technique       crash subjects                          origin
//   harris-hashmap        (none: transient, DRAM)                 transient
//   izraelevitz-hashmap   izraelevitz-hashmap, izraelevitz-hashset competitor
//   nvtraverse-hashmap    nvtraverse-hashmap, nvtraverse-hashset   competitor
//
// Broken variants (the crash tests catch each): izraelevitz-hashmap and
// nvtraverse-hashmap no-cas-pwb (CASes not written back), and
// nvtraverse-hashset no-make-persistent (the traversal's end writes back
// neither the link into left nor the returned nodes: only another thread's
// CAS read before its write-back exposes it, so it takes 2 threads; the map
// shares the traversal, and its campaigns hit the window too rarely for a
// test).
// Buckets: one per key of the bench's key range (load factor 1, as
// mirror-hashmap and libcds-michael); 1 in crash campaigns, so threads meet
// in the same list (the workload: kCrashKeys below). Values are 8 bytes
// (--value-size ignored).
#include <cstdint>
#include <memory>
#include <vector>

#include "adapter.h"
#include "ferrite/baselines/harris_hash.h"

namespace {

namespace fa = ferrite::adapters;
namespace fb = ferrite::baselines;
namespace op = ferrite::op;
using fa::Origin;

// Crash campaigns' workload: 2 keys in one bucket, 40% inserts (puts), 30%
// removes (erases), 30% lookups, so keys come and go and threads meet on
// the same nodes: an operation that reads another thread's CAS before that
// CAS is written back (what NVTraverse's ensureReachable/makePersistent
// cover) then happens often enough for multi-threaded campaigns to catch
// the no-make-persistent variant (`crashtest --all` too: its 4th extra
// seed). With the default workload (16 keys, 2 buckets) it hid in ~30,000
// images; with 4 keys only 2-thread runs over every crash point caught it.
constexpr std::uint64_t kCrashKeys = 2;

template <class P, op::Abstract A>
struct HarrisHash {
  using T = fb::HarrisHashTable<P>;
  using Handle = std::unique_ptr<T>;
  static constexpr op::Abstract kAbstract = A;
  static constexpr bool kDetectable = false;

  static std::uint64_t buckets(const fa::Setup& s) { return s.key_range == 0 ? 1 : s.key_range; }
  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    if constexpr (P::kDurable) return T::create(*pool, s.name, s.threads, buckets(s));
    else return std::make_unique<T>(s.threads, buckets(s));
  }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) {
    if constexpr (P::kDurable) return T::attach(pool, s.name, s.threads);
    else throw std::logic_error("harris-hashmap is transient: nothing to attach to");
  }
  static op::Response apply(Handle& h, int tid, std::uint64_t, const op::Op& o) {
    if constexpr (A == op::Abstract::kSet) {
      switch (o.kind) {
        case op::kInsert: return op::Response::boolean(h->insert(o.arg, tid));
        case op::kRemove: return op::Response::boolean(h->remove(o.arg, tid));
        case op::kContains: return op::Response::boolean(h->contains(o.arg, tid));
        case op::kSync: return op::Response::ack();
        default: fa::unsupported("harris hash table (set)", o);
      }
    } else {
      switch (o.kind) {
        case op::kPut: return op::Response::from(h->put(o.arg, o.arg2, tid));
        case op::kGet: return op::Response::from(h->get(o.arg, tid));
        case op::kErase: return op::Response::from(h->erase(o.arg, tid));
        case op::kSync: return op::Response::ack();
        default: fa::unsupported("harris hash table (map)", o);
      }
    }
  }
  static op::Op next_op(int tid, std::uint64_t& rng, fa::Workload& w) {
    const auto r = fa::Workload::step(rng);
    const auto key = static_cast<std::int64_t>((r >> 4) % kCrashKeys + 1);
    const auto c = r % 10;
    if constexpr (A == op::Abstract::kSet) {
      if (c < 4) return {op::kInsert, key, 0};
      if (c < 7) return {op::kRemove, key, 0};
      return {op::kContains, key, 0};
    } else {
      if (c < 4) return {op::kPut, key, w.unique(tid)};
      if (c < 7) return {op::kErase, key, 0};
      return {op::kGet, key, 0};
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

template <class P>
using Map = HarrisHash<P, op::Abstract::kMap>;
template <class P>
using Set = HarrisHash<P, op::Abstract::kSet>;
using Trans = fb::harris::Transient;
template <unsigned F = fb::kNoFaults>
using Izr = fb::harris::Izraelevitz<F>;
template <unsigned F = fb::kNoFaults>
using Nvt = fb::harris::NVTraverse<F>;

fa::Registration durable(const char* technique, const char* subject, const char* family, const char* variant,
                         bool broken, const char* description) {
  return fa::Registration{.technique = technique,
                          .subject = subject,
                          .variant = variant,
                          .family = family,
                          .origin = Origin::kCompetitor,
                          .broken = broken,
                          .description = description,
                          .bench = !broken,
                          .pool_size = std::size_t{1} << 30};
}
fa::Registration izr(const char* subject, const char* variant, bool broken, const char* description) {
  return durable("izraelevitz-hashmap", subject, "izraelevitz", variant, broken, description);
}
fa::Registration nvt(const char* subject, const char* variant, bool broken, const char* description) {
  return durable("nvtraverse-hashmap", subject, "nvtraverse", variant, broken, description);
}
fa::Registration transient(const char* description) {
  return fa::Registration{.technique = "harris-hashmap",
                          .family = "harris",
                          .origin = Origin::kTransient,
                          .description = description,
                          .crash = false,
                          .needs_pool = false,
                          .pool_size = 0};
}

}  // namespace

FERRITE_REGISTER_ADAPTER(Map<Trans>, transient("hash table of Harris lists (DISC'01), value CAS + tombstones (transient)"));
FERRITE_REGISTER_ADAPTER(Set<Trans>, transient("hash table of Harris lists (DISC'01) as a set (transient)"));

FERRITE_REGISTER_ADAPTER(Map<Izr<>>, izr("izraelevitz-hashmap", "correct", false,
                                         "Harris-list hash map + Izraelevitz DISC'16 transform (pwb+psync after every shared access)"));
FERRITE_REGISTER_ADAPTER(Set<Izr<>>, izr("izraelevitz-hashset", "correct", false,
                                         "Harris-list hash set + Izraelevitz DISC'16 transform"));
FERRITE_REGISTER_ADAPTER(Map<Izr<fb::kNoLinkPwb>>,
                         izr("izraelevitz-hashmap", "no-cas-pwb", true, "CASes are not written back (loads still are)"));

FERRITE_REGISTER_ADAPTER(Map<Nvt<>>, nvt("nvtraverse-hashmap", "correct", false,
                                         "Harris-list hash map + NVTraverse PLDI'20 (no flush while traversing; "
                                         "ensureReachable + makePersistent, then flush every critical read and CAS)"));
FERRITE_REGISTER_ADAPTER(Set<Nvt<>>, nvt("nvtraverse-hashset", "correct", false,
                                         "Harris-list hash set + NVTraverse PLDI'20"));
FERRITE_REGISTER_ADAPTER(Map<Nvt<fb::kNoLinkPwb>>,
                         nvt("nvtraverse-hashmap", "no-cas-pwb", true, "CASes are not written back (flush after CAS removed)"));
FERRITE_REGISTER_ADAPTER(Set<Nvt<fb::harris::kNoMakePersistent>>,
                         nvt("nvtraverse-hashset", "no-make-persistent", true,
                             "the traversal's end writes back nothing (no ensureReachable, no makePersistent)"));
