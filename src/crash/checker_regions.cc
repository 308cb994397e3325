// src/crash/checker_regions.cc — failure atomicity of multi-store regions
// (crash/checker.h, check_failure_atomicity).
//
// The property. Each operation of the history is one failure-atomic region
// (a transaction, an ATLAS outermost critical section, an SFR) whose effect
// on the abstract state is the subject's RegionSpec::apply. The recovered
// state must equal the state reached by applying, whole and one at a time,
// a prefix of the regions: every completed region, any subset of the
// regions in flight at the crash, in an order consistent with
// happens-before — program order within a thread, real time across
// threads (a region that responded before another was invoked precedes it;
// regions that conflict are ordered by their locks, which real time
// respects, and regions that overlap in time may be ordered either way) —
// with each completed region's
// response equal to the one the semantics gives in that order. A state
// that shows part of a region (one of a swap's two stores, some of a
// New-Order's stock updates) is the state after no such prefix.
//
// Why this is not durable linearizability of a built-in specification:
// the regions of the StrandWeaver paper's Array Swap and TPCC workloads are
// not operations of a queue, set or map; the subject supplies their
// sequential semantics, and the check is the same search over orders.
//
// The engine ("exact-regions"). A depth-first search over the regions'
// orders: the threads' histories are chains (program order); a region may
// be placed next when no unplaced region responded before it was invoked;
// a region in flight (the last of its chain) is placed or dropped — and,
// for ATLAS regions (RegionSpec::undo_dependents), a completed region may
// be dropped with the rest of its chain when a chain of drops justifies it
// (each dropped completed region had a dropped region of another thread
// invoked before it responded, down to a region in flight). Nodes
// are memoized on (chain positions, 128-bit hash of the state): a node
// that failed once fails again. Exact; past CheckOptions::node_budget nodes
// the verdict is kInconclusive, never a pass. One thread: a single chain,
// linear.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include "ferrite/crash/checker.h"

namespace ferrite::crash {
namespace {

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

struct Key {
  std::uint64_t a, b;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  std::size_t operator()(const Key& k) const { return static_cast<std::size_t>(k.a ^ (k.b * 31)); }
};

constexpr std::size_t kNone = ~std::size_t{0};

class Search {
 public:
  Search(const CheckInput& in, const RegionSpec& spec, const CheckOptions& opt)
      : in_(in), spec_(spec), budget_(opt.node_budget) {
    int threads = 0;
    for (const auto& h : in.ops) threads = std::max(threads, h.tid + 1);
    chains_.resize(static_cast<std::size_t>(threads));
    for (std::size_t i = 0; i < in.ops.size(); ++i) chains_[static_cast<std::size_t>(in.ops[i].tid)].push_back(i);
    pos_.assign(chains_.size(), 0);
    cut_.assign(chains_.size(), kNone);
    first_cut_.assign(chains_.size(), kNone);
    for (std::size_t t = 0; t < chains_.size(); ++t)
      if (!chains_[t].empty() && !at(t, chains_[t].size() - 1).completed()) first_cut_[t] = chains_[t].size() - 1;
    if (spec.undo_dependents) bound_cuts();
  }

  bool run() {
    State st = in_.initial;
    return dfs(st);
  }
  bool out_of_budget() const { return out_of_budget_; }
  std::uint64_t nodes() const { return nodes_; }

 private:
  const HistoryOp& at(std::size_t t, std::size_t i) const { return in_.ops[chains_[t][i]]; }
  const HistoryOp& next(std::size_t t) const { return at(t, pos_[t]); }
  // A chain cut at i excludes its regions from i on (they never took effect).
  bool has_next(std::size_t t) const { return cut_[t] == kNone && pos_[t] < chains_[t].size(); }

  // No unplaced region of another thread responded before `r` was invoked
  // (excluded regions constrain nothing).
  bool placeable(std::size_t t) const {
    const HistoryOp& r = next(t);
    for (std::size_t u = 0; u < chains_.size(); ++u) {
      if (u == t || !has_next(u)) continue;
      // The first unplaced region of a chain responds first (program order).
      const HistoryOp& q = next(u);
      if (q.completed() && q.respond < r.invoke) return false;
    }
    return true;
  }

