// adapters/logging_workloads.cc — the failure-atomic logging library
// (include/ferrite/logging/) through its workloads: the StrandWeaver paper's
// Table II — queue, hash map, array swap, red-black tree, TPCC New-Order and
// the N-Store-like key-value store — each in the three language-level models
// (txn, atlas, sfr). Crash subjects logging-<language>-<workload>; bench
// techniques logging-<language> (queue and map) and
// logging-<workload>-<language> (the others, under the map vocabulary:
// adapters/logging_adapter.h says how each maps get / put / erase). Every
// workload is reachable by name through this one registry (the timing
// model's traces included).
//
// Variants:
//   correct          x86 instrumentation (HOPS+ paper Table 1, x86-64)
//   correct-strand   strand instrumentation (StrandWeaver Fig. 5); under
//                    the abstract and x86 models the strand verbs are the
//                    paper's Intel baseline (persist barrier and join = an
//                    ordering / durability fence)
//   no-log-fence     broken: x86 without the fence between the undo entry
//                    and its update (queue only: the map's regions store
//                    one word, whose lost undo entry no state can show)
//   no-barrier       broken: strand without the persist barrier between
//                    the undo entry and its update (queue only, as above)
//   forward-rollback broken recovery: undo entries rolled back in creation
//                    order instead of reverse (StrandWeaver §V) — rbtree and
//                    tpcc, whose regions may store one word twice (a colour
//                    reset in a later fix-up step; a stock row of an item
//                    that repeats in the order)
// The Table II workloads (swap, rbtree, tpcc, nstore) register no-log-fence
// as well: their regions store several words, so a lost undo entry shows.
// HOPS and HOPS+ instrumentation issues no write-back: it is correct only
// under a model in which stores persist by themselves (hops, hops+), which
// this simulator does not have yet — not registered here (see
// docs/logging.md; tests/logging checks their verb sequences).
#include <string>
#include <type_traits>

#include "logging_adapter.h"

