// adapters/onefile.cc — OneFile-LF and OneFile-WF (include/ferrite/
// baselines/onefile.h) with the sequential objects of seq_objects.h in their
// region of (value, seq) words: onefile-float, onefile-stack,
// onefile-queue, onefile-heap (lock-free) and onefile-wf-float,
// onefile-wf-stack, onefile-wf-queue, onefile-wf-heap (wait-free: announced
// operations, aggregated helping transactions) — bench techniques and crash
// subjects of the same names. Durably linearizable, not detectable.
#include "baseline_common.h"
#include "ferrite/baselines/onefile.h"
#include "ferrite/baselines/seq_objects.h"

namespace adapter_onefile {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fb = ferrite::baselines;
namespace op = ferrite::op;

// A region (V-space) of a 64th of the pool, in whole 64 KiB chunks: 32 KiB
// in the crash campaigns' 2 MiB pools (room for ~1,000 nodes or the heap's
// 1k keys), 4 MiB in the bench's 256 MiB ones; its pairs take twice as
// much. Creation zeroes and writes back every pair (a crash point per
// line), so the region is kept small.
template <template <unsigned, class> class S, op::Abstract A, unsigned F = fb::kNoFaults>
using OneFile = fa::SeqPtm<fb::OneFileObject<S, F>, A, 64>;
template <template <unsigned, class> class S, op::Abstract A, unsigned F = fb::kNoFaults>
using OneFileWF = fa::SeqPtm<fb::OneFileWFObject<S, F>, A, 64>;

constexpr auto kSt = op::Abstract::kStack;
constexpr auto kQu = op::Abstract::kQueue;
constexpr auto kPq = op::Abstract::kPriorityQueue;
constexpr auto kFl = op::Abstract::kRegister;

using OneFileFloat = OneFile<fb::SeqFloat, kFl>;
using OneFileStack = OneFile<fb::SeqStack, kSt>;
using OneFileQueue = OneFile<fb::SeqQueue, kQu>;
using OneFileHeap = OneFile<fb::SeqHeap, kPq>;
using OneFileFloatNoCurTxPwb = OneFile<fb::SeqFloat, kFl, fb::kOneFileNoCurTxPwb>;
using OneFileStackNoCurTxPwb = OneFile<fb::SeqStack, kSt, fb::kOneFileNoCurTxPwb>;
using OneFileQueueNoCurTxPwb = OneFile<fb::SeqQueue, kQu, fb::kOneFileNoCurTxPwb>;
using OneFileHeapNoCurTxPwb = OneFile<fb::SeqHeap, kPq, fb::kOneFileNoCurTxPwb>;
using OneFileFloatNoLogSync = OneFile<fb::SeqFloat, kFl, fb::kOneFileNoLogSync>;
using OneFileStackNoLogSync = OneFile<fb::SeqStack, kSt, fb::kOneFileNoLogSync>;
using OneFileQueueNoLogSync = OneFile<fb::SeqQueue, kQu, fb::kOneFileNoLogSync>;
using OneFileHeapNoLogSync = OneFile<fb::SeqHeap, kPq, fb::kOneFileNoLogSync>;
// OneFile-WF: the same commit and helping, so the same two broken steps.
using OneFileWFFloat = OneFileWF<fb::SeqFloat, kFl>;
using OneFileWFStack = OneFileWF<fb::SeqStack, kSt>;
using OneFileWFQueue = OneFileWF<fb::SeqQueue, kQu>;
using OneFileWFHeap = OneFileWF<fb::SeqHeap, kPq>;
using OneFileWFFloatNoCurTxPwb = OneFileWF<fb::SeqFloat, kFl, fb::kOneFileNoCurTxPwb>;
using OneFileWFStackNoCurTxPwb = OneFileWF<fb::SeqStack, kSt, fb::kOneFileNoCurTxPwb>;
using OneFileWFQueueNoCurTxPwb = OneFileWF<fb::SeqQueue, kQu, fb::kOneFileNoCurTxPwb>;
using OneFileWFHeapNoCurTxPwb = OneFileWF<fb::SeqHeap, kPq, fb::kOneFileNoCurTxPwb>;
using OneFileWFFloatNoLogSync = OneFileWF<fb::SeqFloat, kFl, fb::kOneFileNoLogSync>;
using OneFileWFStackNoLogSync = OneFileWF<fb::SeqStack, kSt, fb::kOneFileNoLogSync>;
using OneFileWFQueueNoLogSync = OneFileWF<fb::SeqQueue, kQu, fb::kOneFileNoLogSync>;
using OneFileWFHeapNoLogSync = OneFileWF<fb::SeqHeap, kPq, fb::kOneFileNoLogSync>;

// Without H1's pwb(curTx) the words of a transaction may be durable while
// curTx still names the previous one: recovery cannot finish (or undo) a
// half-durable write-set, and re-applies the previous one over a completed
// one's words.
constexpr const char* kNoCurTxPwb = "curTx not written back before the words are stored (H1)";
// Without T4's psync curTx may be durable naming a log that is not:
// recovery re-applies a stale or torn write-set.
constexpr const char* kNoLogSync = "no psync between the log's write-backs and the curTx CAS (T4)";

fa::Registration reg(const char* technique, const char* description) {
  return fa::competitor("onefile", technique, description);
}
fa::Registration broken(const char* technique, const char* variant, const char* description) {
  return fa::broken_competitor("onefile", technique, variant, description);
}
fa::Registration reg_wf(const char* technique, const char* description) {
  return fa::competitor("onefile-wf", technique, description);
}
fa::Registration broken_wf(const char* technique, const char* variant, const char* description) {
  return fa::broken_competitor("onefile-wf", technique, variant, description);
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
FERRITE_REGISTER_ADAPTER(OneFileFloatNoCurTxPwb, broken("onefile-float", "no-curtx-pwb", kNoCurTxPwb));
FERRITE_REGISTER_ADAPTER(OneFileStackNoCurTxPwb, broken("onefile-stack", "no-curtx-pwb", kNoCurTxPwb));
FERRITE_REGISTER_ADAPTER(OneFileQueueNoCurTxPwb, broken("onefile-queue", "no-curtx-pwb", kNoCurTxPwb));
FERRITE_REGISTER_ADAPTER(OneFileHeapNoCurTxPwb, broken("onefile-heap", "no-curtx-pwb", kNoCurTxPwb));
FERRITE_REGISTER_ADAPTER(OneFileFloatNoLogSync, broken("onefile-float", "no-log-sync", kNoLogSync));
FERRITE_REGISTER_ADAPTER(OneFileStackNoLogSync, broken("onefile-stack", "no-log-sync", kNoLogSync));
FERRITE_REGISTER_ADAPTER(OneFileQueueNoLogSync, broken("onefile-queue", "no-log-sync", kNoLogSync));
FERRITE_REGISTER_ADAPTER(OneFileHeapNoLogSync, broken("onefile-heap", "no-log-sync", kNoLogSync));

FERRITE_REGISTER_ADAPTER(OneFileWFFloat, [] {
  auto r = reg_wf("onefile-wf-float",
                  "OneFile-WF PTM ((value, seq) words, announced operations, aggregated helping transactions) + float");
  r.pool_size = std::size_t{16} << 20;
  return r;
}());
FERRITE_REGISTER_ADAPTER(OneFileWFStack, reg_wf("onefile-wf-stack", "OneFile-WF PTM + sequential stack"));
FERRITE_REGISTER_ADAPTER(OneFileWFQueue, reg_wf("onefile-wf-queue", "OneFile-WF PTM + sequential queue"));
FERRITE_REGISTER_ADAPTER(OneFileWFHeap, reg_wf("onefile-wf-heap", "OneFile-WF PTM + sequential bounded heap"));
FERRITE_REGISTER_ADAPTER(OneFileWFFloatNoCurTxPwb, broken_wf("onefile-wf-float", "no-curtx-pwb", kNoCurTxPwb));
FERRITE_REGISTER_ADAPTER(OneFileWFStackNoCurTxPwb, broken_wf("onefile-wf-stack", "no-curtx-pwb", kNoCurTxPwb));
FERRITE_REGISTER_ADAPTER(OneFileWFQueueNoCurTxPwb, broken_wf("onefile-wf-queue", "no-curtx-pwb", kNoCurTxPwb));
FERRITE_REGISTER_ADAPTER(OneFileWFHeapNoCurTxPwb, broken_wf("onefile-wf-heap", "no-curtx-pwb", kNoCurTxPwb));
FERRITE_REGISTER_ADAPTER(OneFileWFFloatNoLogSync, broken_wf("onefile-wf-float", "no-log-sync", kNoLogSync));
FERRITE_REGISTER_ADAPTER(OneFileWFStackNoLogSync, broken_wf("onefile-wf-stack", "no-log-sync", kNoLogSync));
FERRITE_REGISTER_ADAPTER(OneFileWFQueueNoLogSync, broken_wf("onefile-wf-queue", "no-log-sync", kNoLogSync));
FERRITE_REGISTER_ADAPTER(OneFileWFHeapNoLogSync, broken_wf("onefile-wf-heap", "no-log-sync", kNoLogSync));

}  // namespace adapter_onefile
