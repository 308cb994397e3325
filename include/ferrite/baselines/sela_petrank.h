// ferrite/baselines/sela_petrank.h — OptUnlinkedQ and OptLinkedQ of
// G. Sela, E. Petrank, "Durable Queues: The Second Amendment", SPAA 2021:
// the persistent lock-free queues the PBcomb paper (Fatourou, Kallimanis,
// Kosmas, PPoPP 2022) measures PBqueue against. Benchmark names:
// optunlinkedq, optlinkedq.
//
// What they are. Both run a Michael–Scott queue of *volatile* nodes in DRAM
// and keep, per element, a *persistent* node in the pool that normal
// operation only writes (never reads: a flushed line is not read again, the
// paper's second amendment). Each element carries its position `index` in
// the queue (the dummy's index + 1 at linking time). A dequeuer persists the
// index of the node it dequeued in a per-thread `headIndex` word (one
// write-back per dequeue; an empty dequeue persists the current head's index,
// which makes earlier pending dequeues durable); the recovered head index is
// the maximum over the threads.
//   OptUnlinkedQ (the paper's UnlinkedQ with separate volatile nodes): a
//     persistent node holds (item, index, linked). The enqueuer sets linked
//     after the linking CAS and writes the node back: one write-back per
//     enqueue. Recovery collects every linked node whose index exceeds the
//     head index and sorts them by index.
//   OptLinkedQ (the paper's LinkedQ, optimized): a persistent node holds
//     (item, pred, index) — the link is persisted backwards. After linking,
//     the enqueuer writes back its node and every predecessor whose own
//     enqueue has not completed yet (the "not persisted suffix": volatile
//     `pred` still set), then records (node, index) in one of two per-thread
//     last-enqueue cells (a valid bit in both words makes the two-word record
//     atomic; alternating cells keep the previous record valid while the next
//     one is written). Recovery starts from the valid last-enqueue records
//     above the head index, highest first, and accepts the first whose pred
//     chain descends index by index to headIndex + 1.
//
// Where the persistent nodes live. The paper scans the allocator's chunks
// (ssmem) at recovery. Ferrite's heap is shared by every structure of the
// pool, so each queue keeps its own slabs: heap blocks holding node slots,
// chained from the queue's per-thread lines (a thread carves its slots in
// consecutive addresses, the PBcomb paper's principle 3). Recovery scans
// those slabs and marks them live — it never frees another structure's
// blocks. The root is one word naming the per-thread lines (a block sized
// for max_threads), published once they are durable.
//
// Thread safety: lock-free; enqueue/try_dequeue concurrently for distinct
// tids in [0, max_threads). Volatile nodes and their slots are reclaimed
// through EBR (the paper uses ssmem's epochs). The max_threads of the run
// that created the queue is its capacity (the per-thread lines): a later
// run may attach with any max_threads up to it (more throws, naming both);
// recovery scans every line of the capacity, whatever the attach asked for.
//
// Invariants: (1) indices along the volatile list increase by one from the
// dummy; (2) a slot is reused only after its node was passed by head and the
// dequeue that passed it persisted a headIndex >= its index (so a stale
// persistent node never exceeds the recovered head index); (3) OptLinkedQ:
// a node's volatile pred is null only once the node and all its predecessors
// above the durable head index are durable (its enqueue completed, or it was
// dequeued).
//
// Persistence invariants: (P1) OptUnlinkedQ: linked is set only after the
// node's item and index are (x86: in the same line, earlier in store order;
// abstract model: written back and fenced); (P2) a completed enqueue's node
// is durable (unlinked: linked set; linked: its chain and its last-enqueue
// record); (P3) a completed dequeue's headIndex is durable; (P4) OptLinkedQ:
// a last-enqueue record becomes durable only after the chain it names
// (pfence between the suffix write-backs and the record).
//
// Recovery (the constructor on attach; the pool's hook only marks the
// slabs): head index H = max headIndex; the queue is rebuilt from the
// persistent nodes as above, every other slot becomes free. OptUnlinkedQ
// writes nothing at recovery (idempotent trivially). OptLinkedQ clears the
// index of every non-queue slot above H and every last-enqueue record that
// does not name the recovered tail, as the paper does, so that a stale chain
// can never become valid in a later run; both are idempotent (they only touch
// what the recovered queue does not use).
//
// Deviations (docs/baselines.md): Ferrite's pwb + psync for the paper's
// FLUSH and its non-temporal store + SFENCE; OptUnlinkedQ packs (index,
// linked) in one word, and under the abstract model (which may tear a line
// between two ordinary stores) writes the node back and fences once before
// setting linked; OptLinkedQ fences between the suffix write-backs and the
// record (the paper's FLUSH already orders them); slabs instead of scanning
// the allocator; a dummy node without a persistent slot.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ferrite/baselines/internal/sela_petrank_faults.h"
#include "ferrite/baselines/persistent_common.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"
#include "ferrite/sync/cache_padded.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::baselines {

