// adapters/redoopt.cc — RedoOpt (include/ferrite/baselines/redoopt.h) with
// the sequential objects of seq_objects.h on its replicas: redoopt-float,
// redoopt-stack, redoopt-queue, redoopt-heap (bench techniques and crash
// subjects of the same names). Durably linearizable, not detectable.
#include <algorithm>

#include "baseline_common.h"
#include "ferrite/baselines/redoopt.h"
#include "ferrite/baselines/seq_objects.h"

namespace {

namespace fa = ferrite::adapters;
namespace fb = ferrite::baselines;
namespace op = ferrite::op;

// Three replicas (RedoOptObject's default) of an eighth of the pool each,
// in whole 64 KiB chunks — 256 KiB in the crash campaigns' 2 MiB pools,
// 32 MiB in the bench's 256 MiB ones. A whole copy copies the used part.
// The correct RedoOpt of record elects its combiners wait-free (the
// paper's); the ablation "lock" elects one by a try-lock with flat
// combining (the same code, RedoOptElection::kLock).
template <template <unsigned, class> class S, op::Abstract A, unsigned F = fb::kNoFaults,
          fb::RedoOptElection E = fb::RedoOptElection::kWaitFree>
using RedoOpt = fa::SeqPtm<fb::RedoOptObject<S, F, E>, A, 8>;
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
