// ferrite/combining/internal/bytes_faults.h — fault switches of the byte-
// string combining structures' broken variants (pb_bytes_queue.h,
// pb_bytes_stack.h). Not API.
//
// Each bit removes one step of the payload protocol (pmem/payload.h P1 and
// the reclamation rule); the adapters (adapters/pb_bytes_queue.cc,
// adapters/pb_bytes_stack.cc) register
// each broken variant with the crash campaigns, which must catch it.
#pragma once

namespace ferrite::combining::bytes_fault {

inline constexpr unsigned kNone = 0;
// enqueue (push) publishes the payload's offset without the psync after
// write_payload (P1): the combiner — another thread — may make the node
// naming it durable before this thread's payload write-backs complete.
inline constexpr unsigned kNoPayloadPsync = 1u << 0;
// dequeue (pop) frees the payload as soon as it has copied the bytes out,
// while the current DState (stack: StateRec) record's ReturnVal[tid] still
// names it: the block is
// reused and, after a crash, the recovered response names another payload.
inline constexpr unsigned kFreeAtReturn = 1u << 1;

}  // namespace ferrite::combining::bytes_fault
