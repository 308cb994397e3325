// ferrite/combining/pb_stack.h — PBstack: a detectably recoverable stack on
// PBcomb ("Recoverable software combining", PPoPP'22, §5 "PBStack" and
// "Memory Management"; Algorithms 1–2 for the protocol).
//
// What it is. A linked list of 16-byte nodes in the pool; the PBcomb state
// is `top` and, in Ferrite's default design, a *top cache*: one value slot
// `cached` that holds the stack's topmost element when it is not in a node
// (layout v4; the paper's state is `top` alone — the `pb-stack-no-cache`
// and `pb-stack-paper` ablations, Faults bit kNoTopCache). The stack is
// `cached` (if present) above the list from `top`. The combiner serves the
// round's pushes and pops on its copy of the state: a push into an empty
// cache only sets `cached`; a push onto a full cache spills `cached` into a
// node (recycling stack first, else the combiner's heap arena: consecutive
// addresses) linked on top, and caches the new value; a pop takes `cached`
// if present, else unlinks top and answers its value. Optional elimination
// pairs off a push and a pop of the same round without touching the state
// (linearized push then pop).
//
// Why the cache. The state lives in the StateRec, whose line a round writes
// back anyway. Without the cache every push also writes back a node line
// and fences before the record (push/pop pairs: 1.5 pwb and 0.5 pfence per
// operation at one thread); with it a push onto an empty cache and a pop of
// the cached value write back the record's line only (1 pwb, no pfence),
// and a run of pushes creates one node per push after the first, as before.
//
// Thread safety: push/pop/recover are safe from distinct thread ids
// concurrently (one operation per id at a time): push/pop take ids in [0,
// threads) of the attach, recover any id below the capacity n the stack was
// created for (attach asks for any 1..n threads; PBcomb's "Thread capacity").
//
// Invariants. Nodes reachable from the current state's top are never
// written. A node removed by a pop is recycled (recycling stack, volatile)
// or freed only after the round that removed it is durable (after Alg. 2
// l.27), so the durable state never names a reused node. Nodes are reused
// in the order they were popped, which puts them back in allocation order
// (§5 Memory Management, persistence principle 3). `cached` is kNoCached
// (INT64_MIN, a value no push may store: check_value) or a pushed value.
//
// Persistence invariants. New nodes (value, next) are written back in
// Policy::before_persist, i.e. before the StateRec (Alg. 2 l.22) and the
// fence that orders both before the record's switch (the paper's l.23, or
// the stamped round's pfence): a durable top names durable nodes. `cached`
// is part of the state: durable with the record, in its one write-back
// range. Responses are values copied into ReturnVal, so a response never
// depends on a node that may be recycled (state copy self-contained).
//
// Recovery. The pool rebuilds the heap's free lists when it opens
// (pmem::Pool::recover): PBStackRoot's registered hook (recover_root)
// marks the StateRecs and every node reachable from the current MemState's
// top, from the root alone (top is the state's first word in both
// layouts); every node not reachable (popped, on the volatile recycling
// stack, or allocated by a round that did not become durable) is free
// again. attach() only re-attaches (it frees nothing). Pending operations:
// recover(tid, seq, op, v) (Alg. 1 l.3–6).
//
// Validation (issue 40; combining/validate.h). The hook and attach check
// what they follow before reading it: the PBcomb root (thread capacity,
// tag kind, design, record size, both StateRecs inside the pool, aligned
// heap block starts of at least rec_bytes, a record that verifies), and
// every node from top (inside the pool, 8-aligned, the start of a heap
// block of at least 16 bytes, no node twice: a cycle is damage). A damaged
// stack throws pmem::PoolError(kCorrupt) naming the damaged word's offset
// and value; the pool then keeps every block and leaves the root closed.
//
// Root: PBStackRoot, or a type derived from it that adds nothing but its
// own tag and version (PBBytesStackRoot, pb_bytes_stack.h: the same stack
// holding payload offsets, so neither is ever attached as the other).
#pragma once

#include <bit>

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "ferrite/combining/pbcomb.h"
#include "ferrite/combining/validate.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/sync/thread_registry.h"
#include "ferrite/pmem/root_registry.h"