namespace sela_petrank {

inline constexpr int kMaxThreads = 256;

// Px86 persists a line's stores in program order (an evicted line never
// holds a newer word without the older ones); the abstract model tears a
// line at 8-byte words. The write-back models differ exactly where a pfence
// is durable (x86) or not (abstract), and every real backend is x86.
inline bool lines_persist_in_store_order() { return persist::pfence_is_durable(); }

// A heap block of node slots, chained from its thread's line. Written
// once (zeroed, header set) and persisted before the line names it.
struct Slab {
  static constexpr std::uint32_t kVersion = 1;
  Slab* next;
  std::uint32_t stride;  // bytes per slot
  std::uint32_t count;   // slots
  std::uint32_t version;
  std::uint32_t reserved;
  // Slots start at kSlotsOffset.
  static constexpr std::size_t kSlotsOffset = 64;
  char* slot(std::uint32_t i) { return reinterpret_cast<char*>(this) + kSlotsOffset + std::size_t{i} * stride; }
};
static_assert(sizeof(Slab) == 24);
static_assert(offsetof(Slab, stride) == 8 && offsetof(Slab, count) == 12 && offsetof(Slab, version) == 16);

// OptLinkedQ's last-enqueue record: (node | valid, index | valid << 63).
struct LastEnqueue {
  std::uint64_t ptr_word;
  std::uint64_t index_word;
};
static_assert(sizeof(LastEnqueue) == 16);
inline constexpr std::uint64_t kIndexValidBit = std::uint64_t{1} << 63;

// Per thread, one cache line: headIndex, the thread's slab chain and
// (OptLinkedQ) the two last-enqueue records.
struct alignas(64) ThreadLine {
  std::atomic<std::uint64_t> head_index{0};
  std::atomic<Slab*> slabs{nullptr};
  LastEnqueue last[2] = {{0, 0}, {0, 0}};
};
static_assert(sizeof(ThreadLine) == 64);
static_assert(offsetof(ThreadLine, slabs) == 8 && offsetof(ThreadLine, last) == 16);

// The per-thread lines, one heap block sized at creation (so creating a
// queue writes back max_threads lines, not kMaxThreads).
struct ThreadLines {
  static constexpr std::uint64_t kVersion = 1;
  std::uint64_t count;
  std::uint64_t version;
  char reserved[48];
  ThreadLine line[1];  // `count` of them
  static std::size_t bytes(std::size_t n) { return offsetof(ThreadLines, line) + n * sizeof(ThreadLine); }
};
static_assert(offsetof(ThreadLines, line) == 64);

// The root of either queue (kLinked picks the type tag): one word, null
// until the per-thread lines are durable.
template <bool kLinked>
struct QueueRoot {
  static constexpr std::uint32_t kTypeTag = kLinked ? 0x42A5'0013 : 0x42A5'0012;
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName =
      kLinked ? "baselines::OptLinkedQ" : "baselines::OptUnlinkedQ";
  alignas(64) std::atomic<ThreadLines*> threads{nullptr};
};
static_assert(sizeof(QueueRoot<false>) == 64);

// The lines of a root, validated (a corrupt image throws).
template <class Root>
ThreadLines* lines_of(Root* r) {
  ThreadLines* t = r->threads.load(std::memory_order_relaxed);  // relaxed: recovery/creation only
  if (t != nullptr && (t->version != ThreadLines::kVersion || t->count == 0 ||
                       t->count > static_cast<std::uint64_t>(kMaxThreads)))
    throw std::runtime_error("sela_petrank: corrupt per-thread lines");
  return t;
}

// The volatile node (DRAM). `slot` is its persistent node (null for a dummy
// made at creation or recovery).
struct VNode {
  std::int64_t item = 0;
  std::uint64_t index = 0;
  std::atomic<VNode*> next{nullptr};
  std::atomic<VNode*> pred{nullptr};  // OptLinkedQ: not yet known durable
  char* slot = nullptr;
};

// Calls f(slab) for every slab of the root (bounded walk: a corrupt image
// throws instead of hanging).
template <class Root, class F>
void for_each_slab(Root* r, F&& f) {
  ThreadLines* lines = lines_of(r);
  if (lines == nullptr) return;
  std::size_t steps = 0;
  for (int t = 0; t < static_cast<int>(lines->count); ++t)
    for (Slab* s = lines->line[t].slabs.load(std::memory_order_relaxed); s != nullptr; s = s->next) {
      if (++steps > kMaxListWalk || s->version != Slab::kVersion || s->stride == 0 || s->count == 0)
        throw std::runtime_error("sela_petrank: corrupt slab chain");
      f(t, s);
    }
}

// What both queues share: the volatile MS queue, the slot store, EBR, the
// head-index dequeue. `Derived` supplies the persistent-node protocol.
template <class Derived, bool kLinked, unsigned Faults>
class QueueBase {
 public:
  using Root = QueueRoot<kLinked>;

