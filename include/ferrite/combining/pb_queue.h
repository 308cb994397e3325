// ferrite/combining/pb_queue.h — PBqueue: a detectably recoverable FIFO
// queue from two PBcomb instances ("Recoverable software combining",
// PPoPP'22, §5 "PBQueue", Appendix A Algorithms 5–7, §5 Memory Management).
//
// What it is. A singly linked list whose first node is a dummy. Instance IE
// serializes enqueuers (state: Tail), instance ID dequeuers (state: Head),
// so enqueues run concurrently with dequeues. The initial dummy DUMMY lives
// in the persistent root.
//
// Thread safety: enqueue/dequeue/recover are safe from distinct thread ids
// concurrently (one operation per id at a time): enqueue/dequeue take ids in
// [0, threads) of the attach, recover any id below the capacity n the queue
// was created for (an attach may ask for fewer threads than n, never more;
// PBcomb's "Thread capacity"). The free lists are per slot of the capacity.
//
// Invariants.
//  * oldTail (volatile) is the last node whose enqueue round is durable:
//    set after the enqueue round's psync and before its unlock (Alg. 5
//    l.31). Dequeue combiners never move Head past oldTail (Alg. 6 l.57),
//    so Head <= oldTail <= Tail in list order, always.
//  * A dequeue answers the *value* of the node after Head; that node becomes
//    the new dummy and is never recycled while it is the dummy. The old
//    dummy goes to the dequeue combiner's free list only after the round
//    that removed it is durable (after l.67), and never if it is DUMMY.
//  * The enqueue combiner takes nodes from its own free list first, else
//    from its heap arena (consecutive addresses).
//
// Persistence invariants (Alg. 5 l.19, 23, 24): every node created in the
// round and the old tail (whose next changed) are written back before the
// EState record (l.25) and the pfence (l.26) that orders them before
// EIndex: a durable Tail is reached through durable next pointers from any
// durable Head. Responses are values (self-contained), never node pointers.
//
// Tags. A thread's operations alternate between IE and ID, so the seq's
// parity does not alternate per instance; both instances use full-seq tags
// (TagKind::kSeq): detection compares the stored seq with the pending one.
//
// Recovery (Alg. 7). The pool recovers its heap when it opens
// (pmem::Pool::recover): PBQueueRoot's registered hook (recover_root) marks
// both instances' StateRecs and the nodes Head..Tail of the current states,
// from the root alone; every other node (dequeued, on a volatile free list,
// or allocated by a round that never became durable) is free again.
// attach() then never frees anything: oldTail := EState[EIndex].Tail (the
// paper CASes it from DUMMY in each Recover, l.73–74; doing it once at
// attach also covers threads with nothing to recover); free lists restart
// empty. recover(tid, seq, op, v) for a pending operation (l.75–84).
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "ferrite/combining/pbcomb.h"
#include "ferrite/combining/validate.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/sync/thread_registry.h"
#include "ferrite/pmem/root_registry.h"
#include "ferrite/sync/backoff.h"
#include "ferrite/sync/cache_padded.h"

namespace ferrite::combining {

struct PBQueueNode {
  std::int64_t value;
  // ORDER: written with release by the enqueue combiner after the node is
  // filled; read with acquire by dequeue combiners (the correct variant
  // also gets happens-before through oldTail).
  std::atomic<PBQueueNode*> next;
};
static_assert(sizeof(PBQueueNode) == 16);

struct PBQueueRoot {
  static constexpr std::uint32_t kTypeTag = 0x50425155;  // "PBQU"
  static constexpr std::uint32_t kTypeVersion = 5;  // v5: the state checksummed as a sum of per-word terms; v4: eight-chain record checksum; v3: (ReturnVal, tag) pairs after the state; v2: round stamps
  static constexpr const char* kTypeName = "combining::PBQueue";
  PBCombRoot enq;  // IE: EState[0..1], EIndex
  PBCombRoot deq;  // ID: DState[0..1], DIndex
  alignas(64) PBQueueNode dummy{0, {nullptr}};  // DUMMY

