// ferrite/mirror/internal/faults.h — fault switches of Mirror's deliberately
// broken variants, and the test hook of Fig. 3's interleaving. Not API:
// users never name these.
//
// Every Ferrite structure proves its recovery with crash campaigns, and
// proves the campaigns can fail with a broken variant: the same template
// instantiated with a fault bit that removes one step. The bits are constexpr
// (a Config's kFaults, mirror/placement.h; 0 = correct), so the correct code
// compiles exactly as if the switches did not exist. adapters/mirror_*.cc
// register the broken variants with the crash campaigns; tests/mirror/
// asserts each is caught.
#pragma once

namespace ferrite::mirror::internal {

enum Fault : unsigned {
  kNoFaults = 0,
  // patomic CAS (Fig. 4): l.41 FLUSH(rep_p_addr) removed — the volatile
  // DWCAS (l.44) publishes a value whose persistent copy was never written
  // back.
  kNoPwbBeforeVolatile = 1u << 0,
  // patomic CAS (Fig. 4): the helper's l.20 FLUSH removed — a helper copies
  // another thread's persistent value to rep_v without writing it back.
  kHelperNoPwb = 1u << 1,
  // patomic CAS (Fig. 4): l.39 writes rep_p_seq instead of rep_p_seq + 1 —
  // no sequence number (Fig. 3's scenario; tests/mirror/patomic_test.cc).
  kNoSeq = 1u << 2,
  // Recovery (§4.3.3) copies the whole persistent region to rep_v without
  // tracing: only the roots (the anchor object) are known to be live, every
  // other unit goes to the free lists, and live nodes are handed out again.
  kRecoverNoTrace = 1u << 3,
  // Recovery traces and rebuilds the free lists but never copies the
  // persistent replica to rep_v: the volatile replica stays what the
  // restarted machine's DRAM (or the pool's unflushed half) holds.
  kRecoverNoCopy = 1u << 4,
  // BST recovery (mirror/bst.h) traces and copies but does not finish the
  // deletes that flagged their leaf before the crash (NmBst::complete_flagged):
  // such a delete stays undecided, and the first update on its key after the
  // restart decides it.
  kRecoverNoHelp = 1u << 5,
  // Byte-string map (mirror/bytes_map.h): the psync between write_payload
  // and the value CAS of a put that replaces a value is removed — the CAS
  // can publish (persist) an offset whose payload never reached the media.
  kPayloadNoFence = 1u << 6,
  // Byte-string map: a value payload replaced or erased by a CAS is freed at
  // once instead of through EBR — a concurrent get still reading it sees its
  // block reused (a concurrency bug: tests/mirror/mirror_bytes_stress_test.cc).
  kPayloadFreeNow = 1u << 7,
  // Byte-string map: the pool recovery hook marks key payloads only — pool
  // recovery frees every live value, and a later put reuses its block.
  kRecoverNoMarkValues = 1u << 8,
  // Ordered byte-string map (mirror/bytes_skip_map.h): the pool recovery
  // hook marks value payloads only — pool recovery frees every live key, a
  // later put reuses its block, and the node's key reads as another's bytes.
  kRecoverNoMarkKeys = 1u << 9,
  // Growth (mirror/heap.h, H2): a new region is linked (its predecessor's
  // `next` written back and psynced) before its header is written back — a
  // crash can leave a durable link to a region whose header never reached
  // the media, and recovery refuses the chain.
  kGrowLinkFirst = 1u << 10,
  // Growth: the pool recovery hook marks region 0 only (the root type
  // RootFirstRegionOnly) — pool recovery frees every grown region while the
  // chain still names it, and the next pool allocation reuses a live one.
  kRecoverNoMarkGrown = 1u << 11,
};

// The default hooks of a Config: none. A test's Config may define
//   static void after_persistent_cas(const void* rep_v_word);
// which patomic::compare_exchange_strong calls between Fig. 4 l.42 and
// l.44 (the persistent replica changed and written back, the volatile one
// not yet) — the instant Fig. 3's p1 pauses at.
struct NoHooks {};

}  // namespace ferrite::mirror::internal
