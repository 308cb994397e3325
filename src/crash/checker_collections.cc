// Exact polynomial engines for queues, stacks and priority queues with unique
// values (crash/internal/checker_collections.h).
//
// ============================================================ the argument
//
// A. From a crash history to complete histories (check_collection).
//    Values are unique (else the caller uses the generic search). Every
//    candidate built below is a *complete* history: each operation has a
//    known response; the recovered state is appended as observer removes
//    invoked after every operation (queue front->back, stack top->bottom,
//    priority queue ascending) and one more remove that finds the structure
//    empty, so "the state after the linearization is `observed`" becomes
//    "the complete history is linearizable" (unique values: the observers
//    pin both the contents and their order). The initial state is a prefix
//    of sequential inserts. An operation that took effect without
//    responding gets the response stamp "after every real stamp, before the
//    observers". Which pending operations took effect:
//    Durable linearizability.
//    * A pending get_min is dropped: a read-only operation can be removed
//      from any legal sequential history.
//    * A pending insert of v took effect iff v is removed by a completed
//      operation, returned by a completed get_min, or in the recovered
//      state. Otherwise it is dropped without loss: had it taken effect, a
//      pending remove took v out, and removing both operations of v from a
//      legal queue/stack/priority-queue sequence leaves a legal sequence
//      (v is never at the front/top/minimum between its insert and its
//      removal except at its removal, and no remove finds the structure
//      empty while v is in it).
//    * The m values inserted, never removed by a completed operation and not
//      recovered ("missing") must each have been removed by a pending remove
//      (m > pending removes: a completed insert is lost). A pending remove
//      that returned empty is dropped (removing an empty remove keeps a
//      sequence legal), so exactly m pending removes took effect. Any two
//      pending removes of a structure are the same operation with intervals
//      [inv, infinity): swapping their linearization points keeps every
//      point inside its interval, so the m earliest-invoked ones can be
//      taken, linearized in invocation order; only the assignment of the
//      missing values to them is enumerated (m! candidates, m <= threads).
//    Detectability. Each pending operation with a recover_op answer either
//    took effect before the crash (linearized with that answer) or ran after
//    it, in recover_op call order, from the recovered state: every subset is
//    tried; the post-crash part is a sequential run (answers and the second
//    observation must match), the pre-crash part a complete history as
//    above. Pending operations without an answer are resolved as for
//    durable linearizability.
//
// B. Points. A complete history is linearizable iff each operation can be
//    given a distinct point strictly inside its interval (inv, resp) such
//    that the operations sorted by point form a legal sequential history
//    (a linear extension of the real-time interval order can always be
//    realised by such points). Stamps are transformed so that every
//    invocation is even and every response odd: "a precedes b" (a.resp <
//    b.inv) is preserved and equal raw stamps count as overlapping.
//    When real time orders the whole complete history (one thread), it has
//    exactly one linearization: it is simply run (try_sequential).
//
// C. Queue (check_queue_history). Let E_x, D_x be x's enqueue and dequeue,
//    and treat an empty dequeue z as a pseudo-value with E_z = D_z = z.
//    Define x < y ("x ahead of y") iff E_x <rt E_y, D_x <rt D_y or
//    D_x <rt E_y. The history is linearizable iff there is a total order s
//    of values and empties that (1) extends <, and (2) never puts an empty
//    between c and b when E_b <rt D_c (b must be enqueued before c is
//    dequeued, so both are in the same non-empty stretch).
//    Sufficiency: the empties cut s into blocks; within a block, merge the
//    enqueues (in s order) with the dequeues (in s order) respecting real
//    time: a cycle in that merge would need D_d <rt E_e and E_b <rt D_c with
//    e <=s b and c <=s d; real-time order is an interval order (2+2-free),
//    so D_d <rt D_c or E_b <rt E_e, i.e. d < c or b < e — contradicting s.
//    Edges between blocks all point forward by (1) and (2). Necessity is
//    immediate. Deciding existence of s: (1) is acyclicity of <, checked by
//    Kahn's algorithm with thresholds (y is <-minimal among R iff
//    E_y.inv < min_R E.resp and max(E_y.inv, D_y.inv) < min_R D.resp);
//    (2) by building blocks: the next empty is the remaining one with the
//    smallest invocation, its block is the closure of its <-predecessors
//    under <-predecessors and (2)-obligations (a threshold fixpoint), and it
//    qualifies iff no value in the block and no other remaining empty must
//    follow it, i.e. max(E.inv, D.inv) over the block < min resp over the
//    remaining empties. Exchange arguments: placing a qualifying empty as
//    early as possible, after exactly its closure, never hurts; the closure
//    grows with the empty's invocation, so if any empty qualifies the
//    earliest-invoked one does; if none qualifies, no s exists.
//    O(n log n).
//
// D. Stack (check_stack_history) — the structure of the algorithm of
//    Abdulla, Grahn, Jonsson, Krishna, Mishra ("Efficient linearizability
//    monitoring", LiMo). Each value's lifetime [push point, pop point] must
//    form a laminar family; no empty pop inside a lifetime.
//    * A value whose push and pop overlap in time can be inserted into any
//      linearization of the rest as "push; pop" adjacent at a cut separating
//      the operations that must precede both from those that must follow
//      both (all the former precede all the latter in real time): drop it.
//    * Every other value x is certainly in the stack during its cover
//      (push.resp, pop.inv). An empty pop needs a point outside every cover:
//      an opening of the union of covers that meets its interval. Cutting
//      the values at one such opening per empty pop loses nothing: the
//      restriction of a linearizable history to a subset of values (without
//      the empty pops) is linearizable, and linearizations of the segments,
//      concatenated with the empty pops at the cuts, respect real time
//      (nothing of a later segment precedes anything of an earlier one).
//    * A segment without empty pops: a value x with push.inv < every
//      push.resp and pop.resp > every pop.inv can be the bottom — push first,
//      pop last around any linearization of the rest — so drop it. With none
//      left to drop, if the covers form one connected interval the history
//      is not linearizable (the unique top-level value would be such a
//      bottom); otherwise split at the gaps (nothing of the right part
//      precedes anything of the left) and recurse.
//
// E. Priority queue (check_pq_history). The minimum present at a point is
//    what delete_min and get_min see. x's lifetime is (ins point a_x, del
//    point b_x); x's "events" are its delete_min and its get_min answers.
//    Legal iff every event of x lies inside x's lifetime and outside the
//    lifetime of every smaller value, and every empty answer lies outside
//    every lifetime. Process values in increasing order; the union of the
//    lifetimes of the smaller values is fixed ("zones"). Choosing a_x as late
//    as possible (just before min(ins.resp, first event)) is optimal, so
//    x's zone is (min(ins.resp, first event), b_x). Among all feasible
//    choices of x's events there is one whose zone is contained in the zone
//    of every other feasible choice: if all of x's windows share a point
//    outside the zones, x's events can be clustered there (a zone of
//    negligible size); otherwise take b_x as early as possible and each
//    get_min point as late as possible before it — any two minimal zones
//    that overlap are nested (their "hybrid" is feasible) and two disjoint
//    ones would contain a common free point of all windows. By induction
//    the greedy zones are contained in those of any solution, so the greedy
//    fails only if no solution exists; empties are checked last against all
//    zones. Points are fixed-point numbers (a stamp is 2^20 units; "just
//    after" and "just before" are a few units), and a point equal to a zone
//    end point is outside the zone (it is ordered after the delete / before
//    the insert at that instant). O(n log n).
//
// The differential tests (tests/crash/checker_test.cc) compare all three
// engines, in both modes, against the generic exhaustive search on many
// thousands of small random histories.
#include "ferrite/crash/internal/checker_collections.h"