  QueueBase(const QueueBase&) = delete;
  QueueBase& operator=(const QueueBase&) = delete;
  ~QueueBase() {
    ebr_.reset();  // frees what is still retired (into the free lists)
    for (auto& owned : owned_)
      for (VNode* n : owned.value) delete n;
  }

  bool try_dequeue(int tid, std::int64_t* out) {
    check_tid(tid, max_, Derived::kName);
    VNode* retired = nullptr;
    bool ok = false;
    {
      auto guard = ebr_->pin(tid);
      for (;;) {
        VNode* head = head_.load(std::memory_order_acquire);
        VNode* next = head->next.load(std::memory_order_acquire);
        if (next == nullptr) {
          // PERSIST: an empty dequeue persists the head's index: every
          // dequeue that passed head before it is then durable too.
          publish_head_index(tid, head->index);
          break;
        }
        if (head_.compare_exchange_strong(head, next, std::memory_order_acq_rel, std::memory_order_acquire)) {
          *out = next->item;
          // PERSIST: headIndex := next's index, durable before returning (P3).
          publish_head_index(tid, next->index);
          // ORDER: (OptLinkedQ) next is now at or below the durable head
          // index: later suffix walks stop here (inv. 3). Release pairs
          // with the walkers' acquire of pred.
          if constexpr (kLinked) next->pred.store(nullptr, std::memory_order_release);
          retired = head;
          ok = true;
          break;
        }
      }
    }
    // CRASH: the old dummy's slot is reused only after the headIndex above
    // is durable and every thread pinned now has left (inv. 2).
    if (retired != nullptr) ebr_->retire(tid, retired, &free_vnode, this);
    return ok;
  }

  // Front to back. Not concurrent with updates.
  std::vector<std::int64_t> snapshot() const {
    std::vector<std::int64_t> r;
    for (VNode* n = head_.load(std::memory_order_acquire)->next.load(std::memory_order_acquire); n != nullptr;
         n = n->next.load(std::memory_order_acquire))
      r.push_back(n->item);
    return r;
  }

  // The pool's recover hook: marks the slabs (the queue is rebuilt by the
  // constructor when a program attaches; nothing here depends on DRAM).
  static void recover_root(pmem::Pool&, Root* r, const std::function<void(void*)>& mark) {
    mark(lines_of(r));
    for_each_slab(r, [&](int, Slab* s) { mark(s); });
  }

