// adapters/romulus.cc — RomulusLog (include/ferrite/baselines/romulus.h)
// with the sequential objects of seq_objects.h inside its transactions:
// romulus-float, romulus-stack, romulus-queue, romulus-heap (bench
// techniques and crash subjects of the same names). Durably linearizable,
// not detectable.
#include <algorithm>

#include "baseline_common.h"
#include "ferrite/baselines/romulus.h"
#include "ferrite/baselines/seq_objects.h"

namespace adapter_romulus {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fb = ferrite::baselines;
namespace op = ferrite::op;

// Bytes per copy: a fifth of the pool (both copies: two fifths), in whole
// 64 KiB chunks — 384 KiB in the crash campaigns' 2 MiB pools, ~51 MiB in
// the bench's 256 MiB ones. Recovery copies only the used part.
template <template <unsigned, class> class S, op::Abstract A, unsigned F = fb::kNoFaults>
using Romulus = fa::SeqPtm<fb::RomulusObject<S, F>, A, 5>;

constexpr auto kSt = op::Abstract::kStack;
constexpr auto kQu = op::Abstract::kQueue;
constexpr auto kPq = op::Abstract::kPriorityQueue;
constexpr auto kFl = op::Abstract::kRegister;

using RomulusFloat = Romulus<fb::SeqFloat, kFl>;
using RomulusStack = Romulus<fb::SeqStack, kSt>;
using RomulusQueue = Romulus<fb::SeqQueue, kQu>;
using RomulusHeap = Romulus<fb::SeqHeap, kPq>;
// No "no-mutating-fence" for the float: its transactions store one aligned
// word, which persists whole whether MUTATING did or not (nothing to catch).
using RomulusStackNoMutatingFence = Romulus<fb::SeqStack, kSt, fb::kRomulusNoMutatingFence>;
using RomulusQueueNoMutatingFence = Romulus<fb::SeqQueue, kQu, fb::kRomulusNoMutatingFence>;
using RomulusHeapNoMutatingFence = Romulus<fb::SeqHeap, kPq, fb::kRomulusNoMutatingFence>;
using RomulusFloatEarlyIdle = Romulus<fb::SeqFloat, kFl, fb::kRomulusEarlyIdle>;
using RomulusStackEarlyIdle = Romulus<fb::SeqStack, kSt, fb::kRomulusEarlyIdle>;
using RomulusQueueEarlyIdle = Romulus<fb::SeqQueue, kQu, fb::kRomulusEarlyIdle>;
using RomulusHeapEarlyIdle = Romulus<fb::SeqHeap, kPq, fb::kRomulusEarlyIdle>;

constexpr const char* kNoMutatingFence = "no pfence after MUTATING is written back (R1): main's stores may persist first";
// Without R8 the next transaction's MUTATING may persist before the back
// copy of the last one: recovery then rolls main back to a stale back.
constexpr const char* kEarlyIdle = "no fence between the back copy's write-backs and IDLE / the next MUTATING (R8)";

fa::Registration reg(const char* technique, const char* description) {
  return fa::competitor("romulus", technique, description);
}
fa::Registration broken(const char* technique, const char* variant, const char* description) {
  return fa::broken_competitor("romulus", technique, variant, description);
}

}  // namespace

FERRITE_REGISTER_ADAPTER(RomulusFloat, [] {
  auto r = reg("romulus-float", "RomulusLog PTM (twin copies, volatile log, flat-combined writers) + float");
  r.pool_size = std::size_t{16} << 20;
  return r;
}());
FERRITE_REGISTER_ADAPTER(RomulusStack, reg("romulus-stack", "RomulusLog PTM + sequential stack"));
FERRITE_REGISTER_ADAPTER(RomulusQueue, reg("romulus-queue", "RomulusLog PTM + sequential queue"));
FERRITE_REGISTER_ADAPTER(RomulusHeap, reg("romulus-heap", "RomulusLog PTM + sequential bounded heap"));
FERRITE_REGISTER_ADAPTER(RomulusStackNoMutatingFence, broken("romulus-stack", "no-mutating-fence", kNoMutatingFence));
FERRITE_REGISTER_ADAPTER(RomulusQueueNoMutatingFence, broken("romulus-queue", "no-mutating-fence", kNoMutatingFence));
FERRITE_REGISTER_ADAPTER(RomulusHeapNoMutatingFence, broken("romulus-heap", "no-mutating-fence", kNoMutatingFence));
FERRITE_REGISTER_ADAPTER(RomulusFloatEarlyIdle, broken("romulus-float", "early-idle", kEarlyIdle));
FERRITE_REGISTER_ADAPTER(RomulusStackEarlyIdle, broken("romulus-stack", "early-idle", kEarlyIdle));
FERRITE_REGISTER_ADAPTER(RomulusQueueEarlyIdle, broken("romulus-queue", "early-idle", kEarlyIdle));
FERRITE_REGISTER_ADAPTER(RomulusHeapEarlyIdle, broken("romulus-heap", "early-idle", kEarlyIdle));

}  // namespace adapter_romulus
