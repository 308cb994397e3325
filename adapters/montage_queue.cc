// adapters/montage_queue.cc — the Michael–Scott queue on nbMontage
// (include/ferrite/montage/ms_queue.h) and its broken variants, for
// `ferrite crashtest` (buffered durable linearizability) and `ferrite bench`.
//
// Epochs: the background advancer (10 ms, the paper's default) runs in
// benchmarks; on the crash simulator the epoch advances only on sync (a
// thread of its own would run outside the campaign's scheduler), and the
// crash workload issues a sync every 8 operations on average.
//
// montage-queue-dram: the same queue on montage::TransientSys (payloads in
// DRAM, plain CAS, no epochs), the paper's DRAM (T); bench only.
#include "adapter.h"
#include "montage_common.h"
#include "ferrite/montage/internal/faults.h"
#include "ferrite/montage/ms_queue.h"
#include "ferrite/montage/transient_sys.h"

namespace adapter_montage_queue {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fm = ferrite::montage;
namespace op = ferrite::op;
namespace mf = fm::fault;

using fa::montage_epoch_options;

// S: fm::EpochSys<F>, or fm::TransientSys for the transient original.
template <unsigned F, class S = fm::EpochSys<F>>
struct MontageQueue {
  using Queue = fm::MSQueue<F, S>;
  using Handle = std::unique_ptr<Queue>;
  static constexpr op::Abstract kAbstract = op::Abstract::kQueue;
  static constexpr bool kDetectable = false;
  static constexpr bool kBuffered = S::kPersistent;

  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    if constexpr (S::kPersistent) return Queue::create(*pool, s.name, s.threads, montage_epoch_options(*pool, s));
    else return Queue::create(s.threads);
  }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) {
    if constexpr (S::kPersistent) return Queue::attach(pool, s.name, s.threads, montage_epoch_options(pool, s));
    else throw std::logic_error("a transient technique has nothing to attach to");
  }
  static op::Response apply(Handle& h, int tid, std::uint64_t, const op::Op& o) {
    switch (o.kind) {
      case op::kEnqueue: h->enqueue(tid, o.arg); return op::Response::ack();
      case op::kDequeue: return op::Response::from(h->dequeue(tid));
      case op::kSync: h->sync(); return op::Response::ack();
      default: fa::unsupported("montage-queue", o);
    }
  }
  static std::vector<std::int64_t> observe(Handle& h) { return h->contents(); }
  // The queue workload with a sync about every 8th operation (the bound
  // buffered durable linearizability is checked against).
  static op::Op next_op(int tid, std::uint64_t& rng, fa::Workload& w) {
    if (fa::Workload::step(rng) % 8 == 0) return {op::kSync, 0, 0};
    return w.next_op(kAbstract, tid, rng);
  }
};

// The transient original (one template argument list: the macro splits at commas).
using MontageQueueDram = MontageQueue<mf::kNone, fm::TransientSys>;

fa::Registration broken(const char* variant, const char* description) {
  return {.technique = "montage-queue", .variant = variant, .family = "montage", .origin = fa::Origin::kFerrite,
          .broken = true, .description = description};
}

}  // namespace

FERRITE_REGISTER_ADAPTER(MontageQueue<mf::kNone>,
                         {.technique = "montage-queue", .family = "montage", .origin = fa::Origin::kFerrite,
                          .description = "Michael-Scott queue on nbMontage (buffered durable linearizability, DISC'21 §5)"});
FERRITE_REGISTER_ADAPTER(MontageQueueDram,
                         {.technique = "montage-queue-dram", .family = "montage", .origin = fa::Origin::kTransient,
                          .description = "transient original of montage-queue (the paper's DRAM (T)): the same code "
                                         "on TransientSys, payloads in DRAM, plain CAS, no epochs",
                          .crash = false, .needs_pool = false, .pool_size = 0});
FERRITE_REGISTER_ADAPTER(MontageQueue<mf::kNoTbpWriteback>,
                         broken("no-tbp-writeback", "epoch advance does not write back the to-be-persisted buffers (Fig. 2 l.101 removed)"));
// No "accept-uncommitted" variant for the queue: the blocks rule 2 rejects
// belong to an attempt still pending at the crash (a failed attempt's blocks
// are reset durably before its thread's next serial number, P2), and a
// pending enqueue or dequeue of this queue can always be linearized at that
// point (enqueue: its serial number orders it; dequeue: it removes the front
// another dequeue may also have detached) — the checker cannot tell. The
// hash map catches it (docs/montage.md).
FERRITE_REGISTER_ADAPTER(MontageQueue<mf::kIgnoreAnti>,
                         broken("ignore-anti", "recovery ignores anti-nodes: dequeued values come back (§3.4 rule 3)"));
// D9's resets removed: caught only by a second crash after new operations
// (the recovered run's syncs make the rejected blocks' epochs old enough).
FERRITE_REGISTER_ADAPTER(MontageQueue<mf::kNoRecoveryReset>,
                         broken("no-recovery-reset",
                                "recovery does not reset the blocks it rejects (D9): after the recovered run syncs, a "
                                "second crash and recovery revive them (needs --post-crash-every)"));

}  // namespace adapter_montage_queue
