// adapters/pb_queue.cc — PBqueue (include/ferrite/combining/pb_queue.h) and
// its broken variants.
#include "combining.h"
#include "ferrite/combining/internal/faults.h"
#include "ferrite/combining/pb_queue.h"

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

using fa::Origin;

}  // namespace

FERRITE_REGISTER_ADAPTER(PBQueue<0>, {.technique = "pb-queue", .family = "pbcomb", .origin = Origin::kFerrite,
                                      .description = "PBqueue: two PBcomb instances, oldTail, per-thread free lists (Alg. 5-7)"});
FERRITE_REGISTER_ADAPTER(PBQueue<fc::kNoToPersist>,
                         {.technique = "pb-queue", .variant = "no-topersist", .family = "pbcomb",
                          .origin = Origin::kFerrite, .broken = true,
                          .description = "PBqueue without the toPersist write-backs (Alg. 5 l.24)"});
FERRITE_REGISTER_ADAPTER(PBQueue<fc::kNoOldTail>,
                         {.technique = "pb-queue", .variant = "no-oldtail", .family = "pbcomb",
                          .origin = Origin::kFerrite, .broken = true,
                          .description = "PBqueue: dequeuers ignore oldTail and may pass the unpersisted tail (Alg. 6 l.57)"});
FERRITE_REGISTER_ADAPTER(PBQueue<fc::kNoPfenceBetweenPwbs>,
                         {.technique = "pb-queue", .variant = "no-pfence", .family = "pbcomb",
                          .origin = Origin::kFerrite, .broken = true,
                          .description = "PBqueue without the pfence before the index switch (Alg. 5 l.26 / Alg. 6 l.63)"});
