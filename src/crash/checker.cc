// Sequential specifications and the durability checkers (crash/checker.h).
#include "ferrite/crash/checker.h"

#include <algorithm>
#include <map>
#include <bit>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace ferrite::crash {

// ------------------------------------------------------------------ specs

std::string_view spec_name(Spec s) {
  switch (s) {
    case Spec::kQueue: return "queue";
    case Spec::kStack: return "stack";
    case Spec::kPriorityQueue: return "priority-queue";
    case Spec::kSet: return "set";
    case Spec::kMap: return "map";
    case Spec::kRegister: return "register";
    case Spec::kLog: return "log";
  }
  return "?";
}

std::string_view op_name(std::int32_t kind) { return op::kind_name(kind); }

bool spec_accepts(Spec s, std::int32_t k) {
  if (k == kSync) return true;
  switch (s) {
    case Spec::kQueue: return k == kEnqueue || k == kDequeue;
    case Spec::kStack: return k == kPush || k == kPop;
    case Spec::kPriorityQueue: return k == kInsert || k == kDeleteMin || k == kGetMin;
    case Spec::kSet: return k == kInsert || k == kRemove || k == kContains;
    case Spec::kMap: return k == kPut || k == kGet || k == kErase;
    case Spec::kRegister: return k == kMul || k == kRead;
    case Spec::kLog: return k == kAppend;
  }
  return false;
}

namespace {
Response none() { return {}; }
Response value(std::int64_t v) { return {true, v}; }
double as_double(std::int64_t bits) { return std::bit_cast<double>(bits); }
std::int64_t as_bits(double d) { return std::bit_cast<std::int64_t>(d); }
}  // namespace

Response spec_apply(Spec s, State& st, const Op& op) {
  if (!spec_accepts(s, op.kind))
    throw std::invalid_argument("operation " + std::string(op_name(op.kind)) + " is not part of the " +
                                std::string(spec_name(s)) + " specification");
  if (op.kind == kSync) return none();
  switch (s) {
    case Spec::kQueue:
      if (op.kind == kEnqueue) { st.push_back(op.arg); return none(); }
      if (st.empty()) return none();
      { auto v = st.front(); st.erase(st.begin()); return value(v); }
    case Spec::kStack:
      if (op.kind == kPush) { st.insert(st.begin(), op.arg); return none(); }
      if (st.empty()) return none();
      { auto v = st.front(); st.erase(st.begin()); return value(v); }
    case Spec::kPriorityQueue:
      if (op.kind == kInsert) { st.insert(std::upper_bound(st.begin(), st.end(), op.arg), op.arg); return none(); }
      if (st.empty()) return none();
      { auto v = st.front(); if (op.kind == kDeleteMin) st.erase(st.begin()); return value(v); }
    case Spec::kSet: {
      auto it = std::lower_bound(st.begin(), st.end(), op.arg);
      const bool present = it != st.end() && *it == op.arg;
      if (op.kind == kInsert) { if (!present) st.insert(it, op.arg); return value(present ? 0 : 1); }
      if (op.kind == kRemove) { if (present) st.erase(it); return value(present ? 1 : 0); }
      return value(present ? 1 : 0);
    }
    case Spec::kMap: {
      if (st.size() % 2 != 0) throw std::invalid_argument("map state must hold key,value pairs");
      std::size_t i = 0;
      while (i < st.size() && st[i] < op.arg) i += 2;
      const bool present = i < st.size() && st[i] == op.arg;
      if (op.kind == kPut) {
        if (present) { auto old = st[i + 1]; st[i + 1] = op.arg2; return value(old); }
        st.insert(st.begin() + static_cast<std::ptrdiff_t>(i), {op.arg, op.arg2});
        return none();
      }
      if (!present) return none();
      auto old = st[i + 1];
      if (op.kind == kErase) st.erase(st.begin() + static_cast<std::ptrdiff_t>(i), st.begin() + static_cast<std::ptrdiff_t>(i) + 2);
      return value(old);
    }
    case Spec::kRegister: {
      if (st.size() != 1) throw std::invalid_argument("register state must hold exactly one value");
      const auto old = st[0];
      if (op.kind == kMul) st[0] = as_bits(as_double(old) * as_double(op.arg));
      return value(old);
    }
    case Spec::kLog:
      st.push_back(op.arg);
      return value(static_cast<std::int64_t>(st.size() - 1));
  }
  return none();
}