 protected:
  QueueBase(pmem::Pool& pool, std::string_view name, int max_threads, std::size_t value_size)
      : pool_(pool), max_(max_threads),
        stride_(round_up(Derived::kNodeBytes + (value_size > 8 ? value_size - 8 : 0), 32)),
        ebr_(std::make_unique<sync::Ebr>(max_threads > 0 ? max_threads : 1)),
        free_(static_cast<std::size_t>(max_threads > 0 ? max_threads : 1)),
        owned_(free_.size()), carve_(free_.size()) {
    if (max_threads <= 0 || max_threads > kMaxThreads)
      throw std::invalid_argument(std::string(Derived::kName) + ": max_threads must be in [1, 256]");
    if (value_size < 8) throw std::invalid_argument("value_size must be >= 8");
    if (pool.has_root(name)) {
      root_ = pool.root<Root>(name);
      lines_ = lines_of(root_);
      if (lines_ != nullptr && lines_->count < static_cast<std::uint64_t>(max_threads))
        throw std::invalid_argument(std::string(Derived::kName) + ": created for at most " +
                                    std::to_string(lines_->count) + " threads; attach asked for " +
                                    std::to_string(max_threads) + " — create the queue with a larger capacity");
      attached_ = lines_ != nullptr;
    } else {
      root_ = pool.create_root<Root>(name);  // zeroed and durable: threads == null
    }
    // CRASH: a root whose lines were never published is an empty queue
    // whose creation did not finish: finish it (the unpublished block of a
    // crashed creation was not marked, so the pool freed it).
    if (lines_ == nullptr) {
      const std::size_t bytes = ThreadLines::bytes(static_cast<std::size_t>(max_threads));
      auto* t = static_cast<ThreadLines*>(pool.heap().alloc(bytes, 0));
      std::memset(static_cast<void*>(t), 0, bytes);
      t->count = static_cast<std::uint64_t>(max_threads);
      t->version = ThreadLines::kVersion;
      // PERSIST: the zeroed lines are durable before the root names them.
      persist::pwb(t, bytes);
      persist::psync();
      root_->threads.store(t, std::memory_order_relaxed);  // relaxed: single-threaded setup
      persist::pwb(&root_->threads);
      persist::psync();
      lines_ = t;
      VNode* dummy = make_vnode(0, nullptr);
      head_.store(dummy, std::memory_order_relaxed);
      tail_.store(dummy, std::memory_order_relaxed);
    }
  }

  static std::size_t round_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

  // A volatile node with a free slot of thread tid (owner-only lists).
  VNode* take(int tid) {
    auto& fl = free_[static_cast<std::size_t>(tid)].value;
    VNode* n;
    if (!fl.empty()) {
      n = fl.back();
      fl.pop_back();
    } else {
      n = make_vnode(tid, nullptr);
    }
    if (n->slot == nullptr) n->slot = carve(tid);
    n->next.store(nullptr, std::memory_order_relaxed);  // relaxed: not yet published
    n->pred.store(nullptr, std::memory_order_relaxed);
    return n;
  }

  VNode* make_vnode(int tid, char* slot) {
    auto* n = new VNode;
    n->slot = slot;
    owned_[static_cast<std::size_t>(tid)].value.push_back(n);
    return n;
  }

  // The next unused slot of thread tid's current slab; a new slab when full.
  char* carve(int tid) {
    auto& c = carve_[static_cast<std::size_t>(tid)].value;
    if (c.slab == nullptr || c.used == c.slab->count) {
      const std::uint32_t count = static_cast<std::uint32_t>(std::max<std::size_t>(32, 4032 / stride_));
      const std::size_t bytes = Slab::kSlotsOffset + std::size_t{count} * stride_;
      auto* s = static_cast<Slab*>(pool_.heap().alloc(bytes, tid));
      std::memset(static_cast<void*>(s), 0, bytes);
      s->stride = static_cast<std::uint32_t>(stride_);
      s->count = count;
      s->version = Slab::kVersion;
      auto& head = lines_->line[tid].slabs;
      s->next = head.load(std::memory_order_relaxed);  // relaxed: only tid appends
      // PERSIST: the zeroed slab (no slot looks linked or indexed) is
      // durable before the root names it.
      persist::pwb(s, bytes);
      persist::psync();
      // CRASH: before this store the slab is an unmarked block: the pool's
      // recovery frees it.
      head.store(s, std::memory_order_relaxed);  // relaxed: read by recovery only
      persist::pwb(&head);
      persist::psync();
      c.slab = s;
      c.used = 0;
    }
    return c.slab->slot(c.used++);
  }