  // undo_dependents: which completed regions a leaf's cuts_justified could
  // ever accept as a chain's cut, from the history alone. A justified cut
  // at a completed region r of chain t is the end of a path of cuts of
  // distinct chains x -> c1 -> ... -> r that starts at a region in flight,
  // each invoked before the next responded: at most one region per chain,
  // so at most threads - 1 steps. Relaxed to any path of that many steps
  // (chains may repeat), per chain the regions reached form a suffix (a
  // chain's responses increase), found by threads - 1 rounds over the
  // earliest invocation each chain offers. first_cut_[t]: the first region
  // of chain t that may be cut (kNone: none). Without it every node of the
  // search offers a cut at every chain's next region, however far from the
  // crash, and a cut there is refuted only after more placements: 36 nodes
  // per region of a 3-thread ATLAS swap history, which ran 1 000-operation
  // campaigns out of the node budget (docs/logging.md). Rejects only cuts
  // cuts_justified would reject: the search stays exact.
  void bound_cuts() {
    const std::size_t n = chains_.size();
    constexpr std::uint64_t kNever = ~std::uint64_t{0};
    std::vector<std::uint64_t> earliest(n, kNever);  // per chain: earliest invocation of a region reached
    for (std::size_t t = 0; t < n; ++t)
      if (first_cut_[t] != kNone) earliest[t] = at(t, first_cut_[t]).invoke;
    for (std::size_t step = 1; step < n; ++step) {
      std::vector<std::uint64_t> next_earliest = earliest;
      for (std::size_t t = 0; t < n; ++t) {
        std::uint64_t before = kNever;  // a region of chain t responding after this may be reached
        for (std::size_t u = 0; u < n; ++u)
          if (u != t) before = std::min(before, earliest[u]);
        if (before == kNever) continue;
        std::size_t i = first_cut_[t] == kNone ? chains_[t].size() : first_cut_[t];
        while (i > 0 && at(t, i - 1).completed() && at(t, i - 1).respond > before) --i;
        if (i < chains_[t].size()) {
          first_cut_[t] = i;
          next_earliest[t] = std::min(next_earliest[t], at(t, i).invoke);
        }
      }
      earliest = std::move(next_earliest);
    }
  }

  // undo_dependents: every cut at a completed region is justified by a
  // chain of cuts ending at a region in flight — the first excluded region
  // of another thread was invoked before it responded (it may have handed
  // it a lock).
  bool cuts_justified() const {
    std::vector<bool> ok(chains_.size(), false);
    bool changed = true;
    for (std::size_t t = 0; t < chains_.size(); ++t) ok[t] = cut_[t] == kNone || !at(t, cut_[t]).completed();
    while (changed) {
      changed = false;
      for (std::size_t t = 0; t < chains_.size(); ++t) {
        if (ok[t]) continue;
        for (std::size_t u = 0; u < chains_.size(); ++u) {
          if (u == t || cut_[u] == kNone || !ok[u]) continue;
          if (at(u, cut_[u]).invoke < at(t, cut_[t]).respond) {
            ok[t] = changed = true;
            break;
          }
        }
      }
    }
    return std::all_of(ok.begin(), ok.end(), [](bool b) { return b; });
  }

  // An upper bound of cuts_justified for every leaf below this node: a
  // chain not cut yet may still be cut, at its next region or a later one
  // that may be cut at all (first_cut_; invoked no earlier than the first
  // such), and that cut is assumed justified; a chain placed to its end
  // justifies nothing. A cut at a
  // completed region that no such chain (or justified cut) was invoked
  // before is justified at no leaf below: the search gives the node up
  // at once instead of placing every remaining region first. (Without it a
  // cut tried at a completed region deep in a long history — every node of
  // an ATLAS search offers one — cost a descent to the leaves, and 3-thread
  // campaigns of the ATLAS array swap ran out of the node budget: docs/
  // logging.md.) Prunes only what cuts_justified would reject: exact.
  bool cuts_may_be_justified() const {
    const std::size_t n = chains_.size();
    // Per chain: 1 a justifier (cut in flight, or not cut and still able to
    // be), 0 a cut at a completed region not justified yet, -1 neither.
    std::vector<int> ok(n, -1);
    std::vector<std::uint64_t> when(n, 0);  // the earliest invocation of its cut region
    bool pending = false;
    for (std::size_t t = 0; t < n; ++t) {
      if (cut_[t] != kNone) {
        const HistoryOp& c = at(t, cut_[t]);
        ok[t] = c.completed() ? 0 : 1;
        when[t] = c.invoke;
        pending = pending || ok[t] == 0;
      } else if (pos_[t] < chains_[t].size() && first_cut_[t] != kNone) {
        ok[t] = 1;
        when[t] = at(t, std::max(pos_[t], first_cut_[t])).invoke;
      }
    }
    if (!pending) return true;
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t t = 0; t < n; ++t) {
        if (ok[t] != 0) continue;
        const std::uint64_t respond = at(t, cut_[t]).respond;
        for (std::size_t u = 0; u < n; ++u) {
          if (u != t && ok[u] == 1 && when[u] < respond) {
            ok[t] = 1;
            changed = true;
            break;
          }
        }
      }
    }
    for (std::size_t t = 0; t < n; ++t)
      if (ok[t] == 0) return false;
    return true;
  }

