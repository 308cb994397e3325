// ferrite/combining/pwf_stack.h — PWFstack: a detectably recoverable,
// wait-free stack on PWFcomb (structure "pwf-stack").
//
// Paper: PBcomb/PWFcomb (PPoPP'22) §5 "PBStack and PWFstack" and "Memory
// Management"; Algorithms 3–4 for the protocol. The stack is a linked list of
// persistent nodes; the PWFcomb state is just `top`. A combiner (every thread
// that tries) copies the state, serves the active requests — elimination
// first (a push paired with a pop in the same batch never touches the list),
// then the remaining pushes (nodes from its own free list or arena) and pops
// — writes back the new nodes, then its StateRec, and tries the SC.
//
// Thread safety: push/pop/recover_* are safe from distinct thread ids:
// push/pop take ids in [0, threads) of the attach, recover_* any id below the
// capacity n the stack was created for (attach asks for any 1..n threads;
// PWFcomb's "Thread capacity").
//
// Invariants:
//   N1 A node's value and next never change while the node is reachable from
//      any state S has pointed to since the node was last pushed.
//   N2 (recycling) A node popped by combiner p enters p's free list only after
//      p's SC that removed it succeeded and p persisted S (Alg. 4 l.31–33).
//      Only p takes nodes from p's free list; a node it writes is therefore
//      in no state S points to at or after that SC.
//   N3 (validation, the "simple validation scheme" the paper borrows for
//      PWFstack) A combiner dereferences a pointer read from a node only
//      after VL(S) succeeded following that read. If VL succeeds, S has not
//      changed since the combiner's LL, so the node is still in the current
//      state and (N1) what it read is exact. If the node was recycled
//      meanwhile, the recycling SC changed S, VL fails and the attempt is
//      abandoned before the garbage is used. Node stores are release and the
//      validator has an acquire fence (docs/combining-pwf.md, seqlock
//      argument), so "read a recycled value" implies "VL sees the new S".
//
// Persistence invariants: new nodes are written back (persist_side) before
// the StateRec write-back and the fence (psync) of Alg. 4 l.28–29, hence before the
// SC makes them reachable. Nodes are recycled only after the removing state
// is durable (N2), so a durable S never reaches a node being rewritten.
//
// Recovery: the pool recovers the heap when it opens (pmem::Pool::recover):
// PWFStackRoot's registered hook (recover_root) traces the durable top
// through the nodes and marks them and the StateRecs, from the root alone,
// so the heap rebuilds free lists from everything else (per-thread free
// lists are volatile and start empty). attach() only re-attaches (it frees
// nothing). recover_push/recover_pop: Alg. 3 l.4–7.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "ferrite/combining/common.h"
#include "ferrite/combining/pwfcomb.h"
#include "ferrite/combining/validate.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/sync/thread_registry.h"
#include "ferrite/pmem/root_registry.h"
#include "ferrite/sync/cache_padded.h"

namespace ferrite::combining {

// A stack node in the pool. Fields are atomics because stale combiners read
// nodes that their owner may be recycling (validated reads, N3).
struct PWFStackNode {
  std::atomic<std::int64_t> value{0};
  std::atomic<std::uint64_t> next{0};  // address of the next node, 0 = bottom
};
static_assert(sizeof(PWFStackNode) == 16);

template <bool kElimination, bool kRecycle, unsigned kFaults>
class PWFStackObject {
 public:
  static constexpr std::size_t kStateWords = 1;  // top
  static constexpr std::size_t kFixedWords = 1;
  static constexpr bool kSeqTags = false;

  PWFStackObject(pmem::Pool& pool, int n)
      : pool_(pool), per_(std::make_unique<sync::CachePadded<PerThread>[]>(static_cast<std::size_t>(n))) {}

  std::size_t used_state_words(const std::uint64_t*) const { return 1; }

  bool combine(int p, std::uint64_t* st, std::span<PWFEntry> batch, const PWFValidator& vl) {
    auto& me = *per_[static_cast<std::size_t>(p)];
    std::uint64_t top = st[0];
    std::size_t first = 0;
    if constexpr (kElimination) {
      // Pair pushes with pops (Hendler et al. elimination): linearize each
      // pair as push immediately followed by its pop, before the rest.
      me.pushes.clear();
      me.pops.clear();
      for (auto& e : batch) (e.kind == static_cast<std::int32_t>(OpCode::kPush) ? me.pushes : me.pops).push_back(&e);
      const std::size_t k = me.pushes.size() < me.pops.size() ? me.pushes.size() : me.pops.size();
      for (std::size_t i = 0; i < k; ++i) {
        me.pushes[i]->ret = kAckWord;
        me.pops[i]->ret = value_word(me.pushes[i]->arg);
        me.pushes[i]->kind = me.pops[i]->kind = 0;  // served: skip below
      }
      first = 0;
    }
    for (std::size_t i = first; i < batch.size(); ++i) {
      auto& e = batch[i];
      if (e.kind == static_cast<std::int32_t>(OpCode::kPush)) {
        PWFStackNode* nd = take(p, me);
        // ORDER: release stores (N3): if nd is a recycled node a stale
        // combiner may read it; seeing these values implies its VL sees the
        // SC (ours, before on_commit) that removed nd.
        nd->value.store(e.arg, std::memory_order_release);
        nd->next.store(top, std::memory_order_release);
        top = reinterpret_cast<std::uint64_t>(nd);
        e.ret = kAckWord;
      } else if (e.kind == static_cast<std::int32_t>(OpCode::kPop)) {
        if (top == 0) {
          e.ret = kEmptyWord;
          continue;
        }
        auto* nd = reinterpret_cast<PWFStackNode*>(top);
        const std::int64_t v = nd->value.load(std::memory_order_relaxed);
        const std::uint64_t nx = nd->next.load(std::memory_order_relaxed);
        if (!vl()) return false;  // N3: validate before using nx / v
        e.ret = value_word(v);
        if constexpr (kRecycle) me.popped.push_back(nd);
        top = nx;
      }
    }
    st[0] = top;
    return true;
  }

