// ferrite/logging/internal/faults.h — the deliberately broken variants of
// the logging library (not API: the crash tests must catch each one — by a
// campaign, but for kNoHelperPruneDurable and kNoOwnerPruneJoin, below,
// which model-level tests catch).
#pragma once

namespace ferrite::logging::internal {

enum Fault : unsigned {
  kNoFaults = 0,
  // Recovery rolls valid store entries back in creation order instead of
  // reverse creation order (StrandWeaver §V: "in reverse order of their
  // creation"). Stored in the log area, because recovery is the pool's.
  kForwardRollback = 1u << 0,
  // No write-back ordering between an undo entry and its in-place update:
  // x86 drops the sfence of "Undo-Log(A); CLFLUSH Log; ST A" (HOPS+ paper,
  // Table 1), strand drops the persist barrier (StrandWeaver Fig. 5),
  // HOPS drops the ofence.
  kNoLogFence = 1u << 1,
  // ATLAS / SFR without the synchronization history: acquire entries record
  // no happens-after dependency (the HOPS+ paper's Figure 1 then recovers
  // {FLAG=0, DATA=1}).
  kNoSyncHistory = 1u << 2,
  // HOPS / HOPS+ without the dfence that makes a region's end (commit or
  // release) entry durable before the region ends (HOPS+ paper, Table 1:
  // "Log-Rel(L); DFENCE; Unlock L"): a completed region can be undone.
  kNoDurableEnd = 1u << 3,
  // HOPS+ under ATLAS without closed nesting (HOPS+ paper §3): a lock
  // released inside an outermost section is handed over at once, so a
  // section can acquire from one a crash undoes — and HOPS+ keeps no
  // software history to undo it with (Figure 1: {FLAG=1, DATA=0}).
  kOpenNesting = 1u << 4,
  // A helper (a thread pruning another thread's log: make_room / drain)
  // only orders its prune (as the owner does) instead of making it durable
  // before the owner may reuse the pruned slots (Logger::prune_durable).
  // The exception here: not a variant a CI campaign catches. Under x86
  // and HOPS the fence is not needed (Logger::prune's PERSIST argument; a
  // campaign runs this variant clean); under strand it is: the model-level
  // test TableTwoCrashTinyLog.UnderStrandTheHelpersPruneFence... shows the
  // image it excludes, and an exploratory campaign on an 8-entry log
  // reaches it in ~7 % of its runs, not reproducibly (docs/logging.md).
  kNoHelperPruneDurable = 1u << 5,
  // The in-run rollback of a region that met a full log (Logger::
  // abort_region, LogFull) without the durability point between the old
  // values it writes back and the invalidation of the region's entries:
  // an entry's invalidation may persist before the old value it describes,
  // and a crash then leaves that word holding the region's value while
  // recovery (no live entry for it) rolls back the region's other words —
  // a region partly visible (TableTwoCrashLogFull).
  kNoRollbackDurable = 1u << 6,
  // Under strand, the owner's join_strand before an entry that reuses the
  // end slot of a region it pruned itself since its last join_strand
  // (Logger::append) is dropped: the owner's invalidations and head are
  // ordered only within its current strand (a persist barrier), its next
  // entries are on new strands, and an entry torn in that end slot hides
  // the end entry while the region's other entries are still live —
  // recovery undoes a completed region. Caught by the model-level test
  // owner_prune_crash_test.cc (OwnerPrune.UnderStrand...).
  kNoOwnerPruneJoin = 1u << 7,
};

// Test hook: stop a commit after step `n` of StrandWeaver Fig. 6(a)
// (1: commit marker durable, 2: entries invalidated, 3: head advanced) by
// returning from it early — the tests then abandon the handle as a crash
// would. 0: run the whole commit.
inline thread_local int stop_commit_after_step = 0;

}  // namespace ferrite::logging::internal
