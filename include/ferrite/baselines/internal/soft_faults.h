// ferrite/baselines/internal/soft_faults.h — test machinery: the persistence
// or recovery steps a deliberately broken variant of the SOFT hash table
// (baselines/soft_hash.h) leaves out. Not part of the public API; the crash
// tests must catch each (tests/baselines/soft_hash_crash_test.cc).
#pragma once

namespace ferrite::baselines::soft::internal {

enum Fault : unsigned {
  kNoFaults = 0,
  // create() does not write the PNode back: the state moves to INSERTED
  // (the insert is reported complete) with the PNode possibly still only in
  // the cache.
  kNoCreatePwb = 1u << 0,
  // Recovery keeps every PNode whose validStart == validEnd, ignoring the
  // deleted bit: removed keys come back.
  kRecoveryIgnoresDeleted = 1u << 1,
  // An insert that finds its key INTEND_TO_INSERT moves the state to
  // INSERTED without creating (writing back) the PNode first: only a second
  // thread's insert exposes it.
  kNoHelpCreate = 1u << 2,
  // A map update of a present key stores value1 without writing it back
  // before the new value is published (and the put returns).
  kNoUpdatePwb = 1u << 3,
};

}  // namespace ferrite::baselines::soft::internal