  void persist_side(int p) {
    auto& me = *per_[static_cast<std::size_t>(p)];
    // PERSIST: the nodes this attempt wrote, before the StateRec (l.28) and
    // the fence of l.29 (persist::publish_fence) that makes both durable before the SC.
    me.wb.reset();
    for (PWFStackNode* nd : me.taken) me.wb.add(nd, sizeof *nd);
  }
  void on_commit(int p) {
    auto& me = *per_[static_cast<std::size_t>(p)];
    // N2: S (which no longer reaches them) is durable now: recycle.
    for (PWFStackNode* nd : me.popped) me.free.push_back(nd);
    me.taken.clear();
    me.popped.clear();
  }
  void on_abort(int p) {
    auto& me = *per_[static_cast<std::size_t>(p)];
    // Nodes taken by a failed attempt were never reachable: reuse them.
    for (auto it = me.taken.rbegin(); it != me.taken.rend(); ++it) me.free.push_back(*it);
    me.taken.clear();
    me.popped.clear();
  }
  std::size_t free_nodes(int p) const { return per_[static_cast<std::size_t>(p)]->free.size(); }

 private:
  struct PerThread {
    std::vector<PWFStackNode*> free;    // recycled nodes (LIFO)
    std::vector<PWFStackNode*> taken;   // written by the current attempt
    std::vector<PWFStackNode*> popped;  // removed by the current attempt
    std::vector<PWFEntry*> pushes, pops;
    LineWriteback wb;
  };
  PWFStackNode* take(int p, PerThread& me) {
    PWFStackNode* nd;
    if (!me.free.empty()) {
      nd = me.free.back();
      me.free.pop_back();
    } else {
      // Arena p: consecutive addresses (persistence principle 3).
      nd = static_cast<PWFStackNode*>(pool_.heap().alloc(sizeof(PWFStackNode), p));
    }
    me.taken.push_back(nd);
    return nd;
  }
  pmem::Pool& pool_;
  std::unique_ptr<sync::CachePadded<PerThread>[]> per_;
};

struct PWFStackRoot {
  static constexpr std::uint32_t kTypeTag = 0x50574653;  // "PWFS"
  static constexpr std::uint32_t kTypeVersion = 2;  // v2: PWFCombLayout holds StateRec pointers
  static constexpr const char* kTypeName = "combining::PWFStack";
  PWFCombLayout comb;
  explicit PWFStackRoot(const PWFCombLayout& l) : comb(l) {}
};

template <bool kElimination = true, bool kRecycle = true, unsigned kFaults = pwf_fault::kNone>
class PWFStack {
 public:
  using Object = PWFStackObject<kElimination, kRecycle, kFaults>;
  using Comb = PWFComb<Object, kFaults>;

  static std::unique_ptr<PWFStack> create(pmem::Pool& pool, std::string_view name, int threads = kDefaultThreads,
                                          PWFOptions opts = {}) {
    PWFCombLayout l;
    const std::uint64_t init = 0;  // empty stack
    Comb::create_layout(pool, threads, &l, &init);
    auto* root = pool.create_root<PWFStackRoot>(name, l);
    return std::unique_ptr<PWFStack>(new PWFStack(pool, root, threads, opts));
  }
  // Re-attaches after a restart. Frees nothing: the pool recovered the heap
  // when it opened.
  static std::unique_ptr<PWFStack> attach(pmem::Pool& pool, std::string_view name, int threads = kAsCreated,
                                          PWFOptions opts = {}) {
    auto* root = pool.root<PWFStackRoot>(name);
    std::unique_ptr<PWFStack> s(new PWFStack(pool, root, threads, opts));  // validates the layout
    // A pool opened without recovery ran no hook: walk the list (validate).
    if (!pool.heap().recovered()) s->validate(pool);
    return s;
  }
  // PWFStackRoot's recover hook (pmem/root_registry.h): marks the StateRecs
  // and the nodes from the durable top. Nothing to repair.
  static void recover_root(pmem::Pool& pool, PWFStackRoot* root, const std::function<void(void*)>& mark) {
    PWFStack s(pool, root, pwf_capacity(root->comb, 1), PWFOptions{});  // validates the layout
    s.validate(pool);
    s.trace(mark);
  }
  // Validating (combining/validate.h): every node from the durable top is
  // inside the pool, 8-aligned, the start of a heap block of at least 16
  // bytes, and none repeats (a cycle); damage throws PoolError(kCorrupt)
  // naming the offset of the word that holds the bad pointer.
  void validate(const pmem::Pool& pool) const {
    const Damage d{pool, "PWFStack"};
    std::unordered_set<std::uint64_t> seen;
    const void* at = comb_.current_state();
    for (std::uint64_t a = comb_.current_state()[0]; a != 0;) {
      const auto* n = reinterpret_cast<const PWFStackNode*>(a);
      if (!d.block_ok(n, sizeof(PWFStackNode)))
        d.fail(at == comb_.current_state() ? "top is not a node" : "a next pointer names no node", at, a);
      if (!seen.insert(a).second) d.fail("the list from top loops", at, a);
      at = &n->next;
      a = n->next.load(std::memory_order_relaxed);
    }
  }

