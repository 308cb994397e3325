// adapters/redoopt.cc — RedoOpt (include/ferrite/baselines/redoopt.h) with
// the sequential objects of seq_objects.h on its replicas: redoopt-float,
// redoopt-stack, redoopt-queue, redoopt-heap (bench techniques and crash
// subjects of the same names). Durably linearizable, not detectable.
#include <algorithm>
#include <cstddef>
#include <memory>

#include "baseline_common.h"
#include "ferrite/baselines/redoopt.h"
#include "ferrite/baselines/seq_objects.h"

namespace adapter_redoopt {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fb = ferrite::baselines;
namespace op = ferrite::op;

// The replicas RedoOptObject gives the election (fb::redoopt_replicas: 2N
// for the wait-free one, at least 3; 3 for the lock) share 3/8 of the pool,
// in whole 64 KiB chunks of at least one chunk each — the lock ablation's
// three an eighth of the pool each as before (256 KiB in the crash
// campaigns' 2 MiB pools, 32 MiB in the bench's 256 MiB ones); the
// wait-free election's 2N = 6 at 3 threads 128 KiB each in a 2 MiB pool,
// 2N = 4 at 2 threads 24 MiB each in a 256 MiB one. A whole copy copies
// the used part. The correct RedoOpt of record elects its combiners
// wait-free (the paper's); the ablation "lock" elects one by a try-lock
// with flat combining (the same code, RedoOptElection::kLock).
template <class Obj, op::Abstract A, fb::RedoOptElection E>
struct RedoOptPtm : fa::SeqPtm<Obj, A, 8> {
  using Handle = typename fa::SeqPtm<Obj, A, 8>::Handle;
  static std::size_t region_bytes(const ferrite::pmem::Pool& pool, int threads) {
    constexpr std::size_t kChunk = std::size_t{64} << 10;
    const auto replicas = static_cast<std::size_t>(fb::redoopt_replicas(E, threads));
    return std::max<std::size_t>(pool.size() * 3 / 8 / replicas / kChunk, 1) * kChunk;
  }
  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    return std::make_unique<Obj>(*pool, s.name, fb::SeqParams{s.threads, s.value_size, s.heap_capacity},
                                 region_bytes(*pool, s.threads));
  }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) { return create(&pool, s); }
};
template <template <unsigned, class> class S, op::Abstract A, unsigned F = fb::kNoFaults,
          fb::RedoOptElection E = fb::RedoOptElection::kWaitFree>
using RedoOpt = RedoOptPtm<fb::RedoOptObject<S, F, E>, A, E>;
constexpr auto kLock = fb::RedoOptElection::kLock;

constexpr auto kSt = op::Abstract::kStack;
constexpr auto kQu = op::Abstract::kQueue;
constexpr auto kPq = op::Abstract::kPriorityQueue;
constexpr auto kFl = op::Abstract::kRegister;

using RedoOptFloat = RedoOpt<fb::SeqFloat, kFl>;
using RedoOptStack = RedoOpt<fb::SeqStack, kSt>;
using RedoOptQueue = RedoOpt<fb::SeqQueue, kQu>;
using RedoOptHeap = RedoOpt<fb::SeqHeap, kPq>;
using RedoOptLockFloat = RedoOpt<fb::SeqFloat, kFl, fb::kNoFaults, kLock>;
using RedoOptLockStack = RedoOpt<fb::SeqStack, kSt, fb::kNoFaults, kLock>;
using RedoOptLockQueue = RedoOpt<fb::SeqQueue, kQu, fb::kNoFaults, kLock>;
using RedoOptLockHeap = RedoOpt<fb::SeqHeap, kPq, fb::kNoFaults, kLock>;
using RedoOptFloatNoReplicaFence = RedoOpt<fb::SeqFloat, kFl, fb::kRedoOptNoReplicaFence>;
using RedoOptStackNoReplicaFence = RedoOpt<fb::SeqStack, kSt, fb::kRedoOptNoReplicaFence>;
using RedoOptQueueNoReplicaFence = RedoOpt<fb::SeqQueue, kQu, fb::kRedoOptNoReplicaFence>;
using RedoOptHeapNoReplicaFence = RedoOpt<fb::SeqHeap, kPq, fb::kRedoOptNoReplicaFence>;
using RedoOptFloatNoCommitSync = RedoOpt<fb::SeqFloat, kFl, fb::kRedoOptNoCommitSync>;
using RedoOptStackNoCommitSync = RedoOpt<fb::SeqStack, kSt, fb::kRedoOptNoCommitSync>;
using RedoOptQueueNoCommitSync = RedoOpt<fb::SeqQueue, kQu, fb::kRedoOptNoCommitSync>;
using RedoOptHeapNoCommitSync = RedoOpt<fb::SeqHeap, kPq, fb::kRedoOptNoCommitSync>;

