// ferrite/combining/internal/faults.h — fault switches of the deliberately
// broken variants. Not API: users never name these.
//
// Every Ferrite structure proves its recovery with crash campaigns, and
// proves the campaigns can fail with a broken variant: the same template
// instantiated with a fault bit that removes one persistence step. The bits
// are constexpr template parameters (0 = correct), so the correct code is
// compiled exactly as if the switches did not exist. The adapters
// (adapters/*.cc) register each broken variant with the crash campaigns.
#pragma once

namespace ferrite::combining {

// Each bit removes one persistence step (broken variants; default 0).
enum Fault : unsigned {
  kNoFaults = 0,
  kNoPfenceBetweenPwbs = 1u << 0,  // PBcomb Alg. 2 l.23 removed
  kNoPsyncBeforeUnlock = 1u << 1,  // PBcomb Alg. 2 l.27 removed
  kNoToPersist = 1u << 2,          // PBqueue Alg. 5 l.24 removed (nodes not written back)
  kNoOldTail = 1u << 3,            // PBqueue Alg. 6 l.57 removed (dequeuers pass the tail)
  kNoNodePwb = 1u << 4,            // PBstack: new nodes not written back
  kNoHelperPwbS = 1u << 5,         // PWFcomb (the PWF helper's)
  // PBcomb's stamped round (the default design, pbcomb.h):
  kNoChecksumCheck = 1u << 12,     // recovery trusts the newest round stamp without its checksum
  kNoOutsideFence = 1u << 13,      // no pfence between the nodes' write-backs and the record's
  kHeadOnly = 1u << 14,            // a round writes back only the record's head, not its changed entry lines
  kSealBeforeFill = 1u << 6,       // the stamp and checksum are computed over dst before the round's data is in it
  kStaleLines = 1u << 19,          // a large state's round writes only the lines it changed, not the previous round's (dst is two rounds old)
};

// Not a fault: the PBcomb paper's exact round (Alg. 2 l.22–27: the record's
// write-back, pfence, MIndex's write-back, psync), kept as an ablation so
// the stamped round is measured against it in the same run.
inline constexpr unsigned kPaperRound = 1u << 11;
// Not a fault: PBqueue without its per-thread free lists (dequeued nodes go
// back to the pool's heap; enqueues allocate from it) — the PBcomb paper's
// recycling ablation (§6), `pb-queue-no-rec`.
inline constexpr unsigned kNoRecycling = 1u << 15;
// Not a fault: PBstack without the top cache (its state is the paper's
// `top` alone; every push creates a node) — `pb-stack-no-cache`, and the
// paper's stack in `pb-stack-paper`.
inline constexpr unsigned kNoTopCache = 1u << 18;


namespace pwf_fault {
inline constexpr unsigned kNone = 0;
inline constexpr unsigned kNoHelperPwbS = Fault::kNoHelperPwbS;  // Alg. 4 l.44–46 removed
inline constexpr unsigned kNoPfenceRecord = 1u << 8;  // Alg. 4 l.29 removed
inline constexpr unsigned kNoIndexPersist = 1u << 9;  // Index kept volatile (l.27–28)
inline constexpr unsigned kNoConnectPwb = 1u << 10;   // PWFqueue: connecting next not persisted
inline constexpr unsigned kPfenceRecord = 1u << 16;   // Alg. 4 l.29 always a pfence (wrong under `abstract`)
// Not a fault: PWFqueue dequeue combiners always take the bounded path's
// fallback (an IE probe) instead of reading IE's state (the `probe` ablation
// crash-tests and measures the path that keeps dequeue wait-free).
inline constexpr unsigned kProbeAlways = 1u << 17;
}  // namespace pwf_fault

}  // namespace ferrite::combining