  // EBR deleter: the old dummy and its slot go to the freeing thread's list.
  static void free_vnode(void* ctx, void* p, int tid) {
    static_cast<QueueBase*>(ctx)->free_[static_cast<std::size_t>(tid)].value.push_back(static_cast<VNode*>(p));
  }

  void publish_head_index(int tid, std::uint64_t index) {
    auto& w = lines_->line[tid].head_index;
    // Relaxed: headIndex is read only by recovery (single-threaded); its
    // durability comes from the pwb + psync, not from memory order.
    w.store(index, std::memory_order_relaxed);
    if constexpr ((Faults & sela_petrank::internal::kNoHeadIndexPwb) == 0) persist::pwb(&w);
    persist::psync();
  }

  // Recovery, step 1: H = max headIndex over every thread line (the
  // crashed run may have used more threads than this one).
  std::uint64_t recovered_head_index() const {
    std::uint64_t h = 0;
    for (std::uint64_t t = 0; t < lines_->count; ++t)
      h = std::max(h, lines_->line[t].head_index.load(std::memory_order_relaxed));
    return h;
  }

  // Recovery, last step: the volatile queue from `nodes` (slots in queue
  // order, indices h+1, ...) behind a dummy of index h; every other slot of
  // every slab goes to a free list.
  VNode* rebuild(std::uint64_t h, const std::vector<std::pair<std::uint64_t, char*>>& nodes) {
    std::unordered_set<const char*> used;
    for (const auto& [index, slot] : nodes) used.insert(slot);
    for_each_slab(root_, [&](int t, Slab* s) {
      const int owner = t % max_;
      for (std::uint32_t i = 0; i < s->count; ++i)
        if (used.count(s->slot(i)) == 0)
          free_[static_cast<std::size_t>(owner)].value.push_back(make_vnode(owner, s->slot(i)));
    });
    VNode* dummy = make_vnode(0, nullptr);
    dummy->index = h;
    VNode* last = dummy;
    for (const auto& [index, slot] : nodes) {
      VNode* n = make_vnode(0, slot);
      n->item = Derived::item_of(slot);
      n->index = index;
      last->next.store(n, std::memory_order_relaxed);  // relaxed: single-threaded recovery
      last = n;
    }
    head_.store(dummy, std::memory_order_relaxed);
    tail_.store(last, std::memory_order_relaxed);
    return last;
  }

  struct Carve {
    Slab* slab = nullptr;
    std::uint32_t used = 0;
  };

  pmem::Pool& pool_;
  int max_;
  std::size_t stride_;
  std::unique_ptr<sync::Ebr> ebr_;
  std::vector<sync::CachePadded<std::vector<VNode*>>> free_;   // per tid, owner-only
  std::vector<sync::CachePadded<std::vector<VNode*>>> owned_;  // per tid: every VNode made (for the destructor)
  std::vector<sync::CachePadded<Carve>> carve_;
  Root* root_ = nullptr;
  sela_petrank::ThreadLines* lines_ = nullptr;
  bool attached_ = false;
  alignas(64) std::atomic<VNode*> head_{nullptr};
  alignas(64) std::atomic<VNode*> tail_{nullptr};
};

}  // namespace sela_petrank

// ------------------------------------------------------------ OptUnlinkedQ
template <unsigned Faults = 0>
class OptUnlinkedQ : public sela_petrank::QueueBase<OptUnlinkedQ<Faults>, false, Faults> {
  using Base = sela_petrank::QueueBase<OptUnlinkedQ<Faults>, false, Faults>;
  friend Base;

