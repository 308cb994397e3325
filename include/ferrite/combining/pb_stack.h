// ferrite/combining/pb_stack.h — PBstack: a detectably recoverable stack on
// PBcomb ("Recoverable software combining", PPoPP'22, §5 "PBStack" and
// "Memory Management"; Algorithms 1–2 for the protocol).
//
// What it is. A linked list of 16-byte nodes in the pool; the PBcomb state
// is just `top`. The combiner serves the round's pushes and pops on its copy
// of top: a push takes a node (recycling stack first, else the combiner's
// heap arena: consecutive addresses), fills it and links it on top; a pop
// unlinks top and answers its value. Optional elimination pairs off a push
// and a pop of the same round without touching the list (linearized push
// then pop).
//
// Thread safety: push/pop/recover are safe from distinct thread ids in
// [0, n) concurrently (one operation per id at a time).
//
// Invariants. Nodes reachable from the current state's top are never
// written. A node removed by a pop is recycled (recycling stack, volatile)
// or freed only after the round that removed it is durable (after Alg. 2
// l.27), so the durable state never names a reused node. Nodes are reused
// in the order they were popped, which puts them back in allocation order
// (§5 Memory Management, persistence principle 3).
//
// Persistence invariants. New nodes (value, next) are written back in
// Policy::before_persist, i.e. before the StateRec (Alg. 2 l.22) and the
// pfence (l.23) that orders both before MIndex: a durable top names durable
// nodes. Responses are values copied into ReturnVal, so a response never
// depends on a node that may be recycled (state copy self-contained).
//
// Recovery. The pool rebuilds the heap's free lists when it opens
// (pmem::Pool::recover): PBStackRoot's registered hook (recover_root)
// marks the StateRecs and every node reachable from the current MemState's
// top, from the root alone; every node not reachable (popped, on the
// volatile recycling stack, or allocated by a round that did not become
// durable) is free again. attach() only re-attaches (it frees nothing).
// Pending operations: recover(tid, seq, op, v) (Alg. 1 l.3–6).
#pragma once

#include <bit>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "ferrite/combining/pbcomb.h"
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
  static constexpr std::uint32_t kTypeVersion = 3;  // v3: (ReturnVal, tag) pairs after the state; v2: round stamps
  static constexpr const char* kTypeName = "combining::PBStack";
  PBCombRoot comb;
  explicit PBStackRoot(const PBCombRoot& c)
      : comb(c.rec[0], c.rec[1], c.rec_bytes, c.threads, c.state_bytes,
             static_cast<TagKind>(c.tag_kind), c.design) {}
};

// The sequential stack, as a PBcomb policy. State: PBStackNode* top.
template <unsigned Faults>
class PBStackObject {
 public:
  static constexpr TagKind kTag = TagKind::kBit;
  using Node = PBStackNode;

  PBStackObject(pmem::Heap* heap, PBStackOptions opts) : heap_(heap), opts_(opts) {}

  std::size_t state_bytes() const { return sizeof(Node*); }
  std::size_t used_bytes(const void*) const { return sizeof(Node*); }
  void init_state(void* st) const { *static_cast<Node**>(st) = nullptr; }

  void simulate(void* st, const Active* a, std::size_t k, std::uint64_t* resp, int tid) {
    Node* top = *static_cast<Node**>(st);
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
      for (std::size_t j = m; j < pushes_.size(); ++j) resp[pushes_[j]] = push(top, a[pushes_[j]].arg, tid);
      for (std::size_t j = m; j < pops_.size(); ++j) resp[pops_[j]] = pop(top);
    } else {
      for (std::size_t i = 0; i < k; ++i)
        resp[i] = a[i].op == OpCode::kPush ? push(top, a[i].arg, tid) : pop(top);
    }
    *static_cast<Node**>(st) = top;
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
  std::uint64_t push(Node*& top, std::int64_t v, int tid) {
    Node* n;
    if (!recycle_.empty()) {
      n = recycle_.back();  // last popped = deepest = allocated earliest
      recycle_.pop_back();
    } else {
      n = static_cast<Node*>(heap_->alloc(sizeof(Node), tid));
    }
    n->value = v;
    n->next = top;
    top = n;
    new_nodes_.push_back(n);
    return kAckWord;
  }
  std::uint64_t pop(Node*& top) {
    if (top == nullptr) return kEmptyWord;
    Node* n = top;
    top = n->next;
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

template <unsigned Faults = kNoFaults>
class PBStack {
 public:
  using Node = PBStackNode;
  using Object = PBStackObject<Faults>;
  using Comb = PBComb<Object, Faults>;

  static std::unique_ptr<PBStack> create(pmem::Pool& pool, std::string_view name, int threads,
                                         PBStackOptions opts = {}, int alloc_tid = 0) {
    if (threads <= 0) throw std::invalid_argument("PBStack: threads must be > 0");
    Object obj(&pool.heap(), opts);
    const RecLayout l = Comb::layout_for(obj, threads);
    void* r0 = pool.heap().alloc(record_block_bytes(l.total()), alloc_tid);
    void* r1 = pool.heap().alloc(record_block_bytes(l.total()), alloc_tid);
    Comb::format(obj, threads, r0, r1);
    auto* root = pool.create_root<PBStackRoot>(
        name, PBCombRoot(r0, r1, l.total(), static_cast<std::uint32_t>(threads),
                         static_cast<std::uint32_t>(l.state_bytes), Object::kTag, Comb::kDesign));
    return std::unique_ptr<PBStack>(new PBStack(pool, root, threads, opts));
  }

  // Re-attaches by name. Frees nothing: the pool recovered the heap when
  // it opened (recover_root).
  static std::unique_ptr<PBStack> attach(pmem::Pool& pool, std::string_view name, int threads,
                                         PBStackOptions opts = {}) {
    auto* root = pool.root<PBStackRoot>(name);
    return std::unique_ptr<PBStack>(new PBStack(pool, root, threads, opts));
  }

  // PBStackRoot's recover hook (pmem/root_registry.h): marks what the stack
  // uses, from the root alone. Nothing to repair.
  static void recover_root(pmem::Pool& pool, PBStackRoot* root, const std::function<void(void*)>& mark) {
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
  const Node* top() const { return *static_cast<Node* const*>(comb_.state()); }

  // Marks the StateRecs, the root and the nodes from the current top.
  void trace(const std::function<void(void*)>& mark) const { trace_root(*pool_, root_, mark); }
  static void trace_root(const pmem::Pool& pool, PBStackRoot* root, const std::function<void(void*)>& mark) {
    pbcomb_mark_records(root->comb, mark);
    mark(root);
    std::unordered_set<const Node*> seen;
    for (Node* n = *static_cast<Node* const*>(pbcomb_current_state(root->comb));
         n != nullptr && pool.contains(n, sizeof(Node)) && seen.insert(n).second; n = n->next)
      mark(n);
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
  PBStack(pmem::Pool& pool, PBStackRoot* root, int threads, PBStackOptions opts)
      : pool_(&pool), root_(root), obj_(&pool.heap(), opts), comb_(&root->comb, &obj_, threads) {}

  pmem::Pool* pool_;
  PBStackRoot* root_;
  Object obj_;
  Comb comb_;
};

// The pool's recover hook for PBStackRoot (Faults-independent trace).
inline const bool kPBStackRootRegistered = pmem::register_root_type<PBStackRoot>(&PBStack<>::recover_root);

}  // namespace ferrite::combining