#include <algorithm>
#include <deque>
#include <iterator>
#include <limits>
#include <map>
#include <queue>
#include <set>

namespace ferrite::crash::internal {

namespace {

constexpr std::uint64_t kInf = std::numeric_limits<std::uint64_t>::max();

struct Val {
  std::int64_t value = 0;
  const CItem* ins = nullptr;
  const CItem* rem = nullptr;
  std::vector<const CItem*> peeks;
};

struct Paired {
  std::vector<Val> vals;
  std::vector<const CItem*> empties;
};

std::string vstr(std::int64_t v) { return std::to_string(v); }

// Pairs every value's insert with its removal (and get_min answers) and
// checks what does not depend on the order: one insert, one removal, no
// removal or get_min answer before the insert, no get_min answer after the
// removal.
std::optional<std::string> pair_up(const std::vector<CItem>& items, const ItemDescriber& d, Paired* out) {
  // Group the items by value (a sort: no hashing, few allocations).
  std::vector<const CItem*> by_value;
  by_value.reserve(items.size());
  for (const auto& it : items) {
    if (it.kind == CItem::kEmptyRem || it.kind == CItem::kEmptyPeek) {
      out->empties.push_back(&it);
    } else {
      by_value.push_back(&it);
    }
  }
  std::sort(by_value.begin(), by_value.end(), [](const CItem* a, const CItem* b) {
    return a->value != b->value ? a->value < b->value : a < b;  // item order within a value
  });
  out->vals.reserve(by_value.size() / 2 + 1);
  for (std::size_t i = 0; i < by_value.size();) {
    Val x;
    x.value = by_value[i]->value;
    for (; i < by_value.size() && by_value[i]->value == x.value; ++i) {
      const CItem& it = *by_value[i];
      if (it.kind == CItem::kIns) {
        if (x.ins) return "value " + vstr(it.value) + " is inserted twice (" + d(*x.ins) + ", " + d(it) + ")";
        x.ins = &it;
      } else if (it.kind == CItem::kRem) {
        if (x.rem) return "value " + vstr(it.value) + " is removed twice (" + d(*x.rem) + ", " + d(it) + ")";
        x.rem = &it;
      } else {
        x.peeks.push_back(&it);
      }
    }
    out->vals.push_back(std::move(x));
  }
  for (const auto& x : out->vals) {
    if (!x.ins) {
      const CItem* by = x.rem ? x.rem : x.peeks.front();
      if (by->src == CItem::kObserver) return "the recovered state holds " + vstr(x.value) + ", never inserted";
      return d(*by) + " returned " + vstr(x.value) + ", never inserted";
    }
    if (!x.rem) return "value " + vstr(x.value) + " (" + d(*x.ins) + ") is lost: neither removed nor in the recovered state";
    if (x.rem->resp < x.ins->inv) return d(*x.rem) + " returned " + vstr(x.value) + " before " + d(*x.ins) + " was invoked";
    for (const CItem* p : x.peeks) {
      if (p->resp < x.ins->inv) return d(*p) + " returned " + vstr(x.value) + " before " + d(*x.ins) + " was invoked";
      if (p->inv > x.rem->resp) return d(*p) + " returned " + vstr(x.value) + " after " + d(*x.rem) + " had removed it";
    }
  }
  return std::nullopt;
}

EngineVerdict violation(std::string why, std::uint64_t steps) { return {false, std::move(why), steps}; }

// When real time orders all the items (a one-thread history), the only
// linearization is that order: run it. nullopt when some items overlap.
enum class Coll { kQueue, kStack, kPq };
std::optional<EngineVerdict> try_sequential(const std::vector<CItem>& items, Coll coll, const ItemDescriber& d) {
  std::vector<const CItem*> order;
  order.reserve(items.size());
  for (const auto& it : items) order.push_back(&it);
  std::sort(order.begin(), order.end(), [](const CItem* a, const CItem* b) { return a->inv < b->inv; });
  for (std::size_t i = 1; i < order.size(); ++i)
    if (!(order[i - 1]->resp < order[i]->inv)) return std::nullopt;
  std::deque<std::int64_t> seq;  // queue front..back; stack bottom..top
  std::multiset<std::int64_t> pq;
  auto empty = [&] { return coll == Coll::kPq ? pq.empty() : seq.empty(); };
  auto next = [&] { return coll == Coll::kPq ? *pq.begin() : coll == Coll::kQueue ? seq.front() : seq.back(); };
  const char* what = coll == Coll::kQueue ? "queue" : coll == Coll::kStack ? "stack" : "priority queue";
  std::uint64_t steps = 0;
  for (const CItem* it : order) {
    ++steps;
    switch (it->kind) {
      case CItem::kIns:
        if (coll == Coll::kPq) {
          pq.insert(it->value);
        } else {
          seq.push_back(it->value);
        }
        break;
      case CItem::kRem:
      case CItem::kPeek:
        if (empty() || next() != it->value) {
          if (it->src == CItem::kObserver && empty())
            return violation("the recovered state holds " + vstr(it->value) +
                                 ", but in the only order real time allows the " + what + " is empty by then",
                             steps);
          return violation(d(*it) + " returned " + vstr(it->value) + ", but in the only order real time allows the " +
                               what + (empty() ? " is empty" : " gives " + vstr(next())),
                           steps);
        }
        if (it->kind == CItem::kRem) {
          if (coll == Coll::kPq) {
            pq.erase(pq.begin());
          } else if (coll == Coll::kQueue) {
            seq.pop_front();
          } else {
            seq.pop_back();
          }
        }
        break;
      default:
        if (!empty() && it->src == CItem::kObserver)
          return violation("value " + vstr(next()) + " is lost: in the only order real time allows it is neither removed" +
                               " nor in the recovered state",
                           steps);
        if (!empty())
          return violation(d(*it) + " returned empty, but in the only order real time allows the " + what + " holds " +
                               vstr(next()),
                           steps);
    }
  }
  return EngineVerdict{true, {}, steps};
}

// ------------------------------------------------------------------ queue

struct QEl {
  std::uint64_t c, d, a, b;  // enqueue inv, dequeue inv, enqueue resp, dequeue resp
  const Val* val;            // nullptr: an empty dequeue
  const CItem* empty;
};

std::string qname(const QEl& e, const ItemDescriber& d) {
  return e.val ? "value " + vstr(e.val->value) : d(*e.empty);
}

// Why x must be ahead of y, or nullopt.
std::optional<std::string> qwhy(const QEl& x, const QEl& y, const ItemDescriber& d) {
  auto E = [&](const QEl& e) { return e.val ? d(*e.val->ins) : d(*e.empty); };
  auto D = [&](const QEl& e) { return e.val ? d(*e.val->rem) : d(*e.empty); };
  if (x.a < y.c) return E(x) + " completed before " + E(y) + " began";
  if (x.b < y.d) return D(x) + " completed before " + D(y) + " began";
  if (x.b < y.c) return D(x) + " completed before " + E(y) + " began";
  return std::nullopt;
}

}  // namespace

EngineVerdict check_queue_history(const std::vector<CItem>& items, const ItemDescriber& d) {
  if (auto v = try_sequential(items, Coll::kQueue, d)) return *v;
  Paired p;
  if (auto why = pair_up(items, d, &p)) return violation(*why, 0);
  std::vector<QEl> el;
  el.reserve(p.vals.size() + p.empties.size());
  for (const auto& x : p.vals) el.push_back({x.ins->inv, x.rem->inv, x.ins->resp, x.rem->resp, &x, nullptr});
  for (const CItem* z : p.empties) el.push_back({z->inv, z->inv, z->resp, z->resp, nullptr, z});
  const std::size_t n = el.size();
  std::uint64_t steps = n;

  // (1) < is acyclic: Kahn's algorithm, one <-minimal element at a time.
  {
    using P = std::pair<std::uint64_t, std::size_t>;
    std::vector<P> va, vb, vc;
    va.reserve(n);
    vb.reserve(n);
    vc.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      va.push_back({el[i].a, i});
      vb.push_back({el[i].b, i});
    }
    std::priority_queue<P, std::vector<P>, std::greater<>> ha(std::greater<>(), std::move(va)),
        hb(std::greater<>(), std::move(vb)), cand(std::greater<>(), std::move(vc));
    std::vector<std::size_t> byc(n);
    for (std::size_t i = 0; i < n; ++i) byc[i] = i;
    std::sort(byc.begin(), byc.end(), [&](std::size_t x, std::size_t y) { return el[x].c < el[y].c; });
    std::vector<char> gone(n, 0);
    std::size_t ptr = 0, removed = 0;
    for (;;) {
      while (!ha.empty() && gone[ha.top().second]) ha.pop();
      while (!hb.empty() && gone[hb.top().second]) hb.pop();
      const std::uint64_t min_a = ha.empty() ? kInf : ha.top().first;
      const std::uint64_t min_b = hb.empty() ? kInf : hb.top().first;
      while (ptr < n && el[byc[ptr]].c < min_a) {
        const std::size_t i = byc[ptr++];
        cand.push({std::max(el[i].c, el[i].d), i});
      }
      if (!cand.empty() && cand.top().first < min_b) {
        gone[cand.top().second] = 1;
        cand.pop();
        ++removed;
        continue;
      }
      break;
    }
    if (removed < n) {
      std::vector<std::size_t> stuck;
      for (std::size_t i = 0; i < n; ++i)
        if (!gone[i]) stuck.push_back(i);
      const std::size_t lim = std::min<std::size_t>(stuck.size(), 256);
      for (std::size_t i = 0; i < lim; ++i)
        for (std::size_t j = i + 1; j < lim; ++j) {
          auto xy = qwhy(el[stuck[i]], el[stuck[j]], d);
          auto yx = qwhy(el[stuck[j]], el[stuck[i]], d);
          if (xy && yx)
            return violation("no FIFO order explains the history: " + *xy + ", so " + qname(el[stuck[i]], d) +
                                 " is ahead of " + qname(el[stuck[j]], d) + "; but " + *yx,
                             steps);
        }
      std::string list;
      for (std::size_t i = 0; i < std::min<std::size_t>(stuck.size(), 6); ++i)
        list += (i ? ", " : "") + qname(el[stuck[i]], d);
      return violation("no FIFO order of " + list + (stuck.size() > 6 ? ", ..." : "") + " respects real-time order",
                       steps);
    }
  }
  if (p.empties.empty()) return {true, {}, steps};