namespace ferrite::combining {

struct PBStackNode {
  std::int64_t value;
  PBStackNode* next;
};
static_assert(sizeof(PBStackNode) == 16);

struct PBStackOptions {
  bool elimination = true;  // pair off push/pop within a round
  bool recycling = true;    // single recycling stack (else free to the heap)
};

struct PBStackRoot {
  static constexpr std::uint32_t kTypeTag = 0x50425354;  // "PBST"
  // v4: the state may hold the top cache (state_bytes 16; 8 without it);
  // v3: (ReturnVal, tag) pairs after the state; v2: round stamps.
  static constexpr std::uint32_t kTypeVersion = 6;  // v6: the state checksummed as a sum of per-word terms; v5: eight-chain record checksum (v4: the top cache)
  static constexpr const char* kTypeName = "combining::PBStack";
  PBCombRoot comb;
  explicit PBStackRoot(const PBCombRoot& c)
      : comb(c.rec[0], c.rec[1], c.rec_bytes, c.threads, c.state_bytes,
             static_cast<TagKind>(c.tag_kind), c.design) {}
};

// The sequential stack, as a PBcomb policy. State: { PBStackNode* top;
// int64 cached; } (kNoTopCache: { top }).
template <unsigned Faults>
class PBStackObject {
 public:
  static constexpr TagKind kTag = TagKind::kBit;
  static constexpr bool kTopCache = (Faults & kNoTopCache) == 0;
  // An empty cache: INT64_MIN (kEmptyWord's value), which check_value
  // refuses as a pushed value.
  static constexpr std::int64_t kNoCached = std::numeric_limits<std::int64_t>::min();
  using Node = PBStackNode;
  struct State {
    Node* top;
    std::int64_t cached;  // kTopCache only
  };

  PBStackObject(pmem::Heap* heap, PBStackOptions opts) : heap_(heap), opts_(opts) {}

  std::size_t state_bytes() const { return kTopCache ? sizeof(State) : sizeof(Node*); }
  std::size_t used_bytes(const void*) const { return state_bytes(); }
  void init_state(void* st) const {
    auto* s = static_cast<State*>(st);
    s->top = nullptr;
    if constexpr (kTopCache) s->cached = kNoCached;
  }

  void simulate(void* st, const Active* a, std::size_t k, std::uint64_t* resp, int tid) {
    auto* s = static_cast<State*>(st);
    // The state is read and written whole (state_bytes of it: without the
    // cache, `cached` is not part of the record and is never touched).
    State cur{s->top, kNoCached};
    if constexpr (kTopCache) cur.cached = s->cached;
    if (opts_.elimination) {
      pushes_.clear();
      pops_.clear();
      for (std::size_t i = 0; i < k; ++i) (a[i].op == OpCode::kPush ? pushes_ : pops_).push_back(i);
      const std::size_t m = std::min(pushes_.size(), pops_.size());
      // Elimination: push j then pop j, both concurrent in this round.
      for (std::size_t j = 0; j < m; ++j) {
        resp[pushes_[j]] = kAckWord;
        resp[pops_[j]] = value_word(a[pushes_[j]].arg);
      }
      for (std::size_t j = m; j < pushes_.size(); ++j) resp[pushes_[j]] = push(cur, a[pushes_[j]].arg, tid);
      for (std::size_t j = m; j < pops_.size(); ++j) resp[pops_[j]] = pop(cur);
    } else {
      for (std::size_t i = 0; i < k; ++i)
        resp[i] = a[i].op == OpCode::kPush ? push(cur, a[i].arg, tid) : pop(cur);
    }
    s->top = cur.top;
    if constexpr (kTopCache) s->cached = cur.cached;
  }

  bool before_persist(void*, int) {
    // PERSIST: every node created this round (value + next) before the
    // StateRec naming it (§5 PBStack; ordered before MIndex by l.23, or by
    // the stamped round's pfence).
    const bool any = !new_nodes_.empty();
    if constexpr ((Faults & kNoNodePwb) == 0) {
      LineWriteback lw;
      for (Node* n : new_nodes_) lw.add(n, sizeof(Node));
    }
    new_nodes_.clear();
    return any;
  }

  void after_durable(void*, int tid) {
    // CRASH: the pops of this round are durable (l.27 done): no durable
    // state names these nodes any more, so they may be reused.
    for (Node* n : retired_) {
      if (opts_.recycling) recycle_.push_back(n);
      else heap_->free(n, tid);
    }
    retired_.clear();
  }

  std::size_t recycled() const { return recycle_.size(); }

 private:
  std::uint64_t push(State& s, std::int64_t v, int tid) {
    if constexpr (kTopCache) {
      if (s.cached == kNoCached) {
        // PERSIST: the value is part of the state, written back with the
        // record in the round's one range (Alg. 2 l.22): no node, no fence.
        s.cached = v;
        return kAckWord;
      }
      // The cached value moves into a node below v. CRASH: the node is new
      // (or recycled after the round that popped it was durable); the
      // durable record still names the old top and holds the old cached
      // value until this round's record is durable, and the node is written
      // back and fenced before it (before_persist).
      std::swap(v, s.cached);
    }
    Node* n;
    if (!recycle_.empty()) {
      n = recycle_.back();  // last popped = deepest = allocated earliest
      recycle_.pop_back();
    } else {
      n = static_cast<Node*>(heap_->alloc(sizeof(Node), tid));
    }
    n->value = v;
    n->next = s.top;
    s.top = n;
    new_nodes_.push_back(n);
    return kAckWord;
  }
  std::uint64_t pop(State& s) {
    if constexpr (kTopCache) {
      if (s.cached != kNoCached) {
        const std::int64_t v = s.cached;
        s.cached = kNoCached;
        return value_word(v);
      }
    }
    if (s.top == nullptr) return kEmptyWord;
    Node* n = s.top;
    s.top = n->next;
    retired_.push_back(n);
    return value_word(n->value);
  }

