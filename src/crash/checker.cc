// Sequential specifications and the durability checkers (crash/checker.h).
#include "ferrite/crash/checker.h"

#include "ferrite/crash/internal/checker_collections.h"
#include "wire.h"

#include <algorithm>
#include <map>
#include <bit>
#include <cstring>
#include <functional>
#include <optional>
#include <queue>
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

namespace {

// What undoes one application of an operation to a state (the generic search
// applies and undoes in place instead of copying states).
struct Undo {
  enum Kind : std::uint8_t { kNothing, kPopBack, kEraseAt, kEraseTwoAt, kInsertAt, kInsertTwoAt, kSetAt };
  Kind kind = kNothing;
  std::size_t at = 0;
  std::int64_t a = 0, b = 0;
};

// The sequential specifications (the one definition: spec_apply uses it).
Response apply_undoable(Spec s, State& st, const Op& op, Undo* u) {
  *u = {};
  if (op.kind == kSync) return none();
  switch (s) {
    case Spec::kQueue:
      if (op.kind == kEnqueue) {
        st.push_back(op.arg);
        u->kind = Undo::kPopBack;
        return none();
      }
      if (st.empty()) return none();
      {
        const auto v = st.front();
        st.erase(st.begin());
        *u = {Undo::kInsertAt, 0, v, 0};
        return value(v);
      }
    case Spec::kStack:
      if (op.kind == kPush) {
        st.insert(st.begin(), op.arg);
        *u = {Undo::kEraseAt, 0, 0, 0};
        return none();
      }
      if (st.empty()) return none();
      {
        const auto v = st.front();
        st.erase(st.begin());
        *u = {Undo::kInsertAt, 0, v, 0};
        return value(v);
      }
    case Spec::kPriorityQueue:
      if (op.kind == kInsert) {
        const auto it = std::upper_bound(st.begin(), st.end(), op.arg);
        const auto at = static_cast<std::size_t>(it - st.begin());
        st.insert(it, op.arg);
        *u = {Undo::kEraseAt, at, 0, 0};
        return none();
      }
      if (st.empty()) return none();
      {
        const auto v = st.front();
        if (op.kind == kDeleteMin) {
          st.erase(st.begin());
          *u = {Undo::kInsertAt, 0, v, 0};
        }
        return value(v);
      }
    case Spec::kSet: {
      const auto it = std::lower_bound(st.begin(), st.end(), op.arg);
      const auto at = static_cast<std::size_t>(it - st.begin());
      const bool present = it != st.end() && *it == op.arg;
      if (op.kind == kInsert) {
        if (!present) {
          st.insert(it, op.arg);
          *u = {Undo::kEraseAt, at, 0, 0};
        }
        return value(present ? 0 : 1);
      }
      if (op.kind == kRemove) {
        if (present) {
          st.erase(it);
          *u = {Undo::kInsertAt, at, op.arg, 0};
        }
        return value(present ? 1 : 0);
      }
      return value(present ? 1 : 0);
    }
    case Spec::kMap: {
      if (st.size() % 2 != 0) throw std::invalid_argument("map state must hold key,value pairs");
      std::size_t i = 0;
      while (i < st.size() && st[i] < op.arg) i += 2;
      const bool present = i < st.size() && st[i] == op.arg;
      if (op.kind == kPut) {
        if (present) {
          const auto old = st[i + 1];
          st[i + 1] = op.arg2;
          *u = {Undo::kSetAt, i + 1, old, 0};
          return value(old);
        }
        st.insert(st.begin() + static_cast<std::ptrdiff_t>(i), {op.arg, op.arg2});
        *u = {Undo::kEraseTwoAt, i, 0, 0};
        return none();
      }
      if (!present) return none();
      const auto old = st[i + 1];
      if (op.kind == kErase) {
        st.erase(st.begin() + static_cast<std::ptrdiff_t>(i), st.begin() + static_cast<std::ptrdiff_t>(i) + 2);
        *u = {Undo::kInsertTwoAt, i, op.arg, old};
      }
      return value(old);
    }
    case Spec::kRegister: {
      if (st.size() != 1) throw std::invalid_argument("register state must hold exactly one value");
      const auto old = st[0];
      if (op.kind == kMul) {
        st[0] = as_bits(as_double(old) * as_double(op.arg));
        *u = {Undo::kSetAt, 0, old, 0};
      }
      return value(old);
    }
    case Spec::kLog:
      st.push_back(op.arg);
      u->kind = Undo::kPopBack;
      return value(static_cast<std::int64_t>(st.size() - 1));
  }
  return none();
}

void undo(State& st, const Undo& u) {
  const auto at = st.begin() + static_cast<std::ptrdiff_t>(u.at);
  switch (u.kind) {
    case Undo::kNothing: break;
    case Undo::kPopBack: st.pop_back(); break;
    case Undo::kEraseAt: st.erase(at); break;
    case Undo::kEraseTwoAt: st.erase(at, at + 2); break;
    case Undo::kInsertAt: st.insert(at, u.a); break;
    case Undo::kInsertTwoAt: st.insert(at, {u.a, u.b}); break;
    case Undo::kSetAt: *at = u.a; break;
  }
}

}  // namespace