  // `format` fills both combiners' records naming this root's DUMMY: it
  // runs here, in the root's constructor, because DUMMY's address is known
  // only once the root's memory is, and before pool.create_root writes the
  // root back, pfences and publishes it — so a published root always names
  // records that are durable and name DUMMY.
  PBQueueRoot(const PBCombRoot& e, const PBCombRoot& d, void (*format)(PBQueueRoot*))
      : enq(e.rec[0], e.rec[1], e.rec_bytes, e.threads, e.state_bytes,
            static_cast<TagKind>(e.tag_kind), e.design),
        deq(d.rec[0], d.rec[1], d.rec_bytes, d.threads, d.state_bytes,
            static_cast<TagKind>(d.tag_kind), d.design) {
    format(this);
  }
};

// Root: PBQueueRoot, or a type derived from it that adds nothing but its
// own tag and version (PBBytesQueueRoot, pb_bytes_queue.h: the same queue
// holding payload offsets, so neither is ever attached as the other).
template <unsigned Faults, class Root>
class PBQueue;

// Volatile context shared by the two policies.
struct PBQueueShared {
  pmem::Heap* heap = nullptr;
  PBQueueNode* dummy = nullptr;
  // oldTail (Alg. 5 l.31, Alg. 6 l.57). ORDER: release by the enqueue
  // combiner after the nodes up to it are linked (and durable); acquire by
  // the dequeue combiner before reading next pointers up to it.
  sync::CachePadded<std::atomic<PBQueueNode*>> old_tail{nullptr};
  // Per-thread free lists (§5 Memory Management). free_[p] is touched only
  // by thread p (as dequeue combiner: push; as enqueue combiner: pop), and
  // a thread runs one operation at a time.
  std::vector<sync::CachePadded<std::vector<PBQueueNode*>>> free;
};

// IE's sequential object. State: PBQueueNode* Tail.
template <unsigned Faults>
class PBQueueEnqObject {
 public:
  static constexpr TagKind kTag = TagKind::kSeq;
  using Node = PBQueueNode;
  explicit PBQueueEnqObject(PBQueueShared* sh) : sh_(sh) {}

  std::size_t state_bytes() const { return sizeof(Node*); }
  std::size_t used_bytes(const void*) const { return sizeof(Node*); }
  void init_state(void* st) const { *static_cast<Node**>(st) = sh_->dummy; }

  void simulate(void* st, const Active* a, std::size_t k, std::uint64_t* resp, int tid) {
    Node* tail = *static_cast<Node**>(st);
    to_persist_.push_back(tail);  // l.19: the old tail's next changes
    for (std::size_t i = 0; i < k; ++i) {
      // l.35–39 Enqueue(&Tail, arg)
      Node* n = alloc(tid);
      n->value = a[i].arg;
      n->next.store(nullptr, std::memory_order_relaxed);  // not yet reachable
      tail->next.store(n, std::memory_order_release);
      tail = n;
      to_persist_.push_back(n);  // l.19 (next iteration) / l.23 (last one)
      resp[i] = kAckWord;        // l.21
    }
    *static_cast<Node**>(st) = tail;
  }

  bool before_persist(void*, int) {
    if constexpr ((Faults & kNoOldTail) != 0) {
      // BROKEN variant only: give a concurrent dequeue combiner the chance
      // to take the nodes just linked before they are durable (the race the
      // crash campaign must catch; on 2 cores it is otherwise rare).
      for (int i = 0; i < 4096; ++i) sync::cpu_relax();
      std::this_thread::yield();
    }
    // PERSIST: Alg. 5 l.24 — the old tail (next changed) and every new node,
    // before EState (l.25) and the pfence (l.26) that orders them before
    // EIndex.
    if constexpr ((Faults & kNoToPersist) == 0) {
      LineWriteback lw;
      for (Node* n : to_persist_) lw.add(n, sizeof(Node));
    }
    return !to_persist_.empty();
  }