  // (2) Blocks between empties.
  std::vector<std::size_t> vals, la, lb;
  for (std::size_t i = 0; i < n; ++i)
    if (el[i].val) vals.push_back(i);
  la = vals;
  lb = vals;
  std::sort(la.begin(), la.end(), [&](std::size_t x, std::size_t y) { return el[x].a < el[y].a; });
  std::sort(lb.begin(), lb.end(), [&](std::size_t x, std::size_t y) { return el[x].b < el[y].b; });
  std::vector<std::size_t> zs;
  for (std::size_t i = 0; i < n; ++i)
    if (!el[i].val) zs.push_back(i);
  std::sort(zs.begin(), zs.end(), [&](std::size_t x, std::size_t y) { return el[x].c < el[y].c; });
  std::vector<std::uint64_t> suf(zs.size() + 1, kInf);
  std::vector<std::size_t> suf_arg(zs.size() + 1, 0);
  for (std::size_t k = zs.size(); k-- > 0;) {
    suf[k] = suf[k + 1];
    suf_arg[k] = suf_arg[k + 1];
    if (el[zs[k]].b < suf[k]) {
      suf[k] = el[zs[k]].b;
      suf_arg[k] = zs[k];
    }
  }
  // (Obligations of values placed in earlier blocks need no threshold: each
  // block's closure already contains every value its members oblige.)
  std::vector<char> placed(n, 0);
  std::size_t pa = 0, pb = 0;
  for (std::size_t k = 0; k < zs.size(); ++k) {
    const QEl& z = el[zs[k]];
    std::uint64_t ta = z.c, tb = z.c, t = z.c;
    std::size_t culprit = zs[k];
    for (bool progress = true; progress;) {
      progress = false;
      auto take = [&](std::size_t i) {
        if (placed[i]) return;
        placed[i] = 1;
        ++steps;
        const std::uint64_t m = std::max(el[i].c, el[i].d);
        if (m > t) {
          t = m;
          culprit = i;
        }
        ta = std::max(ta, m);
        tb = std::max(tb, m);
        progress = true;
      };
      while (pa < la.size() && el[la[pa]].a < ta) take(la[pa++]);
      while (pb < lb.size() && el[lb[pb]].b < tb) take(lb[pb++]);
    }
    if (t > z.b) {
      const QEl& v = el[culprit];
      const CItem* late = v.c > z.b ? v.val->ins : v.val->rem;
      return violation(qname(z, d) + " cannot find the queue empty: value " + vstr(v.val->value) +
                           " must be enqueued and dequeued before it (real-time order), yet " + d(*late) +
                           " began after it returned",
                       steps);
    }
    if (t > suf[k]) {
      const QEl& z2 = el[suf_arg[k]];
      return violation(qname(z, d) + " and " + qname(z2, d) +
                           " cannot both find the queue empty (the values that must be dequeued before the first "
                           "cannot all be, given real-time order)",
                       steps);
    }
  }
  return {true, {}, steps};
}

