// ferrite/baselines/internal/durable_faults.h — test machinery: the fault
// bits of the broken variants of the competitors written on a persistence
// policy (baselines/durable_policy.h). Not part of the public API; the crash
// tests must catch each.
#pragma once

namespace ferrite::baselines::internal {

// NVTraverse: the traversal's end writes back nothing (no ensureReachable,
// no makePersistent; the fence stays).
inline constexpr unsigned kNoMakePersistent = 1u << 8;
// The Natarajan–Mittal BST's recovery does not finish the deletes that
// flagged their leaf before the crash (nm_bst.h, Recovery).
inline constexpr unsigned kNoRecoveryHelp = 1u << 9;

}  // namespace ferrite::baselines::internal