std::string format_op(const Op& op) {
  std::string s(op_name(op.kind));
  switch (op.kind) {
    case kDequeue: case kPop: case kDeleteMin: case kGetMin: case kRead: case kSync: return s + "()";
    case kPut: return s + "(" + std::to_string(op.arg) + "," + std::to_string(op.arg2) + ")";
    default: return s + "(" + std::to_string(op.arg) + ")";
  }
}
std::string format_response(const Response& r) { return r.has_value ? std::to_string(r.value) : "none"; }
std::string format_state(const State& s, std::size_t max_items) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i == max_items) { out += ",... (" + std::to_string(s.size()) + " items)"; break; }
    if (i) out += ",";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

namespace {

std::string describe(const HistoryOp& h) {
  std::string s = "t" + std::to_string(h.tid) + "#" + std::to_string(h.seq) + " " + format_op(h.op);
  s += h.completed() ? " -> " + format_response(h.response) : " (pending)";
  return s;
}

// ----------------------------------------------------------- exact search

inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct Item {
  Op op;
  std::uint64_t inv, resp;
  bool check_response;
  Response expect;
  bool required;
};

struct Key {
  std::uint64_t a, b;
  friend bool operator==(const Key&, const Key&) = default;
};
struct KeyHash {
  std::size_t operator()(const Key& k) const { return static_cast<std::size_t>(k.a ^ (k.b * 31)); }
};

// Depth-first search over linearizations (Wing & Gong; memoization as in
// Lowe, "Testing for linearizability", 2017): a node is the set of
// linearized items plus the spec state; an item may be linearized once every
// item that precedes it in real time is.
class Search {
 public:
  // Goal test at a node (all required items linearized); may be called many
  // times. Returns true to accept.
  using Goal = std::function<bool(const State&, const std::vector<std::uint64_t>& lin)>;

  Search(Spec spec, std::vector<Item> items, std::size_t budget)
      : spec_(spec), items_(std::move(items)), budget_(budget) {
    n_ = items_.size();
    words_ = (n_ + 63) / 64;
    preds_.assign(n_ * words_, 0);
    for (std::size_t i = 0; i < n_; ++i) {
      for (std::size_t j = 0; j < n_; ++j)
        if (j != i && items_[j].resp != kPendingStamp && items_[j].resp < items_[i].inv)
          preds_[i * words_ + j / 64] |= 1ull << (j % 64);
      if (items_[i].required) ++required_;
    }
  }

  // Returns true (found), false (none exists), nullopt (budget exhausted).
  std::optional<bool> run(const State& initial, const Goal& goal) {
    goal_ = &goal;
    std::vector<std::uint64_t> lin(words_, 0);
    State st = initial;
    aborted_ = false;
    const bool found = dfs(lin, st, 0);
    if (found) return true;
    if (aborted_) return std::nullopt;
    return false;
  }
  std::uint64_t nodes() const { return nodes_; }
  const std::vector<State>& goal_states() const { return goal_states_; }

 private:
  bool dfs(std::vector<std::uint64_t>& lin, State& st, std::size_t required_done) {
    if (++nodes_ > budget_) { aborted_ = true; return false; }
    Key k{0x1234, 0x9876};
    for (auto w : lin) { k.a = mix(k.a ^ w); k.b = mix(k.b + w * 0x9e3779b97f4a7c15ull); }
    for (auto v : st) { k.a = mix(k.a ^ static_cast<std::uint64_t>(v)); k.b = mix(k.b + static_cast<std::uint64_t>(v) * 0xd6e8feb86659fd93ull); }
    k.b ^= st.size();
    if (!seen_.insert(k).second) return false;
    if (required_done == required_) {
      if (goal_states_.size() < 3 && std::find(goal_states_.begin(), goal_states_.end(), st) == goal_states_.end())
        goal_states_.push_back(st);
      if ((*goal_)(st, lin)) return true;
    }
    for (std::size_t i = 0; i < n_; ++i) {
      if (lin[i / 64] & (1ull << (i % 64))) continue;
      bool ready = true;
      for (std::size_t w = 0; w < words_; ++w)
        if (preds_[i * words_ + w] & ~lin[w]) { ready = false; break; }
      if (!ready) continue;
      State next = st;
      const Response r = spec_apply(spec_, next, items_[i].op);
      if (items_[i].check_response && !(r == items_[i].expect)) continue;
      lin[i / 64] |= 1ull << (i % 64);
      const bool ok = dfs(lin, next, required_done + (items_[i].required ? 1 : 0));
      lin[i / 64] &= ~(1ull << (i % 64));
      if (ok) return true;
      if (aborted_) return false;
    }
    return false;
  }