  void push(int tid, std::uint64_t seq, std::int64_t v) {
    check_value(v, "PWFStack::push");
    comb_.apply(tid, seq, static_cast<std::int32_t>(OpCode::kPush), v);
  }
  std::optional<std::int64_t> pop(int tid, std::uint64_t seq) {
    return decode(comb_.apply(tid, seq, static_cast<std::int32_t>(OpCode::kPop), 0));
  }
  void recover_push(int tid, std::uint64_t seq, std::int64_t v) {
    comb_.recover(tid, seq, static_cast<std::int32_t>(OpCode::kPush), v);
  }
  std::optional<std::int64_t> recover_pop(int tid, std::uint64_t seq) {
    return decode(comb_.recover(tid, seq, static_cast<std::int32_t>(OpCode::kPop), 0));
  }

  // Top to bottom (quiescent use only).
  std::vector<std::int64_t> contents() const {
    std::vector<std::int64_t> out;
    for (auto a = comb_.current_state()[0]; a != 0;) {
      auto* nd = reinterpret_cast<const PWFStackNode*>(a);
      out.push_back(nd->value.load(std::memory_order_relaxed));
      a = nd->next.load(std::memory_order_relaxed);
    }
    return out;
  }
  // Marks the StateRecs and every node reachable from the current top.
  void trace(const std::function<void(void*)>& mark) const {
    comb_.for_each_record(mark);
    // (validate() ran first: the list ends at 0 without a cycle.)
    for (auto a = comb_.current_state()[0]; a != 0;) {
      mark(reinterpret_cast<void*>(a));
      a = reinterpret_cast<const PWFStackNode*>(a)->next.load(std::memory_order_relaxed);
    }
  }
  double combining_degree() const { return comb_.combining_degree(); }
  Comb& comb() { return comb_; }
  const Object& object() const { return obj_; }

  // ---- with a thread handle (sync::ThreadRegistry; no seq kept by the
  // caller: durably linearizable, not detectable — see ferrite/detectable.h)
  void push(const Thread& t, std::int64_t v) { push(t.id(), comb_.fresh_seq(t.id()), v); }
  std::optional<std::int64_t> pop(const Thread& t) { return pop(t.id(), comb_.fresh_seq(t.id())); }

  // ---- the vocabulary of ferrite/op.h (Detectable<S>, adapters) ----
  // One convention for every PB and PWF structure: apply runs an op::Op with
  // the caller's seq; recover answers the same response for an operation
  // pending at a crash, completing it if it had not taken effect.
  op::Response apply(int tid, std::uint64_t seq, const op::Op& o) {
    if (o.kind == op::kPush) return push(tid, seq, o.arg), op::Response::ack();
    if (o.kind == op::kPop) return op::Response::from(pop(tid, seq));
    unsupported_op("PWFStack", o);
  }
  op::Response recover(int tid, std::uint64_t seq, const op::Op& o) {
    if (o.kind == op::kPush) return recover_push(tid, seq, o.arg), op::Response::ack();
    if (o.kind == op::kPop) return op::Response::from(recover_pop(tid, seq));
    unsupported_op("PWFStack", o);
  }

 private:
  PWFStack(pmem::Pool& pool, PWFStackRoot* root, int n, PWFOptions opts)
      : obj_(pool, pwf_capacity(root->comb, n)), comb_(pool, &root->comb, n, obj_, opts) {}
  static std::optional<std::int64_t> decode(std::uint64_t w) {
    if (w == kEmptyWord) return std::nullopt;
    return word_value(w);
  }
  Object obj_;
  Comb comb_;
};

// The pool's recover hook for PWFStackRoot (the trace does not depend on
// elimination, recycling or faults).
inline const bool kPWFStackRootRegistered = pmem::register_root_type<PWFStackRoot>(&PWFStack<>::recover_root);

}  // namespace ferrite::combining
