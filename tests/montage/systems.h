// tests/montage/systems.h — the nbMontage structures' tests run on both
// systems a structure is templated on: montage::EpochSys (persistent, in a
// pool) and montage::TransientSys (the transient original, payloads in
// DRAM; montage/transient_sys.h). A test creates its structure with make<M>
// and checks a restart only where the structure persists:
//
//   auto m = make<M>(pool, "m", threads, epochs, options...);
//   ... the same operations and checks on either system ...
//   if constexpr (kPersistent<M>) { auto r = restart<M>(pool, "m", threads, epochs, options...); ... }
//
// options... are the structure's own (HashMapOptions, ...; none for the
// queue); epochs are ignored by the transient system.
#pragma once

#include <memory>

#include "common/temp_pool.h"
#include "ferrite/montage/epoch_sys.h"

namespace ferrite::test::montage_systems {

template <class M>
inline constexpr bool kPersistent = M::Sys::kPersistent;

// A fresh structure: in `pool` (persistent) or in DRAM (transient; the pool
// is not touched).
template <class M, class... O>
std::unique_ptr<M> make(TempPool& pool, const char* name, int threads, const ferrite::montage::EpochOptions& epochs,
                        const O&... options) {
  if constexpr (kPersistent<M>) return M::create(*pool, name, threads, options..., epochs);
  else return M::create(threads, options...);
}

// A clean restart of a persistent structure: the pool reopened, the
// structure recovered by attach.
template <class M, class... O>
  requires kPersistent<M>
std::unique_ptr<M> restart(TempPool& pool, const char* name, int threads, const ferrite::montage::EpochOptions& epochs,
                           const O&... options) {
  pool.reopen();
  return M::attach(*pool, name, threads, options..., epochs);
}

}  // namespace ferrite::test::montage_systems
