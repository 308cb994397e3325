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
// Byte strings (V = montage::Bytes; the public interface is bytes_queue.h's
// BytesQueue): the same algorithm with a payload {serial (8 bytes), value
// length (4), 4 zero bytes, the value's bytes} (PBlk::size = 16 + length
// exactly), values of 0 to pmem::kMaxPayloadBytes bytes. Enqueue fills the
// payload before its lin_CAS (constraint 3: only the serial number is set
// between attempts, while the payload is still unattached); dequeue copies
// the value out after its lin_CAS, under its epoch pin (the payload is
// freed only once EBR has freed the node that carries it). Recovery
// validates every kept payload (its length against its block's size, the
// serial number's range) before it links any: a damaged one is
// PoolError(kCorrupt) naming its offset in the pool.
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
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferrite/montage/epoch_sys.h"
#include "ferrite/montage/internal/bytes_payload.h"
#include "ferrite/montage/transient_sys.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::montage {

// S: the system, EpochSys<F> (persistent) or TransientSys (the transient
// original, TransientMSQueue below). V: std::int64_t, or montage::Bytes
// (byte-string values, persistent only).
template <unsigned F = fault::kNone, class S = EpochSys<F>, class V = std::int64_t>
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
  static constexpr bool kBytes = std::is_same_v<V, Bytes>;
  static_assert(!kBytes || Sys::kPersistent, "byte-string values: the persistent queue only");
  using In = std::conditional_t<kBytes, std::string_view, std::int64_t>;   // what enqueue takes
  using Out = std::conditional_t<kBytes, std::string, std::int64_t>;       // what dequeue returns
  static constexpr Kind kKind = kBytes ? Kind::kBytesQueue : Kind::kQueue;
  // The byte-string payload's header (see the file comment).
  struct BytesItem {
    std::uint64_t serial;
    std::uint32_t length;
    std::uint32_t zero;
  };

  static std::unique_ptr<MSQueue> create(pmem::Pool& pool, std::string_view name, int threads,
                                         const EpochOptions& opt = {})
    requires Sys::kPersistent
  {
    auto q = std::unique_ptr<MSQueue>(new MSQueue(threads));
    q->es_ = Sys::create(pool, name, kKind, threads, opt);
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
    if (root->kind != static_cast<std::uint64_t>(kKind))
      throw std::runtime_error("montage: root '" + std::string(name) + "' is not a " +
                               (kBytes ? "byte-string queue" : "queue"));
    Sys::check_attach(root, threads);  // before the DRAM side exists (its destructor needs es_)
    auto q = std::unique_ptr<MSQueue>(new MSQueue(threads));
    std::vector<PBlk*> kept;
    q->es_ = Sys::attach(pool, root, threads, &kept, opt, stats);
    q->init_empty();
    // Bytes: every kept payload validated before any is linked (a damaged
    // one throws PoolError(kCorrupt) naming its offset; the DRAM side built
    // so far is freed by the destructor).
    if constexpr (kBytes) {
      try {
        for (const PBlk* p : kept) (void)q->checked(p);
      } catch (...) {
        q->abandon();  // a refused recovery: the close writes nothing more to the pool
        throw;
      }
    }
    std::sort(kept.begin(), kept.end(), [](const PBlk* a, const PBlk* b) { return serial_of(a) < serial_of(b); });
    Node* last = reinterpret_cast<Node*>(q->es_->load(q->head_));
    std::uint64_t next_serial = 0;
    for (PBlk* p : kept) {
      Node* n = new Node(p);
      Sys::init(last->next, reinterpret_cast<std::uint64_t>(n));
      last = n;
      next_serial = serial_of(p) + 1;
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

  void enqueue(int tid, In v) {
    auto g = ebr_->pin(tid);
    Node* n = new Node(make(tid, v));
    for (;;) {
      Node* t = tail_.load(std::memory_order_seq_cst);
      const std::uint64_t sn = serial_.fetch_add(1, std::memory_order_seq_cst);  // §5: between the tail loads
      const std::uint64_t next = es_->load(t->next);
      if (t != tail_.load(std::memory_order_seq_cst)) continue;
      if (next != 0) {
        tail_.compare_exchange_strong(t, reinterpret_cast<Node*>(next), std::memory_order_seq_cst);
        continue;
      }
      set_serial(tid, n->payload, sn);  // unattached: still mutable
      if (es_->lin_cas(tid, t->next, 0, reinterpret_cast<std::uint64_t>(n))) {
        tail_.compare_exchange_strong(t, n, std::memory_order_seq_cst);
        return;
      }
    }
  }

  std::optional<Out> dequeue(int tid) {
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
      if constexpr (kBytes) {
        es_->pdetach(tid, nn->payload);  // the value leaves with this op
        // PERSIST: the linearization point; the anti-node of nn's payload
        // is tagged at l.69–74 and cancels it in recovery (rule 3).
        if (es_->lin_cas(tid, head_, h, next)) {
          ebr_->retire(tid, hn, &MSQueue::free_node, this);
          // nn is the sentinel now; its payload is freed only when EBR
          // frees nn, after this pin (B2 of bytes_queue.h).
          std::optional<Out> out(std::in_place, value_view(nn->payload));
          if constexpr ((F & fault::kFreeOnDetach) != 0) es_->free_now(tid, nn->payload);
          return out;
        }
      } else {
        const std::int64_t v = Sys::template get<Item>(nn->payload).value;
        es_->pdetach(tid, nn->payload);  // the value leaves with this op
        if (es_->lin_cas(tid, head_, h, next)) {
          ebr_->retire(tid, hn, &MSQueue::free_node, this);
          return v;
        }
      }
    }
  }

  void sync() { es_->sync(); }
  // A simulated crash for tests: destruction then syncs nothing (the
  // destructor otherwise syncs: a clean close loses nothing; epoch_sys.h).
  void abandon() { es_->abandon(); }
  Sys& epochs() { return *es_; }

  // Front to back (quiescent only). Bytes: each payload validated
  // (PoolError(kCorrupt) naming a damaged one's offset).
  std::vector<Out> contents() {
    std::vector<Out> out;
    Node* h = reinterpret_cast<Node*>(es_->load(head_));
    for (Node* n = reinterpret_cast<Node*>(es_->load(h->next)); n != nullptr;
         n = reinterpret_cast<Node*>(es_->load(n->next))) {
      if constexpr (kBytes) out.emplace_back(value_view(n->payload));
      else out.push_back(Sys::template get<Item>(n->payload).value);
    }
    return out;
  }

 private:
  struct alignas(16) Node {
    CASObj next{0};
    PBlk* payload;
    explicit Node(PBlk* p) : payload(p) {}
  };

  explicit MSQueue(int threads) : ebr_(std::make_unique<sync::Ebr>(threads)) {}

  // The payload of a new element, filled (but its serial number) before
  // any lin_CAS can publish it. PERSIST: nothing here: the epoch system
  // writes the block back whole from its tagging epoch's buffer (P1).
  PBlk* make(int tid, In v) {
    if constexpr (kBytes) {
      internal::check_bytes_size("value", v.size());
      PBlk* p = es_->pnew_bytes(tid, sizeof(BytesItem) + v.size());
      char* d = &es_->template own<char>(tid, p);
      const BytesItem hdr{0, static_cast<std::uint32_t>(v.size()), 0};
      std::memcpy(d, &hdr, sizeof hdr);
      if (!v.empty()) std::memcpy(d + sizeof hdr, v.data(), v.size());
      return p;
    } else {
      return es_->template pnew<Item>(tid, Item{v, 0});
    }
  }
  void set_serial(int tid, PBlk* p, std::uint64_t sn) {
    if constexpr (kBytes) es_->template own<BytesItem>(tid, p).serial = sn;
    else es_->template own<Item>(tid, p).serial = sn;
  }
  static std::uint64_t serial_of(const PBlk* p) {
    if constexpr (kBytes) return Sys::template get<BytesItem>(p).serial;
    else return Sys::template get<Item>(p).serial;
  }
  // Bytes: the payload's value, validated: its length must fill its block
  // exactly, its padding be zero and its serial number one this queue can
  // have given (below 2^62): else PoolError(kCorrupt) naming its offset.
  std::string_view checked(const PBlk* p) const
    requires kBytes
  {
    const std::uint64_t size = p->size.load(std::memory_order_relaxed);
    BytesItem hdr{};
    if (size >= sizeof hdr) std::memcpy(&hdr, p->data(), sizeof hdr);
    if (size < sizeof hdr || std::uint64_t{hdr.length} + sizeof hdr != size || hdr.zero != 0 ||
        hdr.serial >= (std::uint64_t{1} << 62))
      throw pmem::PoolError(pmem::Errc::kCorrupt,
                            "montage: the byte-string queue payload at offset " +
                                std::to_string(es_->pool().offset_of(p)) + " holds a " + std::to_string(size) +
                                "-byte block but says a value of " + std::to_string(hdr.length) +
                                " bytes (serial " + std::to_string(hdr.serial) + ")");
    return std::string_view(static_cast<const char*>(p->data()) + sizeof hdr, hdr.length);
  }
  std::string_view value_view(const PBlk* p) const
    requires kBytes
  {
    return checked(p);
  }
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
    // The broken variant kFreeOnDetach freed the bytes payload at its dequeue.
    constexpr bool freed = kBytes && (F & fault::kFreeOnDetach) != 0;
    if (!freed && !q->closing_ && n->payload != nullptr) q->es_->pdelete(tid, n->payload);
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