  pmem::Heap* heap_;
  PBStackOptions opts_;
  // Combiner-only (under the PBcomb lock).
  std::vector<std::size_t> pushes_, pops_;
  std::vector<Node*> new_nodes_;
  std::vector<Node*> retired_;
  std::vector<Node*> recycle_;  // the recycling stack (volatile)
};

// With the top cache the state is 16 bytes: the record of a stack for up to
// 3 threads is one line (16 header + 8 Deactivate bits + 16 state + 3 x 8
// responses), so a round at one or two threads writes back one line.
static_assert(RecLayout{3, TagKind::kBit, sizeof(PBStackObject<kNoFaults>::State)}.total() == 64);

template <unsigned Faults = kNoFaults, class Root = PBStackRoot>
class PBStack {
  static_assert(std::is_base_of_v<PBStackRoot, Root> && sizeof(Root) == sizeof(PBStackRoot),
                "PBStack's root: PBStackRoot or a type that only renames it");

 public:
  using Node = PBStackNode;
  using Object = PBStackObject<Faults>;
  using Comb = PBComb<Object, Faults>;

  static std::unique_ptr<PBStack> create(pmem::Pool& pool, std::string_view name, int threads = kDefaultThreads,
                                         PBStackOptions opts = {}, int alloc_tid = 0) {
    if (threads <= 0) throw std::invalid_argument("PBStack: threads must be > 0");
    Object obj(&pool.heap(), opts);
    const RecLayout l = Comb::layout_for(obj, threads);
    void* r0 = pool.heap().alloc(record_block_bytes(l.total()), alloc_tid);
    void* r1 = pool.heap().alloc(record_block_bytes(l.total()), alloc_tid);
    Comb::format(obj, threads, r0, r1);
    auto* root = pool.create_root<Root>(
        name, PBCombRoot(r0, r1, l.total(), static_cast<std::uint32_t>(threads),
                         static_cast<std::uint32_t>(l.state_bytes), Object::kTag, Comb::kDesign));
    return std::unique_ptr<PBStack>(new PBStack(pool, root, threads, opts));
  }

  // Re-attaches by name. Frees nothing: the pool recovered the heap when
  // it opened (recover_root). Pool::root refuses a root whose hook failed;
  // a pool opened without recovery (PoolOptions::recover false) ran no
  // hook, so attach validates the root and walks the list itself
  // (trace_root with no mark) before the combiner reads a record.
  static std::unique_ptr<PBStack> attach(pmem::Pool& pool, std::string_view name, int threads = kAsCreated,
                                         PBStackOptions opts = {}) {
    auto* root = pool.root<Root>(name);
    if (!pool.heap().recovered()) trace_root(pool, root, [](void*) {});
    return std::unique_ptr<PBStack>(new PBStack(pool, root, threads, opts));
  }

  // PBStackRoot's recover hook (pmem/root_registry.h): marks what the stack
  // uses, from the root alone. Nothing to repair.
  static void recover_root(pmem::Pool& pool, Root* root, const std::function<void(void*)>& mark) {
    trace_root(pool, root, mark);
  }

  void push(int tid, std::uint64_t seq, std::int64_t v) {
    check_value(v, "PBStack::push");
    comb_.apply(tid, seq, OpCode::kPush, v);
  }
  std::optional<std::int64_t> pop(int tid, std::uint64_t seq) {
    return to_optional(comb_.apply(tid, seq, OpCode::kPop, 0));
  }
  // With the handle's own per-thread sequence numbers.
  void push(int tid, std::int64_t v) {
    check_value(v, "PBStack::push");
    comb_.apply(tid, OpCode::kPush, v);
  }
  std::optional<std::int64_t> pop(int tid) { return to_optional(comb_.apply(tid, OpCode::kPop, 0)); }

  // Detectable recovery (Alg. 1 l.3–6) of the operation (tid, seq, op, v)
  // pending at a crash; returns its response word (kAckWord for a push,
  // the value or kEmptyWord for a pop).
  std::uint64_t recover(int tid, std::uint64_t seq, OpCode op, std::int64_t v) {
    return comb_.recover(tid, seq, op, v);
  }