// ------------------------------------------------------------------ stack

namespace {

struct SVal {
  std::uint64_t pi, pr, qi, qr;  // push inv/resp, pop inv/resp; cover = (pr, qi)
  const Val* val;
};

}  // namespace

EngineVerdict check_stack_history(const std::vector<CItem>& items, const ItemDescriber& d) {
  if (auto v = try_sequential(items, Coll::kStack, d)) return *v;
  Paired p;
  if (auto why = pair_up(items, d, &p)) return violation(*why, 0);
  std::uint64_t steps = p.vals.size() + p.empties.size();
  std::vector<SVal> sv;
  for (const auto& x : p.vals)
    if (x.rem->inv > x.ins->resp) sv.push_back({x.ins->inv, x.ins->resp, x.rem->inv, x.rem->resp, &x});
  std::sort(sv.begin(), sv.end(), [](const SVal& a, const SVal& b) { return a.pr < b.pr; });

  // Connected components of the covers, in time order: [first, last) index
  // ranges of sv (sorted by cover start), with the component's end.
  struct Comp {
    std::size_t first, last;
    std::uint64_t start, end;
  };
  auto components = [](const std::vector<SVal>& v, const std::vector<std::size_t>& ids) {
    std::vector<Comp> out;
    for (std::size_t k = 0; k < ids.size(); ++k) {
      const SVal& x = v[ids[k]];
      if (out.empty() || x.pr > out.back().end) {
        out.push_back({k, k + 1, x.pr, x.qi});
      } else {
        out.back().last = k + 1;
        out.back().end = std::max(out.back().end, x.qi);
      }
    }
    return out;
  };

  std::vector<std::vector<std::size_t>> work;
  {
    std::vector<std::size_t> all(sv.size());
    for (std::size_t i = 0; i < sv.size(); ++i) all[i] = i;
    const std::vector<Comp> comps = components(sv, all);
    // Empty pops: each needs an opening of the union of covers; cut there.
    std::vector<char> cut(comps.size() + 1, 0);
    for (const CItem* z : p.empties) {
      const std::size_t j = static_cast<std::size_t>(
          std::upper_bound(comps.begin(), comps.end(), z->inv, [](std::uint64_t t, const Comp& c) { return t < c.start; }) -
          comps.begin());
      if (j > 0 && comps[j - 1].end > z->resp) {
        // The covers of component j-1 span the whole empty pop.
        const SVal* w = nullptr;
        for (std::size_t k = comps[j - 1].first; k < comps[j - 1].last; ++k) {
          const SVal& x = sv[k];
          if (x.pr < z->resp && x.qi > z->inv && (!w || (x.pr < z->inv && x.qi > z->inv))) w = &x;
        }
        return violation(d(*z) + " cannot find the stack empty: value " + vstr(w->val->value) + " (" + d(*w->val->ins) +
                             ", " + d(*w->val->rem) + ") is certainly in the stack during part of it, and others during " +
                             "the rest",
                         steps);
      }
      cut[j] = 1;
    }
    std::vector<std::size_t> seg;
    for (std::size_t c = 0; c < comps.size(); ++c) {
      if (cut[c] && !seg.empty()) work.push_back(std::move(seg)), seg.clear();
      for (std::size_t k = comps[c].first; k < comps[c].last; ++k) seg.push_back(k);
    }
    if (!seg.empty()) work.push_back(std::move(seg));
  }

  // Segments without empty pops.
  while (!work.empty()) {
    std::vector<std::size_t> ids = std::move(work.back());
    work.pop_back();
    const std::size_t k = ids.size();
    if (k <= 1) continue;
    steps += k;
    using P = std::pair<std::uint64_t, std::size_t>;
    std::priority_queue<P, std::vector<P>, std::greater<>> starts;  // min push.resp
    std::priority_queue<P> ends;                                      // max pop.inv
    std::priority_queue<P> cand;                                      // max pop.resp
    std::vector<std::size_t> bypi(k);
    for (std::size_t i = 0; i < k; ++i) {
      starts.push({sv[ids[i]].pr, i});
      ends.push({sv[ids[i]].qi, i});
      bypi[i] = i;
    }
    std::sort(bypi.begin(), bypi.end(), [&](std::size_t x, std::size_t y) { return sv[ids[x]].pi < sv[ids[y]].pi; });
    std::vector<char> gone(k, 0);
    std::size_t ptr = 0, removed = 0;
    for (;;) {
      while (!starts.empty() && gone[starts.top().second]) starts.pop();
      while (!ends.empty() && gone[ends.top().second]) ends.pop();
      if (starts.empty()) break;
      const std::uint64_t min_start = starts.top().first, max_end = ends.top().first;
      while (ptr < k && sv[ids[bypi[ptr]]].pi < min_start) {
        const std::size_t i = bypi[ptr++];
        cand.push({sv[ids[i]].qr, i});
      }
      if (!cand.empty() && cand.top().first > max_end) {
        gone[cand.top().second] = 1;
        cand.pop();
        ++removed;
        continue;
      }
      break;
    }
    if (removed == k) continue;
    std::vector<std::size_t> rest;
    for (std::size_t i = 0; i < k; ++i)
      if (!gone[i]) rest.push_back(ids[i]);
    // ids were sorted by cover start; rest keeps that order.
    const std::vector<Comp> comps = components(sv, rest);
    if (comps.size() == 1) {
      std::string list;
      for (std::size_t i = 0; i < std::min<std::size_t>(rest.size(), 5); ++i)
        list += (i ? ", " : "") + vstr(sv[rest[i]].val->value);
      return violation("no LIFO nesting explains the history: values " + list + (rest.size() > 5 ? ", ..." : "") +
                           " are certainly in the stack over one unbroken stretch of time, yet none of them can be "
                           "at the bottom (each was pushed after another's push completed, or popped before another's "
                           "pop began)",
                       steps);
    }
    for (const Comp& c : comps) {
      std::vector<std::size_t> part(rest.begin() + static_cast<std::ptrdiff_t>(c.first),
                                    rest.begin() + static_cast<std::ptrdiff_t>(c.last));
      work.push_back(std::move(part));
    }
  }
  return {true, {}, steps};
}

