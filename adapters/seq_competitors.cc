// adapters/seq_competitors.cc — the lock-based competitors over the
// in-place persistent sequential objects (include/ferrite/baselines/
// seq_objects.h): lock-persist (one mutex) and fc-inplace (flat combining
// with persisted announcements, DFC-like), for stack, queue, heap and
// AtomicFloat. Durably linearizable, not detectable. Crash subjects are
// named <technique>-<structure> ("lock-persist-stack"), bench techniques
// <technique> per structure.
#include <algorithm>

#include "baseline_common.h"
#include "ferrite/baselines/fc_inplace.h"
#include "ferrite/baselines/lock_persist.h"
#include "ferrite/baselines/seq_objects.h"

namespace adapter_seq_competitors {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fb = ferrite::baselines;
namespace op = ferrite::op;

// Campaign heaps never fill: at least 4096 keys.
fb::SeqParams params(const fa::Setup& s) { return {s.threads, s.value_size, std::max(s.heap_capacity, 4096)}; }

template <class Obj, op::Abstract A, bool kFc>
struct Seq {
  using Handle = std::unique_ptr<Obj>;
  static constexpr op::Abstract kAbstract = A;
  static constexpr bool kDetectable = false;

  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    return std::make_unique<Obj>(*pool, s.name, params(s));
  }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) { return create(&pool, s); }
  static op::Response apply(Handle& h, int tid, std::uint64_t seq, const op::Op& o) {
    return fa::pair_apply(A, o, [&](bool ins, std::int64_t arg, std::int64_t* out) {
      if constexpr (kFc) return h->apply(tid, seq, ins, arg, out);
      else return h->apply(tid, ins, arg, out);
    });
  }
  static std::vector<std::int64_t> observe(Handle& h) { return h->snapshot(); }
  static op::Op next_op(int tid, std::uint64_t& rng, fa::Workload& w) {
    if constexpr (A == op::Abstract::kRegister) return w.next_op(A, tid, rng);
    else return fa::pair_workload(A, tid, rng, w);
  }
  static double combining_degree(const Handle& h) {
    if constexpr (kFc) return h->combining_degree();
    else return 0.0;
  }
};

using fa::Origin;
constexpr auto kSt = op::Abstract::kStack;
constexpr auto kQu = op::Abstract::kQueue;
constexpr auto kPq = op::Abstract::kPriorityQueue;
constexpr auto kFl = op::Abstract::kRegister;
template <class S, op::Abstract A, unsigned F = fb::kNoFaults>
using Lock = Seq<fb::LockPersist<S, F>, A, false>;
template <class S, op::Abstract A>
using Fc = Seq<fb::FcInplace<S>, A, true>;

using LockStack = Lock<fb::SeqStack<>, kSt>;
using LockStackNoNodePwb = Lock<fb::SeqStack<fb::kNoNodePwb>, kSt>;
using LockStackNoPsync = Lock<fb::SeqStack<>, kSt, fb::kNoFinalPsync>;
using LockQueue = Lock<fb::SeqQueue<>, kQu>;
using LockQueueNoNodePwb = Lock<fb::SeqQueue<fb::kNoNodePwb>, kQu>;
using LockHeap = Lock<fb::SeqHeap<>, kPq>;
using LockHeapNoLogPwb = Lock<fb::SeqHeap<fb::kNoLogPwb>, kPq>;
using LockFloat = Lock<fb::SeqFloat<>, kFl>;
using LockFloatNoPwb = Lock<fb::SeqFloat<fb::kNoLinkPwb>, kFl>;
using FcStack = Fc<fb::SeqStack<>, kSt>;
using FcStackNoNodePwb = Fc<fb::SeqStack<fb::kNoNodePwb>, kSt>;
using FcQueue = Fc<fb::SeqQueue<>, kQu>;
using FcQueueNoNodePwb = Fc<fb::SeqQueue<fb::kNoNodePwb>, kQu>;
using FcHeap = Fc<fb::SeqHeap<>, kPq>;
using FcHeapNoLogPwb = Fc<fb::SeqHeap<fb::kNoLogPwb>, kPq>;
using FcFloat = Fc<fb::SeqFloat<>, kFl>;
using FcFloatNoPwb = Fc<fb::SeqFloat<fb::kNoLinkPwb>, kFl>;

}  // namespace

// ------------------------------------------------------------ lock-persist
FERRITE_REGISTER_ADAPTER(LockStack, {.technique = "lock-persist", .subject = "lock-persist-stack", .family = "lock",
                                     .origin = Origin::kCompetitor, .description = "mutex + in-place persistent stack"});
FERRITE_REGISTER_ADAPTER(LockStackNoNodePwb,
                         {.technique = "lock-persist", .subject = "lock-persist-stack", .variant = "no-node-pwb",
                          .family = "lock", .origin = Origin::kCompetitor, .broken = true,
                          .description = "pushed nodes not written back"});