  Key key(const State& st) const {
    std::uint64_t a = 0x243F6A8885A308D3ull ^ st.size(), b = 0x13198A2E03707344ull ^ (st.size() << 7);
    for (std::size_t t = 0; t < pos_.size(); ++t) {
      a = mix(a ^ pos_[t] ^ (cut_[t] << 32));
      b = mix(b + pos_[t] * 0x9E3779B97F4A7C15ull + cut_[t]);
    }
    for (auto v : st) {
      a = mix(a ^ static_cast<std::uint64_t>(v));
      b = mix(b + static_cast<std::uint64_t>(v) * 0xC2B2AE3D27D4EB4Full);
    }
    return {a, b};
  }

  // Tries the rest with chain t cut at its next region.
  bool cut(std::size_t t, const State& st) {
    cut_[t] = pos_[t];
    const bool found = dfs(st);
    cut_[t] = kNone;
    return found;
  }

  bool dfs(const State& st) {
    if (++nodes_ > budget_) {
      out_of_budget_ = true;
      return false;
    }
    bool done = true;
    for (std::size_t t = 0; t < chains_.size(); ++t) done = done && !has_next(t);
    if (done) return st == in_.observed && (!spec_.undo_dependents || cuts_justified());
    if (spec_.undo_dependents && !cuts_may_be_justified()) return false;
    const Key k = key(st);
    if (seen_.count(k) != 0) return false;
    for (std::size_t t = 0; t < chains_.size(); ++t) {
      if (!has_next(t)) continue;
      const HistoryOp& r = next(t);
      if (placeable(t)) {
        State after = st;
        const Response got = spec_.apply(after, r.op);
        if (!r.completed() || got == r.response) {
          ++pos_[t];
          const bool found = dfs(after);
          --pos_[t];
          if (found) return true;
          if (out_of_budget_) return false;
        }
      }
      // Excluded: a region in flight never took effect (it is the last of
      // its chain); under undo_dependents a completed one may be undone
      // with every later region of its thread.
      if (!r.completed() || (spec_.undo_dependents && first_cut_[t] != kNone && pos_[t] >= first_cut_[t])) {
        if (cut(t, st)) return true;
        if (out_of_budget_) return false;
      }
    }
    seen_.insert(k);
    return false;
  }

  const CheckInput& in_;
  const RegionSpec& spec_;
  std::size_t budget_;
  std::vector<std::vector<std::size_t>> chains_;
  std::vector<std::size_t> pos_;
  std::vector<std::size_t> cut_;  // per chain: first excluded region, or kNone
  std::vector<std::size_t> first_cut_;  // per chain: first region that may be excluded (bound_cuts), or kNone
  std::unordered_set<Key, KeyHash> seen_;
  std::uint64_t nodes_ = 0;
  bool out_of_budget_ = false;
};

std::string region_name(const RegionSpec& spec, const Op& op) {
  return spec.format ? spec.format(op) : format_op(op);
}

}  // namespace

CheckResult check_failure_atomicity(const CheckInput& in, const RegionSpec& spec, const CheckOptions& opt) {
  CheckResult res;
  res.property = "failure-atomicity";
  res.engine = "exact-regions";
  if (!spec.apply) throw std::invalid_argument("check_failure_atomicity: the region spec has no apply");
  Search s(in, spec, opt);
  const bool found = s.run();
  res.nodes = s.nodes();
  if (found) return res;
  std::size_t completed = 0, pending = 0;
  std::string in_flight;
  for (const auto& h : in.ops) {
    if (h.completed()) {
      ++completed;
    } else {
      ++pending;
      in_flight += (in_flight.empty() ? "" : ", ") + region_name(spec, h.op) + " by thread " + std::to_string(h.tid);
    }
  }
  if (s.out_of_budget()) {
    res.verdict = CheckResult::Verdict::kInconclusive;
    res.reason = "the search over region orders ran out of its budget (" + std::to_string(opt.node_budget) +
                 " nodes) on " + std::to_string(in.ops.size()) + " regions";
    return res;
  }
  res.verdict = CheckResult::Verdict::kViolation;
  res.reason = "the recovered state " + format_state(in.observed) + " is the state after no prefix of the " +
               std::to_string(completed) + " completed " + spec.name + " regions" +
               (pending > 0 ? " plus any of those in flight (" + in_flight + ")" : std::string()) +
               ", each applied whole: a region is partly visible, or a completed one was lost";
  return res;
}

}  // namespace ferrite::crash