// --------------------------------------------------------- priority queue

namespace {

// Disjoint open intervals (merged when they intersect), each with a value
// whose lifetime it contains (for reasons).
class Zones {
 public:
  // The zone strictly containing p, or nullptr.
  const std::pair<const std::uint64_t, std::pair<std::uint64_t, std::int64_t>>* containing(std::uint64_t p) const {
    auto it = z_.lower_bound(p);
    if (it == z_.begin()) return nullptr;
    --it;
    return p < it->second.first ? &*it : nullptr;
  }
  // Smallest free point >= p (a zone's end point is free).
  std::uint64_t next_free(std::uint64_t p, std::int64_t* owner = nullptr) const {
    auto z = containing(p);
    if (!z) return p;
    if (owner) *owner = z->second.second;
    return z->second.first;
  }
  // Largest free point <= p.
  std::uint64_t prev_free(std::uint64_t p) const {
    auto z = containing(p);
    return z ? z->first : p;
  }
  void add(std::uint64_t a, std::uint64_t b, std::int64_t owner) {
    auto it = z_.lower_bound(a);
    if (it != z_.begin()) {
      auto pv = std::prev(it);
      if (pv->second.first > a) it = pv;
    }
    while (it != z_.end() && it->first < b) {
      a = std::min(a, it->first);
      b = std::max(b, it->second.first);
      it = z_.erase(it);
    }
    z_[a] = {b, owner};
  }

 private:
  std::map<std::uint64_t, std::pair<std::uint64_t, std::int64_t>> z_;
};

constexpr int kFix = 20;
std::uint64_t fx(std::uint64_t t) { return t << kFix; }

}  // namespace