  void after_durable(void* st, int) {
    // l.31: the round is durable (l.30 done); dequeuers may now reach Tail.
    sh_->old_tail->store(*static_cast<Node**>(st), std::memory_order_release);
    to_persist_.clear();  // l.32
  }

 private:
  Node* alloc(int tid) {
    auto& fl = sh_->free[static_cast<std::size_t>(tid)].value;
    if (!fl.empty()) {
      Node* n = fl.back();
      fl.pop_back();
      return n;
    }
    return static_cast<Node*>(sh_->heap->alloc(sizeof(Node), tid));
  }

  PBQueueShared* sh_;
  std::vector<Node*> to_persist_;  // toPersist (volatile, combiner-only)
};

// ID's sequential object. State: PBQueueNode* Head.
template <unsigned Faults>
class PBQueueDeqObject {
 public:
  static constexpr TagKind kTag = TagKind::kSeq;
  using Node = PBQueueNode;
  explicit PBQueueDeqObject(PBQueueShared* sh) : sh_(sh) {}

  std::size_t state_bytes() const { return sizeof(Node*); }
  std::size_t used_bytes(const void*) const { return sizeof(Node*); }
  void init_state(void* st) const { *static_cast<Node**>(st) = sh_->dummy; }

  void simulate(void* st, const Active*, std::size_t k, std::uint64_t* resp, int) {
    Node* head = *static_cast<Node**>(st);
    for (std::size_t i = 0; i < k; ++i) {
      bool nonempty;
      if constexpr ((Faults & kNoOldTail) != 0) {
        // BROKEN: may dequeue nodes whose enqueue round is not durable yet.
        nonempty = head->next.load(std::memory_order_acquire) != nullptr;
      } else {
        // l.57: never pass oldTail.
        nonempty = head != sh_->old_tail->load(std::memory_order_acquire);
      }
      if (nonempty) {
        // l.70–71 Dequeue(&Head): the next node's value; it becomes the dummy.
        Node* next = head->next.load(std::memory_order_acquire);
        resp[i] = value_word(next->value);
        retired_.push_back(head);
        head = next;
      } else {
        resp[i] = kEmptyWord;  // l.59
      }
    }
    *static_cast<Node**>(st) = head;
  }

  bool before_persist(void*, int) { return false; }  // a dequeue changes no node (only Head)

  void after_durable(void*, int tid) {
    // CRASH: the Head move is durable (l.67 done): the old dummies are
    // unreachable from every durable state. DUMMY itself lives in the root.
    auto& fl = sh_->free[static_cast<std::size_t>(tid)].value;
    for (Node* n : retired_) {
      if (n == sh_->dummy) continue;
      if constexpr ((Faults & kNoRecycling) != 0) sh_->heap->free(n, tid);  // the ablation: no free lists
      else fl.push_back(n);
    }
    retired_.clear();
  }

 private:
  PBQueueShared* sh_;
  std::vector<Node*> retired_;
};

template <unsigned Faults = kNoFaults, class Root = PBQueueRoot>
class PBQueue {
  static_assert(std::is_base_of_v<PBQueueRoot, Root> && sizeof(Root) == sizeof(PBQueueRoot),
                "PBQueue's root: PBQueueRoot or a type that only renames it");

 public:
  using Node = PBQueueNode;
  using EnqObject = PBQueueEnqObject<Faults>;
  using DeqObject = PBQueueDeqObject<Faults>;
  using EnqComb = PBComb<EnqObject, Faults>;
  using DeqComb = PBComb<DeqObject, Faults>;