Response spec_apply(Spec s, State& st, const Op& op) {
  if (!spec_accepts(s, op.kind))
    throw std::invalid_argument("operation " + std::string(op_name(op.kind)) + " is not part of the " +
                                std::string(spec_name(s)) + " specification");
  Undo u;
  return apply_undoable(s, st, op, &u);
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

namespace internal {
std::string describe_op(const HistoryOp& h) {
  std::string s = "t" + std::to_string(h.tid) + "#" + std::to_string(h.seq) + " " + format_op(h.op);
  s += h.completed() ? " -> " + format_response(h.response) : " (pending)";
  return s;
}
}  // namespace internal

namespace {

std::string describe(const HistoryOp& h) { return internal::describe_op(h); }

// ----------------------------------------------------------- exact search

using wire::mix;

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

// The memo's state hash, updated in O(1) per move from the move's Undo
// record (two independent lanes). Sequences (queue front..back, stack
// top..bottom, log) hash as sum v_i * P^i — a push at the front multiplies
// by P, a pop at the front subtracts and multiplies by P^-1 (P odd, so
// invertible mod 2^64); sets, priority queues and maps (canonical, sorted)
// hash as a sum over their items; a register as its value. The size is
// mixed in by the caller.
class StateHasher {
 public:
  struct H {
    std::uint64_t a = 0, b = 0;
  };
  StateHasher(Spec spec, std::size_t max_size) : spec_(spec) {
    pa_.assign(max_size + 2, 1);
    pb_.assign(max_size + 2, 1);
    for (std::size_t i = 1; i < pa_.size(); ++i) {
      pa_[i] = pa_[i - 1] * kPa;
      pb_[i] = pb_[i - 1] * kPb;
    }
    ia_ = inverse(kPa);
    ib_ = inverse(kPb);
  }
  H full(const State& st) const {
    H h;
    if (sequence()) {
      for (std::size_t i = 0; i < st.size(); ++i) add_at(h, st[i], i);
    } else if (spec_ == Spec::kMap) {
      for (std::size_t i = 0; i + 1 < st.size(); i += 2) add_item(h, st[i], st[i + 1], +1);
    } else if (spec_ == Spec::kRegister) {
      if (!st.empty()) h = {mix(static_cast<std::uint64_t>(st[0])), mix(static_cast<std::uint64_t>(st[0]) ^ kSalt)};
    } else {
      for (auto v : st) add_item(h, v, 0, +1);
    }
    return h;
  }
  // `st` is the state after the move; `u` the move's undo record.
  void after(H& h, const State& st, const Undo& u) const {
    switch (u.kind) {
      case Undo::kNothing: return;
      case Undo::kPopBack:  // pushed st.back() (queue, log)
        add_at(h, st.back(), st.size() - 1);
        return;
      case Undo::kEraseAt:  // inserted st[at]
        if (sequence()) {   // stack push at the front
          h.a = static_cast<std::uint64_t>(st[0]) + kPa * h.a;
          h.b = static_cast<std::uint64_t>(st[0]) + kPb * h.b;
        } else {
          add_item(h, st[u.at], 0, +1);
        }
        return;
      case Undo::kInsertAt:  // erased u.a at u.at
        if (sequence()) {    // pop at the front
          h.a = (h.a - static_cast<std::uint64_t>(u.a)) * ia_;
          h.b = (h.b - static_cast<std::uint64_t>(u.a)) * ib_;
        } else {
          add_item(h, u.a, 0, -1);
        }
        return;
      case Undo::kEraseTwoAt: add_item(h, st[u.at], st[u.at + 1], +1); return;  // map: inserted a pair
      case Undo::kInsertTwoAt: add_item(h, u.a, u.b, -1); return;               // map: erased a pair
      case Undo::kSetAt:
        if (spec_ == Spec::kRegister) {
          h = full(st);
        } else {  // map: value of key st[at - 1] overwritten
          add_item(h, st[u.at - 1], u.a, -1);
          add_item(h, st[u.at - 1], st[u.at], +1);
        }
        return;
    }
  }

 private:
  static constexpr std::uint64_t kPa = 0x9e3779b97f4a7c15ull, kPb = 0xc2b2ae3d27d4eb4full, kSalt = 0x5851f42d4c957f2dull;
  static std::uint64_t inverse(std::uint64_t x) {  // x odd: Newton's iteration mod 2^64
    std::uint64_t y = x;
    for (int i = 0; i < 6; ++i) y *= 2 - x * y;
    return y;
  }
  bool sequence() const { return spec_ == Spec::kQueue || spec_ == Spec::kStack || spec_ == Spec::kLog; }
  void add_at(H& h, std::int64_t v, std::size_t i) const {
    h.a += static_cast<std::uint64_t>(v) * pa_[i];
    h.b += static_cast<std::uint64_t>(v) * pb_[i];
  }
  static void add_item(H& h, std::int64_t k, std::int64_t v, int sign) {
    const std::uint64_t x = mix(static_cast<std::uint64_t>(k) * 0xd6e8feb86659fd93ull + mix(static_cast<std::uint64_t>(v)));
    const std::uint64_t y = mix(x ^ kSalt);
    h.a += sign > 0 ? x : -x;
    h.b += sign > 0 ? y : -y;
  }
  Spec spec_;
  std::vector<std::uint64_t> pa_, pb_;
  std::uint64_t ia_ = 0, ib_ = 0;
};

// Depth-first search over linearizations (Wing & Gong; memoization as in
// Lowe, "Testing for linearizability", 2017). The items are partitioned into
// chains, each totally ordered by real time (greedy interval partitioning:
// as many chains as operations overlap at once — the threads, for a
// history of sequential threads). A set of linearized items closed under
// real-time predecessors is then a vector of per-chain prefix lengths, and a
// node is that vector plus the spec state (memoized by a 128-bit hash of
// both; no limit on the history's length). The next item of a chain may be
// linearized once the first unlinearized item of every other chain did not
// respond before it was invoked. Chains are tried earliest-deadline first
// (the next item's response), which finds a linearization of a correct
// history with few dead ends.
class Search {
 public:
  // Goal test at a node (all required items linearized); may be called many
  // times. Returns true to accept. `linearized(i)` tells whether item i is.
  using Linearized = std::function<bool(std::size_t)>;
  using Goal = std::function<bool(const State&, const Linearized& linearized)>;

  Search(Spec spec, std::vector<Item> items, std::size_t budget)
      : spec_(spec), items_(std::move(items)), budget_(budget) {
    const std::size_t n = items_.size();
    std::vector<std::size_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return items_[a].inv != items_[b].inv ? items_[a].inv < items_[b].inv : a < b;
    });
    using P = std::pair<std::uint64_t, std::size_t>;  // (last response, chain)
    std::priority_queue<P, std::vector<P>, std::greater<>> ends;
    chain_of_.assign(n, 0);
    pos_in_chain_.assign(n, 0);
    for (std::size_t i : order) {
      std::size_t c;
      if (!ends.empty() && ends.top().first < items_[i].inv) {
        c = ends.top().second;
        ends.pop();
      } else {
        c = chains_.size();
        chains_.emplace_back();
      }
      chain_of_[i] = c;
      pos_in_chain_[i] = chains_[c].size();
      chains_[c].push_back(i);
      ends.push({items_[i].resp, c});
    }
    for (const auto& it : items_)
      if (it.required) ++required_;
  }

  // Returns true (found), false (none exists), nullopt (budget exhausted).
  std::optional<bool> run(const State& initial, const Goal& goal) {
    const std::size_t nc = chains_.size();
    pos_.assign(nc, 0);
    st_ = initial;
    StateHasher hasher(spec_, initial.size() + 2 * items_.size() + 2);
    StateHasher::H hash = hasher.full(st_);
    Linearized linearized = [this](std::size_t i) { return pos_in_chain_[i] < pos_[chain_of_[i]]; };
    // One state, changed in place: a frame holds how to undo the move that
    // reached it.
    struct Frame {
      std::size_t required_done;
      std::vector<std::size_t> order;  // chains to try, earliest deadline first
      std::size_t next = 0;
      std::size_t moved = 0;  // the chain advanced to reach this frame (nc: none)
      Undo undo;
      StateHasher::H hash_before{};  // restored when the move is undone
      Key chain_key{};
    };
    std::vector<Frame> stack;
    // Enters the node reached by the move just made (st_, pos_); returns
    // true when the goal is reached there. Pushes a frame unless the node
    // was seen before or the budget is exhausted.
    auto enter = [&](std::size_t required_done, std::size_t moved, const Undo& u, StateHasher::H before,
                     Key ck) -> bool {
      if (++nodes_ > budget_) {
        aborted_ = true;
        return false;
      }
      const Key k{mix(ck.a ^ mix(hash.a ^ st_.size())), mix(ck.b + mix(hash.b))};
      if (!seen_.insert(k).second) return false;
      if (required_done == required_) {
        if (goal_states_.size() < 3 && std::find(goal_states_.begin(), goal_states_.end(), st_) == goal_states_.end())
          goal_states_.push_back(st_);
        if (goal(st_, linearized)) return true;
      }
      Frame f;
      f.required_done = required_done;
      f.moved = moved;
      f.undo = u;
      f.hash_before = before;
      f.chain_key = ck;
      for (std::size_t c = 0; c < nc; ++c)
        if (pos_[c] < chains_[c].size()) f.order.push_back(c);
      std::sort(f.order.begin(), f.order.end(), [&](std::size_t x, std::size_t y) {
        const auto rx = items_[chains_[x][pos_[x]]].resp, ry = items_[chains_[y][pos_[y]]].resp;
        return rx != ry ? rx < ry : x < y;
      });
      stack.push_back(std::move(f));
      return false;
    };
    aborted_ = false;
    if (enter(0, nc, Undo{}, hash, Key{0x1234, 0x9876})) return true;
    while (!stack.empty() && !aborted_) {
      Frame& f = stack.back();
      if (f.next == f.order.size()) {
        if (f.moved < nc) {
          undo(st_, f.undo);
          hash = f.hash_before;
          --pos_[f.moved];
        }
        stack.pop_back();
        continue;
      }
      const std::size_t c = f.order[f.next++];
      const std::size_t i = chains_[c][pos_[c]];
      bool ready = true;
      for (std::size_t d = 0; d < nc && ready; ++d)
        if (d != c && pos_[d] < chains_[d].size() && items_[chains_[d][pos_[d]]].resp < items_[i].inv) ready = false;
      if (!ready) continue;
      Undo u;
      const Response r = apply_undoable(spec_, st_, items_[i].op, &u);
      if (items_[i].check_response && !(r == items_[i].expect)) {
        undo(st_, u);
        continue;
      }
      const StateHasher::H before = hash;
      hasher.after(hash, st_, u);
      Key ck = f.chain_key;
      const std::uint64_t z = (static_cast<std::uint64_t>(c) << 32) ^ pos_[c];
      ck.a -= mix(z);
      ck.b -= mix(z ^ 0x5bd1e9955bd1e995ull);
      ++pos_[c];
      ck.a += mix(z + 1);
      ck.b += mix((z + 1) ^ 0x5bd1e9955bd1e995ull);
      const std::size_t req = f.required_done + (items_[i].required ? 1 : 0);
      const std::size_t depth = stack.size();
      if (enter(req, c, u, before, ck)) return true;
      if (stack.size() == depth) {  // the child was not entered
        undo(st_, u);
        hash = before;
        --pos_[c];
      }
    }
    if (aborted_) return std::nullopt;
    return false;
  }
  std::uint64_t nodes() const { return nodes_; }
  const std::vector<State>& goal_states() const { return goal_states_; }

 private:
  Spec spec_;
  std::vector<Item> items_;
  std::size_t required_ = 0, budget_;
  std::vector<std::vector<std::size_t>> chains_;
  std::vector<std::size_t> chain_of_, pos_in_chain_, pos_;
  State st_;
  std::unordered_set<Key, KeyHash> seen_;
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
  // Per-producer order: a thread's inserts in program order are in
  // real-time order when its operations are sequential (each responded
  // before the next was invoked) — as recorded histories are; a thread whose
  // operations overlap (hand-made histories) is skipped.
  std::unordered_map<int, std::vector<const FastOp*>> by_thread;
  std::unordered_map<int, const HistoryOp*> last_of;
  std::unordered_set<int> overlapping;
  for (const auto& f : ops) {
    auto [it, fresh] = last_of.try_emplace(f.h->tid, f.h);
    if (!fresh) {
      if (!it->second->completed() || it->second->respond >= f.h->invoke) overlapping.insert(f.h->tid);
      it->second = f.h;
    }
    if (inserting(f.h->op.kind)) by_thread[f.h->tid].push_back(&f);
  }
  for (auto& [tid, seq] : by_thread) {
    if (overlapping.count(tid)) continue;
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

// The generic engine: exhaustive search (Search), exact for every spec.
CheckResult run_generic(const CheckInput& in, const CheckOptions& opt, Mode mode, const std::string& engine) {
  const char* property = mode == Mode::kDurable ? "durable-linearizability"
                         : mode == Mode::kDetect ? "detectability"
                                                 : "buffered-durable-linearizability";
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
  items.reserve(in.ops.size());
  for (std::size_t i = 0; i < in.ops.size(); ++i) {
    const auto& h = in.ops[i];
    Item it{h.op, h.invoke, h.respond, h.completed(), h.response, h.completed()};
    if (mode == Mode::kDetect && !h.completed() && recovered[i]) {
      it.check_response = true;
      it.expect = *recovered[i];
    }
    if (mode == Mode::kBuffered) it.required = h.completed() && h.respond < sync_bound;
    items.push_back(it);
  }
  Search search(in.spec, std::move(items), opt.node_budget);
  std::string detect_reason;
  Search::Goal goal = [&](const State& st, const Search::Linearized& linearized) {
    if (st != in.observed) return false;
    if (mode != Mode::kDetect) return true;
    // The pending ops that had not taken effect run after the crash, in
    // recover_op call order, after every pre-crash op.
    State after = st;
    for (const auto& r : in.recovered) {
      if (linearized(r.index)) continue;
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
  res.engine = engine;
  res.nodes = search.nodes();
  if (!found) {
    res.verdict = CheckResult::Verdict::kInconclusive;
    res.reason = "exact search exceeded its budget of " + std::to_string(opt.node_budget) + " nodes";
    return res;
  }
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

bool has_polynomial(Spec s) { return s == Spec::kQueue || s == Spec::kStack || s == Spec::kPriorityQueue; }

// Engine choice (CheckOptions::engine):
//   kAuto   queue/stack/pq/log: the fast necessary conditions first, as a
//           pre-filter only — a failure is a violation (with its clear
//           reason), a pass decides nothing. Then queue/stack/pq with unique
//           values: the polynomial exact engines (checker_collections.cc);
//           everything else, and buffered durable linearizability: the
//           generic exact search. Budget exhaustion is inconclusive.
//   kExact  the generic exact search alone.
//   kFast   the fast necessary conditions alone (tests; never a proof).
CheckResult run(const CheckInput& in, const CheckOptions& opt, Mode mode) {
  validate(in);
  const bool detect = mode == Mode::kDetect;
  std::string engine = "exact";
  if (mode != Mode::kBuffered) {
    if (opt.engine == CheckOptions::Engine::kFast) return run_fast(in, detect, "");
    if (opt.engine == CheckOptions::Engine::kAuto) {
      // The fast checks ignore the initial state: skip them unless it is empty.
      if (has_fast(in.spec) && in.initial.empty()) {
        CheckResult f = run_fast(in, detect, "");
        if (f.violation()) return f;
      }
      if (has_polynomial(in.spec)) {
        if (auto r = internal::check_collection(in, detect, opt.node_budget)) return *r;
        engine = "exact (values not unique)";
      }
    }
  }
  return run_generic(in, opt, mode, engine);
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

// A set state is strictly ascending keys; a map state key,value pairs with
// strictly ascending keys (what the specification produces). A state not of
// that form is never explained by any linearization (splitting it by key
// would silently normalise it).
bool canonical(Spec spec, const State& st) {
  const std::size_t step = spec == Spec::kSet ? 1 : 2;
  if (st.size() % step != 0) return false;
  for (std::size_t i = step; i < st.size(); i += step)
    if (!(st[i - step] < st[i])) return false;
  return true;
}

CheckResult run_per_key(const CheckInput& in, const CheckOptions& opt, Mode mode) {
  validate(in);
  const bool detect_mode = mode == Mode::kDetect;
  for (const State* st : {&in.observed, &in.initial, detect_mode ? &in.observed_after : &in.observed}) {
    if (canonical(in.spec, *st)) continue;
    CheckResult bad;
    bad.property = detect_mode ? "detectability" : "durable-linearizability";
    bad.engine = "exact-per-key";
    bad.verdict = CheckResult::Verdict::kViolation;
    bad.reason = std::string(st == &in.initial ? "the initial state " : st == &in.observed ? "the recovered state " : "the state after recover_op ") +
                 format_state(*st) + " is not a " + std::string(spec_name(in.spec)) +
                 (in.spec == Spec::kSet ? " (keys must be strictly ascending)" : " (key,value pairs with strictly ascending keys)");
    return bad;
  }
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