EngineVerdict check_pq_history(const std::vector<CItem>& items, const ItemDescriber& d) {
  if (auto v = try_sequential(items, Coll::kPq, d)) return *v;
  Paired p;
  if (auto why = pair_up(items, d, &p)) return violation(*why, 0);
  std::uint64_t steps = p.vals.size() + p.empties.size();
  std::vector<const Val*> order;
  order.reserve(p.vals.size());
  for (const auto& x : p.vals) order.push_back(&x);
  std::sort(order.begin(), order.end(), [](const Val* a, const Val* b) { return a->value < b->value; });
  Zones zones;
  auto blocked_by = [&](std::int64_t owner) {
    return owner == std::numeric_limits<std::int64_t>::min() ? std::string()
                                                             : " (the smaller value " + vstr(owner) + " is present)";
  };
  constexpr std::int64_t kNoOwner = std::numeric_limits<std::int64_t>::min();
  for (const Val* x : order) {
    const std::uint64_t ii = fx(x->ins->inv), ir = fx(x->ins->resp), di = fx(x->rem->inv), dr = fx(x->rem->resp);
    std::uint64_t max_inv = std::max(ii, di), min_resp = std::min(ir, dr);
    for (const CItem* g : x->peeks) {
      max_inv = std::max(max_inv, fx(g->inv));
      min_resp = std::min(min_resp, fx(g->resp));
    }
    // All of x's operations can share one free point: its lifetime can be
    // made negligible.
    if (max_inv < min_resp && zones.next_free(max_inv + 2) < min_resp) continue;
    std::uint64_t e = ii + 2;
    for (const CItem* g : x->peeks) {
      std::int64_t owner = kNoOwner;
      const std::uint64_t ei = zones.next_free(std::max(fx(g->inv), ii) + 2, &owner);
      if (ei >= fx(g->resp))
        return violation(d(*g) + " cannot be linearized: " + vstr(x->value) +
                             " is never the minimum present while it runs" + blocked_by(owner),
                         steps);
      e = std::max(e, ei);
    }
    std::int64_t owner = kNoOwner;
    const std::uint64_t b = zones.next_free(std::max(di, e) + 2, &owner);
    if (b >= dr)
      return violation(d(*x->rem) + " cannot be linearized: " + vstr(x->value) +
                           " is never the minimum present while it runs" + blocked_by(owner) +
                           (x->peeks.empty() ? "" : " after its get_min answers"),
                       steps);
    std::uint64_t a = ir - 1;
    for (const CItem* g : x->peeks) {
      const std::uint64_t gp = zones.prev_free(std::min(b - 1, fx(g->resp) - 1));
      a = std::min(a, gp - 1);
    }
    if (a < b) zones.add(a, b, x->value);
  }
  for (const CItem* z : p.empties) {
    std::int64_t owner = kNoOwner;
    if (zones.next_free(fx(z->inv) + 2, &owner) >= fx(z->resp))
      return violation(d(*z) + " cannot find the priority queue empty: value " + vstr(owner) +
                           " is certainly present during part of it, and others during the rest",
                       steps);
  }
  return {true, {}, steps};
}

// ------------------------------------------------------------- front end

namespace {

struct Kinds {
  std::int32_t ins, rem, peek;
};

std::optional<Kinds> kinds_of(Spec s) {
  switch (s) {
    case Spec::kQueue: return Kinds{kEnqueue, kDequeue, -1};
    case Spec::kStack: return Kinds{kPush, kPop, -1};
    case Spec::kPriorityQueue: return Kinds{kInsert, kDeleteMin, kGetMin};
    default: return std::nullopt;
  }
}

const char* engine_name(Spec s) {
  switch (s) {
    case Spec::kQueue: return "exact-queue";
    case Spec::kStack: return "exact-stack";
    default: return "exact-pq";
  }
}

// One crash history, prepared once; candidates are built from it.
class Resolver {
 public:
  // `observed_sorted`: the recovered state, sorted, without duplicates.
  Resolver(const CheckInput& in, Kinds k, std::uint64_t budget, std::vector<std::int64_t> observed_sorted)
      : in_(in), k_(k), budget_(budget), observed_(std::move(observed_sorted)) {
    // Rank the stamps: slot = initial-state slots + rank among distinct stamps.
    std::vector<std::pair<std::uint64_t, std::size_t>> ev;  // (stamp, 2*op + is_response)
    ev.reserve(2 * in.ops.size());
    for (std::size_t i = 0; i < in.ops.size(); ++i) {
      ev.push_back({in.ops[i].invoke, 2 * i});
      if (in.ops[i].completed()) ev.push_back({in.ops[i].respond, 2 * i + 1});
    }
    std::sort(ev.begin(), ev.end());
    off_ = in.initial.size();
    inv_t_.assign(in.ops.size(), 0);
    resp_t_.assign(in.ops.size(), 0);
    std::uint64_t rank = 0;
    for (std::size_t j = 0; j < ev.size(); ++j) {
      if (j > 0 && ev[j].first != ev[j - 1].first) ++rank;
      const std::size_t i = ev[j].second / 2;
      if (ev[j].second % 2) {
        resp_t_[i] = 2 * (off_ + rank) + 1;
      } else {
        inv_t_[i] = 2 * (off_ + rank);
      }
    }
    end_slot_ = off_ + rank + 1;
    describe_ = [this](const CItem& it) { return describe_item(it); };
  }

  std::uint64_t pending_resp() const { return 2 * end_slot_ + 1; }
  bool observed(std::int64_t v) const { return std::binary_search(observed_.begin(), observed_.end(), v); }

  // The item of op i with response r (completed, or pending taken to have
  // taken effect with that response); nullopt for kSync.
  std::optional<CItem> item(std::size_t i, const Response& r) const {
    const auto& h = in_.ops[i];
    CItem it;
    it.src = static_cast<std::int64_t>(i);
    it.inv = inv_t_[i];
    it.resp = h.completed() ? resp_t_[i] : pending_resp();
    if (h.op.kind == k_.ins) {
      it.kind = CItem::kIns;
      it.value = h.op.arg;
    } else if (h.op.kind == k_.rem) {
      it.kind = r.has_value ? CItem::kRem : CItem::kEmptyRem;
      it.value = r.value;
    } else if (h.op.kind == k_.peek) {
      it.kind = r.has_value ? CItem::kPeek : CItem::kEmptyPeek;
      it.value = r.value;
    } else {
      return std::nullopt;
    }
    return it;
  }

