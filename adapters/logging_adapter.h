// adapters/logging_adapter.h — the one adapter of the failure-atomic
// logging library's workloads (include/ferrite/logging/), shared by the
// write-back registrations (logging_workloads.cc: x86 and strand
// instrumentation under abstract / x86, and `ferrite bench`) and the
// store-model ones (logging_store_models.cc: HOPS, HOPS+, strand under
// hops / hops+ / strand). Logged<W, Language, Instrumentation, Faults> is the
// adapter traits struct (adapters/adapter.h); Workload<W> says, once per
// workload, how to build it, run an operation, observe it and — for the
// workloads whose regions are not operations of a built-in structure
// (Array Swap, TPCC) — their sequential semantics (crash::RegionSpec), so
// the campaigns check failure atomicity (crash/checker.h).
//
// Every workload reaches bench through the map vocabulary (get / put /
// erase over a key range) and the crash campaigns through its own ops:
//   queue     enqueue / dequeue                       (queue spec)
//   map       put / get / erase                       (map spec)
//   rbtree    put / get / erase, RB-INSERT / RB-DELETE (map spec; a tree
//             whose invariants are broken observes as a malformed map)
//   nstore    put (YCSB update or insert) / get / erase (map spec; a torn
//             tuple observes as a malformed map)
//   swap      kSwap(i, j) -> old a[i], get(i)          (region spec)
//             bench: put(k, v) = swap(k, v), erase(k) = swap(k, 7k + 3)
//   tpcc      kNewOrder(d, seed), get(d) = next order id (region spec)
//             bench: put(k, v) = new_order(k, v), erase(k) = new_order(k, k)
//   handoff   kProduce(v), kConsume(k) (region spec with ATLAS's undo of
//             dependents; the HOPS+ paper's Figure 1; crash only, ATLAS only)
#pragma once

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "adapter.h"
#include "logging_options.h"
#include "ferrite/logging/array_swap.h"
#include "ferrite/logging/handoff.h"
#include "ferrite/logging/kv_store.h"
#include "ferrite/logging/rb_tree.h"
#include "ferrite/logging/tpcc.h"
#include "ferrite/logging/workloads.h"