  static std::unique_ptr<PBQueue> create(pmem::Pool& pool, std::string_view name, int threads = kDefaultThreads,
                                         int alloc_tid = 0) {
    if (threads <= 0) throw std::invalid_argument("PBQueue: threads must be > 0");
    // The initial Head/Tail name DUMMY, which lives in the root: the
    // records are formatted by the root's constructor (name_dummy), inside
    // create_root, so their write-backs are ordered before the root's by
    // create_root's pfence and completed by its psync. (An earlier version
    // formatted them twice, null before the root and DUMMY after it, with a
    // psync and a repair in attach for a crash in between.)
    PBQueueShared tmp;
    EnqObject eo(&tmp);
    DeqObject dobj(&tmp);
    const RecLayout le = EnqComb::layout_for(eo, threads);
    const RecLayout ld = DeqComb::layout_for(dobj, threads);
    void* e0 = pool.heap().alloc(record_block_bytes(le.total()), alloc_tid);
    void* e1 = pool.heap().alloc(record_block_bytes(le.total()), alloc_tid);
    void* d0 = pool.heap().alloc(record_block_bytes(ld.total()), alloc_tid);
    void* d1 = pool.heap().alloc(record_block_bytes(ld.total()), alloc_tid);
    auto* root = pool.create_root<Root>(
        name,
        PBCombRoot(e0, e1, le.total(), static_cast<std::uint32_t>(threads),
                   static_cast<std::uint32_t>(le.state_bytes), EnqObject::kTag, EnqComb::kDesign),
        PBCombRoot(d0, d1, ld.total(), static_cast<std::uint32_t>(threads),
                   static_cast<std::uint32_t>(ld.state_bytes), DeqObject::kTag, DeqComb::kDesign),
        &PBQueue::name_dummy);
    return std::unique_ptr<PBQueue>(new PBQueue(pool, root, threads));
  }

  // Re-attaches by name and recovers (Alg. 7 l.73–74 once for all threads).
  // Frees nothing: the pool recovered the heap when it opened.
  static std::unique_ptr<PBQueue> attach(pmem::Pool& pool, std::string_view name, int threads = kAsCreated) {
    auto* root = pool.root<Root>(name);
    // A pool opened without recovery ran no hook: validate (trace_root with
    // no mark) before the combiners read a record.
    if (!pool.heap().recovered()) trace_root(pool, root, [](void*) {});
    std::unique_ptr<PBQueue> q(new PBQueue(pool, root, threads));
    // A published root names formatted records (create_root's order), so
    // a null Head or Tail is damage, not an interrupted create.
    if (q->tail() == nullptr || q->head() == nullptr)
      throw std::runtime_error("PBQueue: corrupt persistent root (null Head or Tail)");
    return q;
  }

  // Formats both combiners' records with Head = Tail = &root->dummy (an
  // empty queue) and writes them back (PBComb::format; the fence is
  // create_root's). Called by PBQueueRoot's constructor only.
  static void name_dummy(PBQueueRoot* root) {
    PBQueueShared shared;
    shared.dummy = &root->dummy;
    EnqObject eo(&shared);
    DeqObject dobj(&shared);
    EnqComb::format(eo, static_cast<int>(root->enq.threads), root->enq.rec[0], root->enq.rec[1]);
    DeqComb::format(dobj, static_cast<int>(root->deq.threads), root->deq.rec[0], root->deq.rec[1]);
  }

  // PBQueueRoot's recover hook (pmem/root_registry.h): marks what the queue
  // uses, from the root alone. Nothing to repair (oldTail is volatile).
  static void recover_root(pmem::Pool& pool, Root* root, const std::function<void(void*)>& mark) {
    trace_root(pool, root, mark);
  }

  void enqueue(int tid, std::uint64_t seq, std::int64_t v) {
    check_value(v, "PBQueue::enqueue");
    enq_.apply(tid, seq, OpCode::kEnqueue, v);
  }
  std::optional<std::int64_t> dequeue(int tid, std::uint64_t seq) {
    return to_optional(deq_.apply(tid, seq, OpCode::kDequeue, 0));
  }
  // With the handle's own sequence numbers (durable linearizability only).
  void enqueue(int tid, std::int64_t v) {
    check_value(v, "PBQueue::enqueue");
    enq_.apply(tid, OpCode::kEnqueue, v);
  }
  std::optional<std::int64_t> dequeue(int tid) { return to_optional(deq_.apply(tid, OpCode::kDequeue, 0)); }