 public:
  static constexpr const char* kName = "OptUnlinkedQ";
  // The persistent node: item, then (index << 1) | linked in one word (so a
  // reused slot's new index is never seen with its old linked bit), then
  // value_size - 8 payload bytes.
  struct Node {
    std::int64_t item;
    std::uint64_t tag;
  };
  static_assert(sizeof(Node) == 16 && offsetof(Node, tag) == 8);
  static constexpr std::size_t kNodeBytes = sizeof(Node);

  // Creates root `name` or, if present, attaches and recovers (the caller
  // guarantees exclusive use of the pool during the call).
  OptUnlinkedQ(pmem::Pool& pool, std::string_view name, int max_threads, std::size_t value_size = 8)
      : Base(pool, name, max_threads, value_size) {
    if (this->attached_) recover();
  }

  void enqueue(int tid, std::int64_t v) {
    check_tid(tid, this->max_, kName);
    auto guard = this->ebr_->pin(tid);
    VNode* n = this->take(tid);
    auto* p = reinterpret_cast<Node*>(n->slot);
    n->item = v;
    p->item = v;
    fill_payload(p, v);
    for (;;) {
      VNode* tail = this->tail_.load(std::memory_order_acquire);
      VNode* next = tail->next.load(std::memory_order_acquire);
      if (next == nullptr) {
        n->index = tail->index + 1;
        // Not linked yet: recovery ignores the slot whatever its index.
        p->tag = n->index << 1;
        VNode* expected = nullptr;
        if (tail->next.compare_exchange_strong(expected, n, std::memory_order_acq_rel,
                                               std::memory_order_acquire)) {
          if (!sela_petrank::lines_persist_in_store_order()) {
            // PERSIST: (abstract model only) item and index durable before
            // linked can be (P1): the model may tear the line otherwise.
            persist::pwb(p, this->stride_);
            persist::pfence();
          }
          p->tag = (n->index << 1) | 1;
          // PERSIST: the paper's single FLUSH(node) per enqueue (P2).
          if constexpr ((Faults & sela_petrank::internal::kNoNodePwb) == 0) persist::pwb(p, this->stride_);
          persist::psync();
          this->tail_.compare_exchange_strong(tail, n, std::memory_order_acq_rel);
          return;
        }
      } else {
        this->tail_.compare_exchange_strong(tail, next, std::memory_order_acq_rel);
      }
    }
  }

 private:
  using VNode = sela_petrank::VNode;

  void fill_payload(Node* p, std::int64_t v) const {
    if (this->stride_ > sizeof(Node))
      std::memset(reinterpret_cast<char*>(p) + sizeof(Node), static_cast<int>(v & 0xff), this->stride_ - sizeof(Node));
  }
  static std::int64_t item_of(const char* slot) { return reinterpret_cast<const Node*>(slot)->item; }

  // Every linked node above the head index, in index order.
  void recover() {
    const std::uint64_t h = this->recovered_head_index();
    std::vector<std::pair<std::uint64_t, char*>> nodes;
    sela_petrank::for_each_slab(this->root_, [&](int, sela_petrank::Slab* s) {
      for (std::uint32_t i = 0; i < s->count; ++i) {
        const auto* p = reinterpret_cast<const Node*>(s->slot(i));
        if ((p->tag & 1) != 0 && (p->tag >> 1) > h) nodes.emplace_back(p->tag >> 1, s->slot(i));
      }
    });
    std::sort(nodes.begin(), nodes.end());
    this->rebuild(h, nodes);
  }
};

// -------------------------------------------------------------- OptLinkedQ
template <unsigned Faults = 0>
class OptLinkedQ : public sela_petrank::QueueBase<OptLinkedQ<Faults>, true, Faults> {
  using Base = sela_petrank::QueueBase<OptLinkedQ<Faults>, true, Faults>;
  friend Base;

 public:
  static constexpr const char* kName = "OptLinkedQ";
  // The persistent node: item, pred (the predecessor's persistent node),
  // index; then value_size - 8 payload bytes.
  struct Node {
    std::int64_t item;
    Node* pred;
    std::uint64_t index;
  };
  static_assert(sizeof(Node) == 24 && offsetof(Node, pred) == 8 && offsetof(Node, index) == 16);
  static constexpr std::size_t kNodeBytes = sizeof(Node);