FERRITE_REGISTER_ADAPTER(LockStackNoPsync,
                         fa::abstract_only({.technique = "lock-persist", .subject = "lock-persist-stack",
                                            .variant = "no-psync", .family = "lock", .origin = Origin::kCompetitor,
                                            .broken = true, .description = "unlock before psync"},
                                           "the pfence before the unlock is an sfence, which makes the write-backs "
                                           "durable on x86"));
FERRITE_REGISTER_ADAPTER(LockQueue, {.technique = "lock-persist", .subject = "lock-persist-queue", .family = "lock",
                                     .origin = Origin::kCompetitor, .description = "mutex + in-place persistent queue"});
FERRITE_REGISTER_ADAPTER(LockQueueNoNodePwb,
                         {.technique = "lock-persist", .subject = "lock-persist-queue", .variant = "no-node-pwb",
                          .family = "lock", .origin = Origin::kCompetitor, .broken = true,
                          .description = "enqueued nodes not written back"});
FERRITE_REGISTER_ADAPTER(LockHeap, {.technique = "lock-persist", .subject = "lock-persist-heap", .family = "lock",
                                    .origin = Origin::kCompetitor,
                                    .description = "mutex + in-place persistent heap (per-op redo log)"});
FERRITE_REGISTER_ADAPTER(LockHeapNoLogPwb,
                         {.technique = "lock-persist", .subject = "lock-persist-heap", .variant = "no-log-pwb",
                          .family = "lock", .origin = Origin::kCompetitor, .broken = true,
                          .description = "redo log entries not written back"});
FERRITE_REGISTER_ADAPTER(LockFloat, {.technique = "lock-persist", .subject = "lock-persist-float", .family = "lock",
                                     .origin = Origin::kCompetitor, .description = "mutex + in-place persistent float",
                                     .pool_size = std::size_t{16} << 20});
FERRITE_REGISTER_ADAPTER(LockFloatNoPwb,
                         {.technique = "lock-persist", .subject = "lock-persist-float", .variant = "no-pwb",
                          .family = "lock", .origin = Origin::kCompetitor, .broken = true,
                          .description = "the new value is never written back"});
// -------------------------------------------------------------- fc-inplace
FERRITE_REGISTER_ADAPTER(FcStack, {.technique = "fc-inplace", .subject = "fc-inplace-stack", .family = "fc",
                                   .origin = Origin::kCompetitor,
                                   .description = "flat combining, persisted announcements, in-place updates (DFC-like, no elimination)"});
FERRITE_REGISTER_ADAPTER(FcStackNoNodePwb,
                         {.technique = "fc-inplace", .subject = "fc-inplace-stack", .variant = "no-node-pwb",
                          .family = "fc", .origin = Origin::kCompetitor, .broken = true,
                          .description = "pushed nodes not written back"});
FERRITE_REGISTER_ADAPTER(FcQueue, {.technique = "fc-inplace", .subject = "fc-inplace-queue", .family = "fc",
                                   .origin = Origin::kCompetitor,
                                   .description = "flat combining, persisted announcements, in-place updates"});
FERRITE_REGISTER_ADAPTER(FcQueueNoNodePwb,
                         {.technique = "fc-inplace", .subject = "fc-inplace-queue", .variant = "no-node-pwb",
                          .family = "fc", .origin = Origin::kCompetitor, .broken = true,
                          .description = "enqueued nodes not written back"});
FERRITE_REGISTER_ADAPTER(FcHeap, {.technique = "fc-inplace", .subject = "fc-inplace-heap", .family = "fc",
                                  .origin = Origin::kCompetitor,
                                  .description = "flat combining, persisted announcements, in-place heap (redo log per op)"});
FERRITE_REGISTER_ADAPTER(FcHeapNoLogPwb,
                         {.technique = "fc-inplace", .subject = "fc-inplace-heap", .variant = "no-log-pwb",
                          .family = "fc", .origin = Origin::kCompetitor, .broken = true,
                          .description = "redo log entries not written back"});
FERRITE_REGISTER_ADAPTER(FcFloat, {.technique = "fc-inplace", .subject = "fc-inplace-float", .family = "fc",
                                   .origin = Origin::kCompetitor,
                                   .description = "flat combining, persisted announcements, in-place float",
                                   .pool_size = std::size_t{16} << 20});
FERRITE_REGISTER_ADAPTER(FcFloatNoPwb,
                         {.technique = "fc-inplace", .subject = "fc-inplace-float", .variant = "no-pwb",
                          .family = "fc", .origin = Origin::kCompetitor, .broken = true,
                          .description = "the new value is never written back"});

}  // namespace adapter_seq_competitors
