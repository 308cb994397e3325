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
      if (!r.completed() || spec_.undo_dependents) {
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
