// adapters/durable_sets.h — the one adapter of the competitor sets and maps
// written on a persistence policy (include/ferrite/baselines/
// durable_policy.h: Harris's list and hash table, the Natarajan–Mittal BST,
// the Herlihy–Shavit skip list), as a set or a map, and their
// registrations. An adapter file names its structure through a traits type:
//
//   struct T {
//     template <class P> using Structure = baselines::NmBst<P>;
//     static constexpr const char* kName = "nm-bst";        // for errors
//     static constexpr std::int64_t kCrashKeys = 2;         // crash workload's keys
//     template <class P> static std::unique_ptr<Structure<P>> create(pmem::Pool*, const Setup&);
//     template <class P> static std::unique_ptr<Structure<P>> attach(pmem::Pool&, const Setup&);
//   };
//
// Crash workload (next_op): kCrashKeys keys, 40% inserts (puts), 30%
// removes (erases), 30% lookups, so keys come and go and threads meet on the
// same nodes: an operation that reads another thread's CAS before that CAS
// is written back (what NVTraverse's ensureReachable/makePersistent cover)
// happens often enough for multi-threaded campaigns to catch the
// no-make-persistent variants. Values are 8 bytes (--value-size ignored).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "adapter.h"
#include "ferrite/baselines/durable_policy.h"

namespace ferrite::adapters {

template <class T, class P, op::Abstract A>
struct PolicySet {
  using Structure = typename T::template Structure<P>;
  using Handle = std::unique_ptr<Structure>;
  static constexpr op::Abstract kAbstract = A;
  static constexpr bool kDetectable = false;

  static Handle create(pmem::Pool* pool, const Setup& s) { return T::template create<P>(pool, s); }
  static Handle attach(pmem::Pool& pool, const Setup& s) {
    if constexpr (P::kDurable) return T::template attach<P>(pool, s);
    else throw std::logic_error(std::string(T::kName) + " is transient: nothing to attach to");
  }
  static op::Response apply(Handle& h, int tid, std::uint64_t, const op::Op& o) {
    if constexpr (A == op::Abstract::kSet) {
      switch (o.kind) {
        case op::kInsert: return op::Response::boolean(h->insert(o.arg, tid));
        case op::kRemove: return op::Response::boolean(h->remove(o.arg, tid));
        case op::kContains: return op::Response::boolean(h->contains(o.arg, tid));
        case op::kSync: return op::Response::ack();
        default: unsupported(T::kName, o);
      }
    } else {
      switch (o.kind) {
        case op::kPut: return op::Response::from(h->put(o.arg, o.arg2, tid));
        case op::kGet: return op::Response::from(h->get(o.arg, tid));
        case op::kErase: return op::Response::from(h->erase(o.arg, tid));
        case op::kSync: return op::Response::ack();
        default: unsupported(T::kName, o);
      }
    }
  }
  static op::Op next_op(int tid, std::uint64_t& rng, Workload& w) {
    const auto r = Workload::step(rng);
    const auto key = static_cast<std::int64_t>((r >> 4) % static_cast<std::uint64_t>(T::kCrashKeys) + 1);
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

// A durable competitor (crash subject `subject`, bench technique
// `technique` unless broken).
inline Registration durable_competitor(const char* technique, const char* subject, const char* family,
                                       const char* variant, bool broken, const char* description) {
  return Registration{.technique = technique,
                      .subject = subject,
                      .variant = variant,
                      .family = family,
                      .origin = Origin::kCompetitor,
                      .broken = broken,
                      .description = description,
                      .bench = !broken,
                      .pool_size = std::size_t{1} << 30};
}
// The transient original (bench only).
inline Registration transient_original(const char* technique, const char* family, const char* description) {
  return Registration{.technique = technique,
                      .family = family,
                      .origin = Origin::kTransient,
                      .description = description,
                      .crash = false,
                      .needs_pool = false,
                      .pool_size = 0};
}

// The policies, short, for the registration lists.
namespace policy {
using Trans = baselines::durable::Transient;
template <unsigned F = baselines::kNoFaults>
using Izr = baselines::durable::Izraelevitz<F>;
template <unsigned F = baselines::kNoFaults>
using Nvt = baselines::durable::NVTraverse<F>;
inline Registration izr(const char* technique, const char* subject, const char* variant, bool broken,
                        const char* description) {
  return durable_competitor(technique, subject, "izraelevitz", variant, broken, description);
}
inline Registration nvt(const char* technique, const char* subject, const char* variant, bool broken,
                        const char* description) {
  return durable_competitor(technique, subject, "nvtraverse", variant, broken, description);
}
}  // namespace policy

}  // namespace ferrite::adapters