  // Initial state and completed operations. A reason when a completed
  // operation's response is impossible whatever the order.
  std::optional<std::string> base(std::vector<CItem>* out) const {
    const std::size_t n0 = in_.initial.size();
    for (std::size_t j = 0; j < n0; ++j) {
      // Initial contents as sequential inserts: queue front first, stack
      // bottom (the observed representation's last) first.
      const std::int64_t v = in_.spec == Spec::kStack ? in_.initial[n0 - 1 - j] : in_.initial[j];
      out->push_back({CItem::kIns, v, 2 * j, 2 * j + 1, CItem::kInitial});
    }
    for (std::size_t i = 0; i < in_.ops.size(); ++i) {
      const auto& h = in_.ops[i];
      if (!h.completed()) continue;
      if ((h.op.kind == kSync || h.op.kind == k_.ins) && h.response.has_value)
        return describe_op(h) + ": " + std::string(op_name(h.op.kind)) + " returns no value";
      if (!h.response.has_value && h.response.value != 0)  // not what any specification answers
        return describe_op(h) + ": malformed response (no value, yet value " + std::to_string(h.response.value) + ")";
      if (auto it = item(i, h.response)) out->push_back(*it);
    }
    return std::nullopt;
  }

  void add_observers(std::vector<CItem>* items) const {
    std::uint64_t t = end_slot_ + 1;
    for (auto v : in_.observed) {
      items->push_back({CItem::kRem, v, 2 * t, 2 * t + 1, CItem::kObserver});
      ++t;
    }
    items->push_back({CItem::kEmptyRem, 0, 2 * t, 2 * t + 1, CItem::kObserver});
  }

  EngineVerdict run_engine(const std::vector<CItem>& items) const {
    switch (in_.spec) {
      case Spec::kQueue: return check_queue_history(items, describe_);
      case Spec::kStack: return check_stack_history(items, describe_);
      default: return check_pq_history(items, describe_);
    }
  }

  struct Outcome {
    bool ok = false, inconclusive = false;
    std::string reason;
  };

  // `fixed`: the items of the operations whose effect is decided. The
  // pending operations in `free` are resolved as for durable
  // linearizability (see the argument at the top of the file).
  Outcome resolve(const std::vector<CItem>& fixed, const std::vector<std::size_t>& free) {
    Outcome out;
    std::vector<std::int64_t> inserted, taken, removed;  // taken: removed or returned by get_min
    for (const auto& it : fixed) {
      if (it.kind == CItem::kIns) inserted.push_back(it.value);
      if (it.kind == CItem::kRem) removed.push_back(it.value);
      if (it.kind == CItem::kRem || it.kind == CItem::kPeek) taken.push_back(it.value);
    }
    std::sort(taken.begin(), taken.end());
    std::sort(removed.begin(), removed.end());
    std::vector<CItem> items;
    items.reserve(fixed.size() + free.size() + in_.observed.size() + 1);
    items = fixed;
    std::vector<std::size_t> rems;
    for (std::size_t i : free) {
      const auto& h = in_.ops[i];
      if (h.op.kind == k_.ins) {
        const auto v = h.op.arg;
        if (observed(v) || std::binary_search(taken.begin(), taken.end(), v)) {
          items.push_back(*item(i, Response{}));
          inserted.push_back(v);
        }
      } else if (h.op.kind == k_.rem) {
        rems.push_back(i);
      }
    }
    std::sort(inserted.begin(), inserted.end());
    std::vector<std::int64_t> not_removed, missing;
    std::set_difference(inserted.begin(), inserted.end(), removed.begin(), removed.end(), std::back_inserter(not_removed));
    std::set_difference(not_removed.begin(), not_removed.end(), observed_.begin(), observed_.end(),
                        std::back_inserter(missing));
    if (missing.size() > rems.size()) {
      const CItem* ins = nullptr;
      for (const auto& it : items)
        if (it.kind == CItem::kIns && it.value == missing.front()) ins = &it;
      out.reason = "value " + std::to_string(missing.front()) + (ins ? " (" + describe_(*ins) + ")" : std::string()) +
                   " is lost: " + std::to_string(missing.size()) +
                   " inserted values are neither removed nor in the recovered state, and only " +
                   std::to_string(rems.size()) + " removals are pending";
      return out;
    }
    std::stable_sort(rems.begin(), rems.end(),
                     [&](std::size_t a, std::size_t b) { return in_.ops[a].invoke < in_.ops[b].invoke; });
    const std::size_t base_size = items.size();
    do {
      if (++candidates_ > budget_) {
        out.inconclusive = true;
        out.reason = "more than " + std::to_string(budget_) + " resolutions of the pending operations";
        return out;
      }
      items.resize(base_size);
      for (std::size_t j = 0; j < missing.size(); ++j) items.push_back(*item(rems[j], Response{true, missing[j]}));
      add_observers(&items);
      const EngineVerdict v = run_engine(items);
      steps_ += v.steps;
      if (v.ok) {
        out.ok = true;
        return out;
      }
      if (out.reason.empty()) out.reason = v.reason;
    } while (std::next_permutation(missing.begin(), missing.end()));
    return out;
  }

  std::uint64_t candidates() const { return candidates_; }
  std::uint64_t steps() const { return steps_; }

 private:
  std::string describe_item(const CItem& it) const {
    if (it.src == CItem::kObserver)
      return it.kind == CItem::kEmptyRem ? std::string("the recovered state's end (empty after its last item)")
                                         : "the recovered state's " + std::to_string(it.value);
    if (it.src == CItem::kInitial) return "the initial state's " + std::to_string(it.value);
    const auto& h = in_.ops[static_cast<std::size_t>(it.src)];
    std::string s = describe_op(h);
    if (h.completed()) return s;
    switch (it.kind) {
      case CItem::kIns: return s + " taken to have taken effect";
      case CItem::kRem:
      case CItem::kPeek: return s + " taken to have returned " + std::to_string(it.value);
      default: return s + " taken to have returned empty";
    }
  }

  const CheckInput& in_;
  Kinds k_;
  std::uint64_t budget_;
  std::vector<std::int64_t> observed_;  // sorted
  std::vector<std::uint64_t> inv_t_, resp_t_;  // transformed stamps per op
  std::uint64_t off_ = 0, end_slot_ = 0;
  ItemDescriber describe_;
  std::uint64_t candidates_ = 0, steps_ = 0;
};

}  // namespace