namespace ferrite::adapters::logging {

namespace fl = ferrite::logging;

// Operation kinds of the region workloads (beyond ferrite/op.h's, which
// they never reach: only their own RegionSpec interprets them).
inline constexpr std::int32_t kSwap = 100;
inline constexpr std::int32_t kNewOrder = 101;
inline constexpr std::int32_t kProduce = 102;
inline constexpr std::int32_t kConsume = 103;

using State = std::vector<std::int64_t>;

// A map's items as the map spec's state ((key, value) pairs in key order),
// or a malformed one (a repeated key, which the map checkers reject) when
// the structure is broken in a way the pairs cannot show.
inline State map_state(const std::vector<std::pair<std::int64_t, std::int64_t>>& items, bool broken) {
  if (broken) return {0, 0, 0, 0};
  State out;
  for (const auto& [k, v] : items) {
    out.push_back(k);
    out.push_back(v);
  }
  return out;
}

template <class W>
struct Workload;

template <>
struct Workload<fl::LoggedQueue> {
  static constexpr op::Abstract kAbstract = op::Abstract::kQueue;
  static constexpr const char* kName = "queue";
  static auto make(pmem::Pool& p, const Setup& s, const fl::LoggerOptions& o) {
    return std::make_unique<fl::LoggedQueue>(p, s.name, s.threads, o);
  }
  static op::Response apply(fl::LoggedQueue& q, int tid, const op::Op& o) {
    switch (o.kind) {
      case op::kEnqueue: q.enqueue(tid, o.arg); return op::Response::ack();
      case op::kDequeue: return op::Response::from(q.dequeue(tid));
      case op::kSync: return op::Response::ack();
      default: unsupported("logging queue", o);
    }
  }
  static State observe(fl::LoggedQueue& q) { return q.snapshot(); }
  static void locks(fl::LoggedQueue& q, const op::Op&, std::vector<fl::Lock*>& out) { q.locks_of(out); }
};

// The map-like workloads share their apply (put / get / erase).
template <class M>
op::Response map_apply(M& m, int tid, const op::Op& o, const char* who) {
  switch (o.kind) {
    case op::kPut: return op::Response::from(m.put(tid, o.arg, o.arg2));
    case op::kGet: return op::Response::from(m.get(tid, o.arg));
    case op::kErase: return op::Response::from(m.erase(tid, o.arg));
    case op::kSync: return op::Response::ack();
    default: unsupported(who, o);
  }
}

template <>
struct Workload<fl::LoggedMap> {
  static constexpr op::Abstract kAbstract = op::Abstract::kMap;
  static constexpr const char* kName = "map";
  static auto make(pmem::Pool& p, const Setup& s, const fl::LoggerOptions& o) {
    return std::make_unique<fl::LoggedMap>(p, s.name, s.threads, o, s.key_range > 0 ? s.key_range : 64);
  }
  static op::Response apply(fl::LoggedMap& m, int tid, const op::Op& o) { return map_apply(m, tid, o, "logging map"); }
  static State observe(fl::LoggedMap& m) { return map_state(m.items(), false); }
  static void locks(fl::LoggedMap& m, const op::Op& o, std::vector<fl::Lock*>& out) { m.locks_of(o.arg, out); }
};

template <>
struct Workload<fl::LoggedRbTree> {
  static constexpr op::Abstract kAbstract = op::Abstract::kMap;
  static constexpr const char* kName = "rbtree";
  static auto make(pmem::Pool& p, const Setup& s, const fl::LoggerOptions& o) {
    return std::make_unique<fl::LoggedRbTree>(p, s.name, s.threads, o);
  }
  static op::Response apply(fl::LoggedRbTree& m, int tid, const op::Op& o) {
    return map_apply(m, tid, o, "logging rbtree");
  }
  // CRASH: a tree whose red-black invariants a crash broke (a partial
  // rotation left visible) observes as a malformed map: a violation.
  static State observe(fl::LoggedRbTree& m) { return map_state(m.items(), !m.check().empty()); }
};

template <>
struct Workload<fl::LoggedKvStore> {
  static constexpr op::Abstract kAbstract = op::Abstract::kMap;
  static constexpr const char* kName = "nstore";
  static auto make(pmem::Pool& p, const Setup& s, const fl::LoggerOptions& o) {
    return std::make_unique<fl::LoggedKvStore>(p, s.name, s.threads, o, s.key_range > 0 ? s.key_range : 64);
  }
  static op::Response apply(fl::LoggedKvStore& m, int tid, const op::Op& o) {
    return map_apply(m, tid, o, "logging nstore");
  }
  // CRASH: a tuple whose fields disagree (a partial update left visible)
  // observes as a malformed map: a violation.
  static State observe(fl::LoggedKvStore& m) {
    std::size_t torn = 0;
    auto items = m.items(&torn);
    return map_state(items, torn > 0);
  }
};

template <>
struct Workload<fl::LoggedArraySwap> {
  static constexpr op::Abstract kAbstract = op::Abstract::kMap;  // bench: the map vocabulary
  static constexpr const char* kName = "swap";
  static auto make(pmem::Pool& p, const Setup& s, const fl::LoggerOptions& o) {
    return std::make_unique<fl::LoggedArraySwap>(p, s.name, s.threads, o, s.key_range > 0 ? s.key_range : 16);
  }
  static op::Response apply(fl::LoggedArraySwap& a, int tid, const op::Op& o) {
    const auto i = static_cast<std::uint64_t>(o.arg);
    switch (o.kind) {
      case kSwap: return op::Response::of(a.swap(tid, i, static_cast<std::uint64_t>(o.arg2)));
      case op::kGet: return op::Response::of(a.get(tid, i));
      case op::kPut: a.swap(tid, i, static_cast<std::uint64_t>(o.arg2)); return op::Response::none();
      case op::kErase: a.swap(tid, i, 7 * i + 3); return op::Response::none();
      case op::kSync: return op::Response::ack();
      default: unsupported("logging swap", o);
    }
  }
  static State observe(fl::LoggedArraySwap& a) { return a.snapshot(); }
  static void locks(fl::LoggedArraySwap& a, const op::Op& o, std::vector<fl::Lock*>& out) {
    const auto i = static_cast<std::uint64_t>(o.arg);
    if (o.kind == kSwap || o.kind == op::kPut) a.locks_of(i, static_cast<std::uint64_t>(o.arg2), out);
    else if (o.kind == op::kErase) a.locks_of(i, 7 * i + 3, out);
    else a.locks_of(i, i, out);
  }
  // 80% swaps of two random elements of the 16 (a bench-sized trace: of the
  // key_range, make()'s array), 20% reads.
  static op::Op next_op(int, std::uint64_t& rng, adapters::Workload& w) {
    const std::uint64_t r = adapters::Workload::step(rng);
    if (w.key_range == 0) {  // the campaigns' sequence, unchanged (replay lines)
      if (r % 10 < 2) return {op::kGet, static_cast<std::int64_t>((r >> 4) % 16), 0};
      return {kSwap, static_cast<std::int64_t>((r >> 4) % 16), static_cast<std::int64_t>((r >> 12) % 16)};
    }
    const std::uint64_t n = w.key_range, j = adapters::Workload::step(rng) % n;
    if (r % 10 < 2) return {op::kGet, static_cast<std::int64_t>((r >> 4) % n), 0};
    return {kSwap, static_cast<std::int64_t>((r >> 4) % n), static_cast<std::int64_t>(j)};
  }
  static crash::RegionSpec region_spec() {
    crash::RegionSpec s;
    s.name = "array-swap";
    s.apply = [](State& st, const op::Op& o) {
      const std::uint64_t n = st.size();
      if (n == 0) throw std::invalid_argument("array-swap: empty state");
      const auto i = static_cast<std::uint64_t>(o.arg) % n;
      if (o.kind == op::kGet) return op::Response::of(st[i]);
      if (o.kind != kSwap) throw std::invalid_argument("array-swap: not a swap or a get");
      const std::int64_t old = st[i];
      std::swap(st[i], st[static_cast<std::uint64_t>(o.arg2) % n]);
      return op::Response::of(old);
    };
    s.format = [](const op::Op& o) {
      return o.kind == kSwap ? "swap(" + std::to_string(o.arg) + "," + std::to_string(o.arg2) + ")"
                             : "get(" + std::to_string(o.arg) + ")";
    };
    return s;
  }
};

template <>
struct Workload<fl::LoggedTpcc> {
  static constexpr op::Abstract kAbstract = op::Abstract::kMap;  // bench: the map vocabulary
  static constexpr const char* kName = "tpcc";
  static auto make(pmem::Pool& p, const Setup& s, const fl::LoggerOptions& o) {
    // Crash campaigns: 4 districts, 4 items (most orders repeat an item:
    // the case reverse rollback exists for). Bench: 10 districts (TPC-C's
    // per warehouse) and an item per key of the range.
    const bool bench = s.key_range > 0;
    return std::make_unique<fl::LoggedTpcc>(p, s.name, s.threads, o, districts(s.key_range),
                                            bench ? std::max<std::uint64_t>(s.key_range, 100) : 4);
  }
  static std::uint64_t districts(std::uint64_t key_range) { return key_range > 0 ? 10 : 4; }
  static op::Response apply(fl::LoggedTpcc& t, int tid, const op::Op& o) {
    const auto d = static_cast<std::uint64_t>(o.arg);
    switch (o.kind) {
      case kNewOrder: return op::Response::of(t.new_order(tid, d, static_cast<std::uint64_t>(o.arg2)));
      case op::kGet: return op::Response::of(t.next_order_id(tid, d));
      case op::kPut: t.new_order(tid, d, static_cast<std::uint64_t>(o.arg2)); return op::Response::none();
      case op::kErase: t.new_order(tid, d, d); return op::Response::none();
      case op::kSync: return op::Response::ack();
      default: unsupported("logging tpcc", o);
    }
  }
  static State observe(fl::LoggedTpcc& t) { return t.snapshot(); }
  // 85% New-Order in a random district with a fresh seed, 15% reads of a
  // district's next order id.
  static op::Op next_op(int tid, std::uint64_t& rng, adapters::Workload& w) {
    const std::uint64_t r = adapters::Workload::step(rng), d = districts(w.key_range);
    if (r % 20 < 3) return {op::kGet, static_cast<std::int64_t>((r >> 5) % d), 0};
    return {kNewOrder, static_cast<std::int64_t>((r >> 5) % d), w.unique(tid)};
  }
  // The sequential New-Order on LoggedTpcc::snapshot()'s representation.
  static crash::RegionSpec region_spec() {
    crash::RegionSpec s;
    s.name = "tpcc-new-order";
    s.apply = [](State& st, const op::Op& o) {
      if (st.size() < 2) throw std::invalid_argument("tpcc: state too short");
      const auto nd = static_cast<std::uint64_t>(st[0]), ni = static_cast<std::uint64_t>(st[1]);
      if (nd == 0 || ni == 0 || st.size() < 2 + nd + ni + nd) throw std::invalid_argument("tpcc: malformed state");
      const std::uint64_t d = static_cast<std::uint64_t>(o.arg) % nd;
      const std::int64_t o_id = st[2 + d];
      if (o.kind == op::kGet) return op::Response::of(o_id);
      if (o.kind != kNewOrder) throw std::invalid_argument("tpcc: not a new-order or a get");
      ++st[2 + d];
      const auto lines = fl::LoggedTpcc::order_lines(static_cast<std::uint64_t>(o.arg2), ni);
      for (const auto& l : lines) {
        auto& q = st[2 + nd + static_cast<std::uint64_t>(l.item)];
        q = fl::LoggedTpcc::restock(q, l.qty);
      }
      std::size_t p = 2 + nd + ni;
      for (std::uint64_t k = 0; k < d; ++k) p += 1 + 2 * static_cast<std::size_t>(st[p]);
      const auto cnt = static_cast<std::size_t>(st[p]);
      ++st[p];
      const std::int64_t digest = fl::LoggedTpcc::lines_digest(lines.data(), lines.size());
      st.insert(st.begin() + static_cast<std::ptrdiff_t>(p + 1 + 2 * cnt), {o_id, digest});
      return op::Response::of(o_id);
    };
    s.format = [](const op::Op& o) {
      return o.kind == kNewOrder ? "new_order(d" + std::to_string(o.arg) + ",seed " + std::to_string(o.arg2) + ")"
                                 : "next_order_id(d" + std::to_string(o.arg) + ")";
    };
    return s;
  }
};

template <>
struct Workload<fl::LoggedHandoff> {
  static constexpr op::Abstract kAbstract = op::Abstract::kMap;  // unused: crash only, region spec
  static constexpr const char* kName = "handoff";
  static auto make(pmem::Pool& p, const Setup& s, const fl::LoggerOptions& o) {
    return std::make_unique<fl::LoggedHandoff>(p, s.name, s.threads, o);
  }
  static op::Response apply(fl::LoggedHandoff& h, int tid, const op::Op& o) {
    switch (o.kind) {
      case kProduce: return op::Response::of(h.produce(tid, o.arg));
      case kConsume: return op::Response::of(h.consume(tid, static_cast<std::uint64_t>(o.arg)));
      case op::kSync: return op::Response::ack();
      default: unsupported("logging handoff", o);
    }
  }
  static State observe(fl::LoggedHandoff& h) { return h.snapshot(); }
  // Half produces of a fresh value, half consumes into a random slot.
  static op::Op next_op(int tid, std::uint64_t& rng, adapters::Workload& w) {
    const std::uint64_t r = adapters::Workload::step(rng);
    if (r % 2 == 0) return {kProduce, w.unique(tid), 0};
    return {kConsume, static_cast<std::int64_t>((r >> 4) % fl::LoggedHandoff::kSlots), 0};
  }
  // DATA, COUNT, FLAG[kSlots] (LoggedHandoff::snapshot).
  static crash::RegionSpec region_spec() {
    crash::RegionSpec s;
    s.name = "atlas-handoff";
    s.undo_dependents = true;  // ATLAS: a consume is undone with the produce it read from
    s.apply = [](State& st, const op::Op& o) {
      if (st.size() != 2 + fl::LoggedHandoff::kSlots) throw std::invalid_argument("handoff: malformed state");
      if (o.kind == kProduce) {
        st[0] = o.arg;
        return op::Response::of(st[1]++);
      }
      if (o.kind != kConsume) throw std::invalid_argument("handoff: not a produce or a consume");
      st[2 + static_cast<std::uint64_t>(o.arg) % fl::LoggedHandoff::kSlots] = st[0];
      return op::Response::of(st[0]);
    };
    s.format = [](const op::Op& o) {
      return o.kind == kProduce ? "produce(" + std::to_string(o.arg) + ")" : "consume(" + std::to_string(o.arg) + ")";
    };
    return s;
  }
};

// The adapter traits (adapters/adapter.h) of workload W in language L with
// instrumentation I and the broken variant's faults F.
template <class W, fl::Language L, fl::Instrumentation I, unsigned F = fl::internal::kNoFaults>
struct Logged {
  using Handle = std::unique_ptr<W>;
  using T = Workload<W>;
  static constexpr op::Abstract kAbstract = T::kAbstract;
  static constexpr bool kDetectable = false;