// Without C5's pfence curComb may persist naming a replica whose lines are
// not durable: recovery reads a stale or torn state.
constexpr const char* kNoReplicaFence = "no pfence between the replica's write-backs and curComb (C5)";
// Without C7's psync an operation returns before curComb is durable, and
// the next combiner overwrites the replica the durable curComb still names.
constexpr const char* kNoCommitSync = "no psync after curComb is written back (C7)";

fa::Registration reg(const char* technique, const char* description) {
  return fa::competitor("redoopt", technique, description);
}
// The lock-elected ablation: bench name <technique>-lock, crash variant
// correct-lock.
fa::Registration lock(const char* technique, const char* description) {
  auto r = fa::competitor("redoopt", technique, description);
  r.variant = "lock";
  r.ablation = true;
  return r;
}
fa::Registration broken(const char* technique, const char* variant, const char* description) {
  return fa::broken_competitor("redoopt", technique, variant, description);
}

}  // namespace

FERRITE_REGISTER_ADAPTER(RedoOptFloat, [] {
  auto r = reg("redoopt-float", "RedoOpt PUC (wait-free combiners, replicas updated by redo logs, curComb commit) + float");
  r.pool_size = std::size_t{16} << 20;
  return r;
}());
FERRITE_REGISTER_ADAPTER(RedoOptStack, reg("redoopt-stack", "RedoOpt PUC + sequential stack"));
FERRITE_REGISTER_ADAPTER(RedoOptQueue, reg("redoopt-queue", "RedoOpt PUC + sequential queue"));
FERRITE_REGISTER_ADAPTER(RedoOptHeap, reg("redoopt-heap", "RedoOpt PUC + sequential bounded heap"));
FERRITE_REGISTER_ADAPTER(RedoOptLockFloat, [] {
  auto r = lock("redoopt-float", "RedoOpt PUC + float, combiner elected by a lock (flat combining)");
  r.pool_size = std::size_t{16} << 20;
  return r;
}());
FERRITE_REGISTER_ADAPTER(RedoOptLockStack, lock("redoopt-stack", "RedoOpt PUC + stack, combiner elected by a lock"));
FERRITE_REGISTER_ADAPTER(RedoOptLockQueue, lock("redoopt-queue", "RedoOpt PUC + queue, combiner elected by a lock"));
FERRITE_REGISTER_ADAPTER(RedoOptLockHeap, lock("redoopt-heap", "RedoOpt PUC + heap, combiner elected by a lock"));
FERRITE_REGISTER_ADAPTER(RedoOptFloatNoReplicaFence, broken("redoopt-float", "no-replica-fence", kNoReplicaFence));
FERRITE_REGISTER_ADAPTER(RedoOptStackNoReplicaFence, broken("redoopt-stack", "no-replica-fence", kNoReplicaFence));
FERRITE_REGISTER_ADAPTER(RedoOptQueueNoReplicaFence, broken("redoopt-queue", "no-replica-fence", kNoReplicaFence));
FERRITE_REGISTER_ADAPTER(RedoOptHeapNoReplicaFence, broken("redoopt-heap", "no-replica-fence", kNoReplicaFence));
FERRITE_REGISTER_ADAPTER(RedoOptFloatNoCommitSync, broken("redoopt-float", "no-commit-sync", kNoCommitSync));
FERRITE_REGISTER_ADAPTER(RedoOptStackNoCommitSync, broken("redoopt-stack", "no-commit-sync", kNoCommitSync));
FERRITE_REGISTER_ADAPTER(RedoOptQueueNoCommitSync, broken("redoopt-queue", "no-commit-sync", kNoCommitSync));
FERRITE_REGISTER_ADAPTER(RedoOptHeapNoCommitSync, broken("redoopt-heap", "no-commit-sync", kNoCommitSync));

}  // namespace adapter_redoopt
