// adapters/logging_store_models.cc — the failure-atomic logging library
// (include/ferrite/logging/) under the crash simulator's store models
// (docs/crash.md, "The store models"): the same workloads as
// adapters/logging_workloads.cc (the StrandWeaver paper's Table II: queue,
// hash map, array swap, red-black tree, TPCC New-Order, N-Store-like key-
// value store × txn / ATLAS / SFR; adapters/logging_adapter.h),
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
//                      entry and its update (not the map: see below)
//   strand-no-barrier  broken: strand without the persist barrier between
//                      an undo entry and its update (not the map: its
//                      regions store one word, whose lost undo entry no
//                      state can show)
//   hops+-open-nesting broken (hand-off only): HOPS+ without closed
//                      nesting (HOPS+ paper §3) — a section acquires a lock
//                      released early inside a section a crash undoes
#include <string>
#include <type_traits>

#include "logging_adapter.h"

namespace adapter_logging_store_models {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fl = ferrite::logging;
using fa::logging::Logged;

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
constexpr unsigned kNoFence = fl::internal::kNoLogFence;
constexpr unsigned kNoDfence = fl::internal::kNoDurableEnd;
constexpr unsigned kOpenNesting = fl::internal::kOpenNesting;

// Every variant of one workload × language (FERRITE_REGISTER_ADAPTER's
// register_adapter, once per variant type).
template <class W, fl::Language L>
bool register_all(const char* lang, const char* per_op) {
  const char* structure = fa::logging::Workload<W>::kName;
  const std::string w = std::string(structure) + ", " + per_op;
  fa::register_adapter<Logged<W, L, kHops>>(
      reg(lang, structure, "hops", "hops", false, w + ", undo log, HOPS instrumentation (HOPS+ paper Table 1)"));
  fa::register_adapter<Logged<W, L, kHopsPlus>>(
      reg(lang, structure, "hops+", "hops+", false, w + ", undo log, HOPS+ instrumentation (HOPS+ paper Table 1)"));
  fa::register_adapter<Logged<W, L, kStrand>>(
      reg(lang, structure, "strand", "strand", false, w + ", undo log, strand instrumentation (StrandWeaver Fig. 5)"));
  fa::register_adapter<Logged<W, L, kHops, kNoDfence>>(
      reg(lang, structure, "hops-no-dfence", "hops", true,
          "HOPS instrumentation without the dfence at a region's commit / release"));
  // The map's regions store one word, whose lost undo entry no state can
  // show; every other workload's regions store several.
  if constexpr (!std::is_same_v<W, fl::LoggedMap>) {
    fa::register_adapter<Logged<W, L, kStrand, kNoFence>>(
        reg(lang, structure, "strand-no-barrier", "strand", true,
            "strand instrumentation without the persist barrier between undo entry and update"));
    fa::register_adapter<Logged<W, L, kHops, kNoFence>>(
        reg(lang, structure, "hops-no-ofence", "hops", true,
            "HOPS instrumentation without the ofence between undo entry and update"));
  }
  return true;
}


// The HOPS+ paper's Figure 1 (ATLAS only): ATLAS sections that release a
// lock early, under each store model.
bool register_handoff() {
  using H = fl::LoggedHandoff;
  const std::string w = "HOPS+ paper Fig. 1 flag/data hand-off, ATLAS sections releasing a lock early";
  fa::register_adapter<Logged<H, kAtlas, kHops>>(
      reg("atlas", "handoff", "hops", "hops", false, w + ", HOPS instrumentation (HOPS+ paper Table 1)"));
  // HOPS+ (Table 1, no software synchronization history) relies on closed
  // nesting (§3): the instrumentation keeps a lock released inside an
  // outermost section locked until the section ends (logging/undo_log.h),
  // so a consume never reads DATA from a produce a crash can undo.
  fa::register_adapter<Logged<H, kAtlas, kHopsPlus>>(
      reg("atlas", "handoff", "hops+", "hops+", false,
          w + ", HOPS+ instrumentation with closed nesting (HOPS+ paper Table 1, §3)"));
  // Broken: HOPS+ without closed nesting hands A over at the early release;
  // a crash before the produce ends undoes it and keeps the consume that
  // read its DATA — {FLAG=v, DATA=old}, Figure 1.
  fa::register_adapter<Logged<H, kAtlas, kHopsPlus, kOpenNesting>>(
      reg("atlas", "handoff", "hops+-open-nesting", "hops+", true,
          "HOPS+ instrumentation without closed nesting: an early release hands the lock over at once"));
  fa::register_adapter<Logged<H, kAtlas, kStrand>>(
      reg("atlas", "handoff", "strand", "strand", false, w + ", strand instrumentation (StrandWeaver Fig. 5)"));
  return true;
}

}  // namespace

static const bool ferrite_logging_store_models_registered = register_handoff() &&
    fa::logging::for_each_workload([]<class W, fl::Language L>(const char* lang, const char* per_op) {
      return register_all<W, L>(lang, per_op);
    });

}  // namespace adapter_logging_store_models