  OptLinkedQ(pmem::Pool& pool, std::string_view name, int max_threads, std::size_t value_size = 8)
      : Base(pool, name, max_threads, value_size), cursor_(static_cast<std::size_t>(max_threads > 0 ? max_threads : 1)) {
    if (this->attached_) recover();
  }

  void enqueue(int tid, std::int64_t v) {
    check_tid(tid, this->max_, kName);
    auto guard = this->ebr_->pin(tid);
    VNode* n = this->take(tid);
    auto* p = reinterpret_cast<Node*>(n->slot);
    n->item = v;
    p->item = v;
    if (this->stride_ > sizeof(Node))
      std::memset(reinterpret_cast<char*>(p) + sizeof(Node), static_cast<int>(v & 0xff), this->stride_ - sizeof(Node));
    for (;;) {
      VNode* tail = this->tail_.load(std::memory_order_acquire);
      VNode* next = tail->next.load(std::memory_order_acquire);
      if (next == nullptr) {
        // Relaxed: published by the linking CAS (release).
        n->pred.store(tail, std::memory_order_relaxed);
        n->index = tail->index + 1;
        p->pred = reinterpret_cast<Node*>(tail->slot);
        p->index = n->index;
        VNode* expected = nullptr;
        if (tail->next.compare_exchange_strong(expected, n, std::memory_order_acq_rel,
                                               std::memory_order_acquire)) {
          this->tail_.compare_exchange_strong(tail, n, std::memory_order_acq_rel);
          write_back_suffix(n);
          // PERSIST: the chain is durable before the record naming it (P4).
          if constexpr ((Faults & sela_petrank::internal::kNoRecordFence) == 0) persist::pfence();
          record_last_enqueue(tid, n);
          persist::psync();
          // ORDER: n and its predecessors are durable (inv. 3); release
          // pairs with later walkers' acquire.
          n->pred.store(nullptr, std::memory_order_release);
          return;
        }
      } else {
        this->tail_.compare_exchange_strong(tail, next, std::memory_order_acq_rel);
      }
    }
  }

 private:
  using VNode = sela_petrank::VNode;

  // PERSIST: the paper's flushNotPersistedSuffix: n and every predecessor
  // whose enqueue has not completed (pred still set). The walk stops at a
  // node with a null pred: durable already, or at/below the durable head
  // index. EBR (the caller is pinned) keeps every node reached alive.
  void write_back_suffix(VNode* n) {
    for (;;) {
      VNode* pred = n->pred.load(std::memory_order_acquire);
      if (pred == nullptr) break;
      if constexpr ((Faults & sela_petrank::internal::kNoSuffixPwb) == 0) persist::pwb(n->slot, this->stride_);
      n = pred;
    }
  }

  // The two-word record, each word tagged with the cell's current valid bit
  // (alternating per write of a cell): a torn record has unequal bits.
  void record_last_enqueue(int tid, VNode* n) {
    auto& c = cursor_[static_cast<std::size_t>(tid)].value;
    sela_petrank::LastEnqueue& cell = this->lines_->line[tid].last[c.cell];
    const std::uint64_t vb = c.valid_bit;
    cell.ptr_word = reinterpret_cast<std::uint64_t>(n->slot) | vb;
    cell.index_word = n->index | (vb << 63);
    // PERSIST: the paper's non-temporal record, durable with the psync (P2).
    persist::pwb(&cell);
    if (c.cell == 1) c.valid_bit ^= 1;
    c.cell ^= 1;
  }

  static std::int64_t item_of(const char* slot) { return reinterpret_cast<const Node*>(slot)->item; }

  static bool record_valid(const sela_petrank::LastEnqueue& r, Node** node, std::uint64_t* index) {
    if ((r.ptr_word & 1) != (r.index_word >> 63)) return false;
    *node = reinterpret_cast<Node*>(r.ptr_word & ~std::uint64_t{1});
    *index = r.index_word & ~sela_petrank::kIndexValidBit;
    return *node != nullptr;
  }