namespace adapter_logging_workloads {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fl = ferrite::logging;
using fa::logging::Logged;

fa::Registration reg(const char* lang, const char* structure, const char* variant, bool broken, bool ablation,
                     const std::string& desc) {
  fa::Registration r;
  // The queue and the map were first: their bench names are the
  // language's (logging-txn under queue and map); the Table II workloads,
  // all on the map vocabulary, add their own name (logging-swap-txn).
  const std::string st(structure);
  r.technique = st == "queue" || st == "map" ? std::string("logging-") + lang : "logging-" + st + "-" + lang;
  r.subject = std::string("logging-") + lang + "-" + structure;
  r.variant = variant;
  r.family = "logging";
  r.origin = fa::Origin::kFerrite;
  r.broken = broken;
  r.ablation = ablation;
  r.description = desc;
  // The array swap and TPC-C New-Order are not maps: every index of the
  // array is always present, and New-Order's get/put/erase answers are not a
  // map's. They are bench techniques under the map vocabulary (timed like
  // a map) that do not claim a map's semantics: the harness's map checks
  // (hit rates, keys present) skip them.
  r.bench = !broken;
  r.map_semantics = st != "swap" && st != "tpcc";
  // The strand instrumentation orders an undo entry before its update with
  // a persist barrier, which `abstract` maps to an epoch end (an ordering,
  // not durability): another thread's write-back of a line shared with the
  // update (a bucket array line, a list node) can then carry the update
  // to the media before the entry. Strand persistency forbids that (its
  // persists are per store, not per line); x86 makes the barrier an sfence.
  // Under the `strand` model itself the same instrumentation is the
  // logging-store-*/correct-strand subject (logging_store_models.cc).
  if (ablation && !broken) {
    r.models = {"x86"};
    r.description += " [claimed under x86 only: under abstract a persist barrier only orders, and another thread's "
                     "write-back of a shared line can carry the update before its undo entry]";
  }
  return r;
}

constexpr auto kX86 = fl::Instrumentation::kX86;
constexpr auto kStrand = fl::Instrumentation::kStrand;
constexpr auto kTxn = fl::Language::kTxn;
constexpr auto kAtlas = fl::Language::kAtlas;
constexpr auto kSfr = fl::Language::kSfr;
constexpr unsigned kNoFence = fl::internal::kNoLogFence;
constexpr unsigned kForward = fl::internal::kForwardRollback;

const char* const kCorrect = ", undo log, x86 instrumentation (HOPS+ paper Table 1)";
const char* const kStrandDesc = ", undo log, strand instrumentation (StrandWeaver Fig. 5)";
const char* const kNoFenceDesc = "x86 instrumentation without the fence between undo entry and update";
const char* const kNoBarrierDesc = "strand instrumentation without the persist barrier between undo entry and update";
const char* const kForwardDesc = "recovery rolls undo entries back in creation order instead of reverse";

// Every variant of workload W in language L: correct (x86), strand, and
// the broken ones that apply to W.
template <class W, fl::Language L>
bool register_all(const char* lang, const char* per_op) {
  const char* w = fa::logging::Workload<W>::kName;
  const std::string what = std::string(fa::logging::Workload<W>::kName) + ", " + per_op;
  constexpr bool kQueue = std::is_same_v<W, fl::LoggedQueue>;
  constexpr bool kMap = std::is_same_v<W, fl::LoggedMap>;
  fa::register_adapter<Logged<W, L, kX86>>(reg(lang, w, "correct", false, false, what + kCorrect));
  fa::register_adapter<Logged<W, L, kStrand>>(reg(lang, w, "strand", false, true, what + kStrandDesc));
  if constexpr (!kMap) {
    fa::register_adapter<Logged<W, L, kX86, kNoFence>>(reg(lang, w, "no-log-fence", true, false, kNoFenceDesc));
  }
  if constexpr (kQueue) {
    fa::register_adapter<Logged<W, L, kStrand, kNoFence>>(reg(lang, w, "no-barrier", true, false, kNoBarrierDesc));
  }
  if constexpr (std::is_same_v<W, fl::LoggedRbTree> || std::is_same_v<W, fl::LoggedTpcc>) {
    fa::register_adapter<Logged<W, L, kX86, kForward>>(reg(lang, w, "forward-rollback", true, false, kForwardDesc));
  }
  return true;
}


// The HOPS+ paper's Figure 1 (ATLAS only; crash only): correct, strand,
// and without the synchronization history.
bool register_handoff() {
  using H = fl::LoggedHandoff;
  constexpr unsigned kNoHistory = fl::internal::kNoSyncHistory;
  const std::string what = "HOPS+ paper Fig. 1 flag/data hand-off, ATLAS sections releasing a lock early";
  auto no_bench = [](fa::Registration r) {
    r.bench = false;
    return r;
  };
  fa::register_adapter<Logged<H, kAtlas, kX86>>(no_bench(reg("atlas", "handoff", "correct", false, false, what + kCorrect)));
  fa::register_adapter<Logged<H, kAtlas, kStrand>>(
      no_bench(reg("atlas", "handoff", "strand", false, true, what + kStrandDesc)));
  fa::register_adapter<Logged<H, kAtlas, kX86, kNoHistory>>(
      reg("atlas", "handoff", "no-sync-history", true, false,
          "ATLAS without the synchronization history: a section that acquired a lock released early by an "
          "undone one is kept (HOPS+ paper Fig. 1: FLAG=1, DATA=0)"));
  return true;
}

}  // namespace

static const bool ferrite_logging_workloads_registered = register_handoff() &&
    fa::logging::for_each_workload([]<class W, fl::Language L>(const char* lang, const char* per_op) {
      return register_all<W, L>(lang, per_op);
    });

}  // namespace adapter_logging_workloads
