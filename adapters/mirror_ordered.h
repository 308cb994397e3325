// adapters/mirror_ordered.h — the one adapter of Mirror's ordered
// structures (the Natarajan–Mittal BST, the skip list), as a set or a map:
// they share create/attach (a region size), insert/remove/contains,
// put/get/erase and items(); an adapter file names its structure through a
// traits type T:
//
//   struct T {
//     template <class C> using Structure = mirror::Bst<C>;
//     static constexpr const char* kSetName = "mirror-bst (set)", *kMapName = ...;
//     static constexpr unsigned kRecoveryFaults = ...;  // faults that break recovery
//     static std::size_t bytes(const Setup&);            // region size per replica
//   };
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "adapter.h"
#include "ferrite/mirror/internal/faults.h"

namespace ferrite::adapters {

template <class T, class C, op::Abstract A>
struct MirrorOrdered {
  using Structure = typename T::template Structure<C>;
  using Handle = std::unique_ptr<Structure>;
  static constexpr op::Abstract kAbstract = A;
  static constexpr bool kDetectable = false;
  // Single-threaded campaigns re-attach (run recovery on the live pool)
  // every 9 operations, unless recovery is the broken part
  // (adapters/mirror_list.cc).
  static constexpr int kReattachEvery = C::has(T::kRecoveryFaults) ? 0 : 9;

  static Handle create(pmem::Pool* pool, const Setup& s) {
    return Structure::create(*pool, s.name, s.threads, std::min(T::bytes(s), pool->size() / 8 * 3));
  }
  static Handle attach(pmem::Pool& pool, const Setup& s) { return Structure::attach(pool, s.name, s.threads); }
  static op::Response apply(Handle& h, int tid, std::uint64_t, const op::Op& o) {
    if constexpr (A == op::Abstract::kSet) {
      switch (o.kind) {
        case op::kInsert: return op::Response::boolean(h->insert(o.arg, tid));
        case op::kRemove: return op::Response::boolean(h->remove(o.arg, tid));
        case op::kContains: return op::Response::boolean(h->contains(o.arg, tid));
        case op::kSync: return op::Response::ack();
        default: unsupported(T::kSetName, o);
      }
    } else {
      switch (o.kind) {
        case op::kPut: return op::Response::from(h->put(o.arg, o.arg2, tid));
        case op::kGet: return op::Response::from(h->get(o.arg, tid));
        case op::kErase: return op::Response::from(h->erase(o.arg, tid));
        case op::kSync: return op::Response::ack();
        default: unsupported(T::kMapName, o);
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

}  // namespace ferrite::adapters
