// ferrite/montage/ms_queue.h — the Michael–Scott queue on nbMontage
// (nbMontage §5: "The queue uses payloads to hold values and their order").
//
// Papers: M. M. Michael, M. L. Scott, "Simple, Fast, and Practical
// Non-Blocking and Blocking Concurrent Queue Algorithms", PODC 1996; its
// nbMontage conversion as described in Cai et al., DISC 2021, §5.
//
// What it is. A lock-free FIFO queue whose linked list (nodes, head, tail)
// lives in DRAM; each node holds a pointer to a payload in the pool with the
// value and a serial number. Enqueue takes its serial number from a global
// counter between its two loads of the tail (§5), so serial order is list
// order: a node linked after node X read the tail as X, after X was linked,
// after X's serial number was taken. Enqueue linearizes at a lin_CAS on the
// last node's next; dequeue at a lin_CAS on head, after pdetach-ing the
// payload of the node that becomes the sentinel (its value leaves the
// queue). An empty dequeue is read-only and linearizes at its load of
// head->next.
//
// Thread safety: enqueue/dequeue/sync concurrently for distinct thread ids
// in [0, threads); contents() only when no operation runs.
//
// Persistence: only payloads are durable; what becomes durable when is the
// epoch system's (montage/epoch_sys.h). Buffered durable linearizability:
// after a crash the queue holds the values of a prefix of the linearization
// that contains everything completed before the last completed sync().
//
// Recovery (attach): the epoch system hands over the payloads in use; they
// are sorted by serial number into a fresh list behind a fresh sentinel,
// and the serial counter restarts past the largest one. Dequeued payloads
// are cancelled by their anti-nodes (or reset) and never come back.
//
// Memory: DRAM nodes are reclaimed with epoch-based reclamation
// (sync/ebr.h); freeing a node pdeletes the payload it carried.
//
// Durability (what a user can count on): a crash loses at most the
// operations of the last two epochs (call sync() to make them durable); a
// clean close or destruction syncs — the destructor (also through a
// std::unique_ptr at a normal exit) runs the epoch system's sync(), so
// every operation that returned before it is kept. abandon() skips that
// (tests that simulate a crash in-process). No value is reserved: every
// int64 is a value. create and attach take the same arguments, so
// pmem::Pool::open_or_create<T>(name, threads, epochs) creates or
// re-attaches (the epoch options are this run's). `threads` at create is a capacity (recorded in the root):
// attach for fewer works; for more throws std::invalid_argument naming both.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferrite/montage/epoch_sys.h"
#include "ferrite/montage/transient_sys.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::montage {

// S: the system, EpochSys<F> (persistent) or TransientSys (the transient
// original, TransientMSQueue below).
template <unsigned F = fault::kNone, class S = EpochSys<F>>
class MSQueue {
 public:
  using Sys = S;
  // The system's CAS object and payload block (EpochSys: the 16-byte CASObj
  // and the pool's PBlk; TransientSys: a word and a DRAM block).
  using CASObj = typename Sys::CASObj;
  using PBlk = typename Sys::Blk;
  struct Item {
    std::int64_t value;
    std::uint64_t serial;
  };

  static std::unique_ptr<MSQueue> create(pmem::Pool& pool, std::string_view name, int threads,
                                         const EpochOptions& opt = {})
    requires Sys::kPersistent
  {
    auto q = std::unique_ptr<MSQueue>(new MSQueue(threads));
    q->es_ = Sys::create(pool, name, Kind::kQueue, threads, opt);
    q->init_empty();
    return q;
  }
  // The transient original: payloads in DRAM, nothing persists.
  static std::unique_ptr<MSQueue> create(int threads)
    requires(!Sys::kPersistent)
  {
    auto q = std::unique_ptr<MSQueue>(new MSQueue(threads));
    q->es_ = Sys::create(threads);
    q->init_empty();
    return q;
  }
  static std::unique_ptr<MSQueue> attach(pmem::Pool& pool, std::string_view name, int threads,
                                         const EpochOptions& opt = {}, RecoveryStats* stats = nullptr)
    requires Sys::kPersistent
  {
    auto* root = pool.root<MontageRoot>(name);
    if (root->kind != static_cast<std::uint64_t>(Kind::kQueue))
      throw std::runtime_error("montage: root '" + std::string(name) + "' is not a queue");
    Sys::check_attach(root, threads);  // before the DRAM side exists (its destructor needs es_)
    auto q = std::unique_ptr<MSQueue>(new MSQueue(threads));
    std::vector<PBlk*> kept;
    q->es_ = Sys::attach(pool, root, threads, &kept, opt, stats);
    q->init_empty();
    std::sort(kept.begin(), kept.end(),
              [](const PBlk* a, const PBlk* b) { return Sys::template get<Item>(a).serial < Sys::template get<Item>(b).serial; });
    Node* last = reinterpret_cast<Node*>(q->es_->load(q->head_));
    std::uint64_t next_serial = 0;
    for (PBlk* p : kept) {
      Node* n = new Node(p);
      Sys::init(last->next, reinterpret_cast<std::uint64_t>(n));
      last = n;
      next_serial = Sys::template get<Item>(p).serial + 1;
    }
    q->tail_.store(last, std::memory_order_relaxed);
    q->serial_.store(next_serial, std::memory_order_relaxed);
    return q;
  }