  Spec spec_;
  std::vector<Item> items_;
  std::size_t n_ = 0, words_ = 0, required_ = 0, budget_;
  std::vector<std::uint64_t> preds_;
  std::unordered_set<Key, KeyHash> seen_;
  const Goal* goal_ = nullptr;
  std::uint64_t nodes_ = 0;
  bool aborted_ = false;
  std::vector<State> goal_states_;
};

void validate(const CheckInput& in) {
  for (const auto& h : in.ops)
    if (!spec_accepts(in.spec, h.op.kind))
      throw std::invalid_argument("history holds " + describe(h) + ", not part of the " +
                                  std::string(spec_name(in.spec)) + " specification");
  for (const auto& r : in.recovered)
    if (r.index >= in.ops.size() || in.ops[r.index].completed())
      throw std::invalid_argument("recovered op index does not name a pending operation");
}

std::string goal_hint(const Search& s) {
  if (s.goal_states().empty()) return " (no linearization of the completed operations matches their responses)";
  std::string out = "; states explainable include ";
  for (std::size_t i = 0; i < s.goal_states().size(); ++i) out += (i ? " or " : "") + format_state(s.goal_states()[i]);
  return out;
}

std::size_t count_pending(const CheckInput& in) {
  return static_cast<std::size_t>(std::count_if(in.ops.begin(), in.ops.end(), [](auto& h) { return !h.completed(); }));
}

// ------------------------------------------------------------ fast checks

// Necessary conditions for containers with unique values. `final_state` is
// the recovered abstract state; ops with resolved responses (completed, or
// pending resolved by recover_op) are in `resolved`.
struct FastOp {
  const HistoryOp* h;
  bool resolved;
  Response response;
};

std::optional<std::string> fast_container(Spec spec, const std::vector<FastOp>& ops, const State& fin,
                                          std::string* inconclusive) {
  const bool is_queue = spec == Spec::kQueue, is_stack = spec == Spec::kStack, is_log = spec == Spec::kLog;
  auto inserting = [&](std::int32_t k) { return k == kEnqueue || k == kPush || k == kInsert || k == kAppend; };
  auto removing = [&](std::int32_t k) { return k == kDequeue || k == kPop || k == kDeleteMin; };
  struct Ins { const FastOp* op; std::size_t order; };
  std::unordered_map<std::int64_t, Ins> inserted;
  std::unordered_map<int, std::size_t> per_thread;
  for (const auto& f : ops) {
    if (!inserting(f.h->op.kind)) continue;
    if (!inserted.emplace(f.h->op.arg, Ins{&f, per_thread[f.h->tid]++}).second) {
      *inconclusive = "values are not unique (" + std::to_string(f.h->op.arg) + " inserted twice)";
      return std::nullopt;
    }
  }
  std::unordered_map<std::int64_t, const FastOp*> removed;
  std::size_t unresolved_removals = 0;
  for (const auto& f : ops) {
    if (!removing(f.h->op.kind)) continue;
    if (!f.resolved) { ++unresolved_removals; continue; }
    if (!f.response.has_value) continue;
    const auto v = f.response.value;
    auto it = inserted.find(v);
    if (it == inserted.end()) return describe(*f.h) + " returned " + std::to_string(v) + ", never inserted";
    if (!removed.emplace(v, &f).second) return "value " + std::to_string(v) + " removed twice (" + describe(*f.h) + ")";
    if (f.h->completed() && it->second.op->h->invoke > f.h->respond)
      return describe(*f.h) + " returned " + std::to_string(v) + " before it was inserted";
  }
  std::unordered_map<std::int64_t, std::size_t> pos;
  for (std::size_t i = 0; i < fin.size(); ++i) {
    const auto v = fin[i];
    if (!inserted.count(v)) return "recovered state holds " + std::to_string(v) + ", never inserted";
    if (!pos.emplace(v, i).second) return "recovered state holds " + std::to_string(v) + " twice";
    if (removed.count(v)) return "value " + std::to_string(v) + " was removed by " + describe(*removed[v]->h) + " yet is in the recovered state";
  }
  if (spec == Spec::kPriorityQueue && !std::is_sorted(fin.begin(), fin.end()))
    return "recovered priority queue is not sorted";
  std::vector<std::int64_t> lost;
  for (const auto& [v, ins] : inserted)
    if (ins.op->resolved && !removed.count(v) && !pos.count(v)) lost.push_back(v);
  std::sort(lost.begin(), lost.end());
  if (lost.size() > unresolved_removals)
    return "completed " + describe(*inserted[lost[0]].op->h) + " is lost (" + std::to_string(lost.size()) +
           " completed inserts missing, " + std::to_string(unresolved_removals) + " pending removals)";
  if (is_log) {
    for (const auto& [v, ins] : inserted)
      if (ins.op->resolved && pos.count(v) && ins.op->response.has_value &&
          static_cast<std::size_t>(ins.op->response.value) != pos[v])
        return describe(*ins.op->h) + " but the value sits at index " + std::to_string(pos[v]);
  }
  // Per-producer order.
  std::unordered_map<int, std::vector<const FastOp*>> by_thread;
  for (const auto& f : ops)
    if (inserting(f.h->op.kind)) by_thread[f.h->tid].push_back(&f);
  for (auto& [tid, seq] : by_thread) {
    std::optional<std::size_t> last_pos;
    std::optional<std::int64_t> first_present;
    for (const FastOp* f : seq) {
      const auto v = f->h->op.arg;
      const bool present = pos.count(v) > 0;
      const bool gone = removed.count(v) > 0 || (f->resolved && !present);
      if (present) {
        if (!first_present) first_present = v;
        if (is_queue || is_log) {
          if (last_pos && pos[v] < *last_pos)
            return "per-producer order: t" + std::to_string(tid) + "'s " + std::to_string(v) + " precedes an earlier insert in the recovered state";
        } else if (is_stack) {
          if (last_pos && pos[v] > *last_pos)
            return "per-producer LIFO: t" + std::to_string(tid) + "'s later push " + std::to_string(v) + " sits below an earlier one";
        }
        last_pos = pos[v];
      } else if (gone && is_queue && first_present) {
        return "per-producer FIFO: t" + std::to_string(tid) + "'s " + std::to_string(*first_present) +
               " is still queued but its later " + std::to_string(v) + " was dequeued";
      }
    }
  }
  return std::nullopt;
}

bool has_fast(Spec s) {
  return s == Spec::kQueue || s == Spec::kStack || s == Spec::kPriorityQueue || s == Spec::kLog;
}

std::string fast_name(Spec s) { return "fast-" + std::string(spec_name(s)); }

CheckResult run_fast(const CheckInput& in, bool detect, const std::string& note) {
  CheckResult res;
  res.property = detect ? "detectability" : "durable-linearizability";
  res.engine = fast_name(in.spec) + note;
  if (!has_fast(in.spec)) {
    res.verdict = CheckResult::Verdict::kInconclusive;
    res.engine = "none" + note;
    res.reason = "no fast check for " + std::string(spec_name(in.spec)) + " and the history is too long for the exact search";
    return res;
  }
  std::vector<FastOp> ops;
  ops.reserve(in.ops.size());
  for (const auto& h : in.ops) ops.push_back({&h, h.completed(), h.response});
  if (detect)
    for (const auto& r : in.recovered) { ops[r.index].resolved = true; ops[r.index].response = r.response; }
  std::string inconclusive;
  auto why = fast_container(in.spec, ops, detect ? in.observed_after : in.observed, &inconclusive);
  if (!inconclusive.empty()) {
    res.verdict = CheckResult::Verdict::kInconclusive;
    res.reason = inconclusive;
  } else if (why) {
    res.verdict = CheckResult::Verdict::kViolation;
    res.reason = *why;
  }
  return res;
}

enum class Mode { kDurable, kDetect, kBuffered };

CheckResult run(const CheckInput& in, const CheckOptions& opt, Mode mode) {
  validate(in);
  const char* property = mode == Mode::kDurable ? "durable-linearizability"
                         : mode == Mode::kDetect ? "detectability"
                                                 : "buffered-durable-linearizability";
  const bool want_exact = opt.engine == CheckOptions::Engine::kExact ||
                          (opt.engine == CheckOptions::Engine::kAuto &&
                           (in.ops.size() <= opt.exact_max_ops || !has_fast(in.spec) || mode == Mode::kBuffered));
  std::string note;
  if (want_exact) {
    std::vector<std::optional<Response>> recovered(in.ops.size());
    for (const auto& r : in.recovered) recovered[r.index] = r.response;
    // Buffered: the durability bound is the *invocation* of the last
    // completed sync — what completed before that sync was invoked must
    // survive; what completed while it ran may be lost (nbMontage: a sync
    // persists the epochs before its own).
    std::uint64_t sync_bound = 0;
    if (mode == Mode::kBuffered)
      for (const auto& h : in.ops)
        if (h.completed() && h.op.kind == kSync) sync_bound = std::max(sync_bound, h.invoke);
    std::vector<Item> items;
    std::vector<std::size_t> item_of(in.ops.size());
    for (std::size_t i = 0; i < in.ops.size(); ++i) {
      const auto& h = in.ops[i];
      Item it{h.op, h.invoke, h.respond, h.completed(), h.response, h.completed()};
      if (mode == Mode::kDetect && !h.completed() && recovered[i]) {
        it.check_response = true;
        it.expect = *recovered[i];
      }
      if (mode == Mode::kBuffered) it.required = h.completed() && h.respond < sync_bound;
      item_of[i] = items.size();
      items.push_back(it);
    }
    Search search(in.spec, items, opt.node_budget);
    std::string detect_reason;
    Search::Goal goal = [&](const State& st, const std::vector<std::uint64_t>& lin) {
      if (st != in.observed) return false;
      if (mode != Mode::kDetect) return true;
      // The pending ops that had not taken effect run after the crash, in
      // recover_op call order, after every pre-crash op.
      State after = st;
      for (const auto& r : in.recovered) {
        const std::size_t i = item_of[r.index];
        if (lin[i / 64] & (1ull << (i % 64))) continue;
        if (!(spec_apply(in.spec, after, in.ops[r.index].op) == r.response)) {
          if (detect_reason.empty())
            detect_reason = "recover_op of " + describe(in.ops[r.index]) + " answered " + format_response(r.response) +
                            ", inconsistent with the recovered state " + format_state(in.observed);
          return false;
        }
      }
      if (after != in.observed_after) {
        if (detect_reason.empty())
          detect_reason = "after recover_op the state is " + format_state(in.observed_after) + ", expected " + format_state(after);
        return false;
      }
      return true;
    };
    auto found = search.run(in.initial, goal);
    CheckResult res;
    res.property = property;
    res.engine = "exact";
    res.nodes = search.nodes();
    if (found) {
      if (!*found) {
        res.verdict = CheckResult::Verdict::kViolation;
        const std::size_t pend = count_pending(in);
        if (mode == Mode::kDetect && !detect_reason.empty()) {
          res.reason = detect_reason;
        } else {
          res.reason = "recovered state " + format_state(in.observed) + " is not explained by any linearization of " +
                       std::to_string(in.ops.size() - pend) + " completed ops + a subset of " + std::to_string(pend) +
                       " pending ops" + (mode == Mode::kDetect ? " agreeing with recover_op" : "") + goal_hint(search);
        }
      }
      return res;
    }
    if (mode == Mode::kBuffered || !has_fast(in.spec)) {
      res.verdict = CheckResult::Verdict::kInconclusive;
      res.reason = "exact search exceeded its budget of " + std::to_string(opt.node_budget) + " nodes";
      return res;
    }
    note = " (exact budget exceeded)";
  }
  if (mode == Mode::kBuffered) {
    CheckResult res;
    res.property = property;
    res.engine = "none";
    res.verdict = CheckResult::Verdict::kInconclusive;
    res.reason = "buffered durable linearizability has no fast check";
    return res;
  }
  return run_fast(in, mode == Mode::kDetect, note);
}

}  // namespace

