// adapters/onefile.cc — OneFile-LF (include/ferrite/baselines/onefile.h)
// with the sequential objects of seq_objects.h in its region of (value, seq)
// words: onefile-float, onefile-stack, onefile-queue, onefile-heap (bench
// techniques and crash subjects of the same names). Durably linearizable,
// not detectable.
#include "baseline_common.h"
#include "ferrite/baselines/onefile.h"
#include "ferrite/baselines/seq_objects.h"

namespace {

namespace fa = ferrite::adapters;
namespace fb = ferrite::baselines;
namespace op = ferrite::op;

// A region of a sixteenth of the pool (V-space), in whole 64 KiB chunks: its
// pairs take an eighth — 256 KiB in the crash campaigns' 2 MiB pools, 32 MiB
// in the bench's 256 MiB ones.
template <template <unsigned, class> class S, op::Abstract A, unsigned F = fb::kNoFaults>
using OneFile = fa::SeqPtm<fb::OneFileObject<S, F>, A, 16>;

constexpr auto kSt = op::Abstract::kStack;
constexpr auto kQu = op::Abstract::kQueue;
constexpr auto kPq = op::Abstract::kPriorityQueue;
constexpr auto kFl = op::Abstract::kRegister;

using OneFileFloat = OneFile<fb::SeqFloat, kFl>;
using OneFileStack = OneFile<fb::SeqStack, kSt>;
using OneFileQueue = OneFile<fb::SeqQueue, kQu>;
using OneFileHeap = OneFile<fb::SeqHeap, kPq>;
using OneFileFloatNoApplySync = OneFile<fb::SeqFloat, kFl, fb::kOneFileNoApplySync>;
using OneFileStackNoApplySync = OneFile<fb::SeqStack, kSt, fb::kOneFileNoApplySync>;
using OneFileQueueNoApplySync = OneFile<fb::SeqQueue, kQu, fb::kOneFileNoApplySync>;
using OneFileHeapNoApplySync = OneFile<fb::SeqHeap, kPq, fb::kOneFileNoApplySync>;
using OneFileStackNoCurTxPwb = OneFile<fb::SeqStack, kSt, fb::kOneFileNoCurTxPwb>;
using OneFileHeapNoCurTxPwb = OneFile<fb::SeqHeap, kPq, fb::kOneFileNoCurTxPwb>;
using OneFileStackNoLogFence = OneFile<fb::SeqStack, kSt, fb::kOneFileNoLogFence>;
using OneFileHeapNoLogFence = OneFile<fb::SeqHeap, kPq, fb::kOneFileNoLogFence>;

// Without H5's psync an operation returns before its words and curTx are
// durable: a crash after it loses a completed operation.
constexpr const char* kNoApplySync = "no psync after the write-set is applied (H5)";
// Without H1's pwb(curTx) the words of a transaction may be durable while
// curTx still names the previous one: recovery cannot finish (or undo) a
// half-durable write-set.
constexpr const char* kNoCurTxPwb = "curTx not written back before the words are stored (H1)";
// Without T4's pfence curTx may be durable naming a log that is not:
// recovery re-applies a stale or torn write-set.
constexpr const char* kNoLogFence = "no pfence between the log's write-backs and the curTx CAS (T4)";

fa::Registration reg(const char* technique, const char* description) {
  return fa::competitor("onefile", technique, description);
}
fa::Registration broken(const char* technique, const char* variant, const char* description) {
  return fa::broken_competitor("onefile", technique, variant, description);
}

}  // namespace

FERRITE_REGISTER_ADAPTER(OneFileFloat, [] {
  auto r = reg("onefile-float", "OneFile-LF PTM ((value, seq) words, DCAS, helped redo log) + float");
  r.pool_size = std::size_t{16} << 20;
  return r;
}());
FERRITE_REGISTER_ADAPTER(OneFileStack, reg("onefile-stack", "OneFile-LF PTM + sequential stack"));
FERRITE_REGISTER_ADAPTER(OneFileQueue, reg("onefile-queue", "OneFile-LF PTM + sequential queue"));
FERRITE_REGISTER_ADAPTER(OneFileHeap, reg("onefile-heap", "OneFile-LF PTM + sequential bounded heap"));
FERRITE_REGISTER_ADAPTER(OneFileFloatNoApplySync, broken("onefile-float", "no-apply-sync", kNoApplySync));
FERRITE_REGISTER_ADAPTER(OneFileStackNoApplySync, broken("onefile-stack", "no-apply-sync", kNoApplySync));
FERRITE_REGISTER_ADAPTER(OneFileQueueNoApplySync, broken("onefile-queue", "no-apply-sync", kNoApplySync));
FERRITE_REGISTER_ADAPTER(OneFileHeapNoApplySync, broken("onefile-heap", "no-apply-sync", kNoApplySync));
FERRITE_REGISTER_ADAPTER(OneFileStackNoCurTxPwb, broken("onefile-stack", "no-curtx-pwb", kNoCurTxPwb));
FERRITE_REGISTER_ADAPTER(OneFileHeapNoCurTxPwb, broken("onefile-heap", "no-curtx-pwb", kNoCurTxPwb));
FERRITE_REGISTER_ADAPTER(OneFileStackNoLogFence, broken("onefile-stack", "no-log-fence", kNoLogFence));
FERRITE_REGISTER_ADAPTER(OneFileHeapNoLogFence, broken("onefile-heap", "no-log-fence", kNoLogFence));