  void recover() {
    const std::uint64_t h = this->recovered_head_index();
    std::unordered_set<const char*> slots;
    sela_petrank::for_each_slab(this->root_, [&](int, sela_petrank::Slab* s) {
      for (std::uint32_t i = 0; i < s->count; ++i) slots.insert(s->slot(i));
    });
    // Potential tails, highest index first.
    std::vector<std::pair<std::uint64_t, Node*>> tails;
    for (std::uint64_t t = 0; t < this->lines_->count; ++t)
      for (const auto& r : this->lines_->line[t].last) {
        Node* node;
        std::uint64_t index;
        if (record_valid(r, &node, &index) && index > h && slots.count(reinterpret_cast<char*>(node)) != 0)
          tails.emplace_back(index, node);
      }
    std::sort(tails.begin(), tails.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<std::pair<std::uint64_t, char*>> nodes;
    Node* tail = nullptr;
    for (const auto& [index, node] : tails) {
      if (chain(h, index, node, slots, &nodes)) {
        tail = node;
        break;
      }
    }
    std::reverse(nodes.begin(), nodes.end());
    // CRASH: both clean-ups touch only what the recovered queue does not
    // use; a crash in between leaves the same queue to the next recovery.
    std::unordered_set<const char*> used;
    for (const auto& [index, slot] : nodes) used.insert(slot);
    for (const char* s : slots) {
      auto* p = reinterpret_cast<Node*>(const_cast<char*>(s));
      if (used.count(s) == 0 && p->index > h) {
        p->index = 0;
        persist::pwb(&p->index);
      }
    }
    const std::uint64_t tail_index = nodes.empty() ? h : nodes.back().first;
    for (int t = 0; t < static_cast<int>(this->lines_->count); ++t) {
      auto& cells = this->lines_->line[t].last;
      int keep = -1;
      for (int i = 0; i < 2; ++i) {
        Node* node;
        std::uint64_t index;
        if (tail != nullptr && record_valid(cells[i], &node, &index) && node == tail && index == tail_index) keep = i;
      }
      for (int i = 0; i < 2; ++i)
        if (i != keep && (cells[i].ptr_word != 0 || cells[i].index_word != 0)) {
          cells[i] = {0, 0};
          persist::pwb(&cells[i]);
        }
      // The next write goes to the other cell, with the bit that differs
      // from the kept record's (cell 1's bit flips after it is written).
      if (t < this->max_) {
        auto& c = cursor_[static_cast<std::size_t>(t)].value;
        if (keep < 0) {
          c = Cursor{};
        } else {
          const std::uint64_t kept_bit = cells[keep].ptr_word & 1;
          c.cell = keep ^ 1;
          c.valid_bit = keep == 0 ? kept_bit : kept_bit ^ 1;
        }
      }
    }
    persist::psync();
    this->rebuild(h, nodes);
  }

  // Walks pred from (index, node) down to index h + 1; true (and `out` in
  // tail-to-head order) if every step is a known slot with index one less.
  static bool chain(std::uint64_t h, std::uint64_t index, Node* node, const std::unordered_set<const char*>& slots,
                    std::vector<std::pair<std::uint64_t, char*>>* out) {
    out->clear();
    for (;;) {
      if (slots.count(reinterpret_cast<char*>(node)) == 0 || node->index != index) {
        out->clear();
        return false;
      }
      out->emplace_back(index, reinterpret_cast<char*>(node));
      if (index == h + 1) return true;
      node = node->pred;
      --index;
    }
  }

  struct Cursor {
    int cell = 0;
    std::uint64_t valid_bit = 1;
  };
  std::vector<sync::CachePadded<Cursor>> cursor_;  // per tid, owner-only (DRAM)
};

// The pool's recover hooks (the trace is the same for every fault variant).
inline const bool kOptUnlinkedQRootRegistered =
    pmem::register_root_type<OptUnlinkedQ<>::Root>(&OptUnlinkedQ<>::recover_root);
inline const bool kOptLinkedQRootRegistered =
    pmem::register_root_type<OptLinkedQ<>::Root>(&OptLinkedQ<>::recover_root);

}  // namespace ferrite::baselines