  // Entries per thread: a thread that stops running regions prunes nothing
  // — a bench worker waiting at the harness's barrier after its prefill, a
  // campaign thread done with its share of the operations — and under
  // ATLAS / SFR the other threads' regions may wait for its deferred ones
  // (docs/logging.md, "Deviations"). Bench (a keyed run): 4096; crash
  // campaigns: 1024 (the library's default is 256).
  static fl::LoggerOptions options(const Setup& s) {
    // ATLAS / SFR: batched commits when a tool set --commit-batch
    // (logging_options.h); a transaction commits at its end.
    const std::size_t batch =
        L == fl::Language::kTxn ? 1 : logging_commit_batch().load(std::memory_order_relaxed);  // relaxed: set before
    return {.language = L,
            .instrumentation = I,
            .faults = F,
            .capacity = s.key_range > 0 ? 4096u : 1024u,
            .commit_batch = batch};
  }
  static Handle create(pmem::Pool* pool, const Setup& s) { return T::make(*pool, s, options(s)); }
  static Handle attach(pmem::Pool& pool, const Setup& s) { return create(&pool, s); }
  static op::Response apply(Handle& h, int tid, std::uint64_t, const op::Op& o) { return T::apply(*h, tid, o); }
  static State observe(Handle& h) { return T::observe(*h); }
  // ATLAS / SFR: a bench worker that is done keeps pruning its deferred
  // regions, which the other workers' regions may wait for.
  static void thread_init(Handle&, int) {}
  static void thread_exit(Handle& h, int tid) { h->logger().drain(tid); }
  static op::Op next_op(int tid, std::uint64_t& rng, adapters::Workload& w)
    requires requires { T::next_op(tid, rng, w); }
  {
    return T::next_op(tid, rng, w);
  }
  // ATLAS: a section that takes several locks releases all but its last
  // inside the section (Region releases them one by one), so another
  // thread's section may acquire from it and complete, and a crash before
  // the first section ends undoes both (undo_log.h recovery step 2): the
  // checker may leave a completed region out when a chain of left-out
  // regions leads to one in flight (RegionSpec::undo_dependents). Not under
  // HOPS+: closed nesting keeps those locks until the section ends, so no
  // completed region is ever undone, and the check stays the strict one.
  static crash::RegionSpec region_spec()
    requires requires { T::region_spec(); }
  {
    crash::RegionSpec s = T::region_spec();
    if constexpr (L == fl::Language::kAtlas) s.undo_dependents = I != fl::Instrumentation::kHopsPlus;
    return s;
  }
  // Several operations in one region (logging::Group): the workloads that
  // can name their locks up front.
  static void apply_group(Handle& h, int tid, std::uint64_t, const std::vector<op::Op>& ops)
    requires requires(W& w, const op::Op& o, std::vector<fl::Lock*>& out) { T::locks(w, o, out); }
  {
    std::vector<fl::Lock*> locks;
    for (const auto& o : ops) T::locks(*h, o, locks);
    fl::Group g(h->logger(), tid, std::move(locks));
    for (const auto& o : ops) T::apply(*h, tid, o);
    g.end();
  }
};

// The one list of the library's workloads × languages: calls
// reg.template operator()<W, L>(language, "a <region> per op") for each
// (both registration files register through it, so a new workload is
// registered — crash, bench, traces — by adding it here).
template <class R>
bool for_each_workload(R&& reg) {
  auto languages = [&]<class W>() {
    return reg.template operator()<W, fl::Language::kTxn>("txn", "a transaction per op") &&
           reg.template operator()<W, fl::Language::kAtlas>("atlas", "an ATLAS critical section per op") &&
           reg.template operator()<W, fl::Language::kSfr>("sfr", "an SFR per op");
  };
  return languages.template operator()<fl::LoggedQueue>() && languages.template operator()<fl::LoggedMap>() &&
         languages.template operator()<fl::LoggedArraySwap>() && languages.template operator()<fl::LoggedRbTree>() &&
         languages.template operator()<fl::LoggedTpcc>() && languages.template operator()<fl::LoggedKvStore>();
}

}  // namespace ferrite::adapters::logging
