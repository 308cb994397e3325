// adapters/logging_store_models.cc — the failure-atomic logging library
// (include/ferrite/logging/) under the crash simulator's store models
// (docs/crash.md, "The store models"): the same workloads as
// adapters/logging_workloads.cc (queue and hash map × txn / ATLAS / SFR),
// each with the instrumentation its persistency model needs, claimed under
// that model only. Crash subjects logging-store-<language>-<structure>
// (no bench technique: the HOPS instrumentations issue no write-back, so a
// run on this machine measures nothing a HOPS machine would do).
//
// Variants (Registration::models names the one model each is checked under):
//   correct-hops       HOPS instrumentation (HOPS+ paper Table 1, HOPS
//                      column: ofence after each undo entry, dfence at a
//                      region's end), under `hops`
//   correct-hops+      HOPS+ instrumentation (no software synchronization
//                      history), under `hops+`
//   correct-strand     strand instrumentation (StrandWeaver Fig. 5: a
//                      strand per log/update pair, JoinStrand at region
//                      end), under `strand`
//   hops-no-dfence     broken: HOPS without the dfence that makes the
//                      commit / release entry durable before the region
//                      ends — a completed region is undone (queue and map)
//   hops-no-ofence     broken: HOPS without the ofence between an undo
//                      entry and its update (queue only: see below)
//   strand-no-barrier  broken: strand without the persist barrier between
//                      an undo entry and its update (queue only: the map's
//                      regions store one word, whose lost undo entry no
//                      state can show)
#include <memory>
#include <string>
#include <type_traits>

#include "adapter.h"
#include "ferrite/logging/workloads.h"

namespace {

namespace fa = ferrite::adapters;
namespace fl = ferrite::logging;
namespace op = ferrite::op;

template <class W, fl::Language L, fl::Instrumentation I, unsigned F = fl::internal::kNoFaults>
struct StoreLogged {
  static constexpr bool kQueue = std::is_same_v<W, fl::LoggedQueue>;
  using Handle = std::unique_ptr<W>;
  static constexpr op::Abstract kAbstract = kQueue ? op::Abstract::kQueue : op::Abstract::kMap;
  static constexpr bool kDetectable = false;

  static fl::LoggerOptions options() { return {.language = L, .instrumentation = I, .faults = F}; }
  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    if constexpr (kQueue) {
      return std::make_unique<W>(*pool, s.name, s.threads, options());
    } else {
      const std::uint64_t nb = s.key_range > 0 ? s.key_range : 64;
      return std::make_unique<W>(*pool, s.name, s.threads, options(), nb);
    }
  }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) { return create(&pool, s); }
  static op::Response apply(Handle& h, int tid, std::uint64_t, const op::Op& o) {
    if constexpr (kQueue) {
      switch (o.kind) {
        case op::kEnqueue: h->enqueue(tid, o.arg); return op::Response::ack();
        case op::kDequeue: return op::Response::from(h->dequeue(tid));
        case op::kSync: return op::Response::ack();
        default: fa::unsupported("logging queue", o);
      }
    } else {
      switch (o.kind) {
        case op::kPut: return op::Response::from(h->put(tid, o.arg, o.arg2));
        case op::kGet: return op::Response::from(h->get(tid, o.arg));
        case op::kErase: return op::Response::from(h->erase(tid, o.arg));
        case op::kSync: return op::Response::ack();
        default: fa::unsupported("logging map", o);
      }
    }
  }
  static std::vector<std::int64_t> observe(Handle& h) {
    if constexpr (kQueue) {
      return h->snapshot();
    } else {
      std::vector<std::int64_t> out;
      for (const auto& [k, v] : h->items()) {
        out.push_back(k);
        out.push_back(v);
      }
      return out;
    }
  }
};

fa::Registration reg(const char* lang, const char* structure, const char* variant, const char* model, bool broken,
                     const std::string& desc) {
  fa::Registration r;
  r.technique = std::string("logging-store-") + lang;
  r.subject = std::string("logging-store-") + lang + "-" + structure;
  r.variant = variant;
  r.family = "logging";
  r.origin = fa::Origin::kFerrite;
  r.broken = broken;
  r.ablation = !broken;  // correct-<instrumentation>: no plain "correct" variant
  r.description = desc + " [claimed under " + model + " only]";
  r.bench = false;
  // CRASH: the HOPS / HOPS+ instrumentations rely on stores persisting by
  // themselves (no pwb): under a write-back model nothing they store would
  // ever be durable; the strand instrumentation's per-store order needs the
  // strand model (under abstract a persist barrier orders lines, not
  // stores: adapters/logging_workloads.cc). Each variant claims one model.
  r.models = {model};
  return r;
}

constexpr auto kHops = fl::Instrumentation::kHops;
constexpr auto kHopsPlus = fl::Instrumentation::kHopsPlus;
constexpr auto kStrand = fl::Instrumentation::kStrand;
constexpr auto kTxn = fl::Language::kTxn;
constexpr auto kAtlas = fl::Language::kAtlas;
constexpr auto kSfr = fl::Language::kSfr;
using fl::LoggedMap;
using fl::LoggedQueue;
constexpr unsigned kNoFence = fl::internal::kNoLogFence;
constexpr unsigned kNoDfence = fl::internal::kNoDurableEnd;

// Every variant of one workload × language (FERRITE_REGISTER_ADAPTER's
// register_adapter, once per variant type).
template <class W, fl::Language L>
bool register_all(const char* lang, const char* structure, const char* what) {
  const std::string w(what);
  fa::register_adapter<StoreLogged<W, L, kHops>>(
      reg(lang, structure, "hops", "hops", false, w + ", undo log, HOPS instrumentation (HOPS+ paper Table 1)"));
  fa::register_adapter<StoreLogged<W, L, kHopsPlus>>(
      reg(lang, structure, "hops+", "hops+", false, w + ", undo log, HOPS+ instrumentation (HOPS+ paper Table 1)"));
  fa::register_adapter<StoreLogged<W, L, kStrand>>(
      reg(lang, structure, "strand", "strand", false, w + ", undo log, strand instrumentation (StrandWeaver Fig. 5)"));
  fa::register_adapter<StoreLogged<W, L, kHops, kNoDfence>>(
      reg(lang, structure, "hops-no-dfence", "hops", true,
          "HOPS instrumentation without the dfence at a region's commit / release"));
  if constexpr (std::is_same_v<W, LoggedQueue>) {
    fa::register_adapter<StoreLogged<W, L, kStrand, kNoFence>>(
        reg(lang, structure, "strand-no-barrier", "strand", true,
            "strand instrumentation without the persist barrier between undo entry and update"));
    fa::register_adapter<StoreLogged<W, L, kHops, kNoFence>>(
        reg(lang, structure, "hops-no-ofence", "hops", true,
            "HOPS instrumentation without the ofence between undo entry and update"));
  }
  return true;
}

}  // namespace

static const bool ferrite_logging_store_models_registered =
    register_all<LoggedQueue, kTxn>("txn", "queue", "queue, a transaction per op") &&
    register_all<LoggedQueue, kAtlas>("atlas", "queue", "queue, an ATLAS critical section per op") &&
    register_all<LoggedQueue, kSfr>("sfr", "queue", "queue, an SFR per op") &&
    register_all<LoggedMap, kTxn>("txn", "map", "hash map, a transaction per op") &&
    register_all<LoggedMap, kAtlas>("atlas", "map", "hash map, an ATLAS critical section per op") &&
    register_all<LoggedMap, kSfr>("sfr", "map", "hash map, an SFR per op");