  // Alg. 7: detectable recovery of (tid, seq, op, v) pending at a crash.
  // Returns the response word (kAckWord / value / kEmptyWord).
  std::uint64_t recover(int tid, std::uint64_t seq, OpCode op, std::int64_t v) {
    if (op == OpCode::kEnqueue) return enq_.recover(tid, seq, op, v);  // l.75–79
    if (op == OpCode::kDequeue) return deq_.recover(tid, seq, op, 0);  // l.80–84
    throw std::invalid_argument("PBQueue::recover: op must be kEnqueue or kDequeue");
  }

  Node* head() const { return *static_cast<Node* const*>(deq_.state()); }
  Root* root() const { return root_; }
  Node* tail() const { return *static_cast<Node* const*>(enq_.state()); }

  // Quiescent: values front -> back (Head exclusive .. Tail inclusive).
  // Bounded walk: a broken variant's list may not reach Tail; a corrupt
  // list ends with the marker kMinValue - 1.
  std::vector<std::int64_t> values() const {
    std::vector<std::int64_t> out;
    std::unordered_set<const Node*> seen;
    const Node* t = tail();
    for (const Node* n = head(); n != t;) {
      n = n->next.load(std::memory_order_relaxed);
      if (n == nullptr || !pool_->contains(n, sizeof(Node)) || !seen.insert(n).second) {
        out.push_back(kMinValue - 1);
        break;
      }
      out.push_back(n->value);
    }
    return out;
  }

  // Marks the StateRecs, the root and the nodes Head..Tail (quiescent).
  void trace(const std::function<void(void*)>& mark) const { trace_root(*pool_, root_, mark); }
  // Validating (docs/pool-format.md "Recovery"): every pointer it follows
  // is checked before it is read — the records lie in the pool, each node
  // is DUMMY or the start of a heap block that holds a node, the list from
  // Head reaches Tail without a cycle — so a damaged queue makes the hook
  // throw PoolError(kCorrupt) naming the offset (the pool then keeps every
  // block and leaves this root closed) instead of reading past the pool or
  // looping.
  static void trace_root(const pmem::Pool& pool, PBQueueRoot* root, const std::function<void(void*)>& mark) {
    // `where`: the pool address of the damaged pointer; `value`: what it holds.
    auto damaged = [&](const std::string& what, const void* where, const void* value) {
      char v[24];
      std::snprintf(v, sizeof v, "%p", value);
      throw pmem::PoolError(pmem::Errc::kCorrupt, "PBQueue: " + what + ": the pointer at offset 0x" +
                                                      hex_offset(pool, where) + " holds " + v);
    };
    for (const PBCombRoot* r : {&root->enq, &root->deq})
      for (void* const& rec : r->rec)
        if (rec == nullptr || !pool.contains(rec, r->rec_bytes))
          damaged("a StateRec pointer lies outside the pool", &rec, rec);
    // The rest of each instance's root (capacity, tag kind, design, sizes,
    // heap blocks, a record that verifies): combining/validate.h.
    for (const PBCombRoot* r : {&root->enq, &root->deq}) pbcomb_checked_state(Damage{pool, "PBQueue"}, *r);
    pbcomb_mark_records(root->enq, mark);
    pbcomb_mark_records(root->deq, mark);
    mark(root);
    auto node_ok = [&](const Node* n) {
      return n == &root->dummy || (pool.contains(n, sizeof(Node)) && pool.heap().block_at(n) >= sizeof(Node));
    };
    Node* const* tail_at = static_cast<Node* const*>(pbcomb_current_state(root->enq));
    Node* const* head_at = static_cast<Node* const*>(pbcomb_current_state(root->deq));
    const Node* t = *tail_at;
    if (!node_ok(t)) damaged("Tail is not a node", tail_at, t);
    std::unordered_set<const Node*> seen;
    const void* at = head_at;  // where the pointer to n is stored
    for (const Node* n = *head_at;;) {
      if (n == nullptr) damaged("the list from Head ends before Tail", at, n);
      if (!node_ok(n)) damaged(at == head_at ? "Head is not a node" : "a next pointer names no node", at, n);
      if (!seen.insert(n).second) damaged("the list from Head loops before Tail", at, n);
      mark(const_cast<Node*>(n));
      if (n == t) break;
      at = &n->next;
      n = n->next.load(std::memory_order_relaxed);
    }
  }
  static std::string hex_offset(const pmem::Pool& pool, const void* p) {
    const auto off = reinterpret_cast<std::uintptr_t>(p) - reinterpret_cast<std::uintptr_t>(pool.base());
    char b[24];
    std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(off));
    return b;
  }

