// adapters/pb_queue.cc — PBqueue (include/ferrite/combining/pb_queue.h) and
// its broken variants.
#include "combining.h"
#include "ferrite/combining/internal/faults.h"
#include "ferrite/combining/pb_queue.h"

namespace adapter_pb_queue {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fc = ferrite::combining;
namespace op = ferrite::op;

template <unsigned F>
struct PBQueue : fa::Combining<fc::PBQueue<F>, op::Abstract::kQueue> {
  using Handle = std::unique_ptr<fc::PBQueue<F>>;  // (the base is dependent: name it here)
  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) { return fc::PBQueue<F>::create(*pool, s.name, s.threads); }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) { return fc::PBQueue<F>::attach(pool, s.name, s.threads); }
  static std::vector<std::int64_t> observe(Handle& h) { return h->values(); }
};

}  // namespace

FERRITE_REGISTER_ADAPTER(PBQueue<0>,
                         fa::ferrite_technique("pb-queue", "pbcomb", "PBqueue: two PBcomb instances, oldTail, per-thread free lists (Alg. 5-7)"));
FERRITE_REGISTER_ADAPTER(PBQueue<fc::kNoToPersist>,
                         fa::ferrite_broken("pb-queue", "pbcomb", "no-topersist",
                             "PBqueue without the toPersist write-backs (Alg. 5 l.24)"));
FERRITE_REGISTER_ADAPTER(PBQueue<fc::kNoOldTail>,
                         fa::ferrite_broken("pb-queue", "pbcomb", "no-oldtail",
                             "PBqueue: dequeuers ignore oldTail and may pass the unpersisted tail (Alg. 6 l.57)"));
FERRITE_REGISTER_ADAPTER(PBQueue<fc::kPaperRound>,
                         fa::ferrite_ablation("pb-queue", "pbcomb", "paper",
                             "PBqueue with the paper's rounds (StateRec pwb, pfence, index pwb, psync)"));
FERRITE_REGISTER_ADAPTER(PBQueue<fc::kNoRecycling>,
                         fa::ferrite_ablation("pb-queue", "pbcomb", "no-rec",
                             "PBqueue without the per-thread free lists (dequeued nodes freed to the heap)"));
FERRITE_REGISTER_ADAPTER(PBQueue<fc::kPaperRound | fc::kNoPfenceBetweenPwbs>,
                         fa::ferrite_broken("pb-queue", "pbcomb", "no-pfence",
                             "PBqueue's paper rounds without the pfence before the index switch (Alg. 5 l.26 / Alg. 6 l.63)"));
FERRITE_REGISTER_ADAPTER(PBQueue<fc::kNoOutsideFence>,
                         fa::ferrite_broken("pb-queue", "pbcomb", "no-outside-fence",
                             "PBqueue's stamped rounds without the pfence between the nodes' and the record's write-backs"));
FERRITE_REGISTER_ADAPTER(PBQueue<fc::kHeadOnly>,
                         fa::ferrite_broken("pb-queue", "pbcomb", "head-only",
                             "PBqueue's stamped rounds write back the record's head line only, not the changed (response, tag) lines"));

}  // namespace adapter_pb_queue
