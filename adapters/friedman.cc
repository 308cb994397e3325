// adapters/friedman.cc — the Friedman–Herlihy–Marathe–Petrank durable queue
// and log queue (include/ferrite/baselines/friedman.h); the log queue is
// detectable.
#include "baseline_common.h"
#include "ferrite/baselines/friedman.h"

namespace adapter_friedman {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fb = ferrite::baselines;
namespace op = ferrite::op;

template <bool kLog, unsigned F>
struct Friedman {
  using Q = fb::FriedmanQueue<kLog, F>;
  using Handle = std::unique_ptr<Q>;
  static constexpr op::Abstract kAbstract = op::Abstract::kQueue;
  static constexpr bool kDetectable = kLog;

  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    return std::make_unique<Q>(*pool, s.name, s.threads, s.value_size);
  }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) { return create(&pool, s); }
  static op::Response apply(Handle& h, int tid, std::uint64_t seq, const op::Op& o) {
    return fa::pair_apply(kAbstract, o, [&](bool ins, std::int64_t arg, std::int64_t* out) {
      if (ins) return h->enqueue(tid, seq, arg), true;
      return h->try_dequeue(tid, seq, out);
    });
  }
  static op::Response recover(Handle& h, int tid, std::uint64_t seq, const op::Op& o) {
    if constexpr (kLog) {
      std::int64_t v = 0;
      const bool enq = o.kind == op::kEnqueue;
      const bool r = h->recover_op(tid, seq, enq, o.arg, &v);
      if (enq || !r) return op::Response::none();
      return op::Response::of(v);
    } else {
      return op::Response::none();
    }
  }
  static std::vector<std::int64_t> observe(Handle& h) { return h->snapshot(); }
  static op::Op next_op(int tid, std::uint64_t& rng, fa::Workload& w) {
    return fa::pair_workload(kAbstract, tid, rng, w);
  }
};

using fa::Origin;
template <unsigned F>
using Durable = Friedman<false, F>;
template <unsigned F>
using Log = Friedman<true, F>;

}  // namespace

FERRITE_REGISTER_ADAPTER(Durable<fb::kNoFaults>,
                         {.technique = "friedman-durable", .family = "friedman", .origin = Origin::kCompetitor,
                          .description = "Friedman et al. PPoPP'18 durable queue"});
FERRITE_REGISTER_ADAPTER(Durable<fb::kNoNodePwb>,
                         {.technique = "friedman-durable", .variant = "no-node-pwb", .family = "friedman",
                          .origin = Origin::kCompetitor, .broken = true,
                          .description = "nodes linked without being written back"});
FERRITE_REGISTER_ADAPTER(Durable<fb::kNoLinkPwb>,
                         {.technique = "friedman-durable", .variant = "no-link-pwb", .family = "friedman",
                          .origin = Origin::kCompetitor, .broken = true,
                          .description = "the linking CAS (last->next) is not written back"});
FERRITE_REGISTER_ADAPTER(Log<fb::kNoFaults>,
                         {.technique = "friedman-log", .family = "friedman", .origin = Origin::kCompetitor,
                          .description = "Friedman et al. PPoPP'18 log queue (detectable)"});
FERRITE_REGISTER_ADAPTER(Log<fb::kNoLogPwb>,
                         {.technique = "friedman-log", .variant = "no-log-pwb", .family = "friedman",
                          .origin = Origin::kCompetitor, .broken = true,
                          .description = "per-thread log entries never written back (recover_op guesses wrong)"});
FERRITE_REGISTER_ADAPTER(Log<fb::kNoNodePwb>,
                         {.technique = "friedman-log", .variant = "no-node-pwb", .family = "friedman",
                          .origin = Origin::kCompetitor, .broken = true,
                          .description = "nodes linked without being written back"});

}  // namespace adapter_friedman