std::optional<CheckResult> check_collection(const CheckInput& in, bool detect, std::uint64_t budget) {
  const auto kinds = kinds_of(in.spec);
  if (!kinds) return std::nullopt;
  {
    std::vector<std::int64_t> values(in.initial.begin(), in.initial.end());
    for (const auto& h : in.ops)
      if (h.op.kind == kinds->ins) values.push_back(h.op.arg);
    std::sort(values.begin(), values.end());
    if (std::adjacent_find(values.begin(), values.end()) != values.end()) return std::nullopt;
  }
  CheckResult res;
  res.property = detect ? "detectability" : "durable-linearizability";
  res.engine = engine_name(in.spec);
  auto fail = [&](std::string why) {
    res.verdict = CheckResult::Verdict::kViolation;
    res.reason = std::move(why);
    return res;
  };
  std::vector<std::int64_t> observed(in.observed.begin(), in.observed.end());
  std::sort(observed.begin(), observed.end());
  if (auto dup = std::adjacent_find(observed.begin(), observed.end()); dup != observed.end())
    return fail("the recovered state holds " + std::to_string(*dup) + " twice");
  Resolver r(in, *kinds, std::max<std::uint64_t>(budget, 1), std::move(observed));
  std::vector<CItem> base;
  if (auto why = r.base(&base)) return fail(*why);
  std::size_t pending = 0;
  for (const auto& h : in.ops)
    if (!h.completed()) ++pending;
  const std::string header = "recovered state " + format_state(in.observed) + " is not explained by any linearization of " +
                             std::to_string(in.ops.size() - pending) + " completed ops + a subset of " +
                             std::to_string(pending) + " pending ops";
  auto finish = [&](const Resolver::Outcome& o, const std::string& head) {
    res.nodes = r.steps() + r.candidates();
    if (o.ok) return res;
    if (o.inconclusive) {
      res.verdict = CheckResult::Verdict::kInconclusive;
      res.reason = "exact engine gave up: " + o.reason;
      return res;
    }
    return fail(head + ": " + o.reason);
  };

  if (!detect) {
    std::vector<std::size_t> free;
    for (std::size_t i = 0; i < in.ops.size(); ++i)
      if (!in.ops[i].completed()) free.push_back(i);
    return finish(r.resolve(base, free), header);
  }

  // Detectability: every subset of the answered pending operations may be
  // the ones that took effect before the crash.
  std::vector<char> answered(in.ops.size(), 0);
  std::vector<const RecoveredOp*> rs;
  for (const auto& rec : in.recovered) {
    answered[rec.index] = 1;
    const auto& h = in.ops[rec.index];
    if (h.op.kind == kSync) {
      if (rec.response.has_value)
        return fail("recover_op of " + describe_op(h) + " answered " + format_response(rec.response) +
                    "; a sync returns no value");
      continue;
    }
    rs.push_back(&rec);
  }
  std::vector<std::size_t> free;
  for (std::size_t i = 0; i < in.ops.size(); ++i)
    if (!in.ops[i].completed() && !answered[i]) free.push_back(i);
  // Subsets are cheap to reject (a sequential run after the crash) and only
  // those that pass it cost an engine run (counted against the budget).
  if (rs.size() > 20) {
    res.verdict = CheckResult::Verdict::kInconclusive;
    res.reason = "exact engine gave up: " + std::to_string(rs.size()) +
                 " answered pending operations (more than 2^20 subsets)";
    return res;
  }
  Resolver::Outcome engine_failure;
  std::string post_failure;
  std::size_t post_best = 0;
  bool reached_engine = false;
  for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << rs.size()); ++mask) {
    // After the crash: the operations that had not taken effect, in
    // recover_op call order, from the recovered state.
    State st = in.observed;
    std::string why;
    std::size_t simulated = 0;
    for (std::size_t k = 0; k < rs.size() && why.empty(); ++k) {
      if (mask >> k & 1) continue;
      const auto& h = in.ops[rs[k]->index];
      const Response got = spec_apply(in.spec, st, h.op);
      if (!(got == rs[k]->response)) {
        why = "recover_op of " + describe_op(h) + " answered " + format_response(rs[k]->response) +
              ", inconsistent with the recovered state " + format_state(in.observed) + " (run after the crash it returns " +
              format_response(got) + ")";
      } else {
        ++simulated;
      }
    }
    if (why.empty() && st != in.observed_after)
      why = "after recover_op the state is " + format_state(in.observed_after) + ", expected " + format_state(st);
    if (!why.empty()) {
      if (post_failure.empty() || simulated > post_best) {
        post_failure = why;
        post_best = simulated;
      }
      continue;
    }
    // Before the crash: the others, with their answers as responses.
    std::vector<CItem> fixed = base;
    for (std::size_t k = 0; k < rs.size() && why.empty(); ++k) {
      if (!(mask >> k & 1)) continue;
      const auto& h = in.ops[rs[k]->index];
      if (h.op.kind == kinds->ins && rs[k]->response.has_value) {
        why = "recover_op of " + describe_op(h) + " answered " + format_response(rs[k]->response) +
              "; an insert returns no value";
        break;
      }
      if (!rs[k]->response.has_value && rs[k]->response.value != 0) {
        why = "recover_op of " + describe_op(h) + " gave a malformed answer (no value, yet value " +
              std::to_string(rs[k]->response.value) + ")";
        break;
      }
      fixed.push_back(*r.item(rs[k]->index, rs[k]->response));
    }
    if (!why.empty()) {
      if (post_failure.empty()) post_failure = why;
      continue;
    }
    reached_engine = true;
    Resolver::Outcome o = r.resolve(fixed, free);
    if (o.ok || o.inconclusive) return finish(o, header);
    if (engine_failure.reason.empty()) engine_failure = o;
  }
  if (reached_engine) return finish(engine_failure, header + " agreeing with recover_op");
  res.nodes = r.steps() + r.candidates();
  return fail(post_failure);
}

}  // namespace ferrite::crash::internal
