// ferrite/montage/bytes_queue.h — nbMontage's queue of byte strings (a
// durable job queue whose jobs are any bytes).
//
// Papers: M. M. Michael, M. L. Scott, "Simple, Fast, and Practical
// Non-Blocking and Blocking Concurrent Queue Algorithms", PODC 1996; its
// nbMontage conversion, W. Cai et al., "Fast Nonblocking Persistence for
// Concurrent Data Structures", DISC 2021, §5 ("the queue uses payloads to
// hold values and their order"), on Fig. 2's epoch system with §3.4's
// recovery. The algorithm is ms_queue.h's MSQueue, unchanged
// (MSQueue<F, EpochSys<F>, Bytes>): only its payload differs.
//
// What it is. A lock-free FIFO queue: DRAM nodes, each naming one immutable
// payload block in the pool {serial number, value length, zero, the value's
// bytes} (ms_queue.h "Byte strings"), values of 0 to pmem::kMaxPayloadBytes
// (16 MiB) bytes, the empty string included (no reserved values). The
// serial numbers give the order recovery restores.
//
// Operations: enqueue(t, bytes); dequeue(t) -> std::optional<std::string>
// (a copy; std::nullopt when empty); sync(); contents() (quiescent only).
// Linearization points (ms_queue.h): enqueue at its lin_CAS on the last
// node's next; dequeue at its lin_CAS on head (detaching the payload of the
// node that becomes the sentinel), an empty dequeue at its load of
// head->next.
//
// Thread safety: enqueue/dequeue/sync concurrently from distinct thread
// handles (ids in [0, threads)); one handle, one thread at a time.
//
// Invariants: B1 a payload is written only between its pnew and its
// enqueue's lin_CAS (the serial number only while unattached), then only
// read; B2 a dequeued payload is read (copied out) under the dequeuer's
// epoch pin and returned to the allocator only when EBR frees the node that
// carries it (pdelete, then the epoch system's delay P4).
//
// Persistence (guarantee: buffered durably linearizable). Every byte of a
// payload is written back by the epoch system from the to-be-persisted
// buffer of the epoch its lin_CAS tagged it in, before that epoch can be
// recovered (epoch_sys.h P1, P5); the queue issues no persistence
// instruction of its own. A crash loses at most the operations of the last
// two epochs; sync() makes everything that returned before it durable; a
// clean close or destruction syncs (abandon() skips it).
//
// Recovery (attach). The epoch system's scan keeps the payloads of
// enqueues not cancelled by a committed dequeue's anti-node; each is
// validated (length against its block, zero padding, serial range: else
// PoolError(kCorrupt) naming its offset) before the list is rebuilt in
// serial order behind a fresh sentinel. Only the epoch system's resets are
// written: a crash during recovery recovers the same.
//
// Limits. A value over pmem::kMaxPayloadBytes throws
// PoolError(kInvalidArgument) naming its size and the limit; a full pool
// throws PoolError(kFull) from enqueue before it changes anything.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferrite/montage/epoch_sys.h"
#include "ferrite/montage/internal/bytes_payload.h"
#include "ferrite/montage/ms_queue.h"
#include "ferrite/sync/thread_registry.h"

namespace ferrite::montage {

template <unsigned F = fault::kNone>
class BytesQueue {
 public:
  using Queue = MSQueue<F, EpochSys<F>, Bytes>;
  using Sys = EpochSys<F>;
  static constexpr std::size_t kMaxValueBytes = pmem::kMaxPayloadBytes;

  // create and attach take the same arguments (Pool::open_or_create).
  // `threads` is the capacity (recorded in the root: attach for more throws
  // std::invalid_argument); the epoch options are this run's.
  static std::unique_ptr<BytesQueue> create(pmem::Pool& pool, std::string_view name, int threads = 64,
                                            const EpochOptions& eo = {}) {
    return std::unique_ptr<BytesQueue>(new BytesQueue(Queue::create(pool, name, threads, eo)));
  }
  static std::unique_ptr<BytesQueue> attach(pmem::Pool& pool, std::string_view name, int threads = 64,
                                            const EpochOptions& eo = {}, RecoveryStats* stats = nullptr) {
    return std::unique_ptr<BytesQueue>(new BytesQueue(Queue::attach(pool, name, threads, eo, stats)));
  }

  void enqueue(const Thread& t, std::string_view value) { q_->enqueue(t.id(), value); }
  std::optional<std::string> dequeue(const Thread& t) { return q_->dequeue(t.id()); }
  // The same by raw thread id (adapters, benchmarks).
  void enqueue(int tid, std::string_view value) { q_->enqueue(tid, value); }
  std::optional<std::string> dequeue(int tid) { return q_->dequeue(tid); }

  void sync() { q_->sync(); }
  // A simulated crash for tests: destruction then syncs nothing.
  void abandon() { q_->abandon(); }
  Sys& epochs() { return q_->epochs(); }
  // Front to back, copies, each payload validated (quiescent only).
  std::vector<std::string> contents() { return q_->contents(); }

 private:
  explicit BytesQueue(std::unique_ptr<Queue> q) : q_(std::move(q)) {}
  std::unique_ptr<Queue> q_;
};

}  // namespace ferrite::montage
