// ferrite/montage/internal/faults.h — fault switches of nbMontage's
// deliberately broken variants. Not API: users never name these.
//
// Every Ferrite structure proves that its crash campaigns can fail: the same
// template instantiated with a fault bit that removes one persistence or
// recovery step. The bits are constexpr template parameters (0 = correct), so
// the correct code compiles exactly as if the switches did not exist. The
// adapters (adapters/montage_*.cc) register each broken variant.
#pragma once

namespace ferrite::montage::fault {

inline constexpr unsigned kNone = 0;
// advance() does not write back the lagging thread's to-be-persisted buffer
// (Fig. 2 l.101 removed): a sync returns with payloads still in the cache.
inline constexpr unsigned kNoTbpWriteback = 1u << 0;
// Recovery accepts a block whose operation's descriptor says it did not
// commit (§3.4 rule 2 reduced to "any serial number <= the descriptor's").
inline constexpr unsigned kAcceptUncommitted = 1u << 1;
// Recovery ignores anti-nodes (§3.4 rule 3 removed): detached payloads come
// back.
inline constexpr unsigned kIgnoreAnti = 1u << 2;
// Recovery leaves the global epoch where the crash found it (the new run
// reuses the crashed run's epochs; the public artifact's behaviour).
inline constexpr unsigned kNoEpochRestore = 1u << 3;
// Recovery moves the global epoch past the crashed run's BEFORE its resets
// of the rejected blocks are durable: a second crash in between leaves an
// epoch under which the rejected blocks of the last two epochs pass rule 1.
inline constexpr unsigned kRestoreBeforeReset = 1u << 4;
// Recovery does not reset the blocks it rejects or cancels (D9's resets
// removed; the epoch is still restored): they keep their tags, and once
// the new run has made two epochs durable and its serial numbers passed
// theirs, a second recovery finds them in use.
inline constexpr unsigned kNoRecoveryReset = 1u << 5;

// The to-be-persisted buffers write back only the header line of each
// block, not its payload bytes: a payload's epoch becomes durable with its
// key and value still in the cache (a crash may find the header of a
// committed payload and stale bytes after it).
inline constexpr unsigned kNoPayloadWriteback = 1u << 6;
// A map returns a payload it detached (remove, replace) to the allocator
// at once (EpochSys::free_now) instead of through pdelete's epoch delay:
// recovery may still need it, and a concurrent reader may still read it.
inline constexpr unsigned kFreeOnDetach = 1u << 7;

}  // namespace ferrite::montage::fault