  ~MSQueue() {
    closing_ = true;
    ebr_.reset();  // frees retired nodes (payloads stay: see free_node)
    Node* n = reinterpret_cast<Node*>(es_->load(head_));
    while (n != nullptr) {
      Node* next = reinterpret_cast<Node*>(es_->load(n->next));
      delete n;
      n = next;
    }
  }

  void enqueue(int tid, std::int64_t v) {
    auto g = ebr_->pin(tid);
    Node* n = new Node(es_->template pnew<Item>(tid, Item{v, 0}));
    for (;;) {
      Node* t = tail_.load(std::memory_order_seq_cst);
      const std::uint64_t sn = serial_.fetch_add(1, std::memory_order_seq_cst);  // §5: between the tail loads
      const std::uint64_t next = es_->load(t->next);
      if (t != tail_.load(std::memory_order_seq_cst)) continue;
      if (next != 0) {
        tail_.compare_exchange_strong(t, reinterpret_cast<Node*>(next), std::memory_order_seq_cst);
        continue;
      }
      es_->template own<Item>(tid, n->payload).serial = sn;  // unattached: still mutable
      if (es_->lin_cas(tid, t->next, 0, reinterpret_cast<std::uint64_t>(n))) {
        tail_.compare_exchange_strong(t, n, std::memory_order_seq_cst);
        return;
      }
    }
  }

  std::optional<std::int64_t> dequeue(int tid) {
    auto g = ebr_->pin(tid);
    for (;;) {
      const std::uint64_t h = es_->load(head_);
      Node* hn = reinterpret_cast<Node*>(h);
      Node* t = tail_.load(std::memory_order_seq_cst);
      const std::uint64_t next = es_->load(hn->next);
      if (h != es_->load(head_)) continue;
      if (next == 0) return std::nullopt;  // linearizes at the load of hn->next
      if (hn == t) {
        tail_.compare_exchange_strong(t, reinterpret_cast<Node*>(next), std::memory_order_seq_cst);
        continue;
      }
      Node* nn = reinterpret_cast<Node*>(next);
      const std::int64_t v = Sys::template get<Item>(nn->payload).value;
      es_->pdetach(tid, nn->payload);  // the value leaves with this op
      if (es_->lin_cas(tid, head_, h, next)) {
        ebr_->retire(tid, hn, &MSQueue::free_node, this);
        return v;
      }
    }
  }

  void sync() { es_->sync(); }
  // A simulated crash for tests: destruction then syncs nothing (the
  // destructor otherwise syncs: a clean close loses nothing; epoch_sys.h).
  void abandon() { es_->abandon(); }
  Sys& epochs() { return *es_; }

  // Front to back (quiescent only).
  std::vector<std::int64_t> contents() {
    std::vector<std::int64_t> out;
    Node* h = reinterpret_cast<Node*>(es_->load(head_));
    for (Node* n = reinterpret_cast<Node*>(es_->load(h->next)); n != nullptr;
         n = reinterpret_cast<Node*>(es_->load(n->next)))
      out.push_back(Sys::template get<Item>(n->payload).value);
    return out;
  }

 private:
  struct alignas(16) Node {
    CASObj next{0};
    PBlk* payload;
    explicit Node(PBlk* p) : payload(p) {}
  };

  explicit MSQueue(int threads) : ebr_(std::make_unique<sync::Ebr>(threads)) {}
  void init_empty() {
    Node* s = new Node(nullptr);
    Sys::init(head_, reinterpret_cast<std::uint64_t>(s));
    tail_.store(s, std::memory_order_relaxed);
  }
  // EBR's deleter: the node's payload was detached when the node became
  // the sentinel; now nobody can reach it.
  static void free_node(void* ctx, void* p, int tid) {
    auto* q = static_cast<MSQueue*>(ctx);
    auto* n = static_cast<Node*>(p);
    if (!q->closing_ && n->payload != nullptr) q->es_->pdelete(tid, n->payload);
    delete n;
  }

  std::unique_ptr<Sys> es_;
  CASObj head_{0};
  std::atomic<Node*> tail_{nullptr};
  std::atomic<std::uint64_t> serial_{0};
  std::unique_ptr<sync::Ebr> ebr_;
  bool closing_ = false;
};

// The paper's DRAM (T): the same queue with its payloads in DRAM and plain
// CASes (transient_sys.h).
using TransientMSQueue = MSQueue<fault::kNone, TransientSys>;

}  // namespace ferrite::montage