namespace {

// Sets and maps, per key. Linearizability is local (Herlihy and Wing): a
// history of a set or map is linearizable iff each key's sub-history is,
// and a key's operations act on that key's part of the state alone. So
// durable linearizability (the recovered state explained by the completed
// ops plus some pending ones) and detectability (recover_op answers agreeing
// with that choice) are checked key by key, each key exactly, and a history
// of thousands of operations over many keys stays within the exact engine's
// reach. Buffered durable linearizability is NOT compositional (its prefix
// is global, closed under real-time order across keys): it is never split.
// The states split as the spec represents them: a set as sorted keys, a map
// as sorted key,value pairs.
std::map<std::int64_t, State> split_state(Spec spec, const State& st) {
  std::map<std::int64_t, State> out;
  if (spec == Spec::kSet) {
    for (auto k : st) out[k].push_back(k);
  } else {
    if (st.size() % 2 != 0) throw std::invalid_argument("map state must hold key,value pairs");
    for (std::size_t i = 0; i + 1 < st.size(); i += 2) out[st[i]] = {st[i], st[i + 1]};
  }
  return out;
}

CheckResult run_per_key(const CheckInput& in, const CheckOptions& opt, Mode mode) {
  validate(in);
  std::map<std::int64_t, CheckInput> parts;
  auto part = [&](std::int64_t key) -> CheckInput& {
    auto [it, fresh] = parts.try_emplace(key);
    if (fresh) it->second.spec = in.spec;
    return it->second;
  };
  for (auto& [k, st] : split_state(in.spec, in.initial)) part(k).initial = st;
  for (auto& [k, st] : split_state(in.spec, in.observed)) part(k).observed = st;
  const bool detect = mode == Mode::kDetect;
  if (detect)
    for (auto& [k, st] : split_state(in.spec, in.observed_after)) part(k).observed_after = st;
  std::vector<std::size_t> index_in_part(in.ops.size(), 0);
  for (std::size_t i = 0; i < in.ops.size(); ++i) {
    if (in.ops[i].op.kind == kSync) continue;  // no key, no effect on the state
    CheckInput& p = part(in.ops[i].op.arg);
    index_in_part[i] = p.ops.size();
    p.ops.push_back(in.ops[i]);
  }
  if (detect)
    for (const auto& r : in.recovered) {
      if (in.ops[r.index].op.kind == kSync) continue;
      part(in.ops[r.index].op.arg).recovered.push_back({index_in_part[r.index], r.response});
    }
  // A key with no operation keeps its initial state: it needs no search.
  CheckResult total;
  total.property = mode == Mode::kDurable ? "durable-linearizability" : "detectability";
  total.engine = "exact-per-key";
  bool inconclusive = false;
  for (auto& [key, p] : parts) {
    if (!detect) p.observed_after.clear();
    CheckResult r = run(p, opt, mode);
    total.nodes += r.nodes;
    if (r.violation()) {
      r.engine = "exact-per-key";
      r.reason = "key " + std::to_string(key) + ": " + r.reason;
      return r;
    }
    if (r.verdict == CheckResult::Verdict::kInconclusive && !inconclusive) {
      inconclusive = true;
      total.verdict = CheckResult::Verdict::kInconclusive;
      total.reason = "key " + std::to_string(key) + ": " + r.reason;
    }
  }
  return total;
}

bool per_key(Spec spec, Mode mode) { return (spec == Spec::kSet || spec == Spec::kMap) && mode != Mode::kBuffered; }

}  // namespace

CheckResult check_durable_linearizability(const CheckInput& in, const CheckOptions& opt) {
  if (per_key(in.spec, Mode::kDurable)) return run_per_key(in, opt, Mode::kDurable);
  return run(in, opt, Mode::kDurable);
}
CheckResult check_detectability(const CheckInput& in, const CheckOptions& opt) {
  if (per_key(in.spec, Mode::kDetect)) return run_per_key(in, opt, Mode::kDetect);
  return run(in, opt, Mode::kDetect);
}
CheckResult check_buffered_durable_linearizability(const CheckInput& in, const CheckOptions& opt) {
  return run(in, opt, Mode::kBuffered);
}

}  // namespace ferrite::crash