  double combining_degree() const {
    const auto& e = enq_.stats();
    const auto& d = deq_.stats();
    const double r = static_cast<double>(e.rounds.load(std::memory_order_relaxed) +
                                         d.rounds.load(std::memory_order_relaxed));
    return r == 0 ? 0.0
                  : static_cast<double>(e.served.load(std::memory_order_relaxed) +
                                        d.served.load(std::memory_order_relaxed)) / r;
  }
  EnqComb& enq_comb() { return enq_; }
  DeqComb& deq_comb() { return deq_; }

  static std::optional<std::int64_t> to_optional(std::uint64_t w) {
    if (!is_value_word(w)) return std::nullopt;
    return word_value(w);
  }

  // ---- with a thread handle (sync::ThreadRegistry; no seq kept by the
  // caller: durably linearizable, not detectable — see ferrite/detectable.h)
  void enqueue(const Thread& t, std::int64_t v) { enqueue(t.id(), v); }
  std::optional<std::int64_t> dequeue(const Thread& t) { return dequeue(t.id()); }

  // ---- the vocabulary of ferrite/op.h (Detectable<S>, adapters) ----
  // One convention for every PB and PWF structure: apply runs an op::Op with
  // the caller's seq; recover answers the same response for an operation
  // pending at a crash, completing it if it had not taken effect.
  op::Response apply(int tid, std::uint64_t seq, const op::Op& o) {
    if (o.kind == op::kEnqueue) return enqueue(tid, seq, o.arg), op::Response::ack();
    if (o.kind == op::kDequeue) return op::Response::from(dequeue(tid, seq));
    unsupported_op("PBQueue", o);
  }
  op::Response recover(int tid, std::uint64_t seq, const op::Op& o) {
    if (o.kind != op::kEnqueue && o.kind != op::kDequeue) unsupported_op("PBQueue", o);
    return response_of(o.kind, recover(tid, seq, static_cast<OpCode>(o.kind), o.arg));
  }

 private:
  static PBQueueShared* init_shared(PBQueueShared* sh, pmem::Pool& pool, PBQueueRoot* root, int threads) {
    sh->heap = &pool.heap();
    sh->dummy = &root->dummy;
    sh->free = std::vector<sync::CachePadded<std::vector<Node*>>>(static_cast<std::size_t>(threads > 0 ? threads : 0));
    return sh;
  }
  PBQueue(pmem::Pool& pool, Root* root, int threads)
      : pool_(&pool), root_(root), sh_(), eobj_(init_shared(&sh_, pool, root, threads)), dobj_(&sh_),
        enq_(&root->enq, &eobj_, threads), deq_(&root->deq, &dobj_, threads) {
    // One free list per slot of the capacity (validated by the combiners
    // above): a recovered operation of an id >= threads combines and
    // recycles too.
    sh_.free.resize(static_cast<std::size_t>(std::max(enq_.max_threads(), deq_.max_threads())));
    // Alg. 7 l.73–74: oldTail := the durable Tail.
    sh_.old_tail->store(tail(), std::memory_order_release);
  }

  pmem::Pool* pool_;
  Root* root_;
  PBQueueShared sh_;
  EnqObject eobj_;
  DeqObject dobj_;
  EnqComb enq_;
  DeqComb deq_;
};

// The pool's recover hook for PBQueueRoot (the trace does not depend on
// Faults: the correct instantiation's serves every variant).
inline const bool kPBQueueRootRegistered = pmem::register_root_type<PBQueueRoot>(&PBQueue<>::recover_root);

}  // namespace ferrite::combining