  // Quiescent: values top -> bottom (bounded walk, robust to a broken
  // variant's garbage: stops at a repeated or foreign node).
  std::vector<std::int64_t> values() const {
    std::vector<std::int64_t> out;
    if constexpr (Object::kTopCache) {
      const std::int64_t c = static_cast<const typename Object::State*>(comb_.state())->cached;
      if (c != Object::kNoCached) out.push_back(c);
    }
    std::unordered_set<const Node*> seen;
    for (const Node* n = top(); n != nullptr; n = n->next) {
      if (!pool_->contains(n, sizeof(Node)) || !seen.insert(n).second) {
        out.push_back(kMinValue - 1);  // marks a corrupt list for checkers
        break;
      }
      out.push_back(n->value);
    }
    return out;
  }
  // The list's top node (below the cached value, if any).
  const Node* top() const { return *static_cast<Node* const*>(comb_.state()); }
  Root* root() const { return root_; }

  // Marks the StateRecs, the root and the nodes from the current top.
  void trace(const std::function<void(void*)>& mark) const { trace_root(*pool_, root_, mark); }
  // Validating (the essay's "Validation"): throws PoolError(kCorrupt) naming
  // the damaged word before anything is read through it.
  static void trace_root(const pmem::Pool& pool, PBStackRoot* root, const std::function<void(void*)>& mark) {
    for_each_node(pool, root, [&](const Node* n) { mark(const_cast<Node*>(n)); }, &mark);
  }
  // Calls f on every node from the current top, validated (see trace_root);
  // `records`: also marks the root and its records first (the hook).
  template <class F>
  static void for_each_node(const pmem::Pool& pool, PBStackRoot* root, const F& f,
                            const std::function<void(void*)>* records = nullptr) {
    const Damage d{pool, "PBStack"};
    Node* const* top_at = static_cast<Node* const*>(pbcomb_checked_state(d, root->comb));
    if (records != nullptr) {
      pbcomb_mark_records(root->comb, *records);
      (*records)(root);
    }
    if (root->comb.state_bytes != sizeof(Node*) && root->comb.state_bytes != sizeof(typename Object::State))
      d.fail("the state size is neither a stack's nor a cached stack's", &root->comb.state_bytes,
             root->comb.state_bytes);
    std::unordered_set<const Node*> seen;
    const void* at = top_at;  // where the pointer to n is stored
    for (const Node* n = *top_at; n != nullptr; at = &n->next, n = n->next) {
      if (!d.block_ok(n, sizeof(Node))) d.fail(at == top_at ? "top is not a node" : "a next pointer names no node", at, n);
      if (!seen.insert(n).second) d.fail("the list from top loops", at, n);
      f(n);
    }
  }

  double combining_degree() const { return comb_.combining_degree(); }
  Comb& comb() { return comb_; }
  const Object& object() const { return obj_; }

  static std::optional<std::int64_t> to_optional(std::uint64_t w) {
    if (!is_value_word(w)) return std::nullopt;
    return word_value(w);
  }

  // ---- with a thread handle (sync::ThreadRegistry; no seq kept by the
  // caller: durably linearizable, not detectable — see ferrite/detectable.h)
  void push(const Thread& t, std::int64_t v) { push(t.id(), v); }
  std::optional<std::int64_t> pop(const Thread& t) { return pop(t.id()); }

  // ---- the vocabulary of ferrite/op.h (Detectable<S>, adapters) ----
  // One convention for every PB and PWF structure: apply runs an op::Op with
  // the caller's seq; recover answers the same response for an operation
  // pending at a crash, completing it if it had not taken effect.
  op::Response apply(int tid, std::uint64_t seq, const op::Op& o) {
    if (o.kind == op::kPush) return push(tid, seq, o.arg), op::Response::ack();
    if (o.kind == op::kPop) return op::Response::from(pop(tid, seq));
    unsupported_op("PBStack", o);
  }
  op::Response recover(int tid, std::uint64_t seq, const op::Op& o) {
    if (o.kind != op::kPush && o.kind != op::kPop) unsupported_op("PBStack", o);
    return response_of(o.kind, recover(tid, seq, static_cast<OpCode>(o.kind), o.arg));
  }

 private:
  PBStack(pmem::Pool& pool, Root* root, int threads, PBStackOptions opts)
      : pool_(&pool), root_(root), obj_(&pool.heap(), opts), comb_(&root->comb, &obj_, threads) {}

  pmem::Pool* pool_;
  Root* root_;
  Object obj_;
  Comb comb_;
};

// The pool's recover hook for PBStackRoot (Faults-independent trace).
inline const bool kPBStackRootRegistered = pmem::register_root_type<PBStackRoot>(&PBStack<>::recover_root);

}  // namespace ferrite::combining
